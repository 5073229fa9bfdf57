//! USDT static tracepoints for stable Rust: probes that gdb, SystemTap, perf, bpftrace and BCC
//! attach to by name, at the cost of one `nop` while nothing is attached (folly's
//! `StaticTracepoint`, SystemTap's `sys/sdt.h`).
//!
//! # Brief overview
//!
//! * [`sdt!(provider, name, args...)`](sdt) fires a probe: a `nop`, plus a SystemTap v3 note in
//!   `.note.stapsdt` that names it and says where each argument is (`-4@%rax`: a signed 4-byte
//!   value in `rax`). Up to 12 arguments, of any [`SdtArg`] type: integers, `bool`, `char`,
//!   pointers and references, each with its size and signedness.
//! * [`sdt_with_semaphore!`] fires a probe that has a [`Semaphore`], defined once with
//!   [`sdt_define_semaphore!`]: tools increment it while they are attached, and the arguments are
//!   evaluated only then. [`sdt_enabled!`] reads it; [`sdt_declare_semaphore!`] states that
//!   another module or crate defines it.
//! * `phosphor probes BINARY_OR_PID` (the `phosphor` tool) lists the probes of a file or of a
//!   running process.
//!
//! ```
//! use phosphor_usdt::{sdt, sdt_define_semaphore, sdt_enabled, sdt_with_semaphore};
//!
//! sdt_define_semaphore!(myapp, query);
//!
//! fn run(sql: &str, rows: u32) {
//!     sdt!(myapp, start, rows, -1i64);
//!     // Formatted only while a tool is attached to myapp:query.
//!     sdt_with_semaphore!(myapp, query, format!("{sql};").len(), sql.as_ptr());
//!     if sdt_enabled!(myapp, query) {
//!         // ...work that only a tool would want
//!     }
//! }
//! # run("select 1", 1);
//! ```
//!
//! # Attaching
//!
//! ```text
//! $ gdb -batch -ex 'break -probe-stap myapp:start' -ex run -ex 'print $_probe_arg0' ./app
//! $ bpftrace -e 'usdt:./app:myapp:start { printf("%d rows\n", arg0); }'
//! $ perf buildid-cache --add ./app && perf probe sdt_myapp:start && perf record -e sdt_myapp:start ./app
//! ```
//!
//! # Targets
//!
//! Probes exist on x86-64 and AArch64 Linux ([`SUPPORTED`]). On any other target every macro
//! compiles to nothing: the arguments are type-checked but **not evaluated**, [`sdt_enabled!`] is
//! `false`, and no semaphore is defined. Where probes exist, [`sdt!`]'s arguments **are** evaluated
//! on every pass (the tool reads them from registers), so keep them cheap or use
//! [`sdt_with_semaphore!`], whose arguments are evaluated only while a tool is attached. Do not
//! rely on side effects of either.
//!
//! The expansions contain `unsafe` blocks (the `asm!`, and reading an `extern` semaphore), so a
//! crate with `#![forbid(unsafe_code)]` cannot use the macros.
//!
//! # Semaphores
//!
//! A semaphore is a `u16` in the section `.probes`, under the symbol `provider_name_semaphore` as
//! `sys/sdt.h` names it, and the probe's note records its address. The macros that read it find it
//! by that symbol, which is why [`sdt_enabled!`] works in any module or crate without a
//! declaration; the contract is that the symbol is defined once per program, by
//! [`sdt_define_semaphore!`] (or by C code in the same program, which then shares it), and that
//! nothing else uses that name.
//!
//! # Why not the `probe` crate
//!
//! The `probe` crate (`probe!`, `probe_lazy!`) writes the same notes, but passes every argument as
//! `-8@` (a signed 8-byte value, after an `as isize` cast), so tools see neither the size nor the
//! signedness of an argument; it has semaphores only inside `probe_lazy!`, with no way to test or
//! share them from another module; and its names must be identifiers, while the Phosphor bridge
//! needs names made of `&'static str` constants. Those are the parts that are worth having, and
//! the rest is one `asm!` template, so this crate writes its own: argument sizes come from `const`
//! operands ([`SdtArg::SPEC`]), semaphores are named symbols, and string names are encoded in
//! const evaluation. It also keeps `.stapsdt.base` from `--gc-sections`, which would otherwise
//! leave gdb ignoring every probe (see `site.rs`).
//!
//! # For other crates' macros
//!
//! `__sdt_str_probe!(provider, CATEGORY, NAME, args...)` (hidden) fires a probe named
//! `CATEGORY__NAME`, sanitised to `[A-Za-z0-9_]` and cut at [`MAX_NAME_LEN`] bytes, where
//! `CATEGORY` and `NAME` are `&'static str` constants; it is what a Phosphor callsite calls to be a
//! USDT probe as well (provider `phosphor`). `__sdt_local_semaphore!(SEM)` defines a semaphore for
//! one such site, with no symbol, and `__sdt_str_probe!(@semaphore SEM, ...)` records it, so that
//! the site's arguments can wait for `SEM.is_enabled()`.
//!
//! # Limits
//!
//! * A function that the linker removes (`--gc-sections`, which rustc passes) leaves its notes
//!   behind with the address of nothing, as with `sys/sdt.h`; `phosphor probes` reports such sites
//!   apart. Tying each note to its function (`SHF_LINK_ORDER`) needs a named symbol in the
//!   function's section, which inline assembly that may be duplicated cannot define.
//! * Semaphore symbols have default visibility: in a shared library, two libraries that define the
//!   same `provider_name_semaphore` interpose (Rust has no stable way to hide a symbol).

#![no_std]

mod arg;
mod macros;
mod name;
mod semaphore;
mod site;

pub use arg::SdtArg;
pub use name::MAX_NAME_LEN;
pub use semaphore::Semaphore;
pub use site::SUPPORTED;

/// The most arguments a probe takes (as in `sys/sdt.h`).
pub const MAX_ARGS: usize = 12;

/// What the macros' expansions call. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::name::{name_len, name_word};

    /// Checks that an argument is an [`SdtArg`](crate::SdtArg), on targets without probes.
    #[inline(always)]
    pub fn type_check<T: crate::SdtArg>(_: &T) {}
}

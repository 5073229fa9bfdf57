//! The public macros. They are the same on every target: what differs is the probe site
//! ([`__sdt_site!`](crate::__sdt_site)) and the semaphore access, which `site.rs` defines per
//! target.
//!
//! Each probe macro pairs its arguments with one of twelve operand slots (`__sdt_zip!`) and hands
//! the pairs, with the provider, the name and the semaphore, to `__sdt_site!`.

/// Fires a static tracepoint: a `nop` here, and a `.note.stapsdt` entry that lets gdb, SystemTap,
/// perf, bpftrace and BCC attach to it by `provider:name`.
///
/// `provider` and `name` are identifiers. Up to 12 arguments follow, of any [`SdtArg`] type
/// (integers, `bool`, `char`, pointers, references); each is recorded with its size and
/// signedness.
///
/// On x86-64 and AArch64 Linux the arguments are evaluated every time (into registers, for the
/// tool to read): keep them cheap, or use [`sdt_with_semaphore!`](crate::sdt_with_semaphore). On
/// other targets the macro compiles to nothing and the arguments are type-checked but not
/// evaluated.
///
/// ```
/// let (fd, len) = (3i32, 4096usize);
/// phosphor_usdt::sdt!(myapp, read_done, fd, len, len > 0);
/// phosphor_usdt::sdt!(myapp, tick);
/// ```
///
/// A thirteenth argument, or one that is not an [`SdtArg`], does not compile (on every target):
///
/// ```compile_fail
/// phosphor_usdt::sdt!(myapp, many, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13);
/// ```
///
/// ```compile_fail
/// phosphor_usdt::sdt!(myapp, float, 1.5f64);
/// ```
///
/// [`SdtArg`]: crate::SdtArg
#[macro_export]
macro_rules! sdt {
    ($provider:ident, $name:ident $(, $arg:expr)* $(,)?) => {
        $crate::__sdt_zip!(@start {
            provider: [::core::stringify!($provider)],
            name: [".asciz \"", ::core::stringify!($name), "\"\n",] [],
            semaphore: ["0"] [],
        } $($arg),*)
    };
}

/// Fires a static tracepoint that has a semaphore, and evaluates its arguments only while a tool
/// is attached to it.
///
/// The semaphore must be defined once in the program with
/// [`sdt_define_semaphore!(provider, name)`](crate::sdt_define_semaphore) (a missing definition
/// fails at link time). While no tool is attached, the probe costs one load and a branch; the
/// arguments are not evaluated, so they may be expensive.
///
/// ```
/// phosphor_usdt::sdt_define_semaphore!(myapp, request);
///
/// fn handle(path: &str) {
///     // `path.len()` runs only while a tool is attached to myapp:request.
///     phosphor_usdt::sdt_with_semaphore!(myapp, request, path.as_ptr(), path.len());
/// }
/// # handle("/");
/// ```
#[macro_export]
macro_rules! sdt_with_semaphore {
    ($provider:ident, $name:ident $(, $arg:expr)* $(,)?) => {{
        $crate::__sdt_semaphore_extern!($provider, $name);
        if $crate::__sdt_semaphore_is_enabled!() {
            $crate::__sdt_zip!(@start {
                provider: [::core::stringify!($provider)],
                name: [".asciz \"", ::core::stringify!($name), "\"\n",] [],
                semaphore: ["{sem}"] [sem = sym __SDT_SEMAPHORE,],
            } $($arg),*)
        }
    }};
}

/// Defines the semaphore of the probe `provider:name`, as a `static` in the section `.probes`
/// under the symbol `provider_name_semaphore` (the name `sys/sdt.h` gives it, so that C code of
/// the same program can share it).
///
/// Define each semaphore once per program, at module level; a second definition is a duplicate
/// symbol at link time. On targets without probes it defines nothing.
///
/// ```
/// phosphor_usdt::sdt_define_semaphore!(myapp, request);
/// ```
#[macro_export]
macro_rules! sdt_define_semaphore {
    ($provider:ident, $name:ident $(,)?) => {
        $crate::__sdt_semaphore_define!($provider, $name);
    };
}

/// Declares that the semaphore of `provider:name` is defined elsewhere in the program (another
/// module or crate), as folly's `FOLLY_SDT_DECLARE_SEMAPHORE` does.
///
/// [`sdt_enabled!`](crate::sdt_enabled) and [`sdt_with_semaphore!`](crate::sdt_with_semaphore)
/// find a semaphore by its symbol, so they work without it; the declaration states the
/// dependency and makes it a link-time check: a program that declares a semaphore nobody defines
/// fails to link, even if its checks were optimised away. On targets without probes it declares
/// nothing.
///
/// ```
/// # phosphor_usdt::sdt_define_semaphore!(myapp, request);
/// mod elsewhere {
///     phosphor_usdt::sdt_declare_semaphore!(myapp, request);
///
///     pub fn tracing_requests() -> bool {
///         phosphor_usdt::sdt_enabled!(myapp, request)
///     }
/// }
/// # assert!(!elsewhere::tracing_requests());
/// ```
#[macro_export]
macro_rules! sdt_declare_semaphore {
    ($provider:ident, $name:ident $(,)?) => {
        $crate::__sdt_semaphore_declare!($provider, $name);
    };
}

/// Whether a tool is attached to the probe `provider:name` right now: one relaxed load of its
/// semaphore, which [`sdt_define_semaphore!`](crate::sdt_define_semaphore) defines somewhere in
/// the program. Always `false` on targets without probes.
///
/// ```
/// phosphor_usdt::sdt_define_semaphore!(myapp, stats);
///
/// if phosphor_usdt::sdt_enabled!(myapp, stats) {
///     let report = format!("{:?}", std::env::args().collect::<Vec<_>>());
///     phosphor_usdt::sdt_with_semaphore!(myapp, stats, report.as_ptr(), report.len());
/// }
/// ```
#[macro_export]
macro_rules! sdt_enabled {
    ($provider:ident, $name:ident $(,)?) => {{
        $crate::__sdt_semaphore_extern!($provider, $name);
        $crate::__sdt_semaphore_is_enabled!()
    }};
}

/// Internal, for other crates' macros (the Phosphor bridge): a probe whose name is made of two
/// `&'static str` constants, `category__name`, sanitised to `[A-Za-z0-9_]` and cut at
/// [`MAX_NAME_LEN`](crate::MAX_NAME_LEN) bytes. `provider` is an identifier; the arguments are as
/// in [`sdt!`](crate::sdt), up to 12, evaluated every time on x86-64 and AArch64 Linux.
///
/// `category` and `name` are evaluated in const context (they may be literals or `const` items,
/// not local variables).
///
/// With a leading `@semaphore SEM,` the note records the address of `SEM`, a static defined in
/// the same block by [`__sdt_local_semaphore!(SEM)`](crate::__sdt_local_semaphore); the caller
/// tests `SEM.is_enabled()` first and evaluates the arguments only then:
///
/// ```
/// phosphor_usdt::__sdt_local_semaphore!(SEM);
/// if SEM.is_enabled() {
///     phosphor_usdt::__sdt_str_probe!(@semaphore SEM, phosphor, "db", "query", 42u32);
/// }
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_str_probe {
    (@semaphore $sem:ident, $provider:ident, $category:expr, $name:expr $(, $arg:expr)* $(,)?) => {
        $crate::__sdt_str_probe!(@site ["{sem}"] [sem = sym $sem,], $provider, $category, $name $(, $arg)*)
    };
    (@site [$($sem_tpl:tt)*] [$($sem_ops:tt)*],
        $provider:ident, $category:expr, $name:expr $(, $arg:expr)*) => {
        $crate::__sdt_zip!(@start {
            provider: [::core::stringify!($provider)],
            name: [$crate::__sdt_name_template!(),] [
                len = const $crate::__private::name_len($category, $name),
                w0 = const $crate::__private::name_word($category, $name, 0),
                w1 = const $crate::__private::name_word($category, $name, 1),
                w2 = const $crate::__private::name_word($category, $name, 2),
                w3 = const $crate::__private::name_word($category, $name, 3),
                w4 = const $crate::__private::name_word($category, $name, 4),
                w5 = const $crate::__private::name_word($category, $name, 5),
                w6 = const $crate::__private::name_word($category, $name, 6),
                w7 = const $crate::__private::name_word($category, $name, 7),
            ],
            semaphore: [$($sem_tpl)*] [$($sem_ops)*],
        } $($arg),*)
    };
    ($provider:ident, $category:expr, $name:expr $(, $arg:expr)* $(,)?) => {
        $crate::__sdt_str_probe!(@site ["0"] [], $provider, $category, $name $(, $arg)*)
    };
}

/// Internal, for other crates' macros (the Phosphor bridge): defines `static NAME:`
/// [`Semaphore`](crate::Semaphore) in the section `.probes`, for one probe site, under no symbol
/// of its own (so any number of them may exist). On targets without probes it is an ordinary
/// static, which stays 0.
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_local_semaphore {
    ($name:ident) => {
        $crate::__sdt_local_semaphore_static!($name);
    };
}

/// Internal: pairs each argument with an operand slot (generic type, value operand, size operand,
/// its spec in the template), then calls `__sdt_site!`.
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_zip {
    (@start {$($site:tt)*} $($arg:expr),*) => {
        $crate::__sdt_zip!({$($site)*} [] [
            (A0 a0 s0 "{s0}@{a0}") (A1 a1 s1 " {s1}@{a1}") (A2 a2 s2 " {s2}@{a2}")
            (A3 a3 s3 " {s3}@{a3}") (A4 a4 s4 " {s4}@{a4}") (A5 a5 s5 " {s5}@{a5}")
            (A6 a6 s6 " {s6}@{a6}") (A7 a7 s7 " {s7}@{a7}") (A8 a8 s8 " {s8}@{a8}")
            (A9 a9 s9 " {s9}@{a9}") (A10 a10 s10 " {s10}@{a10}") (A11 a11 s11 " {s11}@{a11}")
        ] $($arg),*)
    };
    ({$($site:tt)*} [$($done:tt)*] [$($free:tt)*]) => {
        $crate::__sdt_site!({$($site)*} [$($done)*])
    };
    ({$($site:tt)*} [$($done:tt)*] [$next:tt $($free:tt)*] $arg:expr $(, $rest:expr)*) => {
        $crate::__sdt_zip!({$($site)*} [$($done)* ($next $arg)] [$($free)*] $($rest),*)
    };
    ({$($site:tt)*} [$($done:tt)*] [] $($rest:expr),+) => {
        ::core::compile_error!("a USDT probe takes at most 12 arguments")
    };
}

/// Internal: the assembler text that writes a string-named probe's name from the operands `len`
/// and `w0`..`w7` (see `name.rs`), then its terminating NUL.
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_name_template {
    () => {
        ::core::concat!(
            $crate::__sdt_name_word!(0, w0),
            $crate::__sdt_name_word!(1, w1),
            $crate::__sdt_name_word!(2, w2),
            $crate::__sdt_name_word!(3, w3),
            $crate::__sdt_name_word!(4, w4),
            $crate::__sdt_name_word!(5, w5),
            $crate::__sdt_name_word!(6, w6),
            $crate::__sdt_name_word!(7, w7),
            ".byte 0\n",
        )
    };
}

/// Internal: the eight bytes of name word `k` that fall within `len`.
#[doc(hidden)]
#[macro_export]
macro_rules! __sdt_name_word {
    ($k:literal, $w:ident) => {
        ::core::concat!(
            ".if {len} > (8*",
            $k,
            "+0)\n.byte ({",
            ::core::stringify!($w),
            "} >> 0) & 255\n.endif\n",
            ".if {len} > (8*",
            $k,
            "+1)\n.byte ({",
            ::core::stringify!($w),
            "} >> 8) & 255\n.endif\n",
            ".if {len} > (8*",
            $k,
            "+2)\n.byte ({",
            ::core::stringify!($w),
            "} >> 16) & 255\n.endif\n",
            ".if {len} > (8*",
            $k,
            "+3)\n.byte ({",
            ::core::stringify!($w),
            "} >> 24) & 255\n.endif\n",
            ".if {len} > (8*",
            $k,
            "+4)\n.byte ({",
            ::core::stringify!($w),
            "} >> 32) & 255\n.endif\n",
            ".if {len} > (8*",
            $k,
            "+5)\n.byte ({",
            ::core::stringify!($w),
            "} >> 40) & 255\n.endif\n",
            ".if {len} > (8*",
            $k,
            "+6)\n.byte ({",
            ::core::stringify!($w),
            "} >> 48) & 255\n.endif\n",
            ".if {len} > (8*",
            $k,
            "+7)\n.byte ({",
            ::core::stringify!($w),
            "} >> 56) & 255\n.endif\n",
        )
    };
}

//! The instrumentation macros.
//!
//! Every macro takes a category and a name (both `&'static str` constants) and, where it records
//! arguments, up to two `"name" => value` pairs. Each has a `log: &TraceLog,` first form that
//! records into an independent [`TraceLog`](crate::TraceLog) instead of the global one.
//!
//! A macro expands to a `static` callsite and one relaxed load of its cached state; the arguments
//! are evaluated only when the callsite is enabled (a callsite's first call registers it first).
//!
//! One file per family (a `#[macro_export]` macro is at the crate root whichever file defines it):
//! `scope.rs`, `event.rs` (instants, begin/end, complete), `value.rs` (counters, data, sums,
//! histograms), `async_slice.rs` (async slices and futures), `log.rs`, `lock.rs`, `trace_context.rs`
//! (W3C trace context), and `expand.rs`,
//! the internal macros they all expand through. `pstr!` is here.

mod async_slice;
mod event;
mod expand;
mod lock;
mod log;
mod scope;
mod trace_context;
mod value;

/// A [`PString`](crate::PString) constant: the string with its FNV-1a 64 hash computed by the
/// compiler.
#[macro_export]
macro_rules! pstr {
    ($s:expr) => {{
        const __PHOSPHOR_PSTRING: $crate::PString = $crate::PString::new($s);
        __PHOSPHOR_PSTRING
    }};
}

//! Phosphor's macros for library authors: they compile to nothing, and the crate has no
//! dependency, unless the application turns Phosphor on (the `profiling` crate's arrangement).
//!
//! A library depends on this crate and instruments its code:
//!
//! ```
//! fn query(rows: u32) {
//!     phosphor_facade::scope!("db", "query", "rows" => rows);
//!     phosphor_facade::instant!("db", "cache_miss");
//!     phosphor_facade::counter!("db", "pool_size", 8u32);
//!     phosphor_facade::log!(info, "db", "{} rows", rows);
//! }
//! # query(3);
//! ```
//!
//! An application that wants those events turns the `enable` feature on (Cargo unifies features,
//! so every library's instrumentation records from then on) and starts tracing, for example with
//! `phosphor::init()`:
//!
//! ```toml
//! [dependencies]
//! phosphor = "0.1"
//! phosphor-facade = { version = "0.1", features = ["enable"] }
//! ```
//!
//! Without `enable`, each macro only type-checks its arguments in dead code (so a variable used
//! only in an argument is not "unused") and evaluates none of them. With it, each is the
//! `phosphor::trace_*!` macro of the same name and syntax: [`scope!`] is `trace_scope!`,
//! [`instant!`] `trace_instant!`, [`counter!`] `trace_counter!`, [`begin!`] and [`end!`]
//! `trace_begin!`/`trace_end!`, [`log!`] `trace_log!`.

#![no_std]

/// Whether the macros record: the `enable` feature is on.
pub const ENABLED: bool = cfg!(feature = "enable");

#[cfg(feature = "enable")]
#[doc(hidden)]
pub use phosphor as __phosphor;

/// The rest of the enclosing block as one slice (`phosphor::trace_scope!`).
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! scope {
    ($($t:tt)*) => { $crate::__phosphor::trace_scope!($($t)*); };
}

/// The rest of the enclosing block as one slice (`phosphor::trace_scope!`): off.
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! scope {
    ($($t:tt)*) => { $crate::__facade_check!($($t)*) };
}

/// A point in time (`phosphor::trace_instant!`).
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! instant {
    ($($t:tt)*) => { $crate::__phosphor::trace_instant!($($t)*) };
}

/// A point in time (`phosphor::trace_instant!`): off.
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! instant {
    ($($t:tt)*) => { $crate::__facade_check!($($t)*) };
}

/// Opens a slice that [`end!`] closes (`phosphor::trace_begin!`).
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! begin {
    ($($t:tt)*) => { $crate::__phosphor::trace_begin!($($t)*) };
}

/// Opens a slice that [`end!`] closes (`phosphor::trace_begin!`): off.
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! begin {
    ($($t:tt)*) => { $crate::__facade_check!($($t)*) };
}

/// Closes the slice [`begin!`] opened (`phosphor::trace_end!`).
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! end {
    ($($t:tt)*) => { $crate::__phosphor::trace_end!($($t)*) };
}

/// Closes the slice [`begin!`] opened (`phosphor::trace_end!`): off.
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! end {
    ($($t:tt)*) => { $crate::__facade_check!($($t)*) };
}

/// A counter sample (`phosphor::trace_counter!`).
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! counter {
    ($($t:tt)*) => { $crate::__phosphor::trace_counter!($($t)*) };
}

/// A counter sample (`phosphor::trace_counter!`): off.
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! counter {
    ($cat:expr, $name:expr, $value:expr $(,)?) => {
        if false {
            let _ = (&$cat, &$name, &$value);
        }
    };
}

/// A log whose formatting is deferred to the tools (`phosphor::trace_log!`).
#[cfg(feature = "enable")]
#[macro_export]
macro_rules! log {
    ($($t:tt)*) => { $crate::__phosphor::trace_log!($($t)*) };
}

/// A log whose formatting is deferred to the tools (`phosphor::trace_log!`): off.
#[cfg(not(feature = "enable"))]
#[macro_export]
macro_rules! log {
    ($level:ident, $cat:expr, $fmt:literal $(, $p:expr)* $(,)?) => {
        if false {
            let _ = &$cat;
            let _ = ::core::format_args!($fmt $(, $p)*);
        }
    };
}

/// Internal: an event macro's arguments, type-checked in dead code and never evaluated.
#[cfg(not(feature = "enable"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __facade_check {
    ($cat:expr, dyn $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        if false {
            let _ = (&$cat, &$name $(, $k, &$v)*);
        }
    };
    ($cat:expr, $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        if false {
            let _ = (&$cat, &$name $(, $k, &$v)*);
        }
    };
}

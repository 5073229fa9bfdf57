//! `trace_log!` (deferred-format logs) and its level plumbing: a level name's value, and the
//! per-level switches (`__phosphor_if_error!`, ...) that the `max-level-*` features define, which
//! compile out the levels above the limit.

/// Records a log message whose formatting is deferred to the tools (Palanteer's logs): the event
/// holds the callsite (the format string, category and level) and the packed parameters (up to
/// 16: integers, floats, `bool`, [`Static`](crate::Static), [`PString`](crate::PString), `&str`,
/// `String`, pointers). The format string is checked by the compiler like `format!`'s, but only
/// `phosphor logs`, the exporters and the statistics format it.
///
/// The level is one of `error`, `warn`, `info`, `debug`, `trace`. Levels above the `max-level-*`
/// feature are compiled out; [`TraceConfig::log_level`](crate::TraceConfig::log_level) filters at
/// run time.
///
/// ```
/// let (uid, host) = (42u32, "db-7");
/// phosphor::trace_log!(info, "net", "user {} from {}", uid, host);
/// phosphor::trace_log!(warn, "net", "retry {} after {:.1} ms", 3u8, 12.5f64);
/// ```
#[macro_export]
macro_rules! trace_log {
    (@on log: $log:expr, $level:ident, $cat:expr, $fmt:literal $(, $p:expr)* $(,)?) => {
        $crate::__phosphor_log_level!($level,
            {{
                $crate::__phosphor_callsite!(__PHOSPHOR_CS, $crate::__macro_support::CallsiteMeta::new(
                    $cat, $fmt, $crate::__macro_support::Phase::Log, ["", ""], file!(), line!(),
                ).with_level($crate::__phosphor_level_value!($level)));
                if false {
                    // Type-checks the format string against the parameters, as `format!` would.
                    let _ = ::core::format_args!($fmt $(, $p)*);
                }
                let __phosphor_log: &$crate::TraceLog = $log;
                $crate::__phosphor_probe!($cat, "log");
                if let Some(__phosphor_state) = $crate::__macro_support::check(__phosphor_log, &__PHOSPHOR_CS) {
                    $crate::__macro_support::emit_log(__phosphor_log, &__PHOSPHOR_CS, __phosphor_state, ($($p,)*));
                }
            }}
            {
                if false {
                    let _ = $log;
                    $(let _ = &$p;)*
                }
            }
        )
    };
    (@off log: $log:expr, $level:ident, $cat:expr, $fmt:literal $(, $p:expr)* $(,)?) => {
        if false {
            let _ = $log;
            let _ = ::core::format_args!($fmt $(, $p)*);
        }
    };
    (group: $g:ident, log: $($rest:tt)*) => {
        $g!(trace_log, log: $($rest)*)
    };
    (group: $g:ident, $($rest:tt)*) => {
        $g!(trace_log, log: $crate::TraceLog::global(), $($rest)*)
    };
    (log: $($rest:tt)*) => {
        $crate::__phosphor_gate!(trace_log, log: $($rest)*)
    };
    ($level:ident, $cat:expr, $fmt:literal $(, $p:expr)* $(,)?) => {
        $crate::__phosphor_gate!(trace_log, log: $crate::TraceLog::global(), $level, $cat, $fmt $(, $p)*)
    };
}

/// Internal: the `Level` of a level name.
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_level_value {
    (error) => {
        $crate::Level::Error
    };
    (warn) => {
        $crate::Level::Warn
    };
    (info) => {
        $crate::Level::Info
    };
    (debug) => {
        $crate::Level::Debug
    };
    (trace) => {
        $crate::Level::Trace
    };
}

/// Internal: keeps the first block if the level is compiled in (see the `max-level-*` features),
/// else the second.
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_log_level {
    (error, {$($on:tt)*} {$($off:tt)*}) => { $crate::__phosphor_if_error!({$($on)*} {$($off)*}) };
    (warn, {$($on:tt)*} {$($off:tt)*}) => { $crate::__phosphor_if_warn!({$($on)*} {$($off)*}) };
    (info, {$($on:tt)*} {$($off:tt)*}) => { $crate::__phosphor_if_info!({$($on)*} {$($off)*}) };
    (debug, {$($on:tt)*} {$($off:tt)*}) => { $crate::__phosphor_if_debug!({$($on)*} {$($off)*}) };
    (trace, {$($on:tt)*} {$($off:tt)*}) => { $crate::__phosphor_if_trace!({$($on)*} {$($off)*}) };
    ($other:ident, {$($on:tt)*} {$($off:tt)*}) => {
        ::core::compile_error!(concat!(
            "unknown log level `", stringify!($other), "`: use error, warn, info, debug or trace"
        ))
    };
}

/// Internal: `error` logs are compiled in.
#[cfg(not(feature = "max-level-off"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_if_error {
    ({$($on:tt)*} {$($off:tt)*}) => { $($on)* };
}

/// Internal: `error` logs are compiled out (a `max-level-*` feature).
#[cfg(feature = "max-level-off")]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_if_error {
    ({$($on:tt)*} {$($off:tt)*}) => { $($off)* };
}

/// Internal: `warn` logs are compiled in.
#[cfg(not(any(feature = "max-level-off", feature = "max-level-error")))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_if_warn {
    ({$($on:tt)*} {$($off:tt)*}) => { $($on)* };
}

/// Internal: `warn` logs are compiled out (a `max-level-*` feature).
#[cfg(any(feature = "max-level-off", feature = "max-level-error"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_if_warn {
    ({$($on:tt)*} {$($off:tt)*}) => { $($off)* };
}

/// Internal: `info` logs are compiled in.
#[cfg(not(any(feature = "max-level-off", feature = "max-level-error", feature = "max-level-warn")))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_if_info {
    ({$($on:tt)*} {$($off:tt)*}) => { $($on)* };
}

/// Internal: `info` logs are compiled out (a `max-level-*` feature).
#[cfg(any(feature = "max-level-off", feature = "max-level-error", feature = "max-level-warn"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_if_info {
    ({$($on:tt)*} {$($off:tt)*}) => { $($off)* };
}

/// Internal: `debug` logs are compiled in.
#[cfg(not(any(
    feature = "max-level-off",
    feature = "max-level-error",
    feature = "max-level-warn",
    feature = "max-level-info"
)))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_if_debug {
    ({$($on:tt)*} {$($off:tt)*}) => { $($on)* };
}

/// Internal: `debug` logs are compiled out (a `max-level-*` feature).
#[cfg(any(
    feature = "max-level-off",
    feature = "max-level-error",
    feature = "max-level-warn",
    feature = "max-level-info"
))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_if_debug {
    ({$($on:tt)*} {$($off:tt)*}) => { $($off)* };
}

/// Internal: `trace` logs are compiled in.
#[cfg(not(any(
    feature = "max-level-off",
    feature = "max-level-error",
    feature = "max-level-warn",
    feature = "max-level-info",
    feature = "max-level-debug"
)))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_if_trace {
    ({$($on:tt)*} {$($off:tt)*}) => { $($on)* };
}

/// Internal: `trace` logs are compiled out (a `max-level-*` feature).
#[cfg(any(
    feature = "max-level-off",
    feature = "max-level-error",
    feature = "max-level-warn",
    feature = "max-level-info",
    feature = "max-level-debug"
))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_if_trace {
    ({$($on:tt)*} {$($off:tt)*}) => { $($off)* };
}

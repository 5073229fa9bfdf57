//! The instrumentation macros.
//!
//! Every macro takes a category and a name (both `&'static str` constants) and, where it records
//! arguments, up to two `"name" => value` pairs. Each has a `log: &TraceLog,` first form that
//! records into an independent [`TraceLog`](crate::TraceLog) instead of the global one.
//!
//! A macro expands to a `static` callsite and one relaxed load of its cached state; the arguments
//! are evaluated only when the callsite is enabled (a callsite's first call registers it first).

mod lock;

/// A [`PString`](crate::PString) constant: the string with its FNV-1a 64 hash computed by the
/// compiler.
#[macro_export]
macro_rules! pstr {
    ($s:expr) => {{
        const __PHOSPHOR_PSTRING: $crate::PString = $crate::PString::new($s);
        __PHOSPHOR_PSTRING
    }};
}

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

/// Records a named value inside the current scope (Palanteer's `plData`); Perfetto plots it as a
/// counter track. The value may be any integer or float.
///
/// ```
/// fn flush(queue: &[u8]) {
///     phosphor::trace_scope!("io", "flush");
///     phosphor::trace_data!("io", "queue_len", queue.len());
/// }
/// # flush(&[1, 2]);
/// ```
#[macro_export]
macro_rules! trace_data {
    (@on log: $log:expr, $cat:expr, $name:expr, $value:expr $(,)?) => {{
        $crate::__phosphor_callsite!(__PHOSPHOR_CS, $crate::__macro_support::CallsiteMeta::new(
            $cat, $name, $crate::__macro_support::Phase::Data, ["value", ""], file!(), line!(),
        ));
        let __phosphor_log: &$crate::TraceLog = $log;
        $crate::__phosphor_site!(__phosphor_log, __PHOSPHOR_CS, $cat, $name, $crate::__macro_support::Now, [],
            $value, $crate::__macro_support::NoArg);
    }};
    (@off log: $log:expr, $cat:expr, $name:expr, $value:expr $(,)?) => {
        if false {
            let _ = $log;
            let _ = &$value;
        }
    };
    (group: $g:ident, log: $($rest:tt)*) => {
        $g!(trace_data, log: $($rest)*)
    };
    (group: $g:ident, $($rest:tt)*) => {
        $g!(trace_data, log: $crate::TraceLog::global(), $($rest)*)
    };
    (log: $($rest:tt)*) => {
        $crate::__phosphor_gate!(trace_data, log: $($rest)*)
    };
    ($cat:expr, $name:expr, $value:expr $(,)?) => {
        $crate::__phosphor_gate!(trace_data, log: $crate::TraceLog::global(), $cat, $name, $value)
    };
}

/// Adds to an in-process sum (DSUI's counter): no event is written; the trace carries the sum and
/// the number of additions, snapshotted when it stops. The value is any integer (as `i64`).
///
/// ```
/// phosphor::trace_sum!("net", "bytes_sent", 1500);
/// ```
#[macro_export]
macro_rules! trace_sum {
    (@on log: $log:expr, $cat:expr, $name:expr, $value:expr $(,)?) => {{
        static __PHOSPHOR_SUM: $crate::__macro_support::Sum = $crate::__macro_support::Sum::new();
        $crate::__phosphor_callsite!(__PHOSPHOR_CS, $crate::__macro_support::CallsiteMeta::new(
            $cat, $name, $crate::__macro_support::Phase::Counter, ["", ""], file!(), line!(),
        ).with_aggregate($crate::__macro_support::AggregateRef::Sum(&__PHOSPHOR_SUM)));
        let __phosphor_log: &$crate::TraceLog = $log;
        $crate::__phosphor_probe!($cat, $name);
        if $crate::__macro_support::check(__phosphor_log, &__PHOSPHOR_CS).is_some() {
            __PHOSPHOR_SUM.add(($value) as i64);
        }
    }};
    (@off log: $log:expr, $cat:expr, $name:expr, $value:expr $(,)?) => {
        if false {
            let _ = $log;
            let _ = &$value;
        }
    };
    (group: $g:ident, log: $($rest:tt)*) => {
        $g!(trace_sum, log: $($rest)*)
    };
    (group: $g:ident, $($rest:tt)*) => {
        $g!(trace_sum, log: $crate::TraceLog::global(), $($rest)*)
    };
    (log: $($rest:tt)*) => {
        $crate::__phosphor_gate!(trace_sum, log: $($rest)*)
    };
    ($cat:expr, $name:expr, $value:expr $(,)?) => {
        $crate::__phosphor_gate!(trace_sum, log: $crate::TraceLog::global(), $cat, $name, $value)
    };
}

/// Records a value in an in-process log-linear histogram (DSUI's histogram): no event is written;
/// the trace carries the count, sum, minimum, maximum and buckets (each within 6.25%),
/// snapshotted when it stops, and `phosphor stats` shows its percentiles. The value is any
/// unsigned integer (as `u64`), e.g. a latency in nanoseconds.
///
/// ```
/// let started = std::time::Instant::now();
/// phosphor::trace_histogram!("net", "rtt_ns", started.elapsed().as_nanos() as u64);
/// ```
#[macro_export]
macro_rules! trace_histogram {
    (@on log: $log:expr, $cat:expr, $name:expr, $value:expr $(,)?) => {{
        static __PHOSPHOR_HIST: $crate::__macro_support::Histogram = $crate::__macro_support::Histogram::new();
        $crate::__phosphor_callsite!(__PHOSPHOR_CS, $crate::__macro_support::CallsiteMeta::new(
            $cat, $name, $crate::__macro_support::Phase::Counter, ["", ""], file!(), line!(),
        ).with_aggregate($crate::__macro_support::AggregateRef::Histogram(&__PHOSPHOR_HIST)));
        let __phosphor_log: &$crate::TraceLog = $log;
        $crate::__phosphor_probe!($cat, $name);
        if $crate::__macro_support::check(__phosphor_log, &__PHOSPHOR_CS).is_some() {
            __PHOSPHOR_HIST.record(($value) as u64);
        }
    }};
    (@off log: $log:expr, $cat:expr, $name:expr, $value:expr $(,)?) => {
        if false {
            let _ = $log;
            let _ = &$value;
        }
    };
    (group: $g:ident, log: $($rest:tt)*) => {
        $g!(trace_histogram, log: $($rest)*)
    };
    (group: $g:ident, $($rest:tt)*) => {
        $g!(trace_histogram, log: $crate::TraceLog::global(), $($rest)*)
    };
    (log: $($rest:tt)*) => {
        $crate::__phosphor_gate!(trace_histogram, log: $($rest)*)
    };
    ($cat:expr, $name:expr, $value:expr $(,)?) => {
        $crate::__phosphor_gate!(trace_histogram, log: $crate::TraceLog::global(), $cat, $name, $value)
    };
}

/// Internal: the `static` callsite of one macro invocation, registered in the linker section that
/// [`points`](crate::points) lists.
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_callsite {
    ($cs:ident, $cat:expr, $name:expr, $phase:ident, [$n0:expr, $n1:expr]) => {
        $crate::__phosphor_callsite!(
            $cs,
            $crate::__macro_support::CallsiteMeta::new(
                $cat,
                $name,
                $crate::__macro_support::Phase::$phase,
                [$n0, $n1],
                file!(),
                line!(),
            )
        );
    };
    ($cs:ident, $meta:expr) => {
        static $cs: $crate::__macro_support::Callsite = $crate::__macro_support::Callsite::new($meta);
        $crate::__phosphor_register!($cs);
    };
}

/// Internal: routes a public macro to its recording arms (`@on`) or to its compiled-out arms
/// (`@off`, under the `off` feature), which only type-check the arguments in dead code.
#[cfg(not(feature = "off"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_gate {
    ($m:ident, $($rest:tt)*) => { $crate::$m!(@on $($rest)*) };
}

/// Internal: routes a public macro to its compiled-out arms: the `off` feature is on.
#[cfg(feature = "off")]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_gate {
    ($m:ident, $($rest:tt)*) => { $crate::$m!(@off $($rest)*) };
}

/// Internal: one event with 0, 1 or 2 arguments.
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_event {
    (@emit $log:expr, $phase:ident, $cat:expr, $name:expr, $stamp:expr, [$($lead:expr),*], [$n0:expr, $n1:expr], $v0:expr, $v1:expr) => {{
        $crate::__phosphor_callsite!(__PHOSPHOR_CS, $cat, $name, $phase, [$n0, $n1]);
        let __phosphor_log: &$crate::TraceLog = $log;
        $crate::__phosphor_site!(__phosphor_log, __PHOSPHOR_CS, $cat, $name, $stamp, [$($lead),*], $v0, $v1);
    }};
    (@emit_dyn $log:expr, $phase:ident, $cat:expr, $name:expr, $stamp:expr, [$($lead:expr),*], $n1:expr, $v1:expr) => {{
        $crate::__phosphor_callsite!(__PHOSPHOR_CS, $crate::__macro_support::CallsiteMeta::new(
            $cat, stringify!($name), $crate::__macro_support::Phase::$phase, ["name", $n1], file!(), line!(),
        ).with_dynamic_name());
        let __phosphor_log: &$crate::TraceLog = $log;
        $crate::__phosphor_site!(__phosphor_log, __PHOSPHOR_CS, $cat, "dyn", $stamp, [$($lead),*],
            $crate::__macro_support::name_arg($name), $v1);
    }};
    ($log:expr, $phase:ident, $cat:expr, dyn $name:expr, $stamp:expr, [$($lead:expr),*] $(,)?) => {
        $crate::__phosphor_event!(@emit_dyn $log, $phase, $cat, $name, $stamp, [$($lead),*], "",
            $crate::__macro_support::NoArg)
    };
    ($log:expr, $phase:ident, $cat:expr, dyn $name:expr, $stamp:expr, [$($lead:expr),*], $k1:literal => $v1:expr $(,)?) => {
        $crate::__phosphor_event!(@emit_dyn $log, $phase, $cat, $name, $stamp, [$($lead),*], $k1, $v1)
    };
    ($log:expr, $phase:ident, $cat:expr, $name:expr, $stamp:expr, [$($lead:expr),*] $(,)?) => {
        $crate::__phosphor_event!(@emit $log, $phase, $cat, $name, $stamp, [$($lead),*], ["", ""],
            $crate::__macro_support::NoArg, $crate::__macro_support::NoArg)
    };
    ($log:expr, $phase:ident, $cat:expr, $name:expr, $stamp:expr, [$($lead:expr),*], $k0:literal => $v0:expr $(,)?) => {
        $crate::__phosphor_event!(@emit $log, $phase, $cat, $name, $stamp, [$($lead),*], [$k0, ""],
            $v0, $crate::__macro_support::NoArg)
    };
    ($log:expr, $phase:ident, $cat:expr, $name:expr, $stamp:expr, [$($lead:expr),*], $k0:literal => $v0:expr, $k1:literal => $v1:expr $(,)?) => {
        $crate::__phosphor_event!(@emit $log, $phase, $cat, $name, $stamp, [$($lead),*], [$k0, $k1], $v0, $v1)
    };
}

/// Internal: checks a callsite and records its event (without the `usdt` feature).
#[cfg(not(feature = "usdt"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_site {
    ($log:ident, $cs:ident, $cat:expr, $name:expr, $stamp:expr, [$($lead:expr),*], $v0:expr, $v1:expr) => {
        if let Some(__phosphor_state) = $crate::__macro_support::check($log, &$cs) {
            $crate::__macro_support::emit($log, &$cs, __phosphor_state, $stamp, [$($lead),*], $v0, $v1);
        }
    };
}

/// Internal: checks a callsite and records its event, and fires its USDT probe
/// (`phosphor:category__name`) while a tool is attached to it. The arguments are evaluated once,
/// and only when one of the two wants them.
#[cfg(feature = "usdt")]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_site {
    ($log:ident, $cs:ident, $cat:expr, $name:expr, $stamp:expr, [$($lead:expr),*], $v0:expr, $v1:expr) => {
        $crate::__macro_support::usdt::__sdt_local_semaphore!(__PHOSPHOR_USDT);
        let __phosphor_state = $crate::__macro_support::check($log, &$cs);
        let __phosphor_tool = __PHOSPHOR_USDT.is_enabled();
        if __phosphor_state.is_some() || __phosphor_tool {
            let (__phosphor_v0, __phosphor_v1) = ($v0, $v1);
            if __phosphor_tool {
                $crate::__macro_support::usdt::__sdt_str_probe!(@semaphore __PHOSPHOR_USDT, phosphor, $cat, $name,
                    $crate::Arg::usdt(&__phosphor_v0), $crate::Arg::usdt(&__phosphor_v1));
            }
            if let Some(__phosphor_state) = __phosphor_state {
                $crate::__macro_support::emit(
                    $log, &$cs, __phosphor_state, $stamp, [$($lead),*], __phosphor_v0, __phosphor_v1,
                );
            }
        }
    };
}

/// Internal: the guard of a scope; its arguments are evaluated when the scope opens, if enabled.
#[cfg(not(feature = "usdt"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_scope_open {
    ($log:ident, $cs:ident, $cat:expr, $name:expr, $on:ident, $args:expr) => {
        $crate::__macro_support::ScopeGuard::new($log, &$cs, if $on { Some($args) } else { None })
    };
}

/// Internal: the guard of a scope, whose USDT probe fires when the scope opens.
#[cfg(feature = "usdt")]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_scope_open {
    ($log:ident, $cs:ident, $cat:expr, $name:expr, $on:ident, $args:expr) => {{
        $crate::__macro_support::usdt::__sdt_local_semaphore!(__PHOSPHOR_USDT);
        let __phosphor_tool = __PHOSPHOR_USDT.is_enabled();
        let __phosphor_args = if $on || __phosphor_tool { Some($args) } else { None };
        if let (true, Some((__phosphor_a0, __phosphor_a1))) = (__phosphor_tool, &__phosphor_args) {
            $crate::__macro_support::usdt::__sdt_str_probe!(@semaphore __PHOSPHOR_USDT, phosphor, $cat, $name,
                $crate::Arg::usdt(__phosphor_a0), $crate::Arg::usdt(__phosphor_a1));
        }
        $crate::__macro_support::ScopeGuard::new($log, &$cs, if $on { __phosphor_args } else { None })
    }};
}

/// Internal: a USDT probe with no arguments (the `usdt` feature), or nothing.
#[cfg(not(feature = "usdt"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_probe {
    ($cat:expr, $name:expr) => {};
}

/// Internal: a USDT probe with no arguments (the `usdt` feature), or nothing.
#[cfg(feature = "usdt")]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_probe {
    ($cat:expr, $name:expr) => {
        $crate::__macro_support::usdt::__sdt_local_semaphore!(__PHOSPHOR_USDT);
        if __PHOSPHOR_USDT.is_enabled() {
            $crate::__macro_support::usdt::__sdt_str_probe!(@semaphore __PHOSPHOR_USDT, phosphor, $cat, $name);
        }
    };
}

/// Records a point in time.
///
/// ```
/// phosphor::trace_instant!("net", "packet", "len" => 1500u32, "retry" => false);
/// ```
///
/// A name chosen at run time follows `dyn` (then one argument at most): a [`PString`](crate::PString)
/// or [`Static`](crate::Static) costs what a static name costs.
///
/// ```
/// const KINDS: [phosphor::PString; 2] = [phosphor::pstr!("ping"), phosphor::pstr!("pong")];
/// phosphor::trace_instant!("net", dyn KINDS[1], "seq" => 7u32);
/// ```
#[macro_export]
macro_rules! trace_instant {
    (@on log: $log:expr, $cat:expr, dyn $name:expr $(, $k:literal => $v:expr)? $(,)?) => {
        $crate::__phosphor_event!($log, Instant, $cat, dyn $name, $crate::__macro_support::Now, [] $(, $k => $v)?)
    };
    (@off log: $log:expr, $cat:expr, dyn $name:expr $(, $k:literal => $v:expr)? $(,)?) => {
        if false {
            let _ = $log;
            let _ = &$name;
            $(let _ = &$v;)?
        }
    };
    (@on log: $log:expr, $cat:expr, $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        $crate::__phosphor_event!($log, Instant, $cat, $name, $crate::__macro_support::Now, [] $(, $k => $v)*)
    };
    (@off log: $log:expr, $cat:expr, $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        if false {
            let _ = $log;
            $(let _ = &$v;)*
        }
    };
    (group: $g:ident, log: $($rest:tt)*) => {
        $g!(trace_instant, log: $($rest)*)
    };
    (group: $g:ident, $($rest:tt)*) => {
        $g!(trace_instant, log: $crate::TraceLog::global(), $($rest)*)
    };
    (log: $($rest:tt)*) => {
        $crate::__phosphor_gate!(trace_instant, log: $($rest)*)
    };
    ($cat:expr, dyn $name:expr $(, $k:literal => $v:expr)? $(,)?) => {
        $crate::__phosphor_gate!(trace_instant, log: $crate::TraceLog::global(), $cat, dyn $name $(, $k => $v)?)
    };
    ($cat:expr, $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        $crate::__phosphor_gate!(trace_instant, log: $crate::TraceLog::global(), $cat, $name $(, $k => $v)*)
    };
}

/// Opens a slice on this thread; [`trace_end!`](crate::trace_end!) with the same name closes it.
#[macro_export]
macro_rules! trace_begin {
    (@on log: $log:expr, $cat:expr, dyn $name:expr $(, $k:literal => $v:expr)? $(,)?) => {
        $crate::__phosphor_event!($log, Begin, $cat, dyn $name, $crate::__macro_support::Now, [] $(, $k => $v)?)
    };
    (@off log: $log:expr, $cat:expr, dyn $name:expr $(, $k:literal => $v:expr)? $(,)?) => {
        if false {
            let _ = $log;
            let _ = &$name;
            $(let _ = &$v;)?
        }
    };
    (@on log: $log:expr, $cat:expr, $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        $crate::__phosphor_event!($log, Begin, $cat, $name, $crate::__macro_support::Now, [] $(, $k => $v)*)
    };
    (@off log: $log:expr, $cat:expr, $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        if false {
            let _ = $log;
            $(let _ = &$v;)*
        }
    };
    (group: $g:ident, log: $($rest:tt)*) => {
        $g!(trace_begin, log: $($rest)*)
    };
    (group: $g:ident, $($rest:tt)*) => {
        $g!(trace_begin, log: $crate::TraceLog::global(), $($rest)*)
    };
    (log: $($rest:tt)*) => {
        $crate::__phosphor_gate!(trace_begin, log: $($rest)*)
    };
    ($cat:expr, dyn $name:expr $(, $k:literal => $v:expr)? $(,)?) => {
        $crate::__phosphor_gate!(trace_begin, log: $crate::TraceLog::global(), $cat, dyn $name $(, $k => $v)?)
    };
    ($cat:expr, $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        $crate::__phosphor_gate!(trace_begin, log: $crate::TraceLog::global(), $cat, $name $(, $k => $v)*)
    };
}

/// Closes the slice opened by [`trace_begin!`](crate::trace_begin!); the name must match, which the tools check.
#[macro_export]
macro_rules! trace_end {
    (@on log: $log:expr, $cat:expr, dyn $name:expr $(, $k:literal => $v:expr)? $(,)?) => {
        $crate::__phosphor_event!($log, End, $cat, dyn $name, $crate::__macro_support::Now, [] $(, $k => $v)?)
    };
    (@off log: $log:expr, $cat:expr, dyn $name:expr $(, $k:literal => $v:expr)? $(,)?) => {
        if false {
            let _ = $log;
            let _ = &$name;
            $(let _ = &$v;)?
        }
    };
    (@on log: $log:expr, $cat:expr, $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        $crate::__phosphor_event!($log, End, $cat, $name, $crate::__macro_support::Now, [] $(, $k => $v)*)
    };
    (@off log: $log:expr, $cat:expr, $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        if false {
            let _ = $log;
            $(let _ = &$v;)*
        }
    };
    (group: $g:ident, log: $($rest:tt)*) => {
        $g!(trace_end, log: $($rest)*)
    };
    (group: $g:ident, $($rest:tt)*) => {
        $g!(trace_end, log: $crate::TraceLog::global(), $($rest)*)
    };
    (log: $($rest:tt)*) => {
        $crate::__phosphor_gate!(trace_end, log: $($rest)*)
    };
    ($cat:expr, dyn $name:expr $(, $k:literal => $v:expr)? $(,)?) => {
        $crate::__phosphor_gate!(trace_end, log: $crate::TraceLog::global(), $cat, dyn $name $(, $k => $v)?)
    };
    ($cat:expr, $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        $crate::__phosphor_gate!(trace_end, log: $crate::TraceLog::global(), $cat, $name $(, $k => $v)*)
    };
}

/// Records a counter sample; the value may be any integer or float.
///
/// ```
/// phosphor::trace_counter!("mem", "heap_bytes", 4096u64);
/// ```
#[macro_export]
macro_rules! trace_counter {
    (@on log: $log:expr, $cat:expr, $name:expr, $value:expr $(,)?) => {
        $crate::__phosphor_event!($log, Counter, $cat, $name, $crate::__macro_support::Now, [], "value" => $value)
    };
    (@off log: $log:expr, $cat:expr, $name:expr, $value:expr $(,)?) => {
        if false {
            let _ = $log;
            let _ = &$value;
        }
    };
    (group: $g:ident, log: $($rest:tt)*) => {
        $g!(trace_counter, log: $($rest)*)
    };
    (group: $g:ident, $($rest:tt)*) => {
        $g!(trace_counter, log: $crate::TraceLog::global(), $($rest)*)
    };
    (log: $($rest:tt)*) => {
        $crate::__phosphor_gate!(trace_counter, log: $($rest)*)
    };
    ($cat:expr, $name:expr, $value:expr $(,)?) => {
        $crate::__phosphor_gate!(trace_counter, log: $crate::TraceLog::global(), $cat, $name, $value)
    };
}

/// Records a complete event from a start (a value of [`TraceLog::now`](crate::TraceLog::now) or
/// [`now`](crate::now)) and a [`Duration`](std::time::Duration).
#[macro_export]
macro_rules! trace_complete {
    (@on log: $log:expr, $cat:expr, $name:expr, $start:expr, $duration:expr $(, $k:literal => $v:expr)* $(,)?) => {{
        let __phosphor_l: &$crate::TraceLog = $log;
        $crate::__phosphor_event!(__phosphor_l, Complete, $cat, $name, $crate::__macro_support::At($start),
            [__phosphor_l.duration_to_ticks($duration)] $(, $k => $v)*)
    }};
    (@off log: $log:expr, $cat:expr, $name:expr, $start:expr, $duration:expr $(, $k:literal => $v:expr)* $(,)?) => {
        if false {
            let _ = $log;
            let _ = &$start; let _ = &$duration; $(let _ = &$v;)*
        }
    };
    (group: $g:ident, log: $($rest:tt)*) => {
        $g!(trace_complete, log: $($rest)*)
    };
    (group: $g:ident, $($rest:tt)*) => {
        $g!(trace_complete, log: $crate::TraceLog::global(), $($rest)*)
    };
    (log: $($rest:tt)*) => {
        $crate::__phosphor_gate!(trace_complete, log: $($rest)*)
    };
    ($cat:expr, $name:expr, $start:expr, $duration:expr $(, $k:literal => $v:expr)* $(,)?) => {
        $crate::__phosphor_gate!(trace_complete, log: $crate::TraceLog::global(), $cat, $name, $start, $duration $(, $k => $v)*)
    };
}

/// Opens an async slice identified by `id` (any integer); it may end on another thread.
#[macro_export]
macro_rules! trace_async_begin {
    (@on log: $log:expr, $cat:expr, $name:expr, $id:expr $(, $k:literal => $v:expr)* $(,)?) => {
        $crate::__phosphor_event!($log, AsyncBegin, $cat, $name, $crate::__macro_support::Now, [($id) as u64] $(, $k => $v)*)
    };
    (@off log: $log:expr, $cat:expr, $name:expr, $id:expr $(, $k:literal => $v:expr)* $(,)?) => {
        if false {
            let _ = $log;
            let _ = &$id; $(let _ = &$v;)*
        }
    };
    (group: $g:ident, log: $($rest:tt)*) => {
        $g!(trace_async_begin, log: $($rest)*)
    };
    (group: $g:ident, $($rest:tt)*) => {
        $g!(trace_async_begin, log: $crate::TraceLog::global(), $($rest)*)
    };
    (log: $($rest:tt)*) => {
        $crate::__phosphor_gate!(trace_async_begin, log: $($rest)*)
    };
    ($cat:expr, $name:expr, $id:expr $(, $k:literal => $v:expr)* $(,)?) => {
        $crate::__phosphor_gate!(trace_async_begin, log: $crate::TraceLog::global(), $cat, $name, $id $(, $k => $v)*)
    };
}

/// Wraps a future so that its whole life is one async slice named `name` (from its creation to
/// its completion, or its drop, marked `cancelled`), and each poll a slice on the thread that ran
/// it, linked to the async slice by a flow (see [`future`](crate::future)). Evaluates to a
/// [`Traced`](crate::future::Traced) future, or to the future itself when compiled out. Up to two
/// arguments follow the future, recorded on the async slice's begin.
///
/// ```
/// # async fn fetch(_: u32) -> u32 { 7 }
/// let task = phosphor::trace_future!("net", "fetch", fetch(3));
/// # drop(task);
/// let task = phosphor::trace_future!("net", "fetch", fetch(4), "id" => 4u32);
/// # drop(task);
/// ```
#[macro_export]
macro_rules! trace_future {
    (@sites $log:expr, $cat:expr, $name:expr, $future:expr, [$n0:expr, $n1:expr], $v0:expr, $v1:expr) => {{
        // Flagged as a future's (format 1.3's flow flag): exporters link its polls to it.
        $crate::__phosphor_callsite!(__PHOSPHOR_BEGIN, $crate::__macro_support::CallsiteMeta::new(
            $cat, $name, $crate::__macro_support::Phase::AsyncBegin, [$n0, $n1], file!(), line!(),
        ).with_flow());
        $crate::__phosphor_callsite!(__PHOSPHOR_END, $crate::__macro_support::CallsiteMeta::new(
            $cat, $name, $crate::__macro_support::Phase::AsyncEnd, ["cancelled", ""], file!(), line!(),
        ).with_flow());
        $crate::__phosphor_callsite!(__PHOSPHOR_POLL, $crate::__macro_support::CallsiteMeta::new(
            $cat, $name, $crate::__macro_support::Phase::Complete, ["task", ""], file!(), line!(),
        ).with_flow());
        static __PHOSPHOR_SITES: $crate::future::FutureSites = $crate::future::FutureSites {
            begin: &__PHOSPHOR_BEGIN,
            end: &__PHOSPHOR_END,
            poll: &__PHOSPHOR_POLL,
        };
        // The slice opens (its arguments evaluated) before the future expression runs, which may
        // move what the arguments borrowed.
        let __phosphor_begun = $crate::future::Begun::new($log, &__PHOSPHOR_SITES, $v0, $v1);
        __phosphor_begun.wrap($future)
    }};
    (@on log: $log:expr, $cat:expr, $name:expr, $future:expr $(,)?) => {
        $crate::trace_future!(@sites $log, $cat, $name, $future, ["", ""],
            $crate::__macro_support::NoArg, $crate::__macro_support::NoArg)
    };
    (@on log: $log:expr, $cat:expr, $name:expr, $future:expr, $k0:literal => $v0:expr $(,)?) => {
        $crate::trace_future!(@sites $log, $cat, $name, $future, [$k0, ""], $v0, $crate::__macro_support::NoArg)
    };
    (@on log: $log:expr, $cat:expr, $name:expr, $future:expr, $k0:literal => $v0:expr, $k1:literal => $v1:expr $(,)?) => {
        $crate::trace_future!(@sites $log, $cat, $name, $future, [$k0, $k1], $v0, $v1)
    };
    (@off log: $log:expr, $cat:expr, $name:expr, $future:expr $(, $k:literal => $v:expr)* $(,)?) => {{
        if false {
            let _ = $log;
            $(let _ = &$v;)*
        }
        $future
    }};
    (group: $g:ident, log: $($rest:tt)*) => {
        $g!(trace_future, log: $($rest)*)
    };
    (group: $g:ident, $($rest:tt)*) => {
        $g!(trace_future, log: $crate::TraceLog::global(), $($rest)*)
    };
    (log: $($rest:tt)*) => {
        $crate::__phosphor_gate!(trace_future, log: $($rest)*)
    };
    ($cat:expr, $name:expr, $future:expr $(, $k:literal => $v:expr)* $(,)?) => {
        $crate::__phosphor_gate!(trace_future, log: $crate::TraceLog::global(), $cat, $name, $future $(, $k => $v)*)
    };
}

/// Closes the async slice `id`.
#[macro_export]
macro_rules! trace_async_end {
    (@on log: $log:expr, $cat:expr, $name:expr, $id:expr $(, $k:literal => $v:expr)* $(,)?) => {
        $crate::__phosphor_event!($log, AsyncEnd, $cat, $name, $crate::__macro_support::Now, [($id) as u64] $(, $k => $v)*)
    };
    (@off log: $log:expr, $cat:expr, $name:expr, $id:expr $(, $k:literal => $v:expr)* $(,)?) => {
        if false {
            let _ = $log;
            let _ = &$id; $(let _ = &$v;)*
        }
    };
    (group: $g:ident, log: $($rest:tt)*) => {
        $g!(trace_async_end, log: $($rest)*)
    };
    (group: $g:ident, $($rest:tt)*) => {
        $g!(trace_async_end, log: $crate::TraceLog::global(), $($rest)*)
    };
    (log: $($rest:tt)*) => {
        $crate::__phosphor_gate!(trace_async_end, log: $($rest)*)
    };
    ($cat:expr, $name:expr, $id:expr $(, $k:literal => $v:expr)* $(,)?) => {
        $crate::__phosphor_gate!(trace_async_end, log: $crate::TraceLog::global(), $cat, $name, $id $(, $k => $v)*)
    };
}

/// Internal: the guard expression of a scope.
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_scope {
    (@guard $log:expr, $cat:expr, $name:expr, [$n0:expr, $n1:expr], $args:expr) => {{
        $crate::__phosphor_callsite!(__PHOSPHOR_CS, $cat, $name, Complete, [$n0, $n1]);
        let __phosphor_log: &$crate::TraceLog = $log;
        let __phosphor_on = $crate::__macro_support::check(__phosphor_log, &__PHOSPHOR_CS).is_some();
        $crate::__phosphor_scope_open!(__phosphor_log, __PHOSPHOR_CS, $cat, $name, __phosphor_on, $args)
    }};
    (@guard_dyn $log:expr, $cat:expr, $name:expr, $n1:expr, $v1:expr) => {{
        $crate::__phosphor_callsite!(__PHOSPHOR_CS, $crate::__macro_support::CallsiteMeta::new(
            $cat, stringify!($name), $crate::__macro_support::Phase::Complete, ["name", $n1], file!(), line!(),
        ).with_dynamic_name());
        let __phosphor_log: &$crate::TraceLog = $log;
        let __phosphor_on = $crate::__macro_support::check(__phosphor_log, &__PHOSPHOR_CS).is_some();
        $crate::__phosphor_scope_open!(__phosphor_log, __PHOSPHOR_CS, $cat, "dyn", __phosphor_on,
            ($crate::__macro_support::name_arg($name), $v1))
    }};
    ($log:expr, $cat:expr, dyn $name:expr $(,)?) => {
        $crate::__phosphor_scope!(@guard_dyn $log, $cat, $name, "", $crate::__macro_support::NoArg)
    };
    ($log:expr, $cat:expr, dyn $name:expr, $k1:literal => $v1:expr $(,)?) => {
        $crate::__phosphor_scope!(@guard_dyn $log, $cat, $name, $k1, $v1)
    };
    ($log:expr, $cat:expr, $name:expr $(,)?) => {
        $crate::__phosphor_scope!(@guard $log, $cat, $name, ["", ""],
            ($crate::__macro_support::NoArg, $crate::__macro_support::NoArg))
    };
    ($log:expr, $cat:expr, $name:expr, $k0:literal => $v0:expr $(,)?) => {
        $crate::__phosphor_scope!(@guard $log, $cat, $name, [$k0, ""], ($v0, $crate::__macro_support::NoArg))
    };
    ($log:expr, $cat:expr, $name:expr, $k0:literal => $v0:expr, $k1:literal => $v1:expr $(,)?) => {
        $crate::__phosphor_scope!(@guard $log, $cat, $name, [$k0, $k1], ($v0, $v1))
    };
}

/// Records the rest of the enclosing block as one complete event. Arguments are evaluated at the
/// start of the scope.
///
/// ```
/// fn handle() {
///     phosphor::trace_scope!("db", "query", "rows" => 10u32);
///     // ... the work being measured ...
/// }
/// # handle();
/// ```
#[macro_export]
macro_rules! trace_scope {
    (@on log: $log:expr, $cat:expr, dyn $name:expr $(, $k:literal => $v:expr)? $(,)?) => {
        let __phosphor_scope_guard = $crate::__phosphor_scope!($log, $cat, dyn $name $(, $k => $v)?);
    };
    (@off log: $log:expr, $cat:expr, dyn $name:expr $(, $k:literal => $v:expr)? $(,)?) => {
        if false {
            let _ = $log;
            let _ = &$name;
            $(let _ = &$v;)?
        }
    };
    (@on log: $log:expr, $cat:expr, $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        let __phosphor_scope_guard = $crate::__phosphor_scope!($log, $cat, $name $(, $k => $v)*);
    };
    (@off log: $log:expr, $cat:expr, $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        if false {
            let _ = $log;
            $(let _ = &$v;)*
        }
    };
    (group: $g:ident, log: $($rest:tt)*) => {
        $g!(trace_scope, log: $($rest)*)
    };
    (group: $g:ident, $($rest:tt)*) => {
        $g!(trace_scope, log: $crate::TraceLog::global(), $($rest)*)
    };
    (log: $($rest:tt)*) => {
        $crate::__phosphor_gate!(trace_scope, log: $($rest)*)
    };
    ($cat:expr, dyn $name:expr $(, $k:literal => $v:expr)? $(,)?) => {
        $crate::__phosphor_gate!(trace_scope, log: $crate::TraceLog::global(), $cat, dyn $name $(, $k => $v)?)
    };
    ($cat:expr, $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        $crate::__phosphor_gate!(trace_scope, log: $crate::TraceLog::global(), $cat, $name $(, $k => $v)*)
    };
}

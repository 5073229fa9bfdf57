//! The value macros: `trace_counter!` (a sampled value), `trace_data!` (a value in the current
//! scope), and the in-process aggregates `trace_sum!` and `trace_histogram!`.

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
        $crate::__phosphor_site!(Data, __phosphor_log, __PHOSPHOR_CS, $cat, $name, $crate::__macro_support::Now, [],
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

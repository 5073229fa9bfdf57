//! Points and spans: `trace_instant!`, `trace_begin!`/`trace_end!` and `trace_complete!`.

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

/// Marks the end of a frame and the start of the next (Tracy's `FrameMark`, puffin's
/// `new_frame`): `phosphor stats` gives the frames' times (p50, p99, max and the slowest) and
/// the viewer draws them. `trace_frame!("physics")` marks a frame set of its own. A mark is an
/// instant of category `phosphor.frame` (`phosphor::format::system::FRAME_CATEGORY`) named by its
/// set, so the category filter applies to it as to any event.
///
/// ```
/// for _ in 0..3 {
///     // ... update, render ...
///     phosphor::trace_frame!();
/// }
/// ```
#[macro_export]
macro_rules! trace_frame {
    () => {
        $crate::trace_instant!("phosphor.frame", "frame")
    };
    ($set:literal) => {
        $crate::trace_instant!("phosphor.frame", $set)
    };
    (log: $log:expr $(,)?) => {
        $crate::trace_instant!(log: $log, "phosphor.frame", "frame")
    };
    (log: $log:expr, $set:literal $(,)?) => {
        $crate::trace_instant!(log: $log, "phosphor.frame", $set)
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

//! Async slices: `trace_async_begin!`/`trace_async_end!` and `trace_future!`, which wraps a future
//! in a [`Traced`](crate::future::Traced).

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

//! `trace_context!`: joins a distributed trace (W3C `traceparent`).

/// Records a W3C trace context (an incoming request's `traceparent` header, or a
/// [`TraceContext`](crate::TraceContext)) for the innermost scope open on this thread, or, with
/// `async_id:`, for the async slice with that id. The OTLP export then gives that span the trace id
/// and the caller's span as its parent, and its subtree the trace id.
///
/// Evaluates to `Result<TraceContext, ParseTraceContextError>`: an invalid header records nothing
/// and is returned as the error (which names the byte), so that the caller decides what a bad
/// header means. Parsing the 55-byte header allocates nothing; the event is an instant of category
/// `phosphor`, name `trace_context`, with the header text as a dynamic string (see
/// [`format::trace_context`](crate::format::trace_context)). With the `off` feature the header is
/// still parsed and nothing is recorded; so it is in a compile-time group (`group: g,` first)
/// that is compiled out.
///
/// `tracestate: ts` (a `&str`, before `async_id:`) also records the caller's `tracestate` header
/// (a `trace_state` instant after the context's, when the header parsed and `ts` is 1 to 512
/// bytes), which the OTLP export puts in `span.trace_state` of the spans in the caller's trace.
///
/// ```
/// fn handle(traceparent: &str) {
///     phosphor::trace_scope!("http", "request");
///     if let Err(e) = phosphor::trace_context!(traceparent) {
///         eprintln!("ignoring the caller's trace: {e}");
///     }
/// }
/// handle("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
/// ```
#[macro_export]
macro_rules! trace_context {
    (@on log: $log:expr, $tp:expr, tracestate: $ts:expr, async_id: $id:expr $(,)?) => {{
        let __phosphor_l: &$crate::TraceLog = $log;
        let __phosphor_ts: &str = $ts;
        let __phosphor_id: u64 = $id;
        let __phosphor_r = $crate::trace_context!(@on log: __phosphor_l, $tp, async_id: __phosphor_id);
        if __phosphor_r.is_ok() && !__phosphor_ts.is_empty() && __phosphor_ts.len() <= $crate::format::trace_context::MAX_TRACESTATE_LEN {
            $crate::__phosphor_event!(__phosphor_l, Instant, "phosphor", "trace_state", $crate::__macro_support::Now, [],
                "tracestate" => __phosphor_ts, "async_id" => __phosphor_id);
        }
        __phosphor_r
    }};
    (@on log: $log:expr, $tp:expr, tracestate: $ts:expr $(,)?) => {{
        let __phosphor_l: &$crate::TraceLog = $log;
        let __phosphor_ts: &str = $ts;
        let __phosphor_r = $crate::trace_context!(@on log: __phosphor_l, $tp);
        if __phosphor_r.is_ok() && !__phosphor_ts.is_empty() && __phosphor_ts.len() <= $crate::format::trace_context::MAX_TRACESTATE_LEN {
            $crate::__phosphor_event!(__phosphor_l, Instant, "phosphor", "trace_state", $crate::__macro_support::Now, [],
                "tracestate" => __phosphor_ts);
        }
        __phosphor_r
    }};
    (@on log: $log:expr, $tp:expr $(, async_id: $id:expr)? $(,)?) => {{
        let __phosphor_r: ::core::result::Result<$crate::TraceContext, $crate::ParseTraceContextError> =
            $crate::IntoTraceContext::into_trace_context($tp);
        if let ::core::result::Result::Ok(__phosphor_c) = &__phosphor_r {
            let __phosphor_h = __phosphor_c.header();
            $crate::__phosphor_event!($log, Instant, "phosphor", "trace_context", $crate::__macro_support::Now, [],
                "traceparent" => __phosphor_h.as_str() $(, "async_id" => { let __phosphor_id: u64 = $id; __phosphor_id })?);
        }
        __phosphor_r
    }};
    (@off log: $log:expr, $tp:expr $(, tracestate: $ts:expr)? $(, async_id: $id:expr)? $(,)?) => {{
        if false {
            let _ = $log;
            $(let _: &str = $ts;)?
            $(let _: u64 = $id;)?
        }
        let __phosphor_r: ::core::result::Result<$crate::TraceContext, $crate::ParseTraceContextError> =
            $crate::IntoTraceContext::into_trace_context($tp);
        __phosphor_r
    }};
    (group: $g:ident, log: $($rest:tt)*) => {
        $g!(trace_context, log: $($rest)*)
    };
    (group: $g:ident, $($rest:tt)*) => {
        $g!(trace_context, log: $crate::TraceLog::global(), $($rest)*)
    };
    (log: $($rest:tt)*) => {
        $crate::__phosphor_gate!(trace_context, log: $($rest)*)
    };
    ($tp:expr $(, tracestate: $ts:expr)? $(, async_id: $id:expr)? $(,)?) => {
        $crate::__phosphor_gate!(trace_context, log: $crate::TraceLog::global(), $tp $(, tracestate: $ts)? $(, async_id: $id)?)
    };
}

//! `trace_context!`: a W3C `traceparent` recorded as the reserved `phosphor`/`trace_context` instant,
//! on the calling thread, inside the scope it belongs to; invalid headers record nothing.

use phosphor::format::trace_context::{ARG_ASYNC_ID, ARG_TRACEPARENT, CATEGORY, NAME};
use phosphor::format::Phase;
use phosphor::{
    current_thread_id, trace_async_begin, trace_async_end, trace_context, trace_scope, ArgValue, BufferMode,
    TraceConfig, TraceContext,
};

use crate::support::{allocation_counts, events, started, stop_and_take};

const HEADER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn fixed() -> TraceConfig {
    TraceConfig::new(BufferMode::Fixed, 1 << 16)
}

#[test]
fn a_context_is_recorded_inside_the_scope_open_on_the_calling_thread() {
    let log = started(fixed());
    let ctx = {
        trace_scope!(log: &log, "http", "request");
        trace_context!(log: &log, HEADER).unwrap()
    };
    assert_eq!(ctx, TraceContext::parse(HEADER).unwrap());
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    let names: Vec<&str> = ev.iter().map(|e| e.callsite.name).collect();
    assert_eq!(names, [NAME, "request"], "the context is recorded before its scope closes");
    let (c, scope) = (&ev[0], &ev[1]);
    assert_eq!(c.callsite.category, CATEGORY);
    assert_eq!(c.phase(), Phase::Instant);
    assert_eq!(c.tid, current_thread_id());
    assert_eq!(c.arg(ARG_TRACEPARENT), Some(ArgValue::Str(HEADER)));
    assert_eq!(c.arg(ARG_ASYNC_ID), None);
    let end = scope.ts + scope.duration.unwrap();
    assert!(scope.ts <= c.ts && c.ts <= end, "the context falls within its scope");
}

#[test]
fn an_async_context_carries_the_slice_id() {
    let log = started(fixed());
    trace_async_begin!(log: &log, "rpc", "call", 77);
    let parsed = TraceContext::parse(HEADER).unwrap();
    trace_context!(log: &log, &parsed, async_id: 77).unwrap();
    trace_async_end!(log: &log, "rpc", "call", 77);
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    let c = ev.iter().find(|e| e.callsite.name == NAME).expect("the context event");
    assert_eq!(c.arg(ARG_TRACEPARENT), Some(ArgValue::Str(HEADER)));
    assert_eq!(c.arg(ARG_ASYNC_ID), Some(ArgValue::U64(77)));
}

#[test]
fn a_later_version_is_recorded_as_its_version_00_header() {
    let log = started(fixed());
    let v2 = format!("{}-extra", HEADER.replacen("00", "02", 1));
    trace_context!(log: &log, &v2).unwrap();
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].arg(ARG_TRACEPARENT), Some(ArgValue::Str(HEADER)));
}

#[test]
fn invalid_headers_are_returned_as_errors_and_record_nothing() {
    let log = started(fixed());
    let bad = [
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
    ];
    for h in bad {
        let e = trace_context!(log: &log, h).unwrap_err();
        assert!(e.to_string().starts_with("invalid traceparent"), "{h:?}: {e}");
    }
    let trace = stop_and_take(&log);
    assert!(events(&trace).is_empty(), "nothing recorded for an invalid header");
}

#[test]
fn recording_a_context_allocates_nothing() {
    let log = started(fixed());
    // On a fresh thread, so that nothing this test thread did before counts.
    let (allocs, deallocs) = std::thread::scope(|s| {
        s.spawn(|| {
            // One call site: its first call attaches the thread and registers the callsite.
            let record = || trace_context!(log: &log, std::hint::black_box(HEADER)).unwrap();
            record();
            let (a0, d0) = allocation_counts();
            for _ in 0..100 {
                record();
            }
            let (a1, d1) = allocation_counts();
            (a1 - a0, d1 - d0)
        })
        .join()
        .unwrap()
    });
    assert_eq!((allocs, deallocs), (0, 0));
    let trace = stop_and_take(&log);
    assert_eq!(events(&trace).len(), 101);
}

phosphor::group!(ctx_on, all());
phosphor::group!(ctx_off, any());

#[test]
fn a_group_compiled_out_still_parses_but_records_nothing() {
    let log = started(fixed());
    assert!(trace_context!(group: ctx_off, log: &log, HEADER).is_ok());
    assert!(trace_context!(group: ctx_off, log: &log, "00-bad").is_err());
    trace_context!(group: ctx_on, log: &log, HEADER, async_id: 5).unwrap();
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    assert_eq!(ev.len(), 1, "only the enabled group records");
    assert_eq!(ev[0].arg(ARG_ASYNC_ID), Some(ArgValue::U64(5)));
}

#[test]
fn a_tracestate_follows_its_context_when_the_header_parses_and_is_short_enough() {
    use phosphor::format::trace_context::{ARG_TRACESTATE, STATE_NAME};
    let log = started(fixed());
    {
        trace_scope!(log: &log, "http", "request");
        trace_context!(log: &log, HEADER, tracestate: "congo=t61rcWkgMzE").unwrap();
        assert!(trace_context!(log: &log, "00-bad", tracestate: "a=1").is_err());
        trace_context!(log: &log, HEADER, tracestate: &"k=v,".repeat(200)).unwrap();
        trace_context!(log: &log, HEADER, tracestate: "b=2", async_id: 7).unwrap();
    }
    assert!(trace_context!(group: ctx_off, log: &log, HEADER, tracestate: "c=3").is_ok());
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    let names: Vec<&str> = ev.iter().map(|e| e.callsite.name).collect();
    // The bad header records neither; the long tracestate is left out, its context kept.
    assert_eq!(names, [NAME, STATE_NAME, NAME, NAME, STATE_NAME, "request"]);
    assert_eq!(ev[1].arg(ARG_TRACESTATE), Some(ArgValue::Str("congo=t61rcWkgMzE")));
    assert_eq!(ev[1].arg(ARG_ASYNC_ID), None);
    assert_eq!(ev[4].arg(ARG_TRACESTATE), Some(ArgValue::Str("b=2")));
    assert_eq!(ev[4].arg(ARG_ASYNC_ID), Some(ArgValue::U64(7)));
}

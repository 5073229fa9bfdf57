//! The trace context events that the runtime's `trace_context!` records are recognised in the saved
//! file, events that only look like them are not, and (with the assembler) the exported span joins
//! the caller's trace.

use phosphor::{trace_async_begin, trace_async_end, trace_context, trace_instant, trace_scope};
use std::sync::Arc;

use phosphor::{BufferMode, TraceConfig, TraceLog, TraceLogConfig};
use phosphor_format::file::{Block, Reader};
use phosphor_otlp::assemble::{AssembleOptions, Assembler};
use phosphor_otlp::context::{trace_context_of, TraceContext};

const HEADER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn new_log() -> Arc<TraceLog> {
    let log = TraceLog::new(TraceLogConfig::default()).expect("a log");
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 16)).expect("a trace starts");
    log
}

/// Stops `log` and returns its trace as a saved file's bytes.
fn saved(log: &TraceLog) -> Vec<u8> {
    log.stop();
    let trace = log.take_trace().expect("a stopped trace");
    trace.write_to(Vec::new()).expect("the trace saves")
}

/// What `trace_context_of` makes of one event.
type Found = Option<(TraceContext, Option<u64>)>;

/// Every event of the file, by name, with what `trace_context_of` makes of it.
fn contexts(file: &[u8]) -> Vec<(String, Found)> {
    let mut r = Reader::new(file).expect("the file reads");
    let mut out = Vec::new();
    while let Some(b) = r.next_block().expect("a block") {
        if let Block::Chunk(c) = b {
            for e in c.events() {
                let e = e.expect("an event");
                out.push((e.callsite.name.to_string(), trace_context_of(&e)));
            }
        }
    }
    out
}

#[test]
fn recorded_contexts_are_recognised_with_their_async_id() {
    let log = new_log();
    {
        trace_scope!(log: &log, "http", "request");
        trace_context!(log: &log, HEADER).unwrap();
    }
    trace_async_begin!(log: &log, "rpc", "call", 9);
    trace_context!(log: &log, HEADER, async_id: 9).unwrap();
    trace_async_end!(log: &log, "rpc", "call", 9);
    let got = contexts(&saved(&log));
    let ctx = TraceContext::parse(HEADER).unwrap();
    let found: Vec<_> = got.iter().filter_map(|(_, c)| *c).collect();
    assert_eq!(found, [(ctx, None), (ctx, Some(9))]);
    for (name, c) in &got {
        assert_eq!(c.is_some(), name == "trace_context", "{name}");
    }
}

#[test]
fn look_alike_events_are_not_contexts() {
    let log = new_log();
    trace_instant!(log: &log, "phosphor", "trace_context", "traceparent" => 5u64);
    trace_instant!(log: &log, "phosphor", "trace_context", "traceparent" => "00-garbage");
    trace_instant!(log: &log, "phosphor", "trace_context", "traceparent" => HEADER, "async_id" => -1i64);
    trace_instant!(log: &log, "phosphor", "trace_context", "traceparent" => HEADER, "other" => 1u64);
    trace_instant!(log: &log, "phosphor", "trace_context", "header" => HEADER);
    trace_instant!(log: &log, "app", "trace_context", "traceparent" => HEADER);
    trace_instant!(log: &log, "phosphor", "context", "traceparent" => HEADER);
    {
        trace_scope!(log: &log, "phosphor", "trace_context", "traceparent" => HEADER);
    }
    // The well-formed one, last, proves the file was read.
    trace_instant!(log: &log, "phosphor", "trace_context", "traceparent" => HEADER, "async_id" => 3u64);
    let got = contexts(&saved(&log));
    assert_eq!(got.len(), 9);
    let found: Vec<_> = got.iter().map(|(_, c)| c.map(|(_, id)| id)).collect();
    let mut want = vec![None; 8];
    want.push(Some(Some(3)));
    assert_eq!(found, want);
}

#[test]
fn the_scope_holding_a_context_joins_the_callers_trace_and_its_children_follow() {
    let log = new_log();
    {
        trace_scope!(log: &log, "http", "request");
        trace_context!(log: &log, HEADER).unwrap();
        trace_scope!(log: &log, "db", "query");
    }
    {
        trace_scope!(log: &log, "app", "unrelated");
    }
    let file = saved(&log);
    let mut r = Reader::new(&file[..]).unwrap();
    let mut a = Assembler::new(r.header(), AssembleOptions::default());
    while let Some(b) = r.next_block().unwrap() {
        if let Block::Chunk(c) = b {
            for e in c.events() {
                a.push(&e.unwrap());
            }
        }
    }
    let mut spans = Vec::new();
    a.finish(&mut spans);
    let by_name = |n: &str| spans.iter().find(|s| s.name.ends_with(n)).unwrap_or_else(|| panic!("span {n}"));
    let ctx = TraceContext::parse(HEADER).unwrap();
    let (request, query, unrelated) = (by_name("request"), by_name("query"), by_name("unrelated"));
    assert_eq!(request.trace_id, ctx.trace_id);
    assert_eq!(request.parent_span_id, ctx.parent_span_id);
    assert_eq!(query.trace_id, ctx.trace_id, "the subtree inherits the trace id");
    assert_eq!(query.parent_span_id, request.span_id);
    assert_ne!(unrelated.trace_id, ctx.trace_id, "a scope outside the context keeps its derived id");
    assert!(unrelated.parent_span_id.is_empty());
}

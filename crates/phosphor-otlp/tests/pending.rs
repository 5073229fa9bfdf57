//! What the trace model holds while a file is converted: parents kept for trees as large as its
//! pending limit, the oldest slices final early past it, span events within their byte budget.

use std::collections::HashMap;

use phosphor::{trace_log, trace_scope, BufferMode, ClockKind, TraceConfig, TraceLog, TraceLogConfig};
use phosphor_format::file::Reader;
use phosphor_model::nesting::DEFAULT_PENDING_LIMIT;
use phosphor_otlp::convert::{convert, ConvertOptions, Converted};
use phosphor_otlp::{ExportTraceServiceRequest, Span};
use prost::Message as _;

/// Two threads: `frames` frames of nested scopes with logs; one thread runs them all inside one
/// `main` scope when `outer`.
fn trace(frames: u64, outer: bool) -> Vec<u8> {
    let log = TraceLog::new(TraceLogConfig::new().clock(ClockKind::Monotonic)).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 25)).unwrap();
    let work = |log: &TraceLog| {
        for i in 0..frames {
            trace_scope!(log: log, "app", "frame", "i" => i);
            {
                trace_scope!(log: log, "app", "update");
                trace_log!(log: log, info, "app", "frame {} of {:>5}", i, frames);
            }
            trace_scope!(log: log, "app", "render");
        }
    };
    std::thread::scope(|s| {
        s.spawn(|| work(&log));
        if outer {
            trace_scope!(log: &log, "app", "main");
            work(&log);
        } else {
            work(&log);
        }
    });
    log.stop();
    log.take_trace().unwrap().write_to(Vec::new()).unwrap()
}

fn once(file: &[u8], options: &ConvertOptions) -> (Vec<Span>, Converted) {
    let mut out = Vec::new();
    let c = convert(&mut Reader::new(file).unwrap(), options, &mut out).unwrap();
    (decode(&out), c)
}

fn decode(pb: &[u8]) -> Vec<Span> {
    let req = ExportTraceServiceRequest::decode(pb).unwrap();
    let mut spans: Vec<Span> =
        req.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans).collect();
    spans.sort_by(|a, b| a.span_id.cmp(&b.span_id));
    spans
}

#[test]
fn a_scope_enclosing_many_spans_stays_their_parent() {
    // `main` encloses 4 slices per frame (3 spans and a log): below the model's pending limit.
    let frames = (DEFAULT_PENDING_LIMIT as u64 - 100) / 4;
    let file = trace(frames, true);
    let (b, cb) = once(&file, &ConvertOptions::default());
    assert_eq!(cb.stats.evicted_roots, 0);
    assert_eq!(cb.spans, 2 * 3 * frames + 1);
    assert_eq!(b.len() as u64, cb.spans);
    let main = b.iter().find(|s| s.name == "main").expect("main");
    let by_id: HashMap<&[u8], &Span> = b.iter().map(|s| (s.span_id.as_slice(), s)).collect();
    // Every frame of main's thread has main as its parent, and its trace id.
    let main_frames: Vec<&Span> = b.iter().filter(|s| s.parent_span_id == main.span_id).collect();
    assert_eq!(main_frames.len() as u64, frames);
    assert!(main_frames.iter().all(|s| s.name == "frame" && s.trace_id == main.trace_id));
    // Every span's parent is in the output and encloses it.
    for s in b.iter().filter(|s| !s.parent_span_id.is_empty()) {
        let p = by_id[s.parent_span_id.as_slice()];
        assert!(
            p.start_time_unix_nano <= s.start_time_unix_nano && s.end_time_unix_nano <= p.end_time_unix_nano
        );
        assert_eq!(p.trace_id, s.trace_id);
    }
    // The log messages are formatted as `phosphor logs` formats them (widths included).
    let update = b.iter().find(|s| s.name == "update" && !s.events.is_empty()).unwrap();
    assert_eq!(update.events[0].name, format!("frame {} of {frames:>5}", frame_of(&b, update)));
}

#[test]
fn past_the_pending_limit_the_oldest_slices_are_final_early_and_every_span_is_made_once() {
    let frames = DEFAULT_PENDING_LIMIT as u64 / 4 + 2_000;
    let file = trace(frames, true);
    let (spans, c) = once(&file, &ConvertOptions { max_spans: 1000, ..ConvertOptions::default() });
    assert!(c.stats.evicted_roots > 0, "{:?}", c.stats);
    assert_eq!(c.spans, 2 * 3 * frames + 1);
    let ids: std::collections::HashSet<&[u8]> = spans.iter().map(|s| s.span_id.as_slice()).collect();
    assert_eq!(ids.len(), spans.len());
    // The frames resolved early are roots; `main` keeps the later ones.
    let main = spans.iter().find(|s| s.name == "main").expect("main");
    let under_main = spans.iter().filter(|s| s.parent_span_id == main.span_id).count() as u64;
    let frame_roots =
        spans.iter().filter(|s| s.name == "frame" && s.parent_span_id.is_empty()).count() as u64;
    assert!(under_main > 0 && under_main < frames, "{under_main}");
    assert_eq!(under_main + frame_roots, 2 * frames);
}

/// The `i` argument of the frame enclosing `span`.
fn frame_of(spans: &[Span], span: &Span) -> i64 {
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    let parent = spans.iter().find(|s| s.span_id == span.parent_span_id).unwrap();
    let i = parent.attributes.iter().find(|kv| kv.key == "i").unwrap();
    match i.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Value::IntValue(i)) => *i,
        other => panic!("{other:?}"),
    }
}

#[test]
fn span_events_past_the_byte_budget_are_dropped_and_counted() {
    use phosphor_otlp::assemble::MAX_EVENT_BYTES;
    // One scope holding 120 logs of 600 kB each (widths ask for it): 72 MB of span events, past
    // the budget.
    let log = TraceLog::new(TraceLogConfig::new().clock(ClockKind::Monotonic)).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 22)).unwrap();
    {
        trace_scope!(log: &log, "app", "request");
        for i in 0..120u64 {
            trace_log!(
                log: &log,
                info,
                "app",
                "{0:60000}{0:60000}{0:60000}{0:60000}{0:60000}{0:60000}{0:60000}{0:60000}{0:60000}{0:60000}",
                i
            );
        }
    }
    log.stop();
    let file = log.take_trace().unwrap().write_to(Vec::new()).unwrap();
    let (spans, c) = once(&file, &ConvertOptions::default());
    assert_eq!(spans.len(), 1);
    let kept = spans[0].events.len() as u64;
    assert_eq!(kept, c.stats.span_events);
    assert_eq!(kept + c.stats.span_events_dropped, 120, "{:?}", c.stats);
    assert!(c.stats.span_events_dropped > 0);
    let bytes: usize = spans[0].events.iter().map(|e| e.name.len()).sum();
    assert!(bytes <= MAX_EVENT_BYTES, "{bytes}");
    assert!(spans[0].events.iter().all(|e| e.name.len() == 600_000));
}

//! Two readings of a file (`Roots::scan`, then `convert_with_roots`): the same spans as one
//! reading, each tree written as soon as its root closes, and parents kept for trees larger than
//! one reading can hold.

use std::collections::HashMap;

use phosphor::{trace_log, trace_scope, BufferMode, ClockKind, TraceConfig, TraceLog, TraceLogConfig};
use phosphor_format::file::Reader;
use phosphor_otlp::assemble::{AssembleOptions, Assembler, MAX_HELD_PER_THREAD};
use phosphor_otlp::convert::{convert, convert_with_roots, ConvertOptions, Converted};
use phosphor_otlp::roots::Roots;
use phosphor_otlp::select::Selection;
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

fn twice(file: &[u8], options: &ConvertOptions) -> (Vec<Span>, Converted) {
    let roots = Roots::scan(&mut Reader::new(file).unwrap());
    let mut out = Vec::new();
    let c = convert_with_roots(&mut Reader::new(file).unwrap(), roots, options, &mut out).unwrap();
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
fn two_readings_give_the_same_spans_as_one() {
    let file = trace(300, false);
    for selection in [
        Selection::default(),
        Selection { min_duration_ns: Some(1), ..Selection::default() },
        Selection { paths: vec!["frame/update".into()], ..Selection::default() },
        Selection { roots_only: true, ..Selection::default() },
        Selection { slowest_roots: Some(7), ..Selection::default() },
    ] {
        let options = ConvertOptions {
            assemble: AssembleOptions { selection: selection.clone(), hold_ns: None },
            max_spans: 100,
            ..ConvertOptions::default()
        };
        let (a, ca) = once(&file, &options);
        let (b, cb) = twice(&file, &options);
        assert!(!a.is_empty(), "{selection:?}");
        assert_eq!(a, b, "{selection:?}");
        assert_eq!(ca.stats, cb.stats, "{selection:?}");
        assert_eq!(ca.stats.evicted_roots, 0);
    }
}

#[test]
fn a_scan_that_forgets_its_oldest_roots_still_gives_the_same_spans() {
    // Two threads of 300 frames (600 roots, and a log mark per frame) against limits far below.
    let file = trace(300, false);
    let options = ConvertOptions { max_spans: 64, ..ConvertOptions::default() };
    let (a, _) = once(&file, &options);
    for max in [0, 1, 2, 7, 100, 1000] {
        let roots = Roots::scan_with_limit(&mut Reader::new(file.as_slice()).unwrap(), max);
        let mut out = Vec::new();
        let c = convert_with_roots(&mut Reader::new(file.as_slice()).unwrap(), roots, &options, &mut out)
            .unwrap();
        assert_eq!(decode(&out), a, "limit {max}");
        assert_eq!(c.stats.evicted_roots, 0);
    }
}

#[test]
fn a_tree_is_final_as_soon_as_its_root_closes() {
    let file = trace(50, false);
    let roots = Roots::scan(&mut Reader::new(file.as_slice()).unwrap());
    let mut reader = Reader::new(file.as_slice()).unwrap();
    let mut asm = Assembler::with_roots(reader.header(), AssembleOptions::default(), roots);
    let mut one = Assembler::new(reader.header(), AssembleOptions::default());
    let (mut out, mut held_back) = (Vec::new(), Vec::new());
    let mut most_waiting = 0;
    let mut frames_seen = 0u64;
    reader
        .for_each_event(|e| {
            asm.push(e);
            one.push(e);
            asm.drain(&mut out);
            one.drain(&mut held_back);
            if e.callsite.name.as_str() == "frame" {
                frames_seen += 1;
                // Every frame ended so far was written with its subtree (3 spans), and nothing else.
                let frames = out.iter().filter(|s| s.name == "frame").count() as u64;
                assert_eq!(frames, frames_seen);
                assert_eq!(out.len() as u64, 3 * frames_seen);
            }
            most_waiting = most_waiting.max(asm.stats().spans - out.len() as u64);
        })
        .unwrap();
    assert_eq!(frames_seen, 100);
    // One reading cannot know before the end that nothing encloses them.
    assert!(held_back.is_empty());
    assert!(most_waiting <= 3, "at most one frame's spans wait: {most_waiting}");
    asm.finish(&mut out);
    one.finish(&mut held_back);
    assert_eq!(out.len(), held_back.len());
}

#[test]
fn a_scope_enclosing_more_spans_than_one_reading_holds_stays_their_parent() {
    // `main` encloses 3 spans per frame: well past what one reading holds per thread.
    let frames = MAX_HELD_PER_THREAD as u64 / 3 + 1_000;
    let file = trace(frames, true);
    let options = ConvertOptions::default();
    let (a, ca) = once(&file, &options);
    assert!(ca.stats.evicted_roots > 0, "one reading cannot hold them all");
    let (b, cb) = twice(&file, &options);
    assert_eq!(cb.stats.evicted_roots, 0);
    assert_eq!(a.len(), b.len());
    assert_eq!(cb.spans, 2 * 3 * frames + 1);
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
    let (spans, c) = twice(&file, &ConvertOptions::default());
    assert_eq!(spans.len(), 1);
    let kept = spans[0].events.len() as u64;
    assert_eq!(kept, c.stats.span_events);
    assert_eq!(kept + c.stats.span_events_dropped, 120, "{:?}", c.stats);
    assert!(c.stats.span_events_dropped > 0);
    let bytes: usize = spans[0].events.iter().map(|e| e.name.len()).sum();
    assert!(bytes <= MAX_EVENT_BYTES, "{bytes}");
    assert!(spans[0].events.iter().all(|e| e.name.len() == 600_000));
}

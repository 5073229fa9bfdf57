//! Span semantics and sampling on recorded traces: `span.flags`, the caller's sampled flag, one
//! type per `u64` key, roots grouped into traces, head sampling on trace ids and the tail rules,
//! each counted. Every case goes through both encodings (spans straight to protobuf, and `Span`
//! messages) and checks that they agree.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use phosphor::{
    trace_async_begin, trace_async_end, trace_context, trace_log, trace_scope, BufferMode, ClockKind,
    TraceConfig, TraceLog, TraceLogConfig,
};
use phosphor_format::file::Reader;
use phosphor_otlp::assemble::{AssembleOptions, AssembleStats, Assembler, HAS_IS_REMOTE, IS_REMOTE};
use phosphor_otlp::convert::{convert, ConvertOptions};
use phosphor_otlp::ids::GroupRoots;
use phosphor_otlp::select::{Sampling, Selection, TailRules};
use phosphor_otlp::{ExportTraceServiceRequest, Span};
use prost::Message as _;

const SAMPLED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const UNSAMPLED: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

fn new_log() -> Arc<TraceLog> {
    let log = TraceLog::new(TraceLogConfig::new().clock(ClockKind::Monotonic)).expect("a log");
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).expect("a trace starts");
    log
}

fn saved(log: &TraceLog) -> Vec<u8> {
    log.stop();
    log.take_trace().expect("a stopped trace").write_to(Vec::new()).expect("the trace saves")
}

/// The spans of `file` under `options`, made both ways (they must agree), with the figures.
fn spans_of(file: &[u8], options: AssembleOptions) -> (Vec<Span>, AssembleStats) {
    let mut out = Vec::new();
    let c = convert(
        &mut Reader::new(file).unwrap(),
        &ConvertOptions { assemble: options.clone(), ..ConvertOptions::default() },
        &mut out,
    )
    .unwrap();
    let req = ExportTraceServiceRequest::decode(out.as_slice()).unwrap();
    let wire: Vec<Span> =
        req.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans).collect();
    let mut r = Reader::new(file).unwrap();
    let mut a = Assembler::new(r.header(), options);
    r.for_each_event(|e| a.push(e)).unwrap();
    let mut spans = Vec::new();
    a.finish(&mut spans);
    assert_eq!(wire, spans, "the protobuf encoding holds what the messages hold");
    assert_eq!(c.stats, a.stats());
    let s = a.stats();
    assert_eq!(
        s.spans,
        spans.len() as u64 + s.spans_unselected + s.spans_sampled_out + s.spans_tail_dropped,
        "every span made is written or counted once: {s:?}"
    );
    (spans, s)
}

fn by_name<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("span {name}"))
}

#[test]
fn flags_carry_the_trace_flags_and_whether_the_parent_is_remote() {
    let log = new_log();
    {
        trace_scope!(log: &log, "http", "request");
        trace_context!(log: &log, SAMPLED).unwrap();
        trace_scope!(log: &log, "db", "query");
    }
    {
        trace_scope!(log: &log, "app", "own");
        trace_scope!(log: &log, "app", "child");
    }
    let (spans, _) = spans_of(&saved(&log), AssembleOptions::default());
    // The caller's child: its parent is remote; the caller's flags (sampled).
    assert_eq!(by_name(&spans, "request").flags, HAS_IS_REMOTE | IS_REMOTE | 0x01);
    assert_eq!(by_name(&spans, "query").flags, HAS_IS_REMOTE | 0x01);
    // The program's own traces: sampled, parents local (a root has none: not remote either).
    assert_eq!(by_name(&spans, "own").flags, HAS_IS_REMOTE | 0x01);
    assert_eq!(by_name(&spans, "child").flags, HAS_IS_REMOTE | 0x01);
}

#[test]
fn an_unsampled_callers_spans_are_left_out_and_counted_unless_asked_for() {
    let log = new_log();
    {
        trace_scope!(log: &log, "http", "unsampled");
        trace_context!(log: &log, UNSAMPLED).unwrap();
        trace_scope!(log: &log, "db", "inside");
    }
    {
        trace_scope!(log: &log, "http", "sampled");
        trace_context!(log: &log, SAMPLED).unwrap();
    }
    let file = saved(&log);
    let (spans, stats) = spans_of(&file, AssembleOptions::default());
    let names: HashSet<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, HashSet::from(["sampled"]));
    assert_eq!(stats.spans_sampled_out, 2);
    let all = Selection {
        sampling: Sampling { export_unsampled_callers: true, ..Sampling::default() },
        ..Selection::default()
    };
    let (spans, stats) = spans_of(&file, AssembleOptions { selection: all, ..AssembleOptions::default() });
    assert_eq!(spans.len(), 3);
    assert_eq!(stats.spans_sampled_out, 0);
    // Exported as they are: "not sampled" in their flags.
    assert_eq!(by_name(&spans, "unsampled").flags, HAS_IS_REMOTE | IS_REMOTE);
    assert_eq!(by_name(&spans, "inside").flags, HAS_IS_REMOTE);
}

#[test]
fn a_u64_argument_is_an_int_whatever_its_value() {
    let log = new_log();
    for v in [5u64, u64::MAX, i64::MAX as u64 + 1] {
        trace_scope!(log: &log, "app", "n", "count" => v);
    }
    let (spans, _) = spans_of(&saved(&log), AssembleOptions::default());
    let values: Vec<Any> = spans
        .iter()
        .map(|s| {
            s.attributes.iter().find(|kv| kv.key == "count").unwrap().value.clone().unwrap().value.unwrap()
        })
        .collect();
    assert_eq!(values, [Any::IntValue(5), Any::IntValue(-1), Any::IntValue(i64::MIN)]);
    // The bits are kept: read back as u64.
    assert_eq!(-1i64 as u64, u64::MAX);
}

/// Roots on two threads, 40 each.
fn many_roots() -> Vec<u8> {
    let log = new_log();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for i in 0..40u64 {
                    trace_scope!(log: &log, "app", "frame", "i" => i);
                    trace_scope!(log: &log, "app", "work");
                }
            });
        }
    });
    saved(&log)
}

#[test]
fn roots_grouped_by_process_or_window_share_a_trace_and_their_children_follow() {
    let file = many_roots();
    let group = |g| spans_of(&file, AssembleOptions { group_roots: g, ..AssembleOptions::default() }).0;
    let traces = |spans: &[Span]| spans.iter().map(|s| s.trace_id.clone()).collect::<HashSet<_>>().len();
    let none = group(GroupRoots::None);
    assert_eq!(traces(&none), 80, "a trace per root");
    let process = group(GroupRoots::Process);
    assert_eq!(traces(&process), 1);
    // Same spans, ids and parents: only the trace ids differ.
    let strip = |spans: &[Span]| -> Vec<(Vec<u8>, Vec<u8>, u64)> {
        spans.iter().map(|s| (s.span_id.clone(), s.parent_span_id.clone(), s.start_time_unix_nano)).collect()
    };
    assert_eq!(strip(&none), strip(&process));
    // Windows: roots starting in one window share a trace, and no trace spans two windows.
    let w = 20_000;
    let windowed = group(GroupRoots::Window(w));
    let mut window_of: HashMap<Vec<u8>, u64> = HashMap::new();
    for s in windowed.iter().filter(|s| s.parent_span_id.is_empty()) {
        let win = s.start_time_unix_nano / w;
        assert_eq!(*window_of.entry(s.trace_id.clone()).or_insert(win), win);
    }
    let windows: HashSet<u64> = window_of.values().copied().collect();
    assert_eq!(window_of.len(), windows.len(), "one trace per window");
    let by_id: HashMap<&[u8], &Span> = windowed.iter().map(|s| (s.span_id.as_slice(), s)).collect();
    for s in windowed.iter().filter(|s| !s.parent_span_id.is_empty()) {
        assert_eq!(s.trace_id, by_id[s.parent_span_id.as_slice()].trace_id);
    }
}

#[test]
fn head_sampling_keeps_whole_trees_by_trace_id_the_same_every_time() {
    let file = many_roots();
    let at = |ratio| {
        let selection = Selection {
            sampling: Sampling { ratio: Some(ratio), ..Sampling::default() },
            ..Selection::default()
        };
        spans_of(&file, AssembleOptions { selection, ..AssembleOptions::default() })
    };
    let (all, _) = spans_of(&file, AssembleOptions::default());
    let (half, stats) = at(0.5);
    assert_eq!(half, at(0.5).0, "deterministic");
    assert!(stats.spans_sampled_out > 0 && !half.is_empty(), "{stats:?}");
    // Whole trees: every kept child's parent is kept, and each kept root's trace id is under the
    // ratio.
    let ids: HashSet<&[u8]> = half.iter().map(|s| s.span_id.as_slice()).collect();
    let sampling = Sampling { ratio: Some(0.5), ..Sampling::default() };
    for s in &half {
        if s.parent_span_id.is_empty() {
            assert!(sampling.keeps_trace(&s.trace_id.clone().try_into().unwrap()));
        } else {
            assert!(ids.contains(s.parent_span_id.as_slice()));
        }
    }
    let dropped_roots =
        all.iter().filter(|s| s.parent_span_id.is_empty() && !ids.contains(s.span_id.as_slice())).count();
    assert!(dropped_roots > 0);
    assert_eq!(at(0.0).0.len(), 0);
    assert_eq!(at(1.0).0, all);
}

#[test]
fn tail_rules_keep_slow_or_failing_trees_and_the_slowest_per_name_and_minute() {
    let log = new_log();
    for i in 0..30u64 {
        trace_scope!(log: &log, "app", "frame", "i" => i);
        if i == 7 {
            trace_scope!(log: &log, "app", "inner");
            trace_log!(log: &log, error, "app", "failed at {}", i);
        }
        if i == 11 {
            trace_scope!(log: &log, "app", "slow");
            std::thread::sleep(std::time::Duration::from_millis(30));
        }
        trace_scope!(log: &log, "app", "step");
    }
    for _ in 0..5 {
        trace_scope!(log: &log, "app", "other");
    }
    let file = saved(&log);
    let tail = |tail: TailRules| {
        let selection = Selection { tail, ..Selection::default() };
        spans_of(&file, AssembleOptions { selection, ..AssembleOptions::default() })
    };
    let frame_of = |spans: &[Span]| -> Vec<i64> {
        let mut v: Vec<i64> = spans
            .iter()
            .filter(|s| s.name == "frame")
            .map(|s| match s.attributes[0].value.as_ref().unwrap().value {
                Some(Any::IntValue(i)) => i,
                ref v => panic!("{v:?}"),
            })
            .collect();
        v.sort();
        v
    };
    let (errors, stats) = tail(TailRules { errors: true, ..TailRules::default() });
    assert_eq!(frame_of(&errors), [7]);
    assert_eq!(errors.len(), 3, "the whole tree: frame, inner, step");
    assert_eq!(stats.spans_tail_dropped, stats.spans - 3);
    let (slow, _) = tail(TailRules { slower_than_ns: Some(20_000_000), ..TailRules::default() });
    assert_eq!(frame_of(&slow), [11]);
    let (both, _) =
        tail(TailRules { slower_than_ns: Some(20_000_000), errors: true, ..TailRules::default() });
    assert_eq!(frame_of(&both), [7, 11]);
    // The slowest N per root name and minute (a run of 40 ms rarely spans two minutes of the
    // wall clock, but may): frame 11 (slow) is always among them.
    let (all, _) = spans_of(&file, AssembleOptions::default());
    let places = |name: &str, n: usize, skip: Option<i64>| -> usize {
        let mut per_minute: HashMap<u64, usize> = HashMap::new();
        for s in all.iter().filter(|s| s.name == name) {
            if skip.is_some() && frame_of(std::slice::from_ref(s)).first().copied() == skip {
                continue;
            }
            *per_minute.entry(s.start_time_unix_nano / 60_000_000_000).or_default() += 1;
        }
        per_minute.values().map(|&c| c.min(n)).sum()
    };
    let (ranked, _) = tail(TailRules { slowest_per_minute: Some(2), ..TailRules::default() });
    assert_eq!(ranked.iter().filter(|s| s.name == "other").count(), places("other", 2, None));
    let frames = frame_of(&ranked);
    assert_eq!(frames.len(), places("frame", 2, None));
    assert!(frames.contains(&11));
    // Kept outright by a rule (7), the others ranked (11 the slowest of them).
    let (mixed, _) = tail(TailRules { errors: true, slowest_per_minute: Some(1), ..TailRules::default() });
    let frames = frame_of(&mixed);
    assert!(frames.contains(&7) && frames.contains(&11), "{frames:?}");
    assert_eq!(frames.len(), 1 + places("frame", 1, Some(7)));
}

#[test]
fn the_callers_tracestate_is_carried_by_the_spans_of_its_trace() {
    let log = new_log();
    let state = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";
    {
        trace_scope!(log: &log, "http", "request");
        trace_context!(log: &log, SAMPLED, tracestate: state).unwrap();
        trace_scope!(log: &log, "db", "query");
    }
    {
        trace_scope!(log: &log, "app", "own");
    }
    {
        // Past the W3C limit: not recorded, the context still is.
        trace_scope!(log: &log, "http", "long");
        trace_context!(log: &log, SAMPLED, tracestate: &"k=v,".repeat(200)).unwrap();
    }
    {
        // A bad header records neither.
        trace_scope!(log: &log, "http", "bad");
        assert!(trace_context!(log: &log, "00-zz", tracestate: state).is_err());
    }
    trace_async_begin!(log: &log, "rpc", "call", 9);
    trace_context!(log: &log, SAMPLED, tracestate: "a=1", async_id: 9).unwrap();
    trace_async_end!(log: &log, "rpc", "call", 9);
    let (spans, _) = spans_of(&saved(&log), AssembleOptions::default());
    assert_eq!(by_name(&spans, "request").trace_state, state);
    assert_eq!(by_name(&spans, "query").trace_state, state, "its subtree is in the caller's trace");
    assert_eq!(by_name(&spans, "own").trace_state, "");
    let long = by_name(&spans, "long");
    assert_eq!(long.trace_state, "");
    assert_eq!(long.flags, HAS_IS_REMOTE | IS_REMOTE | 0x01, "the context applied");
    assert_eq!(by_name(&spans, "bad").trace_state, "");
    assert_eq!(by_name(&spans, "bad").flags & IS_REMOTE, 0);
    assert_eq!(by_name(&spans, "call").trace_state, "a=1");
}

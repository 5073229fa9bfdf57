//! A receiver's view of `convert`: the output decoded with the official messages, its ids, parents
//! and times checked, and checked against `phosphor stats` of the same file.

use std::collections::{HashMap, HashSet};

use phosphor::{trace_log, trace_scope, BufferMode, ClockKind, TraceConfig, TraceLog, TraceLogConfig};
use phosphor_export::{EventType, TraceStats};
use phosphor_format::file::Reader;
use phosphor_otlp::convert::{convert, ConvertOptions, Converted, Encoding};
use phosphor_otlp::request::span_paths;
use phosphor_otlp::select::Selection;
use phosphor_otlp::{ExportTraceServiceRequest, Span};
use prost::Message as _;

/// A trace of two threads of nested scopes, with logs inside them.
fn trace_file() -> Vec<u8> {
    trace_of(50)
}

/// [`trace_file`] with `frames` frames per thread.
fn trace_of(frames: u64) -> Vec<u8> {
    let log = TraceLog::new(TraceLogConfig::new().clock(ClockKind::Monotonic)).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 22)).unwrap();
    let work = |log: &TraceLog, seed: u64| {
        for i in 0..frames {
            trace_scope!(log: log, "app", "frame", "i" => i);
            for j in 0..(i + seed) % 4 {
                trace_scope!(log: log, "app", "update");
                {
                    trace_scope!(log: log, "app", "physics", "ok" => true);
                    trace_log!(log: log, info, "app", "step {} of {}", j, i);
                }
            }
            trace_scope!(log: log, "app", "render", "x" => 1.5f64);
        }
    };
    std::thread::scope(|s| {
        s.spawn(|| work(&log, 1));
        work(&log, 2);
    });
    log.stop();
    log.take_trace().unwrap().write_to(Vec::new()).unwrap()
}

fn run(file: &[u8], options: &ConvertOptions) -> (Vec<u8>, Converted) {
    let mut reader = Reader::new(file).unwrap();
    let mut out = Vec::new();
    let c = convert(&mut reader, options, &mut out).unwrap();
    (out, c)
}

fn spans(pb: &[u8]) -> Vec<Span> {
    let req = ExportTraceServiceRequest::decode(pb).unwrap();
    req.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans).collect()
}

#[test]
fn spans_have_unique_ids_and_parents_that_contain_them_and_match_the_statistics() {
    let file = trace_file();
    let (pb, c) = run(&file, &ConvertOptions::default());
    let spans = spans(&pb);
    assert_eq!(spans.len() as u64, c.spans);
    assert_eq!(c.stats.spans, c.spans);
    assert!(c.damage.is_none());
    let ids: HashSet<&[u8]> = spans.iter().map(|s| s.span_id.as_slice()).collect();
    assert_eq!(ids.len(), spans.len(), "span ids are unique");
    let by_id: HashMap<&[u8], &Span> = spans.iter().map(|s| (s.span_id.as_slice(), s)).collect();
    let mut children = 0;
    for s in &spans {
        assert_eq!(s.span_id.len(), 8);
        assert_eq!(s.trace_id.len(), 16);
        assert!(s.span_id.iter().any(|&b| b != 0) && s.trace_id.iter().any(|&b| b != 0));
        assert!(s.start_time_unix_nano <= s.end_time_unix_nano);
        // Wall-clock: after 2020.
        assert!(s.start_time_unix_nano > 1_577_836_800_000_000_000);
        if !s.parent_span_id.is_empty() {
            children += 1;
            let p = by_id[s.parent_span_id.as_slice()];
            assert_eq!(p.trace_id, s.trace_id);
            assert!(p.start_time_unix_nano <= s.start_time_unix_nano);
            assert!(p.end_time_unix_nano >= s.end_time_unix_nano);
        }
    }
    assert!(children > 0);
    // Every log is a span event of a `physics` span that contains it.
    let events: usize = spans.iter().map(|s| s.events.len()).sum();
    assert_eq!(events as u64, c.stats.span_events);
    for s in spans.iter().filter(|s| !s.events.is_empty()) {
        assert_eq!(s.name, "physics");
        for e in &s.events {
            assert!(e.name.starts_with("step "), "{}", e.name);
            assert!((s.start_time_unix_nano..=s.end_time_unix_nano).contains(&e.time_unix_nano));
        }
    }
    // Per path: the count and the total duration of `phosphor stats`, to the ns.
    let mut ours: HashMap<String, (u64, u64)> = HashMap::new();
    for (s, path) in spans.iter().zip(span_paths(&spans)) {
        let e = ours.entry(path).or_default();
        e.0 += 1;
        e.1 += s.end_time_unix_nano - s.start_time_unix_nano;
    }
    let stats = TraceStats::from_reader(Reader::new(file.as_slice()).unwrap()).unwrap();
    let mut theirs: HashMap<String, (u64, u64)> = HashMap::new();
    for k in stats.paths().iter().filter(|k| k.event_type == EventType::Scope) {
        let total = k.durations.as_ref().map_or(0, |d| d.total_ns);
        theirs.insert(k.path_string(), (k.count, total));
    }
    assert_eq!(ours, theirs);
    let logs: u64 = stats.paths().iter().filter(|k| k.event_type == EventType::Log).map(|k| k.count).sum();
    assert_eq!(events as u64, logs);
}

#[test]
fn two_conversions_give_the_same_bytes_and_json_lines_hold_the_same_spans() {
    let file = trace_file();
    let (a, _) = run(&file, &ConvertOptions::default());
    let (b, _) = run(&file, &ConvertOptions::default());
    assert_eq!(a, b);
    let json = ConvertOptions { encoding: Encoding::Json, max_spans: 100, ..ConvertOptions::default() };
    let (lines, c) = run(&file, &json);
    let text = String::from_utf8(lines).unwrap();
    let mut from_json = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let span = &v["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        // OTLP JSON: ids as lowercase hex, enums as integers, 64-bit integers as strings.
        let trace_id = span["traceId"].as_str().unwrap();
        assert!(
            trace_id.len() == 32
                && trace_id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        assert_eq!(span["spanId"].as_str().unwrap().len(), 16);
        assert_eq!(span["kind"], 1);
        assert!(span["startTimeUnixNano"].as_str().unwrap().parse::<u64>().is_ok());
        let req: ExportTraceServiceRequest = serde_json::from_str(line).unwrap();
        let n: Vec<Span> =
            req.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans).collect();
        assert!(n.len() <= 100);
        from_json.extend(n);
    }
    assert_eq!(c.batches as usize, text.lines().count());
    assert_eq!(from_json, spans(&a));
}

#[test]
fn selection_keeps_matching_spans_reparented_to_kept_ancestors_and_counts_the_rest() {
    let file = trace_file();
    let (all, _) = run(&file, &ConvertOptions::default());
    let all = spans(&all);
    let mut options = ConvertOptions::default();
    options.assemble.selection =
        Selection { paths: vec!["frame".into(), "*/physics".into()], ..Selection::default() };
    let (pb, c) = run(&file, &options);
    let kept = spans(&pb);
    let physics = all.iter().filter(|s| s.name == "physics").count();
    let frames = all.iter().filter(|s| s.name == "frame").count();
    assert_eq!(kept.len(), physics + frames);
    assert_eq!(c.stats.spans_unselected as usize, all.len() - kept.len());
    let by_id: HashMap<&[u8], &Span> = kept.iter().map(|s| (s.span_id.as_slice(), s)).collect();
    for s in kept.iter().filter(|s| s.name == "physics") {
        assert_eq!(by_id[s.parent_span_id.as_slice()].name, "frame", "re-parented past `update`");
    }
    let mut slowest = ConvertOptions::default();
    slowest.assemble.selection =
        Selection { slowest_roots: Some(3), roots_only: true, ..Selection::default() };
    let (pb, _) = run(&file, &slowest);
    let top = spans(&pb);
    assert_eq!(top.len(), 3);
    let mut roots: Vec<u64> = all
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .map(|s| s.end_time_unix_nano - s.start_time_unix_nano)
        .collect();
    roots.sort_unstable();
    let mut got: Vec<u64> = top.iter().map(|s| s.end_time_unix_nano - s.start_time_unix_nano).collect();
    got.sort_unstable();
    assert_eq!(got, roots[roots.len() - 3..]);
}

#[test]
fn a_truncated_file_gives_the_spans_before_the_damage_and_its_offset() {
    // Many chunks: a cut leaves some whole.
    let file = trace_of(5_000);
    let (whole, _) = run(&file, &ConvertOptions::default());
    let cut = &file[..file.len() * 2 / 3];
    let (pb, c) = run(cut, &ConvertOptions::default());
    let damage = c.damage.expect("the cut is damage");
    assert!(damage.offset() <= cut.len() as u64, "{damage}");
    let got = spans(&pb);
    assert!(!got.is_empty() && got.len() < spans(&whole).len());
}

#[test]
fn live_draining_gives_every_span_once_and_a_long_hold_gives_what_a_file_gives() {
    use phosphor_otlp::assemble::{AssembleOptions, Assembler};
    let file = trace_file();
    let (pb, _) = run(&file, &ConvertOptions::default());
    let whole = spans(&pb);
    let live = |hold: u64| {
        let mut reader = Reader::new(file.as_slice()).unwrap();
        let options = AssembleOptions { hold_ns: Some(hold), ..AssembleOptions::default() };
        let mut asm = Assembler::new(reader.header(), options);
        let (mut out, mut before_finish) = (Vec::new(), 0);
        reader
            .for_each_event(|e| {
                asm.push(e);
                asm.drain(&mut out);
            })
            .unwrap();
        before_finish += out.len();
        asm.finish(&mut out);
        (out, before_finish)
    };
    let (all, early) = live(u64::MAX);
    assert_eq!(early, 0);
    let key = |s: &Span| (s.start_time_unix_nano, s.span_id.clone());
    let (mut a, mut b) = (all.clone(), whole.clone());
    a.sort_by_key(key);
    b.sort_by_key(key);
    assert_eq!(a, b);
    let (quick, early) = live(0);
    assert!(early > 0, "a zero hold drains as it goes");
    assert_eq!(quick.len(), whole.len());
    let ids: HashSet<&[u8]> = quick.iter().map(|s| s.span_id.as_slice()).collect();
    assert_eq!(ids.len(), quick.len());
}

//! OTLP spans against `phosphor stats` on crafted files: random trees of scopes, begin/end pairs,
//! lock waits and holds, on several threads, on a clock so coarse that parents and children often
//! start or end in the same tick. Per scope path, the count and the total duration of the spans
//! (each span's path through its parents) are those of the statistics; lock spans are named
//! `NAME (wait)` / `NAME (held)`.

use std::collections::HashMap;

use phosphor_craft::{callsite, monotonic, records, ChunkStream, Rng, TraceWriter};
use phosphor_export::TraceStats;
use phosphor_format::file::{Reader, Trailer};
use phosphor_format::{Phase, Record};
use phosphor_otlp::convert::{convert, ConvertOptions};
use phosphor_otlp::request::span_paths;
use phosphor_otlp::{ExportTraceServiceRequest, Span};
use prost::Message as _;

const ID: u32 = phosphor_format::FIRST_CALLSITE_ID;
/// The callsites: scopes `a`, `b`, `c` (complete), `open`/`close` (a begin and its end),
/// `queue.wait` and `queue.held` (a lock), `mark` (an instant).
const NAMES: [&str; 8] = ["a", "b", "c", "open", "close", "queue.wait", "queue.held", "mark"];
const PHASES: [Phase; 8] = [
    Phase::Complete,
    Phase::Complete,
    Phase::Complete,
    Phase::Begin,
    Phase::End,
    Phase::LockWait,
    Phase::LockHeld,
    Phase::Instant,
];

/// The events of a random slice in `[start, end]` and what is nested in it, in the order a
/// thread records them: a complete or lock event after its children, a begin before and its end
/// after. Times are in steps of 10 ticks inside a slice, so ties are common.
fn slice(rng: &mut Rng, start: u64, end: u64, depth: u32, out: &mut Vec<Vec<Record>>) {
    let kind = rng.below(5);
    if kind == 3 {
        out.push(records::begin(start, ID + 3).to_vec());
    }
    if depth < 5 && end > start {
        let mut at = start;
        for _ in 0..rng.below(4) {
            // A child from `at` (often the parent's start), to at most the parent's end.
            let s = at + 10 * rng.below(2);
            if s > end {
                break;
            }
            let e = (s + 10 * rng.below(4)).min(end);
            if rng.below(6) == 0 {
                out.push(records::instant(s, ID + 7).to_vec());
            }
            slice(rng, s, e, depth + 1, out);
            at = e;
        }
    }
    let dur = end - start;
    match kind {
        3 => out.push(records::end(end, ID + 4).to_vec()),
        4 => out.push(records::complete(start, ID + 5 + (rng.below(2) as u32), dur).to_vec()),
        k => out.push(records::complete(start, ID + k as u32, dur).to_vec()),
    }
}

/// A crafted file of `threads` threads, each a run of random top-level slices.
fn crafted(seed: u64, threads: u32) -> Vec<u8> {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut w = TraceWriter::new(Vec::new(), monotonic(), "agree").unwrap();
    // Strings 0 to 2 are the category, the empty string and the file, as `callsite` wants.
    w.strings(&["craft", "", "agree.rs"]).unwrap();
    let names = w.strings(&NAMES).unwrap();
    w.callsites((0..NAMES.len() as u32).map(|i| callsite(ID + i, PHASES[i as usize], names + i))).unwrap();
    for tid in 1..=threads {
        let mut stream = ChunkStream::new(tid);
        let mut events = Vec::new();
        let mut at = 1_000;
        for _ in 0..40 {
            let len = 10 * rng.below(12);
            slice(&mut rng, at, at + len, 0, &mut events);
            at += len + 10 * rng.below(2);
        }
        for e in &events {
            stream.push(&mut w, e).unwrap();
        }
        stream.flush(&mut w).unwrap();
    }
    w.finish(Trailer::default()).unwrap()
}

fn spans_of(file: &[u8]) -> Vec<Span> {
    let mut out = Vec::new();
    let c = convert(&mut Reader::new(file).unwrap(), &ConvertOptions::default(), &mut out).unwrap();
    assert_eq!(c.stats.evicted_roots + c.stats.unmatched_ends + c.stats.unclosed, 0, "{:?}", c.stats);
    let req = ExportTraceServiceRequest::decode(out.as_slice()).unwrap();
    // Spans are encoded straight to protobuf: the bytes are what prost encodes for the request.
    assert_eq!(req.encode_to_vec(), out);
    req.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans).collect()
}

/// Per path through the parents: the spans' count and total duration.
fn by_path(spans: &[Span]) -> HashMap<String, (u64, u64)> {
    let mut out: HashMap<String, (u64, u64)> = HashMap::new();
    for (s, path) in spans.iter().zip(span_paths(spans)) {
        let e = out.entry(path).or_default();
        e.0 += 1;
        e.1 += s.end_time_unix_nano - s.start_time_unix_nano;
    }
    out
}

/// A statistics path with its lock names as every output shows them: `queue (held)`. (The
/// statistics show the lock callsite's own name, `queue.held`, until they follow
/// `phosphor_model::names` too; a name already shown so is left as it is.)
fn shown(path: &str) -> String {
    let segment = |s: &str| match (s.strip_suffix(".wait"), s.strip_suffix(".held")) {
        (Some(base), _) => format!("{base} (wait)"),
        (_, Some(base)) => format!("{base} (held)"),
        _ => s.to_owned(),
    };
    path.split('/').map(segment).collect::<Vec<_>>().join("/")
}

fn stats_by_path(file: &[u8]) -> HashMap<String, (u64, u64)> {
    let stats = TraceStats::from_reader(Reader::new(file).unwrap()).unwrap();
    let mut out = HashMap::new();
    for k in stats.paths().iter().filter(|k| k.event_type.has_duration()) {
        let total = k.durations.as_ref().map_or(0, |d| d.total_ns);
        let e: &mut (u64, u64) = out.entry(shown(&k.path_string())).or_default();
        e.0 += k.count;
        e.1 += total;
    }
    out
}

#[test]
fn spans_agree_with_the_statistics_on_crafted_files_full_of_equal_timestamps() {
    let mut locks = 0;
    for seed in 0..40 {
        let file = crafted(seed, 1 + (seed % 3) as u32);
        let spans = spans_of(&file);
        locks += spans.iter().filter(|s| s.name == "queue (held)" || s.name == "queue (wait)").count();
        assert!(spans.iter().all(|s| !s.name.contains('.')), "lock names as shown (seed {seed})");
        let ours = by_path(&spans);
        let theirs = stats_by_path(&file);
        assert_eq!(ours, theirs, "seed {seed}");
    }
    assert!(locks > 0, "the files hold lock slices");
}

#[test]
fn a_parent_starting_in_its_childs_tick_is_its_parent() {
    // child [10, 20] then parent [10, 30] (recorded at its end), then an equal pair [40, 50]: the
    // first recorded is nested in the second.
    let mut w = TraceWriter::new(Vec::new(), monotonic(), "ties").unwrap();
    w.strings(&["craft", "", "agree.rs"]).unwrap();
    let names = w.strings(&NAMES).unwrap();
    w.callsites((0..NAMES.len() as u32).map(|i| callsite(ID + i, PHASES[i as usize], names + i))).unwrap();
    let mut stream = ChunkStream::new(1);
    for e in [
        records::complete(10, ID + 1, 10),
        records::complete(10, ID, 20),
        records::complete(40, ID + 2, 10),
        records::complete(40, ID + 6, 10),
    ] {
        stream.push(&mut w, &e).unwrap();
    }
    stream.flush(&mut w).unwrap();
    let file = w.finish(Trailer::default()).unwrap();
    let mut paths: Vec<String> = by_path(&spans_of(&file)).into_keys().collect();
    paths.sort();
    assert_eq!(paths, ["a", "a/b", "queue (held)", "queue (held)/c"]);
}

//! `phosphor convert --to otlp` against `phosphor stats --json` of the same file, per scope path
//! (count and total duration), on the demo (locks included) and on a crafted file whose parents
//! and children start and end in the same ticks. Lock spans are named `NAME (wait)` /
//! `NAME (held)`, as every output names them.

use std::collections::HashMap;
use std::path::Path;

use phosphor::format::file::Trailer;
use phosphor::format::Phase;
use phosphor_craft::{callsite, monotonic, records, ChunkStream, TraceWriter};
use phosphor_otlp::request::span_paths;
use phosphor_otlp::Span;

use crate::cli::{phosphor, scratch, stderr, stdout};

/// Per path through the parents (async slices left out): the spans' count and total duration.
fn otlp_paths(test: &str, input: &Path) -> HashMap<String, (u64, u64)> {
    let pb = input.with_extension("pb");
    let out =
        phosphor(test, &["convert", input.to_str().unwrap(), "--to", "otlp", "-o", pb.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let req = phosphor_otlp::request::from_protobuf(&std::fs::read(&pb).unwrap()).unwrap();
    let spans: Vec<Span> =
        req.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans).collect();
    let mut out: HashMap<String, (u64, u64)> = HashMap::new();
    for (s, path) in spans.iter().zip(span_paths(&spans)) {
        if s.attributes.iter().any(|a| a.key == "phosphor.async_id") {
            continue;
        }
        let e = out.entry(path).or_default();
        e.0 += 1;
        e.1 += s.end_time_unix_nano - s.start_time_unix_nano;
    }
    out
}

/// A name of `phosphor stats` as every output shows it: a lock callsite's `queue.held` is
/// `queue (held)` (the statistics still show the callsite's own name; one shown so already is
/// left as it is).
fn shown(name: &str) -> String {
    match (name.strip_suffix(".wait"), name.strip_suffix(".held")) {
        (Some(base), _) => format!("{base} (wait)"),
        (_, Some(base)) => format!("{base} (held)"),
        _ => name.to_owned(),
    }
}

/// `phosphor stats --json`'s scope and lock paths, summed over threads.
fn stats_paths(test: &str, input: &Path) -> HashMap<String, (u64, u64)> {
    let out = phosphor(test, &["stats", "--json", input.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stats: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let mut paths: HashMap<String, (u64, u64)> = HashMap::new();
    for p in stats["paths"].as_array().unwrap() {
        if !matches!(p["type"].as_str().unwrap(), "scope" | "lock_wait" | "lock_held") {
            continue;
        }
        let names: Vec<String> =
            p["path"].as_array().unwrap().iter().map(|n| shown(n.as_str().unwrap())).collect();
        let e = paths.entry(names.join("/")).or_default();
        e.0 += p["count"].as_u64().unwrap();
        e.1 += p["durations"]["total_ns"].as_u64().unwrap();
    }
    paths
}

#[test]
fn otlp_spans_agree_with_the_statistics_on_the_demo_with_its_locks() {
    let dir = scratch("otlp-agree-demo-files");
    let out = phosphor(
        "otlp-agree-demo",
        &["demo", "--threads", "2", "--events", "5000", "--out", dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let input = dir.join("trace.phos");
    let ours = otlp_paths("otlp-agree-demo", &input);
    assert!(ours.keys().any(|p| p.ends_with("queue (held)")), "{:?}", ours.keys());
    assert!(!ours.keys().any(|p| p.contains(".held") || p.contains(".wait")));
    agree(&ours, &stats_paths("otlp-agree-demo", &input));
}

/// The same paths and counts; each total the statistics' to within a nanosecond per span (the
/// demo's clock counts TSC ticks: a span's length is its ticks in whole ns, the statistics sum
/// the ticks first).
fn agree(ours: &HashMap<String, (u64, u64)>, theirs: &HashMap<String, (u64, u64)>) {
    let mut a: Vec<_> = ours.iter().map(|(p, (n, _))| (p, n)).collect();
    let mut b: Vec<_> = theirs.iter().map(|(p, (n, _))| (p, n)).collect();
    a.sort();
    b.sort();
    assert_eq!(a, b);
    for (path, &(n, total)) in ours {
        let theirs = theirs[path].1;
        assert!(total <= theirs && theirs - total <= n, "{path}: {total} ns, the statistics {theirs} ns");
    }
}

#[test]
fn otlp_spans_agree_with_the_statistics_when_parents_and_children_share_ticks() {
    const ID: u32 = phosphor::format::FIRST_CALLSITE_ID;
    let names = ["frame", "update", "open", "close", "queue.wait", "queue.held"];
    let phases =
        [Phase::Complete, Phase::Complete, Phase::Begin, Phase::End, Phase::LockWait, Phase::LockHeld];
    let mut w = TraceWriter::new(Vec::new(), monotonic(), "ties").unwrap();
    // Strings 0 to 2 are the category, the empty string and the file, as `callsite` wants.
    w.strings(&["craft", "", "otlp_agree.rs"]).unwrap();
    let first = w.strings(&names).unwrap();
    w.callsites((0..names.len() as u32).map(|i| callsite(ID + i, phases[i as usize], first + i))).unwrap();
    for tid in [1, 2] {
        let mut stream = ChunkStream::new(tid);
        for k in 0..50u64 {
            let t = 1_000 + 100 * k;
            // open@t { update [t, t+10], queue.wait [t+10, t+10], queue.held [t+10, t+30] } close
            // @t+30, all inside frame [t, t+30] recorded last: three slices start at t and two
            // end at t+30.
            for e in [
                records::begin(t, ID + 2),
                records::complete(t, ID + 1, 10),
                records::complete(t + 10, ID + 4, 0),
                records::complete(t + 10, ID + 5, 20),
                records::end(t + 30, ID + 3),
                records::complete(t, ID, 30),
            ] {
                stream.push(&mut w, &e).unwrap();
            }
        }
        stream.flush(&mut w).unwrap();
    }
    let bytes = w.finish(Trailer::default()).unwrap();
    let input = scratch("otlp-agree-ties-files").join("ties.phos");
    std::fs::write(&input, bytes).unwrap();
    let ours = otlp_paths("otlp-agree-ties", &input);
    assert_eq!(ours["frame/open/queue (held)"].0, 100, "{ours:?}");
    assert_eq!(ours, stats_paths("otlp-agree-ties", &input));
}

//! `phosphor convert --to otlp|otlp-json` on hostile input, as a user runs it: damaged trace
//! files, files that are no traces, and valid files of the shapes that cost most. Never a panic;
//! damage is an error naming the file and the byte offset (exit status 2) after every span made
//! before it, which decodes and is counted in the summary; valid shapes convert whole.

use std::path::{Path, PathBuf};

use phosphor_craft::{Backwards, Shape};
use phosphor_otlp::{ExportTraceServiceRequest, Span};

use crate::cli::{phosphor, scratch, stderr};

fn spans_in(pb: &Path) -> Vec<Span> {
    let req: ExportTraceServiceRequest =
        phosphor_otlp::request::from_protobuf(&std::fs::read(pb).unwrap()).unwrap();
    req.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans).collect()
}

fn json_spans_in(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<ExportTraceServiceRequest>(l).expect("each line is a request"))
        .flat_map(|r| r.resource_spans)
        .flat_map(|r| r.scope_spans)
        .map(|s| s.spans.len())
        .sum()
}

/// The "N spans written" of the summary line about `file`.
fn written(err: &str, file: &str) -> u64 {
    let line =
        err.lines().find(|l| l.starts_with(file) && l.contains("spans written")).unwrap_or_else(|| {
            panic!("no summary for {file} in {err}");
        });
    let n = line[file.len() + 2..].split(' ').next().unwrap();
    n.replace(',', "").parse().unwrap()
}

/// Converts `input` both ways into `dir`; returns (exit codes, stderr of each, spans decoded).
fn convert_both(test: &str, input: &Path) -> Vec<(Option<i32>, String, u64)> {
    let mut results = Vec::new();
    for (to, ext) in [("otlp", "pb"), ("otlp-json", "jsonl")] {
        let out_path = input.with_extension(ext);
        let _ = std::fs::remove_file(&out_path);
        let out = phosphor(
            test,
            &["convert", input.to_str().unwrap(), "--to", to, "-o", out_path.to_str().unwrap()],
        );
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{err}");
        let spans = if out_path.exists() {
            if to == "otlp" {
                spans_in(&out_path).len() as u64
            } else {
                json_spans_in(&out_path) as u64
            }
        } else {
            0
        };
        results.push((out.status.code(), err, spans));
    }
    results
}

fn demo_file(test: &str) -> PathBuf {
    let dir = scratch(&format!("{test}-files"));
    let out = phosphor(
        &format!("{test}-demo"),
        &[
            "demo",
            "--threads",
            "2",
            "--events",
            "4000",
            "--compression",
            "none",
            "--out",
            dir.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    dir.join("trace.phos")
}

#[test]
fn damaged_bytes_give_the_spans_before_them_and_an_error_with_file_and_offset() {
    let input = demo_file("otlp-flip");
    let mut bytes = std::fs::read(&input).unwrap();
    // Past the header: a byte in every 997 flipped, so that some land on records' structure.
    let from = bytes.len() / 8;
    for b in bytes[from..].iter_mut().step_by(997) {
        *b ^= 0xa5;
    }
    let damaged = input.with_file_name("flipped.phos");
    std::fs::write(&damaged, &bytes).unwrap();
    for (code, err, spans) in convert_both("otlp-flip", &damaged) {
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("flipped.phos") && err.contains("byte"), "{err}");
        assert_eq!(spans, written(&err, damaged.to_str().unwrap()), "{err}");
        assert!(spans > 0, "the spans before the damage are kept: {err}");
    }
}

#[test]
fn files_that_are_no_traces_are_refused_and_leave_no_output() {
    let dir = scratch("otlp-not-traces-files");
    let mut noise = Vec::new();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..100_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        noise.push(x as u8);
    }
    let inputs: [(&str, &[u8]); 3] =
        [("noise.phos", &noise), ("empty.phos", b""), ("trace.json", br#"{"traceEvents": []}"#)];
    for (name, bytes) in inputs {
        let input = dir.join(name);
        std::fs::write(&input, bytes).unwrap();
        for (code, err, spans) in convert_both("otlp-not-traces", &input) {
            assert_eq!(code, Some(2), "{name}: {err}");
            assert!(err.contains(name), "{name}: {err}");
            assert_eq!(spans, 0);
        }
        assert!(!input.with_extension("pb").exists(), "{name}: no output for an input that is no trace");
    }
}

#[test]
fn hostile_valid_shapes_convert_whole() {
    let dir = scratch("otlp-shapes-files");
    let shapes = [
        ("nested", Shape::NestedScopes { depth: 100_000 }),
        ("unclosed", Shape::UnclosedBegins { depth: 100_000 }),
        ("backwards", Shape::BackwardTimestamps { events: 50_000, order: Backwards::Alternating }),
        ("nan-clock", Shape::ClockRate { ns_per_tick: f64::NAN }),
        ("bomb", Shape::LogWidthBomb { repeats: 512, events: 64 }),
        ("deep-names", Shape::DeepLongNames { depth: 2_000, name_bytes: 1_000 }),
    ];
    for (name, shape) in shapes {
        let input = dir.join(format!("{name}.phos"));
        std::fs::write(&input, shape.write(Vec::new()).unwrap()).unwrap();
        let results = convert_both("otlp-shapes", &input);
        for (code, err, spans) in &results {
            assert_eq!(*code, Some(0), "{name}: {err}");
            assert_eq!(*spans, written(err, input.to_str().unwrap()), "{name}: {err}");
        }
        assert_eq!(results[0].2, results[1].2, "{name}: protobuf and JSON hold the same spans");
        if name == "nested" {
            // The trace model follows begin/end nesting at any depth: every scope is a span; past
            // its pending limit, the oldest are final early (roots), and counted.
            assert!(results[0].1.contains("before their parent was known"), "{}", results[0].1);
            assert_eq!(results[0].2, 100_000);
        }
    }
}

#[test]
fn a_path_glob_on_scopes_nested_deep_with_long_names_stays_linear() {
    use phosphor_otlp::assemble::MAX_PATH_BYTES;
    // 1,000 nested scopes of 4,000-byte names: the innermost path is 4 MB, all of them 2 GB.
    let dir = scratch("otlp-deep-path-files");
    let input = dir.join("deep.phos");
    let (depth, name) = (1_000u64, 4_000usize);
    let shape = Shape::DeepLongNames { depth: depth as u32, name_bytes: name };
    std::fs::write(&input, shape.write(Vec::new()).unwrap()).unwrap();
    let pb = dir.join("deep.pb");
    let out = phosphor(
        "otlp-deep-path",
        &["convert", input.to_str().unwrap(), "--to", "otlp", "--path", "*", "-o", pb.to_str().unwrap()],
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    // Paths up to MAX_PATH_BYTES are matched (the scope at depth k has a path of k names and
    // k - 1 slashes); the deeper ones match no glob.
    let matched = (MAX_PATH_BYTES as u64 + 1) / (name as u64 + 1);
    let spans = spans_in(&pb);
    assert_eq!(spans.len() as u64, matched, "{err}");
    assert_eq!(written(&err, input.to_str().unwrap()), matched);
    assert!(err.contains(&format!("{} left out by the selection", depth - matched)), "{err}");
}

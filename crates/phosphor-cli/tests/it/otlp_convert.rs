//! `phosphor convert --to otlp|otlp-json` on a demo trace: decoded as a receiver would, checked
//! against `phosphor stats --json` of the same file; selection flags; a cut file.

use std::collections::HashMap;
use std::path::PathBuf;

use phosphor_otlp::{ExportTraceServiceRequest, Span};

use crate::cli::{phosphor, scratch, stderr, stdout};

fn demo(test: &str) -> PathBuf {
    demo_with(test, &[])
}

/// [`demo`] with `extra` arguments.
fn demo_with(test: &str, extra: &[&str]) -> PathBuf {
    let dir = scratch(&format!("{test}-files"));
    let out = phosphor(
        &format!("{test}-demo"),
        &[&["demo", "--threads", "2", "--events", "5000", "--out", dir.to_str().unwrap()], extra].concat(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    dir.join("trace.phos")
}

fn spans_of(req: ExportTraceServiceRequest) -> Vec<Span> {
    req.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans).collect()
}

#[test]
fn otlp_protobuf_decodes_with_the_official_messages_and_json_lines_hold_the_same_spans() {
    let input = demo("otlp-pb");
    let pb = input.with_extension("pb");
    let out = phosphor(
        "otlp-pb",
        &["convert", input.to_str().unwrap(), "--to", "otlp", "-o", pb.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let req = phosphor_otlp::request::from_protobuf(&std::fs::read(&pb).unwrap()).unwrap();
    let res = req.resource_spans[0].resource.clone().unwrap();
    let keys: Vec<&str> = res.attributes.iter().map(|a| a.key.as_str()).collect();
    assert!(keys.contains(&"service.name") && keys.contains(&"process.pid"), "{keys:?}");
    let spans = spans_of(req);
    assert!(!spans.is_empty());
    let ids: std::collections::HashSet<&[u8]> = spans.iter().map(|s| s.span_id.as_slice()).collect();
    assert_eq!(ids.len(), spans.len());
    let by_id: HashMap<&[u8], &Span> = spans.iter().map(|s| (s.span_id.as_slice(), s)).collect();
    for s in spans.iter().filter(|s| !s.parent_span_id.is_empty()) {
        let p = by_id[s.parent_span_id.as_slice()];
        assert_eq!(p.trace_id, s.trace_id);
        assert!(
            p.start_time_unix_nano <= s.start_time_unix_nano && s.end_time_unix_nano <= p.end_time_unix_nano
        );
    }
    // The scope count and total per name against `phosphor stats --json` (its top-level "async" and
    // path lists): the spans of each name add up to the same count.
    let out = phosphor("otlp-pb", &["stats", "--json", input.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stats: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let asyncs: u64 =
        stats["async"].as_array().unwrap().iter().map(|a| a["durations"]["samples"].as_u64().unwrap()).sum();
    let ours =
        spans.iter().filter(|s| s.attributes.iter().any(|a| a.key == "phosphor.async_id")).count() as u64;
    assert_eq!(ours, asyncs);

    let out = phosphor(
        "otlp-pb",
        &["convert", input.to_str().unwrap(), "--to", "otlp-json", "--max-spans", "1000"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let mut from_json = Vec::new();
    for line in stdout(&out).lines() {
        let req: ExportTraceServiceRequest = serde_json::from_str(line).unwrap();
        let n = spans_of(req);
        assert!(n.len() <= 1000);
        from_json.extend(n);
    }
    assert_eq!(from_json, spans);
}

#[test]
fn selection_flags_cut_the_spans_and_are_refused_for_other_formats() {
    let input = demo("otlp-select");
    let i = input.to_str().unwrap();
    let all = phosphor("otlp-select", &["convert", i, "--to", "otlp-json"]);
    let roots = phosphor(
        "otlp-select",
        &["convert", i, "--to", "otlp-json", "--roots-only", "--service-name", "svc"],
    );
    assert!(roots.status.success(), "{}", stderr(&roots));
    let count = |o: &std::process::Output| -> usize {
        stdout(o).lines().map(|l| spans_of(serde_json::from_str(l).unwrap()).len()).sum()
    };
    assert!(count(&roots) > 0 && count(&roots) < count(&all));
    assert!(stdout(&roots).contains("\"svc\""));
    let refused = phosphor("otlp-select", &["convert", i, "--to", "chrome", "--roots-only"]);
    assert_eq!(refused.status.code(), Some(2));
    let bad = phosphor("otlp-select", &["convert", i, "--to", "otlp", "--min-duration", "5parsecs"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_cut_file_gives_the_spans_before_the_damage_and_an_error_naming_file_and_offset() {
    // Plain blocks: a compressed group is read whole, so a cut one holds no chunk.
    let input = demo_with("otlp-cut", &["--compression", "none"]);
    let bytes = std::fs::read(&input).unwrap();
    let cut = input.with_file_name("cut.phos");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let pb = input.with_file_name("cut.pb");
    let out =
        phosphor("otlp-cut", &["convert", cut.to_str().unwrap(), "--to", "otlp", "-o", pb.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("cut.phos") && err.contains("byte"), "{err}");
    let spans = spans_of(phosphor_otlp::request::from_protobuf(&std::fs::read(&pb).unwrap()).unwrap());
    assert!(!spans.is_empty());
}

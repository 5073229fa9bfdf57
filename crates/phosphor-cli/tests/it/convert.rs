//! `phosphor convert` on the files `phosphor demo` writes, whole or cut short, to a file or stdout;
//! and the Chrome JSON the demo writes next to its trace.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use crate::cli::{check_pftrace, command, count, phosphor, scratch, stderr, stdout};

/// Runs a small demo in the scratch directory of `test`; returns its report and its directory of
/// output (holding `trace.phos` and `trace.json`). Its scratch directory is `TEST-files`: running
/// the binary in the scratch directory of `test` empties that one.
fn demo(test: &str) -> (String, PathBuf) {
    demo_with(test, &[])
}

/// [`demo`] with `extra` arguments.
fn demo_with(test: &str, extra: &[&str]) -> (String, PathBuf) {
    let dir = scratch(&format!("{test}-files")).join("out");
    let out = phosphor(
        &format!("{test}-demo"),
        &[&["demo", "--threads", "2", "--events", "5000", "--out", dir.to_str().unwrap()], extra].concat(),
    );
    let report = stdout(&out);
    assert!(out.status.success(), "{:?}\n{report}\n{}", out.status, stderr(&out));
    assert!(dir.join("trace.phos").is_file(), "{report}");
    (report, dir)
}

/// Parses `bytes` as a Chrome JSON document; returns its trace events that are not metadata.
fn trace_events(bytes: &[u8]) -> Vec<Value> {
    let doc: Value = serde_json::from_slice(bytes).expect("the output is valid JSON");
    let events = doc["traceEvents"].as_array().expect("a traceEvents array");
    assert_eq!(events[0]["name"], "process_name", "metadata comes first");
    events.iter().filter(|e| e["ph"] != "M").cloned().collect()
}

/// The end events of `file`'s complete chunks (read up to its first error). Chrome JSON writes a
/// begin and its end as one `X` event, and drops an end with nothing open: it holds every event
/// of a file less these.
fn end_events(file: &Path) -> u64 {
    use phosphor::format::file::Reader;
    let bytes = std::fs::read(file).unwrap();
    let mut reader = Reader::new(&bytes[..]).unwrap();
    let mut ends = 0;
    while let Ok(Some(chunk)) = reader.next_chunk() {
        let events: Vec<_> = chunk.events().collect();
        if events.iter().all(Result::is_ok) {
            ends +=
                events.iter().flatten().filter(|e| e.callsite.phase == phosphor::Phase::End).count() as u64;
        }
    }
    ends
}

/// What `phosphor info` counts as the events of `file`.
fn info_events(test: &str, file: &Path) -> u64 {
    let out = phosphor(&format!("{test}-info"), &["info", file.to_str().unwrap()]);
    count(&stdout(&out), "events")
}

#[test]
fn converting_a_demo_trace_to_a_file_gives_json_with_every_event_info_counts() {
    let (_, dir) = demo("convert-file");
    let (input, json) = (dir.join("trace.phos"), dir.join("converted.json"));
    let out = phosphor(
        "convert-file",
        &["convert", input.to_str().unwrap(), "--to", "chrome", "-o", json.to_str().unwrap()],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
    let events = trace_events(&std::fs::read(&json).unwrap());
    let expected = info_events("convert-file", &input);
    assert!(expected > 10_000, "{expected}");
    let ends = end_events(&input);
    assert!(ends > 0, "the demo has begin/end pairs");
    assert_eq!(events.len() as u64, expected - ends);
    // One summary line: the output, and the events, chunks, threads and size it holds.
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(json.to_str().unwrap()), "{err}");
    assert_eq!(count(&format!("events {}", err.split(": ").nth(1).unwrap()), "events"), expected, "{err}");
    assert!(err.contains("chunks") && err.contains("4 threads") && err.contains("written in"), "{err}");
    let size = std::fs::metadata(&json).unwrap().len();
    let (value, unit) =
        if size < 1 << 20 { (size as f64 / 1024.0, "KiB") } else { (size as f64 / (1 << 20) as f64, "MiB") };
    assert!(err.contains(&format!(" {value:.1} {unit},")), "{err}\n{size}");
}

#[test]
fn converting_to_stdout_writes_the_same_document_and_nothing_to_stderr() {
    let (_, dir) = demo("convert-stdout");
    let input = dir.join("trace.phos");
    let out = phosphor("convert-stdout", &["convert", input.to_str().unwrap(), "--to", "chrome"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    let expected = info_events("convert-stdout", &input) - end_events(&input);
    assert_eq!(trace_events(&out.stdout).len() as u64, expected);
}

#[test]
fn a_closed_stdout_ends_a_conversion_quietly_with_status_0() {
    let (_, dir) = demo("convert-closed");
    let mut child = command("convert-closed")
        .args(["convert", dir.join("trace.phos").to_str().unwrap(), "--to", "chrome"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The document (about a MiB) is far larger than a pipe holds.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(out.stderr.is_empty(), "stderr: {}", stderr(&out));
}

#[test]
fn a_truncated_trace_gives_valid_json_of_its_complete_chunks_then_names_the_offset_and_exits_2() {
    // Plain blocks: half of this small file holds whole chunks (a compressed group is read whole
    // or not at all, and its first group is more than half of it).
    let (_, dir) = demo_with("convert-truncated", &["--compression", "none"]);
    let whole = std::fs::read(dir.join("trace.phos")).unwrap();
    let cut = dir.join("cut.phos");
    std::fs::write(&cut, &whole[..whole.len() / 2 + 1000]).unwrap();
    let json = dir.join("cut.json");

    let out = phosphor(
        "convert-truncated",
        &["convert", cut.to_str().unwrap(), "--to", "chrome", "-o", json.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(cut.to_str().unwrap()), "{err}");
    let offset: u64 = err.split("at byte ").nth(1).unwrap().split(':').next().unwrap().parse().unwrap();
    assert!(offset > 0 && offset <= whole.len() as u64 / 2 + 1000, "{err}");

    let events = trace_events(&std::fs::read(&json).unwrap());
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["otherData"]["incomplete"], true);
    // Every complete chunk: what info reads of the same file, up to the same offset.
    assert!(!events.is_empty());
    assert_eq!(events.len() as u64, info_events("convert-truncated", &cut) - end_events(&cut));
    let info = phosphor("convert-truncated-info2", &["info", cut.to_str().unwrap()]);
    assert!(stdout(&info).contains(&format!("read up to byte {offset} of")), "{}", stdout(&info));
}

#[test]
fn a_missing_input_or_an_unwritable_output_exits_2_naming_it() {
    let out = phosphor("convert-missing", &["convert", "no/such/trace.phos", "--to", "chrome"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no/such/trace.phos"), "{}", stderr(&out));
    assert!(out.stdout.is_empty());

    let (_, dir) = demo("convert-unwritable");
    let bad = dir.join("no/such/dir/out.json");
    let out = phosphor(
        "convert-unwritable",
        &["convert", dir.join("trace.phos").to_str().unwrap(), "--to", "chrome", "-o", bad.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(bad.to_str().unwrap()), "{}", stderr(&out));
}

#[test]
fn an_unknown_output_format_exits_2_listing_the_formats() {
    let (_, dir) = demo("convert-unknown");
    let out = phosphor(
        "convert-unknown",
        &["convert", dir.join("trace.phos").to_str().unwrap(), "--to", "protobuf"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("perfetto") && err.contains("chrome") && err.contains("folded"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn the_demo_writes_trace_json_next_to_its_trace_with_every_event() {
    let (report, dir) = demo("convert-demo");
    let json = dir.join("trace.json");
    let line = report.lines().find(|l| l.starts_with("chrome json")).unwrap_or_else(|| panic!("{report}"));
    assert!(line.contains(json.to_str().unwrap()), "{line}");
    let events = trace_events(&std::fs::read(&json).unwrap());
    let ends = end_events(&dir.join("trace.phos"));
    assert_eq!(events.len() as u64, count(&report, "recorded") - ends, "{report}");
}

#[test]
fn the_demo_writes_a_perfetto_trace_that_the_official_schema_reads_with_every_slice_closed() {
    let (report, dir) = demo("convert-perfetto");
    let pftrace = dir.join("trace.pftrace");
    let line = report.lines().find(|l| l.starts_with("perfetto")).unwrap_or_else(|| panic!("{report}"));
    assert!(line.contains(pftrace.to_str().unwrap()), "{line}");
    // `convert --to perfetto` writes the same bytes as the demo did.
    let again = dir.join("again.pftrace");
    let out = phosphor(
        "convert-perfetto",
        &[
            "convert",
            dir.join("trace.phos").to_str().unwrap(),
            "--to",
            "perfetto",
            "-o",
            again.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        std::fs::read(&again).unwrap() == std::fs::read(&pftrace).unwrap(),
        "the conversion is deterministic"
    );

    // `ok`: among others, no flow with one end.
    let result = check_pftrace(&pftrace);
    assert_eq!(result["ok"], true, "{:#}", result["errors"]);
    assert!(
        result["async_tracks"].as_u64().is_some_and(|n| (1..=64).contains(&n)),
        "{}",
        result["async_tracks"]
    );
    let tracks = result["tracks"].as_array().expect("tracks");
    let names: Vec<&str> = tracks.iter().filter_map(|t| t["name"].as_str()).collect();
    for thread in ["worker-0", "worker-1", "sink"] {
        assert!(names.contains(&thread), "no track for {thread}: {names:?}");
    }
    let mut slices = 0;
    for t in tracks {
        assert_eq!(t["unmatched_ends"].as_array().map_or(0, Vec::len), 0, "{}", t["name"]);
        for s in t["slices"].as_array().into_iter().flatten() {
            assert!(!s["dur"].is_null(), "slice never closed on {}: {s}", t["name"]);
            slices += 1;
        }
    }
    assert!(slices as u64 >= count(&report, "recorded") / 2, "{slices} slices for {report}");
    assert!(
        tracks.iter().any(|t| t["counter"].as_array().is_some_and(|c| !c.is_empty())),
        "no counter track"
    );
}

/// The demo's items are async slices begun on the workers and ended on the sink, so every end
/// comes in another thread's chunk than its begin; laid out from a first pass they take a lane per
/// item open at once (at most the 48 the pipeline holds), not one per item as they did in file
/// order (1,257 for this demo, of 3,884 items). And no item is drawn on another's lane.
#[test]
fn the_demos_items_take_at_most_64_async_tracks_in_perfetto() {
    let dir = scratch("perfetto-lanes-files").join("out");
    let out = phosphor(
        "perfetto-lanes-demo",
        &["demo", "--threads", "4", "--events", "20000", "--out", dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let result = check_pftrace(&dir.join("trace.pftrace"));
    assert_eq!(result["ok"], true, "{:#}", result["errors"]);
    let items: Vec<&Value> =
        result["tracks"].as_array().unwrap().iter().filter(|t| t["kind"] == "track").collect();
    assert!((2..=64).contains(&items.len()), "{} async tracks", items.len());
    let mut slices = 0;
    for t in &items {
        assert_eq!(t["name"], "item");
        assert_eq!(t["unmatched_ends"].as_array().map_or(0, Vec::len), 0, "{t}");
        for s in t["slices"].as_array().unwrap() {
            assert_eq!((s["depth"].as_u64(), s["dur"].is_null()), (Some(0), false), "nested or open: {s}");
            slices += 1;
        }
    }
    let report = stdout(&out);
    let line =
        report.lines().find(|l| l.trim_start().starts_with("item ")).unwrap_or_else(|| panic!("{report}"));
    let count: u64 = line.split_whitespace().nth(1).unwrap().replace(',', "").parse().unwrap();
    assert_eq!(slices, count, "every item is one slice: {line}");
}

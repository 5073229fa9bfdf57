//! `phosphor flamegraph` and `phosphor convert --to folded` on a demo trace, and the flame graph
//! the demo writes next to its trace.

use std::path::PathBuf;

use crate::cli::{phosphor, scratch, stderr, stdout};

/// Runs a small demo; returns its report and its output directory.
fn demo(test: &str) -> (String, PathBuf) {
    let dir = scratch(&format!("{test}-files")).join("out");
    let out = phosphor(
        &format!("{test}-demo"),
        &["demo", "--threads", "2", "--events", "5000", "--out", dir.to_str().unwrap()],
    );
    let report = stdout(&out);
    assert!(out.status.success(), "{:?}\n{report}\n{}", out.status, stderr(&out));
    (report, dir)
}

/// Asserts that `svg` looks like an SVG document that names the demo's frames.
fn assert_flame_graph(svg: &str) {
    assert!(svg.starts_with("<?xml") || svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
    assert!(svg.trim_end().ends_with("</svg>"));
    for frame in ["worker-0", "worker-1", "sink", "iteration", "parse", "hash"] {
        assert!(svg.contains(frame), "{frame} is not in the flame graph");
    }
}

#[test]
fn flamegraph_writes_an_svg_naming_the_traced_frames() {
    let (_, dir) = demo("flamegraph-svg");
    let svg = dir.join("drawn.svg");
    let out = phosphor(
        "flamegraph-svg",
        &["flamegraph", dir.join("trace.phos").to_str().unwrap(), "-o", svg.to_str().unwrap()],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(svg.to_str().unwrap()) && err.contains("flame graph of"), "{err}");
    assert_flame_graph(&std::fs::read_to_string(&svg).unwrap());
}

#[test]
fn flamegraph_of_a_missing_file_names_it_and_exits_2() {
    let dir = scratch("flamegraph-missing-files");
    let (input, svg) = (dir.join("absent.phos"), dir.join("out.svg"));
    let out =
        phosphor("flamegraph-missing", &["flamegraph", input.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(input.to_str().unwrap()), "{}", stderr(&out));
    assert!(!svg.exists());
}

#[test]
fn converting_to_folded_prints_sorted_stack_and_self_time_lines() {
    let (_, dir) = demo("convert-folded");
    let out =
        phosphor("convert-folded", &["convert", dir.join("trace.phos").to_str().unwrap(), "--to", "folded"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > 10, "{text}");
    let mut stacks = Vec::new();
    for line in &lines {
        // `stack ns`: the count is the last space-separated field, all digits and not zero; the
        // stack starts with a thread name (lock frames, `queue (wait)`, hold spaces).
        let (stack, ns) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line:?}"));
        assert!(!ns.is_empty() && ns.bytes().all(|b| b.is_ascii_digit()), "{line:?}");
        assert_ne!(ns.parse::<u64>().unwrap(), 0, "{line:?}");
        let thread = stack.split(';').next().unwrap();
        assert!(["main", "sink", "worker-0", "worker-1"].contains(&thread), "{line:?}");
        assert!(!stack.contains(";;") && !stack.ends_with(';'), "{line:?}");
        stacks.push(stack);
    }
    assert!(stacks.windows(2).all(|w| w[0] < w[1]), "not sorted or not distinct:\n{text}");
    assert!(stacks.contains(&"worker-0;batch;iteration;transform;hash"), "{text}");
}

#[test]
fn the_demo_writes_a_flame_graph_next_to_its_trace() {
    let (report, dir) = demo("demo-flame");
    let svg = dir.join("flame.svg");
    let line = report.lines().find(|l| l.starts_with("flame graph ")).unwrap_or_else(|| panic!("{report}"));
    assert!(line.contains(svg.to_str().unwrap()) && line.contains("written in"), "{line}");
    assert_flame_graph(&std::fs::read_to_string(&svg).unwrap());
}

/// A trace file in `dir` of `depth` nested begin/end pairs of `frame` on one thread.
fn nested_frames(dir: &std::path::Path, depth: u64) -> PathBuf {
    use phosphor::format::file::{CallsiteInfo, Header, Trailer, Writer};
    use phosphor::format::{Meta, Phase, Record};
    let clock = crate::cli::nanosecond_clock();
    let header = Header { clock, pid: 1, process_name: "deep".into(), boot_id: None, host_name: None };
    let callsite = |id, phase| CallsiteInfo::<String> {
        id,
        category: "c".into(),
        name: "frame".into(),
        phase,
        arg_names: Default::default(),
        file: "f.rs".into(),
        line: 1,
        name_hash: 0,
        level: None,
        dynamic_name: false,
        flow: false,
    };
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    w.write_callsites(&[callsite(16, Phase::Begin), callsite(17, Phase::End)]).unwrap();
    let begins = (0..depth).map(|i| Record::new(i, 16, Meta(0), [0; 2]));
    let ends = (0..depth).map(|k| Record::new(depth + k, 17, Meta(0), [0; 2]));
    let records: Vec<Record> = begins.chain(ends).collect();
    for (seq, chunk) in records.chunks(127).enumerate() {
        w.write_chunk(1, seq as u64, chunk, |_, _| "").unwrap();
    }
    let file = dir.join("deep.phos");
    std::fs::write(&file, w.finish(&Trailer::default()).unwrap()).unwrap();
    file
}

#[test]
fn stacks_deeper_than_the_cap_fold_under_a_marker_frame_and_stderr_says_how_many() {
    let dir = scratch("deep-stacks-files");
    let file = nested_frames(&dir, 1000);
    let out = phosphor("deep-stacks", &["convert", file.to_str().unwrap(), "--to", "folded"]);
    let (text, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(text.lines().count(), 257, "a line per level down to 256, then the marker's");
    assert!(text.lines().any(|l| l.ends_with(";[deeper than 256];frame 1487")), "{text}");
    let note =
        "note: 744 slices nested deeper than 256 levels are folded by name under \"[deeper than 256]\"";
    assert!(err.contains(note), "{err}");

    let svg = dir.join("deep.svg");
    let out =
        phosphor("deep-stacks-svg", &["flamegraph", file.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("note: 744 slices nested deeper than 256 levels are drawn by name"), "{err}");
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.contains("744 slices nested deeper than 256 are drawn by name under [deeper than 256]"));
}

#[test]
fn flamegraph_of_a_trace_without_a_closed_slice_says_so_and_names_the_input() {
    use phosphor::{trace_begin, trace_instant, BufferMode, TraceConfig, TraceLog, TraceLogConfig};
    let dir = scratch("flamegraph-no-slice-files");
    let (input, svg) = (dir.join("instants.phos"), dir.join("out.svg"));
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    trace_instant!(log: &log, "app", "tick");
    trace_begin!(log: &log, "app", "never_ended");
    log.stop();
    log.take_trace().unwrap().save(&input).unwrap();
    let out = phosphor(
        "flamegraph-no-slice",
        &["flamegraph", input.to_str().unwrap(), "-o", svg.to_str().unwrap()],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(input.to_str().unwrap()), "names the input: {err}");
    assert!(
        err.contains("nothing to draw") && err.contains("none of its 2 events is a closed slice"),
        "{err}"
    );
    assert!(!err.contains("writing the export failed") && !err.contains("No stack counts"), "{err}");
    assert_eq!(std::fs::metadata(&svg).unwrap().len(), 0, "nothing was drawn");
}

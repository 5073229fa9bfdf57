//! `phosphor logs`: the deferred-format logs of a trace file, formatted by the tool.

use std::path::PathBuf;

use crate::cli::{phosphor, scratch, stderr, stdout};

/// The 1.2 golden file: one warn log with four parameters.
fn golden() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../phosphor-format/tests/data/golden-v1.2.phtrace")
}

#[test]
fn logs_are_printed_formatted_as_text_or_json_lines() {
    let file = golden();
    let out = phosphor("logs-text", &["logs", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "   0.000002 WARN  [main] net: user 42 from host-17.example took 12.2 ms (static-two)\n"
    );
    let out = phosphor("logs-json", &["logs", "--json", file.to_str().unwrap()]);
    let line: serde_json::Value = serde_json::from_str(stdout(&out).trim_end()).unwrap();
    assert_eq!(
        line,
        serde_json::json!({
            "ts_ns": 2000, "level": "warn", "tid": 101, "thread": "main", "category": "net",
            "message": "user 42 from host-17.example took 12.2 ms (static-two)",
            "file": "src/golden.rs", "line": 20,
        })
    );
}

#[test]
fn level_and_category_filters_leave_out_other_logs() {
    let file = golden();
    for args in [&["--level", "error"][..], &["--category", "db*"][..]] {
        let out = phosphor("logs-filter", &[&["logs", file.to_str().unwrap()], args].concat());
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(stdout(&out), "", "{args:?}");
    }
    let out =
        phosphor("logs-filter-in", &["logs", file.to_str().unwrap(), "--level", "warn", "--category", "n?t"]);
    assert_eq!(stdout(&out).lines().count(), 1);
    let out = phosphor("logs-bad-level", &["logs", file.to_str().unwrap(), "--level", "loud"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("loud"), "{}", stderr(&out));
}

#[test]
fn a_cut_file_prints_the_logs_before_the_damage_then_says_where() {
    let bytes = std::fs::read(golden()).unwrap();
    let dir = scratch("logs-cut-files");
    let cut = dir.join("cut.phos");
    // Cut inside the aggregates block that follows the chunk holding the log.
    std::fs::write(&cut, &bytes[..bytes.len() - 120]).unwrap();
    let out = phosphor("logs-cut", &["logs", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout(&out).lines().count(), 1, "the log before the damage is printed");
    let err = stderr(&out);
    assert!(err.contains("cut.phos") && err.contains("stopped early"), "{err}");
}

#[test]
fn the_demo_trace_has_logs_at_three_levels() {
    let dir = scratch("logs-demo-files").join("out");
    let out = phosphor(
        "logs-demo",
        &["demo", "--threads", "2", "--events", "20000", "--out", dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let file = dir.join("trace.phos");
    let out = phosphor("logs-demo-logs", &["logs", file.to_str().unwrap()]);
    let text = stdout(&out);
    assert!(text.lines().any(|l| l.contains(" INFO ") && l.contains("reached iteration")), "{text}");
    assert!(text.lines().any(|l| l.contains(" DEBUG ") && l.contains("bytes, state")), "{text}");
    let out = phosphor("logs-demo-info", &["logs", "--level", "info", file.to_str().unwrap()]);
    assert!(stdout(&out).lines().all(|l| !l.contains(" DEBUG ")));
}

/// A file of two threads' logs whose chunks came back out of time order: `second` logs at 20, 40
/// and 60 µs, in the first chunk; `first` at 10, 30 and 50 µs, in the next.
fn interleaved(dir: &std::path::Path) -> PathBuf {
    use phosphor::format::file::{CallsiteInfo, Header, Trailer, Writer};
    use phosphor::format::{Meta, Phase, Record};
    let clock = crate::cli::nanosecond_clock();
    let log = |id, name: &str| CallsiteInfo::<String> {
        id,
        category: "c".into(),
        name: name.into(),
        phase: Phase::Log,
        arg_names: Default::default(),
        file: "f.rs".into(),
        line: 1,
        name_hash: 0,
        level: Some(phosphor::Level::Info),
        dynamic_name: false,
        flow: false,
    };
    let mut w = Writer::new(
        Vec::new(),
        &Header { clock, pid: 1, process_name: "two".into(), boot_id: None, host_name: None },
    )
    .unwrap();
    w.write_callsites(&[log(16, "from the first"), log(17, "from the second")]).unwrap();
    w.write_thread_names([(1, "first"), (2, "second")]).unwrap();
    let at = |id, us: &[u64]| -> Vec<Record> {
        us.iter().map(|t| Record::new(t * 1000, id, Meta(0), [0; 2])).collect()
    };
    w.write_chunk(2, 0, &at(17, &[20, 40, 60]), |_, _| "").unwrap();
    w.write_chunk(1, 0, &at(16, &[10, 30, 50]), |_, _| "").unwrap();
    let file = dir.join("interleaved.phos");
    std::fs::write(&file, w.finish(&Trailer { recorded: 6, ..Trailer::default() }).unwrap()).unwrap();
    file
}

#[test]
fn logs_of_threads_whose_chunks_interleave_are_printed_in_time_order() {
    let file = interleaved(&scratch("logs-order-files"));
    let out = phosphor("logs-order", &["logs", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let times: Vec<&str> = text.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(times, ["0.000010", "0.000020", "0.000030", "0.000040", "0.000050", "0.000060"]);
    assert!(stdout(&out).lines().next().unwrap().ends_with("[first] c: from the first"));
    assert_eq!(stderr(&out), "", "nothing was out of order");
    let out = phosphor("logs-order-json", &["logs", "--json", file.to_str().unwrap()]);
    let ts: Vec<u64> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["ts_ns"].as_u64().unwrap())
        .collect();
    assert_eq!(ts, [10_000, 20_000, 30_000, 40_000, 50_000, 60_000]);
}

#[test]
fn logs_too_late_for_a_full_window_are_printed_and_counted_on_stderr() {
    let file = interleaved(&scratch("logs-window-files"));
    // A window of nothing prints each log as it is read: the first thread's three come after 60 µs.
    let out = phosphor("logs-window", &["logs", "--window-mib", "0", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let times: Vec<&str> = text.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(times, ["0.000020", "0.000040", "0.000060", "0.000010", "0.000030", "0.000050"]);
    let err = stderr(&out);
    assert!(
        err.contains("3 of 6 logs were printed out of time order") && err.contains("--window-mib"),
        "{err}"
    );
    // JSON lines stay log objects only; the count goes to stderr there too.
    let out = phosphor("logs-window-json", &["logs", "--json", "--window-mib", "0", file.to_str().unwrap()]);
    assert!(stdout(&out).lines().all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));
    assert!(stderr(&out).contains("3 of 6 logs"), "{}", stderr(&out));
}

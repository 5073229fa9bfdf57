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

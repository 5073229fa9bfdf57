//! `phosphor demo`, run as a user runs it: the built binary, its exit status and its report.

use std::process::Stdio;

use crate::cli::{command, count, phosphor, stderr, stdout};

/// Runs the demo with `args`, checks it succeeded and that its accounting balances; returns the
/// report and (emitted, recorded, dropped).
fn balanced_demo(test: &str, args: &[&str]) -> (String, [u64; 3]) {
    let out = phosphor(test, &[&["demo"], args].concat());
    let report = stdout(&out);
    assert!(out.status.success(), "{:?}\nstdout:\n{report}\nstderr:\n{}", out.status, stderr(&out));
    let counts = [count(&report, "emitted"), count(&report, "recorded"), count(&report, "dropped")];
    assert_eq!(counts[1] + counts[2], counts[0], "{report}");
    assert!(report.contains("recorded + dropped == emitted: no unexplained loss"), "{report}");
    (report, counts)
}

#[test]
fn the_demo_accounts_for_every_event_and_lists_its_threads() {
    let (report, [emitted, recorded, dropped]) =
        balanced_demo("accounts", &["--threads", "3", "--events", "5000"]);
    assert_eq!(dropped, 0, "{report}");
    assert_eq!(recorded, emitted);
    // Three workers of at least 5,000 events each, plus the sink's and main's.
    assert!(emitted >= 15_000, "{report}");
    assert!(report.contains("every thread's recorded events equal what it emitted"), "{report}");
    let threads = report.split("threads (").nth(1).expect("a threads table");
    for name in ["main", "sink", "worker-0", "worker-1", "worker-2"] {
        assert!(
            threads.lines().any(|l| l.split_whitespace().nth(1) == Some(name)),
            "no thread {name}:\n{report}"
        );
    }
    assert!(!report.contains("worker-3"), "{report}");
    // The statistics, read back from the saved file: scope paths across threads.
    let kinds = report.split("kinds across threads (").nth(1).expect("a kinds table");
    for path in [
        "batch",
        "batch/iteration",
        "batch/iteration/parse",
        "batch/iteration/queue (wait)",
        "batch/iteration/queue (held)/queue_depth",
        "drain/consume",
        "queue (held)",
    ] {
        // A lock's name holds a space (`queue (held)`): the path is the line's start.
        assert!(
            kinds
                .lines()
                .any(|l| l.trim_start().strip_prefix(path).is_some_and(|rest| rest.starts_with(' '))),
            "no kind {path}:\n{report}"
        );
    }
    assert!(report.contains("every scope nests"), "{report}");
    // Every item handed to the sink pairs up: no async begin without its end, or the reverse.
    let item = report.lines().find(|l| l.trim_start().starts_with("item ")).expect("the async items");
    assert!(item.split_whitespace().rev().take(2).all(|n| n == "0"), "{item}");
}

#[test]
fn a_full_fixed_buffer_drops_are_counted_as_buffer_full() {
    let (report, [emitted, _, dropped]) =
        balanced_demo("fixed-full", &["--threads", "2", "--events", "100000", "--buffer-mib", "1"]);
    assert!(dropped > 0 && dropped < emitted, "{report}");
    assert!(
        report.contains(&format!("(buffer_full {})", phosphor_export::format_count(dropped))),
        "{report}"
    );
}

#[test]
fn a_ring_buffer_counts_the_events_it_overwrote() {
    let (report, [_, _, dropped]) = balanced_demo(
        "ring",
        &["--threads", "2", "--events", "100000", "--buffer-mib", "1", "--mode", "ring"],
    );
    assert!(dropped > 0, "{report}");
    assert!(report.contains("ring buffer of 1 MiB"), "{report}");
    assert!(
        report.contains(&format!("(overwritten {})", phosphor_export::format_count(dropped))),
        "{report}"
    );
}

#[test]
fn a_bad_option_exits_with_status_2() {
    let out = phosphor("bad-option", &["demo", "--mode", "sideways"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("sideways"));
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    let mut child = command("closed-stdout")
        .args(["demo", "--threads", "1", "--events", "1000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before the demo writes its report (it calibrates its clock first).
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(out.stderr.is_empty(), "stderr: {}", stderr(&out));
}

#[test]
fn the_demo_with_a_trigger_dumps_the_window_around_a_firing_and_lists_the_dumps() {
    // `>0ns` fires on the first flush, so the run dumps whatever the machine's speed.
    let (report, _) =
        balanced_demo("trigger", &["--threads", "2", "--events", "5000", "--trigger", "demo/flush>0ns"]);
    assert!(report.contains("ring buffer"), "a trigger records into a Ring: {report}");
    let triggers = report.split("\ntriggers    fired ").nth(1).expect("a triggers section");
    let dump = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("phosphor-cli-trigger/demo-out/trigger-1.phos");
    assert!(triggers.contains("demo-out/trigger-1.phos ("), "{report}");
    assert!(triggers.contains("trigger 1 demo/flush>0ns"), "{report}");
    let bytes = std::fs::read(&dump).expect("the dump is written");
    let mut r = phosphor::format::file::Reader::new(&bytes[..]).unwrap();
    let (mut markers, mut flushes) = (0, 0);
    r.for_each_event(|e| match (&*e.callsite.category.to_string(), &*e.callsite.name.to_string()) {
        ("phosphor", "trigger") => markers += 1,
        ("demo", "flush") => flushes += 1,
        _ => {}
    })
    .unwrap();
    assert!(markers >= 1 && flushes >= 1, "{markers} markers, {flushes} flushes");
}

#[test]
fn a_bad_trigger_exits_with_status_2_and_names_it() {
    let out = phosphor("bad-trigger", &["demo", "--trigger", "demo/flush>5 weeks"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("demo/flush>5 weeks") && stderr(&out).contains("unknown unit"),
        "{}",
        stderr(&out)
    );
}

//! The longest long polls (`long_polls.rs`): kept by duration, named by their task, listed under
//! the tasks in `phosphor stats`. With a real runtime and CPU samples:
//! `crates/phosphor/tests/it/tokio_hooks_samples.rs`.

use std::time::Duration;

use phosphor::{trace_async_begin, trace_complete, BufferMode, TraceConfig, TraceLog};

use super::{SLOWEST_LONG_POLLS, UNKNOWN_TASK};
use crate::TraceStats;

/// A trace of task 1 (`srv.rs:10`) whose polls `1..=n` last `i` µs, each flagged long; then a long
/// poll of task 99, which no poll names.
fn trace(n: u64) -> Vec<u8> {
    let log = TraceLog::new(phosphor::TraceLogConfig::new().clock(phosphor::ClockKind::Monotonic)).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    trace_async_begin!(log: &log, "tokio", "srv.rs:10", 1u64);
    // Out of order, so that the kept ones are not simply the last.
    let order = (1..=n).filter(|i| i % 2 == 0).chain((1..=n).filter(|i| i % 2 == 1));
    for i in order {
        let start = log.now();
        let dur = Duration::from_micros(i);
        trace_complete!(log: &log, "tokio", "srv.rs:10", start, dur, "task" => 1u64, "wait_ns" => 0u64);
        trace_complete!(log: &log, "tokio", "long poll", start, dur, "task" => 1u64, "poll_ns" => i * 1000);
    }
    let start = log.now();
    trace_complete!(log: &log, "tokio", "long poll", start, Duration::from_micros(n / 2), "task" => 99u64, "poll_ns" => 0u64);
    log.stop();
    log.take_trace().unwrap().write_to(Vec::new()).unwrap()
}

#[test]
fn the_longest_long_polls_are_kept_longest_first_and_named_by_their_task() {
    let n = 3 * SLOWEST_LONG_POLLS as u64;
    let stats = TraceStats::from_bytes(&trace(n)).unwrap();
    let kept: Vec<(String, u64, u64)> =
        stats.long_polls.iter().map(|p| (p.task.clone(), p.task_id, p.dur_ns)).collect();
    let want: Vec<(String, u64, u64)> =
        (0..SLOWEST_LONG_POLLS as u64).map(|k| ("srv.rs:10".to_string(), 1, (n - k) * 1000)).collect();
    assert_eq!(kept, want);
    // Without a system context, nothing is claimed about the CPU.
    assert!(stats.long_polls.iter().all(|p| p.system.is_none()));
    let total: u64 = stats.tasks.iter().map(|t| t.long_polls).sum();
    assert_eq!(total, n + 1);
}

#[test]
fn a_long_poll_of_a_task_the_trace_does_not_name_is_kept_as_unknown() {
    // Four long polls of task 1 (1-4 µs) and one of task 99 (2 µs): all kept.
    let stats = TraceStats::from_bytes(&trace(4)).unwrap();
    let kept: Vec<(&str, u64, u64)> =
        stats.long_polls.iter().map(|p| (p.task.as_str(), p.task_id, p.dur_ns)).collect();
    assert_eq!(
        kept,
        [
            ("srv.rs:10", 1, 4000),
            ("srv.rs:10", 1, 3000),
            ("srv.rs:10", 1, 2000),
            (UNKNOWN_TASK, 99, 2000),
            ("srv.rs:10", 1, 1000)
        ]
    );
}

#[test]
fn stats_text_lists_the_longest_long_polls_under_the_tasks() {
    let stats = TraceStats::from_bytes(&trace(2)).unwrap();
    let text = stats.report(Default::default()).to_string();
    let section = text.split("\nlongest long polls (3 of 3; no system context").nth(1).expect(&text);
    let rows: Vec<&str> = section.lines().skip(2).take(3).map(str::trim_start).collect();
    assert!(rows[0].starts_with("srv.rs:10 #1 "), "{section}");
    assert!(rows[0].ends_with("2.00 µs"), "{section}");
    assert!(rows[1].starts_with("srv.rs:10 #1 ") && rows[1].ends_with("1.00 µs"), "{section}");
    assert!(rows[2].starts_with(&format!("{UNKNOWN_TASK} #99 ")), "{section}");
    let mut json = Vec::new();
    stats.write_json(&mut json, Default::default()).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["long_polls"][0]["task"], "srv.rs:10");
    assert_eq!(v["long_polls"][0]["dur_ns"], 2000);
    assert_eq!(v["long_polls"][0]["system"], serde_json::Value::Null);
}

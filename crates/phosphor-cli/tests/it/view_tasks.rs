//! The viewer's tasks panel (issue 41, part 2) in headless Chromium (`scripts/browser/view-tasks.mjs`),
//! on a trace of tokio task events as `phosphor::tokio`'s hooks write them (an async slice per task,
//! a poll slice per poll with `task` and `wait_ns`): the panel shows the figures `phosphor stats`
//! gives, `N` tasks of a name polled `K` times each give `N` tasks and `N * K` polls, and a row
//! clicked searches for the task's slices.

use std::time::Duration;

use phosphor::{trace_async_begin, trace_async_end, trace_complete, BufferMode, TraceConfig, TraceLog};
use serde_json::Value;

use crate::browser::check;
use crate::cli::{phosphor, scratch, stdout};
use crate::view::start_viewer;

const N: u64 = 7;
const K: u64 = 3;
const NAME: &str = "src/server.rs:42";

/// `N` tasks named `NAME`, each polled `K` times (woken `id` µs before each poll), and one task
/// named `bg` polled once.
fn record(path: &std::path::Path) {
    let log = TraceLog::new(phosphor::TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    for id in 1..=N {
        trace_async_begin!(log: &log, "tokio", "src/server.rs:42", id);
    }
    for _ in 0..K {
        for id in 1..=N {
            let start = log.now();
            trace_complete!(log: &log, "tokio", "src/server.rs:42", start, Duration::from_micros(3),
                "task" => id, "wait_ns" => 1000 * id);
        }
    }
    for id in 1..=N {
        trace_async_end!(log: &log, "tokio", "src/server.rs:42", id);
    }
    trace_async_begin!(log: &log, "tokio", "bg", 100u64);
    let start = log.now();
    trace_complete!(log: &log, "tokio", "bg", start, Duration::from_micros(3), "task" => 100u64, "wait_ns" => 0u64);
    trace_async_end!(log: &log, "tokio", "bg", 100u64);
    log.stop();
    log.take_trace().unwrap().save(path).unwrap();
}

#[test]
fn the_tasks_panel_shows_the_tasks_phosphor_stats_counts_and_a_row_searches_for_its_slices() {
    let dir = scratch("view-tasks");
    let file = dir.join("tasks.phos");
    record(&file);
    let out = phosphor("view-tasks-stats", &["stats", file.to_str().unwrap(), "--json"]);
    assert!(out.status.success());
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let stats = doc["tasks"].as_array().unwrap().iter().find(|t| t["name"] == NAME).unwrap().clone();
    assert_eq!((&stats["spawned"], &stats["polls"]), (&Value::from(N), &Value::from(N * K)), "{stats}");

    let (_viewer, host) = start_viewer(&file, "view-tasks-cache");
    let url = format!("http://{host}/");
    let shot = dir.join("view-tasks.png");
    let r = check("view-tasks.mjs", &[url.as_ref(), NAME.as_ref(), shot.as_os_str(), "120".as_ref()]);
    assert_eq!(r["errors"], serde_json::json!([]), "{r}");
    let rows = r["rows"].as_array().unwrap();
    // The busier name first.
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, [NAME, "bg"], "{r}");
    let row = &rows[0];
    assert_eq!((row["spawned"].as_u64(), row["polls"].as_u64()), (Some(N), Some(N * K)), "{r}");
    for (page, stat) in [
        ("busyNs", "busy_ns"),
        ("scheduledNs", "scheduled_ns"),
        ("idleNs", "idle_ns"),
        ("longPolls", "long_polls"),
    ] {
        assert_eq!(row[page].as_u64(), stats[stat].as_u64(), "{page}: {r}");
    }
    assert_eq!(row["scheduledNs"].as_u64(), Some(K * 1000 * N * (N + 1) / 2), "{r}");
    // The search finds each task's async slice and its polls.
    assert_eq!(r["total"].as_u64(), Some(N + N * K), "{r}");
    assert!(shot.is_file());
}

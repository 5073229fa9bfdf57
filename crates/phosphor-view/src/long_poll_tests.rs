//! Long polls in the viewer (issue 41, part 2): `/api/tasks` lists the longest long polls with
//! what the system context saw inside each, by the code `phosphor stats` runs
//! (`phosphor_export::long_polls`), and `/api/stacks` gives a long poll's CPU samples by call
//! stack. On a crafted trace whose figures are known: `phosphor_craft::system`'s system context
//! (thread 101 blocked from 10 to 60 ms; CPU samples at 5, 70, 75 and 92 ms) under the task
//! events `phosphor::tokio` writes, one poll of which (60 to 100 ms) is a long poll.

use std::sync::Arc;

use phosphor_craft::system::{callsite, system_batch, TID};
use phosphor_export::long_polls::LongPoll;
use phosphor_export::symbolize::Symbolizer;
use phosphor_export::system::SystemContext;
use phosphor_export::StatsBuilder;
use phosphor_format::file::{ClockInfo, Header, Reader, Trailer, Writer};
use phosphor_format::{ArgType, Meta, Phase, Record};
use serde_json::{json, Value};

use crate::server::tests::{get, start};

const MS: u64 = 1_000_000;
/// The task's id and name (its spawn location).
const TASK: u64 = 7;
const TASK_NAME: &str = "srv.rs:10";

/// The trace: task 7 spawned at 0, polled from 2 to 4 ms and from 60 to 100 ms (a long poll),
/// ended at 100 ms, all on thread 101; with `phosphor_craft::system`'s system context. Without
/// `system`, the same events and no system block.
pub(crate) fn long_poll_trace(system: bool) -> Vec<u8> {
    let header = Header {
        clock: ClockInfo::monotonic(0, 1_700_000_000_000_000_000),
        pid: 4242,
        process_name: "app".into(),
        boot_id: None,
        host_name: None,
    };
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    w.write_callsites(&[
        callsite(16, "tokio", TASK_NAME, Phase::AsyncBegin, ["", ""]),
        callsite(17, "tokio", TASK_NAME, Phase::Complete, ["task", "wait_ns"]),
        callsite(18, "tokio", "long poll", Phase::Complete, ["task", "poll_ns"]),
        callsite(19, "tokio", TASK_NAME, Phase::AsyncEnd, ["", ""]),
    ])
    .unwrap();
    w.write_thread_names([(TID, "tokio-runtime-worker")]).unwrap();
    let edge = |id, ts: u64| [Record::new(ts, id, Meta::new(1, ArgType::None, ArgType::None), [TASK, 0])];
    // A complete event with two u64 arguments: its duration and the first in the slots, the
    // second in a continuation record.
    let complete = |id, start: u64, dur: u64, arg1: u64| {
        let meta = Meta::new(1, ArgType::U64, ArgType::U64).with_continuation(1);
        [Record::new(start, id, meta, [dur, TASK]), Record::continuation_of_words([arg1, 0, 0, 0])]
    };
    let mut records = Vec::new();
    records.extend(edge(16, 0));
    records.extend(complete(17, 2 * MS, 2 * MS, 1_000));
    records.extend(complete(17, 60 * MS, 40 * MS, 500_000));
    records.extend(complete(18, 60 * MS, 40 * MS, 40 * MS));
    records.extend(edge(19, 100 * MS));
    w.write_chunk(TID, 0, &records, |_, _| "").unwrap();
    if system {
        w.write_system(&system_batch()).unwrap();
    }
    w.finish(&Trailer { recorded: 5, ..Trailer::default() }).unwrap()
}

/// The viewer serving the trace (with or without its system context), and its offset on the
/// shared timeline.
fn serve(system: bool) -> (std::net::SocketAddr, i64, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long-poll.phos");
    std::fs::write(&path, long_poll_trace(system)).unwrap();
    let addr = start(&[path]);
    let (_, traces) = get(addr, "/api/traces");
    (addr, traces["traces"][0]["offset_ns"].as_i64().unwrap(), dir)
}

/// The long polls `phosphor stats` gives of `bytes`, as its `stats::run` reads a file: the
/// system context first, its leaves named.
fn stats_long_polls(bytes: &[u8]) -> Vec<LongPoll> {
    let mut context = SystemContext::read(Reader::new(bytes).unwrap()).unwrap();
    context.name_leaves(&mut Symbolizer::new());
    let reader = Reader::new(bytes).unwrap();
    StatsBuilder::new(&reader.header().clock).system(Arc::new(context)).read(reader).unwrap().long_polls
}

#[test]
fn the_tasks_answer_lists_a_long_poll_with_the_cpu_samples_inside_it_as_phosphor_stats_does() {
    let (addr, offset, _dir) = serve(true);
    let (status, answer) = get(addr, "/api/tasks?trace=0");
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["tasks"][0]["long_polls"], 1, "{answer}");
    let polls = answer["long_polls"].as_array().unwrap();
    assert_eq!(polls.len(), 1, "{answer}");
    let p = &polls[0];
    // The samples at 70 and 75 ms (app+0x3000) and at 92 ms (app+0x1000) are inside it; it ran
    // on the CPU throughout (switched in at 60 ms).
    let want = json!({
        "task": TASK_NAME, "task_id": TASK, "tid": TID, "start_ns": offset + 60 * MS as i64,
        "dur_ns": 40 * MS,
        "system": {"on_cpu_ns": 40 * MS, "off_cpu_ns": 0, "preempted_ns": 0, "switches": 0,
                   "samples": 3, "functions": [["app+0x3000", 2], ["app+0x1000", 1]]},
    });
    assert_eq!(p, &want, "{answer}");
    // The same long poll, and the same samples, as `phosphor stats` gives.
    let stats = stats_long_polls(&long_poll_trace(true));
    assert_eq!(stats.len(), 1, "{stats:?}");
    let (s, system) = (&stats[0], stats[0].system.as_ref().unwrap());
    assert_eq!((s.task.as_str(), s.task_id, s.tid), (TASK_NAME, TASK, TID), "{stats:?}");
    assert_eq!(
        (s.start_ns + offset, s.dur_ns, system.samples),
        (p["start_ns"].as_i64().unwrap(), 40 * MS, 3)
    );
    let functions: Vec<(String, u64)> = serde_json::from_value(p["system"]["functions"].clone()).unwrap();
    assert_eq!(functions, system.functions);
}

#[test]
fn a_long_poll_without_a_system_context_is_listed_without_samples() {
    let (addr, offset, _dir) = serve(false);
    let (_, answer) = get(addr, "/api/tasks?trace=0");
    let p = &answer["long_polls"][0];
    assert_eq!(
        (&p["task"], &p["start_ns"]),
        (&json!(TASK_NAME), &json!(offset + 60 * MS as i64)),
        "{answer}"
    );
    assert_eq!(p["system"], Value::Null, "{answer}");
}

#[test]
fn the_stacks_of_a_long_polls_samples_are_merged_by_call_stack_most_samples_first() {
    let (addr, offset, _dir) = serve(true);
    let (_, answer) = get(addr, "/api/tasks?trace=0");
    let p = &answer["long_polls"][0];
    let (start, dur) = (p["start_ns"].as_i64().unwrap(), p["dur_ns"].as_i64().unwrap());
    let url = format!("/api/stacks?trace=0&tid={TID}&start={start}&end={}", start + dur);
    let (status, stacks) = get(addr, &url);
    assert_eq!(status, 200, "{stacks}");
    let want = json!([
        {"count": 2, "frames": ["app+0x3000", "app+0x2000"]},
        {"count": 1, "frames": ["app+0x1000"]},
    ]);
    assert_eq!(
        (&stacks["samples"], &stacks["stacks"], &stacks["more"]),
        (&json!(3), &want, &json!(0)),
        "{stacks}"
    );
    // Its sample count is the long poll's; the whole trace has the fourth, at 5 ms.
    assert_eq!(stacks["samples"], p["system"]["samples"]);
    let whole = format!("/api/stacks?trace=0&tid={TID}&start={offset}&end={}", offset + 100 * MS as i64);
    assert_eq!(get(addr, &whole).1["samples"], 4);
    // A sample at the window's end is left out, as a scope's figures leave it out.
    let to70 = format!("/api/stacks?trace=0&tid={TID}&start={offset}&end={}", offset + 70 * MS as i64);
    assert_eq!(get(addr, &to70).1["samples"], 1);
    // A window backwards is refused.
    assert_eq!(get(addr, &format!("/api/stacks?trace=0&tid={TID}&start=10&end=5")).0, 400);
}

#[test]
fn the_tasks_panel_lists_the_long_poll_and_shows_the_stacks_of_its_samples() {
    let r = crate::system_browser_tests::check_page(&long_poll_trace(true), "view-long-polls.mjs");
    // The long polls' table: one row, the task, its duration, its samples and leaf functions.
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{r}");
    let row = rows[0].as_str().unwrap();
    for part in [&format!("{TASK_NAME} #{TASK}"), "40.0 ms", "app+0x3000 (2), app+0x1000 (1)"] {
        assert!(row.contains(part), "{part:?} not in {row:?}: {r}");
    }
    // Clicked: the view shows the poll, and the stacks of its three samples, most first.
    assert_eq!(r["selection"], json!([60 * MS, 100 * MS]), "{r}");
    assert_eq!(r["stacks"], json!([[2, "app+0x3000 ← app+0x2000"], [1, "app+0x1000"]]), "{r}");
    assert!(r["head"].as_str().unwrap().contains("3 CPU samples"), "{r}");
    // On the timeline, the long poll is drawn in its flag colour; clicked there, its details list
    // the same stacks.
    assert_eq!(r["flag"], json!(true), "{r}");
    assert_eq!(r["details"], r["stacks"], "{r}");
    // The panel's "search all" finds every long poll slice: the one.
    assert_eq!(r["searched"], 1, "{r}");
}

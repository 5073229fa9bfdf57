//! The tokio tasks' figures (`tasks.rs`): on task events written as `phosphor::tokio`'s hooks
//! write them (stable builds), and on a real runtime's (with `--cfg tokio_unstable`, where tokio
//! has the hooks). `phosphor stats` and `read_tasks` must give the same figures.

use std::time::Duration;

use phosphor::{trace_async_begin, trace_async_end, trace_complete, BufferMode, TraceConfig, TraceLog};
use phosphor_format::file::Reader;

use crate::tasks::{read_tasks, TaskStats};
use crate::TraceStats;

/// The figures of `bytes` by `phosphor stats`, checked equal to `read_tasks`'.
fn tasks_of(bytes: &[u8]) -> Vec<TaskStats> {
    let stats = TraceStats::from_bytes(bytes).unwrap();
    let (read, failure) = read_tasks(Reader::new(bytes).unwrap());
    assert!(failure.is_none(), "{failure:?}");
    assert_eq!(stats.tasks, read, "phosphor stats and read_tasks agree");
    read
}

fn named<'a>(tasks: &'a [TaskStats], name: &str) -> &'a TaskStats {
    tasks.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no task {name}: {tasks:#?}"))
}

const POLL: Duration = Duration::from_micros(20);

/// A poll slice of task `id` named `name`, lasting [`POLL`] (spun, so that slices on the thread
/// do not overlap), woken `wait_ns` before it.
fn poll(log: &TraceLog, name: &'static str, id: u64, wait_ns: u64) {
    let start = log.now();
    while log.now().wrapping_sub(start) < log.duration_to_ticks(POLL) {
        std::hint::spin_loop();
    }
    match name {
        "srv.rs:10" => {
            trace_complete!(log: log, "tokio", "srv.rs:10", start, POLL, "task" => id, "wait_ns" => wait_ns)
        }
        "bg" => trace_complete!(log: log, "tokio", "bg", start, POLL, "task" => id, "wait_ns" => wait_ns),
        _ => trace_complete!(log: log, "tokio", "late", start, POLL, "task" => id, "wait_ns" => wait_ns),
    }
}

#[test]
fn tasks_are_counted_by_name_and_their_lives_split_into_busy_scheduled_and_idle() {
    let log = TraceLog::new(phosphor::TraceLogConfig::new().clock(phosphor::ClockKind::Monotonic)).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    // Five tasks of one name, each polled three times, woken `1000 * id` ns before each poll.
    for id in 1..=5u64 {
        trace_async_begin!(log: &log, "tokio", "srv.rs:10", id);
    }
    for _ in 0..3 {
        for id in 1..=5u64 {
            poll(&log, "srv.rs:10", id, 1000 * id);
        }
    }
    // Task 2's last poll was long.
    let start = log.now();
    trace_complete!(log: &log, "tokio", "long poll", start, POLL, "task" => 2u64, "poll_ns" => 20_000u64);
    for id in 1..=5u64 {
        trace_async_end!(log: &log, "tokio", "srv.rs:10", id);
    }
    // Two of another name: one ends after a poll, one is still running at the end (two polls).
    trace_async_begin!(log: &log, "tokio", "bg", 6u64);
    trace_async_begin!(log: &log, "tokio", "bg", 7u64);
    poll(&log, "bg", 6, 500);
    trace_async_end!(log: &log, "tokio", "bg", 6u64);
    poll(&log, "bg", 7, 0);
    poll(&log, "bg", 7, 0);
    // A task whose spawn the trace does not hold (a ring that wrapped): its poll alone.
    poll(&log, "late", 9, 300);
    log.stop();
    let bytes = log.take_trace().unwrap().write_to(Vec::new()).unwrap();
    let tasks = tasks_of(&bytes);
    assert_eq!(tasks.len(), 3, "{tasks:#?}");

    let poll_ns = POLL.as_nanos() as u64;
    let srv = named(&tasks, "srv.rs:10");
    assert_eq!((srv.spawned, srv.ended, srv.polls, srv.long_polls), (5, 5, 15, 1));
    assert_eq!(srv.busy_ns, 15 * poll_ns);
    assert_eq!((srv.scheduled_ns, srv.max_scheduled_ns), (3 * 1000 * 15, 5000));
    // Every task was seen whole: its life is its busy, scheduled and idle time.
    assert!(srv.lived_ns >= srv.busy_ns + srv.scheduled_ns, "{srv:?}");
    assert_eq!(srv.idle_ns, srv.lived_ns - srv.busy_ns - srv.scheduled_ns, "{srv:?}");

    let bg = named(&tasks, "bg");
    assert_eq!((bg.spawned, bg.ended, bg.polls, bg.long_polls), (2, 1, 3, 0));
    assert_eq!((bg.busy_ns, bg.scheduled_ns), (3 * poll_ns, 500));
    // Only task 6's life is measured: its one poll and its wait, the rest idle.
    assert!(bg.lived_ns >= poll_ns + 500, "{bg:?}");
    assert_eq!(bg.idle_ns, bg.lived_ns - poll_ns - 500, "{bg:?}");

    let late = named(&tasks, "late");
    assert_eq!(
        (late.spawned, late.ended, late.polls, late.busy_ns, late.scheduled_ns),
        (0, 0, 1, poll_ns, 300)
    );
    assert_eq!((late.lived_ns, late.idle_ns), (0, 0));
}

#[test]
fn stats_text_and_json_list_the_tasks() {
    let log = TraceLog::new(phosphor::TraceLogConfig::new().clock(phosphor::ClockKind::Monotonic)).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    trace_async_begin!(log: &log, "tokio", "srv.rs:10", 1u64);
    poll(&log, "srv.rs:10", 1, 7);
    trace_async_end!(log: &log, "tokio", "srv.rs:10", 1u64);
    log.stop();
    let bytes = log.take_trace().unwrap().write_to(Vec::new()).unwrap();
    let stats = TraceStats::from_bytes(&bytes).unwrap();
    let text = stats.report(Default::default()).to_string();
    let section = text.split("\ntokio tasks (1 spawned, 1 names)\n").nth(1).expect(&text);
    let row = section.lines().nth(1).unwrap();
    assert!(row.trim_start().starts_with("srv.rs:10"), "{section}");
    let mut json = Vec::new();
    stats.write_json(&mut json, Default::default()).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let t = &v["tasks"][0];
    assert_eq!(
        (t["name"].as_str(), t["polls"].as_u64(), t["scheduled_ns"].as_u64()),
        (Some("srv.rs:10"), Some(1), Some(7))
    );
}

/// A real runtime: `N` tasks spawned on one line, each polled `K` times (it yields `K - 1`
/// times), read back by name.
#[cfg(tokio_unstable)]
#[test]
fn a_runtimes_tasks_are_counted_with_every_poll() {
    use std::sync::Arc;

    const N: u64 = 12;
    const K: u64 = 5;
    let log: &'static Arc<TraceLog> =
        Box::leak(Box::new(Arc::new(TraceLog::new(phosphor::TraceLogConfig::new()).unwrap())));
    log.start(TraceConfig::new(BufferMode::Fixed, 8 << 20).categories("tokio").unwrap()).unwrap();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(2);
    phosphor::tokio::TaskHooks::new().log(log).install(&mut builder);
    let rt = builder.build().unwrap();
    let line = rt.block_on(async {
        let mut handles = Vec::new();
        let mut line = 0;
        for _ in 0..N {
            let task = async {
                for _ in 1..K {
                    tokio::task::yield_now().await;
                }
            };
            let (h, l) = (tokio::spawn(task), line!());
            line = l;
            handles.push(h);
        }
        for h in handles {
            h.await.unwrap();
        }
        line
    });
    drop(rt);
    log.stop();
    let bytes = log.take_trace().unwrap().write_to(Vec::new()).unwrap();
    let tasks = tasks_of(&bytes);
    let t = named(&tasks, &format!("{}:{line}", file!()));
    assert_eq!((t.spawned, t.ended, t.polls), (N, N, N * K), "{t:?}");
    assert!(t.scheduled_ns > 0, "a yielded task waits for its next poll: {t:?}");
    // Lives split into busy, scheduled and idle; a task's first wait may start a little before
    // its spawn hook's clock read (tokio's clock and the trace's), so allow a microsecond a task.
    assert!(t.busy_ns + t.scheduled_ns <= t.lived_ns + N * 1000, "{t:?}");
    assert!(t.idle_ns <= t.lived_ns, "{t:?}");
}

//! `phosphor::tokio`: tokio's task hooks on a runtime builder. With `--cfg tokio_unstable` (where
//! tokio has the hooks), each task is one async slice named by its spawn location with tokio's
//! task id, each poll a flow-flagged slice naming its task, and a poll over the threshold a
//! `long poll` slice; read back from the saved file. Without the flag, installing the hooks
//! changes nothing and records nothing.

use std::sync::Arc;
use std::time::Duration;

use phosphor::format::file::Reader;
use phosphor::tokio::{TaskHooks, HOOKS_AVAILABLE};
use phosphor::{BufferMode, TraceConfig, TraceLog};

use crate::support::{started, stop_and_take};

const YIELDS: u32 = 4;
const LONG_POLL: Duration = Duration::from_millis(25);

/// One event of category `tokio` read back from the file.
// Read by the tokio_unstable test only (the other shows them on failure).
#[cfg_attr(not(tokio_unstable), allow(dead_code))]
#[derive(Debug)]
struct Ev {
    name: String,
    phase: phosphor::Phase,
    flow: bool,
    async_id: Option<u64>,
    args: Vec<(String, u64)>,
}

/// Runs `short` yielding tasks spawned on one line, two more on another, and one task whose one
/// poll blocks for twice the long-poll threshold, on a two-worker runtime with the hooks; returns
/// the tasks' (id, spawn line), the slow task's id, and the `tokio` events of the saved file.
fn run(name: &str) -> (Vec<(u64, u32)>, u64, Vec<Ev>) {
    let log = started(TraceConfig::new(BufferMode::Fixed, 8 << 20).categories("tokio").unwrap());
    let leaked: &'static Arc<TraceLog> = Box::leak(Box::new(log.clone()));
    let log_ref: &'static TraceLog = leaked;
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(2);
    TaskHooks::new().log(log_ref).long_poll(LONG_POLL).install(&mut builder);
    let rt = builder.build().unwrap();
    let id = |h: &tokio::task::JoinHandle<()>| h.id().to_string().parse::<u64>().unwrap();
    let (spawned, slow) = rt.block_on(async {
        let yielding = || async {
            for _ in 0..YIELDS {
                tokio::task::yield_now().await;
            }
        };
        let mut handles = Vec::new();
        for _ in 0..6 {
            let (h, line) = (tokio::spawn(yielding()), line!());
            handles.push((h, line));
        }
        for _ in 0..2 {
            let (h, line) = (tokio::spawn(yielding()), line!());
            handles.push((h, line));
        }
        let slow = tokio::spawn(async { std::thread::sleep(LONG_POLL * 2) });
        let slow_id = id(&slow);
        let mut spawned = Vec::new();
        for (h, line) in handles {
            spawned.push((id(&h), line));
            h.await.unwrap();
        }
        slow.await.unwrap();
        (spawned, slow_id)
    });
    drop(rt);
    let trace = stop_and_take(&log);
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tokio-hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.phos"));
    trace.save(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let mut evs = Vec::new();
    let mut reader = Reader::new(&bytes[..]).unwrap();
    reader
        .for_each_event(|e| {
            if e.callsite.category != "tokio" {
                return;
            }
            let args = e
                .args
                .iter()
                .flatten()
                .map(|(k, v)| match v {
                    phosphor::format::file::Value::U64(n) => (k.to_string(), n.to_owned()),
                    other => panic!("{}: argument {k} is {other:?}", path.display()),
                })
                .collect();
            evs.push(Ev {
                name: e.callsite.name.to_string(),
                phase: e.callsite.phase,
                flow: e.callsite.flow,
                async_id: e.async_id,
                args,
            });
        })
        .unwrap();
    (spawned, slow, evs)
}

#[cfg(not(tokio_unstable))]
#[test]
fn without_tokio_unstable_the_hooks_install_nothing_and_the_runtime_runs() {
    const { assert!(!HOOKS_AVAILABLE) };
    let (spawned, _, evs) = run("stable");
    assert_eq!(spawned.len(), 8, "every task ran to its end");
    assert!(evs.is_empty(), "no task events without the hooks: {evs:?}");
}

#[cfg(tokio_unstable)]
#[test]
fn each_task_is_one_async_slice_named_by_its_spawn_location_with_its_polls_linked() {
    use std::collections::BTreeMap;

    use phosphor::Phase;

    const { assert!(HOOKS_AVAILABLE) };
    let (spawned, slow, evs) = run("unstable");
    let here = file!();
    let mut begins: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    let mut ends: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    let mut polls: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    let mut long_polls = Vec::new();
    for e in &evs {
        let arg = |k: &str| e.args.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
        match (e.name.as_str(), e.phase) {
            ("long poll", Phase::Complete) => {
                long_polls.push((arg("task").unwrap(), arg("poll_ns").unwrap()))
            }
            (_, Phase::AsyncBegin) => begins.entry(e.async_id.unwrap()).or_default().push(&e.name),
            (_, Phase::AsyncEnd) => ends.entry(e.async_id.unwrap()).or_default().push(&e.name),
            (_, Phase::Complete) => {
                assert!(e.flow, "a poll is flagged as a flow: {e:?}");
                polls.entry(arg("task").expect("a poll names its task")).or_default().push(&e.name);
            }
            _ => panic!("unexpected event {e:?}"),
        }
        if e.phase != Phase::Complete || e.name != "long poll" {
            assert!(e.flow, "task slices are flagged as flows: {e:?}");
        }
    }
    for &(id, line) in &spawned {
        let name = format!("{here}:{line}");
        assert_eq!(begins.get(&id), Some(&vec![name.as_str()]), "task {id}: one begin named by its spawn");
        assert_eq!(ends.get(&id), Some(&vec![name.as_str()]), "task {id}: one end");
        let p = polls.get(&id).map_or(&[][..], |v| &v[..]);
        assert!(p.len() > YIELDS as usize, "task {id}: a poll per yield and one more, got {}", p.len());
        assert!(p.iter().all(|n| *n == name), "task {id}'s polls are named like it: {p:?}");
    }
    let lines: std::collections::BTreeSet<u32> = spawned.iter().map(|s| s.1).collect();
    assert_eq!(lines.len(), 2, "two spawn lines, two names");
    // The slow task: one begin and end, one poll, and a long poll over the threshold.
    assert_eq!(begins.get(&slow).map(Vec::len), Some(1));
    assert_eq!(ends.get(&slow).map(Vec::len), Some(1));
    assert_eq!(polls.get(&slow).map(Vec::len), Some(1));
    let slow_long: Vec<_> = long_polls.iter().filter(|l| l.0 == slow).collect();
    assert_eq!(slow_long.len(), 1, "the blocking poll is a long poll: {long_polls:?}");
    assert!(slow_long[0].1 >= (LONG_POLL * 2).as_nanos() as u64 * 9 / 10, "{long_polls:?}");
    // Nothing else: tokio's own `spawn_blocking` tasks (the workers' launch), which reach the
    // terminate hook but not the spawn hook, leave no lone end.
    assert_eq!(begins.len(), spawned.len() + 1, "{begins:?}");
    assert_eq!(ends.len(), spawned.len() + 1, "{ends:?}");
    assert_eq!(polls.keys().collect::<Vec<_>>(), begins.keys().collect::<Vec<_>>());
}

#[cfg(tokio_unstable)]
#[test]
fn a_long_poll_fires_a_flight_recorders_trigger() {
    use std::time::Instant;

    use phosphor::trigger::Trigger;

    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tokio-hooks-trigger");
    let _ = std::fs::remove_dir_all(&dir);
    let config = TraceConfig::new(BufferMode::Ring, 1 << 20)
        .categories("tokio")
        .unwrap()
        .trigger_dir(&dir)
        .trigger(Trigger::slower_than("tokio", "long poll", Duration::from_millis(1)));
    let log = started(config);
    let leaked: &'static Arc<TraceLog> = Box::leak(Box::new(log.clone()));
    let log_ref: &'static TraceLog = leaked;
    let mut builder = tokio::runtime::Builder::new_current_thread();
    TaskHooks::new().log(log_ref).long_poll(LONG_POLL).install(&mut builder);
    let rt = builder.build().unwrap();
    rt.block_on(async { tokio::spawn(async { std::thread::sleep(LONG_POLL * 2) }).await.unwrap() });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = log.triggers();
        if s.dumps.len() == 1 {
            assert_eq!(s.fired, 1, "{s:?}");
            break;
        }
        assert!(Instant::now() < deadline, "no dump after the long poll: {s:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
    log.stop();
}

/// The `wait_ns` of each poll of one task that waited at least `block` for its first poll, on a
/// one-thread runtime with `hooks` (`None`: a poll without `wait_ns`), read back from the file.
#[cfg(tokio_unstable)]
fn poll_waits(hooks: TaskHooks, block: Duration, name: &str) -> Vec<Option<u64>> {
    // One thread: a task spawned while the main future blocks it for `block` cannot be polled
    // before the main future yields, so its first poll waited at least `block`.
    let log = started(TraceConfig::new(BufferMode::Fixed, 1 << 20).categories("tokio").unwrap());
    let leaked: &'static Arc<TraceLog> = Box::leak(Box::new(log.clone()));
    let log_ref: &'static TraceLog = leaked;
    let mut builder = tokio::runtime::Builder::new_current_thread();
    hooks.log(log_ref).install(&mut builder);
    let rt = builder.build().unwrap();
    let task = rt.block_on(async {
        let h = tokio::spawn(async {});
        let task = h.id().to_string().parse::<u64>().unwrap();
        std::thread::sleep(block);
        h.await.unwrap();
        task
    });
    drop(rt);
    let trace = stop_and_take(&log);
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tokio-hooks-{name}.phos"));
    trace.save(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let mut waits = Vec::new();
    Reader::new(&bytes[..])
        .unwrap()
        .for_each_event(|e| {
            let arg = |k: &str| match e.arg(k) {
                Some(phosphor::format::file::Value::U64(n)) => Some(n),
                _ => None,
            };
            if e.callsite.phase == phosphor::Phase::Complete
                && e.callsite.name != "long poll"
                && arg("task") == Some(task)
            {
                waits.push(arg("wait_ns"));
            }
        })
        .unwrap();
    waits
}

#[cfg(tokio_unstable)]
#[test]
fn a_poll_records_how_long_its_task_waited_after_being_woken() {
    const BLOCK: Duration = Duration::from_millis(30);
    let waits = poll_waits(TaskHooks::new(), BLOCK, "wait");
    assert_eq!(waits.len(), 1, "one poll: {waits:?}");
    let wait = waits[0].expect("a poll has wait_ns");
    assert!(wait >= BLOCK.as_nanos() as u64, "waited {wait} ns, blocked {BLOCK:?}");
}

#[cfg(tokio_unstable)]
#[test]
fn with_wait_ns_off_a_poll_has_its_task_and_no_wait() {
    let waits = poll_waits(TaskHooks::new().wait_ns(false), Duration::from_millis(5), "no-wait");
    assert_eq!(waits, vec![None], "one poll, naming its task, without wait_ns");
}

/// `crates/phosphor/examples/tokio_flight_recorder.rs`, run here (its `main` aside).
#[allow(dead_code)]
#[path = "../../../phosphor/examples/tokio_flight_recorder.rs"]
mod flight_recorder;

#[cfg(tokio_unstable)]
#[test]
fn the_flight_recorder_example_dumps_the_ring_with_the_long_poll_and_what_led_to_it() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tokio-flight-recorder");
    let _ = std::fs::remove_dir_all(&dir);
    let log: &'static Arc<TraceLog> = Box::leak(Box::new(TraceLog::new(Default::default()).unwrap()));
    let dump = flight_recorder::run(log, &dir).unwrap().expect("a dump with the hooks");
    let bytes = std::fs::read(&dump).unwrap();
    let (mut long, mut polls, mut tasks) = (Vec::new(), 0u64, std::collections::BTreeSet::new());
    Reader::new(&bytes[..])
        .unwrap()
        .for_each_event(|e| {
            if e.callsite.category != "tokio" {
                return;
            }
            match (e.callsite.name.as_ref(), e.callsite.phase) {
                ("long poll", _) => long.push(match e.arg("poll_ns") {
                    Some(phosphor::format::file::Value::U64(ns)) => ns,
                    other => panic!("poll_ns {other:?}"),
                }),
                (_, phosphor::Phase::Complete) => polls += 1,
                (_, phosphor::Phase::AsyncBegin) => {
                    tasks.insert(e.async_id);
                }
                _ => {}
            }
        })
        .unwrap();
    // The blocking handler's poll (15 ms); on a loaded machine, a preempted poll may be another.
    assert!(long.iter().any(|&ns| ns >= 15_000_000), "{}: {long:?}", dump.display());
    assert!(long.iter().all(|&ns| ns >= flight_recorder::LIMIT.as_nanos() as u64), "{long:?}");
    // The ring's history: the requests handled before the long one (it was the 301st).
    assert!(tasks.len() >= 300 && polls >= 600, "{} tasks, {polls} polls", tasks.len());
}

#[cfg(tokio_unstable)]
#[test]
fn tasks_spawned_inside_named_take_its_name_for_their_slices_and_polls() {
    let log = started(TraceConfig::new(BufferMode::Fixed, 1 << 20).categories("tokio").unwrap());
    let leaked: &'static Arc<TraceLog> = Box::leak(Box::new(log.clone()));
    let log_ref: &'static TraceLog = leaked;
    let mut builder = tokio::runtime::Builder::new_current_thread();
    TaskHooks::new().log(log_ref).install(&mut builder);
    let rt = builder.build().unwrap();
    let (named, plain) = rt.block_on(async {
        let id = |h: &tokio::task::JoinHandle<()>| h.id().to_string().parse::<u64>().unwrap();
        let mut named = Vec::new();
        for _ in 0..3 {
            let h = phosphor::tokio::named("connection", || tokio::spawn(tokio::task::yield_now()));
            named.push(id(&h));
            h.await.unwrap();
        }
        // After it, a task is named by its spawn location again.
        let (h, line) = (tokio::spawn(async {}), line!());
        let plain = (id(&h), line);
        h.await.unwrap();
        (named, plain)
    });
    drop(rt);
    let trace = stop_and_take(&log);
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tokio-hooks-named.phos");
    trace.save(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let mut by_task: std::collections::BTreeMap<u64, Vec<(String, phosphor::Phase)>> = Default::default();
    Reader::new(&bytes[..])
        .unwrap()
        .for_each_event(|e| {
            let id = match (e.async_id, e.arg("task")) {
                (Some(id), _) => id,
                (None, Some(phosphor::format::file::Value::U64(id))) => id,
                _ => return,
            };
            by_task.entry(id).or_default().push((e.callsite.name.to_string(), e.callsite.phase));
        })
        .unwrap();
    use phosphor::Phase::{AsyncBegin, AsyncEnd, Complete};
    for id in named {
        let c = || "connection".to_string();
        assert_eq!(
            by_task[&id],
            [(c(), AsyncBegin), (c(), Complete), (c(), AsyncEnd), (c(), Complete)],
            "task {id}"
        );
    }
    let here = format!("{}:{}", file!(), plain.1);
    assert_eq!(by_task[&plain.0], [(here.clone(), AsyncBegin), (here.clone(), AsyncEnd), (here, Complete)]);
}

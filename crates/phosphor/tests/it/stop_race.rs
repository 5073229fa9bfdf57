//! Issue 37 §3: concurrent `stop()`s, a `start` during a stop, restarts on pool tenants, and the
//! exhaustions and registrations met while a thread is inside the recorder.
//!
//! The races are held open with the test-only hooks (`phosphor::__test_hooks`, feature
//! `test-hooks`): a first `stop` is paused where it joins the trigger dump thread, and every call
//! that finds it in progress says so from under the control lock before it sleeps, so each test
//! knows the order of the calls without sleeping on luck.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use phosphor::__macro_support::check;
use phosphor::__test_hooks::{self as hooks, Pause};
use phosphor::trigger::PostWindow;
use phosphor::{
    trace_counter, trace_instant, BufferMode, Callsite, CallsiteMeta, Phase, ThreadPolicy, TraceConfig,
    TraceLog, TraceLogConfig,
};

use crate::support::{events, new_log, started, stop_and_take};

fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("stop_race").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A Ring trace whose trigger (`category/x>1`) opens a window that only a stop ends.
fn ring_with_trigger(dir: &Path, category: &str) -> TraceConfig {
    TraceConfig::new(BufferMode::Ring, 1 << 20)
        .trigger_dir(dir)
        .trigger(format!("{category}/x>1").parse().unwrap())
        .post_window(PostWindow::Time(Duration::from_secs(3600)))
}

/// Pauses `log`'s first `stop` where it joins its threads until the returned sender is dropped,
/// and reports every pause on the receiver.
fn hold_first_stop(log: &TraceLog) -> (Receiver<Pause>, Sender<()>) {
    let (reached, pauses) = channel();
    let (release, released) = channel::<()>();
    let reached = Mutex::new(reached);
    let released = Mutex::new(released);
    hooks::set(
        log,
        Some(Arc::new(move |at: Pause| {
            let _ = reached.lock().unwrap().send(at);
            if at == Pause::StopJoining {
                // Returns once the test drops the sender (and at once for any later stop).
                let _ = released.lock().unwrap().recv();
            }
        })),
    );
    (pauses, release)
}

/// The next pause `log` reports. A pause that never comes (the code before this fix had no stop
/// in progress to wait for) lets the test go on after a while, to fail on what happened instead.
fn next_pause(pauses: &Receiver<Pause>) -> Option<Pause> {
    match pauses.recv_timeout(Duration::from_secs(5)) {
        Ok(at) => Some(at),
        Err(RecvTimeoutError::Timeout) => None,
        Err(RecvTimeoutError::Disconnected) => panic!("the hook is gone"),
    }
}

/// A generous deadline for what a background thread does, never a fixed sleep.
fn wait_until(what: &str, ok: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ok() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_second_stop_during_a_stop_waits_for_it_and_the_pending_dump_and_the_system_context_are_kept() {
    let dir = fresh_dir("second_stop");
    let log = started(ring_with_trigger(&dir, "stoprace.two").context_switches(true));
    trace_counter!(log: &log, "stoprace.two", "x", 2u64);
    assert!(log.triggers().pending, "the trigger opened a window");
    let (pauses, release) = hold_first_stop(&log);

    let first = std::thread::spawn({
        let log = log.clone();
        move || log.stop()
    });
    assert_eq!(next_pause(&pauses), Some(Pause::StopJoining));
    let second = std::thread::spawn({
        let log = log.clone();
        move || log.stop()
    });
    // Checked at the end, so that a failure shows what the race did first.
    let waited = next_pause(&pauses);
    let returned_early = second.is_finished();
    let enabled_meanwhile = log.is_enabled();

    drop(release);
    first.join().unwrap();
    second.join().unwrap();
    hooks::set(&log, None);

    let s = log.triggers();
    assert_eq!(s.failed, 0, "the pending dump failed (\"no trace is running\"?): {s:?}");
    assert_eq!(s.dumps.len(), 1, "the window pending at the stop was dumped: {s:?}");
    assert!(s.dumps[0].path.exists());
    assert!(log.system_status().is_some(), "the first stop's system context was dropped");
    let trace = log.take_trace().expect("one stop finished the trace");
    assert!(trace.system().is_some(), "the trace lost its system context");
    assert!(log.take_trace().is_none(), "a single trace for the two stops");
    assert_eq!(waited, Some(Pause::WaitingForStop), "the second stop waits for the first");
    assert!(!returned_early, "the second stop returned while the first was joining");
    assert!(enabled_meanwhile, "the trace runs until the first stop takes it");
}

#[test]
fn a_start_during_a_stop_waits_for_it_and_the_stop_does_not_end_the_new_traces_dump_thread() {
    let dir = fresh_dir("start_between");
    let log = started(ring_with_trigger(&dir, "stoprace.old"));
    trace_counter!(log: &log, "stoprace.old", "x", 2u64);
    let (pauses, release) = hold_first_stop(&log);

    let first = std::thread::spawn({
        let log = log.clone();
        move || log.stop()
    });
    assert_eq!(next_pause(&pauses), Some(Pause::StopJoining));
    // A second stop, then a start, both from other threads while the first joins.
    let second = std::thread::spawn({
        let log = log.clone();
        move || log.stop()
    });
    let second_waited = next_pause(&pauses);
    let new_dir = fresh_dir("start_between_new");
    let third = std::thread::spawn({
        let (log, new_dir) = (log.clone(), new_dir.clone());
        move || {
            let config = TraceConfig::new(BufferMode::Ring, 1 << 20)
                .trigger_dir(&new_dir)
                .trigger("stoprace.new/y>1".parse().unwrap())
                .post_window(PostWindow::Events(1));
            log.start(config)
        }
    });
    let start_waited = next_pause(&pauses);
    let start_returned_early = third.is_finished();

    drop(release);
    first.join().unwrap();
    second.join().unwrap();
    let started_after = third.join().unwrap();
    hooks::set(&log, None);
    let old = log.take_trace().expect("the first trace");
    assert!(old.stats().recorded > 0);
    let s = log.triggers();
    assert!(s.dumps.is_empty() || s.dumps.iter().all(|d| d.path.starts_with(&new_dir)), "{s:?}");
    // The second stop did not stop the trace started after the first stop ended.
    assert!(log.is_enabled(), "the new trace is running");
    assert_eq!(log.triggers().dumps.len(), 0, "a new trace starts with no dumps");

    // The new trace's dump thread is alive: its trigger dumps.
    trace_counter!(log: &log, "stoprace.new", "y", 2u64);
    trace_instant!(log: &log, "stoprace.new", "after");
    wait_until("the new trace's trigger never dumped: its dump thread was ended", || {
        log.triggers().dumps.len() == 1
    });
    log.stop();
    started_after.expect("the start after the stop");
    assert_eq!(second_waited, Some(Pause::WaitingForStop), "the second stop waits");
    assert_eq!(start_waited, Some(Pause::WaitingForStop), "the start waits");
    assert!(!start_returned_early, "the start returned while the stop was joining");
}

/// The raced event: its argument, evaluated after the callsite passed its check, restarts the
/// trace with a filter that excludes it.
#[test]
fn a_pool_tenants_event_that_passed_its_check_before_a_restart_is_not_written_into_a_trace_that_excludes_it()
{
    let log = new_log(TraceLogConfig::new().thread_policy(ThreadPolicy::Pool).pool_tenants(1));
    let fixed = |cat: &str| TraceConfig::new(BufferMode::Fixed, 64 << 10).categories(cat).unwrap();
    log.start(fixed("stoprace.pool.a")).unwrap();
    // This thread is now the pool tenant's last writer.
    trace_instant!(log: &log, "stoprace.pool.a", "first");
    trace_instant!(log: &log, "stoprace.pool.a", "raced", "n" => {
        log.stop();
        log.start(fixed("stoprace.pool.b")).unwrap();
        1u64
    });
    trace_instant!(log: &log, "stoprace.pool.b", "inside");
    let first = log.take_trace().unwrap();
    assert_eq!(events(&first).len(), 1);
    let second = stop_and_take(&log);
    let got: Vec<_> = events(&second).iter().map(|e| (e.callsite.category, e.callsite.name)).collect();
    assert_eq!(got, [("stoprace.pool.b", "inside")], "the raced event landed in a trace that excludes it");
    assert_eq!(second.stats().dropped.stopping, 1, "the raced event is counted as stopping");
}

/// One callsite for every fill event (a macro elsewhere would be a new callsite, whose first
/// event inside a busy section is refused).
fn fill(log: &TraceLog, i: u64) {
    trace_instant!(log: log, "stoprace.busy", "fill", "i" => i);
}

/// A Fixed buffer found exhausted while the thread is busy attaching to another log (here the
/// attach hook records, as an instrumented allocator or a signal handler would): its stop
/// callback runs when the attach ends, not at some later control call.
#[test]
fn an_exhaustion_found_while_attaching_runs_the_stop_callback_when_the_attach_ends() {
    let calls = Arc::new(AtomicU64::new(0));
    let full = new_log(TraceLogConfig::default());
    let counted = calls.clone();
    full.start(TraceConfig::new(BufferMode::Fixed, 8 << 10).on_stop(move |_: &TraceLog| {
        counted.fetch_add(1, Ordering::Relaxed);
    }))
    .unwrap();
    let other = started(TraceConfig::new(BufferMode::Fixed, 64 << 10));
    std::thread::spawn({
        let (full, other, calls) = (full.clone(), other.clone(), calls.clone());
        move || {
            // This thread's tenant in `full`, and the callsite registered, before the busy section.
            fill(&full, 0);
            let filler = full.clone();
            hooks::set(
                &other,
                Some(Arc::new(move |at: Pause| {
                    if at == Pause::Attaching {
                        // Two chunks of 127 records: past them the buffer is exhausted.
                        for i in 0..300u64 {
                            fill(&filler, i);
                        }
                    }
                })),
            );
            trace_instant!(log: &other, "stoprace.busy", "attach");
            hooks::set(&other, None);
            assert_eq!(
                calls.load(Ordering::Relaxed),
                1,
                "the stop callback did not run when the attach ended"
            );
            assert!(!full.is_enabled());
        }
    })
    .join()
    .unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    full.stop();
    other.stop();
}

thread_local! {
    /// Set on the thread whose next registry section records a first event (see below).
    static RECORD_IN_REGISTRY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

static REGISTRY_LOG: Mutex<Option<Arc<TraceLog>>> = Mutex::new(None);

/// The registry hook: on the armed thread, a first event of a callsite never seen before, as an
/// instrumented allocator would record while `points::list` holds the registry's lock.
fn record_in_registry() {
    if !RECORD_IN_REGISTRY.with(|r| r.replace(false)) {
        return;
    }
    let log = REGISTRY_LOG.lock().unwrap().clone().unwrap();
    // What `trace_instant!` expands to, minus the linker-section entry: `points::list` would
    // register a listed callsite itself, so this one is unregistered whenever it runs.
    static UNLISTED: Callsite = Callsite::new(CallsiteMeta::new(
        "stoprace.registry",
        "first_event_inside_the_registry",
        Phase::Instant,
        ["", ""],
        file!(),
        line!(),
    ));
    assert!(check(&log, &UNLISTED).is_none(), "a first event inside the registry's lock is refused");
}

#[test]
fn a_first_event_recorded_while_points_holds_the_registry_lock_is_refused_and_counted_not_deadlocked() {
    let log = started(TraceConfig::new(BufferMode::Fixed, 64 << 10));
    *REGISTRY_LOG.lock().unwrap() = Some(log.clone());
    hooks::set_registry_hook(Some(record_in_registry));
    let before = log.stats().registrations_refused;
    let (done, finished) = channel();
    std::thread::spawn(move || {
        RECORD_IN_REGISTRY.with(|r| r.set(true));
        let n = phosphor::points::list().len();
        let _ = done.send(n);
    });
    let listed = finished.recv_timeout(Duration::from_secs(60));
    hooks::set_registry_hook(None);
    assert!(listed.is_ok(), "points::list deadlocked on the registry lock it held");
    let s = log.stats();
    assert!(s.registrations_refused > before, "the refused registration is counted: {s}");
    log.stop();
}

thread_local! {
    /// Set on the thread whose next `set_thread_name` records an event under the table's lock.
    static RECORD_IN_NAMES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

static NAMES_LOG: Mutex<Option<Arc<TraceLog>>> = Mutex::new(None);

/// The name-table hook: on the armed thread, its first event in the log, as an instrumented
/// allocator would record while `set_thread_name` holds the table's lock. Attaching takes the
/// log's control lock, which a fork's `prepare` takes before the name table's: attaching under the
/// table's lock would invert that order, so the event must be dropped (as reentrant), not attach.
fn record_in_names() {
    if !RECORD_IN_NAMES.with(|r| r.replace(false)) {
        return;
    }
    let log = NAMES_LOG.lock().unwrap().clone().unwrap();
    hooks::write_calling(&log, || {});
}

#[test]
fn an_event_recorded_while_set_thread_name_holds_the_name_table_is_dropped_as_reentrant_not_attached() {
    let log = started(TraceConfig::new(BufferMode::Fixed, 64 << 10));
    *NAMES_LOG.lock().unwrap() = Some(log.clone());
    hooks::set_names_hook(Some(record_in_names));
    let (done, finished) = channel();
    std::thread::spawn(move || {
        RECORD_IN_NAMES.with(|r| r.set(true));
        phosphor::set_thread_name("named-under-the-hook");
        let _ = done.send(());
    });
    let named = finished.recv_timeout(Duration::from_secs(60));
    hooks::set_names_hook(None);
    assert!(named.is_ok(), "set_thread_name never returned");
    let s = log.stats();
    assert_eq!(s.dropped.reentrant, 1, "the event recorded under the lock is counted as reentrant: {s}");
    assert_eq!(s.recorded, 0, "{s}");
    log.stop();
}

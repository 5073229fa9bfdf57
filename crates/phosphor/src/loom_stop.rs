//! Loom model of a stop in progress (`trace_log/stop_gate.rs`), built only with
//! `RUSTFLAGS="--cfg loom"` (`scripts/loom.sh loom_stop`).
//!
//! The model is `TraceLog::stop` and `start` reduced to their control lock, their stopper and
//! the buffer: the real `StopGate` (its wait loop and `stop_action`), with loom's `Mutex` and
//! `Condvar`. Two threads stop a running trace while a third starts one. Each trace's buffer is a
//! loom cell: its stopper reads it without the lock (the trigger dump thread's `live_events` and
//! last snapshot, while `stop` joins it), and frees it (writes it) under the lock afterwards. A
//! second stop that freed the buffer during the first one's join, as before this model, is
//! reported by loom as a race on that cell; a stop that waited and then stopped again would free
//! a buffer twice (asserted); a call that waited for ever is a deadlock loom reports.

use std::time::Instant;

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

#[path = "trace_log/stop_gate.rs"]
mod stop_gate;

use stop_gate::{stop_action, StopAction, StopGate};

/// Traces the model can start: the first, running from the outset, and the starter's.
const TRACES: usize = 2;
const LIVE: u32 = 1;
const FREED: u32 = 2;

struct State {
    /// The running trace (its index), if any.
    running: Option<usize>,
    /// The thread stopping it (0: none).
    stopper: u32,
}

struct Log {
    control: Mutex<State>,
    gate: StopGate,
    /// Each trace's buffer: 0 never made, `LIVE`, `FREED`.
    buffers: [UnsafeCell<u32>; TRACES],
    /// Stops that did the work.
    stops: AtomicUsize,
}

fn stop(log: &Log, me: u32) {
    let (mut c, waited) =
        log.gate.wait_while_stopping(log.control.lock().unwrap(), me, |s: &State| s.stopper);
    let stopper = c.running.map(|_| c.stopper);
    let (StopAction::Stop, Some(trace)) = (stop_action(stopper, waited), c.running) else {
        return;
    };
    c.stopper = me;
    drop(c);
    // The join, without the lock: the dump thread still reads this trace's buffer.
    // SAFETY: loom checks that this read is ordered against every write of the cell.
    assert_eq!(log.buffers[trace].with(|b| unsafe { *b }), LIVE, "the buffer was freed during the join");
    let mut c = log.control.lock().unwrap();
    assert_eq!(c.running, Some(trace), "another call took the trace during the stop");
    c.running = None;
    c.stopper = 0;
    // SAFETY: as above; under the lock, as `stop` frees the buffer.
    log.buffers[trace].with_mut(|b| unsafe {
        assert_eq!(*b, LIVE, "a buffer freed twice");
        *b = FREED;
    });
    // Relaxed: read after every thread is joined.
    log.stops.fetch_add(1, Ordering::Relaxed);
    drop(c);
    log.gate.ended();
}

fn start(log: &Log, me: u32, trace: usize) -> bool {
    let (mut c, _) = log.gate.wait_while_stopping(log.control.lock().unwrap(), me, |s: &State| s.stopper);
    if c.running.is_some() {
        return false;
    }
    assert_eq!(c.stopper, 0, "a start during a stop");
    // SAFETY: a new buffer, written under the lock before it is published.
    log.buffers[trace].with_mut(|b| unsafe { *b = LIVE });
    c.running = Some(trace);
    true
}

#[test]
fn two_stops_and_a_start_never_free_a_buffer_under_a_join_nor_stop_twice() {
    let t0 = Instant::now();
    // A std counter, invisible to loom: it only counts executions for the report.
    let runs: &'static std::sync::atomic::AtomicUsize =
        Box::leak(Box::new(std::sync::atomic::AtomicUsize::new(0)));
    // Exhaustive (about 2,000 executions, well under a second) unless `LOOM_MAX_PREEMPTIONS` sets
    // a bound.
    let builder = loom::model::Builder::new();
    builder.check(move || {
        // Relaxed (std atomic, not modelled): a statistic read after `check` returns.
        runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = Arc::new(Log {
            control: Mutex::new(State { running: Some(0), stopper: 0 }),
            gate: StopGate::new(),
            buffers: [UnsafeCell::new(LIVE), UnsafeCell::new(0)],
            stops: AtomicUsize::new(0),
        });
        let stoppers: Vec<_> = (1..=2)
            .map(|me| {
                let log = log.clone();
                thread::spawn(move || stop(&log, me))
            })
            .collect();
        let started = start(&log, 3, 1);
        for s in stoppers {
            s.join().unwrap();
        }
        // Relaxed: every thread is joined.
        let stops = log.stops.load(Ordering::Relaxed);
        let c = log.control.lock().unwrap();
        assert_eq!(c.stopper, 0);
        // The first trace was stopped once; the new one, if it started, at most once, and only
        // by a stop that did not wait (one called after the first stop had ended).
        assert!(stops == 1 || (started && stops == 2), "{stops} stops, started: {started}");
        assert_eq!(c.running.is_some(), started && stops == 1);
    });
    // Relaxed: every execution has finished.
    let runs = runs.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("loom model stop_gate: {runs} executions in {:.2?}", t0.elapsed());
}

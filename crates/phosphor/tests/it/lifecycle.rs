//! Starting, stopping and restarting traces, dropping logs, and reusing their slots.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use phosphor::{
    current_thread_id, trace_instant, BufferMode, ErrorKind, ThreadPolicy, TraceConfig, TraceLog,
    TraceLogConfig,
};

use crate::support::{check_threads_and_order, events, new_log, record_mixed, slot_of, stop_and_take};

#[test]
fn events_before_start_and_after_stop_are_neither_recorded_nor_counted() {
    let log = new_log(TraceLogConfig::default());
    assert!(!log.is_enabled());
    for _ in 0..3 {
        trace_instant!(log: &log, "life", "before");
    }
    assert!(log.take_trace().is_none(), "no trace before the first start");
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 16)).unwrap();
    assert!(log.is_enabled());
    trace_instant!(log: &log, "life", "before"); // the same callsite, now enabled
    trace_instant!(log: &log, "life", "during");
    assert!(log.stats().running);
    log.stop();
    assert!(!log.is_enabled());
    for _ in 0..3 {
        trace_instant!(log: &log, "life", "after");
        trace_instant!(log: &log, "life", "during");
    }
    let trace = log.take_trace().unwrap();
    let names: Vec<&str> = events(&trace).iter().map(|e| e.callsite.name).collect();
    assert_eq!(names, ["before", "during"]);
    assert_eq!(trace.stats().recorded, 2);
    assert_eq!(trace.stats().dropped.total(), 0, "disabled events are not drops");
    assert_eq!(log.stats().dropped.total(), 0);
    assert!(log.take_trace().is_none(), "a trace is taken once");
    log.stop(); // stopping a stopped log does nothing
    assert!(log.take_trace().is_none());
}

#[test]
fn a_log_starts_again_with_another_config_after_stopping() {
    let log = new_log(TraceLogConfig::default());
    let record = |log: &TraceLog| {
        trace_instant!(log: log, "alpha", "a");
        trace_instant!(log: log, "beta", "b");
    };
    log.start(TraceConfig::new(BufferMode::Fixed, 64 << 10).categories("alpha").unwrap()).unwrap();
    record(&log);
    let first = stop_and_take(&log);
    log.start(TraceConfig::new(BufferMode::Ring, 128 << 10).categories("beta").unwrap()).unwrap();
    record(&log);
    record(&log);
    let second = stop_and_take(&log);
    log.start(TraceConfig::new(BufferMode::Fixed, 4096)).unwrap();
    record(&log);
    let third = stop_and_take(&log);
    let names = |t| events(t).iter().map(|e| e.callsite.name).collect::<Vec<_>>();
    assert_eq!(names(&first), ["a"]);
    assert_eq!(names(&second), ["b", "b"]);
    assert_eq!(names(&third), ["a", "b"]);
    assert_eq!(first.stats().chunks_total, 16);
    assert_eq!(second.stats().chunks_total, 32);
    assert_eq!(third.stats().chunks_total, 1);
    assert_eq!(second.stats().recorded, 2, "counters restart with each trace");
}

#[test]
fn starting_a_running_log_fails_with_already_running_and_leaves_the_trace_alone() {
    let log = new_log(TraceLogConfig::default());
    log.start(TraceConfig::new(BufferMode::Fixed, 64 << 10)).unwrap();
    trace_instant!(log: &log, "life", "one");
    let err = log.start(TraceConfig::new(BufferMode::Ring, 128 << 10)).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::AlreadyRunning);
    assert!(log.is_enabled());
    trace_instant!(log: &log, "life", "two");
    let trace = stop_and_take(&log);
    assert_eq!(events(&trace).len(), 2);
    assert_eq!(trace.stats().chunks_total, 16, "the first trace's buffer was kept");
}

#[test]
fn a_thousand_start_stop_cycles_with_four_busy_threads_neither_deadlock_nor_corrupt_traces() {
    const CYCLES: usize = 1_000;
    let (done_tx, done_rx) = mpsc::channel();
    let runner = std::thread::spawn(move || {
        let log = new_log(TraceLogConfig::default());
        let stop = AtomicBool::new(false);
        let emitted = AtomicU64::new(0);
        let tids = Mutex::new(HashMap::new());
        let ready = Barrier::new(5);
        let mut decoded = 0u64;
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (log, stop, emitted, tids, ready) = (&log, &stop, &emitted, &tids, &ready);
                s.spawn(move || {
                    tids.lock().unwrap().insert(t, current_thread_id());
                    ready.wait();
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) {
                        i += record_mixed(log, t, i);
                        if i % 128 == 0 {
                            std::thread::yield_now();
                        }
                    }
                    emitted.fetch_add(i, Ordering::Relaxed);
                });
            }
            ready.wait();
            let tids = tids.lock().unwrap().clone();
            for cycle in 0..CYCLES {
                let mode = if cycle % 2 == 0 { BufferMode::Fixed } else { BufferMode::Ring };
                log.start(TraceConfig::new(mode, 32 << 10)).unwrap();
                for _ in 0..cycle % 4 {
                    std::thread::yield_now();
                }
                let trace = stop_and_take(&log);
                let ev = events(&trace);
                assert_eq!(trace.stats().recorded, ev.len() as u64, "cycle {cycle}: {:?}", trace.stats());
                check_threads_and_order(&ev, &tids);
                decoded += ev.len() as u64;
            }
            stop.store(true, Ordering::Relaxed);
        });
        done_tx.send((decoded, emitted.into_inner())).unwrap();
    });
    let (decoded, emitted) = match done_rx.recv_timeout(Duration::from_secs(120)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("start/stop cycling did not finish in 120 s: deadlock?")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(runner.join().expect_err("the runner ended without reporting"))
        }
    };
    runner.join().unwrap();
    assert!(decoded > 0, "the threads recorded something across {CYCLES} traces");
    assert!(emitted >= decoded);
}

/// A log other than `keep` that has slot `slot`: logs are created, and held while their slot is
/// wrong so the next one gets a higher slot, until one lands in `slot`.
fn log_in_slot(slot: u32, config: TraceLogConfig) -> Arc<TraceLog> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut held = Vec::new();
    loop {
        assert!(Instant::now() < deadline, "slot {slot} never came free");
        match TraceLog::new(config.clone()) {
            Ok(log) if slot_of(&log) == slot => return log,
            Ok(log) => held.push(log),
            Err(e) if matches!(e.kind(), ErrorKind::TooManyInstances { .. }) => {
                held.clear();
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// A worker thread that records 300 mixed events into each log it is sent, then reports its tid.
fn worker() -> (mpsc::Sender<Option<Arc<TraceLog>>>, mpsc::Receiver<u32>, std::thread::JoinHandle<()>) {
    let (cmd_tx, cmd_rx) = mpsc::channel::<Option<Arc<TraceLog>>>();
    let (done_tx, done_rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        while let Ok(Some(log)) = cmd_rx.recv() {
            for i in 0..300 {
                record_mixed(&log, 0, i);
            }
            drop(log);
            done_tx.send(current_thread_id()).unwrap();
        }
    });
    (cmd_tx, done_rx, handle)
}

fn slot_reuse(first: TraceLogConfig, second: TraceLogConfig) {
    let a = new_log(first);
    a.start(TraceConfig::new(BufferMode::Fixed, 64 << 10)).unwrap();
    let slot = slot_of(&a);
    let (cmd, done, handle) = worker();
    cmd.send(Some(Arc::clone(&a))).unwrap();
    let tid = done.recv().unwrap();
    // The worker still holds its tenant of `a`, with a chunk. Drop `a` while it is running.
    assert_eq!(Arc::strong_count(&a), 1);
    drop(a);
    let b = log_in_slot(slot, second);
    b.start(TraceConfig::new(BufferMode::Fixed, 64 << 10)).unwrap();
    cmd.send(Some(Arc::clone(&b))).unwrap();
    assert_eq!(done.recv().unwrap(), tid);
    let trace = stop_and_take(&b);
    let ev = events(&trace);
    let seen = check_threads_and_order(&ev, &HashMap::from([(0, tid)]));
    assert_eq!(seen[&0], (0..300).collect::<Vec<_>>(), "every event landed in the new log");
    assert_eq!(trace.stats().recorded, 300);
    assert_eq!(trace.stats().dropped.total(), 0, "{:?}", trace.stats());
    // Drop `b` as well; the worker then exits holding a dead tenant, which must be harmless.
    drop(b);
    cmd.send(None).unwrap();
    handle.join().unwrap();
}

#[test]
fn a_thread_holding_a_tenant_of_a_dropped_log_records_into_the_new_log_reusing_its_slot() {
    slot_reuse(TraceLogConfig::default(), TraceLogConfig::default());
}

#[test]
fn a_thread_holding_a_pool_tenant_of_a_dropped_log_records_into_the_new_log_reusing_its_slot() {
    let pool = TraceLogConfig::new().thread_policy(ThreadPolicy::Pool).pool_tenants(1);
    slot_reuse(pool.clone(), TraceLogConfig::default());
    slot_reuse(TraceLogConfig::default(), pool);
}

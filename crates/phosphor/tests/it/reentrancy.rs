//! Recording from awkward places: a signal handler that interrupts the recorder on the same
//! thread, and thread-local destructors that run around the recorder's own exit guard.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use phosphor::{current_thread_id, trace_instant, BufferMode, TraceConfig, TraceLog, TraceLogConfig};

use crate::support::{events, new_log, record_mixed, stop_and_take, FILLER};

/// The log the signal handler records into, or null.
static SIGNAL_LOG: AtomicPtr<TraceLog> = AtomicPtr::new(std::ptr::null_mut());
/// Events the signal handler emitted (passed their enabled check).
static HANDLER_EMITTED: AtomicU64 = AtomicU64::new(0);

/// The handler's event; also called once outside the handler to register its callsite.
fn handler_event(log: &TraceLog) {
    trace_instant!(log: log, "signal", "in_handler", "n" => {
        HANDLER_EMITTED.fetch_add(1, Ordering::Relaxed);
        1u64
    });
}

extern "C" fn on_signal(_: libc::c_int) {
    let p = SIGNAL_LOG.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: the test stores a pointer to a log it keeps alive until after it has stopped
        // signalling and joined the signalled thread, and clears it before the log goes.
        handler_event(unsafe { &*p });
    }
}

#[test]
fn a_signal_handler_that_interrupts_the_recorder_is_counted_as_reentrant_and_corrupts_nothing() {
    let log = new_log(TraceLogConfig::default());
    log.start(TraceConfig::new(BufferMode::Ring, 256 << 10)).unwrap();
    SIGNAL_LOG.store(Arc::as_ptr(&log).cast_mut(), Ordering::Release);
    // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; the handler only does
    // what the recorder's hot path does (no allocation, no lock once warm) and atomics.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
    }
    let stop = AtomicBool::new(false);
    let (thread_tx, thread_rx) = mpsc::channel();
    let (recorded_by_thread, tid, signals) = std::thread::scope(|s| {
        let (log, stop) = (&log, &stop);
        let worker = s.spawn(move || {
            // Warm up: attach the tenant and register every callsite before any signal.
            handler_event(log);
            let mut n = 0u64;
            record_mixed(log, 0, 0);
            n += 1;
            // SAFETY: pthread_self has no preconditions.
            thread_tx.send(unsafe { libc::pthread_self() }).unwrap();
            let mut i = 1;
            while !stop.load(Ordering::Relaxed) {
                n += record_mixed(log, 0, i);
                i += 1;
                trace_instant!(log: log, "signal", "dyn", "s" => &FILLER[..(i % 200) as usize]);
                n += 1;
            }
            (n, current_thread_id())
        });
        let target = thread_rx.recv().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut signals = 0u64;
        while signals < 2_000 || (log.stats().dropped.reentrant == 0 && Instant::now() < deadline) {
            // SAFETY: `target` is the worker's pthread id, and the worker runs until `stop` is set
            // below, after the last signal.
            assert_eq!(unsafe { libc::pthread_kill(target, libc::SIGUSR1) }, 0);
            signals += 1;
            std::thread::sleep(Duration::from_micros(50));
        }
        stop.store(true, Ordering::Relaxed);
        let (n, tid) = worker.join().unwrap();
        (n, tid, signals)
    });
    let trace = stop_and_take(&log);
    SIGNAL_LOG.store(std::ptr::null_mut(), Ordering::Release);
    let emitted = recorded_by_thread + HANDLER_EMITTED.load(Ordering::Relaxed);
    let s = trace.stats();
    let ev = events(&trace);
    assert_eq!(s.recorded, ev.len() as u64);
    assert_eq!(s.recorded + s.dropped.total(), emitted, "{s:?}");
    assert!(s.dropped.reentrant > 0, "{signals} signals never landed inside the recorder: {s:?}");
    assert_eq!(s.dropped.total(), s.dropped.reentrant + s.dropped.overwritten, "{s:?}");
    assert!(ev.iter().all(|e| e.tid == tid));
    // Every reentrant drop is a handler's event; the handler got through at other times (its
    // events may since have been overwritten by the ring).
    let handler = HANDLER_EMITTED.load(Ordering::Relaxed);
    assert!(handler > s.dropped.reentrant, "the handler recorded none of its {handler} events: {s:?}");
    // What the worker recorded between the handler's events is intact and in order.
    let mixed: Vec<_> = ev.iter().filter(|e| e.callsite.category == "mix").cloned().collect();
    crate::support::check_threads_and_order(&mixed, &HashMap::from([(0, tid)]));
}

fn destructor_event(log: &TraceLog) {
    trace_instant!(log: log, "tls", "from_destructor");
}

/// A thread local whose destructor records one event into `log`.
struct RecordsOnDrop(Option<Arc<TraceLog>>);

impl Drop for RecordsOnDrop {
    fn drop(&mut self) {
        if let Some(log) = self.0.take() {
            destructor_event(&log);
        }
    }
}

thread_local! {
    static RECORDS_ON_DROP: RefCell<RecordsOnDrop> = const { RefCell::new(RecordsOnDrop(None)) };
}

#[test]
fn events_from_thread_local_destructors_are_recorded_or_counted_as_thread_exited() {
    let log = new_log(TraceLogConfig::default());
    log.start(TraceConfig::new(BufferMode::Fixed, 64 << 10)).unwrap();
    // Register the callsite, so the destructors' events are emitted rather than first-use probes.
    let warm = std::thread::spawn({
        let log = Arc::clone(&log);
        move || destructor_event(&log)
    });
    warm.join().unwrap();
    let tids = Mutex::new(Vec::new());
    for destructor_first in [true, false] {
        let log = Arc::clone(&log);
        let tid = std::thread::spawn(move || {
            if destructor_first {
                // Registered before the recorder's exit guard: destroyed after it, so the event
                // arrives when the thread's tenants are already retired.
                RECORDS_ON_DROP.with(|r| r.borrow_mut().0 = Some(Arc::clone(&log)));
                trace_instant!(log: &log, "tls", "body");
            } else {
                trace_instant!(log: &log, "tls", "body");
                RECORDS_ON_DROP.with(|r| r.borrow_mut().0 = Some(Arc::clone(&log)));
            }
            current_thread_id()
        })
        .join()
        .unwrap();
        tids.lock().unwrap().push(tid);
    }
    let trace = stop_and_take(&log);
    let s = trace.stats();
    let ev = events(&trace);
    // One warm-up event, and per thread one body event plus one destructor event.
    assert_eq!(s.recorded, ev.len() as u64);
    assert_eq!(s.recorded + s.dropped.total(), 5, "{s:?}");
    assert_eq!(s.dropped.total(), s.dropped.thread_exited, "{s:?}");
    assert_eq!(ev.iter().filter(|e| e.callsite.name == "body").count(), 2);
    let from_destructors = ev.iter().filter(|e| e.callsite.name == "from_destructor").count() - 1;
    assert_eq!(from_destructors as u64 + s.dropped.thread_exited, 2);
}

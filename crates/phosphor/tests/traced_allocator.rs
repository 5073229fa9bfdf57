//! A global allocator that records an event for every allocation, as an instrumented allocator
//! would. The recorder's own slow paths allocate (attaching a thread's tenant, registering a
//! callsite) while holding its locks, so the events they cause must neither deadlock nor go
//! uncounted. This needs its own test binary: a global allocator is per binary.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use phosphor::{trace_instant, BufferMode, TraceConfig, TraceLog, TraceLogConfig};

static LOG: OnceLock<Arc<TraceLog>> = OnceLock::new();
/// Events the allocator emitted (each one passed or failed the enabled check inside the macro;
/// the macro only records when the log traces the category, which it always does here).
static ALLOC_EVENTS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Only the test thread's allocations are traced, and not while the allocator itself runs.
    static TRACING: Cell<bool> = const { Cell::new(false) };
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

struct TracingAlloc;

// SAFETY: every method forwards to `System` unchanged; the event recorded beside it does not
// touch the allocation.
unsafe impl GlobalAlloc for TracingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let traced = TRACING.try_with(|t| t.get()).unwrap_or(false)
            && INSIDE.try_with(|i| !i.replace(true)).unwrap_or(false);
        if traced {
            if let Some(log) = LOG.get() {
                ALLOC_EVENTS.fetch_add(1, Ordering::Relaxed);
                alloc_event(log, layout.size());
            }
            let _ = INSIDE.try_with(|i| i.set(false));
        }
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: TracingAlloc = TracingAlloc;

/// The allocator's one callsite.
fn alloc_event(log: &TraceLog, size: usize) {
    trace_instant!(log: log, "alloc", "alloc", "size" => size);
}

#[test]
fn events_from_an_instrumented_allocator_inside_the_recorder_neither_deadlock_nor_go_uncounted() {
    let log = LOG.get_or_init(|| TraceLog::new(TraceLogConfig::default()).unwrap());
    // The allocator's callsite registers on its first use, outside the recorder, as in a program
    // whose allocator has run before. (While the recorder's slow path runs, an unregistered
    // callsite counts as disabled: registering would take the registry lock again.)
    alloc_event(log, 0);
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let log = LOG.get().unwrap();
        TRACING.with(|t| t.set(true));
        // The thread's first event attaches a tenant (allocating under the control lock), and its
        // callsite's first use registers it (allocating under the registry lock): each allocation
        // records an event from inside those slow paths.
        for i in 0..100u64 {
            trace_instant!(log: log, "test", "event", "i" => i);
        }
        TRACING.with(|t| t.set(false));
        done.send(()).unwrap();
    });
    finished
        .recv_timeout(Duration::from_secs(30))
        .expect("the recording thread deadlocked on an event from its own allocator");
    log.stop();
    let trace = log.take_trace().unwrap();
    let emitted = 100 + ALLOC_EVENTS.load(Ordering::Relaxed);
    let stats = trace.stats();
    assert_eq!(stats.recorded + stats.dropped.total(), emitted, "{stats:?}");
    assert!(ALLOC_EVENTS.load(Ordering::Relaxed) > 0, "the slow paths allocated nothing?");
    assert!(stats.dropped.reentrant > 0, "events from inside the slow paths are counted: {stats:?}");
    assert_eq!(stats.recorded, trace.events().count() as u64);
}

//! Issue 17 §3: the recorder's own locks under an instrumented global allocator that records an
//! event for every allocation. A path that holds a log's control lock and allocates must not
//! re-enter the recorder through that event and wait for the lock it holds: neither a panic
//! hook's dump (`dump_on_panic`, on a thread that had never recorded), nor a streaming trace's
//! collector while `stop` waits for it.
//!
//! A test binary of its own: a global allocator is per binary. A hang here is the failure, so
//! each test has a watchdog that aborts the binary, saying which test hung, after 60 s.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::Duration;

use phosphor::format::file::Reader;
use phosphor::stream::{MemorySink, Sink, StreamConfig};
use phosphor::{trace_instant, BufferMode, TraceConfig, TraceLog};

/// Every thread's allocations are recorded (the recorder's own threads included).
static ALL_THREADS: AtomicBool = AtomicBool::new(false);
/// Allocation events that passed their check (the argument that counts them runs only then).
static EMITTED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's allocations are recorded, whatever `ALL_THREADS` says.
    static ARMED: Cell<bool> = const { Cell::new(false) };
    /// The allocator is recording an event on this thread: an allocation the event's own slow
    /// path makes is not recorded again (the recursion guard an instrumented allocator needs).
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

struct RecordingAlloc;

// SAFETY: `alloc` and `dealloc` forward to `System` unchanged; the event recorded beside an
// allocation does not touch it. The thread locals are const-initialised without destructors, so
// reading them never allocates.
unsafe impl GlobalAlloc for RecordingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: RecordingAlloc = RecordingAlloc;

/// Records an allocation of `size` bytes if this thread's allocations are recorded now.
fn record(size: usize) {
    // Relaxed: a switch; a thread that sees it late records a few allocations more or fewer.
    let on = ALL_THREADS.load(Ordering::Relaxed) || ARMED.try_with(Cell::get).unwrap_or(false);
    if !on || INSIDE.try_with(|i| i.replace(true)).unwrap_or(true) {
        return;
    }
    alloc_event(size);
    let _ = INSIDE.try_with(|i| i.set(false));
}

/// The allocator's one callsite, in the global log.
fn alloc_event(size: usize) {
    // Relaxed: a count read after the threads that add to it are joined.
    trace_instant!("alloc", "alloc", "size" => { EMITTED.fetch_add(1, Ordering::Relaxed); size });
}

/// The tests share the global log and the allocator's switches: one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Aborts the process if it is not dropped within 60 s: a hang fails loudly, naming `test`,
/// instead of blocking the test run. Dropped at the end of the test, or by its unwinding when an
/// assertion fails (which is a failure, not a hang).
struct Watchdog(#[allow(dead_code)] mpsc::Sender<()>);

fn watchdog(test: &'static str) -> Watchdog {
    let (tx, rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(Duration::from_secs(60)) {
            // Straight to stderr: the test harness captures `eprintln!`, and would never show it.
            let _ = writeln!(std::io::stderr(), "alloc_reentry: {test} hung (not done after 60 s); aborting");
            std::process::abort();
        }
    });
    Watchdog(tx)
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("alloc-reentry");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

/// `dump_on_panic`'s snapshot (`try_snapshot`) holds the control lock and allocates; a thread that
/// has never recorded panics, so its first event, from that allocation, attaches a tenant, which
/// takes the control lock. Today that thread waits for itself for ever.
#[test]
fn a_panic_dump_completes_when_the_panicking_thread_first_records_from_the_hooks_allocations() {
    let _serial = serial();
    let _dog =
        watchdog("a_panic_dump_completes_when_the_panicking_thread_first_records_from_the_hooks_allocations");
    let path = scratch("panic.phos");
    // The allocator's callsite registers on its first use, here, as in a program whose allocator
    // has run before: the test is about the control lock, not the registry's.
    alloc_event(0);
    let log = TraceLog::global();
    // The streaming test stops its trace while threads allocate: an event that passed its check
    // before that `stop` and was written after it is counted as `stopping` in the *next* trace's
    // figures (the documented rule), with its `EMITTED` counted back then. A trace started and
    // stopped here takes such stragglers, so the one below counts only this test's events.
    log.start(TraceConfig::new(BufferMode::Ring, 1 << 20)).unwrap();
    log.stop();
    drop(log.take_trace());
    log.start(TraceConfig::new(BufferMode::Ring, 1 << 20)).unwrap();
    phosphor::recorder::dump_on_panic(log, &path);
    for i in 0..100u64 {
        trace_instant!("alloc-test", "before", "i" => i);
    }
    let before = EMITTED.load(Ordering::Relaxed);
    // A thread that has never recorded panics. Its first events come from the allocations of the
    // panic hook's snapshot, made while the hook holds the log's control lock: attaching the
    // thread's tenant must not wait for that lock. `panic!` with a literal allocates nothing
    // before the hook runs, so the hook's allocations are the thread's first events.
    let panicked = std::thread::spawn(|| {
        ARMED.with(|a| a.set(true));
        panic!("alloc_reentry: a deliberate panic");
    })
    .join();
    assert!(panicked.is_err(), "the thread panicked");
    let emitted = 100 + EMITTED.load(Ordering::Relaxed) - before;
    assert!(emitted > 100, "the panicking thread's allocations were recorded");
    let bytes = std::fs::read(&path).expect("the panic hook wrote its dump");
    let mut r = Reader::new(&bytes[..]).expect("the dump is a trace file");
    let mut main_events = 0;
    r.for_each_event(|e| main_events += u64::from(e.callsite.name == "before")).unwrap();
    assert!(r.trailer().is_some(), "the dump is whole");
    assert_eq!(main_events, 100, "the dump holds the events recorded before the panic");
    log.stop();
    let trace = log.take_trace().unwrap();
    let s = trace.stats();
    assert_eq!(s.recorded + s.dropped.total(), emitted, "recorded + dropped == emitted: {s:?}");
}

/// The streaming collector's periodic flush (`flush_partial_chunks`) holds the control lock and
/// allocates; if that is the collector's first recorded event, attaching its tenant waits for the
/// lock the collector holds, and `stop`, which needs the lock and then joins the collector, waits
/// for ever too.
#[test]
fn stop_returns_while_every_threads_allocations_record_into_a_streaming_trace() {
    let _serial = serial();
    let _dog = watchdog("stop_returns_while_every_threads_allocations_record_into_a_streaming_trace");
    alloc_event(0); // registered outside the recorder, as above
    let log = TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Stream, 4 << 20)).unwrap();
    let mem = MemorySink::new();
    let id = log.open_stream(StreamConfig::new(Sink::Memory(mem.clone()))).unwrap();
    let go = Arc::new(AtomicBool::new(true));
    let progress = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let (go, progress) = (go.clone(), progress.clone());
            std::thread::spawn(move || {
                // Relaxed: a stop flag and a progress counter.
                while go.load(Ordering::Relaxed) {
                    let v: Vec<u64> =
                        Vec::with_capacity(1 + progress[t].load(Ordering::Relaxed) as usize % 64);
                    std::hint::black_box(v);
                    progress[t].fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    // Relaxed: progress counters.
    while progress.iter().any(|p| p.load(Ordering::Relaxed) < 1000) {
        std::thread::yield_now();
    }
    // The allocator starts recording once the trace runs, on every thread (as one whose point is
    // enabled at run time would): the collector thread, whose own start-up allocations were not
    // recorded, then makes its first recorded allocation in its periodic flush of quiet threads
    // (every 5 ms), which holds the log's control lock. 50 ms is ten such flushes before `stop`.
    // Relaxed: see `record`.
    ALL_THREADS.store(true, Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(50));
    log.stop(); // must return while the threads allocate: the watchdog aborts the test otherwise
                // Relaxed: as above.
    ALL_THREADS.store(false, Ordering::Relaxed);
    go.store(false, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let s = log.stream_stats(id).unwrap();
    let bytes = mem.bytes();
    let mut r = Reader::new(&bytes[..]).expect("the stream is a trace file");
    let mut n = 0u64;
    r.for_each_event(|_| n += 1).unwrap();
    assert!(r.trailer().is_some(), "stop finished the stream");
    assert!(n > 0, "allocation events reached the stream");
    assert_eq!(n, s.events_written, "the stream holds what it says it wrote");
}

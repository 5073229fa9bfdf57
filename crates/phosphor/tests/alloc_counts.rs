//! Issue 23 §3: `phosphor::alloc::Traced` as the global allocator, and the allocations each scope
//! records (`phosphor/scope_alloc`, right after the scope's complete event) when its trace counts
//! them. A test binary of its own: a global allocator is per binary.
//!
//! Every scope under test allocates only through `Box::new` of a known size into storage made
//! before the scope opened, so its exact counts are known; the recorder's own allocations (a
//! thread's first event attaches a tenant, a callsite's first use registers it) must stay out of
//! them. A hang is a failure: the threads that could deadlock report through channels with
//! timeouts.

use std::alloc::System;
use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

use phosphor::alloc::{
    heap_totals, installed, thread_allocations, unmatched_scopes, unslotted_threads, Traced, MARKS, SLOTS,
};
use phosphor::format::file::Value;
use phosphor::format::system::{PHOSPHOR_CATEGORY, SCOPE_ALLOC_ARGS, SCOPE_ALLOC_NAME};
use phosphor::points::{Point, PointKind};
use phosphor::trigger::Trigger;
use phosphor::{
    trace_complete, trace_instant, trace_lock_guard, trace_scope, BufferMode, ErrorKind, Phase, ThreadPolicy,
    Trace, TraceConfig, TraceLog, TraceLogConfig,
};

#[global_allocator]
static ALLOC: Traced<System> = Traced::new(System);

/// A new log, waiting for a free slot while the other tests hold many.
fn new_log(config: TraceLogConfig) -> Arc<TraceLog> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match TraceLog::new(config.clone()) {
            Ok(log) => return log,
            Err(e) if matches!(e.kind(), ErrorKind::TooManyInstances { .. }) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => panic!("TraceLog::new failed: {e}"),
        }
    }
}

fn counting(mode: BufferMode, bytes: usize) -> TraceConfig {
    TraceConfig::new(mode, bytes).allocations(true)
}

fn stop_and_take(log: &TraceLog) -> Trace {
    log.stop();
    log.take_trace().expect("a stopped log has a trace")
}

/// A scope's recorded allocations: its name, its thread, and the counts.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Counted {
    scope: String,
    tid: u32,
    allocs: u64,
    bytes: u64,
}

/// Every `scope_alloc` event of `trace`, each with the complete event it follows, which must be
/// its thread's, must end when the instant is stamped, and must be a scope.
fn counted(trace: &Trace) -> Vec<Counted> {
    let (paired, orphans) = pairs(trace);
    assert_eq!(orphans, 0, "every scope_alloc follows its scope");
    paired
}

/// The `scope_alloc` events of `trace` that follow their scope's complete event, and how many do
/// not (their slice was overwritten or dropped: each of the two events is recorded or dropped on
/// its own).
fn pairs(trace: &Trace) -> (Vec<Counted>, usize) {
    let events: Vec<_> = trace.events().map(|e| e.expect("every event decodes")).collect();
    let (mut paired, mut orphans) = (Vec::new(), 0);
    for (i, e) in events.iter().enumerate() {
        if e.callsite.category != PHOSPHOR_CATEGORY || e.callsite.name != SCOPE_ALLOC_NAME {
            continue;
        }
        assert_eq!(e.phase(), Phase::Instant);
        assert_eq!(e.callsite.arg_names, SCOPE_ALLOC_ARGS);
        let arg = |k: usize| match e.args[k] {
            Some((_, Value::U64(v))) => v,
            other => panic!("argument {k} of scope_alloc: {other:?}"),
        };
        // Its scope: the event before it, a slice of the same thread that ends at its time.
        let scope = i.checked_sub(1).map(|j| &events[j]).filter(|s| {
            s.phase() == Phase::Complete && s.tid == e.tid && s.duration.map(|d| s.ts + d) == Some(e.ts)
        });
        match scope {
            Some(s) => paired.push(Counted {
                scope: s.callsite.name.to_string(),
                tid: e.tid,
                allocs: arg(0),
                bytes: arg(1),
            }),
            None => orphans += 1,
        }
    }
    (paired, orphans)
}

/// `n` boxes of 64 bytes, pushed into `keep` (which has the room, so it does not allocate).
#[allow(clippy::vec_box)] // the boxes are the allocations under test
fn boxes(keep: &mut Vec<Box<[u8; 64]>>, n: usize) {
    for i in 0..n {
        keep.push(black_box(Box::new([i as u8; 64])));
    }
}

#[test]
fn traced_is_the_global_allocator_of_this_binary() {
    assert!(installed());
    let before = thread_allocations();
    let b = black_box(Box::new([0u8; 100]));
    let after = thread_allocations();
    drop(b);
    assert_eq!((after.0 - before.0, after.1 - before.1), (1, 100));
}

#[test]
fn a_realloc_counts_one_allocation_of_the_new_size_and_alloc_zeroed_counts_one() {
    let mut v: Vec<u8> = Vec::with_capacity(8);
    let before = thread_allocations();
    v.reserve_exact(100); // realloc from 8 bytes to 100
    let grown = thread_allocations();
    let zeroed = black_box(vec![0u8; 50]); // alloc_zeroed
    let after = thread_allocations();
    assert_eq!(v.capacity(), 100);
    assert_eq!((grown.0 - before.0, grown.1 - before.1), (1, 100));
    assert_eq!((after.0 - grown.0, after.1 - grown.1), (1, 50));
    drop(zeroed);
}

#[test]
fn a_scope_that_allocates_1000_times_64_bytes_records_1000_allocations_and_64000_bytes() {
    let log = new_log(TraceLogConfig::default());
    log.start(counting(BufferMode::Fixed, 1 << 20)).unwrap();
    let mut keep = Vec::with_capacity(2000);
    // The thread's first event and the callsites' first uses happen inside the scopes: the
    // recorder's allocations for them are its own, not the scopes'.
    {
        trace_scope!(log: &log, "alloc", "outer");
        {
            trace_scope!(log: &log, "alloc", "inner");
            boxes(&mut keep, 400);
        }
        boxes(&mut keep, 600);
        {
            trace_scope!(log: &log, "alloc", "empty");
        }
    }
    drop(keep);
    let trace = stop_and_take(&log);
    let tid = phosphor::current_thread_id();
    let got = counted(&trace);
    let want = [("inner", 400, 25_600), ("empty", 0, 0), ("outer", 1000, 64_000)];
    let want: Vec<Counted> =
        want.iter().map(|&(s, allocs, bytes)| Counted { scope: s.into(), tid, allocs, bytes }).collect();
    assert_eq!(got, want, "nested scopes' counts are inclusive");
    let stats = trace.stats();
    assert_eq!(stats.recorded, 6, "three slices and their three instants: {stats:?}");
    assert_eq!(stats.dropped.total(), 0);
}

#[test]
fn a_trace_without_allocations_records_no_scope_alloc_events() {
    let log = new_log(TraceLogConfig::default());
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    let mut keep = Vec::with_capacity(10);
    {
        trace_scope!(log: &log, "alloc", "uncounted");
        boxes(&mut keep, 10);
    }
    let trace = stop_and_take(&log);
    assert_eq!(counted(&trace), []);
    assert_eq!(trace.stats().recorded, 1, "the slice alone");
}

#[test]
fn a_log_that_does_not_count_is_unaffected_by_one_that_does_on_the_same_callsite() {
    let counting_log = new_log(TraceLogConfig::default());
    let plain_log = new_log(TraceLogConfig::default());
    counting_log.start(counting(BufferMode::Fixed, 1 << 20)).unwrap();
    plain_log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    let mut keep = Vec::with_capacity(20);
    for log in [&counting_log, &plain_log, &counting_log] {
        // One callsite, recorded in either log.
        trace_scope!(log: log, "alloc", "shared");
        boxes(&mut keep, 5);
    }
    let counted_trace = stop_and_take(&counting_log);
    let plain_trace = stop_and_take(&plain_log);
    let tid = phosphor::current_thread_id();
    let five = || Counted { scope: "shared".into(), tid, allocs: 5, bytes: 320 };
    assert_eq!(counted(&counted_trace), [five(), five()]);
    assert_eq!(counted(&plain_trace), []);
    assert_eq!(plain_trace.stats().recorded, 1);
}

/// Threads that allocate and free as fast as they can until `stop`.
fn allocating_threads(n: usize, stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
    (0..n)
        .map(|_| {
            let stop = Arc::clone(stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    drop(black_box(vec![0u8; 1000]));
                }
            })
        })
        .collect()
}

#[test]
fn other_threads_allocations_are_not_counted_and_counts_hold_under_load() {
    let stop = Arc::new(AtomicBool::new(false));
    // Two allocating threads and two busy loops: the counted thread is preempted often.
    let mut others = allocating_threads(2, &stop);
    others.extend((0..2).map(|_| {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    }));
    let log = new_log(TraceLogConfig::default());
    log.start(counting(BufferMode::Ring, 1 << 20)).unwrap();
    let mut keep = Vec::with_capacity(64);
    for _ in 0..300 {
        {
            trace_scope!(log: &log, "alloc", "loaded");
            boxes(&mut keep, 64);
            std::thread::yield_now();
        }
        keep.clear();
    }
    let trace = stop_and_take(&log);
    stop.store(true, Ordering::Relaxed);
    for t in others {
        t.join().unwrap();
    }
    let got = counted(&trace);
    assert_eq!(got.len(), 300, "{:?}", trace.stats());
    for c in got {
        assert_eq!((c.allocs, c.bytes), (64, 4096), "{c:?}");
    }
}

#[test]
fn chunk_swaps_and_a_first_attach_inside_scopes_never_deadlock_and_keep_the_counts_exact() {
    for mode in [BufferMode::Ring, BufferMode::Fixed] {
        // 16 chunks; 300 instants per scope swap chunks inside every scope.
        let log = new_log(TraceLogConfig::default());
        log.start(counting(mode, 16 * 4096)).unwrap();
        let (done, finished) = mpsc::channel();
        let thread_log = Arc::clone(&log);
        std::thread::spawn(move || {
            let log = thread_log;
            let mut keep = Vec::with_capacity(10);
            // This thread's first event is its first scope's open: its tenant attaches inside it.
            for _ in 0..5 {
                {
                    trace_scope!(log: &log, "alloc", "swapping");
                    for i in 0..300u64 {
                        trace_instant!(log: &log, "alloc", "filler", "i" => i);
                    }
                    boxes(&mut keep, 10);
                }
                keep.clear();
            }
            done.send(phosphor::current_thread_id()).unwrap();
        });
        let tid = finished.recv_timeout(Duration::from_secs(60)).expect("the recording thread deadlocked");
        let trace = stop_and_take(&log);
        let got = counted(&trace);
        let stats = trace.stats();
        // 1,510 events: about 12 chunk swaps, and room for them all in 16 chunks of 127 records.
        assert_eq!((stats.recorded, stats.dropped.total()), (5 * 302, 0), "{mode:?}: {stats:?}");
        assert_eq!(got.len(), 5, "{mode:?}");
        for c in got {
            assert_eq!(c, Counted { scope: "swapping".into(), tid, allocs: 10, bytes: 640 }, "{mode:?}");
        }
    }
}

#[test]
fn recorded_and_dropped_events_add_up_to_the_emitted_ones_while_counting() {
    const THREADS: usize = 4;
    const SCOPES: u64 = 20_000;
    // A small ring under a pool of two tenants: overwrites and contended drops are both likely.
    let log = new_log(TraceLogConfig::new().thread_policy(ThreadPolicy::Pool).pool_tenants(2));
    log.start(counting(BufferMode::Ring, 8 * 4096)).unwrap();
    let start = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let (log, start) = (Arc::clone(&log), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                for i in 0..SCOPES {
                    trace_scope!(log: &log, "alloc", "stress", "i" => i);
                    drop(black_box(Box::new(i)));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let trace = stop_and_take(&log);
    let stats = trace.stats();
    // Each scope emits its slice and its instant.
    assert_eq!(stats.recorded + stats.dropped.total(), THREADS as u64 * SCOPES * 2, "{stats:?}");
    let (paired, _orphans) = pairs(&trace);
    assert!(!paired.is_empty(), "{stats:?}");
    for c in paired {
        assert_eq!((c.scope.as_str(), c.allocs, c.bytes), ("stress", 1, 8), "{c:?}");
    }
}

#[test]
fn heap_totals_sum_every_thread_and_keep_the_exited_ones() {
    let before = heap_totals().expect("Traced is installed");
    let unslotted = unslotted_threads();
    // More threads than slots, one after the other: each exit releases its slot for the next.
    for _ in 0..SLOTS + 44 {
        std::thread::spawn(|| drop(black_box(vec![0u8; 1000]))).join().unwrap();
    }
    assert_eq!(unslotted_threads(), unslotted, "exited threads release their slots");
    let (allocs, bytes) = std::thread::spawn(|| {
        let before = thread_allocations();
        for _ in 0..10_000 {
            drop(black_box(vec![0u8; 4096]));
        }
        let after = thread_allocations();
        (after.0 - before.0, after.1 - before.1)
    })
    .join()
    .unwrap();
    assert_eq!((allocs, bytes), (10_000, 40_960_000), "the thread's own counts");
    let after = heap_totals().unwrap();
    // Other tests allocate meanwhile, so the totals grew by at least what these threads did.
    assert!(after.allocs - before.allocs >= 10_000 + SLOTS as u64 + 44, "{before:?} {after:?}");
    assert!(after.alloc_bytes - before.alloc_bytes >= 40_960_000 + 1000 * (SLOTS as u64 + 44));
    assert!(after.frees - before.frees >= 10_000 + SLOTS as u64 + 44);
    assert!(after.freed_bytes - before.freed_bytes >= 40_960_000 + 1000 * (SLOTS as u64 + 44));

    // More threads than slots at once: the rest count through the shared fallback, still exact.
    const AT_ONCE: usize = SLOTS + 20;
    let before = heap_totals().unwrap();
    let barrier = Arc::new(Barrier::new(AT_ONCE));
    let handles: Vec<_> = (0..AT_ONCE)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                drop(black_box(vec![0u8; 100_000]));
                barrier.wait();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let after = heap_totals().unwrap();
    assert!(unslotted_threads() - unslotted >= 20, "{} threads went without a slot", unslotted_threads());
    assert!(after.alloc_bytes - before.alloc_bytes >= 100_000 * AT_ONCE as u64, "{before:?} {after:?}");
    assert!(after.freed_bytes - before.freed_bytes >= 100_000 * AT_ONCE as u64);
}

/// Opens a counting scope `depth` deep: each level allocates one box, recurses, and allocates
/// another on its way out (so a level's count depends on which mark its close takes).
#[allow(clippy::vec_box)] // the boxes are the allocations under test
fn recurse(log: &TraceLog, keep: &mut Vec<Box<[u8; 64]>>, depth: usize) {
    trace_scope!(log: log, "alloc", "deep");
    boxes(keep, 1);
    if depth > 1 {
        recurse(log, keep, depth - 1);
    }
    boxes(keep, 1);
}

/// The counts `recurse(levels)` records: its `MARKS` innermost levels, innermost first (level d, 1
/// being the outermost, holds two boxes of its own and two of each level inside it).
fn recursion_counts(levels: usize, tid: u32) -> Vec<Counted> {
    (levels.saturating_sub(MARKS) as u64 + 1..=levels as u64)
        .rev()
        .map(|d| {
            let boxes = 2 * (levels as u64 - d + 1);
            Counted { scope: "deep".into(), tid, allocs: boxes, bytes: 64 * boxes }
        })
        .collect()
}

#[test]
fn a_recursion_deeper_than_the_mark_stack_loses_its_outermost_counts_and_keeps_the_inner_ones_exact() {
    const EXTRA: usize = 10;
    let levels = MARKS + EXTRA;
    let log = new_log(TraceLogConfig::default());
    log.start(counting(BufferMode::Fixed, 1 << 20)).unwrap();
    let mut keep = Vec::with_capacity(2 * levels);
    let unmatched = unmatched_scopes();
    recurse(&log, &mut keep, levels);
    let after = unmatched_scopes();
    drop(keep);
    let trace = stop_and_take(&log);
    let want = recursion_counts(levels, phosphor::current_thread_id());
    assert_eq!(counted(&trace), want, "the inner {MARKS} levels are exact");
    assert_eq!(
        trace.stats().recorded,
        (levels + MARKS) as u64,
        "every slice, and the counted levels' instants"
    );
    // Other tests of this binary may add their own meanwhile.
    assert!(after - unmatched >= EXTRA as u64, "the {EXTRA} outermost levels are counted as unmatched");
}

/// An argument of a scope that panics.
fn panicking_argument() -> u64 {
    panic!("an argument of a counting scope")
}

#[test]
fn marks_that_no_close_takes_never_keep_later_counting_scopes_from_their_counts() {
    let moved = Point::new("alloc", "moved_away", PointKind::Interval).unwrap();
    let log = new_log(TraceLogConfig::default());
    log.start(counting(BufferMode::Fixed, 1 << 20)).unwrap();
    // More than the stack holds of each way a mark can be left behind, with no scope around them.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for _ in 0..MARKS + 1 {
        let r = std::panic::catch_unwind(|| {
            trace_scope!(log: &log, "alloc", "panicking", "n" => panicking_argument());
        });
        assert!(r.is_err());
    }
    std::panic::set_hook(hook);
    for _ in 0..MARKS + 1 {
        let g = moved.scope_in(&log);
        std::thread::scope(|s| {
            s.spawn(move || drop(g));
        });
    }
    for _ in 0..MARKS + 1 {
        std::mem::forget(moved.scope_in(&log));
    }
    let mut keep = Vec::with_capacity(6);
    for _ in 0..3 {
        trace_scope!(log: &log, "alloc", "after_the_leaks");
        boxes(&mut keep, 2);
    }
    drop(keep);
    let trace = stop_and_take(&log);
    let tid = phosphor::current_thread_id();
    let after = Counted { scope: "after_the_leaks".into(), tid, allocs: 2, bytes: 128 };
    let got: Vec<_> = counted(&trace).into_iter().filter(|c| c.scope == "after_the_leaks").collect();
    assert_eq!(got, [after.clone(), after.clone(), after]);
}

#[test]
fn an_inner_guard_forgotten_leaves_the_outer_scope_exact() {
    let inner = Point::new("alloc", "forgotten", PointKind::Interval).unwrap();
    let log = new_log(TraceLogConfig::default());
    log.start(counting(BufferMode::Fixed, 1 << 20)).unwrap();
    let mut keep = Vec::with_capacity(30);
    {
        trace_scope!(log: &log, "alloc", "outer");
        boxes(&mut keep, 10);
        for _ in 0..3 {
            let g = inner.scope_in(&log);
            boxes(&mut keep, 5);
            std::mem::forget(g); // its mark stays on the stack, its close never comes
        }
        {
            trace_scope!(log: &log, "alloc", "after");
            boxes(&mut keep, 2);
        }
    }
    drop(keep);
    // The forgotten marks went with the outer scope's close: the whole stack is free again.
    let mut keep = Vec::with_capacity(2 * MARKS);
    recurse(&log, &mut keep, MARKS);
    drop(keep);
    let trace = stop_and_take(&log);
    let tid = phosphor::current_thread_id();
    let c = |scope: &str, allocs: u64| Counted { scope: scope.into(), tid, allocs, bytes: 64 * allocs };
    let mut want = vec![c("after", 2), c("outer", 27)];
    want.extend(recursion_counts(MARKS, tid));
    assert_eq!(counted(&trace), want);
}

#[test]
fn a_lock_guard_or_a_complete_event_in_a_counting_trace_records_no_scope_alloc_and_leaves_the_scope_exact() {
    let m = std::sync::Mutex::new(0u64);
    let log = new_log(TraceLogConfig::default());
    log.start(counting(BufferMode::Fixed, 1 << 20)).unwrap();
    let mut keep = Vec::with_capacity(10);
    {
        trace_scope!(log: &log, "alloc", "outer");
        {
            let mut g = trace_lock_guard!(log: &log, "alloc", "lock", m.lock().unwrap());
            *g += 1;
            boxes(&mut keep, 4);
        }
        trace_complete!(log: &log, "alloc", "complete", log.now(), Duration::from_nanos(5));
        boxes(&mut keep, 1);
    }
    drop(keep);
    let trace = stop_and_take(&log);
    let tid = phosphor::current_thread_id();
    assert_eq!(counted(&trace), [Counted { scope: "outer".into(), tid, allocs: 5, bytes: 320 }]);
}

#[test]
fn a_scope_that_a_trigger_watches_and_a_trace_counts_fires_and_records_its_counts() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("alloc_counts").join("trigger");
    let _ = std::fs::remove_dir_all(&dir);
    let config = counting(BufferMode::Ring, 1 << 20).trigger_dir(&dir).trigger(Trigger::slower_than(
        "alloc",
        "watched",
        Duration::from_millis(20),
    ));
    let log = new_log(TraceLogConfig::default());
    log.start(config).unwrap();
    let mut keep = Vec::with_capacity(10);
    for slow in [false, true] {
        trace_scope!(log: &log, "alloc", "watched");
        boxes(&mut keep, if slow { 7 } else { 3 });
        if slow {
            std::thread::sleep(Duration::from_millis(30));
        }
    }
    drop(keep);
    let deadline = Instant::now() + Duration::from_secs(60);
    while log.triggers().dumps.is_empty() {
        assert!(Instant::now() < deadline, "no dump: {:?}", log.triggers());
        std::thread::sleep(Duration::from_millis(2));
    }
    let status = log.triggers();
    assert_eq!(status.fired, 1, "only the slow scope fires: {status:?}");
    let trace = stop_and_take(&log);
    let tid = phosphor::current_thread_id();
    let c = |allocs: u64| Counted { scope: "watched".into(), tid, allocs, bytes: 64 * allocs };
    assert_eq!(counted(&trace), [c(3), c(7)]);
}

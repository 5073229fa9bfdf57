//! No silent loss: `recorded + dropped == emitted` exactly, and `recorded` is what decodes, for
//! every buffer mode and tenant policy, with many threads, and with threads that exit mid-trace.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

use phosphor::{
    current_thread_id, trace_instant, BufferMode, ThreadPolicy, Trace, TraceConfig, TraceLog, TraceLogConfig,
};

use crate::support::{check_threads_and_order, events, new_log, record_mixed, stop_and_take};

/// A finished multi-threaded run.
struct Run {
    trace: Trace,
    emitted: u64,
    /// Logical thread index → OS thread id.
    tids: HashMap<u64, u32>,
}

/// Runs `threads` threads that each record `per_thread` mixed events into a new log, joins them,
/// stops, and checks the accounting invariant and that each event carries its recorder's tid in
/// per-thread order.
fn run(log_config: TraceLogConfig, trace_config: TraceConfig, threads: u64, per_thread: u64) -> Run {
    let log = new_log(log_config);
    log.start(trace_config).unwrap();
    let start = Barrier::new(threads as usize);
    let tids: HashMap<u64, u32> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (log, start) = (&log, &start);
                s.spawn(move || {
                    start.wait();
                    for i in 0..per_thread {
                        record_mixed(log, t, i);
                    }
                    (t, current_thread_id())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let trace = stop_and_take(&log);
    let run = Run { trace, emitted: threads * per_thread, tids };
    check_exact(&run);
    run
}

/// The accounting invariant, and recorded == decoded.
fn check_exact(run: &Run) -> HashMap<u64, Vec<u64>> {
    let stats = run.trace.stats();
    let ev = events(&run.trace);
    assert_eq!(
        stats.recorded,
        ev.len() as u64,
        "recorded must count exactly the decodable events: {stats:?}"
    );
    assert_eq!(
        stats.recorded + stats.dropped.total(),
        run.emitted,
        "recorded + dropped must equal emitted ({} emitted): {stats:?}",
        run.emitted
    );
    assert!(!stats.running);
    check_threads_and_order(&ev, &run.tids)
}

#[test]
fn a_fixed_buffer_big_enough_for_every_event_records_all_of_them() {
    let r = run(TraceLogConfig::default(), TraceConfig::new(BufferMode::Fixed, 8 << 20), 4, 4_000);
    let s = r.trace.stats();
    assert_eq!(s.dropped.total(), 0, "{s:?}");
    assert_eq!(s.recorded, 16_000);
    assert!(!s.buffer_exhausted);
    let seen = check_exact(&r);
    for (t, v) in seen {
        assert_eq!(v, (0..4_000).collect::<Vec<_>>(), "thread {t} lost or reordered events");
    }
}

#[test]
fn a_ring_buffer_big_enough_for_every_event_overwrites_nothing() {
    let r = run(TraceLogConfig::default(), TraceConfig::new(BufferMode::Ring, 8 << 20), 4, 4_000);
    let s = r.trace.stats();
    assert_eq!(s.dropped.total(), 0, "{s:?}");
    assert_eq!(s.chunks_overwritten, 0);
    assert_eq!(s.recorded, 16_000);
}

#[test]
fn a_fixed_buffer_too_small_counts_buffer_full_drops_disables_tracing_and_calls_on_stop_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let enabled_in_callback = Arc::new(AtomicBool::new(true));
    let config = {
        let (calls, enabled_in_callback) = (Arc::clone(&calls), Arc::clone(&enabled_in_callback));
        TraceConfig::new(BufferMode::Fixed, 64 << 10).on_stop(move |log: &TraceLog| {
            calls.fetch_add(1, Ordering::SeqCst);
            enabled_in_callback.store(log.is_enabled(), Ordering::SeqCst);
        })
    };
    let log = new_log(TraceLogConfig::default());
    log.start(config).unwrap();
    assert!(log.is_enabled());
    let tids: HashMap<u64, u32> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4u64)
            .map(|t| {
                let log = &log;
                s.spawn(move || {
                    for i in 0..4_000 {
                        record_mixed(log, t, i);
                    }
                    (t, current_thread_id())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(!log.is_enabled(), "a full Fixed buffer turns tracing off");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the stop callback runs exactly once");
    assert!(!enabled_in_callback.load(Ordering::SeqCst), "is_enabled() is already false in the callback");
    let live = log.stats();
    assert!(live.running && live.buffer_exhausted);
    let trace = stop_and_take(&log);
    let r = Run { trace, emitted: 16_000, tids };
    check_exact(&r);
    let s = r.trace.stats();
    assert!(s.buffer_exhausted);
    assert!(s.dropped.buffer_full > 0, "{s:?}");
    assert_eq!(s.dropped.total(), s.dropped.buffer_full, "only buffer_full drops: {s:?}");
    assert_eq!(s.chunks_total, 16);
    assert_eq!(s.chunks_loaned, 16, "every chunk was used");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "stopping does not call the callback again");
}

#[test]
fn the_stop_callback_may_stop_the_trace_from_the_recording_thread() {
    let log = new_log(TraceLogConfig::default());
    log.start(TraceConfig::new(BufferMode::Fixed, 16 << 10).on_stop(|log: &TraceLog| log.stop())).unwrap();
    let mut emitted = 0u64;
    while log.is_enabled() {
        trace_instant!(log: &log, "cb", "tick", "n" => emitted);
        emitted += 1;
        assert!(emitted < 1_000_000, "the buffer never filled");
    }
    // The callback stopped the trace: later events are not even emitted.
    trace_instant!(log: &log, "cb", "after");
    let trace = log.take_trace().expect("the callback's stop left a trace");
    let s = trace.stats();
    assert_eq!(events(&trace).len() as u64, s.recorded);
    assert_eq!(s.recorded + s.dropped.total(), emitted, "{s:?}");
    assert_eq!(s.dropped.buffer_full, 1, "only the event that found the buffer full was dropped");
    assert_eq!((s.chunks_total, s.chunks_loaned), (4, 4), "16 KiB is four chunks, all of them filled");
    assert!(s.buffer_exhausted);
    assert!(log.take_trace().is_none());
}

#[test]
fn a_ring_buffer_smaller_than_the_volume_counts_overwritten_events_and_keeps_the_newest() {
    let r = run(TraceLogConfig::default(), TraceConfig::new(BufferMode::Ring, 64 << 10), 4, 4_000);
    let s = r.trace.stats();
    assert!(s.dropped.overwritten > 0 && s.chunks_overwritten > 0, "{s:?}");
    assert_eq!(s.dropped.total(), s.dropped.overwritten, "only overwrites: {s:?}");
    assert!(!s.buffer_exhausted);
    // The ring overwrites each thread's chunks oldest first, so what survives of a thread is a
    // suffix of what it recorded (possibly empty, if the thread finished early).
    let seen = check_exact(&r);
    assert!(!seen.is_empty());
    for (t, v) in &seen {
        let first = v[0];
        assert_eq!(*v, (first..4_000).collect::<Vec<_>>(), "thread {t} kept a non-suffix");
    }
}

#[test]
fn a_ring_buffer_with_fewer_chunks_than_threads_counts_no_chunk_drops() {
    let log = new_log(TraceLogConfig::default());
    log.start(TraceConfig::new(BufferMode::Ring, 4096)).unwrap();
    let first_done = Barrier::new(4);
    let tids: HashMap<u64, u32> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4u64)
            .map(|t| {
                let (log, first_done) = (&log, &first_done);
                s.spawn(move || {
                    // One chunk, four threads: whoever loans it first keeps it past the barrier,
                    // so the other three first events find no chunk.
                    record_mixed(log, t, 0);
                    first_done.wait();
                    for i in 1..500 {
                        record_mixed(log, t, i);
                    }
                    (t, current_thread_id())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let trace = stop_and_take(&log);
    let r = Run { trace, emitted: 2_000, tids };
    check_exact(&r);
    let s = r.trace.stats();
    assert!(s.dropped.no_chunk >= 3, "{s:?}");
    assert_eq!(s.chunks_total, 1);
}

/// Events each pool thread records in its turn of the second phase.
const TURN_EVENTS: u64 = 200;

/// A pool run in two phases. First every thread records as fast as it can until a contended drop
/// has been seen (or a cap is reached), so that contention really happens. Then the threads take
/// turns, each recording `TURN_EVENTS` events while the others wait, so that every thread
/// certainly writes through the shared tenants: when they all race, a thread preempted inside
/// its critical section can block its pool-mates for a whole time slice, and on a busy machine
/// one thread may end up the only one that gets through.
fn pool_run(pool_tenants: usize, threads: u64, mode: BufferMode) -> Run {
    let log = new_log(TraceLogConfig::new().thread_policy(ThreadPolicy::Pool).pool_tenants(pool_tenants));
    log.start(TraceConfig::new(mode, 16 << 20)).unwrap();
    let stop = AtomicBool::new(false);
    let emitted = AtomicU64::new(0);
    let turns = Barrier::new(threads as usize + 1);
    let tids: HashMap<u64, u32> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (log, stop, emitted, turns) = (&log, &stop, &emitted, &turns);
                s.spawn(move || {
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) && i < 100_000 {
                        i += record_mixed(log, t, i);
                    }
                    for turn in 0..threads {
                        turns.wait();
                        if turn == t {
                            for _ in 0..TURN_EVENTS {
                                i += record_mixed(log, t, i);
                            }
                        }
                    }
                    turns.wait();
                    emitted.fetch_add(i, Ordering::Relaxed);
                    (t, current_thread_id())
                })
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(10);
        while log.stats().dropped.contended == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, Ordering::Relaxed);
        for _ in 0..=threads {
            turns.wait();
        }
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let trace = stop_and_take(&log);
    let r = Run { trace, emitted: emitted.into_inner(), tids };
    let seen = check_exact(&r);
    let s = r.trace.stats();
    assert!(s.dropped.contended > 0, "no contention in 10 s: {s:?}");
    assert_eq!(seen.len() as u64, threads, "every thread wrote through the pool");
    for (t, v) in &seen {
        // The turns came last and uncontended: each thread's last TURN_EVENTS events are there.
        let last = *v.last().unwrap();
        let tail: Vec<u64> = v.iter().copied().filter(|&i| i + TURN_EVENTS > last).collect();
        assert_eq!(tail, (last + 1 - TURN_EVENTS..=last).collect::<Vec<_>>(), "thread {t}'s turn");
    }
    r
}

/// Every writer stream's sequence numbers: pool tenants are streams 1..=`pool_tenants` whatever
/// thread started a chunk, threads' own tenants are stream 0 keyed by thread.
fn stream_seqs(trace: &phosphor::Trace) -> std::collections::BTreeMap<(u16, u32), Vec<u64>> {
    let mut streams = std::collections::BTreeMap::<(u16, u32), Vec<u64>>::new();
    for c in trace.chunks() {
        let stream = (c.seq >> phosphor::format::file::SEQ_STREAM_SHIFT) as u16;
        let key = if stream == 0 { (0, c.tid) } else { (stream, 0) };
        streams.entry(key).or_default().push(c.seq & ((1 << phosphor::format::file::SEQ_STREAM_SHIFT) - 1));
    }
    for v in streams.values_mut() {
        v.sort_unstable();
    }
    streams
}

#[test]
fn pool_tenants_number_their_chunks_as_writer_streams_without_gaps() {
    let r = pool_run(3, 4, BufferMode::Fixed);
    let streams = stream_seqs(&r.trace);
    assert!(streams.keys().all(|&(s, _)| (1..=3).contains(&s)), "only pool streams: {:?}", streams.keys());
    for (key, seqs) in &streams {
        assert_eq!(*seqs, (0..seqs.len() as u64).collect::<Vec<_>>(), "stream {key:?} has a gap");
    }
    // Threads' own tenants are stream 0, one per thread.
    let r = run(TraceLogConfig::default(), TraceConfig::new(BufferMode::Fixed, 16 << 20), 3, 20_000);
    let streams = stream_seqs(&r.trace);
    assert_eq!(streams.len(), 3, "{:?}", streams.keys());
    for (key, seqs) in &streams {
        assert_eq!(key.0, 0);
        assert_eq!(*seqs, (0..seqs.len() as u64).collect::<Vec<_>>(), "stream {key:?} has a gap");
    }
}

#[test]
fn one_pool_tenant_shared_by_four_threads_counts_contention_and_keeps_each_threads_id() {
    let r = pool_run(1, 4, BufferMode::Fixed);
    let s = r.trace.stats();
    assert_eq!(s.dropped.total(), s.dropped.contended + s.dropped.buffer_full, "{s:?}");
    let distinct: std::collections::HashSet<u32> = events(&r.trace).iter().map(|e| e.tid).collect();
    assert_eq!(distinct.len(), 4);
}

#[test]
fn two_pool_tenants_shared_by_five_threads_in_a_ring_account_for_every_event() {
    let r = pool_run(2, 5, BufferMode::Ring);
    let s = r.trace.stats();
    assert_eq!(s.dropped.total(), s.dropped.contended + s.dropped.overwritten, "{s:?}");
}

#[test]
fn threads_that_exit_mid_trace_lose_none_of_their_events() {
    // Two full chunks and a partial one.
    const PER_THREAD: u64 = 300;
    // The long-lived thread's events at most: about 80 of the buffer's 1,024 chunks of 4 KiB
    // (a chunk holds about 128 of `record_mixed`'s events).
    const LONG_LIVED_CAP: u64 = 10_000;
    let log = new_log(TraceLogConfig::default());
    log.start(TraceConfig::new(BufferMode::Fixed, 4 << 20)).unwrap();
    let mut tids = HashMap::new();
    // A long-lived thread keeps recording while short-lived ones come and go.
    let keep_going = AtomicBool::new(true);
    let long_lived_events = std::thread::scope(|s| {
        let long = {
            let (log, keep_going) = (&log, &keep_going);
            s.spawn(move || {
                let mut i = 0;
                while keep_going.load(Ordering::Relaxed) || i < 100 {
                    if i >= LONG_LIVED_CAP {
                        // However slowly a loaded machine spawns and joins the short-lived
                        // threads, the buffer is not filled (a CI run of this test recorded
                        // until 9,817 events were dropped as the buffer's): it waits for them.
                        std::thread::sleep(Duration::from_millis(1));
                        continue;
                    }
                    i += record_mixed(log, 1_000, i);
                    if i % 64 == 0 {
                        std::thread::yield_now();
                    }
                }
                (i, current_thread_id())
            })
        };
        for t in 0..8u64 {
            let log = &log;
            let tid = std::thread::spawn({
                let log = Arc::clone(log);
                move || {
                    for i in 0..PER_THREAD {
                        record_mixed(&log, t, i);
                    }
                    current_thread_id()
                }
            })
            .join()
            .unwrap();
            tids.insert(t, tid);
            // The exited threads' chunks were handed back at exit, so they already count.
            let live = log.stats();
            assert!(live.running);
            assert!(
                live.recorded >= (t + 1) * PER_THREAD,
                "after {} threads exited only {} events are recorded",
                t + 1,
                live.recorded
            );
        }
        keep_going.store(false, Ordering::Relaxed);
        let (n, tid) = long.join().unwrap();
        tids.insert(1_000, tid);
        n
    });
    // Record after the exits too, from this thread.
    let me = current_thread_id();
    tids.insert(2_000, me);
    for i in 0..10 {
        record_mixed(&log, 2_000, i);
    }
    let trace = stop_and_take(&log);
    let r = Run { trace, emitted: 8 * PER_THREAD + long_lived_events + 10, tids };
    let seen = check_exact(&r);
    assert_eq!(r.trace.stats().dropped.total(), 0);
    for t in 0..8 {
        assert_eq!(seen[&t], (0..PER_THREAD).collect::<Vec<_>>(), "exited thread {t}");
    }
    // The log keeps working once the retired tenants are pruned.
    log.start(TraceConfig::new(BufferMode::Ring, 64 << 10)).unwrap();
    record_mixed(&log, 2_000, 0);
    let again = stop_and_take(&log);
    assert_eq!(events(&again).len(), 1);
    assert_eq!(again.stats().recorded, 1);
}

#[test]
fn pool_threads_that_exit_mid_trace_lose_none_of_their_events() {
    let log = new_log(TraceLogConfig::new().thread_policy(ThreadPolicy::Pool).pool_tenants(2));
    log.start(TraceConfig::new(BufferMode::Fixed, 4 << 20)).unwrap();
    let mut tids = HashMap::new();
    for t in 0..6u64 {
        let l = Arc::clone(&log);
        let tid = std::thread::spawn(move || {
            for i in 0..200 {
                record_mixed(&l, t, i);
            }
            current_thread_id()
        })
        .join()
        .unwrap();
        tids.insert(t, tid);
    }
    let trace = stop_and_take(&log);
    let r = Run { trace, emitted: 6 * 200, tids };
    let seen = check_exact(&r);
    assert_eq!(r.trace.stats().dropped.total(), 0, "threads ran one at a time: no contention");
    assert_eq!(seen.len(), 6);
    assert!(seen.values().all(|v| v.len() == 200));
}

/// Records one event into `log` whose argument, evaluated after the enabled check and before the
/// write, reports in on `entered` and waits for `proceed`: the event is emitted, then held in
/// flight while the test stops the trace. The callsite is used once first, so it is registered.
fn event_held_in_flight(log: &TraceLog, entered: mpsc::Sender<()>, proceed: mpsc::Receiver<()>) {
    for hold in [false, true] {
        trace_instant!(log: log, "late", "in_flight", "v" => {
            if hold {
                entered.send(()).unwrap();
                proceed.recv().unwrap();
            }
            1u64
        });
    }
}

/// Starts `log`, emits one event that is held in flight until the trace has stopped, and
/// returns the stopped trace (taken before the held event is let go).
fn race_one_event_with_stop(log: &TraceLog) -> Trace {
    log.start(TraceConfig::new(BufferMode::Fixed, 64 << 10)).unwrap();
    let (entered_tx, entered_rx) = mpsc::channel();
    let (proceed_tx, proceed_rx) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| event_held_in_flight(log, entered_tx, proceed_rx));
        entered_rx.recv().unwrap();
        let trace = stop_and_take(log);
        proceed_tx.send(()).unwrap();
        trace
    })
}

#[test]
fn an_event_in_flight_when_the_trace_stops_is_counted_as_a_stopping_drop() {
    let log = new_log(TraceLogConfig::default());
    let trace = race_one_event_with_stop(&log);
    // Two events were emitted: the first was recorded, the second was in flight at stop.
    assert_eq!(trace.stats().recorded, 1);
    let after = log.stats();
    assert_eq!(after.recorded + after.dropped.total(), 2, "{after:?}");
    assert_eq!(after.dropped.stopping, 1, "{after:?}");
}

#[test]
fn a_drop_that_raced_with_stop_is_still_counted_after_the_next_start() {
    let log = new_log(TraceLogConfig::default());
    let first = race_one_event_with_stop(&log);
    assert_eq!(log.stats().dropped.stopping, 1, "counted once the event lands");
    log.start(TraceConfig::new(BufferMode::Fixed, 64 << 10)).unwrap();
    let during = log.stats();
    let second = stop_and_take(&log);
    // Two events were emitted, both before the second start. Each must be counted somewhere:
    // in the first trace, in the second, or in the log's figures.
    let accounted = first.stats().recorded
        + first.stats().dropped.total()
        + second.stats().recorded
        + second.stats().dropped.total();
    assert_eq!(
        accounted,
        2,
        "the in-flight event's drop vanished: first {:?}, while the second ran {during:?}, second {:?}, now {:?}",
        first.stats(),
        second.stats(),
        log.stats()
    );
}

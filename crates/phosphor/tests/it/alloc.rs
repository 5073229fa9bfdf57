//! The hot path allocates nothing: once a thread is warm (its tenant attached and every callsite
//! registered), recording events of every kind, swapping chunks, overwriting a ring and dropping
//! events leaves this thread's allocation counter where it was.

use std::hint::black_box;
use std::sync::Mutex;
use std::time::Duration;

use phosphor::{
    trace_async_begin, trace_async_end, trace_begin, trace_complete, trace_counter, trace_end, trace_instant,
    trace_lock_guard, trace_scope, BufferMode, Static, ThreadPolicy, TraceConfig, TraceLog, TraceLogConfig,
};

use crate::support::{allocation_counts, events, new_log, stop_and_take};

/// One round of every kind of event: 14 events, three of them with dynamic strings.
fn round(log: &TraceLog, i: u64, m: &Mutex<u64>, owned: &String, long: &str) -> u64 {
    trace_instant!(log: log, "hot", "instant", "i" => i, "neg" => -(i as i64));
    trace_instant!(log: log, "hot", "static", "s" => Static("static label"), "f" => i as f64 * 0.5);
    {
        trace_scope!(log: log, "hot", "scope", "i" => i, "b" => i % 2 == 0);
    }
    trace_counter!(log: log, "hot", "counter", i);
    trace_counter!(log: log, "hot", "fcounter", 1.5f64);
    trace_begin!(log: log, "hot", "slice", "p" => owned as *const String);
    trace_end!(log: log, "hot", "slice");
    trace_complete!(log: log, "hot", "complete", log.now(), Duration::from_nanos(i), "i" => i);
    trace_async_begin!(log: log, "hot", "async", i, "s" => Static("x"));
    trace_async_end!(log: log, "hot", "async", i);
    trace_instant!(log: log, "hot", "dyn", "d" => "a borrowed dynamic string", "o" => owned);
    trace_instant!(log: log, "hot", "long", "d" => long, "i" => i);
    {
        let mut g = trace_lock_guard!(log: log, "hot", "lock", m.lock().unwrap());
        *g += 1;
    }
    14
}

/// Warms a thread up on `log`, then records `rounds` rounds and returns the events emitted and
/// the allocations and deallocations made while recording.
fn measure(log: &TraceLog, rounds: u64) -> (u64, u64, u64) {
    let m = Mutex::new(0);
    let owned = String::from("an owned dynamic string");
    let long = "ł".repeat(200); // 400 bytes: cut to 256, flagged
                                // Warm up: attach the tenant, register every callsite, arm the exit guard.
    let mut emitted = round(log, 0, &m, &owned, &long);
    let (a0, d0) = allocation_counts();
    for i in 1..rounds {
        emitted += round(log, black_box(i), &m, &owned, &long);
    }
    let (a1, d1) = allocation_counts();
    (emitted, a1 - a0, d1 - d0)
}

fn check_zero_allocations(
    log_config: TraceLogConfig,
    trace_config: TraceConfig,
    rounds: u64,
) -> phosphor::Trace {
    let log = new_log(log_config);
    log.start(trace_config).unwrap();
    // Record on a fresh thread, so nothing this test thread did before counts.
    let (emitted, allocs, deallocs) =
        std::thread::scope(|s| s.spawn(|| measure(&log, rounds)).join().unwrap());
    let trace = stop_and_take(&log);
    assert_eq!(allocs, 0, "{allocs} allocations while recording {emitted} events");
    assert_eq!(deallocs, 0, "{deallocs} deallocations while recording {emitted} events");
    let s = trace.stats();
    assert_eq!(s.recorded + s.dropped.total(), emitted, "{s:?}");
    assert_eq!(s.recorded, events(&trace).len() as u64);
    trace
}

#[test]
fn recording_every_kind_of_event_through_a_ring_allocates_nothing() {
    // 7,150 rounds = 100,100 events; a 256 KiB ring (64 chunks) is swapped and overwritten
    // thousands of times.
    let trace = check_zero_allocations(
        TraceLogConfig::default(),
        TraceConfig::new(BufferMode::Ring, 256 << 10),
        7_150,
    );
    let s = trace.stats();
    assert!(s.chunks_loaned > 1_000 && s.dropped.overwritten > 0, "chunks were swapped: {s:?}");
}

#[test]
fn dropping_events_into_a_full_fixed_buffer_allocates_nothing() {
    let trace = check_zero_allocations(
        TraceLogConfig::default(),
        TraceConfig::new(BufferMode::Fixed, 64 << 10),
        2_000,
    );
    let s = trace.stats();
    assert!(s.buffer_exhausted && s.dropped.buffer_full > 0, "the buffer filled: {s:?}");
}

#[test]
fn recording_through_a_pool_tenant_allocates_nothing() {
    let trace = check_zero_allocations(
        TraceLogConfig::new().thread_policy(ThreadPolicy::Pool).pool_tenants(2),
        TraceConfig::new(BufferMode::Ring, 256 << 10),
        2_000,
    );
    assert!(trace.stats().chunks_loaned > 100);
}

/// This binary's global allocator is a plain counter, not `phosphor::alloc::Traced`: a trace
/// that asks for allocations records none (every count would be 0), and there are no heap totals.
#[test]
fn without_traced_as_the_global_allocator_a_counting_trace_records_no_scope_alloc() {
    assert!(!phosphor::alloc::installed());
    assert_eq!(phosphor::alloc::heap_totals(), None);
    let log = new_log(TraceLogConfig::default());
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20).allocations(true)).unwrap();
    {
        trace_scope!(log: &log, "alloc", "not_counted");
        drop(black_box(vec![0u8; 64]));
    }
    let trace = stop_and_take(&log);
    let names: Vec<&str> = events(&trace).iter().map(|e| e.callsite.name).collect();
    assert_eq!(names, ["not_counted"]);
}

//! Helpers shared by the test modules: logs that tolerate the slot limit, decoding, a mixed
//! workload whose every event says which thread recorded it and in what order, and the counting
//! allocator's per-thread counters.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use phosphor::{
    trace_async_begin, trace_complete, trace_instant, trace_scope, ArgValue, ErrorKind, Event, Trace,
    TraceConfig, TraceLog, TraceLogConfig,
};

/// A new independent log. Another test may hold most of the 32 slots for a moment (the
/// `TooManyInstances` test does on purpose), so a full table is retried for a while.
pub fn new_log(config: TraceLogConfig) -> Arc<TraceLog> {
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

/// A new default log with a trace already running.
pub fn started(trace: TraceConfig) -> Arc<TraceLog> {
    let log = new_log(TraceLogConfig::default());
    log.start(trace).expect("start");
    log
}

/// Every event of `trace`, failing the test on a decode error.
pub fn events(trace: &Trace) -> Vec<Event<'_>> {
    trace
        .events()
        .enumerate()
        .map(|(i, e)| e.unwrap_or_else(|err| panic!("event {i} does not decode: {err}")))
        .collect()
}

/// Stops `log` and takes its trace.
pub fn stop_and_take(log: &TraceLog) -> Trace {
    log.stop();
    log.take_trace().expect("a stopped log has a trace")
}

/// The log's slot, read from its `Debug` output (`TraceLog { slot: 3, .. }`); the slot is not
/// public, but the slot-reuse test must know that two logs share one.
pub fn slot_of(log: &TraceLog) -> u32 {
    let s = format!("{log:?}");
    let rest = s.split("slot: ").nth(1).unwrap_or_else(|| panic!("no slot in {s}"));
    rest.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

/// ASCII filler for dynamic strings; any prefix is a valid `&str`.
pub static FILLER: &str = concat!(
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_0123456789abcdefghijklmnopqrstu",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_0123456789abcdefghijklmnopqrstu",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_0123456789abcdefghijklmnopqrstu",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_0123456789abcdefghijklmnopqrstu",
);

/// The length of the dynamic string of mixed event `i`: 0 to 299 bytes, so some events need no
/// continuation record, most need several, and some are cut at 256 bytes.
pub fn dyn_len(i: u64) -> usize {
    ((i * 37) % 300) as usize
}

/// Records event number `i` of logical thread `thread`: one event, of one of four kinds in turn
/// (an instant, a scope, a complete event, and an async begin whose dynamic string needs
/// continuation records). Every kind carries `thread` and `i` so that [`identity`] can tell who
/// recorded it and when. Returns the number of events emitted: 1.
pub fn record_mixed(log: &TraceLog, thread: u64, i: u64) -> u64 {
    match i % 4 {
        0 => trace_instant!(log: log, "mix", "instant", "t" => thread, "i" => i),
        1 => {
            trace_scope!(log: log, "mix", "scope", "t" => thread, "i" => i);
        }
        2 => {
            trace_complete!(log: log, "mix", "complete", log.now(), Duration::from_nanos(i), "t" => thread, "i" => i)
        }
        _ => trace_async_begin!(log: log, "mix", "dyn", thread, "i" => i, "s" => &FILLER[..dyn_len(i)]),
    }
    1
}

/// `(thread, i)` of an event recorded by [`record_mixed`].
pub fn identity(e: &Event<'_>) -> (u64, u64) {
    let i = match e.arg("i") {
        Some(ArgValue::U64(i)) => i,
        other => panic!("event {} has no u64 \"i\": {other:?}", e.callsite.name),
    };
    let t = match e.callsite.name {
        "dyn" => {
            let s = match e.arg("s") {
                Some(ArgValue::Str(s)) => s,
                other => panic!("dyn event without its string: {other:?}"),
            };
            let want = dyn_len(i).min(256);
            assert_eq!(s, &FILLER[..want], "the dynamic string of event {i} came back wrong");
            assert_eq!(e.truncated, dyn_len(i) > 256, "truncation flag of event {i}");
            e.async_id.expect("async id")
        }
        _ => match e.arg("t") {
            Some(ArgValue::U64(t)) => t,
            other => panic!("event {} has no u64 \"t\": {other:?}", e.callsite.name),
        },
    };
    (t, i)
}

/// Checks that every event of `events` was recorded by the OS thread that [`record_mixed`] says,
/// and that each thread's events come out in the order it recorded them. Returns the events per
/// logical thread.
pub fn check_threads_and_order(events: &[Event<'_>], tids: &HashMap<u64, u32>) -> HashMap<u64, Vec<u64>> {
    let mut seen: HashMap<u64, Vec<u64>> = HashMap::new();
    for e in events {
        let (t, i) = identity(e);
        let tid = *tids.get(&t).unwrap_or_else(|| panic!("event from unknown logical thread {t}"));
        assert_eq!(e.tid, tid, "event {i} of thread {t} carries the wrong tid");
        let v = seen.entry(t).or_default();
        if let Some(&last) = v.last() {
            assert!(i > last, "thread {t}: event {i} came out after event {last}");
        }
        v.push(i);
    }
    seen
}

// The counting allocator's per-thread tallies (the allocator itself is in main.rs).
/// `(allocations, deallocations)` made by this thread so far.
pub fn allocation_counts() -> (u64, u64) {
    (phosphor_testalloc::allocations(), phosphor_testalloc::deallocations())
}

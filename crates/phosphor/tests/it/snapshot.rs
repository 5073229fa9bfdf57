//! Dumps on demand: `TraceLog::snapshot` copies what a running trace holds without stopping it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use phosphor::format::file::Reader;
use phosphor::{trace_instant, ArgValue, BufferMode, ErrorKind, TraceConfig, TraceLog, TraceLogConfig};

use crate::support::{events, new_log, started, stop_and_take};

fn seqs(trace: &phosphor::Trace, tid: u32) -> Vec<u64> {
    events(trace)
        .iter()
        .filter(|e| e.tid == tid && e.callsite.name == "snap-ev")
        .map(|e| match e.arg("i") {
            Some(ArgValue::U64(i)) => i,
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn a_snapshot_holds_every_event_so_far_and_tracing_goes_on() {
    let log = started(TraceConfig::new(BufferMode::Ring, 1 << 20));
    let tid = phosphor::current_thread_id();
    for i in 0..300u64 {
        trace_instant!(log: &log, "snap", "snap-ev", "i" => i);
    }
    let first = log.snapshot().unwrap();
    assert_eq!(seqs(&first, tid), (0..300).collect::<Vec<_>>());
    assert_eq!(first.stats().recorded, 300);
    for i in 300..500u64 {
        trace_instant!(log: &log, "snap", "snap-ev", "i" => i);
    }
    let second = log.snapshot().unwrap();
    assert_eq!(seqs(&second, tid), (0..500).collect::<Vec<_>>());
    // The snapshot is a valid trace file, and its chunk sequence has no gap: the thread's stream
    // went on where the flush left it.
    let bytes = second.write_to(Vec::new()).unwrap();
    let mut r = Reader::new(&bytes[..]).unwrap();
    let mut seq = Vec::new();
    while let Some(c) = r.next_chunk().unwrap() {
        seq.push(c.extents.stream_seq());
    }
    assert_eq!(seq, (0..seq.len() as u64).collect::<Vec<_>>());
    let done = stop_and_take(&log);
    assert_eq!(seqs(&done, tid), (0..500).collect::<Vec<_>>());
    assert_eq!(done.stats().recorded, 500);
}

#[test]
fn a_snapshot_needs_a_running_trace() {
    let log = new_log(TraceLogConfig::default());
    assert!(matches!(log.snapshot().unwrap_err().kind(), ErrorKind::NotRunning));
}

#[test]
fn a_hundred_snapshots_while_four_threads_log_all_read_cleanly_and_lose_nothing() {
    // A small ring, so chunks are overwritten between and during the dumps.
    let log: Arc<TraceLog> = started(TraceConfig::new(BufferMode::Ring, 64 << 12));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let (log, stop) = (log.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0u64;
                // Relaxed: a stop flag; the count is returned through join.
                while !stop.load(Ordering::Relaxed) || i < 20_000 {
                    trace_instant!(log: &log, "snap", "snap-ev", "i" => i);
                    i += 1;
                }
                (phosphor::current_thread_id(), i)
            })
        })
        .collect();
    for _ in 0..100 {
        let snap = log.snapshot().unwrap();
        let bytes = snap.write_to(Vec::new()).unwrap();
        let mut r = Reader::new(&bytes[..]).unwrap();
        let mut n = 0u64;
        r.for_each_event(|_| n += 1).unwrap();
        assert_eq!(n, snap.stats().recorded, "every event of the dump reads back");
        // Each thread's events in a dump are in the order it emitted them.
        let mut last = std::collections::HashMap::new();
        for e in events(&snap) {
            let Some(ArgValue::U64(i)) = e.arg("i") else { continue };
            if let Some(prev) = last.insert(e.tid, i) {
                assert!(i > prev, "thread {} went from {prev} to {i}", e.tid);
            }
        }
    }
    // Relaxed: see above.
    stop.store(true, Ordering::Relaxed);
    let emitted: u64 = writers.into_iter().map(|w| w.join().unwrap().1).sum();
    let trace = stop_and_take(&log);
    let s = trace.stats();
    assert_eq!(s.recorded + s.dropped.total(), emitted, "no event unaccounted for: {s}");
}

//! Dumps on demand: `TraceLog::snapshot` copies what a running trace holds without stopping it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
fn a_recovered_ring_trusts_only_committed_records() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("snapshot-torn");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ring = dir.join("t.ring");
    let log = started(TraceConfig::new(BufferMode::Ring, 1 << 16).file_backed(&ring));
    for i in 0..3u64 {
        trace_instant!(log: &log, "snap", "snap-ev", "i" => i);
    }
    // A torn event: garbage written in the record after the committed ones, as a writer killed in
    // the middle of an event leaves it (its count never published).
    let mut bytes = std::fs::read(&ring).unwrap();
    let chunks = phosphor::format::file::ring::RING_HEADER_BYTES;
    let tid = phosphor::current_thread_id();
    let mut torn = 0;
    for c in 0..(1 << 16) / 4096 {
        let base = chunks + c * 4096;
        let at = phosphor::format::file::ring::chunk_at::TID;
        if u32::from_le_bytes(bytes[base + at..base + at + 4].try_into().unwrap()) == tid {
            bytes[base + 3 * 32..base + 4 * 32].fill(0xa5);
            torn += 1;
        }
    }
    assert_eq!(torn, 1, "the thread's one chunk");
    let trace = phosphor::format::file::ring::recover(&bytes).unwrap();
    let mut r = Reader::new(&trace[..]).unwrap();
    let mut got = Vec::new();
    r.for_each_event(|e| got.push(format!("{:?}", e.arg("i")))).unwrap();
    let want: Vec<String> =
        (0..3u64).map(|i| format!("{:?}", Some(phosphor::format::file::Value::U64(i)))).collect();
    assert_eq!(got, want);
    log.stop();
}

/// A chunk whose committed count is corrupt (0xFFFFFFFF, read as a whole chunk of records that
/// were never written) costs its own garbage only: its events before the garbage are recovered
/// (the chunk was dropped whole), and so is the chunk after it. A ring file cut short is
/// "truncated", not "bad magic".
#[test]
fn a_corrupt_committed_count_hides_no_other_chunk_and_a_short_ring_is_truncated() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("snapshot-corrupt-count");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ring = dir.join("c.ring");
    let log = started(TraceConfig::new(BufferMode::Ring, 1 << 16).file_backed(&ring));
    // Two threads, a chunk each: 3 events on this one, 5 on another.
    for i in 0..3u64 {
        trace_instant!(log: &log, "snap", "corrupt-a", "i" => i);
    }
    let other = {
        let log = log.clone();
        std::thread::spawn(move || {
            for i in 0..5u64 {
                trace_instant!(log: &log, "snap", "corrupt-b", "i" => i);
            }
            phosphor::current_thread_id()
        })
        .join()
        .unwrap()
    };
    let mut bytes = std::fs::read(&ring).unwrap();
    let base = phosphor::format::file::ring::RING_HEADER_BYTES;
    let (at_tid, at_committed, at_loan) = {
        use phosphor::format::file::ring::chunk_at;
        (chunk_at::TID, chunk_at::COMMITTED, chunk_at::LOAN)
    };
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let tid = phosphor::current_thread_id();
    let mine = (0..16).map(|c| base + c * 4096).find(|&b| u32_at(&bytes, b + at_tid) == tid).unwrap();
    let theirs = (0..16).map(|c| base + c * 4096).find(|&b| u32_at(&bytes, b + at_tid) == other).unwrap();
    // Corrupt the chunk recovery reads first (the older loan), so the other one comes after it.
    let first = if u64_at(&bytes, mine + at_loan) < u64_at(&bytes, theirs + at_loan) { mine } else { theirs };
    bytes[first + 3 * 32..first + 127 * 32].fill(0xa5);
    bytes[first + at_committed..first + at_committed + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let trace = phosphor::format::file::ring::recover(&bytes).unwrap();
    let mut r = Reader::new(&trace[..]).unwrap();
    let mut names = Vec::new();
    r.for_each_event(|e| names.push(e.callsite.name.to_string())).unwrap();
    let count = |n: &str| names.iter().filter(|x| x.as_str() == n).count();
    let (a, b) = (count("corrupt-a"), count("corrupt-b"));
    let (kept, whole) = if first == mine { (a, b) } else { (b, a) };
    assert_eq!(
        whole,
        if first == mine { 5 } else { 3 },
        "the chunk after the corrupt one is whole: {names:?}"
    );
    // Records 0 to 2 were written before the garbage: the corrupt chunk keeps those 3 events (it
    // was dropped whole before).
    assert_eq!(kept, 3, "the corrupt chunk keeps the events before its garbage: {names:?}");
    // A ring file cut short.
    let e = phosphor::format::file::ring::recover(&bytes[..1000]).unwrap_err();
    assert!(e.to_string().contains("ring header"), "{e}");
    log.stop();
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
    let progress: Arc<[AtomicU64; 4]> = Arc::new(std::array::from_fn(|_| AtomicU64::new(0)));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (log, stop, progress) = (log.clone(), stop.clone(), progress.clone());
            std::thread::spawn(move || {
                let mut i = 0u64;
                // Relaxed: a stop flag and a progress counter; the count is returned through join.
                while !stop.load(Ordering::Relaxed) || i < 20_000 {
                    trace_instant!(log: &log, "snap", "snap-ev", "i" => i);
                    i += 1;
                    progress[w].store(i, Ordering::Relaxed);
                }
                (phosphor::current_thread_id(), i)
            })
        })
        .collect();
    // Relaxed: progress counters.
    let before: Vec<u64> = progress.iter().map(|p| p.load(Ordering::Relaxed)).collect();
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
    // No writer stalled: each one went on recording while the dumps ran.
    // Relaxed: progress counters.
    let after: Vec<u64> = progress.iter().map(|p| p.load(Ordering::Relaxed)).collect();
    for (w, (b, a)) in before.iter().zip(&after).enumerate() {
        assert!(a > b, "writer {w} made no progress during 100 dumps ({b} -> {a})");
    }
    // Relaxed: see above.
    stop.store(true, Ordering::Relaxed);
    let emitted: u64 = writers.into_iter().map(|w| w.join().unwrap().1).sum();
    let trace = stop_and_take(&log);
    let s = trace.stats();
    assert_eq!(s.recorded + s.dropped.total(), emitted, "no event unaccounted for: {s}");
}

#[test]
fn a_second_file_backed_trace_on_the_same_path_leaves_the_first_trace_intact() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("snapshot-reuse");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ring = dir.join("t.ring");
    let log = started(TraceConfig::new(BufferMode::Ring, 1 << 16).file_backed(&ring));
    let tid = phosphor::current_thread_id();
    for i in 0..10u64 {
        trace_instant!(log: &log, "snap", "snap-ev", "i" => i);
    }
    let first = stop_and_take(&log);
    log.start(TraceConfig::new(BufferMode::Ring, 1 << 16).file_backed(&ring)).unwrap();
    trace_instant!(log: &log, "snap", "snap-ev", "i" => 99u64);
    // The first trace still maps its own file: its events are whole.
    assert_eq!(seqs(&first, tid), (0..10).collect::<Vec<_>>());
    let second = stop_and_take(&log);
    assert_eq!(seqs(&second, tid), [99]);
}

//! Compressed saves and datastreams (format 1.7): what a compressed file holds reads back to exactly
//! the events of the same trace saved plain, a compressed datastream is readable at every flush
//! and exact at its end, and the accounting (received + dropped == emitted) stays exact while the
//! collector compresses under load.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use phosphor::format::file::Reader;
use phosphor::stream::{MemorySink, Sink, StreamConfig, DEFAULT_COMPRESSION};
use phosphor::{
    set_thread_name, trace_instant, trace_log, BufferMode, Compression, Static, TraceConfig, TraceLog,
    DEFAULT_SAVE_COMPRESSION,
};

use crate::support::{new_log, record_mixed, started, stop_and_take};

const CODECS: [Compression; 4] =
    [Compression::None, Compression::Lz4, Compression::Zstd { level: 1 }, Compression::Zstd { level: -3 }];

/// Every event of a trace file as text (all but its offset, which a compressed group makes
/// virtual), with the file's codecs, whether it has a trailer, and its recorded count.
fn read_all(bytes: &[u8]) -> (Vec<String>, Vec<Compression>, Option<u64>) {
    let mut r = Reader::new(bytes).unwrap();
    let mut events = Vec::new();
    r.for_each_event(|e| {
        let cs = &e.callsite;
        events.push(format!(
            "{} {} {}/{} {:?} {:?} {:?} {:?} {:?} {}",
            e.tid,
            e.ts,
            cs.category,
            cs.name,
            cs.phase,
            e.duration,
            e.async_id,
            e.args,
            e.params,
            e.truncated
        ));
    })
    .unwrap();
    (events, r.codecs().to_vec(), r.trailer().map(|t| t.recorded))
}

/// Mixed events (instants, scopes, complete events, long dynamic strings, logs with string
/// parameters) on three named threads.
fn record(config: TraceConfig) -> phosphor::Trace {
    let log = started(config);
    let workers: Vec<_> = (0..3u64)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                set_thread_name(&format!("mixer-{t}"));
                for i in 0..3_000 {
                    record_mixed(&log, t, i);
                    if i % 100 == 0 {
                        trace_log!(log: &log, info, "mix", "batch {} of {}", i, Static("mixer"));
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop_and_take(&log)
}

#[test]
fn a_trace_saved_with_each_codec_reads_back_to_exactly_the_events_saved_plain() {
    let trace = record(TraceConfig::new(BufferMode::Fixed, 8 << 20));
    assert_eq!(trace.compression(), DEFAULT_SAVE_COMPRESSION, "a trace saves with the default codec");
    let recorded = trace.stats().recorded;
    let trace = trace.with_compression(Compression::None);
    let plain = trace.write_to(Vec::new()).unwrap();
    let (want, codecs, trailer) = read_all(&plain);
    assert!(codecs.is_empty(), "Compression::None writes plain blocks: {codecs:?}");
    assert_eq!(want.len() as u64, recorded);
    assert_eq!(trailer, Some(recorded));
    let mut trace = trace;
    for codec in CODECS.into_iter().skip(1) {
        trace = trace.with_compression(codec);
        assert_eq!(trace.compression(), codec);
        let file = trace.write_to(Vec::new()).unwrap();
        let (got, codecs, trailer) = read_all(&file);
        assert_eq!(codecs, [codec], "the file is compressed with {codec}");
        assert_eq!(trailer, Some(recorded), "{codec}");
        assert!(got == want, "{codec}: the events differ from the plain file's");
        assert!(file.len() * 2 < plain.len(), "{codec}: {} bytes against {} plain", file.len(), plain.len());
    }
    // `save` writes what `write_to` writes.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("compression-save");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("zstd.phos");
    trace.with_compression(Compression::Zstd { level: 1 }).save(&path).unwrap();
    let (got, codecs, _) = read_all(&std::fs::read(&path).unwrap());
    assert_eq!((codecs, got == want), (vec![Compression::Zstd { level: 1 }], true));
}

#[test]
fn the_trace_configs_codec_reaches_its_trace_and_snapshots() {
    let codec = Compression::Lz4;
    let log = started(TraceConfig::new(BufferMode::Ring, 1 << 20).compression(codec));
    for i in 0..2_000 {
        record_mixed(&log, 0, i);
    }
    let snapshot = log.snapshot().unwrap();
    assert_eq!(snapshot.compression(), codec);
    let (events, codecs, _) = read_all(&snapshot.write_to(Vec::new()).unwrap());
    assert_eq!((events.len() as u64, codecs), (snapshot.stats().recorded, vec![codec]));
    let trace = stop_and_take(&log);
    assert_eq!(trace.compression(), codec);
    // The default, and the way back to files every 1.x reader reads.
    let log = started(TraceConfig::new(BufferMode::Fixed, 1 << 20).compression(Compression::None));
    trace_instant!(log: &log, "c", "one");
    let trace = stop_and_take(&log);
    let (events, codecs, _) = read_all(&trace.write_to(Vec::new()).unwrap());
    assert_eq!((events.len(), codecs), (1, vec![]));
}

fn streaming(bytes: usize) -> Arc<TraceLog> {
    let log = new_log(Default::default());
    log.start(TraceConfig::new(BufferMode::Stream, bytes)).unwrap();
    log
}

/// `(thread, i)` of every `w/tick` event of a trace file, whole blocks up to where it ends, and
/// its codecs.
fn ticks(bytes: &[u8]) -> (Vec<(u64, u64)>, Vec<Compression>) {
    let Ok(mut r) = Reader::new(bytes) else { return (Vec::new(), Vec::new()) };
    let mut got = Vec::new();
    while let Ok(Some(chunk)) = r.next_chunk() {
        for e in chunk.events() {
            let e = e.unwrap();
            if e.callsite.name == "tick" {
                let arg = |n| match e.arg(n) {
                    Some(phosphor::format::file::Value::U64(v)) => v,
                    other => panic!("tick without {n}: {other:?}"),
                };
                got.push((arg("t"), arg("i")));
            }
        }
    }
    (got, r.codecs().to_vec())
}

/// `threads` threads emitting instants `i` from `from` to `to`.
fn burst(log: &Arc<TraceLog>, threads: u64, from: u64, to: u64) {
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in from..to {
                    trace_instant!(log: &log, "w", "tick", "t" => t, "i" => i);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

/// Every thread's ticks from 0 to `n`, once each, in order.
fn check_ticks(got: &[(u64, u64)], threads: u64, n: u64, what: &str) {
    let mut per: HashMap<u64, Vec<u64>> = HashMap::new();
    for &(t, i) in got {
        per.entry(t).or_default().push(i);
    }
    for t in 0..threads {
        let v = per.remove(&t).unwrap_or_default();
        assert!(v.iter().copied().eq(0..n), "{what}: thread {t} has {} ticks, not 0..{n} in order", v.len());
    }
    assert!(per.is_empty(), "{what}: unknown threads");
}

#[test]
fn a_compressed_datastream_is_readable_at_each_flush_and_exact_after_stop() {
    assert_ne!(DEFAULT_COMPRESSION, Compression::None, "streams compress by default");
    // A pool larger than everything emitted: nothing is dropped, so the streams must be exact.
    let log = streaming(32 << 20);
    let memory = MemorySink::new();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("compression-stream");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("zstd.phos");
    let m = log.open_stream(StreamConfig::new(Sink::Memory(memory.clone()))).unwrap();
    let f = log
        .open_stream(StreamConfig::new(Sink::File(path.clone())).compression(Compression::Zstd { level: 1 }))
        .unwrap();
    let threads = 3;
    let (mut n, per_burst) = (0, 20_000);
    for round in 0..3 {
        burst(&log, threads, n, n + per_burst);
        n += per_burst;
        // The periodic flush sends the threads' partly filled chunks on, and each stream flushes
        // its group when its queue is empty: every event so far becomes readable in both sinks.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (mem, mem_codecs) = ticks(&memory.bytes());
            let (file, file_codecs) = ticks(&std::fs::read(&path).unwrap_or_default());
            if mem.len() as u64 == threads * n && file.len() as u64 == threads * n {
                check_ticks(&mem, threads, n, "memory sink mid-stream");
                check_ticks(&file, threads, n, "file sink mid-stream");
                assert_eq!(mem_codecs, [DEFAULT_COMPRESSION], "round {round}");
                assert_eq!(file_codecs, [Compression::Zstd { level: 1 }], "round {round}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "round {round}: {} and {} of {} events readable",
                mem.len(),
                file.len(),
                threads * n
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    log.stop();
    let stats = log.stats();
    assert_eq!((stats.recorded, stats.dropped.total()), (threads * n, 0), "{stats}");
    for (id, bytes, what) in [(m, memory.bytes(), "memory"), (f, std::fs::read(&path).unwrap(), "file")] {
        let (got, _) = ticks(&bytes);
        check_ticks(&got, threads, n, what);
        let mut r = Reader::new(&bytes[..]).unwrap();
        r.for_each_event(|_| {}).unwrap();
        assert_eq!(r.trailer().map(|t| t.recorded), Some(stats.recorded), "{what}: the trailer");
        assert!(r.decoded_bytes() > 3 * r.stored_bytes(), "{what}: compressed");
        let s = log.stream_stats(id).unwrap();
        assert_eq!(
            (s.events_written, s.events_dropped, s.bytes_written),
            (threads * n, 0, bytes.len() as u64)
        );
    }
}

#[test]
fn a_compressing_stream_under_load_accounts_for_every_event() {
    // Two busy loops take the cores from the producers and the collector (the rule for tests of
    // concurrency here); a small pool makes the writers drop, and every drop must be counted.
    let stop = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    for codec in [Compression::Lz4, Compression::Zstd { level: 3 }] {
        let log = streaming(256 << 10);
        let memory = MemorySink::new();
        let id = log.open_stream(StreamConfig::new(Sink::Memory(memory.clone())).compression(codec)).unwrap();
        let threads = 4;
        let emitted = threads * 100_000;
        burst(&log, threads, 0, emitted / threads);
        log.stop();
        let stats = log.stats();
        let s = log.stream_stats(id).unwrap();
        let bytes = memory.bytes();
        let mut r = Reader::new(&bytes[..]).unwrap();
        let (mut received, mut markers) = (0u64, 0u64);
        r.for_each_event(|e| {
            if e.callsite.category == "phosphor" && e.callsite.name == "saturation" {
                markers += 1;
            } else {
                received += 1;
            }
        })
        .unwrap();
        assert_eq!(r.codecs(), [codec]);
        // A memory sink never fails: the pool's drops are the only ones, and its saturation
        // markers (counted as recorded) are all in the stream.
        assert_eq!(s.events_dropped, 0, "{codec}: {s:?}");
        assert_eq!((markers, received + markers), (stats.saturation_markers, stats.recorded), "{codec}");
        assert_eq!(received + stats.dropped.total(), emitted, "{codec}: received + dropped == emitted");
        assert_eq!(s.events_written, received + markers, "{codec}");
    }
    stop.store(true, Ordering::Relaxed);
    for b in busy {
        b.join().unwrap();
    }
}

#[test]
fn a_compressed_sink_that_fills_counts_every_event_it_could_not_take() {
    // The failure comes when a group reaches the writer, which may hold chunks of earlier calls:
    // those are counted as dropped with the chunk whose write failed.
    let log = streaming(4 << 20);
    let written = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let room = 48 << 10;
    let full = crate::stream::Full { room, written: written.clone() };
    let id = log
        .open_stream(StreamConfig::new(Sink::Writer(Box::new(full))).compression(Compression::Lz4))
        .unwrap();
    let memory = MemorySink::new();
    log.open_stream(StreamConfig::new(Sink::Memory(memory.clone()))).unwrap();
    let threads = 4;
    for round in 0..4 {
        burst(&log, threads, round * 50_000, (round + 1) * 50_000);
    }
    log.stop();
    let stats = log.stats();
    let s = log.stream_stats(id).unwrap();
    assert!(s.first_error.as_deref().unwrap_or_default().contains("no space left"), "{s:?}");
    assert!(s.events_dropped > 0, "{s:?}");
    assert_eq!(s.events_written + s.events_dropped, stats.recorded, "{s:?}");
    assert!(written.load(Ordering::Relaxed) <= room);
    // The other stream, and the program, carried on.
    let (got, _) = ticks(&memory.bytes());
    assert_eq!(got.len() as u64, stats.recorded - stats.saturation_markers);
}

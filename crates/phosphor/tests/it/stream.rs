//! Streaming traces: the collector, datastreams and their sinks, filters, saturation, failing
//! sinks. Each test reads what a sink received with the real reader and checks the accounting
//! exactly: every emitted event was received, or counted as dropped.

use std::sync::Arc;

use phosphor::format::file::{Reader, Value};
use phosphor::stream::{Backpressure, MemorySink, Sink, StreamConfig};
use phosphor::{trace_instant, BufferMode, TraceConfig, TraceLog};

use crate::support::new_log;

fn streaming(bytes: usize) -> Arc<TraceLog> {
    let log = new_log(Default::default());
    log.start(TraceConfig::new(BufferMode::Stream, bytes)).unwrap();
    log
}

/// What a trace file holds: events per category, saturation markers' dropped counts, lost chunks,
/// and whether it has a trailer.
#[derive(Debug, Default)]
struct Received {
    by_category: std::collections::BTreeMap<String, u64>,
    saturation_dropped: u64,
    saturation_markers: u64,
    lost_chunks: u64,
    trailer: bool,
}

fn read(bytes: &[u8]) -> Received {
    let mut r = Reader::new(bytes).unwrap();
    assert_eq!(r.header().boot_id, crate::recorder::this_boot(), "a datastream's header names the boot");
    let mut got = Received::default();
    // Each writer stream's sequence numbers must be contiguous: a gap is a lost chunk.
    let mut next_seq: std::collections::HashMap<(u32, u16), u64> = Default::default();
    while let Some(chunk) = r.next_chunk().unwrap() {
        let key = (chunk.extents.tid, chunk.extents.stream());
        let seq = chunk.extents.stream_seq();
        let expected = next_seq.insert(key, seq + 1).unwrap_or(0);
        got.lost_chunks += seq.saturating_sub(expected);
        for e in chunk.events() {
            let e = e.unwrap();
            if e.callsite.category == "phosphor" && e.callsite.name == "saturation" {
                if let Some(Value::U64(n)) = e.arg("dropped") {
                    got.saturation_dropped += n;
                }
                got.saturation_markers += 1;
            } else {
                *got.by_category.entry(e.callsite.category.to_string()).or_default() += 1;
            }
        }
    }
    got.trailer = r.trailer().is_some();
    got
}

/// The events of a stream still being written: every whole block up to where it ends for now.
fn events_so_far(bytes: &[u8]) -> u64 {
    let Ok(mut r) = Reader::new(bytes) else { return 0 };
    let mut n = 0;
    while let Ok(Some(chunk)) = r.next_chunk() {
        n += chunk.events().filter(|e| e.as_ref().is_ok_and(|e| e.callsite.category != "phosphor")).count()
            as u64;
    }
    n
}

/// `threads` threads emitting `per_thread` instants each in category `cat{i % 2}`.
fn emit(log: &Arc<TraceLog>, threads: u64, per_thread: u64) -> u64 {
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..per_thread {
                    if t % 2 == 0 {
                        trace_instant!(log: &log, "even", "tick", "i" => i);
                    } else {
                        trace_instant!(log: &log, "odd", "tick", "i" => i);
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    threads * per_thread
}

#[test]
fn every_event_reaches_the_sinks_or_is_counted_and_filters_apply() {
    let log = streaming(8 << 20);
    let all = MemorySink::new();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("stream-files");
    std::fs::create_dir_all(&dir).unwrap();
    let odd_path = dir.join("odd.phos");
    let a = log.open_stream(StreamConfig::new(Sink::Memory(all.clone()))).unwrap();
    let o =
        log.open_stream(StreamConfig::new(Sink::File(odd_path.clone())).categories("odd").unwrap()).unwrap();
    let emitted = emit(&log, 4, 50_000);
    log.stop();
    let stats = log.stats();
    assert_eq!(stats.recorded + stats.dropped.total(), emitted);
    let got = read(&all.bytes());
    assert!(got.trailer);
    let received: u64 = got.by_category.values().sum();
    assert_eq!(received + got.saturation_markers, stats.recorded, "{got:?}");
    assert_eq!(received + stats.dropped.total(), emitted, "{got:?}");
    assert!(got.saturation_dropped <= stats.dropped.total());
    let sa = log.stream_stats(a).unwrap();
    assert_eq!((sa.events_dropped, sa.events_filtered), (0, 0));
    let odd = read(&std::fs::read(&odd_path).unwrap());
    assert_eq!(odd.by_category.keys().collect::<Vec<_>>(), ["odd"]);
    assert_eq!(odd.by_category["odd"], got.by_category["odd"]);
    assert_eq!(odd.lost_chunks, 0, "filtered chunks are written empty, not skipped");
    let so = log.stream_stats(o).unwrap();
    assert_eq!(so.events_written, got.by_category["odd"]);
    assert!(so.events_filtered >= got.by_category["even"]);
}

/// A writer that takes `delay` per write: a sink slower than the writers.
struct Slow(std::time::Duration, Vec<u8>);

impl std::io::Write for Slow {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::thread::sleep(self.0);
        self.1.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_saturated_pool_drops_counts_and_marks_the_point_of_loss() {
    // 16 chunks and a sink that sleeps 2 ms per write: the writers outrun it.
    let log = streaming(16 * 4096);
    let mem = MemorySink::new();
    log.open_stream(StreamConfig::new(Sink::Memory(mem.clone()))).unwrap();
    let slow = log
        .open_stream(StreamConfig::new(Sink::Writer(Box::new(Slow(
            std::time::Duration::from_millis(2),
            Vec::new(),
        )))))
        .unwrap();
    let emitted = emit(&log, 2, 200_000);
    log.stop();
    let stats = log.stats();
    let got = read(&mem.bytes());
    let received: u64 = got.by_category.values().sum();
    assert!(stats.dropped.no_chunk > 0, "the pool saturated: {stats:?}");
    assert_eq!(stats.dropped.total(), stats.dropped.no_chunk);
    assert_eq!(received + stats.dropped.total(), emitted, "received + dropped == emitted");
    assert_eq!(received + got.saturation_markers, stats.recorded);
    assert!(got.saturation_markers > 0 && got.saturation_dropped > 0);
    assert!(got.saturation_dropped <= stats.dropped.no_chunk);
    assert_eq!(got.lost_chunks, 0);
    let s = log.stream_stats(slow).unwrap();
    assert_eq!(s.events_written, stats.recorded, "the slow sink still got every recorded event");
}

#[test]
fn block_backpressure_makes_writers_wait_instead_of_dropping() {
    let log = streaming(16 * 4096);
    let mem = MemorySink::new();
    let slow = Sink::Writer(Box::new(Slow(std::time::Duration::from_micros(200), Vec::new())));
    let block = Backpressure::Block { timeout: std::time::Duration::from_secs(10) };
    log.open_stream(StreamConfig::new(slow).backpressure(block)).unwrap();
    log.open_stream(StreamConfig::new(Sink::Memory(mem.clone()))).unwrap();
    let emitted = emit(&log, 2, 50_000);
    log.stop();
    let stats = log.stats();
    assert_eq!((stats.recorded, stats.dropped.total()), (emitted, 0), "{stats:?}");
    let got = read(&mem.bytes());
    assert_eq!(got.by_category.values().sum::<u64>(), emitted);
    assert_eq!(got.saturation_markers, 0);
}

/// A writer that fails once `room` bytes have been written, like a full disk.
pub(crate) struct Full {
    pub(crate) room: usize,
    pub(crate) written: Arc<std::sync::atomic::AtomicUsize>,
}

impl std::io::Write for Full {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use std::sync::atomic::Ordering;
        let done = self.written.load(Ordering::Relaxed);
        if done + buf.len() > self.room {
            return Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left on device"));
        }
        self.written.fetch_add(buf.len(), Ordering::Relaxed);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failing_sink_is_reported_once_counted_and_does_not_disturb_the_program_or_other_streams() {
    let log = streaming(4 << 20);
    let mem = MemorySink::new();
    let written = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let full = log
        .open_stream(
            // Plain: compressed, these events would fit in the room (`compression.rs` has a
            // compressed sink that fills).
            StreamConfig::new(Sink::Writer(Box::new(Full { room: 1 << 20, written: written.clone() })))
                .compression(phosphor::Compression::None),
        )
        .unwrap();
    log.open_stream(StreamConfig::new(Sink::Memory(mem.clone()))).unwrap();
    let emitted = emit(&log, 4, 100_000);
    log.stop();
    let stats = log.stats();
    let s = log.stream_stats(full).unwrap();
    let error = s.first_error.as_deref().unwrap_or_default();
    assert!(error.contains("no space left"), "{s:?}");
    assert!(s.events_dropped > 0 && s.events_written > 0);
    assert_eq!(s.events_written + s.events_dropped, stats.recorded, "{s:?}");
    assert!(written.load(std::sync::atomic::Ordering::Relaxed) <= 1 << 20);
    // The other stream and the program carried on.
    let got = read(&mem.bytes());
    assert_eq!(got.by_category.values().sum::<u64>() + got.saturation_markers, stats.recorded);
    assert_eq!(stats.recorded - got.saturation_markers + stats.dropped.total(), emitted);
}

#[test]
fn streams_are_bounded_opened_and_closed_at_run_time_and_need_stream_mode() {
    let log = streaming(1 << 20);
    let ids: Vec<_> = (0..phosphor::stream::MAX_STREAMS)
        .map(|_| log.open_stream(StreamConfig::new(Sink::Memory(MemorySink::new()))).unwrap())
        .collect();
    let e = log.open_stream(StreamConfig::new(Sink::Memory(MemorySink::new()))).unwrap_err();
    assert!(e.to_string().contains("at most 8 datastreams"), "{e}");
    // A stream opened later gets only what comes after it; a closed one has its trailer.
    for id in &ids {
        log.close_stream(*id).unwrap();
    }
    let early = MemorySink::new();
    let id = log.open_stream(StreamConfig::new(Sink::Memory(early.clone()))).unwrap();
    emit(&log, 1, 1000);
    std::thread::sleep(std::time::Duration::from_millis(50)); // the periodic flush delivers them
    let s = log.close_stream(id).unwrap();
    assert_eq!(s.events_written, 1000, "a quiet thread's events arrive with the periodic flush");
    let got = read(&early.bytes());
    assert!(got.trailer);
    assert_eq!(got.by_category["even"], 1000);
    assert!(log.close_stream(id).is_err());
    assert!(log.snapshot().is_err(), "a streaming trace has no snapshot");
    log.stop();
    let fixed = new_log(Default::default());
    fixed.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    let e = fixed.open_stream(StreamConfig::new(Sink::Memory(MemorySink::new()))).unwrap_err();
    assert!(e.to_string().contains("BufferMode::Stream"), "{e}");
}

#[test]
fn a_slow_sink_does_not_hold_up_another_streams_writes() {
    let log = streaming(1 << 20);
    // Opened first: a single thread serving both streams in order would write to it first.
    let slow = log
        .open_stream(StreamConfig::new(Sink::Writer(Box::new(Slow(
            std::time::Duration::from_millis(500),
            Vec::new(),
        )))))
        .unwrap();
    let mem = MemorySink::new();
    log.open_stream(StreamConfig::new(Sink::Memory(mem.clone()))).unwrap();
    let t0 = std::time::Instant::now();
    emit(&log, 1, 20 * 127);
    // The fast stream's bytes hold every event long before the slow sink's first write returns.
    let mut got = 0;
    while t0.elapsed() < std::time::Duration::from_millis(400) {
        got = events_so_far(&mem.bytes());
        if got == 20 * 127 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(got, 20 * 127, "the fast stream was held up");
    log.stop();
    assert_eq!(
        log.stream_stats(slow).unwrap().events_written,
        20 * 127,
        "the slow one catches up by the end"
    );
}

#[test]
fn a_new_trace_does_not_mark_the_last_traces_losses() {
    let log = new_log(Default::default());
    // A two-chunk pool and a slow sink: this thread drops events, and the trace stops before it
    // gets another chunk to mark them in.
    log.start(TraceConfig::new(BufferMode::Stream, 2 * 4096)).unwrap();
    log.open_stream(StreamConfig::new(Sink::Writer(Box::new(Slow(
        std::time::Duration::from_millis(50),
        Vec::new(),
    )))))
    .unwrap();
    for i in 0..2000u64 {
        trace_instant!(log: &log, "old", "tick", "i" => i);
    }
    log.stop();
    assert!(log.stats().dropped.no_chunk > 0);
    // The next trace, on the same thread, starts clean.
    log.start(TraceConfig::new(BufferMode::Stream, 1 << 20)).unwrap();
    let mem = MemorySink::new();
    log.open_stream(StreamConfig::new(Sink::Memory(mem.clone()))).unwrap();
    for i in 0..10u64 {
        trace_instant!(log: &log, "new", "tick", "i" => i);
    }
    log.stop();
    let got = read(&mem.bytes());
    assert_eq!((got.by_category["new"], got.saturation_markers), (10, 0), "{got:?}");
    // And a Fixed trace afterwards has no markers either.
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    trace_instant!(log: &log, "fixed", "tick", "i" => 1u64);
    let trace = crate::support::stop_and_take(&log);
    assert!(crate::support::events(&trace).iter().all(|e| e.callsite.name != "saturation"));
}

//! Streaming traces: the collector, datastreams and their sinks, filters, saturation, failing
//! sinks. Each test reads what a sink received with the real reader and checks the accounting
//! exactly: every emitted event was received, or counted as dropped.

use std::sync::Arc;

use phosphor::format::file::{Reader, Value};
use phosphor::stream::{MemorySink, Sink, StreamConfig};
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
                *got.by_category.entry(e.callsite.category.clone()).or_default() += 1;
            }
        }
    }
    got.trailer = r.trailer().is_some();
    got
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

//! Closing a datastream while the trace goes on: the closed stream holds every event recorded
//! before `close_stream` was called (the chunks exited threads gave back and the collector had not
//! taken yet, and the partial chunks that live threads still hold), or counts the rest.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use phosphor::format::file::Reader;
use phosphor::stream::{Sink, StreamConfig};
use phosphor::{trace_instant, BufferMode, TraceConfig, TraceLog};

use crate::support::new_log;

/// What a closed stream's file holds.
struct Closed {
    /// The events the program emitted (saturation markers left out).
    events: u64,
    /// Saturation markers.
    markers: u64,
    /// The trailer's drops and recorded events.
    dropped: u64,
    recorded: u64,
}

fn read_closed(path: &std::path::Path) -> Closed {
    let bytes = std::fs::read(path).unwrap();
    let mut r = Reader::new(&bytes[..]).unwrap();
    let (mut events, mut markers) = (0, 0);
    while let Some(chunk) = r.next_chunk().unwrap() {
        for e in chunk.events() {
            match e.unwrap().callsite.category == "phosphor" {
                true => markers += 1,
                false => events += 1,
            }
        }
    }
    let t = r.trailer().expect("a closed stream has its trailer");
    Closed { events, markers, dropped: t.dropped.total(), recorded: t.recorded }
}

fn file(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("stream-close");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn streaming() -> Arc<TraceLog> {
    let log = new_log(Default::default());
    log.start(TraceConfig::new(BufferMode::Stream, 8 << 20)).unwrap();
    log
}

#[test]
fn a_stream_closed_after_its_writers_are_joined_holds_all_their_events() {
    let log = streaming();
    let path = file("joined.phos");
    let id = log.open_stream(StreamConfig::new(Sink::File(path.clone()))).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let (log, stop) = (log.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                // Relaxed: a flag; the join orders everything after.
                while !stop.load(Ordering::Relaxed) {
                    trace_instant!(log: &log, "app", "tick", "i" => n);
                    n += 1;
                }
                n
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_millis(300);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    let emitted: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    // The guide's order (docs/GUIDE.md): join the writers, then close.
    let s = log.close_stream(id).unwrap();
    let f = read_closed(&path);
    assert_eq!(f.events + f.markers, s.events_written, "{s:?}");
    assert_eq!(f.events + f.dropped + s.events_dropped, emitted, "{s:?}");
    assert_eq!(f.recorded, s.events_written, "the trailer counts the events the file holds");
    log.stop();
}

#[test]
fn a_stream_closed_while_a_live_thread_holds_a_partial_chunk_holds_its_events() {
    let log = streaming();
    let path = file("held.phos");
    let id = log.open_stream(StreamConfig::new(Sink::File(path.clone()))).unwrap();
    // This thread keeps its chunk, partly filled, and stays alive; another thread, idle too,
    // keeps its own.
    for i in 0..10u64 {
        trace_instant!(log: &log, "app", "main", "i" => i);
    }
    let (ready, wait) = (Arc::new(std::sync::Barrier::new(2)), Arc::new(std::sync::Barrier::new(2)));
    let idle = {
        let (log, ready, wait) = (log.clone(), ready.clone(), wait.clone());
        std::thread::spawn(move || {
            for i in 0..7u64 {
                trace_instant!(log: &log, "app", "idle", "i" => i);
            }
            ready.wait();
            wait.wait();
        })
    };
    ready.wait();
    let s = log.close_stream(id).unwrap();
    wait.wait();
    idle.join().unwrap();
    let f = read_closed(&path);
    assert_eq!((f.events, f.dropped, s.events_dropped), (17, 0, 0), "{s:?}");
    assert_eq!(f.recorded, 17, "the trailer counts the events the file holds");
    log.stop();
}

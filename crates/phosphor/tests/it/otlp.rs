//! `Sink::Otlp` (feature `otlp`): a datastream forwarded as OTLP spans to a receiver built on the
//! official protos (a small HTTP server decoding every request with prost). The accounting is
//! exact: every span made is received, or counted as dropped, rejected or failed. No timed
//! assertions: waits poll with generous deadlines.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use phosphor::stream::{OtlpSink, OtlpStats, Sink, StreamConfig};
use phosphor::{trace_scope, BufferMode, TraceConfig, TraceLog};
use phosphor_otlp::receiver::{Answer, Receiver};

use crate::support::new_log;

fn sink(url: String) -> OtlpSink {
    let mut s = OtlpSink::new(url);
    s.export.queue_batches = 4096;
    s.export.backoff_initial = Duration::from_millis(5);
    s.export.backoff_max = Duration::from_millis(50);
    s.export.max_retries = 10_000;
    s.export.shutdown_deadline = Duration::from_secs(60);
    s.forward.max_batch_spans = 64;
    s
}

fn streaming() -> Arc<TraceLog> {
    let log = new_log(Default::default());
    log.start(TraceConfig::new(BufferMode::Stream, 16 << 20)).unwrap();
    log
}

/// `threads` threads each making `n` outer scopes with two inner ones: `3 * n * threads` spans.
fn emit(log: &Arc<TraceLog>, threads: u64, n: u64) {
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..n {
                    trace_scope!(log: &log, "otlp", "outer", "i" => i);
                    {
                        trace_scope!(log: &log, "otlp", "first");
                    }
                    trace_scope!(log: &log, "otlp", "second");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

fn accounted(o: &OtlpStats) -> u64 {
    o.spans_exported + o.spans_dropped + o.spans_rejected + o.spans_failed
}

#[test]
fn an_otlp_stream_delivers_every_span_once_with_its_parent() {
    let rx = Receiver::start(vec![]);
    let log = streaming();
    let id = log.open_stream(StreamConfig::new(Sink::Otlp(sink(rx.url())))).unwrap();
    emit(&log, 3, 200);
    // Stopping the trace gives back every thread's chunk and closes the stream.
    log.stop();
    let stats = log.stream_stats(id).unwrap();
    assert_eq!(stats.events_dropped, 0, "{stats:?}");
    let o = stats.otlp.clone().unwrap_or_else(|| panic!("an OTLP stream has OTLP figures: {stats:?}"));
    assert_eq!(o.spans_made, 1800, "{o:?}");
    assert_eq!((o.spans_sent, o.spans_exported, accounted(&o)), (1800, 1800, 1800), "{o:?}");
    let got = rx.got();
    assert!(got.bad.is_empty(), "{:?}", got.bad);
    assert_eq!(got.spans.len(), 1800);
    let ids: HashSet<&[u8]> = got.spans.iter().map(|s| &s.span_id[..]).collect();
    assert_eq!(ids.len(), 1800, "span ids are unique");
    let with_parent = got.spans.iter().filter(|s| !s.parent_span_id.is_empty()).count();
    assert_eq!(with_parent, 1200, "the inner scopes have parents");
    let parents_sent =
        got.spans.iter().all(|s| s.parent_span_id.is_empty() || ids.contains(&s.parent_span_id[..]));
    assert!(parents_sent, "every parent was sent");
}

#[test]
fn a_collector_down_then_failing_then_up_loses_nothing_uncounted() {
    // Nobody listens on the port at first; then the receiver answers 503 three times.
    let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let log = streaming();
    let mut s = sink(format!("http://{addr}"));
    // Short holds and delays so that batches go out while the collector is down.
    s.forward.hold = Duration::from_millis(1);
    s.forward.max_delay = Duration::from_millis(1);
    s.forward.drain_period = Duration::from_millis(10);
    let id = log.open_stream(StreamConfig::new(Sink::Otlp(s))).unwrap();
    emit(&log, 2, 100);
    let deadline = Instant::now() + Duration::from_secs(60);
    while log.stream_stats(id).unwrap().otlp.is_none_or(|o| o.requests_failed == 0) {
        assert!(Instant::now() < deadline, "no failed request");
        std::thread::sleep(Duration::from_millis(5));
    }
    let rx = Receiver::start_at(&addr.to_string(), vec![Answer::Status(503); 3]);
    emit(&log, 2, 100);
    // Stopping the trace gives back every thread's chunk and closes the stream.
    log.stop();
    let stats = log.stream_stats(id).unwrap();
    let o = stats.otlp.unwrap();
    assert_eq!(o.spans_made, 1200, "{o:?}");
    assert_eq!(accounted(&o), o.spans_sent, "{o:?}");
    assert_eq!(o.spans_exported, 1200, "nothing given up with 10 000 retries: {o:?}");
    assert!(o.retries >= 4, "{o:?}");
    assert_eq!(rx.got().spans.len() as u64, o.spans_exported);
}

#[test]
fn an_otlp_sink_that_cannot_start_counts_the_stream_s_events_as_dropped() {
    let log = streaming();
    let id = log.open_stream(StreamConfig::new(Sink::Otlp(OtlpSink::new("https://collector:4318")))).unwrap();
    emit(&log, 1, 50);
    // Stopping the trace gives back every thread's chunk and closes the stream.
    log.stop();
    let stats = log.stream_stats(id).unwrap();
    // One event per scope.
    assert_eq!(stats.events_dropped, 150, "{stats:?}");
    assert_eq!(stats.events_written, 0);
    assert!(stats.first_error.as_deref().unwrap().contains("https://collector:4318"), "{stats:?}");
    assert_eq!(stats.otlp, None);
}

#[test]
fn an_otlp_stream_s_shutdown_deadline_bounds_the_stop_when_the_collector_never_answers() {
    // Accepts and keeps every connection, reads nothing, answers nothing.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming() {
            held.push(c);
        }
    });
    let log = streaming();
    let mut s = sink(url).shutdown_deadline(Duration::from_secs(1));
    s.export.timeout = Duration::from_secs(300);
    let id = log.open_stream(StreamConfig::new(Sink::Otlp(s))).unwrap();
    emit(&log, 1, 100);
    let started = Instant::now();
    log.stop();
    // The deadline, the exporter's 1 s margin, and 5 s.
    assert!(started.elapsed() < Duration::from_secs(7), "the stop took {:?}", started.elapsed());
    let o = log.stream_stats(id).unwrap().otlp.unwrap();
    assert_eq!((o.spans_failed, accounted(&o)), (300, 300), "{o:?}");
    assert!(o.last_error.as_deref().unwrap().contains("shutdown deadline"), "{o:?}");
}

#[test]
fn an_otlp_stream_gzips_its_requests_and_counts_the_bytes_on_the_wire() {
    let rx = Receiver::start(vec![]);
    let log = streaming();
    let id = log.open_stream(StreamConfig::new(Sink::Otlp(sink(rx.url())))).unwrap();
    emit(&log, 2, 200);
    log.stop();
    let o = log.stream_stats(id).unwrap().otlp.unwrap();
    assert_eq!(o.spans_exported, 1200, "{o:?}");
    let got = rx.got();
    assert_eq!((got.gzipped, got.bytes), (got.requests, o.bytes_sent), "{o:?}");
    assert!(got.bytes < got.bytes_decoded, "{} bytes for {} decoded", got.bytes, got.bytes_decoded);
}

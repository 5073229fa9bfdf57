//! The OTLP/HTTP exporter against a receiver built on the official protos (a small HTTP server
//! decoding every request with prost), and the forwarder's handling of a malformed stream. No
//! timed assertions: waits poll with generous deadlines.

use std::collections::HashSet;
use std::io::Write;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};
use phosphor_otlp::export::{ExportOptions, ExportStats, Exporter};
use phosphor_otlp::forward::{ForwardOptions, Forwarder};
use phosphor_otlp::receiver::{Answer, Gate, Receiver};
use phosphor_otlp::{ExportTraceServiceRequest, Span};

/// `n` spans with ids `first..first + n`, in one request.
fn request(first: u64, n: u64) -> ExportTraceServiceRequest {
    let spans = (first..first + n)
        .map(|i| Span {
            trace_id: [1; 16].to_vec(),
            span_id: (i + 1).to_be_bytes().to_vec(),
            name: format!("span {i}"),
            ..Default::default()
        })
        .collect();
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans { spans, ..Default::default() }],
            ..Default::default()
        }],
    }
}

fn quick(url: String) -> ExportOptions {
    let mut o = ExportOptions::new(url);
    o.backoff_initial = Duration::from_millis(5);
    o.backoff_max = Duration::from_millis(50);
    o.max_retries = 1000;
    o.shutdown_deadline = Duration::from_secs(60);
    // One request at a time: the receiver's scripted answers go to the requests in order.
    o.senders = 1;
    o
}

fn accounted(s: &ExportStats) -> u64 {
    s.spans_exported + s.spans_dropped + s.spans_rejected + s.spans_failed
}

fn poll(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn every_span_sent_reaches_the_receiver_once_as_protobuf() {
    let rx = Receiver::start(vec![]);
    let ex = Exporter::start(quick(rx.url())).unwrap();
    let h = ex.handle();
    for b in 0..10 {
        assert!(h.send(&request(b * 7, 7), 7));
    }
    let stats = ex.shutdown();
    assert_eq!(stats.spans_exported, 70, "{stats:?}");
    assert_eq!(accounted(&stats), 70);
    let got = rx.got();
    assert!(got.bad.is_empty(), "{:?}", got.bad);
    assert_eq!(got.spans.len(), 70);
    assert_eq!(got.spans.iter().map(|s| &s.span_id).collect::<HashSet<_>>().len(), 70, "span ids are unique");
}

#[test]
fn several_senders_deliver_every_span_once() {
    let rx = Receiver::start(vec![Answer::Status(503), Answer::Status(503)]);
    let mut o = quick(rx.url());
    o.senders = 3;
    let ex = Exporter::start(o).unwrap();
    for b in 0..50 {
        assert!(ex.handle().send(&request(b * 4, 4), 4));
    }
    let stats = ex.shutdown();
    assert_eq!((stats.spans_exported, accounted(&stats), stats.retries), (200, 200, 2), "{stats:?}");
    let got = rx.got();
    assert_eq!(got.spans.iter().map(|s| &s.span_id).collect::<HashSet<_>>().len(), 200, "each span once");
}

#[test]
fn a_receiver_answering_503_then_200_gets_every_span_and_the_retries_are_counted() {
    let rx = Receiver::start(vec![Answer::Status(503), Answer::Status(429), Answer::Status(502)]);
    let ex = Exporter::start(quick(rx.url())).unwrap();
    ex.handle().send(&request(0, 5), 5);
    let stats = ex.shutdown();
    assert_eq!((stats.spans_exported, stats.retries, stats.requests_failed), (5, 3, 3), "{stats:?}");
    assert_eq!(rx.got().spans.len(), 5);
    assert!(stats.last_error.as_deref().unwrap().contains("HTTP 502"), "{stats:?}");
}

#[test]
fn a_refused_connection_is_retried_until_the_receiver_is_up() {
    // A port nobody listens on, until the receiver takes it.
    let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let ex = Exporter::start(quick(format!("http://{addr}"))).unwrap();
    ex.handle().send(&request(0, 4), 4);
    poll("a failed attempt", || ex.stats().requests_failed > 0);
    let rx = Receiver::start_at(&addr.to_string(), vec![]);
    let stats = ex.shutdown();
    assert_eq!(stats.spans_exported, 4, "{stats:?}");
    assert!(stats.retries > 0);
    assert_eq!(rx.got().spans.len(), 4);
}

#[test]
fn a_400_is_not_retried_and_its_spans_count_as_rejected() {
    let rx = Receiver::start(vec![Answer::Status(400)]);
    let ex = Exporter::start(quick(rx.url())).unwrap();
    ex.handle().send(&request(0, 6), 6);
    ex.handle().send(&request(6, 2), 2);
    let stats = ex.shutdown();
    assert_eq!((stats.spans_rejected, stats.spans_exported, stats.retries), (6, 2, 0), "{stats:?}");
    assert_eq!(rx.got().requests, 2);
}

#[test]
fn a_partial_success_counts_its_rejected_spans() {
    let rx = Receiver::start(vec![Answer::Partial(3)]);
    let ex = Exporter::start(quick(rx.url())).unwrap();
    ex.handle().send(&request(0, 10), 10);
    let stats = ex.shutdown();
    assert_eq!((stats.spans_exported, stats.spans_rejected), (7, 3), "{stats:?}");
}

#[test]
fn a_full_queue_drops_new_spans_and_counts_them() {
    let release = Gate::new();
    let rx = Receiver::start(vec![Answer::Hold(release.clone())]);
    let mut o = quick(rx.url());
    o.queue_batches = 2;
    let ex = Exporter::start(o).unwrap();
    let h = ex.handle();
    h.send(&request(0, 1), 1);
    // The first request is in the receiver's hands: the queue holds the next two only.
    assert!(rx.wait_until(Duration::from_secs(60), |got| got.requests == 1), "the held request");
    let accepted: Vec<bool> = (1..6).map(|i| h.send(&request(i * 3, 3), 3)).collect();
    assert_eq!(accepted, [true, true, false, false, false]);
    release.open();
    let stats = ex.shutdown();
    assert_eq!((stats.spans_exported, stats.spans_dropped), (7, 9), "{stats:?}");
    assert_eq!(accounted(&stats), 16);
}

#[test]
fn spans_still_failing_at_the_shutdown_deadline_count_as_failed() {
    let rx = Receiver::start(vec![Answer::Status(503); 100_000]);
    let mut o = quick(rx.url());
    o.shutdown_deadline = Duration::from_millis(100);
    let ex = Exporter::start(o).unwrap();
    ex.handle().send(&request(0, 5), 5);
    ex.handle().send(&request(5, 5), 5);
    let stats = ex.shutdown();
    assert_eq!((stats.spans_failed, stats.spans_exported), (10, 0), "{stats:?}");
}

#[test]
fn an_https_or_malformed_endpoint_is_refused_naming_it() {
    let e = Exporter::start(ExportOptions::new("https://example.com")).unwrap_err().to_string();
    assert!(e.contains("https://example.com") && e.contains("https"), "{e}");
    let e = Exporter::start(ExportOptions::new("localhost:4318")).unwrap_err().to_string();
    assert!(e.contains("localhost:4318"), "{e}");
}

#[test]
fn a_malformed_stream_is_reported_and_later_bytes_are_discarded_without_waiting() {
    let rx = Receiver::start(vec![]);
    let ex = Exporter::start(quick(rx.url())).unwrap();
    let options = ForwardOptions { pipe_bytes: 4096, ..Default::default() };
    let mut fw = Forwarder::new("peer 10.0.0.1:9", options, ex.handle()).unwrap();
    // Far more than the pipe holds: once the parser has stopped, writes must not wait.
    let junk = vec![0x5a; 1 << 16];
    for _ in 0..64 {
        fw.write_all(&junk).unwrap();
    }
    let stats = fw.finish();
    let e = stats.error.as_deref().expect("an error");
    assert!(e.starts_with("peer 10.0.0.1:9: "), "{e}");
    assert_eq!(stats.bytes_in, 64 << 16);
    assert!(stats.bytes_discarded >= (64 << 16) - 4096 - (64 << 10), "{stats:?}");
    assert_eq!(stats.spans_sent, 0);
    assert_eq!(ex.shutdown().requests, 0);
}

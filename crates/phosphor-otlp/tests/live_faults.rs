//! The exporter against collectors that misbehave or set limits (issue 42): requests bounded by
//! bytes and gzipped, a 413 and a connection reset on a large body split, a span too large alone
//! trimmed or rejected, `Retry-After` at shutdown, a collector that never answers, and OTLP
//! JSON. No timed assertions but bounds ("returned within the deadline and 5 s").

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::span::Event;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};
use phosphor_otlp::bound::TRIMMED_ATTRIBUTE;
use phosphor_otlp::export::{Compression, Encoding, ExportOptions, ExportStats, Exporter};
use phosphor_otlp::receiver::{Answer, Receiver};
use phosphor_otlp::{ExportTraceServiceRequest, Span};
use prost::Message as _;

fn text(key: &str, value: String) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(any_value::Value::StringValue(value)) }),
        ..Default::default()
    }
}

/// `n` spans with ids `first..first + n`, each with a log (span event) of `log` bytes.
fn request(first: u64, n: u64, log: usize) -> ExportTraceServiceRequest {
    let spans = (first..first + n)
        .map(|i| Span {
            trace_id: [1; 16].to_vec(),
            span_id: (i + 1).to_be_bytes().to_vec(),
            name: format!("span {i}"),
            start_time_unix_nano: 1_000 + i,
            end_time_unix_nano: 2_000 + i,
            events: vec![Event {
                name: "log".into(),
                attributes: vec![text("message", "m".repeat(log))],
                ..Default::default()
            }],
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

#[test]
fn a_request_over_the_byte_bound_goes_as_pieces_that_fit_and_every_span_arrives() {
    let rx = Receiver::start(vec![]);
    let mut o = quick(rx.url());
    o.max_request_bytes = 256 << 10;
    let ex = Exporter::start(o).unwrap();
    // 40 spans of 100 KiB logs: one 4 MB request before the bound.
    assert!(ex.handle().send(&request(0, 40, 100 << 10), 40));
    let stats = ex.shutdown();
    assert_eq!((stats.spans_exported, accounted(&stats)), (40, 40), "{stats:?}");
    assert_eq!(stats.spans_trimmed, 0, "{stats:?}");
    let got = rx.got();
    assert!(got.bad.is_empty(), "{:?}", got.bad);
    assert_eq!(got.spans.len(), 40);
    assert!(got.requests >= 16, "40 spans of 100 KiB in pieces of 256 KiB: {}", got.requests);
    assert!(got.largest_decoded <= 256 << 10, "a piece of {} bytes", got.largest_decoded);
}

#[test]
fn requests_are_gzipped_by_default_and_plain_when_asked() {
    for (compression, gzipped) in [(Compression::Gzip, true), (Compression::None, false)] {
        let rx = Receiver::start(vec![]);
        let mut o = quick(rx.url());
        o.compression = compression;
        let ex = Exporter::start(o).unwrap();
        ex.handle().send(&request(0, 100, 200), 100);
        let stats = ex.shutdown();
        assert_eq!(stats.spans_exported, 100, "{stats:?}");
        let got = rx.got();
        assert_eq!(got.gzipped, if gzipped { got.requests } else { 0 });
        assert_eq!(got.bytes, stats.bytes_sent);
        assert_eq!(got.bytes_decoded, stats.bytes_encoded);
        assert_eq!(
            got.bytes < got.bytes_decoded,
            gzipped,
            "{} on the wire, {} decoded",
            got.bytes,
            got.bytes_decoded
        );
        let agent = got.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("user-agent")).unwrap();
        assert!(agent.1.starts_with("phosphor/"), "{agent:?}");
    }
}

#[test]
fn a_span_too_large_alone_is_trimmed_marked_and_counted() {
    let rx = Receiver::start(vec![]);
    let ex = Exporter::start(quick(rx.url())).unwrap();
    // A 3 MiB log message in a 1 MiB (default) request.
    ex.handle().send(&request(0, 1, 3 << 20), 1);
    let stats = ex.shutdown();
    assert_eq!((stats.spans_exported, stats.spans_trimmed), (1, 1), "{stats:?}");
    assert!(stats.bytes_trimmed > 2 << 20, "{stats:?}");
    let got = rx.got();
    let span = &got.spans[0];
    let marker = span.attributes.iter().find(|kv| kv.key == TRIMMED_ATTRIBUTE).expect("the marker");
    assert_eq!(
        marker.value.as_ref().unwrap().value,
        Some(any_value::Value::IntValue(stats.bytes_trimmed as i64))
    );
    let Some(any_value::Value::StringValue(message)) =
        &span.events[0].attributes[0].value.as_ref().unwrap().value
    else {
        panic!("a string")
    };
    assert!(message.ends_with("bytes cut]") && message.len() < 1 << 20, "{} bytes", message.len());
}

#[test]
fn a_413_splits_the_request_in_halves_until_the_pieces_are_taken() {
    let rx = Receiver::limited(100 << 10);
    let mut o = quick(rx.url());
    o.compression = Compression::None;
    let ex = Exporter::start(o).unwrap();
    // 64 spans of 6 KiB: about 400 KiB, four times the receiver's limit.
    ex.handle().send(&request(0, 64, 6 << 10), 64);
    let stats = ex.shutdown();
    assert_eq!((stats.spans_exported, stats.spans_failed, stats.spans_rejected), (64, 0, 0), "{stats:?}");
    assert!(stats.requests_split >= 3, "{stats:?}");
    assert!(rx.got().too_large >= 1);
    assert_eq!(rx.got().spans.len(), 64);
}

#[test]
fn a_single_span_refused_as_too_large_is_trimmed_and_one_that_cannot_be_is_rejected() {
    let rx = Receiver::limited(8 << 10);
    let mut o = quick(rx.url());
    o.compression = Compression::None;
    let ex = Exporter::start(o).unwrap();
    ex.handle().send(&request(0, 1, 200 << 10), 1);
    // No string to cut: 2,000 integer attributes.
    let mut r = request(1, 1, 0);
    let span = &mut r.resource_spans[0].scope_spans[0].spans[0];
    span.events.clear();
    span.attributes = (0..2000)
        .map(|i| KeyValue {
            key: format!("k{i}"),
            value: Some(AnyValue { value: Some(any_value::Value::IntValue(i)) }),
            ..Default::default()
        })
        .collect();
    ex.handle().send(&r, 1);
    let stats = ex.shutdown();
    assert_eq!((stats.spans_exported, stats.spans_rejected, stats.spans_too_large), (1, 1, 1), "{stats:?}");
    assert!(stats.spans_trimmed >= 1, "{stats:?}");
    assert!(stats.last_error.as_deref().unwrap().contains("too large"), "{stats:?}");
    assert_eq!(rx.got().spans[0].span_id, 1u64.to_be_bytes());
}

/// A collector that resets a connection whose `Content-Length` passes `limit` (unread bytes
/// closed: the kernel sends RST), and answers 200 to the others, counting their spans.
fn resetting_collector(limit: usize) -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let spans = Arc::new(AtomicU64::new(0));
    let counted = spans.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let counted = counted.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(conn.try_clone().unwrap());
                let mut w = conn;
                loop {
                    let mut len = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap();
                        }
                    }
                    if len > limit {
                        return; // dropped with the body unread: a reset
                    }
                    let mut body = vec![0; len];
                    r.read_exact(&mut body).unwrap();
                    let req = ExportTraceServiceRequest::decode(&body[..]).unwrap();
                    let n: usize =
                        req.resource_spans.iter().flat_map(|r| &r.scope_spans).map(|s| s.spans.len()).sum();
                    counted.fetch_add(n as u64, Ordering::SeqCst);
                    w.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").unwrap();
                }
            });
        }
    });
    (url, spans)
}

#[test]
fn a_connection_reset_while_sending_a_large_body_splits_it_instead_of_retrying_it_unchanged() {
    let (url, received) = resetting_collector(150 << 10);
    let mut o = quick(url);
    o.compression = Compression::None;
    let ex = Exporter::start(o).unwrap();
    // About 1 MB in one request (its encoding is under the default bound).
    ex.handle().send(&request(0, 100, 10 << 10), 100);
    let stats = ex.shutdown();
    assert_eq!((stats.spans_exported, stats.spans_failed), (100, 0), "{stats:?}");
    assert!(stats.requests_split >= 3, "{stats:?}");
    assert_eq!(received.load(Ordering::SeqCst), 100);
}

#[test]
fn a_collector_that_never_answers_holds_shutdown_no_longer_than_the_deadline() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    // Accepts and keeps every connection, reads nothing, answers nothing.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming() {
            held.push(c);
        }
    });
    let mut o = quick(url);
    o.timeout = Duration::from_secs(120);
    o.shutdown_deadline = Duration::from_secs(1);
    let ex = Exporter::start(o).unwrap();
    for b in 0..3 {
        ex.handle().send(&request(b * 5, 5, 10), 5);
    }
    let started = Instant::now();
    let stats = ex.shutdown();
    assert!(started.elapsed() < Duration::from_secs(6), "shutdown took {:?}", started.elapsed());
    assert_eq!((stats.spans_failed, accounted(&stats)), (15, 15), "{stats:?}");
}

/// Sends 4 batches of 5 spans, shuts down at once with a 6 s deadline (the last call its final
/// second), to a receiver that answers `busy` 503s with `Retry-After: 2` first.
fn shutdown_behind_retry_after(busy: usize) -> ExportStats {
    let rx = Receiver::start(vec![Answer::Busy(2); busy]);
    let mut o = quick(rx.url());
    o.backoff_max = Duration::from_secs(10);
    o.shutdown_deadline = Duration::from_secs(6);
    let ex = Exporter::start(o).unwrap();
    for b in 0..4 {
        ex.handle().send(&request(b * 5, 5, 10), 5);
    }
    let started = Instant::now();
    let stats = ex.shutdown();
    assert!(started.elapsed() < Duration::from_secs(11), "shutdown took {:?}", started.elapsed());
    assert_eq!(accounted(&stats), 20, "{stats:?}");
    stats
}

#[test]
fn retry_after_at_shutdown_waits_no_later_than_the_last_call_which_still_sends() {
    // Attempts at 0, 2 and 4 s answered 503; the next Retry-After would pass the deadline, so
    // the last call (at 5 s) tries again, and everything queued goes.
    let stats = shutdown_behind_retry_after(3);
    assert_eq!((stats.spans_exported, stats.spans_failed), (20, 0), "{stats:?}");
}

#[test]
fn a_request_still_refused_at_the_last_call_fails_alone_and_the_queue_behind_it_goes() {
    let stats = shutdown_behind_retry_after(4);
    assert_eq!((stats.spans_exported, stats.spans_failed), (15, 5), "{stats:?}");
    assert!(stats.last_error.as_deref().unwrap().contains("shutdown deadline"), "{stats:?}");
}

#[test]
fn json_requests_follow_the_otlp_json_mapping_and_the_official_messages_decode_them() {
    let r = request(0, 2, 5);
    let json = String::from_utf8(phosphor_otlp::bound::encode(&r, Encoding::Json)).unwrap();
    // Ids as hex, 64-bit integers as decimal strings, lowerCamelCase names.
    assert!(json.contains(r#""traceId":"01010101010101010101010101010101""#), "{json}");
    assert!(json.contains(r#""spanId":"0000000000000001""#), "{json}");
    assert!(json.contains(r#""startTimeUnixNano":"1000""#), "{json}");
    let rx = Receiver::start(vec![Answer::Partial(1)]);
    let mut o = quick(rx.url());
    o.encoding = Encoding::Json;
    let ex = Exporter::start(o).unwrap();
    ex.handle().send(&r, 2);
    let stats = ex.shutdown();
    assert_eq!(
        (stats.spans_exported, stats.spans_rejected),
        (1, 1),
        "the JSON partial success read: {stats:?}"
    );
    let got = rx.got();
    assert!(got.bad.is_empty(), "{:?}", got.bad);
    assert_eq!(got.json, 1);
    assert_eq!(got.spans, r.resource_spans[0].scope_spans[0].spans);
}

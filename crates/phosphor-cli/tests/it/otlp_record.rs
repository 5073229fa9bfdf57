//! `phosphor record --otlp URL`: each connection's trace is written to its file and forwarded as
//! OTLP spans to a receiver built on the official protos (a small HTTP server decoding every
//! request with prost). No timed assertions: waits have generous deadlines.

use std::collections::HashSet;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use phosphor::stream::{Sink, StreamConfig};
use phosphor::{trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig};
use phosphor_otlp::ExportTraceServiceRequest;
use prost::Message;

use crate::cli::scratch;

/// The span ids a receiver got.
type SpanIds = Arc<Mutex<Vec<Vec<u8>>>>;

/// Starts a receiver; returns it and the span ids it gets.
fn receiver() -> (Arc<tiny_http::Server>, SpanIds) {
    let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind the receiver"));
    let got = Arc::new(Mutex::new(Vec::new()));
    let (s, g) = (server.clone(), got.clone());
    std::thread::spawn(move || {
        for mut req in s.incoming_requests() {
            let mut body = Vec::new();
            let _ = req.as_reader().read_to_end(&mut body);
            let status = match ExportTraceServiceRequest::decode(&body[..]) {
                Ok(r) => {
                    let spans =
                        r.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans);
                    g.lock().unwrap().extend(spans.map(|s| s.span_id));
                    200
                }
                Err(_) => 400,
            };
            let _ = req.respond(tiny_http::Response::from_data(Vec::new()).with_status_code(status));
        }
    });
    (server, got)
}

#[test]
fn a_recorded_connection_is_also_forwarded_as_otlp_spans() {
    let (rx, got) = receiver();
    let url = format!("http://{}", rx.server_addr().to_ip().unwrap());
    let dir = scratch("otlp-record");
    let (mut child, lines) = crate::cli::spawn_lines(
        Command::new(env!("CARGO_BIN_EXE_phosphor"))
            .args(["record", "--listen", "127.0.0.1:0", "--connections", "1", "--otlp", &url, "--out"])
            .arg(dir.join("out"))
            .stderr(Stdio::piped()),
    );
    let first = lines.recv_timeout(Duration::from_secs(20)).expect("the server prints its address");
    let addr = first.strip_prefix("listening on ").expect("listening on ADDR").parse().unwrap();
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Stream, 8 << 20)).unwrap();
    let id = log.open_stream(StreamConfig::new(Sink::Tcp(addr))).unwrap();
    let threads: Vec<_> = (0..2u64)
        .map(|_| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..500u64 {
                    trace_scope!(log: &log, "rec", "outer", "i" => i);
                    trace_scope!(log: &log, "rec", "inner");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    log.stop();
    let s = log.stream_stats(id).unwrap();
    assert_eq!(s.events_dropped, 0, "{s:?}");
    let line = lines.recv_timeout(Duration::from_secs(60)).expect("a connection ended");
    assert!(
        line.contains("complete")
            && line.contains("OTLP: 2000 spans made, 0 left out by the selection, 2000 sent"),
        "{line}"
    );
    // The server exits after its one connection, once the exporter has sent what it was given.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "the server did not exit");
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(err.contains("OTLP: 2000 spans exported, 0 dropped (queue full), 0 rejected, 0 failed"), "{err}");
    let got = got.lock().unwrap();
    assert_eq!(got.len(), 2000);
    assert_eq!(got.iter().collect::<HashSet<_>>().len(), 2000, "span ids are unique");
}

#[test]
fn an_https_otlp_url_is_refused_with_exit_status_2() {
    let out = crate::cli::phosphor(
        "otlp-https",
        &["record", "--listen", "127.0.0.1:0", "--otlp", "https://c:4318"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = crate::cli::stderr(&out);
    assert!(err.contains("--otlp") && err.contains("https://c:4318"), "{err}");
}

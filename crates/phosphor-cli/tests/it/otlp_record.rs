//! `phosphor record --otlp URL`: each connection's trace is written to its file and forwarded as
//! OTLP spans to a receiver built on the official protos (a small HTTP server decoding every
//! request with prost). No timed assertions: waits have generous deadlines.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::common::v1::any_value::Value;
use phosphor::stream::{Sink, StreamConfig};
use phosphor::{trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig};
use phosphor_otlp::receiver::Receiver;

use crate::cli::scratch;

/// Runs `phosphor record --otlp` to `rx` with `extra` flags for one connection from a program
/// whose 2 threads each make 500 `outer` scopes holding an `inner` one; returns the connection's
/// line, the server's standard error, once it has exited, and the trace file it wrote.
pub(crate) fn record_forwarding(test: &str, rx: &Receiver, extra: &[&str]) -> (String, String, PathBuf) {
    let dir = scratch(test);
    let (mut child, lines) = crate::cli::spawn_lines(
        Command::new(env!("CARGO_BIN_EXE_phosphor"))
            .args(["record", "--listen", "127.0.0.1:0", "--connections", "1", "--otlp", &rx.url()])
            .args(extra)
            .arg("--out")
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
    let files: Vec<PathBuf> =
        std::fs::read_dir(dir.join("out")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    (line, err, files[0].clone())
}

#[test]
fn a_recorded_connection_is_also_forwarded_as_otlp_spans() {
    let rx = Receiver::start(Vec::new());
    // A hold longer than the run: every parent comes before its children are final.
    let (line, err, file) = record_forwarding("otlp-record", &rx, &["--otlp-hold", "60s"]);
    assert!(
        line.contains("complete")
            && line.contains("OTLP: 2000 spans made, 0 left out by the selection, 2000 handed to the exporter: 2000 delivered"),
        "{line}"
    );
    assert!(
        err.contains("OTLP: 2000 spans delivered, 0 dropped (queue full), 0 rejected, 0 failed"),
        "{err}"
    );
    let got = rx.got();
    assert!(got.bad.is_empty(), "{:?}", got.bad);
    assert_eq!(got.spans.len(), 2000);
    assert_eq!(
        got.spans.iter().map(|s| &s.span_id).collect::<HashSet<_>>().len(),
        2000,
        "span ids are unique"
    );
    // The spans forwarded live are those of the file's conversion (checked against `phosphor
    // stats` in otlp_convert.rs): the same ids, parents, names, times and attributes.
    let pb = file.with_extension("pb");
    let out = crate::cli::phosphor(
        "otlp-record-convert",
        &["convert", file.to_str().unwrap(), "--to", "otlp", "-o", pb.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", crate::cli::stderr(&out));
    let req = phosphor_otlp::request::from_protobuf(&std::fs::read(&pb).unwrap()).unwrap();
    let mut converted: Vec<_> =
        req.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans).collect();
    let mut live = got.spans.clone();
    converted.sort_by(|a, b| a.span_id.cmp(&b.span_id));
    live.sort_by(|a, b| a.span_id.cmp(&b.span_id));
    assert_eq!(live.len(), converted.len());
    for (l, c) in live.iter().zip(&converted) {
        assert_eq!(l, c, "a live span and the file's");
    }
}

#[test]
fn the_otlp_flags_select_spans_name_the_service_and_add_headers() {
    let rx = Receiver::start(Vec::new());
    let flags = [
        "--otlp-path",
        "outer",
        "--otlp-service-name",
        "checkout",
        "--otlp-header",
        "x-tenant=acme",
        "--otlp-hold",
        "100ms",
    ];
    let (line, err, _) = record_forwarding("otlp-record-flags", &rx, &flags);
    assert!(line.contains("OTLP: 2000 spans made, 1000 left out by the selection, 1000 handed to the exporter: 1000 delivered"), "{line}");
    assert!(err.contains("OTLP: 1000 spans delivered"), "{err}");
    let got = rx.got();
    assert_eq!(got.spans.len(), 1000);
    assert!(got.spans.iter().all(|s| s.name == "outer" && s.parent_span_id.is_empty()));
    assert!(
        got.headers.iter().any(|(n, v)| n.eq_ignore_ascii_case("x-tenant") && v == "acme"),
        "{:?}",
        got.headers
    );
    let service = got.resource.as_ref().and_then(|r| r.attributes.iter().find(|a| a.key == "service.name"));
    let value = service.and_then(|a| a.value.as_ref()).and_then(|v| v.value.as_ref());
    assert_eq!(value, Some(&Value::StringValue("checkout".into())));
    // The flags need --otlp, and a header needs its `=`.
    let out = crate::cli::phosphor("otlp-record-flags-bad", &["record", "--otlp-path", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let out = crate::cli::phosphor(
        "otlp-record-flags-bad",
        &["record", "--otlp", "http://127.0.0.1:9", "--otlp-header", "novalue"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(crate::cli::stderr(&out).contains("NAME=VALUE"), "{}", crate::cli::stderr(&out));
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

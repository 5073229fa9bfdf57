//! `phosphor record --otlp` at the end (issue 42): SIGTERM and SIGINT end the open connections,
//! drain the exporter within `--otlp-shutdown-deadline` and print what was delivered, dropped,
//! rejected and failed; a collector that never answers costs at most that deadline; `--otlp`
//! without a URL takes the standard `OTEL_*` variables, and headers come from a file. No timed
//! assertions but bounds.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver as Lines;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::common::v1::any_value::Value;
use phosphor::stream::{Sink, StreamConfig, StreamId};
use phosphor::{trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig};
use phosphor_otlp::receiver::Receiver;

use crate::cli::scratch;

/// Starts `phosphor record --listen 127.0.0.1:0 --out DIR` with `args` and `env`; the child, its
/// stdout's lines, and the address it listens on.
fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (Child, Lines<String>, std::net::SocketAddr) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_phosphor"));
    c.args(["record", "--listen", "127.0.0.1:0"]).args(args).arg("--out").arg(dir).stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let (child, lines) = crate::cli::spawn_lines(&mut c);
    let first = lines.recv_timeout(Duration::from_secs(20)).expect("the server prints its address");
    let addr = first.strip_prefix("listening on ").expect("listening on ADDR").parse().unwrap();
    (child, lines, addr)
}

/// A program streaming to `addr` 500 `outer` scopes each holding an `inner` one (1,000 spans),
/// its stream left open; returns once the server's file holds every byte written.
fn stream_spans(addr: std::net::SocketAddr, dir: &Path) -> (std::sync::Arc<TraceLog>, StreamId) {
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Stream, 8 << 20)).unwrap();
    let id = log.open_stream(StreamConfig::new(Sink::Tcp(addr))).unwrap();
    let l = log.clone();
    std::thread::spawn(move || {
        for i in 0..500u64 {
            trace_scope!(log: &l, "rec", "outer", "i" => i);
            trace_scope!(log: &l, "rec", "inner");
        }
    })
    .join()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = log.stream_stats(id).unwrap();
        let file = std::fs::read_dir(dir).unwrap().next().map(|e| e.unwrap().metadata().unwrap().len());
        if s.events_written >= 1000 && file == Some(s.bytes_written) {
            return (log, id);
        }
        assert!(Instant::now() < deadline, "the server did not get the trace: {s:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sends `signal` to `child`, waits for it to exit (at most 60 s); its status, standard error
/// and how long it took.
fn signal_and_wait(child: &mut Child, signal: i32) -> (std::process::ExitStatus, String, Duration) {
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: `kill` only sends a signal; `pid` is our own child, not yet waited for.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let sent = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(sent.elapsed() < Duration::from_secs(60), "the server did not exit");
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = sent.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status, err, took)
}

#[test]
fn sigterm_ends_the_connections_drains_the_exporter_and_prints_what_was_delivered() {
    for (signal, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGINT, "SIGINT")] {
        let dir = scratch(&format!("otlp-drain-{name}"));
        let rx = Receiver::start(Vec::new());
        // A hold longer than the run: no span is final, so none is sent, before the signal.
        let (mut child, lines, addr) =
            start(&dir.join("out"), &["--otlp", &rx.url(), "--otlp-hold", "600s"], &[]);
        let (_log, _id) = stream_spans(addr, &dir.join("out"));
        assert_eq!(rx.got().span_count, 0, "held until the end of the connection");
        let (status, err, _) = signal_and_wait(&mut child, signal);
        assert!(status.success(), "{err}");
        assert!(err.contains(name), "{err}");
        assert!(
            err.contains("OTLP: 1000 spans delivered, 0 dropped (queue full), 0 rejected, 0 failed"),
            "{err}"
        );
        let line = lines.recv_timeout(Duration::from_secs(20)).expect("the connection's line");
        assert!(line.contains("1000 spans made") && line.contains("1000 handed to the exporter"), "{line}");
        assert_eq!(rx.got().span_count, 1000);
    }
}

#[test]
fn a_collector_that_never_answers_holds_the_recorder_no_longer_than_its_deadline_after_sigterm() {
    let dir = scratch("otlp-drain-silent");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming() {
            held.push(c);
        }
    });
    let args =
        ["--otlp", &url, "--otlp-hold", "10ms", "--otlp-shutdown-deadline", "1s", "--otlp-timeout", "300s"];
    let (mut child, _lines, addr) = start(&dir.join("out"), &args, &[]);
    let (_log, _id) = stream_spans(addr, &dir.join("out"));
    let (status, err, took) = signal_and_wait(&mut child, libc::SIGTERM);
    assert!(status.success(), "{err}");
    // The deadline, the connections' 2 s to hand on their spans, the 1 s margin, and 5 s.
    assert!(took < Duration::from_secs(9), "exited {took:?} after SIGTERM: {err}");
    assert!(
        err.contains("OTLP: 0 spans delivered, 0 dropped (queue full), 0 rejected, 1000 failed"),
        "{err}"
    );
}

#[test]
fn otlp_without_a_url_reads_the_otel_variables_and_headers_come_from_a_file() {
    let dir = scratch("otlp-env");
    let rx = Receiver::start(Vec::new());
    let headers = dir.join("headers");
    std::fs::write(&headers, "# kept out of ps\nauthorization: Bearer s3cret\n").unwrap();
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url()),
        ("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=acme%20corp".to_owned()),
        ("OTEL_SERVICE_NAME", "from-env".to_owned()),
        ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test".to_owned()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let args = ["--connections", "1", "--otlp", "--otlp-headers-file", headers.to_str().unwrap()];
    let (mut child, lines, addr) = start(&dir.join("out"), &args, &env);
    let (log, _id) = stream_spans(addr, &dir.join("out"));
    log.stop();
    let line = lines.recv_timeout(Duration::from_secs(60)).expect("the connection's line");
    assert!(line.contains("1000 delivered, 0 dropped, 0 rejected, 0 failed"), "{line}");
    let status = child.wait().unwrap();
    assert!(status.success());
    let got = rx.got();
    assert_eq!(got.span_count, 1000);
    let header =
        |name: &str| got.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
    assert_eq!(header("authorization").as_deref(), Some("Bearer s3cret"));
    assert_eq!(header("x-tenant").as_deref(), Some("acme corp"));
    assert_eq!(header("content-encoding").as_deref(), Some("gzip"));
    let resource = got.resource.as_ref().unwrap();
    let attr = |key: &str| {
        resource.attributes.iter().find(|kv| kv.key == key).and_then(|kv| kv.value.as_ref()?.value.clone())
    };
    assert_eq!(attr("service.name"), Some(Value::StringValue("from-env".into())));
    assert_eq!(attr("deployment.environment"), Some(Value::StringValue("test".into())));
}

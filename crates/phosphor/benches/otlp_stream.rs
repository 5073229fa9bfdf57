//! Live forwarding (`Sink::Otlp`, feature `otlp`): what it costs the traced program, and how fast
//! spans reach a collector.
//!
//! ```text
//! cargo bench -p phosphor --features otlp --bench otlp_stream -- [--seconds S] [--threads N]
//! ```
//!
//! 1. Exporter throughput: 2,000 requests of 512 spans queued at once to a local receiver (a
//!    tiny_http server decoding each request with prost); spans exported per second of wall time.
//! 2. Producer cost: N threads record scopes flat out for S seconds into a streaming trace whose
//!    one datastream is `Sink::Otlp` to that receiver; the producers' thread CPU time per event
//!    (CPU clock around batches of 1,000, so preemption is not counted) against the limit loop,
//!    and the stream's OTLP figures (made, exported, dropped) once the trace is stopped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};
use phosphor::stream::{OtlpSink, Sink, StreamConfig};
use phosphor::{trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig};
use phosphor_otlp::export::{ExportOptions, Exporter};
use phosphor_otlp::{ExportTraceServiceRequest, Span};
use prost::Message;

/// A receiver counting the spans it decodes.
fn receiver() -> (String, Arc<AtomicU64>) {
    let server = tiny_http::Server::http("127.0.0.1:0").expect("bind the receiver");
    let url = format!("http://{}", server.server_addr().to_ip().unwrap());
    let spans = Arc::new(AtomicU64::new(0));
    let s = spans.clone();
    std::thread::spawn(move || {
        for mut req in server.incoming_requests() {
            let mut body = Vec::new();
            let _ = req.as_reader().read_to_end(&mut body);
            if let Ok(r) = ExportTraceServiceRequest::decode(&body[..]) {
                let n: usize =
                    r.resource_spans.iter().flat_map(|r| &r.scope_spans).map(|s| s.spans.len()).sum();
                // Relaxed: a count read after the exporter has shut down.
                s.fetch_add(n as u64, Ordering::Relaxed);
            }
            let _ = req.respond(tiny_http::Response::from_data(Vec::new()));
        }
    });
    (url, spans)
}

fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: [1] `t` is a valid, writable timespec for the call's duration.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// The limit loop's cost per iteration, ns (median of 9 runs of 10 M).
fn limit_loop_ns() -> f64 {
    let mut runs: Vec<f64> = (0..9)
        .map(|_| {
            let t = Instant::now();
            for i in 0..10_000_000u64 {
                phosphor_limit::limit_step(i, 7);
            }
            t.elapsed().as_nanos() as f64 / 1e7
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[4]
}

fn exporter_throughput(url: &str, received: &AtomicU64) {
    let batch = 512u64;
    let requests = 2_000u64;
    let spans: Vec<Span> = (0..batch)
        .map(|i| Span {
            trace_id: [7; 16].to_vec(),
            span_id: (i + 1).to_be_bytes().to_vec(),
            parent_span_id: 1u64.to_be_bytes().to_vec(),
            name: "bench/span".into(),
            start_time_unix_nano: 1_000 + i,
            end_time_unix_nano: 2_000 + i,
            ..Default::default()
        })
        .collect();
    let request = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans { spans, ..Default::default() }],
            ..Default::default()
        }],
    };
    let mut o = ExportOptions::new(url);
    o.queue_batches = requests as usize;
    o.shutdown_deadline = Duration::from_secs(600);
    let before = received.load(Ordering::Relaxed);
    let t = Instant::now();
    let ex = Exporter::start(o).unwrap();
    let h = ex.handle();
    for _ in 0..requests {
        h.send(&request, batch);
    }
    let stats = ex.shutdown();
    let secs = t.elapsed().as_secs_f64();
    let got = received.load(Ordering::Relaxed) - before;
    println!(
        "exporter: {} spans in {requests} requests of {batch} in {secs:.2} s: {:.0} spans/s exported \
         (receiver decoded {got}; dropped {}, failed {})",
        stats.spans_exported,
        stats.spans_exported as f64 / secs,
        stats.spans_dropped,
        stats.spans_failed
    );
}

fn producer_cost(url: &str, seconds: f64, threads: u64, limit: f64) {
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Stream, 64 << 20)).unwrap();
    let id = log.open_stream(StreamConfig::new(Sink::Otlp(OtlpSink::new(url)))).unwrap();
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let log = log.clone();
            std::thread::spawn(move || {
                let (mut events, mut cpu) = (0u64, 0u64);
                while Instant::now() < end {
                    let c = thread_cpu_ns();
                    for i in 0..1_000u64 {
                        trace_scope!(log: &log, "bench", "scope", "i" => i);
                    }
                    cpu += thread_cpu_ns() - c;
                    events += 1_000;
                }
                (events, cpu)
            })
        })
        .collect();
    let (mut events, mut cpu) = (0u64, 0u64);
    for h in handles {
        let (e, c) = h.join().unwrap();
        events += e;
        cpu += c;
    }
    log.stop();
    let stats = log.stats();
    let s = log.stream_stats(id).unwrap();
    let o = s.otlp.unwrap_or_default();
    let ns = cpu as f64 / events as f64;
    println!(
        "producers: {threads} threads, {events} events in {seconds} s: {ns:.2} ns of CPU per event \
         ({:.2}x the limit loop's {limit:.2} ns); recorded {}, dropped {} (no chunk); stream events \
         dropped {}; OTLP spans made {}, exported {}, dropped {}, failed {}",
        ns / limit,
        stats.recorded,
        stats.dropped.total(),
        s.events_dropped,
        o.spans_made,
        o.spans_exported,
        o.spans_dropped,
        o.spans_failed
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: f64| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (seconds, threads) = (arg("--seconds", 5.0), arg("--threads", 2.0) as u64);
    let limit = limit_loop_ns();
    let (url, received) = receiver();
    exporter_throughput(&url, &received);
    producer_cost(&url, seconds, threads, limit);
}

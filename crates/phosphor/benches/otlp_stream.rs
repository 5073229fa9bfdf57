//! Live forwarding (`Sink::Otlp`, feature `otlp`): what it costs the traced program, and how fast
//! spans reach a collector.
//!
//! ```text
//! cargo bench -p phosphor --features otlp --bench otlp_stream -- [--seconds S] [--threads N] [--rate R]
//! ```
//!
//! 1. Exporter throughput: 2,000 requests of 512 spans queued at once to a local receiver
//!    (`phosphor_otlp::receiver`, decoding each request with prost); spans exported per second of
//!    wall time.
//! 2. Producer cost: N threads (default 2) record scopes with an argument for S seconds (default
//!    5) into a streaming trace, at R scopes per second per thread (default 200,000, paced by the
//!    wall clock in batches of 1,000, like a program that works between its events; `--rate 0`:
//!    flat out), once with the stream's sink discarding the bytes (`Sink::Writer` of
//!    `io::sink()`: the streaming cost alone) and once with `Sink::Otlp` to the receiver. The
//!    figure is the producers' thread CPU time per event (CPU clock around each batch, so
//!    preemption and the pacing's sleeps are not counted), against the limit loop; then what the
//!    stream and its OTLP side did: events dropped, spans made, exported, dropped, failed, and
//!    bytes on the wire per span; then `Sink::Otlp` again with compression off.

use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};
use phosphor::stream::{OtlpSink, Sink, StreamConfig};
use phosphor::{trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig};
use phosphor_otlp::export::{ExportOptions, Exporter};
use phosphor_otlp::receiver::Receiver;
use phosphor_otlp::{ExportTraceServiceRequest, Span};

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

fn exporter_throughput(rx: &Receiver) {
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
    let mut o = ExportOptions::new(rx.url());
    o.queue_batches = requests as usize;
    o.shutdown_deadline = Duration::from_secs(600);
    let before = rx.got().span_count;
    let t = Instant::now();
    let ex = Exporter::start(o).unwrap();
    let h = ex.handle();
    for _ in 0..requests {
        h.send(&request, batch);
    }
    let stats = ex.shutdown();
    let secs = t.elapsed().as_secs_f64();
    let got = rx.got().span_count - before;
    println!(
        "exporter: {} spans in {requests} requests of {batch} in {secs:.2} s: {:.0} spans/s exported \
         (receiver decoded {got}; dropped {}, failed {})",
        stats.spans_exported,
        stats.spans_exported as f64 / secs,
        stats.spans_dropped,
        stats.spans_failed
    );
}

/// How the producers run.
#[derive(Clone, Copy)]
struct Load {
    seconds: f64,
    threads: u64,
    /// Scopes per second per thread (0: flat out).
    rate: f64,
}

/// Runs the producers into a stream whose sink is `sink`; returns the CPU ns per event.
fn producers(sink: Sink, load: Load, label: &str, limit: f64) -> f64 {
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Stream, 64 << 20)).unwrap();
    let id = log.open_stream(StreamConfig::new(sink)).unwrap();
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(load.seconds);
    let handles: Vec<_> = (0..load.threads)
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
                    if load.rate > 0.0 {
                        // The schedule: `events` by now; sleep off any lead.
                        let due = start + Duration::from_secs_f64(events as f64 / load.rate);
                        if let Some(lead) = due.checked_duration_since(Instant::now()) {
                            std::thread::sleep(lead);
                        }
                    }
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
    let ns = cpu as f64 / events as f64;
    print!(
        "{label}: {} threads, {events} events in {} s: {ns:.2} ns of CPU per event ({:.2}x the limit \
         loop's {limit:.2} ns); recorded {}, dropped {} (no chunk); stream events dropped {}",
        load.threads,
        load.seconds,
        ns / limit,
        stats.recorded,
        stats.dropped.total(),
        s.events_dropped,
    );
    match s.otlp {
        Some(o) => println!(
            "; OTLP spans made {}, exported {}, dropped {}, failed {}; {} requests, {:.1} bytes a span \
             on the wire",
            o.spans_made,
            o.spans_exported,
            o.spans_dropped,
            o.spans_failed,
            o.requests,
            o.bytes_sent as f64 / o.spans_exported.max(1) as f64
        ),
        None => println!(),
    }
    ns
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
    let load = Load {
        seconds: arg("--seconds", 5.0),
        threads: arg("--threads", 2.0) as u64,
        rate: arg("--rate", 200_000.0),
    };
    let limit = limit_loop_ns();
    let rx = Receiver::counting();
    exporter_throughput(&rx);
    let discard = producers(Sink::Writer(Box::new(std::io::sink())), load, "stream, bytes discarded", limit);
    let otlp = producers(Sink::Otlp(OtlpSink::new(rx.url())), load, "stream, Sink::Otlp (gzip)", limit);
    println!("Sink::Otlp against the discarding stream: {:.2}x the producers' CPU per event", otlp / discard);
    let mut plain = OtlpSink::new(rx.url());
    plain.export.compression = phosphor::stream::OtlpCompression::None;
    let plain = producers(Sink::Otlp(plain), load, "stream, Sink::Otlp (not compressed)", limit);
    println!("Sink::Otlp not compressed against the discarding stream: {:.2}x", plain / discard);
}

//! Continuous tracing, sustained: producer threads record at a set rate into a streaming trace
//! whose collector writes a file, for a set time; then the file is read back with the real reader
//! and the accounting checked exactly (received + dropped == emitted).
//!
//! ```text
//! cargo bench -p phosphor --bench streaming -- [--seconds S] [--threads N] [--rate EVENTS_PER_S]
//!     [--out FILE] [--buffer MIB] [--scan] [--compression CODEC]
//! ```
//!
//! `--rate 0` records flat out. `--scan` doubles the rate from 2.5 M events/s until events are
//! dropped, and reports the highest rate sustained with zero loss. Each run also reports the
//! collector thread's CPU time (from `/proc/self/task/*/stat`), the producers' CPU time per event
//! (their thread CPU clock around each batch of 1,000, so preemption is not counted), and that
//! cost as a ratio to the limit loop measured in the same process. `--compression` is the
//! datastream's codec (`none`, `lz4`, `zstd`, `zstd:LEVEL`; default the stream default,
//! `phosphor::stream::DEFAULT_COMPRESSION`); each run reports the file's bytes per event.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use phosphor::format::file::Reader;
use phosphor::stream::{Sink, StreamConfig, DEFAULT_COMPRESSION};
use phosphor::{trace_instant, BufferMode, Compression, TraceConfig, TraceLog, TraceLogConfig};

struct Options {
    seconds: f64,
    threads: u64,
    rate: u64,
    out: std::path::PathBuf,
    buffer_mib: usize,
    scan: bool,
    compression: Compression,
}

fn options() -> Options {
    let mut o = Options {
        seconds: 5.0,
        threads: 4,
        rate: 0,
        out: "/dev/shm/phosphor-streaming.phos".into(),
        buffer_mib: 64,
        scan: false,
        compression: DEFAULT_COMPRESSION,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut v = || it.next().cloned().unwrap_or_default();
        match a.as_str() {
            "--seconds" => o.seconds = v().parse().expect("--seconds S"),
            "--threads" => o.threads = v().parse().expect("--threads N"),
            "--rate" => o.rate = v().parse().expect("--rate EVENTS_PER_S"),
            "--out" => o.out = v().into(),
            "--buffer" => o.buffer_mib = v().parse().expect("--buffer MIB"),
            "--scan" => o.scan = true,
            "--compression" => o.compression = v().parse().expect("--compression CODEC"),
            _ => {} // cargo bench passes `--bench`
        }
    }
    o
}

/// CPU time of this process's threads whose name starts with `name` (as `/proc` shows names: 15
/// bytes at most), ns.
fn thread_cpu_ns(name: &str) -> u64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.trim_end().starts_with(&name[..name.len().min(15)]) {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // Fields after the parenthesised name: state is field 3; utime and stime are 14 and 15.
        let rest = stat.rsplit_once(") ").map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
            + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
        total += ticks * 1_000_000_000 / hz;
    }
    total
}

/// This thread's CPU time, ns: what a producer's batch cost it, preemption excluded.
fn thread_cpu_now() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write into; the clock id is a constant Linux supports.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
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

struct Run {
    emitted: u64,
    recorded: u64,
    dropped: u64,
    /// The drops by reason, those that happened.
    reasons: String,
    received: u64,
    markers: u64,
    stream_dropped: u64,
    seconds: f64,
    producer_ns_per_event: f64,
    collector_cpu_ns: u64,
    bytes: u64,
}

fn run(o: &Options, rate: u64) -> Run {
    let log = TraceLog::new(TraceLogConfig::default()).expect("a log");
    log.start(TraceConfig::new(BufferMode::Stream, o.buffer_mib << 20)).expect("start");
    let id = log
        .open_stream(StreamConfig::new(Sink::File(o.out.clone())).compression(o.compression))
        .expect("a datastream");
    let cpu0 = thread_cpu_ns("phosphor-");
    let go = Arc::new(AtomicBool::new(true));
    let busy_ns = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let producers: Vec<_> = (0..o.threads)
        .map(|t| {
            let (log, go, busy_ns) = (log.clone(), go.clone(), busy_ns.clone());
            let per_thread = rate / o.threads;
            std::thread::spawn(move || {
                const BATCH: u64 = 1000;
                let t0 = Instant::now();
                let mut n = 0u64;
                let mut busy = 0u64;
                while go.load(Ordering::Relaxed) {
                    let b0 = thread_cpu_now();
                    for i in 0..BATCH {
                        trace_instant!(log: &log, "soak", "tick", "t" => t, "i" => n + i);
                    }
                    busy += thread_cpu_now() - b0;
                    n += BATCH;
                    if per_thread > 0 {
                        // Paced: sleep until this thread is back on its schedule.
                        let due = Duration::from_secs_f64(n as f64 / per_thread as f64);
                        if let Some(wait) = due.checked_sub(t0.elapsed()) {
                            std::thread::sleep(wait);
                        }
                    }
                }
                busy_ns.fetch_add(busy, Ordering::Relaxed);
                n
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(o.seconds));
    go.store(false, Ordering::Relaxed);
    let emitted: u64 = producers.into_iter().map(|p| p.join().expect("a producer")).sum();
    let seconds = started.elapsed().as_secs_f64();
    // The dispatcher and the datastream's thread.
    let collector_cpu_ns = thread_cpu_ns("phosphor-").saturating_sub(cpu0);
    log.stop();
    let stats = log.stats();
    let s = log.stream_stats(id).expect("stream figures");
    // Read it back.
    let bytes = std::fs::read(&o.out).expect("the stream's file");
    let mut r = Reader::new(&bytes[..]).expect("a trace file");
    let (mut received, mut markers) = (0u64, 0u64);
    r.for_each_event(|e| {
        if e.callsite.category == "phosphor" && e.callsite.name == "saturation" {
            markers += 1;
        } else {
            received += 1;
        }
    })
    .expect("the whole file reads");
    assert!(r.trailer().is_some(), "the file is complete");
    let _ = std::fs::remove_file(&o.out);
    Run {
        emitted,
        recorded: stats.recorded,
        dropped: stats.dropped.total(),
        reasons: stats
            .dropped
            .by_reason()
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(r, n)| format!("{r} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        received,
        markers,
        stream_dropped: s.events_dropped,
        seconds,
        producer_ns_per_event: busy_ns.load(Ordering::Relaxed) as f64 / emitted.max(1) as f64,
        collector_cpu_ns,
        bytes: bytes.len() as u64,
    }
}

fn report(r: &Run, limit: f64) {
    let ok = r.received + r.dropped == r.emitted && r.received + r.markers + r.stream_dropped == r.recorded;
    println!(
        "emitted {} in {:.1} s = {:.2} M events/s; received {} ({:.2} M/s), dropped {} (pool: {}) + {} (sink); \
         markers {}; {:.0} MB written ({:.0} MB/s, {:.2} bytes per event)",
        r.emitted,
        r.seconds,
        r.emitted as f64 / r.seconds / 1e6,
        r.received,
        r.received as f64 / r.seconds / 1e6,
        r.dropped,
        if r.reasons.is_empty() { "none" } else { &r.reasons },
        r.stream_dropped,
        r.markers,
        r.bytes as f64 / 1e6,
        r.bytes as f64 / 1e6 / r.seconds,
        r.bytes as f64 / r.received.max(1) as f64
    );
    println!(
        "  producers {:.2} ns of CPU per event ({:.2}× the limit loop's {:.2} ns); collector CPU {:.2} s \
         ({:.0}% of one core, {:.1} ns per received event)",
        r.producer_ns_per_event,
        r.producer_ns_per_event / limit,
        limit,
        r.collector_cpu_ns as f64 / 1e9,
        r.collector_cpu_ns as f64 / 1e9 / r.seconds * 100.0,
        r.collector_cpu_ns as f64 / r.received.max(1) as f64
    );
    println!("  check: received + dropped == emitted: {}", if ok { "yes" } else { "NO" });
    assert!(ok, "the accounting does not add up");
}

fn main() {
    let o = options();
    let limit = limit_loop_ns();
    println!(
        "{} producer threads, {:.0} s per run, {} MiB pool, file {}, compression {}",
        o.threads,
        o.seconds,
        o.buffer_mib,
        o.out.display(),
        o.compression
    );
    if !o.scan {
        let rate =
            if o.rate == 0 { "flat out".to_owned() } else { format!("{} M events/s", o.rate as f64 / 1e6) };
        println!("rate: {rate}");
        report(&run(&o, o.rate), limit);
        return;
    }
    let (mut rate, mut best) = (2_500_000u64, None);
    loop {
        println!("rate: {:.1} M events/s", rate as f64 / 1e6);
        let r = run(&o, rate);
        report(&r, limit);
        // Sustained: no loss, and the producers kept the pace (within 5%).
        let kept_pace = r.emitted as f64 / r.seconds >= 0.95 * rate as f64;
        if r.dropped > 0 || r.stream_dropped > 0 || !kept_pace {
            break;
        }
        best = Some(r.received as f64 / r.seconds);
        rate *= 2;
    }
    match best {
        Some(b) => println!("highest rate sustained with zero loss: {:.2} M events/s", b / 1e6),
        None => println!("no rate tried was sustained with zero loss"),
    }
}

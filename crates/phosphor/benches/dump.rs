//! Flight-recorder dumps of a running trace (issue 17): producer threads log flat out into a Ring
//! buffer while the main thread takes dumps at a fixed interval. Reports the time of each
//! `snapshot()` and of `snapshot()` + `save()` (min, median, max), and the events the producers
//! dropped while the dumps ran, by reason (a dump should cost them nothing but what the ring
//! overwrites anyway).
//!
//! ```text
//! cargo bench -p phosphor --bench dump -- [--dumps N] [--interval-ms MS] [--threads N]
//!     [--buffer MIB] [--runs R] [--out DIR]
//! ```
//!
//! Defaults: 20 dumps every 5 ms, 2 producers, a 4 MiB ring, 1 run, dump files in `/dev/shm`.
//! The ring is full before the first dump, so every dump copies all of it. Each run checks the
//! accounting exactly before it prints a figure: `recorded + dropped == emitted` for the trace,
//! and every dump's file reads back with as many events as its snapshot counted.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use phosphor::format::file::Reader;
use phosphor::{trace_instant, BufferMode, Drops, TraceConfig, TraceLog, TraceLogConfig};

struct Options {
    dumps: usize,
    interval: Duration,
    threads: u64,
    buffer_mib: usize,
    runs: usize,
    out: PathBuf,
}

fn options() -> Options {
    let shm = Path::new("/dev/shm");
    let mut o = Options {
        dumps: 20,
        interval: Duration::from_millis(5),
        threads: 2,
        buffer_mib: 4,
        runs: 1,
        out: if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() },
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut v = || it.next().cloned().unwrap_or_default();
        match a.as_str() {
            "--dumps" => o.dumps = v().parse().expect("--dumps N"),
            "--interval-ms" => o.interval = Duration::from_millis(v().parse().expect("--interval-ms MS")),
            "--threads" => o.threads = v().parse().expect("--threads N"),
            "--buffer" => o.buffer_mib = v().parse().expect("--buffer MIB"),
            "--runs" => o.runs = v().parse().expect("--runs R"),
            "--out" => o.out = v().into(),
            _ => {} // cargo bench passes `--bench`
        }
    }
    assert!(o.dumps > 0 && o.threads > 0 && o.runs > 0, "nothing to measure");
    o
}

/// One dump's figures.
struct Dump {
    snapshot: Duration,
    snapshot_and_save: Duration,
    events: u64,
    bytes: u64,
    path: PathBuf,
}

struct Run {
    seconds: f64,
    emitted: u64,
    recorded: u64,
    dropped: Drops,
    /// Drops counted from just before the first dump to just after the last.
    during: Drops,
    /// Events the producers emitted over the same span (they publish their count per batch of
    /// 1,000, so this is exact to a batch per producer).
    emitted_during: u64,
    dumps: Vec<Dump>,
}

fn run(o: &Options) -> Run {
    let log = TraceLog::new(TraceLogConfig::default()).expect("a log");
    log.start(TraceConfig::new(BufferMode::Ring, o.buffer_mib << 20)).expect("start");
    let go = Arc::new(AtomicBool::new(true));
    let progress: Arc<Vec<AtomicU64>> = Arc::new((0..o.threads).map(|_| AtomicU64::new(0)).collect());
    let started = Instant::now();
    let producers: Vec<_> = (0..o.threads)
        .map(|t| {
            let (log, go, progress) = (log.clone(), go.clone(), progress.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                // Relaxed: a stop flag and a progress counter; the count is returned by `join`.
                while go.load(Ordering::Relaxed) {
                    for i in 0..1000 {
                        trace_instant!(log: &log, "dump", "tick", "t" => t, "i" => n + i);
                    }
                    n += 1000;
                    progress[t as usize].store(n, Ordering::Relaxed);
                }
                n
            })
        })
        .collect();
    // Relaxed: progress counters.
    let emitted_now = || progress.iter().map(|p| p.load(Ordering::Relaxed)).sum::<u64>();
    // The ring is full (it has started overwriting) before the first dump.
    while log.stats().chunks_overwritten == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let (before, emitted_before) = (log.stats().dropped, emitted_now());
    let mut dumps = Vec::with_capacity(o.dumps);
    for d in 0..o.dumps {
        std::thread::sleep(o.interval);
        let path = o.out.join(format!("phosphor-bench-dump-{}-{d}.phos", std::process::id()));
        let t0 = Instant::now();
        let snap = log.snapshot().expect("a snapshot");
        let t1 = Instant::now();
        snap.save(&path).expect("a saved dump");
        let t2 = Instant::now();
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        dumps.push(Dump {
            snapshot: t1 - t0,
            snapshot_and_save: t2 - t0,
            events: snap.stats().recorded,
            bytes,
            path,
        });
    }
    let (after, emitted_after) = (log.stats().dropped, emitted_now());
    // Relaxed: see the producers.
    go.store(false, Ordering::Relaxed);
    let emitted: u64 = producers.into_iter().map(|p| p.join().expect("a producer")).sum();
    let seconds = started.elapsed().as_secs_f64();
    log.stop();
    let stats = log.stats();
    Run {
        seconds,
        emitted,
        recorded: stats.recorded,
        dropped: stats.dropped,
        during: after.since(&before),
        emitted_during: emitted_after - emitted_before,
        dumps,
    }
}

/// Reads every dump back and checks the trace's accounting; panics (no figure printed) if either
/// is wrong.
fn check(r: &Run) {
    assert_eq!(
        r.recorded + r.dropped.total(),
        r.emitted,
        "the accounting does not add up: recorded {} + dropped {} != emitted {}",
        r.recorded,
        r.dropped.total(),
        r.emitted
    );
    for (d, dump) in r.dumps.iter().enumerate() {
        let bytes = std::fs::read(&dump.path).expect("a dump file");
        let mut reader = Reader::new(&bytes[..]).expect("a trace file");
        let mut n = 0u64;
        reader.for_each_event(|_| n += 1).expect("the whole dump reads");
        assert!(reader.trailer().is_some(), "dump {d} is complete");
        assert_eq!(n, dump.events, "dump {d} holds the events its snapshot counted");
        assert!(n > 0, "dump {d} is empty");
        let _ = std::fs::remove_file(&dump.path);
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// `min / median / max` of `v`.
fn spread(mut v: Vec<Duration>) -> String {
    v.sort();
    format!("min {}, median {}, max {}", ms(v[0]), ms(v[v.len() / 2]), ms(v[v.len() - 1]))
}

fn reasons(d: &Drops) -> String {
    let s: Vec<String> =
        d.by_reason().into_iter().filter(|(_, n)| *n > 0).map(|(r, n)| format!("{r} {n}")).collect();
    if s.is_empty() {
        "none".to_owned()
    } else {
        s.join(", ")
    }
}

fn report(k: usize, o: &Options, r: &Run) {
    let lost = r.during.total() - r.during.overwritten;
    println!(
        "run {}: emitted {} in {:.2} s ({:.1} M events/s), recorded {}, dropped {} ({})",
        k + 1,
        r.emitted,
        r.seconds,
        r.emitted as f64 / r.seconds / 1e6,
        r.recorded,
        r.dropped.total(),
        reasons(&r.dropped)
    );
    println!("  snapshot():          {}", spread(r.dumps.iter().map(|d| d.snapshot).collect()));
    println!("  snapshot() + save(): {}", spread(r.dumps.iter().map(|d| d.snapshot_and_save).collect()));
    let mut sizes: Vec<(u64, u64)> = r.dumps.iter().map(|d| (d.events, d.bytes)).collect();
    sizes.sort();
    let (events, bytes) = sizes[sizes.len() / 2];
    println!("  a dump (median): {events} events, {:.1} MB", bytes as f64 / 1e6);
    println!(
        "  during the {} dumps: {} events emitted (to a batch of 1,000 per producer); dropped {} ({}); \
         {} ({:.2}%) for a reason other than overwrite",
        o.dumps,
        r.emitted_during,
        r.during.total(),
        reasons(&r.during),
        lost,
        lost as f64 * 100.0 / r.emitted_during.max(1) as f64
    );
    println!("  check: recorded + dropped == emitted, and every dump reads back whole: yes");
}

fn main() {
    let o = options();
    println!(
        "{} producer threads flat out into a {} MiB Ring; {} dumps every {} ms to {}",
        o.threads,
        o.buffer_mib,
        o.dumps,
        o.interval.as_millis(),
        o.out.display()
    );
    for k in 0..o.runs {
        let r = run(&o);
        check(&r);
        report(k, &o, &r);
    }
}

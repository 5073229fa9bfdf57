//! `phosphor-bench-rss MODE`: the resident memory of a small program that links Phosphor and
//! nothing else of the harness (no peer is linked in), measured from inside through
//! `/proc/self/status`. `phosphor-bench` runs it in each mode and prints the figures.
//!
//! Modes (each prints `key value` lines, values in bytes):
//! - `idle`: a program that never starts a trace. `r0` is read before the first Phosphor call,
//!   with a second thread already started and waiting; then the main thread runs
//!   [`instrumented`] (ten callsites of every kind, none traced) 1,000 times (`r1`), and the
//!   second thread does the same (`r2`, read while it still lives).
//! - `baseline`: the same program with [`plain`] in place of [`instrumented`]: the same loop,
//!   the same mutex and the same thread, without the macros. `idle` minus `baseline` is what
//!   Phosphor adds.
//! - `callsites N`: N callsites built at run time and registered (what a callsite's first
//!   `check` does, traced or not); the growth per callsite.
//! - `tracing`: `r0` before `start`; a 64 MiB Ring trace recorded by 4 threads until it has
//!   wrapped twice, read while the threads still hold their chunks (`r1`, and the peak `hwm`);
//!   after `stop` with the trace kept (`r2`) and dropped (`r3`).

#[allow(dead_code)]
#[path = "../sys.rs"]
mod sys;

use std::hint::black_box;
use std::sync::{Barrier, Mutex};
use std::time::Duration;

use phosphor::__macro_support::{check, Callsite, CallsiteMeta, Phase};
use phosphor::{BufferMode, TraceConfig, TraceLog};
use sys::Rss;

const RING_BYTES: usize = 64 << 20;
const TRACING_THREADS: u64 = 4;

/// Ten callsites of every kind, none of them traced while no trace runs.
#[inline(never)]
fn instrumented(i: u64, m: &Mutex<u64>) {
    phosphor::trace_instant!("app", "instant", "a" => i as i64, "b" => 7u64);
    phosphor::trace_instant!("app", "dyn", "s" => "text");
    phosphor::trace_counter!("app", "counter", i);
    {
        phosphor::trace_scope!("app", "scope");
        black_box(i);
    }
    phosphor::trace_begin!("app", "slice");
    phosphor::trace_end!("app", "slice");
    phosphor::trace_async_begin!("app", "async", i);
    phosphor::trace_async_end!("app", "async", i);
    phosphor::trace_complete!("app", "complete", phosphor::now(), Duration::from_nanos(5));
    let mut g = phosphor::trace_lock_guard!("app", "lock", m.lock().unwrap_or_else(|p| p.into_inner()));
    *g += 1;
}

/// [`instrumented`] without the macros.
#[inline(never)]
fn plain(i: u64, m: &Mutex<u64>) {
    black_box(i);
    *m.lock().unwrap_or_else(|p| p.into_inner()) += 1;
}

fn print(prefix: &str, r: Rss) {
    println!("{prefix}.rss {}", r.rss);
    println!("{prefix}.anon {}", r.anon);
    println!("{prefix}.file {}", r.file);
}

fn idle(work: fn(u64, &Mutex<u64>)) {
    let m = Mutex::new(0);
    // The second thread exists before `r0`, so that what creating a thread costs (its stack, the
    // code that starts it) is not in the figures; it runs the workload only between `r1` and `r2`.
    let go = Barrier::new(2);
    let done = Barrier::new(2);
    let exit = Barrier::new(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            go.wait();
            for i in 0..1_000 {
                work(i, &m);
            }
            done.wait();
            exit.wait();
        });
        let r0 = Rss::now();
        for i in 0..1_000 {
            work(i, &m);
        }
        let r1 = Rss::now();
        go.wait();
        done.wait();
        let r2 = Rss::now();
        exit.wait();
        print("r0", r0);
        print("r1", r1);
        print("r2", r2);
    });
    assert!(!TraceLog::global().is_enabled(), "the idle program never traces");
}

fn callsites(n: usize) {
    let r0 = Rss::now();
    let log = TraceLog::global();
    for k in 0..n {
        let name: &'static str = Box::leak(format!("site-{k}").into_boxed_str());
        let cs: &'static Callsite = Box::leak(Box::new(Callsite::new(CallsiteMeta::new(
            "app",
            name,
            Phase::Instant,
            ["", ""],
            file!(),
            1,
        ))));
        let _ = check(log, cs);
    }
    let r1 = Rss::now();
    print("r0", r0);
    print("r1", r1);
    println!("callsites {n}");
    println!("callsite_size {}", std::mem::size_of::<Callsite>());
}

fn tracing() {
    let log = TraceLog::global();
    let r0 = Rss::now();
    log.start(TraceConfig::new(BufferMode::Ring, RING_BYTES)).expect("the global log is idle");
    // Enough records to wrap the Ring twice.
    let per_thread = 2 * (RING_BYTES as u64 / 32) / TRACING_THREADS;
    let written = Barrier::new(TRACING_THREADS as usize + 1);
    let release = Barrier::new(TRACING_THREADS as usize + 1);
    let mut r1 = Rss::default();
    std::thread::scope(|s| {
        for _ in 0..TRACING_THREADS {
            s.spawn(|| {
                for i in 0..per_thread {
                    phosphor::trace_instant!("app", "instant", "a" => i as i64, "b" => 7u64);
                }
                written.wait();
                release.wait();
            });
        }
        written.wait();
        r1 = Rss::now();
        release.wait();
    });
    log.stop();
    let trace = log.take_trace().expect("a stopped trace");
    let r2 = Rss::now();
    let stats = trace.stats().clone();
    drop(trace);
    let r3 = Rss::now();
    print("r0", r0);
    print("r1", r1);
    println!("hwm {}", r1.peak.max(Rss::now().peak));
    print("r2", r2);
    print("r3", r3);
    println!("buffer {RING_BYTES}");
    println!("emitted {}", per_thread * TRACING_THREADS);
    println!("recorded {}", stats.recorded);
    println!("overwritten {}", stats.dropped.overwritten);
    println!("dropped {}", stats.dropped.total());
}

fn main() {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("idle") => idle(instrumented),
        Some("baseline") => idle(plain),
        Some("callsites") => callsites(args.next().and_then(|n| n.parse().ok()).unwrap_or(10_000)),
        Some("tracing") => tracing(),
        _ => {
            eprintln!("usage: phosphor-bench-rss <idle|baseline|callsites N|tracing>");
            std::process::exit(2);
        }
    }
}

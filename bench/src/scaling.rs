//! Scaling: the same workload on 1, 2, 4 and 16 threads at once.
//!
//! Each thread runs the same number of events, so the work grows with the threads. The threads
//! warm up (Phosphor gives each its tenant on its first event), meet at a barrier, and run; the
//! figures are the total throughput (all events over the wall time from the first thread's start
//! to the last thread's end) and each thread's CPU time per event. The limit loop runs
//! the same way, as the machine's own scaling: on a 2-vCPU VM shared with other jobs, two threads
//! may not get two whole cores. Beyond the CPU count the threads are oversubscribed: throughput
//! cannot grow, and a thread's wall time per event includes the time it waited for a CPU, which is
//! why the per-event cost is quoted in thread CPU time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::Instant;

use phosphor::{BufferMode, TraceConfig, TraceLog, TraceLogConfig};

use crate::limit::limit_batch;
use crate::phos::{count_emitted, instant_batch};
use crate::stats::median;
use crate::sys::thread_cpu_ns;

/// Events each thread runs before the barrier.
const WARM_EVENTS: u64 = 1_000;

/// A workload that scales.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// The limit loop.
    Limit,
    /// Phosphor's instant event with two arguments (needs the Phosphor session).
    PhosInstant,
    /// The same into an independent log with a [`SMALL_RING_BYTES`] Ring, whose chunks stay in
    /// the caches: against [`Work::PhosInstant`], it tells what writing 64 MiB to memory costs
    /// from what the threads cost each other (both take a new chunk every 127 events).
    PhosInstantSmallRing,
}

/// The Ring of [`Work::PhosInstantSmallRing`]'s log: 64 chunks.
pub const SMALL_RING_BYTES: usize = 256 << 10;

/// The independent log of [`Work::PhosInstantSmallRing`], and the events emitted into it.
static SMALL_RING: OnceLock<(Arc<TraceLog>, AtomicU64)> = OnceLock::new();

/// [`SMALL_RING`], started on first use.
fn small_ring() -> &'static (Arc<TraceLog>, AtomicU64) {
    SMALL_RING.get_or_init(|| {
        let log = TraceLog::new(TraceLogConfig::default()).expect("a free log slot");
        log.start(TraceConfig::new(BufferMode::Ring, SMALL_RING_BYTES)).expect("a fresh log");
        (log, AtomicU64::new(0))
    })
}

/// `n` instant events into the small-ring log.
#[inline(never)]
pub fn small_ring_instant_batch(n: u64) {
    let log: &TraceLog = &small_ring().0;
    for i in 0..n {
        phosphor::trace_instant!(log: log, "bench", "instant_small_ring", "a" => i as i64, "b" => 7u64);
    }
}

/// Stops the small-ring log, if it was used, and checks that every event emitted into it was
/// recorded or overwritten by its Ring, with no other drop. `None` if it was never used.
pub fn stop_small_ring() -> Option<(bool, String)> {
    let (log, emitted) = SMALL_RING.get()?;
    log.stop();
    let stats = log.stats();
    // Relaxed: the threads that added to it have been joined.
    let emitted = emitted.load(Ordering::Relaxed);
    let d = &stats.dropped;
    let ok = stats.recorded + d.total() == emitted && d.total() == d.overwritten;
    Some((
        ok,
        format!(
            "{emitted} emitted = {} recorded + {} overwritten; other drops {}",
            stats.recorded,
            d.overwritten,
            d.total() - d.overwritten
        ),
    ))
}

impl Work {
    /// The table's label.
    pub fn label(self) -> &'static str {
        match self {
            Work::Limit => "limit loop",
            Work::PhosInstant => "Phosphor instant, 64 MiB Ring",
            Work::PhosInstantSmallRing => "Phosphor instant, 256 KiB Ring (cached)",
        }
    }

    fn batch(self, n: u64) {
        match self {
            Work::Limit => limit_batch(n),
            Work::PhosInstant => {
                instant_batch(n);
                count_emitted(n);
            }
            Work::PhosInstantSmallRing => {
                small_ring_instant_batch(n);
                // Relaxed: a tally read after the threads are joined.
                small_ring().1.fetch_add(n, Ordering::Relaxed);
            }
        }
    }
}

/// One run of `threads` threads.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ScaleFig {
    /// Events per second, all threads.
    pub throughput: f64,
    /// Median over the threads of thread CPU ns per event.
    pub thread_cpu: f64,
}

/// Runs `work` on `threads` threads, `n` events each. Each thread takes its own start and end
/// times: the thread that released the barrier may not run again until a worker yields its CPU.
pub fn run_threads(work: Work, threads: usize, n: u64) -> ScaleFig {
    let start = Barrier::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    work.batch(WARM_EVENTS);
                    start.wait();
                    let t0 = Instant::now();
                    let c0 = thread_cpu_ns();
                    work.batch(n);
                    let cpu = thread_cpu_ns() - c0;
                    (t0, Instant::now(), cpu)
                })
            })
            .collect();
        let runs: Vec<(Instant, Instant, u64)> =
            handles.into_iter().map(|h| h.join().expect("a bench thread panicked")).collect();
        let first = runs.iter().map(|r| r.0).min().expect("at least one thread");
        let last = runs.iter().map(|r| r.1).max().expect("at least one thread");
        let wall = (last - first).as_secs_f64();
        let mut cpu: Vec<f64> = runs.iter().map(|r| r.2 as f64 / n as f64).collect();
        ScaleFig { throughput: (threads as u64 * n) as f64 / wall, thread_cpu: median(&mut cpu) }
    })
}

/// A workload at one thread count, over the rounds.
#[derive(Clone, Debug)]
pub struct ScalePoint {
    /// The workload.
    pub work: Work,
    /// Threads.
    pub threads: usize,
    /// Events per thread.
    pub events: u64,
    /// One entry per round.
    pub rounds: Vec<ScaleFig>,
}

impl ScalePoint {
    /// Median throughput, events/s.
    pub fn throughput(&self) -> f64 {
        median(&mut self.rounds.iter().map(|r| r.throughput).collect::<Vec<_>>())
    }

    /// Median thread CPU ns/event.
    pub fn thread_cpu(&self) -> f64 {
        median(&mut self.rounds.iter().map(|r| r.thread_cpu).collect::<Vec<_>>())
    }

    /// Median over rounds of this throughput divided by `base`'s in the same round.
    pub fn speedup(&self, base: &ScalePoint) -> f64 {
        median(
            &mut self
                .rounds
                .iter()
                .zip(&base.rounds)
                .map(|(a, b)| a.throughput / b.throughput)
                .collect::<Vec<_>>(),
        )
    }
}

/// Runs every (workload, thread count) pair once per round, interleaved (rotated each round).
/// `events` gives each workload's events per thread.
pub fn measure(
    works: &[(Work, u64)],
    threads: &[usize],
    rounds: usize,
    mut progress: impl FnMut(&str),
) -> Vec<ScalePoint> {
    let mut points: Vec<ScalePoint> = works
        .iter()
        .flat_map(|&(work, events)| {
            threads.iter().map(move |&t| ScalePoint { work, threads: t, events, rounds: Vec::new() })
        })
        .collect();
    let k = points.len();
    for r in 0..rounds {
        progress(&format!("scaling round {}/{rounds}", r + 1));
        for j in 0..k {
            let p = &mut points[(j + r) % k];
            let fig = run_threads(p.work, p.threads, p.events);
            p.rounds.push(fig);
        }
    }
    points
}

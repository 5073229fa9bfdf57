//! The system context's overhead (issue 23): what collecting context switches and CPU samples
//! costs a workload, and what the `phosphor-system` collector thread costs in CPU time.
//!
//! ```text
//! cargo bench -p phosphor --bench system -- [--secs S] [--rounds R] [--spin-us US]
//! ```
//!
//! Two workloads, each run alternately with and without the system context, `R` rounds (default
//! 5) of `S` seconds (default 2), every run inside a traced scope per unit of work (the same trace
//! either way, so only the system context differs):
//!
//! * **switches**: two threads ping-pong a byte through two pipes, each spinning `US` µs
//!   (default 40) before it answers, which makes about 10,000 context switches a second per
//!   thread; throughput is round trips a second; the system context is `context_switches(true)`;
//! * **samples**: two threads burn the CPU in a loop; throughput is loop rounds a second; the
//!   system context is `cpu_samples(999)` with `context_switches(true)`.
//!
//! Throughput is counted per second of the two threads' own CPU time (`CLOCK_THREAD_CPUTIME_ID`),
//! not of wall time: the kernel's work for the perf events (the sampling interrupt, the switch
//! records) is charged to the thread it observes, so it shows there, while time other processes
//! take from a shared machine does not. For each workload it prints the medians of that
//! throughput with and without, the change in percent, the switches or samples a second the trace
//! collected, and the collector thread's CPU time as a percentage of one CPU (from
//! `/proc/self/task/TID/schedstat`: on-CPU nanoseconds).

use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use phosphor::format::system::{Availability, SwitchKind};
use phosphor::{trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig};

struct Options {
    secs: f64,
    rounds: usize,
    spin_us: u64,
}

fn options() -> Options {
    let mut o = Options { secs: 2.0, rounds: 5, spin_us: 40 };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--secs" => o.secs = value().parse().expect("--secs S"),
            "--rounds" => o.rounds = value().parse().expect("--rounds R"),
            "--spin-us" => o.spin_us = value().parse().expect("--spin-us US"),
            "--bench" => {}
            other => panic!("unknown option {other}"),
        }
    }
    o
}

/// What one run measured.
struct Run {
    /// Units of work a second of the workers' CPU time.
    rate: f64,
    /// Switch-outs (blocked or preempted) or samples a second in the trace.
    collected: f64,
    /// The collector's CPU time over the run's wall time.
    collector_cpu: f64,
}

/// The on-CPU nanoseconds of this process's thread named `name`, if there is one.
fn thread_cpu_ns(name: &str) -> Option<u64> {
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let dir = task.ok()?.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim_end() == name {
            let stat = std::fs::read_to_string(dir.join("schedstat")).ok()?;
            return stat.split_whitespace().next()?.parse().ok();
        }
    }
    None
}

/// The calling thread's CPU time, in nanoseconds.
fn own_cpu_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a pointer to a timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn spin(d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

fn pipe() -> (std::fs::File, std::fs::File) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: two new descriptors, each owned by one File.
    unsafe { (std::fs::File::from_raw_fd(fds[0]), std::fs::File::from_raw_fd(fds[1])) }
}

/// Runs `work` on two threads for `secs` in a trace of `log` with `config`; `work` returns its
/// units done. `samples`: count samples rather than switch-outs as collected.
fn measure(
    log: &TraceLog,
    config: TraceConfig,
    secs: f64,
    samples: bool,
    work: impl Fn(usize, &AtomicBool) -> u64 + Send + Sync + Clone + 'static,
) -> Run {
    log.start(config).unwrap();
    let go = Arc::new(AtomicBool::new(true));
    let threads: Vec<_> = (0..2)
        .map(|i| {
            let (go, work) = (go.clone(), work.clone());
            std::thread::spawn(move || {
                let cpu = own_cpu_ns();
                (work(i, &go), own_cpu_ns() - cpu)
            })
        })
        .collect();
    // The collector's CPU time over the steady part of the run (threads attached).
    std::thread::sleep(Duration::from_millis(50));
    let (t0, c0) = (Instant::now(), thread_cpu_ns("phosphor-system"));
    std::thread::sleep(Duration::from_secs_f64(secs));
    let (wall, c1) = (t0.elapsed(), thread_cpu_ns("phosphor-system"));
    // Relaxed: a stop flag.
    go.store(false, Ordering::Relaxed);
    let (done, cpu_ns) =
        threads.into_iter().map(|t| t.join().unwrap()).fold((0, 0), |(u, c), (du, dc)| (u + du, c + dc));
    let elapsed = wall + Duration::from_millis(50);
    log.stop();
    let trace = log.take_trace().unwrap();
    let collected = trace.system().map_or(0, |s| {
        if samples {
            s.samples.len()
        } else {
            s.switches.iter().filter(|w| w.kind != SwitchKind::In).count()
        }
    });
    if let Some(st) = trace.system().and_then(|s| s.status.as_ref()) {
        for a in [&st.switches, &st.samples] {
            if let Availability::Unavailable(why) = a {
                panic!("the system refuses perf events here: {why}");
            }
        }
        assert_eq!(st.kernel_lost + st.dropped, 0, "records lost: {st:?}");
    }
    let collector_ns = match (c0, c1) {
        (Some(a), Some(b)) => b - a,
        _ => 0,
    };
    Run {
        rate: done as f64 / (cpu_ns as f64 / 1e9),
        collected: collected as f64 / elapsed.as_secs_f64(),
        collector_cpu: collector_ns as f64 / wall.as_nanos() as f64,
    }
}

fn ping_pong(spin_us: u64) -> impl Fn(usize, &AtomicBool) -> u64 + Send + Sync + Clone + 'static {
    let (a_read, a_write) = pipe();
    let (b_read, b_write) = pipe();
    let ends = Arc::new(std::sync::Mutex::new([Some((a_read, b_write)), Some((b_read, a_write))]));
    move |i, go| {
        let (mut read, mut write) = ends.lock().unwrap()[i].take().expect("one thread per end");
        let mut byte = [0u8];
        let mut rounds = 0;
        if i == 0 {
            write.write_all(&byte).unwrap();
        }
        // Relaxed: a stop flag; the last byte either side writes ends the other.
        while go.load(Ordering::Relaxed) {
            trace_scope!("bench", "round");
            if read.read(&mut byte).unwrap() == 0 {
                break;
            }
            spin(Duration::from_micros(spin_us));
            if write.write_all(&byte).is_err() {
                break;
            }
            rounds += 1;
        }
        drop(write); // ends the other side's read
        rounds
    }
}

fn burn(_: usize, go: &AtomicBool) -> u64 {
    let mut rounds = 0u64;
    let mut x = 1u64;
    // Relaxed: a stop flag.
    while go.load(Ordering::Relaxed) {
        trace_scope!("bench", "burn");
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        rounds += 1;
    }
    rounds
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let o = options();
    let log = TraceLog::global();
    log.configure(TraceLogConfig::default()).unwrap();
    let base = || TraceConfig::new(BufferMode::Ring, 64 << 20);
    println!("system context overhead: {} rounds of {} s, medians", o.rounds, o.secs);
    println!(
        "{:<10} {:>14} {:>14} {:>8} {:>14} {:>13}",
        "workload", "off (/cpu-s)", "on (/cpu-s)", "change", "collected/s", "collector CPU"
    );
    for (name, samples) in [("switches", false), ("samples", true)] {
        let (mut off, mut on, mut collected, mut cpu) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..o.rounds {
            let with = if samples {
                base().context_switches(true).cpu_samples(999)
            } else {
                base().context_switches(true)
            };
            let (a, b) = if samples {
                (measure(log, base(), o.secs, true, burn), measure(log, with, o.secs, true, burn))
            } else {
                (
                    measure(log, base(), o.secs, false, ping_pong(o.spin_us)),
                    measure(log, with, o.secs, false, ping_pong(o.spin_us)),
                )
            };
            off.push(a.rate);
            on.push(b.rate);
            collected.push(b.collected);
            cpu.push(b.collector_cpu);
        }
        let (off, on) = (median(off), median(on));
        println!(
            "{name:<10} {off:>14.0} {on:>14.0} {:>7.2}% {:>14.0} {:>12.3}%",
            (on / off - 1.0) * 100.0,
            median(collected),
            median(cpu) * 100.0
        );
    }
}

//! An HTTP server (axum on a two-worker tokio runtime) under an in-process load generator
//! (keep-alive HTTP/1.1 over raw TCP, on a runtime of its own): untraced, with everything of
//! `phosphor::tokio` on (the task hooks, each poll's wait, a flight recorder's ring with a
//! long-poll trigger), and, with feature `console`, with tokio-console's subscriber
//! (`console_subscriber::init`).
//!
//! Two figures per measurement: requests per second, and the **CPU time per request** of the
//! server side, read from per-thread CPU clocks over the same window: the server runtime's
//! threads (`pthread_getcpuclockid` of each, taken in `on_thread_start`), and the whole process
//! less the load generator's thread (so the tracer's own threads count: Phosphor's trigger and
//! dump writer, tokio-console's aggregator). On a shared machine the request rate follows the
//! other tenants' load; the CPU a request costs moves far less.
//!
//! Each measurement is a child process of one mode, so that a subscriber set for the process does
//! not outlive its round; the modes alternate round by round (their order flips every round), and
//! each mode's ratios to the untraced run of the same round are given ("paired"). Each load is
//! measured in every round: saturating (each connection sends its next request when the last
//! response is in) and, with `--rates`, at fixed rates below saturation (each connection paced by a
//! timer), where the CPU per request is not a throughput figure.
//!
//! ```text
//! RUSTFLAGS="--cfg tokio_unstable" cargo bench -p phosphor-bench --features tokio-server --bench tokio_server
//! RUSTFLAGS="--cfg tokio_unstable" cargo bench -p phosphor-bench --features tokio-server,console --bench tokio_server
//! ```
//!
//! Options after `--`: `--rounds N` (default 5), `--seconds S` per measurement (default 3),
//! `--connections C` (default 32), `--rates R1,R2,...` requests per second of the loads
//! (default `0,3000`; 0 is saturating).
//!
//! `--count MODE --requests N` instead runs one mode's fixed number of requests in this process
//! and ends, for an instruction count under callgrind (`scripts/callgrind-server.sh`).
//! `scripts/bench-server-ab.sh` runs the `--child` measurements of two builds of this benchmark
//! interleaved (a change's before and after), by wall clock.

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BODY: &str = "hello from phosphor's tokio benchmark\n";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Untraced,
    Phosphor,
    /// Phosphor without `wait_ns` (`TaskHooks::wait_ns(false)`): not in the timed rounds, for
    /// `--count` (the instruction counts of `scripts/callgrind-server.sh`).
    PhosphorNoWait,
    Console,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Untraced => "untraced",
            Mode::Phosphor => "phosphor",
            Mode::PhosphorNoWait => "phosphor-nowait",
            Mode::Console => "console",
        }
    }
    fn parse(s: &str) -> Mode {
        match s {
            "untraced" => Mode::Untraced,
            "phosphor" => Mode::Phosphor,
            "phosphor-nowait" => Mode::PhosphorNoWait,
            "console" => Mode::Console,
            _ => panic!("unknown mode {s}"),
        }
    }
}

#[derive(Clone, Debug)]
struct Options {
    rounds: usize,
    seconds: f64,
    connections: usize,
    /// Requests per second of each load (0: saturating).
    rates: Vec<f64>,
}

fn options(args: &[String]) -> Options {
    let mut o = Options { rounds: 5, seconds: 3.0, connections: 32, rates: vec![0.0, 3000.0] };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{a} needs a value")).clone();
        match a.as_str() {
            "--rounds" => o.rounds = value().parse().unwrap(),
            "--seconds" => o.seconds = value().parse().unwrap(),
            "--connections" => o.connections = value().parse().unwrap(),
            "--rates" => o.rates = value().split(',').map(|r| r.trim().parse().unwrap()).collect(),
            _ => {}
        }
    }
    o
}

async fn hello() -> &'static str {
    BODY
}

/// One connection's loop until `stop`: a request, then its whole response; with `period`, the
/// requests are paced by a timer whose first tick is at `first`.
async fn client(
    addr: std::net::SocketAddr,
    done: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    pace: Option<(tokio::time::Instant, Duration)>,
) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let mut timer = pace.map(|(first, period)| {
        let mut t = tokio::time::interval_at(first, period);
        // Ticks stay on their grid (the timer's millisecond lateness does not slow the rate); a
        // server too slow for it gets fewer requests, not a burst.
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        t
    });
    let mut buf = Vec::with_capacity(4096);
    while !stop.load(Ordering::Relaxed) {
        if let Some(t) = &mut timer {
            t.tick().await;
        }
        exchange(&mut s, &mut buf).await;
        done.fetch_add(1, Ordering::Relaxed);
    }
}

/// One request on `s`, then its whole response (read into `buf`).
async fn exchange(s: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) {
    s.write_all(b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n").await.unwrap();
    buf.clear();
    loop {
        let mut chunk = [0u8; 1024];
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the server closed the connection");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(head) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            if buf.len() >= head + 4 + BODY.len() {
                return;
            }
        }
    }
}

/// One connection's `n` requests, each sent when the last response is in.
async fn client_count(addr: std::net::SocketAddr, n: u64) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let mut buf = Vec::with_capacity(4096);
    for _ in 0..n {
        exchange(&mut s, &mut buf).await;
    }
}

/// A CPU clock's time in nanoseconds (`None` if the clock is gone: its thread ended).
fn cpu_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a timespec we own; an invalid clock id is an error return, not UB.
    let r = unsafe { libc::clock_gettime(clock, &mut t) };
    (r == 0).then(|| t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64)
}

/// The calling thread's CPU clock.
fn this_thread_clock() -> libc::clockid_t {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `pthread_self()` is the calling thread, alive; `clock` is ours to write.
    let r = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
    assert_eq!(r, 0, "pthread_getcpuclockid");
    clock
}

/// The CPU clocks of the server runtime's threads (its workers, and any blocking thread).
static SERVER_CLOCKS: Mutex<Vec<libc::clockid_t>> = Mutex::new(Vec::new());

/// CPU times at one instant: each server thread's, the process's, the load generator's thread.
struct CpuReading {
    server: Vec<(libc::clockid_t, u64)>,
    process: u64,
    load: u64,
}

fn read_cpu() -> CpuReading {
    let clocks = SERVER_CLOCKS.lock().unwrap().clone();
    CpuReading {
        server: clocks.into_iter().filter_map(|c| Some((c, cpu_ns(c)?))).collect(),
        process: cpu_ns(libc::CLOCK_PROCESS_CPUTIME_ID).unwrap(),
        load: cpu_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap(),
    }
}

/// One measurement's result.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    /// Requests per second.
    rate: f64,
    /// CPU ns per request of the server runtime's threads.
    workers: f64,
    /// CPU ns per request of the process less the load generator's thread.
    server: f64,
    /// Times the flight recorder's trigger fired in the run (Phosphor's mode; warm-up
    /// included), each writing or joining a dump: that writing is in `server`, not `workers`.
    fired: f64,
}

/// A server of one mode, serving on its runtime.
struct Server {
    mode: Mode,
    runtime: tokio::runtime::Runtime,
    addr: std::net::SocketAddr,
    trigger_dir: std::path::PathBuf,
}

/// Starts the axum server of `mode` on a two-worker runtime; in Phosphor's mode, a flight
/// recorder's ring dumped on a `long poll` over `long_poll`.
fn start_server(mode: Mode, long_poll: Duration) -> Server {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(2).enable_all();
    builder.on_thread_start(|| SERVER_CLOCKS.lock().unwrap().push(this_thread_clock()));
    let trigger_dir = std::env::temp_dir().join(format!("phosphor-tokio-bench-{}", std::process::id()));
    match mode {
        Mode::Untraced => {}
        Mode::Phosphor | Mode::PhosphorNoWait => {
            if !phosphor::tokio::HOOKS_AVAILABLE {
                panic!("tokio has no task hooks: build with RUSTFLAGS=\"--cfg tokio_unstable\"");
            }
            // The flight recorder: a ring of the last events, dumped on a long poll.
            let config = phosphor::TraceConfig::new(phosphor::BufferMode::Ring, 64 << 20)
                .trigger_dir(&trigger_dir)
                .trigger(phosphor::trigger::Trigger::slower_than("tokio", "long poll", long_poll));
            phosphor::TraceLog::global().start(config).unwrap();
            let hooks = phosphor::tokio::TaskHooks::new().long_poll(long_poll);
            hooks.wait_ns(mode == Mode::Phosphor).install(&mut builder);
        }
        Mode::Console => console(),
    }
    let runtime = builder.build().unwrap();
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move {
        let app = axum::Router::new().route("/", axum::routing::get(hello));
        axum::serve(listener, app).await.unwrap();
    });
    Server { mode, runtime, addr, trigger_dir }
}

/// Stops `server` (and Phosphor's trace): the flight recorder's triggers fired, and the events
/// its ring held at the end.
fn stop_server(server: Server) -> (u64, u64) {
    drop(server.runtime);
    if !matches!(server.mode, Mode::Phosphor | Mode::PhosphorNoWait) {
        return (0, 0);
    }
    let log = phosphor::TraceLog::global();
    let fired = log.triggers().fired;
    log.stop();
    let recorded = log.take_trace().map_or(0, |t| t.stats().recorded);
    eprintln!("phosphor: {recorded} events in the ring at the end, triggers {:?}", log.triggers());
    let _ = std::fs::remove_dir_all(&server.trigger_dir);
    (fired, recorded)
}

/// One measurement in this process, after a warm-up, at `rate` requests/s (0: saturating).
fn measure(mode: Mode, o: &Options, rate: f64) -> Sample {
    let server = start_server(mode, phosphor::tokio::DEFAULT_LONG_POLL);
    let addr = server.addr;
    // The load generator: its own runtime, on this thread, untraced.
    let load = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let sample = load.block_on(async {
        let connections = o.connections as u32;
        // Each connection's share of the rate, their first ticks spread over one period.
        let period = (rate > 0.0).then(|| Duration::from_secs_f64(f64::from(connections) / rate));
        let now = tokio::time::Instant::now();
        for i in 0..connections {
            let pace = period.map(|p| (now + p * i / connections, p));
            tokio::spawn(client(addr, done.clone(), stop.clone(), pace));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (start, before, cpu0) = (Instant::now(), done.load(Ordering::Relaxed), read_cpu());
        tokio::time::sleep(Duration::from_secs_f64(o.seconds)).await;
        let (n, cpu1, elapsed) = (done.load(Ordering::Relaxed) - before, read_cpu(), start.elapsed());
        stop.store(true, Ordering::Relaxed);
        // The server threads' CPU over the window (threads seen at both ends).
        let workers: u64 = cpu1
            .server
            .iter()
            .filter_map(|(c, t1)| cpu0.server.iter().find(|(c0, _)| c0 == c).map(|(_, t0)| t1 - t0))
            .sum();
        let server = (cpu1.process - cpu0.process) - (cpu1.load - cpu0.load);
        let n = n.max(1) as f64;
        Sample {
            rate: n / elapsed.as_secs_f64(),
            workers: workers as f64 / n,
            server: server as f64 / n,
            fired: 0.0,
        }
    });
    drop(load);
    let (fired, _) = stop_server(server);
    Sample { fired: fired as f64, ..sample }
}

/// `--count MODE`: a fixed number of requests, for an instruction count
/// (`scripts/callgrind-server.sh` runs it under callgrind): `--connections` connections each
/// send `--requests / --connections` requests, each when the last response is in, and the
/// process ends. No clock decides how much work is done, so two runs of one mode do the same
/// requests, and the difference of two runs' counts (N and 2N requests) is N requests' cost
/// with the setup's cancelled. `--long-poll-ms` sets Phosphor's long-poll threshold (and
/// trigger), default 10.
fn count(mode: Mode, o: &Options, requests: u64, long_poll: Duration) {
    let server = start_server(mode, long_poll);
    let addr = server.addr;
    let load = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let connections = o.connections as u64;
    assert!(requests % connections == 0, "--requests must be a multiple of --connections");
    load.block_on(async {
        let clients: Vec<_> =
            (0..connections).map(|_| tokio::spawn(client_count(addr, requests / connections))).collect();
        for c in clients {
            c.await.unwrap();
        }
    });
    drop(load);
    let (fired, recorded) = stop_server(server);
    println!(
        "mode {} requests {requests} connections {connections} fired {fired} recorded {recorded}",
        mode.name()
    );
}

#[cfg(feature = "console")]
fn console() {
    if !cfg!(tokio_unstable) {
        panic!("tokio-console needs RUSTFLAGS=\"--cfg tokio_unstable\"");
    }
    console_subscriber::init();
}

#[cfg(not(feature = "console"))]
fn console() {
    panic!("built without feature console");
}

fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn median(v: Vec<f64>) -> f64 {
    quantile(v, 0.5)
}

/// One load's table: each mode's medians, and its ratios to the untraced run of each round.
fn table(modes: &[Mode], samples: &[Vec<Sample>]) {
    println!(
        "{:>9} {:>10} {:>8} {:>17} {:>13} {:>13} {:>9} {:>19} {:>9} {:>19}",
        "mode",
        "req/s",
        "paired",
        "min-max req/s",
        "workers ns/req",
        "server ns/req",
        "paired",
        "p25-p75",
        "paired",
        "p25-p75"
    );
    println!("{:>75}{:>30}", "(workers CPU/req ratio)", "(server CPU/req ratio)");
    let base = &samples[0];
    for (m, s) in modes.iter().zip(samples) {
        let col = |f: fn(&Sample) -> f64| s.iter().map(f).collect::<Vec<f64>>();
        let paired =
            |f: fn(&Sample) -> f64| -> Vec<f64> { s.iter().zip(base).map(|(x, u)| f(x) / f(u)).collect() };
        let rates = col(|x| x.rate);
        let (lo, hi) = (quantile(rates.clone(), 0.0), quantile(rates.clone(), 1.0));
        let pw = paired(|x| x.workers);
        let ps = paired(|x| x.server);
        println!(
            "{:>9} {:>10.0} {:>8.3} {:>8.0}-{:<8.0} {:>13.0} {:>13.0} {:>9.3} {:>9.3}-{:<9.3} {:>9.3} {:>9.3}-{:<9.3}",
            m.name(),
            median(rates),
            median(paired(|x| x.rate)),
            lo,
            hi,
            median(col(|x| x.workers)),
            median(col(|x| x.server)),
            median(pw.clone()),
            quantile(pw.clone(), 0.25),
            quantile(pw, 0.75),
            median(ps.clone()),
            quantile(ps.clone(), 0.25),
            quantile(ps, 0.75),
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = options(&args);
    if let Some(at) = args.iter().position(|a| a == "--count") {
        let value = |flag: &str, default: u64| -> u64 {
            args.iter().position(|a| a == flag).map_or(default, |i| args[i + 1].parse().unwrap())
        };
        let long_poll = Duration::from_millis(value("--long-poll-ms", 10));
        count(Mode::parse(&args[at + 1]), &o, value("--requests", 3200), long_poll);
        return;
    }
    if let Some(at) = args.iter().position(|a| a == "--child") {
        let rate: f64 = args[at + 2].parse().unwrap();
        let s = measure(Mode::parse(&args[at + 1]), &o, rate);
        println!("{} {} {} {}", s.rate, s.workers, s.server, s.fired);
        return;
    }
    let mut modes = vec![Mode::Untraced, Mode::Phosphor];
    if cfg!(feature = "console") {
        modes.push(Mode::Console);
    }
    let loads: Vec<String> = o
        .rates
        .iter()
        .map(|&r| if r > 0.0 { format!("{r} requests/s") } else { "saturating".into() })
        .collect();
    println!(
        "tokio HTTP server (axum, 2 workers), {} keep-alive connections from a load runtime, {} s a measurement, {} rounds; loads: {}",
        o.connections,
        o.seconds,
        o.rounds,
        loads.join(", ")
    );
    let exe = std::env::current_exe().unwrap();
    // By load, by mode, by round.
    let mut samples: Vec<Vec<Vec<Sample>>> = vec![vec![Vec::new(); modes.len()]; o.rates.len()];
    for round in 0..o.rounds {
        for (l, &rate) in o.rates.iter().enumerate() {
            // Alternate the order too, so that no mode always runs after the same one.
            let order: Vec<usize> =
                if round % 2 == 0 { (0..modes.len()).collect() } else { (0..modes.len()).rev().collect() };
            for i in order {
                let out = Command::new(&exe)
                    .args(["--child", modes[i].name(), &rate.to_string()])
                    .args(["--seconds", &o.seconds.to_string(), "--connections", &o.connections.to_string()])
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                let text = String::from_utf8_lossy(&out.stdout);
                let f: Vec<f64> = text.split_whitespace().map(|x| x.parse().unwrap()).collect();
                let s = Sample { rate: f[0], workers: f[1], server: f[2], fired: f[3] };
                println!(
                    "round {round} {:>14} {:>9}: {:>8.0} requests/s, workers {:>6.0} ns/request, server {:>6.0} ns/request, {} triggers fired",
                    loads[l],
                    modes[i].name(),
                    s.rate,
                    s.workers,
                    s.server,
                    s.fired
                );
                samples[l][i].push(s);
            }
        }
    }
    // Ratios to the untraced run of the same round (seconds apart, so they share most of the
    // machine's noise): their median and quartiles.
    for (l, by_mode) in samples.iter().enumerate() {
        println!("\nload: {}", loads[l]);
        table(&modes, by_mode);
    }
}

//! An HTTP server (axum on a two-worker tokio runtime) under an in-process load generator
//! (keep-alive HTTP/1.1 over raw TCP, on a runtime of its own): requests per second untraced, with
//! everything of `phosphor::tokio` on (the task hooks, each poll's wait, a flight recorder's ring
//! with a long-poll trigger), and, with feature `console`, with tokio-console's subscriber
//! (`console_subscriber::init`).
//!
//! Each measurement is a child process of one mode, so that a subscriber set for the process does
//! not outlive its round; the modes alternate round by round, and the table gives each mode's
//! median and its ratio to the untraced median of the same run.
//!
//! ```text
//! RUSTFLAGS="--cfg tokio_unstable" cargo bench -p phosphor-bench --features tokio-server --bench tokio_server
//! RUSTFLAGS="--cfg tokio_unstable" cargo bench -p phosphor-bench --features tokio-server,console --bench tokio_server
//! ```
//!
//! Options after `--`: `--rounds N` (default 5), `--seconds S` per measurement (default 3),
//! `--connections C` (default 32).

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BODY: &str = "hello from phosphor's tokio benchmark\n";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Untraced,
    Phosphor,
    Console,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Untraced => "untraced",
            Mode::Phosphor => "phosphor",
            Mode::Console => "console",
        }
    }
    fn parse(s: &str) -> Mode {
        match s {
            "untraced" => Mode::Untraced,
            "phosphor" => Mode::Phosphor,
            "console" => Mode::Console,
            _ => panic!("unknown mode {s}"),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Options {
    rounds: usize,
    seconds: f64,
    connections: usize,
}

fn options(args: &[String]) -> Options {
    let mut o = Options { rounds: 5, seconds: 3.0, connections: 32 };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{a} needs a value")).clone();
        match a.as_str() {
            "--rounds" => o.rounds = value().parse().unwrap(),
            "--seconds" => o.seconds = value().parse().unwrap(),
            "--connections" => o.connections = value().parse().unwrap(),
            _ => {}
        }
    }
    o
}

async fn hello() -> &'static str {
    BODY
}

/// One connection's loop: a request, then its whole response, until `stop`.
async fn client(addr: std::net::SocketAddr, done: Arc<AtomicU64>, stop: Arc<AtomicBool>) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let request = b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n";
    let mut buf = Vec::with_capacity(4096);
    while !stop.load(Ordering::Relaxed) {
        s.write_all(request).await.unwrap();
        buf.clear();
        loop {
            let mut chunk = [0u8; 1024];
            let n = s.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the server closed the connection");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(head) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                if buf.len() >= head + 4 + BODY.len() {
                    break;
                }
            }
        }
        done.fetch_add(1, Ordering::Relaxed);
    }
}

/// One measurement in this process: requests per second over `seconds`, after a warm-up.
fn measure(mode: Mode, o: Options) -> f64 {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(2).enable_all();
    let trigger_dir = std::env::temp_dir().join(format!("phosphor-tokio-bench-{}", std::process::id()));
    match mode {
        Mode::Untraced => {}
        Mode::Phosphor => {
            if !phosphor::tokio::HOOKS_AVAILABLE {
                panic!("tokio has no task hooks: build with RUSTFLAGS=\"--cfg tokio_unstable\"");
            }
            // The flight recorder: a ring of the last events, dumped on a poll over 10 ms.
            let config = phosphor::TraceConfig::new(phosphor::BufferMode::Ring, 64 << 20)
                .trigger_dir(&trigger_dir)
                .trigger(phosphor::trigger::Trigger::slower_than(
                    "tokio",
                    "long poll",
                    Duration::from_millis(10),
                ));
            phosphor::TraceLog::global().start(config).unwrap();
            phosphor::tokio::instrument(&mut builder);
        }
        Mode::Console => console(),
    }
    let server = builder.build().unwrap();
    let listener = server.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    server.spawn(async move {
        let app = axum::Router::new().route("/", axum::routing::get(hello));
        axum::serve(listener, app).await.unwrap();
    });
    // The load generator: its own runtime and thread, untraced.
    let load = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let rate = load.block_on(async {
        for _ in 0..o.connections {
            tokio::spawn(client(addr, done.clone(), stop.clone()));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (start, before) = (Instant::now(), done.load(Ordering::Relaxed));
        tokio::time::sleep(Duration::from_secs_f64(o.seconds)).await;
        let n = done.load(Ordering::Relaxed) - before;
        let rate = n as f64 / start.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        rate
    });
    drop(load);
    drop(server);
    if mode == Mode::Phosphor {
        let log = phosphor::TraceLog::global();
        log.stop();
        let recorded = log.take_trace().map_or(0, |t| t.stats().recorded);
        eprintln!("phosphor: {recorded} events in the ring at the end, triggers {:?}", log.triggers());
        let _ = std::fs::remove_dir_all(&trigger_dir);
    }
    rate
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

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = options(&args);
    if let Some(at) = args.iter().position(|a| a == "--child") {
        let rate = measure(Mode::parse(&args[at + 1]), o);
        println!("{rate}");
        return;
    }
    let mut modes = vec![Mode::Untraced, Mode::Phosphor];
    if cfg!(feature = "console") {
        modes.push(Mode::Console);
    }
    println!(
        "tokio HTTP server (axum, 2 workers), {} keep-alive connections from a load runtime, {} s a measurement, {} rounds",
        o.connections, o.seconds, o.rounds
    );
    let exe = std::env::current_exe().unwrap();
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    for round in 0..o.rounds {
        // Alternate the order too, so that no mode always runs after the same one.
        let order: Vec<usize> =
            if round % 2 == 0 { (0..modes.len()).collect() } else { (0..modes.len()).rev().collect() };
        for i in order {
            let out = Command::new(&exe)
                .args(["--child", modes[i].name()])
                .args(["--seconds", &o.seconds.to_string(), "--connections", &o.connections.to_string()])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let rate: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
            println!("round {round} {:>9}: {rate:>10.0} requests/s", modes[i].name());
            rates[i].push(rate);
        }
    }
    // Two ratios to the untraced runs: of the medians, and the median of each round's own ratio
    // (the runs of a round are seconds apart, so they share most of the machine's noise).
    let base = median(rates[0].clone());
    println!(
        "{:>9} {:>14} {:>14} {:>14} {:>22}",
        "mode", "median req/s", "median ratio", "paired ratio", "min-max req/s"
    );
    for (m, r) in modes.iter().zip(&rates) {
        let (lo, hi) = (r.iter().copied().fold(f64::MAX, f64::min), r.iter().copied().fold(0.0, f64::max));
        let paired = median(r.iter().zip(&rates[0]).map(|(x, u)| x / u).collect());
        let m_rate = median(r.clone());
        println!(
            "{:>9} {m_rate:>14.0} {:>14.3} {paired:>14.3} {lo:>10.0}-{hi:<10.0}",
            m.name(),
            m_rate / base
        );
    }
}

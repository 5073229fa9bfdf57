//! A program that can be driven from outside with `phosphor call`: it registers a few commands and
//! the built-in trace commands, serves them on its control socket, and runs a small workload until
//! it is told to quit.
//!
//! ```text
//! cargo build -p phosphor-cli --example remote_commands
//! target/debug/examples/remote_commands &
//! phosphor ls                                   # its pid and socket
//! phosphor call <pid> help
//! phosphor call <pid> 'config:setRange mi=10'   # max takes its default, 100
//! phosphor call <pid> 'trace.start categories=burst'
//! phosphor call <pid> 'work:burst n=500'
//! phosphor call <pid> 'trace.dump path=/tmp/now.phos' && phosphor info /tmp/now.phos
//! phosphor call <pid> app:quit
//! ```
//!
//! Options: `--socket PATH` (default `$XDG_RUNTIME_DIR/phosphor/<pid>.sock`), `--max-request N`
//! bytes and `--handler-timeout-ms N` (the server's limits), `--lifetime-s N` (it quits by itself
//! after that long; default 600). It prints `socket <path>` once it serves.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use phosphor::control::{self, Limits};

static MIN: AtomicI64 = AtomicI64::new(0);
static MAX: AtomicI64 = AtomicI64::new(100);
static QUIT: AtomicBool = AtomicBool::new(false);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut socket = None;
    let mut limits = Limits::default();
    let mut lifetime = Duration::from_secs(600);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--socket" => socket = Some(value()?.into()),
            "--max-request" => limits.max_request = value()?.parse()?,
            "--handler-timeout-ms" => limits.handler_timeout = Duration::from_millis(value()?.parse()?),
            "--lifetime-s" => lifetime = Duration::from_secs(value()?.parse()?),
            _ => return Err(format!("unknown option {arg}").into()),
        }
    }

    // Palanteer's example: a range with a default upper bound. The relaxed atomics are plain
    // settings: nothing else is published through them.
    control::register("config:setRange", "min=int max=int[[100]]", "sets the working range", |a, r| {
        let (min, max) = (a.int(0).unwrap_or(0), a.int(1).unwrap_or(0));
        if min > max {
            return r.set_error(format!("min {min} is above max {max}"));
        }
        MIN.store(min, Ordering::Relaxed);
        MAX.store(max, Ordering::Relaxed);
        r.push("ok");
    })?;
    control::register("config:get", "", "prints the working range", |_, r| {
        r.push(&format!("{} {}", MIN.load(Ordering::Relaxed), MAX.load(Ordering::Relaxed)));
    })?;
    control::register("work:burst", "n=int[[1000]]", "records n instants in category burst", |a, r| {
        let n = a.int(0).unwrap_or(0);
        for i in 0..n {
            phosphor::trace_instant!("burst", "tick", "i" => i);
        }
        r.push(&format!("{n} instants"));
    })?;
    control::register("work:sleep", "ms=int", "sleeps, to try the handler timeout", |a, r| {
        std::thread::sleep(Duration::from_millis(a.int(0).unwrap_or(0).max(0) as u64));
        r.push("awake");
    })?;
    control::register("app:quit", "", "ends the program", |_, r| {
        // Relaxed: the main loop only needs to see it eventually.
        QUIT.store(true, Ordering::Relaxed);
        r.push("bye");
    })?;
    control::register_builtins(phosphor::TraceLog::global())?;
    let server = control::serve(socket, limits)?;
    println!("socket {}", server.path().display());

    // The workload: a scope per round, so that a trace of `app` has something in it.
    let started = Instant::now();
    let mut round = 0u64;
    while !QUIT.load(Ordering::Relaxed) && started.elapsed() < lifetime {
        phosphor::trace_scope!("app", "round", "round" => round);
        round += 1;
        std::thread::sleep(Duration::from_millis(2));
    }
    // Answer the quit command before the socket goes.
    std::thread::sleep(Duration::from_millis(50));
    Ok(())
}

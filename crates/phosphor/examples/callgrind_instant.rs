//! A workload for `scripts/callgrind.sh`: runs one hot-path scenario N times, so that instruction
//! counts of runs with N and 2N iterations can be subtracted to cancel the setup cost.
//!
//! ```text
//! callgrind_instant <instant|scope|counter|dynstr|disabled|limit|empty> <N>
//! ```
//!
//! Each scenario runs in its own `#[inline(never)]` function, so `callgrind_annotate` shows it by
//! name. Before the measured loop, the Ring buffer is filled once over, so that the measured events
//! reuse warm chunks as they would in a long-running trace; that warm-up is part of the setup cost
//! the subtraction cancels.

use std::hint::black_box;

use phosphor::{BufferMode, TraceConfig, TraceLog};
use phosphor_limit::limit_step;

/// Ring size: the same as the benchmark's.
const RING_BYTES: usize = 64 << 20;

#[inline(never)]
fn run_instant(n: u64) {
    for i in 0..n {
        phosphor::trace_instant!("bench", "instant", "a" => i as i64, "b" => 7u64);
    }
}

#[inline(never)]
fn run_scope(n: u64) {
    for _ in 0..n {
        phosphor::trace_scope!("bench", "scope");
    }
}

#[inline(never)]
fn run_counter(n: u64) {
    for i in 0..n {
        phosphor::trace_counter!("bench", "counter", i);
    }
}

#[inline(never)]
fn run_dynstr(n: u64) {
    let s: &str = black_box("request-42");
    for _ in 0..n {
        phosphor::trace_instant!("bench", "dyn_str", "s" => s);
    }
}

#[inline(never)]
fn run_log3(n: u64) {
    for i in 0..n {
        phosphor::trace_log!(info, "bench", "item {} of {} took {} ns", i, 7u64, i >> 3);
    }
}

#[inline(never)]
fn run_interned(n: u64) {
    let s: &str = black_box("request-4242-abc");
    for _ in 0..n {
        phosphor::trace_instant!("bench", "interned", "s" => phosphor::intern(s));
    }
}

#[inline(never)]
fn run_disabled(n: u64) {
    for i in 0..n {
        phosphor::trace_instant!("off", "disabled", "a" => i as i64, "b" => 7u64);
    }
}

#[inline(never)]
fn run_limit(n: u64) {
    for i in 0..n {
        limit_step(i, 7);
    }
}

#[inline(never)]
fn run_empty(n: u64) {
    for i in 0..n {
        black_box(i);
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(mode), Some(n)) = (args.next(), args.next().and_then(|s| s.parse::<u64>().ok())) else {
        eprintln!(
            "usage: callgrind_instant <instant|scope|counter|dynstr|log3|interned|disabled|limit|empty> <N>"
        );
        std::process::exit(2);
    };
    let log = TraceLog::global();
    let config = TraceConfig::new(BufferMode::Ring, RING_BYTES).categories("-off").expect("valid filter");
    log.start(config).expect("no trace is running yet");
    // Fill the ring once over (2M records of 32 bytes), so that the measured loop writes warm
    // pages; this also registers the callsites of each scenario.
    let warm = (RING_BYTES / 32) as u64;
    match mode.as_str() {
        "instant" => (run_instant(warm), run_instant(n)),
        "scope" => (run_scope(warm), run_scope(n)),
        "counter" => (run_counter(warm), run_counter(n)),
        "dynstr" => (run_dynstr(warm), run_dynstr(n)),
        "log3" => (run_log3(warm), run_log3(n)),
        "interned" => (run_interned(warm), run_interned(n)),
        "disabled" => (run_disabled(warm), run_disabled(n)),
        "limit" => (run_limit(warm), run_limit(n)),
        "empty" => (run_empty(warm), run_empty(n)),
        _ => {
            eprintln!("unknown mode {mode}");
            std::process::exit(2);
        }
    };
    log.stop();
    let stats = log.stats();
    let emitted = match mode.as_str() {
        "instant" | "scope" | "counter" | "dynstr" | "log3" | "interned" => warm + n,
        _ => 0,
    };
    let accounted = stats.recorded + stats.dropped.total();
    eprintln!(
        "mode {mode} n {n}: emitted {emitted}, recorded {}, dropped {} (overwritten {})",
        stats.recorded,
        stats.dropped.total(),
        stats.dropped.overwritten
    );
    if accounted != emitted {
        eprintln!("MISMATCH: recorded + dropped = {accounted} != emitted {emitted}");
        std::process::exit(1);
    }
}

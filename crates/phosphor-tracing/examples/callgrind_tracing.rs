//! A workload for `scripts/callgrind-tracing.sh`: runs one `tracing` scenario N times under
//! `PhosphorSubscriber` (as the `layers` bench installs it: this thread's default subscriber), so
//! that instruction counts of runs with N and 2N iterations can be subtracted to cancel the setup.
//!
//! ```text
//! callgrind_tracing <event|event_msg|event_global|span|span_life|event_layer|noop|empty|empty_global|visit|visit_global|record|record_global|macro|log2|limit> <N>
//! ```
//!
//! `event` is `tracing::info!(a = i, b = 7)`, `event_msg` the same with a message
//! (`info!(a = i, b = 7, "ev")`), `event_global` the event with the subscriber as the global
//! default (as `phosphor_tracing::init()` installs it; the others are this thread's default), `span` is `info_span!("scope").entered()` dropped at
//! once (new, enter, exit, close), `span_life` the same with lifetimes recorded, `event_layer` the
//! event through `Registry` + `PhosphorLayer`, `noop` the event with a `Registry` and a layer that
//! does nothing (what `tracing` costs before any layer works), `empty` and `visit` the event with
//! the floor's subscribers (`benches/support/floor.rs`: one that does nothing, one that only visits
//! the fields, `record` one that visits them and records two with `trace_log!`; `_global` as the
//! global default), `macro` Phosphor's
//! `trace_instant!` with two integers, `log2` its `trace_log!` with two, `limit` the limit loop.
//! Each runs in its own `#[inline(never)]` function, so `callgrind_annotate` shows it by name.
//! Before the measured loop the Ring is filled once over, so the measured events reuse warm
//! chunks (and every callsite is registered).

use phosphor::{BufferMode, TraceConfig, TraceLog};
use phosphor_limit::limit_step;
use phosphor_tracing::{PhosphorLayer, PhosphorSubscriber};
use tracing_subscriber::layer::SubscriberExt;

#[path = "../benches/support/floor.rs"]
mod floor;

/// Ring size: the same as the bench's.
const RING_BYTES: usize = 64 << 20;

#[inline(never)]
fn run_event(n: u64) {
    for i in 0..n {
        tracing::info!(a = i as i64, b = 7u64);
    }
}

/// `run_event`'s loop for `event_global`, a function of its own so that `run_event` is inlined
/// as before (one caller).
#[inline(never)]
fn run_event_global(n: u64) {
    for i in 0..n {
        tracing::info!(a = i as i64, b = 7u64);
    }
}

#[inline(never)]
fn run_event_msg(n: u64) {
    for i in 0..n {
        tracing::info!(a = i as i64, b = 7u64, "ev");
    }
}

#[inline(never)]
fn run_span(n: u64) {
    for _ in 0..n {
        let _s = tracing::info_span!("scope").entered();
    }
}

#[inline(never)]
fn run_macro(n: u64) {
    for i in 0..n {
        phosphor::trace_instant!("bench", "instant", "a" => i as i64, "b" => 7u64);
    }
}

#[inline(never)]
fn run_log2(n: u64) {
    for i in 0..n {
        phosphor::trace_log!(info, "bench", "a={} b={}", i as i64, 7u64);
    }
}

#[inline(never)]
fn run_limit(n: u64) {
    for i in 0..n {
        limit_step(i, 7);
    }
}

/// A layer that does nothing.
struct NoopLayer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for NoopLayer {}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(mode), Some(n)) = (args.next(), args.next().and_then(|s| s.parse::<u64>().ok())) else {
        eprintln!("usage: callgrind_tracing <event|event_msg|event_global|span|span_life|event_layer|noop|empty|empty_global|visit|visit_global|record|record_global|macro|log2|limit> <N>");
        std::process::exit(2);
    };
    let log = TraceLog::global();
    let config = TraceConfig::new(BufferMode::Ring, RING_BYTES).categories("-off").expect("valid filter");
    log.start(config).expect("no trace is running yet");
    let warm = (RING_BYTES / 32) as u64;
    let twice = |f: fn(u64)| {
        f(warm);
        f(n);
    };
    // `*_global`: the subscriber as `phosphor_tracing::init()` installs it, the global default
    // (no scoped dispatcher is set then: `tracing` finds it without its thread-local lookup).
    let global = match mode.as_str() {
        "event_global" => Some((tracing::Dispatch::new(PhosphorSubscriber::new(log)), 1)),
        "empty_global" => Some((tracing::Dispatch::new(floor::Empty), 0)),
        "visit_global" => Some((tracing::Dispatch::new(floor::Visiting), 0)),
        "record_global" => Some((tracing::Dispatch::new(floor::Recording), 1)),
        _ => None,
    };
    if let Some((global, events)) = global {
        tracing::dispatcher::set_global_default(global).expect("no global subscriber yet");
        twice(run_event_global);
        return finish(&mode, n, log, events * (warm + n));
    }
    let dispatch = match mode.as_str() {
        "event" | "event_msg" | "span" => tracing::Dispatch::new(PhosphorSubscriber::new(log)),
        "span_life" => tracing::Dispatch::new(PhosphorSubscriber::new(log).with_span_lifetimes(true)),
        "event_layer" => tracing::Dispatch::new(tracing_subscriber::registry().with(PhosphorLayer::new(log))),
        "noop" => tracing::Dispatch::new(tracing_subscriber::registry().with(NoopLayer)),
        "empty" => tracing::Dispatch::new(floor::Empty),
        "visit" => tracing::Dispatch::new(floor::Visiting),
        "record" => tracing::Dispatch::new(floor::Recording),
        _ => tracing::Dispatch::none(),
    };
    // Per event: records written (a log of two parameters is one event), and ours to check.
    let events = tracing::dispatcher::with_default(&dispatch, || match mode.as_str() {
        "event" | "event_layer" | "record" => (twice(run_event), 1).1,
        "event_msg" => (twice(run_event_msg), 1).1,
        "noop" | "empty" | "visit" => (twice(run_event), 0).1,
        "span" => (twice(run_span), 2).1,
        "span_life" => (twice(run_span), 4).1,
        "macro" => (twice(run_macro), 1).1,
        "log2" => (twice(run_log2), 1).1,
        "limit" => (twice(run_limit), 0).1,
        _ => {
            eprintln!("unknown mode {mode}");
            std::process::exit(2);
        }
    });
    drop(dispatch);
    finish(&mode, n, log, events * (warm + n));
}

/// Stops the trace and checks that every one of the `emitted` events (of `n` measured) was recorded or counted
/// dropped.
fn finish(mode: &str, n: u64, log: &TraceLog, emitted: u64) {
    log.stop();
    let stats = log.stats();
    eprintln!(
        "mode {mode} n {n}: emitted {emitted}, recorded {}, dropped {} (overwritten {})",
        stats.recorded,
        stats.dropped.total(),
        stats.dropped.overwritten
    );
    let accounted = stats.recorded + stats.dropped.total();
    if accounted != emitted {
        eprintln!("MISMATCH: recorded + dropped = {accounted} != emitted {emitted}");
        std::process::exit(1);
    }
}

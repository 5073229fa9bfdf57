//! A program instrumented with `tracing` only, recorded by Phosphor through `PhosphorLayer`.
//!
//! ```text
//! cargo run -p phosphor-tracing --example tracing_app -- tracing.phos
//! cargo run -p phosphor-cli -- convert tracing.phos --to perfetto   # open in ui.perfetto.dev
//! cargo run -p phosphor-cli -- logs tracing.phos
//! ```

use std::time::Duration;

use phosphor::{BufferMode, TraceConfig, TraceLog};
use tracing_subscriber::prelude::*;

#[tracing::instrument(target = "shop", fields(items = order.len()))]
fn checkout(user: &str, order: &[u32]) -> u32 {
    let total: u32 = order.iter().sum();
    tracing::info!(target: "shop", user, total, "checked out");
    std::thread::sleep(Duration::from_millis(1));
    total
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "tracing.phos".into());
    let log = TraceLog::global();
    tracing_subscriber::registry().with(phosphor_tracing::PhosphorLayer::new(log)).init();
    log.start(TraceConfig::new(BufferMode::Fixed, 16 << 20))?;

    let workers: Vec<_> = (0..3)
        .map(|w| {
            std::thread::Builder::new().name(format!("worker-{w}")).spawn(move || {
                for i in 0..20u32 {
                    let span = tracing::info_span!(target: "shop", "request", worker = w, i);
                    let _entered = span.enter();
                    let total = checkout(if i % 2 == 0 { "ada" } else { "grace" }, &[i, i + 1, 7]);
                    if total > 50 {
                        tracing::warn!(target: "shop", total, "large order");
                    }
                }
            })
        })
        .collect::<Result<_, _>>()?;
    for w in workers {
        w.join().map_err(|_| "a worker panicked")?;
    }

    log.stop();
    let trace = log.take_trace().ok_or("no trace")?;
    trace.save(&out)?;
    println!("{} events written to {out}", trace.stats().recorded);
    Ok(())
}

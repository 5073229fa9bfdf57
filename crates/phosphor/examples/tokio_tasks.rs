//! tokio's own tasks, traced by the runtime's hooks (`phosphor::tokio`): one async slice per task
//! named by its spawn location, a slice per poll on the worker thread linked to it by a flow, and
//! a `long poll` slice over any poll longer than 5 ms (one task blocks its worker on purpose).
//!
//! The hooks are an unstable tokio API, so build with `--cfg tokio_unstable`:
//!
//! ```text
//! RUSTFLAGS="--cfg tokio_unstable" cargo run -p phosphor --features tokio --example tokio_tasks -- tasks.phos
//! cargo run -p phosphor-cli -- stats tasks.phos
//! cargo run -p phosphor-cli -- convert tasks.phos --to perfetto   # open in ui.perfetto.dev
//! ```
//!
//! Without the flag it runs the same program and records no task events.

use std::time::Duration;

use phosphor::tokio::TaskHooks;
use phosphor::{BufferMode, TraceConfig, TraceLog};

async fn fetch(i: u64) -> u64 {
    for _ in 0..3 {
        std::hint::black_box((0..10_000u64).sum::<u64>());
        tokio::time::sleep(Duration::from_millis(1 + i % 3)).await;
    }
    i * 2
}

async fn slow() {
    // Blocks its worker for 20 ms in one poll: a long poll.
    std::thread::sleep(Duration::from_millis(20));
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "tasks.phos".into());
    if !phosphor::tokio::HOOKS_AVAILABLE {
        eprintln!("built without --cfg tokio_unstable: tokio has no task hooks, no task is recorded");
    }
    let log = TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Fixed, 16 << 20))?;
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(2).enable_time();
    TaskHooks::new().long_poll(Duration::from_millis(5)).install(&mut builder);
    let rt = builder.build()?;
    let sum: u64 = rt.block_on(async {
        let tasks: Vec<_> = (0..8).map(|i| tokio::spawn(fetch(i))).collect();
        let slow = tokio::spawn(slow());
        let mut sum = 0;
        for t in tasks {
            sum += t.await.unwrap_or(0);
        }
        let _ = slow.await;
        sum
    });
    drop(rt);
    log.stop();
    let trace = log.take_trace().ok_or("no trace")?;
    trace.save(&out)?;
    println!("sum {sum}; {} events written to {out}", trace.stats().recorded);
    Ok(())
}

//! Tasks on a multi-threaded tokio runtime, each recorded by `trace_future!` as one async slice
//! from creation to completion, with each poll a slice on the worker thread that ran it, linked to
//! the task by a flow.
//!
//! ```text
//! cargo run -p phosphor --example async_tasks -- async.phos
//! cargo run -p phosphor-cli -- convert async.phos --to perfetto   # open in ui.perfetto.dev
//! ```

use std::time::Duration;

use phosphor::{trace_future, trace_scope, BufferMode, TraceConfig, TraceLog};

async fn fetch(i: u64) -> u64 {
    for step in 0..3 {
        {
            trace_scope!("app", "parse", "step" => step);
            std::hint::black_box((0..10_000u64).sum::<u64>());
        }
        tokio::time::sleep(Duration::from_millis(1 + i % 3)).await;
    }
    i * 2
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "async.phos".into());
    let log = TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Fixed, 16 << 20))?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build()?;
    let sum: u64 = rt.block_on(async {
        let tasks: Vec<_> = (0..8).map(|i| tokio::spawn(trace_future!("app", "fetch", fetch(i)))).collect();
        let mut sum = 0;
        for t in tasks {
            sum += t.await.unwrap_or(0);
        }
        sum
    });
    drop(rt);
    log.stop();
    let trace = log.take_trace().ok_or("no trace")?;
    trace.save(&out)?;
    println!("sum {sum}; {} events written to {out}", trace.stats().recorded);
    Ok(())
}

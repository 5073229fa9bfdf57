//! A program that logs with the `log` crate, recorded by Phosphor through `phosphor_log`.
//!
//! ```text
//! cargo run -p phosphor-log --example log_app -- log.phos
//! cargo run -p phosphor-cli -- logs log.phos --level info
//! ```

use phosphor::{BufferMode, TraceConfig, TraceLog};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "log.phos".into());
    let log = TraceLog::global();
    phosphor_log::init(log, log::LevelFilter::Debug)?;
    log.start(TraceConfig::new(BufferMode::Fixed, 16 << 20))?;

    log::info!(target: "app", "starting");
    for attempt in 1..=5u32 {
        log::debug!(target: "app::net", "connecting, attempt {attempt}");
        if attempt == 3 {
            log::warn!(target: "app::net", "connection reset after {} ms", attempt * 40);
        }
    }
    log::error!(target: "app", "giving up");

    log.stop();
    let trace = log.take_trace().ok_or("no trace")?;
    trace.save(&out)?;
    println!("{} records written to {out}", trace.stats().recorded);
    Ok(())
}

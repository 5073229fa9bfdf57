//! A frame loop marked with `trace_frame!` (Tracy's `FrameMark`), as a game or a UI would:
//!
//! ```sh
//! cargo run -p phosphor-cli --example frames -- frames.phos
//! cargo run -p phosphor-cli -- stats frames.phos     # the "frames" table: p50, p99, max, slowest
//! ```
//!
//! 60 frames; frame 7 does ten times the work of the others. A second frame set, `physics`,
//! ticks twice a frame.

use phosphor::{trace_frame, trace_scope, BufferMode, TraceConfig, TraceLog};

/// Work of one frame: about `units` × 50 µs of spinning.
fn work(units: u32) {
    trace_scope!("app", "update");
    let until = std::time::Instant::now() + std::time::Duration::from_micros(50 * u64::from(units));
    while std::time::Instant::now() < until {
        std::hint::spin_loop();
    }
}

fn main() -> Result<(), phosphor::Error> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "frames.phos".into());
    let log = TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Fixed, 4 << 20))?;
    trace_frame!();
    for frame in 0..60 {
        for _ in 0..2 {
            work(if frame == 7 { 10 } else { 1 });
            trace_frame!("physics");
        }
        trace_frame!();
    }
    log.stop();
    log.take_trace().expect("a stopped trace").save(&out)?;
    println!("{out}");
    Ok(())
}

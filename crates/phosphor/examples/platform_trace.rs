//! A short recording for checking a platform: three threads record nested scopes and instants
//! with the default clock (the CPU's counter), the trace is saved, and the clock it used is
//! printed. `scripts/cross-check.sh` runs it under qemu (aarch64 Linux) and wine (Windows) and
//! reads the file back on the host with `phosphor stats`.
//!
//! ```text
//! cargo run -p phosphor --example platform_trace -- platform.phos
//! cargo run -p phosphor-cli -- stats platform.phos
//! ```

use phosphor::{trace_instant, trace_scope, BufferMode, TraceConfig, TraceLog};

fn work(thread: u64) {
    for i in 0..200u64 {
        trace_scope!("platform", "outer", "thread" => thread, "i" => i);
        {
            trace_scope!("platform", "inner");
            std::hint::black_box((0..1_000u64).sum::<u64>());
        }
        if i % 50 == 0 {
            trace_instant!("platform", "mark", "i" => i);
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "platform.phos".into());
    let log = TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Fixed, 4 << 20))?;
    let threads: Vec<_> = (1..=3).map(|t| std::thread::spawn(move || work(t))).collect();
    work(0);
    for t in threads {
        t.join().map_err(|_| "a recording thread panicked")?;
    }
    log.stop();
    let trace = log.take_trace().ok_or("no trace")?;
    trace.save(&out)?;
    let clock = trace.clock();
    let fallback = clock.fallback_reason.as_deref().map(|r| format!(" (fallback: {r})")).unwrap_or_default();
    println!(
        "{} events written to {out}; clock {}, {:.3} ns per tick{fallback}",
        trace.stats().recorded,
        clock.kind.as_str(),
        clock.resolution_ns()
    );
    Ok(())
}

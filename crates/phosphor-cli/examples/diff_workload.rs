//! The workload `phosphor diff`'s tests run twice and compare: a scope `run` holding `steps`
//! slices `step`, each spinning for a set time (a deadline on the clock, not a loop count) and
//! recorded with that time as its duration (a complete event from the step's start), then saved
//! as a trace file. The nominal duration, not the time the step took: on a loaded machine a few
//! dozen steps of one run and not the other are preempted, which moved the p99 of two runs of the
//! same workload by +473% in a CI run (7.27 µs against 41.7 µs), and the tests that expect no
//! regression between them failed. So the steps' durations are the same from run to run on any
//! machine, and a slower step (`--spin-us 15` against 5) is slower by exactly that.
//!
//! ```text
//! cargo build -p phosphor-cli --example diff_workload
//! target/debug/examples/diff_workload base.phos --spin-us 5 --steps 2000
//! target/debug/examples/diff_workload new.phos --spin-us 15 --steps 2000 --setup
//! phosphor diff base.phos new.phos --fail-on 'p50>+10%'
//! ```
//!
//! `--setup` adds one scope `setup` before `run` (a path the other trace lacks).

use std::time::{Duration, Instant};

use phosphor::{trace_complete, trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = args.next().ok_or("usage: diff_workload OUT [--spin-us N] [--steps N] [--setup]")?;
    let (mut spin, mut steps, mut setup) = (Duration::from_micros(5), 2000u64, false);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--spin-us" => spin = Duration::from_micros(value()?.parse()?),
            "--steps" => steps = value()?.parse()?,
            "--setup" => setup = true,
            _ => return Err(format!("unknown argument {arg}").into()),
        }
    }
    let log = TraceLog::new(TraceLogConfig::default())?;
    // One record per step (a complete event: its start and its duration), and room to spare.
    let bytes = usize::try_from(steps)?.saturating_mul(64).max(1 << 20);
    log.start(TraceConfig::new(BufferMode::Fixed, bytes))?;
    if setup {
        trace_scope!(log: &log, "diff", "setup");
        spin_for(spin);
    }
    {
        trace_scope!(log: &log, "diff", "run");
        for _ in 0..steps {
            let start = log.now();
            spin_for(spin);
            trace_complete!(log: &log, "diff", "step", start, spin);
        }
    }
    log.stop();
    let trace = log.take_trace().ok_or("no trace")?;
    trace.save(&out)?;
    Ok(())
}

/// Spins until `d` has passed.
fn spin_for(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

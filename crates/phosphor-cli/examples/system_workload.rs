//! The workload the system-context tests record end to end: a scope `sleep` that sleeps 50 ms,
//! a scope `burn` that spins 200 ms of CPU time in one known function (`burn_known_function`), and a scope
//! `alloc` that makes 1,000 allocations of 64 bytes, with context switches, CPU samples at
//! 999 Hz and allocation counting on; then saved as a trace file.
//!
//! ```text
//! cargo build -p phosphor-cli --example system_workload
//! target/debug/examples/system_workload sys.phos
//! phosphor stats sys.phos
//! ```

use std::alloc::System;
use std::hint::black_box;
use std::time::Duration;

use phosphor::alloc::Traced;
use phosphor::{trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig};

#[global_allocator]
static ALLOC: Traced<System> = Traced::new(System);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).ok_or("usage: system_workload OUT")?;
    let log = TraceLog::new(TraceLogConfig::default())?;
    let config = TraceConfig::new(BufferMode::Fixed, 4 << 20)
        .context_switches(true)
        .cpu_samples(999)
        .allocations(true);
    log.start(config)?;
    {
        trace_scope!(log: &log, "sys", "sleep");
        std::thread::sleep(Duration::from_millis(50));
    }
    {
        trace_scope!(log: &log, "sys", "burn");
        black_box(burn_known_function(Duration::from_millis(200)));
    }
    let mut kept = Vec::with_capacity(1000);
    {
        trace_scope!(log: &log, "sys", "alloc");
        for _ in 0..1000 {
            kept.push(black_box(Box::new([0u8; 64])));
        }
    }
    drop(kept);
    log.stop();
    let trace = log.take_trace().ok_or("no trace")?;
    trace.save(&out)?;
    Ok(())
}

/// Spins until this thread has run for `d` of CPU time (not wall time: on a loaded machine the
/// scope lasts longer, and the samples, one per 1/999 s of CPU time, stay about 200), in a
/// function of its own so that the samples name it. The loop is plain arithmetic with no call
/// even in a debug build (`cargo test` builds examples so), so nearly every sample's leaf is in
/// this function itself.
#[inline(never)]
fn burn_known_function(d: Duration) -> u64 {
    let start = thread_cpu_time();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    while thread_cpu_time().saturating_sub(start) < d {
        let mut i = 0u32;
        while i < 100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            i += 1;
        }
    }
    x
}

/// This thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill; the clock id is a constant the
    // kernel knows.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(r, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

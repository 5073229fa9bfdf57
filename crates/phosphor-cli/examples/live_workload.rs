//! A program to watch live: streams a small workload to `phosphor record` for a while.
//!
//! ```text
//! phosphor record --listen 127.0.0.1:7777 --view 127.0.0.1:0 -o live &
//! cargo run --release -p phosphor-cli --example live_workload -- 127.0.0.1:7777 20
//! ```
//!
//! Arguments: the recorder's address, and how many seconds to run (10 by default). Three worker
//! threads record frames holding an update holding steps of varying length, a counter of the
//! frames done and an instant a frame; scripts/screenshots.sh shows it in the live viewer.

use std::time::{Duration, Instant};

use phosphor::stream::{Sink, StreamConfig};
use phosphor::{
    trace_counter, trace_instant, trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().ok_or("usage: live_workload ADDR [SECONDS]")?.parse()?;
    let seconds: u64 = args.next().map_or(Ok(10), |s| s.parse())?;
    let log = TraceLog::new(TraceLogConfig::default())?;
    log.start(TraceConfig::new(BufferMode::Stream, 8 << 20))?;
    let stream = log.open_stream(StreamConfig::new(Sink::Tcp(addr)))?;
    let until = Instant::now() + Duration::from_secs(seconds);
    let workers: Vec<_> = (0..3u64)
        .map(|w| {
            let log = log.clone();
            std::thread::Builder::new().name(format!("worker-{w}")).spawn(move || {
                let mut n = 0u64;
                while Instant::now() < until {
                    trace_scope!(log: &log, "live", "frame");
                    {
                        trace_scope!(log: &log, "live", "update");
                        for step in 0..1 + (n + w) % 4 {
                            trace_scope!(log: &log, "live", "step");
                            spin(Duration::from_micros(20 + 15 * step));
                        }
                    }
                    trace_counter!(log: &log, "live", "frames", n);
                    trace_instant!(log: &log, "live", "frame done");
                    n += 1;
                    std::thread::sleep(Duration::from_micros(300));
                }
            })
        })
        .collect::<Result<_, _>>()?;
    for w in workers {
        let _ = w.join();
    }
    // Stopping ends the stream: the recorder has the whole file.
    log.stop();
    if let Ok(s) = log.stream_stats(stream) {
        eprintln!("{} events written, {} dropped", s.events_written, s.events_dropped);
    }
    Ok(())
}

/// Busy for `d`: work a profiler sees on the CPU.
fn spin(d: Duration) {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < d {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
    }
}

//! The helpers of `phosphor`'s own `tests/it/support.rs` that these tests use.

use std::sync::Arc;
use std::time::{Duration, Instant};

use phosphor::{ErrorKind, Trace, TraceConfig, TraceLog, TraceLogConfig};

/// A new default log with a trace already running. Another test may hold most of the 32 slots
/// for a moment, so a full table is retried for a while.
pub fn started(trace: TraceConfig) -> Arc<TraceLog> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let log = loop {
        match TraceLog::new(TraceLogConfig::default()) {
            Ok(log) => break log,
            Err(e) if matches!(e.kind(), ErrorKind::TooManyInstances { .. }) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => panic!("TraceLog::new failed: {e}"),
        }
    };
    log.start(trace).expect("start");
    log
}

/// Stops `log` and takes its trace.
pub fn stop_and_take(log: &TraceLog) -> Trace {
    log.stop();
    log.take_trace().expect("a stopped log has a trace")
}

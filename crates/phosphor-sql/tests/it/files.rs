//! Traces for the tests: recorded by the runtime (threads of nested scopes, begin/end pairs,
//! locks, instants, counters and logs), or crafted (equal timestamps, a begin left open).

use std::path::PathBuf;
use std::sync::Mutex;

use phosphor::{
    trace_begin, trace_counter, trace_end, trace_instant, trace_lock_guard, trace_log, trace_scope,
    BufferMode, TraceConfig, TraceLog, TraceLogConfig,
};

/// A fresh scratch folder for `test`.
pub fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("phosphor-sql-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

/// The bytes of a trace of `threads` threads, each running `frames` frames of nested scopes.
pub fn recorded(threads: usize, frames: usize) -> Vec<u8> {
    let log = TraceLog::new(TraceLogConfig::default()).expect("a log");
    log.start(TraceConfig::new(BufferMode::Fixed, 8 << 20)).expect("started");
    let lock = Mutex::new(0u64);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (log, lock) = (&log, &lock);
            s.spawn(move || {
                for frame in 0..frames {
                    trace_scope!(log: log, "app", "frame", "n" => frame as u64);
                    {
                        trace_scope!(log: log, "app", "update");
                        for i in 0..(frame % 4) {
                            trace_scope!(log: log, "app", "physics", "step" => i as u64);
                            trace_instant!(log: log, "app", "contact", "thread" => t as u64);
                        }
                    }
                    trace_begin!(log: log, "io", "read");
                    trace_counter!(log: log, "mem", "bytes", (frame * 100) as u64);
                    {
                        let _g = trace_lock_guard!(log: log, "sync", "state", lock.lock().unwrap());
                    }
                    trace_end!(log: log, "io", "read");
                    if frame % 10 == 0 {
                        trace_log!(log: log, info, "app", "frame {} done", frame as u64);
                    }
                }
            });
        }
    });
    log.stop();
    let trace = log.take_trace().expect("a trace");
    trace.write_to(Vec::new()).expect("written")
}

/// [`recorded`] saved in `dir` as `name`.
pub fn recorded_file(dir: &std::path::Path, name: &str, threads: usize, frames: usize) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, recorded(threads, frames)).expect("saved");
    path
}

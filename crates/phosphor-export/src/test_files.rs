//! What the exporters' and the statistics' tests build their small trace files from: a clock, a
//! header, and the records of the common event shapes. Test-only.

use phosphor_format::file::{ClockInfo, ClockKind, Header};
use phosphor_format::{ArgType, Meta, Record};

/// A clock of `ns_per_tick` from origin tick 0 (monotonic for 1.0, else a TSC), at monotonic and
/// wall time 0, so raw ticks times the rate are the exported nanoseconds.
pub(crate) fn clock(ns_per_tick: f64) -> ClockInfo {
    ClockInfo {
        kind: if ns_per_tick == 1.0 { ClockKind::Monotonic } else { ClockKind::Tsc },
        ns_per_tick,
        origin_ticks: 0,
        origin_monotonic_ns: 0,
        origin_wall_ns: 0,
        fallback_reason: None,
    }
}

/// The header of process 7, `test`, on `clock`.
pub(crate) fn header(clock: ClockInfo) -> Header {
    Header { clock, pid: 7, process_name: "test".into(), boot_id: None, host_name: None }
}

/// A complete or lock event of callsite `id` from `start` lasting `dur` ticks.
pub(crate) fn slice(id: u32, start: u64, dur: u64) -> Record {
    Record::new(start, id, Meta::new(1, ArgType::None, ArgType::None), [dur, 0])
}

/// A begin, end, instant or log of callsite `id` at `ts`, with no arguments.
pub(crate) fn mark(id: u32, ts: u64) -> Record {
    Record::new(ts, id, Meta::new(0, ArgType::None, ArgType::None), [0, 0])
}

/// A trace recorded by the runtime: a lock named at run time (`shard-1`, argument `key` 7) and a
/// literal one (`table`, arguments `key` 9 and `retry`), each waited for and held once, on the
/// monotonic clock.
pub(crate) fn lock_trace_file() -> Vec<u8> {
    use phosphor::{
        pstr, trace_lock_guard, BufferMode, ClockKind, PString, TraceConfig, TraceLog, TraceLogConfig,
    };
    const SHARDS: [PString; 2] = [pstr!("shard-0"), pstr!("shard-1")];
    let log = TraceLog::new(TraceLogConfig::new().clock(ClockKind::Monotonic)).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    let m = std::sync::Mutex::new(0u64);
    let key = 7u64;
    {
        let mut g = trace_lock_guard!(log: &log, "sync", dyn SHARDS[(key % 2) as usize], m.lock().unwrap(), "key" => key);
        *g += 1;
    }
    {
        let mut g =
            trace_lock_guard!(log: &log, "sync", "table", m.lock().unwrap(), "key" => 9u64, "retry" => true);
        *g += 1;
    }
    log.stop();
    log.take_trace().unwrap().write_to(Vec::new()).unwrap()
}

/// The tests' deterministic random numbers, shared with every crate's tests.
pub(crate) use phosphor_craft::Rng;

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
    Header { clock, pid: 7, process_name: "test".into() }
}

/// A complete or lock event of callsite `id` from `start` lasting `dur` ticks.
pub(crate) fn slice(id: u32, start: u64, dur: u64) -> Record {
    Record::new(start, id, Meta::new(1, ArgType::None, ArgType::None), [dur, 0])
}

/// A begin, end, instant or log of callsite `id` at `ts`, with no arguments.
pub(crate) fn mark(id: u32, ts: u64) -> Record {
    Record::new(ts, id, Meta::new(0, ArgType::None, ArgType::None), [0, 0])
}

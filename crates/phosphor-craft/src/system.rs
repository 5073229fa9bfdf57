//! A small trace with system context (format 1.6), crafted with the format's `Writer`: the file
//! the tools' tests of context switches, samples and allocations read (`phosphor stats`, `info`,
//! `flamegraph --samples`, the Perfetto export), with every figure known in advance.
//!
//! Thread 101 (`main`), on a nanosecond clock from `CLOCK_MONOTONIC` 0:
//!
//! * `app/work` from 0 to 100 ms, enclosing `app/inner` from 62 to 80 ms; each followed by its
//!   `phosphor/scope_alloc` event: 1,000 allocations of 64,000 bytes for `work` (inclusive), 200
//!   of 12,800 for `inner`;
//! * switched out (blocked) at 10 ms and in at 60 ms: `work` is 50 ms on the CPU and 50 ms off
//!   it, with 1 switch; `inner` 18 ms on;
//! * CPU samples at 5, 70, 75 and 92 ms: at [`LEAF_A`] (called from [`CALLER`]), at [`LEAF_B`]
//!   twice (from `CALLER`) and at `LEAF_A` alone; the addresses are in a mapping of
//!   [`MAPPED_PATH`], which does not exist, so the tools name them `app+0x…`;
//! * heap totals at 0, 50 and 100 ms: live bytes 0, 40,000 and 64,000 − 12,800.
//!
//! The status says all three sources were on, sampling at 999 Hz.

use phosphor_format::file::{CallsiteInfo, ClockInfo, Error, Header, Trailer, Writer};
use phosphor_format::system::{
    Availability, HeapCounter, Mapping, Sample, SampleKind, Switch, SwitchKind, SystemBatch, SystemStatus,
    PHOSPHOR_CATEGORY, SCOPE_ALLOC_ARGS, SCOPE_ALLOC_NAME,
};
use phosphor_format::{ArgType, Meta, Phase, Record};

/// The thread.
pub const TID: u32 = 101;
/// The mapping's path (missing on purpose).
pub const MAPPED_PATH: &str = "/nonexistent/phosphor-craft/app";
/// The mapping's first address, at file offset 0.
pub const MAPPING_START: u64 = 0x5500_0000;
/// A leaf address: `app+0x1000`.
pub const LEAF_A: u64 = MAPPING_START + 0x1000;
/// Another leaf: `app+0x3000`.
pub const LEAF_B: u64 = MAPPING_START + 0x3000;
/// The caller's return address: `app+0x2000`.
pub const CALLER: u64 = MAPPING_START + 0x2000;

const MS: u64 = 1_000_000;

/// The status line of `phosphor stats`' text report on this trace.
pub const STATS_STATUS: &str = "system       context switches on; CPU samples on (999 Hz); allocations on";

/// `work`'s row of the system table of `phosphor stats`' text report, cell by cell: 1 call of
/// 100 ms, 50 ms on and 50 ms off the CPU, none preempted, 1 switch, 1,000 allocations of 64,000
/// bytes, 4 samples, and its functions by samples.
pub const STATS_WORK_ROW: [&str; 11] = [
    "work",
    "1",
    "100 ms",
    "50.0 ms",
    "50.0 ms",
    "0 ns",
    "1",
    "1,000",
    "64,000",
    "4",
    "app+0x1000 (2), app+0x3000 (2)",
];

/// The cells of the last row of a text report that starts with scope `name` (the system table
/// comes last), split at runs of two or more spaces.
pub fn report_row<'a>(text: &'a str, name: &str) -> Option<Vec<&'a str>> {
    let row = text
        .lines()
        .rev()
        .find(|l| l.trim_start().strip_prefix(name).is_some_and(|r| r.starts_with("  ")))?;
    Some(row.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect())
}

/// A callsite of this file's kind: no level, no dynamic name, no flow; line = id.
pub fn callsite(id: u32, category: &str, name: &str, phase: Phase, args: [&str; 2]) -> CallsiteInfo {
    CallsiteInfo {
        id,
        category: category.into(),
        name: name.into(),
        phase,
        level: None,
        dynamic_name: false,
        flow: false,
        arg_names: args.map(String::from),
        file: "system.rs".into(),
        line: id,
        name_hash: u64::from(id),
    }
}

/// The system blocks' content (one batch).
pub fn system_batch() -> SystemBatch {
    let switch = |ms: u64, kind| Switch { tid: TID, time_ns: ms * MS, cpu: 0, kind };
    let sample = |ms: u64, frames: Vec<u64>| Sample {
        tid: TID,
        time_ns: ms * MS,
        cpu: 0,
        kind: SampleKind::Cpu,
        frames,
    };
    let heap = |ms: u64, allocs, alloc_bytes, frees, freed_bytes| HeapCounter {
        time_ns: ms * MS,
        allocs,
        frees,
        alloc_bytes,
        freed_bytes,
    };
    SystemBatch {
        status: Some(SystemStatus {
            switches: Availability::On,
            samples: Availability::On,
            allocations: Availability::On,
            sample_hz: 999,
            ..SystemStatus::default()
        }),
        mappings: vec![Mapping {
            start: MAPPING_START,
            end: MAPPING_START + 0x10_0000,
            file_offset: 0,
            path: MAPPED_PATH.into(),
            build_id: vec![0x42; 20],
        }],
        switches: vec![switch(10, SwitchKind::Out), switch(60, SwitchKind::In)],
        samples: vec![
            sample(5, vec![LEAF_A, CALLER]),
            sample(70, vec![LEAF_B, CALLER]),
            sample(75, vec![LEAF_B, CALLER]),
            sample(92, vec![LEAF_A]),
        ],
        heap: vec![heap(0, 0, 0, 0, 0), heap(50, 600, 40_000, 0, 0), heap(100, 1000, 64_000, 200, 12_800)],
    }
}

/// The whole file.
pub fn system_trace() -> Result<Vec<u8>, Error> {
    let header = Header {
        clock: ClockInfo::monotonic(0, 1_700_000_000_000_000_000),
        pid: 4242,
        process_name: "app".into(),
        boot_id: None,
        host_name: None,
    };
    let mut w = Writer::new(Vec::new(), &header)?;
    let [allocs, bytes] = SCOPE_ALLOC_ARGS;
    w.write_callsites(&[
        callsite(16, "app", "work", Phase::Complete, ["", ""]),
        callsite(17, "app", "inner", Phase::Complete, ["", ""]),
        callsite(18, PHOSPHOR_CATEGORY, SCOPE_ALLOC_NAME, Phase::Instant, [allocs, bytes]),
    ])?;
    w.write_thread_names([(TID, "main")])?;
    let complete = |id, start: u64, dur: u64| {
        Record::new(start, id, Meta::new(1, ArgType::None, ArgType::None), [dur, 0])
    };
    let alloc =
        |ts: u64, a: u64, b: u64| Record::new(ts, 18, Meta::new(0, ArgType::U64, ArgType::U64), [a, b]);
    let records = [
        complete(17, 62 * MS, 18 * MS),
        alloc(80 * MS, 200, 12_800),
        complete(16, 0, 100 * MS),
        alloc(100 * MS, 1000, 64_000),
    ];
    w.write_chunk(TID, 0, &records, |_, _| "")?;
    w.write_system(&system_batch())?;
    w.finish(&Trailer { recorded: 4, ..Trailer::default() })
}

#[cfg(test)]
mod tests {
    use phosphor_format::file::{Block, Reader};

    #[test]
    fn the_system_trace_reads_back_its_events_and_its_batch() {
        let bytes = super::system_trace().unwrap();
        let mut r = Reader::new(&bytes[..]).unwrap();
        let (mut events, mut batches) = (0, Vec::new());
        while let Some(b) = r.next_block().unwrap() {
            match b {
                Block::Chunk(c) => events += c.events().map(Result::unwrap).count(),
                Block::System(s) => batches.push(s.clone()),
                _ => {}
            }
        }
        assert_eq!(events, 4);
        assert_eq!(batches, [super::system_batch()]);
    }
}

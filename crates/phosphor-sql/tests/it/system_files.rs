//! A trace with system context (format 1.6) made from a seed, with its ground truth: three
//! threads of `frame` scopes enclosing `step` scopes, each scope followed by its
//! `phosphor/scope_alloc` event (most of them); context switches (blocked, preempted, a second
//! switch out before the switch in, a switch in with no switch out before it, an interval left
//! open at the end); CPU and allocation samples of a few stacks; heap totals. The system context
//! comes in three blocks between the chunks, a thread's switches spread over them out of time
//! order, as a datastream's periods may hold them.

use phosphor_format::file::{ClockInfo, ClockKind, Header, Trailer, Writer};
use phosphor_format::system::{
    Availability, HeapCounter, Mapping, Sample, SampleKind, Switch, SwitchKind, SystemBatch, SystemStatus,
    PHOSPHOR_CATEGORY, SCOPE_ALLOC_ARGS, SCOPE_ALLOC_NAME, UNKNOWN_CPU,
};
use phosphor_format::{ArgType, Meta, Phase, Record};

/// The threads.
pub const TIDS: [u32; 3] = [201, 202, 203];
/// The mapping's path (missing on purpose: frames are named `app+0xOFFSET`).
pub const MAPPED_PATH: &str = "/nonexistent/phosphor-sql-test/app";
pub const MAPPING_START: u64 = 0x7700_0000;
/// Leaf addresses' offsets in the mapping, and callers'.
pub const LEAVES: [u64; 3] = [0x1000, 0x1400, 0x2800];
pub const CALLERS: [u64; 2] = [0x5000, 0x6000];
/// The bytes an allocation sample stands for.
pub const ALLOC_SAMPLE_BYTES: u64 = 4096;

/// A scope as written.
#[derive(Clone, Debug)]
pub struct Scope {
    pub tid: u32,
    pub path: &'static str,
    pub start: u64,
    pub end: u64,
    /// Its `scope_alloc` event's counts, if it has one.
    pub allocs: Option<(u64, u64)>,
}

/// An off-CPU interval as the switches make it: start, end (`None`: still off at the end),
/// preempted.
pub type Off = (u32, u64, Option<u64>, bool);

/// The trace and what it holds.
pub struct Crafted {
    pub bytes: Vec<u8>,
    pub scopes: Vec<Scope>,
    pub switches: Vec<Switch>,
    pub off: Vec<Off>,
    pub samples: Vec<Sample>,
    pub heap: Vec<HeapCounter>,
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) % n
    }
}

fn callsite(
    id: u32,
    category: &str,
    name: &str,
    phase: Phase,
    args: [&str; 2],
) -> phosphor_format::file::CallsiteInfo {
    phosphor_craft::system::callsite(id, category, name, phase, args)
}

/// The trace of seed `seed`.
pub fn crafted(seed: u64) -> Crafted {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut scopes = Vec::new();
    let mut records: Vec<(u32, Vec<Record>)> = Vec::new();
    let mut switches: Vec<Vec<Switch>> = Vec::new();
    let mut off = Vec::new();
    let mut samples: Vec<Vec<Sample>> = Vec::new();
    let mut span_end = 0;
    for &tid in &TIDS {
        let (recs, t) = thread_records(&mut rng, tid, &mut scopes);
        span_end = span_end.max(t);
        records.push((tid, recs));
        switches.push(thread_switches(&mut rng, tid, t, &mut off));
        samples.push(thread_samples(&mut rng, tid, t));
    }
    let heap: Vec<HeapCounter> = (0..5u64)
        .map(|i| HeapCounter {
            time_ns: i * span_end / 4,
            allocs: i * 10,
            frees: i * 4,
            alloc_bytes: i * 1_000,
            freed_bytes: i * 1_500,
        })
        .collect();
    let batches = system_batches(&switches, &samples, &heap);
    let bytes = write_trace(&records, batches);
    Crafted {
        bytes,
        scopes,
        switches: switches.into_iter().flatten().collect(),
        off,
        samples: samples.into_iter().flatten().collect(),
        heap,
    }
}

/// Thread `tid`'s records: 40 frames of up to three steps, most scopes followed by their
/// `scope_alloc` event, each scope kept in `scopes`; and the time after its last frame.
fn thread_records(rng: &mut Rng, tid: u32, scopes: &mut Vec<Scope>) -> (Vec<Record>, u64) {
    let complete = |id, start: u64, end: u64| {
        Record::new(start, id, Meta::new(1, ArgType::None, ArgType::None), [end - start, 0])
    };
    let alloc =
        |ts: u64, a: u64, b: u64| Record::new(ts, 18, Meta::new(0, ArgType::U64, ArgType::U64), [a, b]);
    let mut recs = Vec::new();
    let mut t = 1_000 + rng.below(5_000);
    for _ in 0..40 {
        let frame_start = t;
        let mut cursor = t + rng.below(3_000);
        let mut frame_allocs = (0u64, 0u64);
        for _ in 0..rng.below(4) {
            let (s, e) = (cursor, cursor + 1 + rng.below(20_000));
            recs.push(complete(17, s, e));
            let counts = (rng.below(50), rng.below(5_000));
            let allocs = (rng.below(5) != 0).then_some(counts);
            if let Some((a, b)) = allocs {
                recs.push(alloc(e, a, b));
            }
            frame_allocs.0 += counts.0;
            frame_allocs.1 += counts.1;
            scopes.push(Scope { tid, path: "frame/step", start: s, end: e, allocs });
            cursor = e + rng.below(3_000);
        }
        let frame_end = cursor + 1 + rng.below(2_000);
        recs.push(complete(16, frame_start, frame_end));
        let allocs = (rng.below(5) != 0).then_some((frame_allocs.0 + 3, frame_allocs.1 + 300));
        if let Some((a, b)) = allocs {
            recs.push(alloc(frame_end, a, b));
        }
        scopes.push(Scope { tid, path: "frame", start: frame_start, end: frame_end, allocs });
        t = frame_end + rng.below(4_000);
    }
    (recs, t)
}

/// Thread `tid`'s switches over its span (to `t`): a lone switch in first, some doubled switches
/// out, and (for the last thread) an interval left open; each off interval kept in `off`.
fn thread_switches(rng: &mut Rng, tid: u32, t: u64, off: &mut Vec<Off>) -> Vec<Switch> {
    let mut w = vec![Switch { tid, time_ns: 500, cpu: 1, kind: SwitchKind::In }];
    let mut u = 2_000 + rng.below(2_000);
    while u < t {
        let preempted = rng.below(3) == 0;
        let kind = if preempted { SwitchKind::Preempted } else { SwitchKind::Out };
        w.push(Switch { tid, time_ns: u, cpu: rng.below(4) as u32, kind });
        if rng.below(6) == 0 {
            w.push(Switch { tid, time_ns: u + 7, cpu: 2, kind: SwitchKind::Preempted });
        }
        if tid == TIDS[2] && u + 30_000 >= t {
            // Off until the end, from inside its last frames.
            off.push((tid, u, None, preempted));
            break;
        }
        let back = u + 10 + rng.below(9_000);
        w.push(Switch { tid, time_ns: back, cpu: UNKNOWN_CPU, kind: SwitchKind::In });
        off.push((tid, u, Some(back), preempted));
        u = back + 1 + rng.below(12_000);
    }
    w
}

/// Thread `tid`'s CPU and allocation samples over its span (to `t`).
fn thread_samples(rng: &mut Rng, tid: u32, t: u64) -> Vec<Sample> {
    let mut s = Vec::new();
    let mut v = rng.below(1_000);
    while v < t {
        let leaf = MAPPING_START + LEAVES[rng.below(3) as usize];
        let mut frames = vec![leaf];
        if rng.below(3) != 0 {
            frames.push(MAPPING_START + CALLERS[rng.below(2) as usize]);
        }
        let kind = if rng.below(5) == 0 {
            SampleKind::Allocation { bytes: ALLOC_SAMPLE_BYTES }
        } else {
            SampleKind::Cpu
        };
        s.push(Sample { tid, time_ns: v, cpu: 0, kind, frames });
        v += 1 + rng.below(2_500);
    }
    s
}

/// Three system blocks: a thread's switches and samples dealt round-robin between them, so each
/// block holds a part of each thread's in time order and later blocks earlier times.
fn system_batches(
    switches: &[Vec<Switch>],
    samples: &[Vec<Sample>],
    heap: &[HeapCounter],
) -> Vec<SystemBatch> {
    let mut batches: Vec<SystemBatch> = (0..3).map(|_| SystemBatch::default()).collect();
    for w in switches {
        for (i, s) in w.iter().enumerate() {
            batches[2 - i % 3].switches.push(*s);
        }
    }
    for s in samples {
        for (i, x) in s.iter().enumerate() {
            batches[i % 3].samples.push(x.clone());
        }
    }
    batches[0].mappings.push(Mapping {
        start: MAPPING_START,
        end: MAPPING_START + 0x10_0000,
        file_offset: 0,
        path: MAPPED_PATH.into(),
        build_id: vec![7; 20],
    });
    batches[0].status = Some(SystemStatus {
        switches: Availability::On,
        samples: Availability::On,
        allocations: Availability::On,
        sample_hz: 999,
        ..SystemStatus::default()
    });
    batches[1].heap = heap[..2].to_vec();
    batches[2].heap = heap[2..].to_vec();
    batches
}

/// The file: the threads' records in chunks of 25, the threads' in turn, the system blocks among
/// them.
fn write_trace(records: &[(u32, Vec<Record>)], batches: Vec<SystemBatch>) -> Vec<u8> {
    let header = Header {
        clock: ClockInfo {
            kind: ClockKind::Monotonic,
            ns_per_tick: 1.0,
            origin_ticks: 0,
            origin_monotonic_ns: 0,
            origin_wall_ns: 1_700_000_000_000_000_000,
            fallback_reason: None,
        },
        pid: 77,
        process_name: "crafted".into(),
        boot_id: None,
        host_name: None,
    };
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    let [a, b] = SCOPE_ALLOC_ARGS;
    w.write_callsites(&[
        callsite(16, "app", "frame", Phase::Complete, ["", ""]),
        callsite(17, "app", "step", Phase::Complete, ["", ""]),
        callsite(18, PHOSPHOR_CATEGORY, SCOPE_ALLOC_NAME, Phase::Instant, [a, b]),
    ])
    .unwrap();
    w.write_thread_names(TIDS.iter().map(|&t| (t, if t == TIDS[0] { "main" } else { "worker" }))).unwrap();
    let mut recorded = 0;
    let mut seq = [0u64; 3];
    let mut round = 0;
    let mut batches = batches.into_iter();
    loop {
        let mut wrote = false;
        for (i, (tid, recs)) in records.iter().enumerate() {
            let part: Vec<Record> = recs.iter().skip(round * 25).take(25).copied().collect();
            if !part.is_empty() {
                w.write_chunk(*tid, seq[i], &part, |_, _| "").unwrap();
                seq[i] += 1;
                recorded += part.len() as u64;
                wrote = true;
            }
        }
        if round % 2 == 0 {
            if let Some(batch) = batches.next() {
                w.write_system(&batch).unwrap();
            }
        }
        round += 1;
        if !wrote {
            break;
        }
    }
    for batch in batches {
        w.write_system(&batch).unwrap();
    }
    w.finish(&Trailer { recorded, ..Trailer::default() }).unwrap()
}

/// The name the symbolizer gives an address of the (missing) mapped file.
pub fn app(address: u64) -> String {
    format!("app+{:#x}", address - MAPPING_START)
}

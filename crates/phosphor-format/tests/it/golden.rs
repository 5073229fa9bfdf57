//! The committed golden files of format version 1, and the generator of the newest.
//!
//! * `tests/data/golden-v1.phtrace` is version 1.0, written by the 1.0 writer with fixed
//!   timestamps, thread ids and counters. It never changes again.
//! * `tests/data/golden-v1.1.phtrace` is version 1.1, written by [`golden_v1`]: the same content
//!   plus a chunk of a pool tenant's writer stream (1.1 gives the top 16 bits of a chunk's sequence
//!   number to the stream). To regenerate it (only if it must change), run
//!   `cargo test -p phosphor-format --test it -- --ignored regenerate_the_v1_1_golden_file`.
//!
//! * `tests/data/golden-v1.2.phtrace` is version 1.2, written by [`golden_v1`] now: the 1.1
//!   content plus a chunk of 1.2 events (a log with packed parameters, a data value, an event
//!   named at run time), a log callsite with a level, and an aggregates block. Regenerate it the
//!   same way with `regenerate_the_v1_2_golden_file`.
//!
//! * `tests/data/golden-v1.3.phtrace` is version 1.3: the 1.2 content plus a callsite flagged as a
//!   flow (a poll slice linked to its async slice) and a chunk with an async slice and two of its
//!   polls. It never changes again.
//!
//! * `tests/data/golden-v1.4.phtrace` is version 1.4: the 1.3 content plus a streamed chunk in
//!   two pieces (two blocks with one sequence number), and a trailer with the saturation markers.
//!   It never changes again.
//!
//! * `tests/data/golden-v1.5.phtrace` is version 1.5, written by [`golden_v1`] now: the 1.4
//!   content with a boot id and a host name in the header. It never changes again.
//!
//! * `tests/data/golden-v1.6.phtrace` is version 1.6, written by [`golden_v1`] now: the 1.5
//!   content plus two system blocks (mappings, context switches, CPU and allocation samples, heap
//!   totals, then the status with an unavailable source). Regenerate it with
//!   `regenerate_the_v1_6_golden_file`. It never changes again.
//!
//! * `tests/data/golden-v1.7.phtrace` is version 1.7, written by [`golden_v1`] now: the 1.6
//!   content, plain (1.7 adds compressed groups, which a plain writer does not write).
//!   `golden-v1.7-zstd.phtrace` and `golden-v1.7-lz4.phtrace` are the same content written with
//!   `Compression::Zstd { level: 1 }` and `Compression::Lz4`: the blocks after the header in
//!   compressed groups, the trailer plain. Regenerate the three with
//!   `regenerate_the_v1_7_golden_files`.
//!
//! * `tests/data/golden-v1.8.phtrace` is version 1.8, written by [`golden_v1`] now: the 1.7 plain
//!   content with an eighth drop counter in the trailer (`unwound`). Regenerate it with
//!   `regenerate_the_v1_8_golden_file`.
//!
//! Every later reader must still read them all: the `reads_back` tests stay as they are when
//! the format moves on. `the_writer_reproduces_the_v1_8_golden_file_byte_for_byte` pins the
//! writer (the compressed ones are pinned by what they read back: their bytes are the codec
//! library's) and moves to the next golden file when the writer's version changes.

use phosphor_format::file::{
    Aggregate, AggregateKind, Block, CallsiteInfo, ClockInfo, ClockKind, Compression, DropCounts, Header,
    Reader, Trailer, Value, Writer, SEQ_STREAM_SHIFT,
};
use phosphor_format::system::{
    Availability, HeapCounter, Mapping, Sample, SampleKind, Switch, SwitchKind, SystemBatch, SystemStatus,
    UNKNOWN_CPU,
};
use phosphor_format::{pack_static_str, params_desc, ArgType, Level, Meta, Phase, Record, ID_THREAD_SWITCH};

use crate::support::event;

const GOLDEN: &[u8] = include_bytes!("../data/golden-v1.phtrace");
const GOLDEN_1_1: &[u8] = include_bytes!("../data/golden-v1.1.phtrace");
const GOLDEN_1_2: &[u8] = include_bytes!("../data/golden-v1.2.phtrace");
const GOLDEN_1_3: &[u8] = include_bytes!("../data/golden-v1.3.phtrace");
const GOLDEN_1_4: &[u8] = include_bytes!("../data/golden-v1.4.phtrace");
const GOLDEN_1_5: &[u8] = include_bytes!("../data/golden-v1.5.phtrace");
const GOLDEN_1_6: &[u8] = include_bytes!("../data/golden-v1.6.phtrace");
const GOLDEN_1_7: &[u8] = include_bytes!("../data/golden-v1.7.phtrace");
const GOLDEN_1_8: &[u8] = include_bytes!("../data/golden-v1.8.phtrace");
const GOLDEN_1_7_ZSTD: &[u8] = include_bytes!("../data/golden-v1.7-zstd.phtrace");
const GOLDEN_1_7_LZ4: &[u8] = include_bytes!("../data/golden-v1.7-lz4.phtrace");
const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
/// The boot id in the 1.5 golden file's header.
const GOLDEN_BOOT_ID: [u8; 16] = *b"golden-boot-id-1";

fn fnv1a64(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

fn callsite(id: u32, category: &str, name: &str, phase: Phase, args: [&str; 2], line: u32) -> CallsiteInfo {
    CallsiteInfo {
        id,
        category: category.into(),
        name: name.into(),
        phase,
        arg_names: args.map(String::from),
        file: "src/golden.rs".into(),
        line,
        name_hash: fnv1a64(name),
        level: None,
        dynamic_name: false,
        flow: false,
    }
}

fn callsites() -> Vec<CallsiteInfo> {
    vec![
        callsite(16, "app", "instant_ints", Phase::Instant, ["i", "u"], 10),
        callsite(17, "app", "complete_fb", Phase::Complete, ["f", "b"], 11),
        callsite(18, "app", "scope", Phase::Begin, ["s", ""], 12),
        callsite(19, "app", "scope", Phase::End, ["", ""], 13),
        callsite(20, "mem", "heap", Phase::Counter, ["value", ""], 14),
        callsite(21, "io", "request", Phase::AsyncBegin, ["url", ""], 15),
        callsite(22, "io", "request", Phase::AsyncEnd, ["", ""], 16),
        callsite(23, "log", "x={} at {}", Phase::Log, ["x", "p"], 17),
        callsite(24, "lock", "mutex", Phase::LockHeld, ["name", "owner"], 18),
    ]
}

/// The callsites of the 1.2 golden file: the 1.1 ones and those of 1.2's additions.
fn callsites_v1_2() -> Vec<CallsiteInfo> {
    let mut all = callsites();
    let mut log = callsite(25, "net", "user {} from {} took {:.1} ms ({})", Phase::Log, ["", ""], 20);
    log.level = Some(Level::Warn);
    let mut named = callsite(27, "io", "op_name()", Phase::Instant, ["name", "bytes"], 22);
    named.dynamic_name = true;
    all.extend([
        log,
        callsite(26, "mem", "queue_depth", Phase::Data, ["value", ""], 21),
        named,
        callsite(28, "net", "bytes_sent", Phase::Counter, ["", ""], 23),
        callsite(29, "net", "latency_ns", Phase::Counter, ["", ""], 24),
    ]);
    all
}

/// The callsites of the 1.3 golden file: the 1.2 ones and a poll slice flagged as a flow.
fn callsites_v1_3() -> Vec<CallsiteInfo> {
    let mut all = callsites_v1_2();
    let mut poll = callsite(30, "io", "request", Phase::Complete, ["task", ""], 25);
    poll.flow = true;
    all.push(poll);
    all
}

fn golden_aggregates() -> Vec<Aggregate> {
    vec![
        Aggregate { callsite: 28, kind: AggregateKind::Sum { count: 3, sum: -12 } },
        Aggregate {
            callsite: 29,
            kind: AggregateKind::Histogram {
                count: 5,
                sum: 1_000,
                min: 3,
                max: 900,
                buckets: vec![(3, 1), (40, 3), (77, 1)],
            },
        },
    ]
}

const HOST: &str = "host-17.example";

const STATIC_ONE: (usize, &str) = (0x1000, "static-one");
const STATIC_TWO: (usize, &str) = (0x2000, "static-two");
const URL: &str = "http://example/ünï";

fn static_word(s: (usize, &str)) -> u64 {
    pack_static_str(s.0, s.1.len()).0
}

fn resolve(addr: u64, len: usize) -> &'static str {
    match (addr as usize, len) {
        (a, l) if a == STATIC_ONE.0 && l == STATIC_ONE.1.len() => STATIC_ONE.1,
        (a, l) if a == STATIC_TWO.0 && l == STATIC_TWO.1.len() => STATIC_TWO.1,
        _ => panic!("unknown static string {addr:#x}+{len}"),
    }
}

/// Writes the v1.2 golden trace: three chunks of two threads (a thread switch inside the first, a
/// sequence gap on thread 101), every phase and argument type, continuation records and drops (all
/// as in the 1.0 golden file), then a chunk of pool tenant 1's writer stream, started by thread 102
/// (as in 1.1), then a chunk of 1.2 events and an aggregates block.
pub fn golden_v1() -> Vec<u8> {
    golden_v1_with(Compression::None)
}

/// [`golden_v1`]'s content, written with `compression`.
pub fn golden_v1_with(compression: Compression) -> Vec<u8> {
    use ArgType::*;
    let header = Header {
        clock: ClockInfo {
            kind: ClockKind::Tsc,
            ns_per_tick: 0.5,
            origin_ticks: 1_000,
            origin_monotonic_ns: 5_000_000,
            origin_wall_ns: 1_700_000_000_000_000_000,
            fallback_reason: Option::None,
        },
        pid: 4242,
        process_name: "golden".into(),
        boot_id: Some(GOLDEN_BOOT_ID),
        host_name: Some("golden-host".into()),
    };
    let mut w = Writer::with_compression(Vec::new(), &header, compression).unwrap();
    w.write_callsites(&callsites_v1_3()).unwrap();
    w.write_thread_names([(101, "main"), (102, "worker-1")]).unwrap();

    let mut a: Vec<Record> = Vec::new();
    a.extend(event(1000, 16, Meta::new(0, I64, U64), &[(-5i64) as u64, 7], &[]));
    a.extend(event(1100, 17, Meta::new(1, F64, Bool), &[50, 2.5f64.to_bits(), 1], &[]));
    a.extend(event(1200, 18, Meta::new(0, StaticStr, None), &[static_word(STATIC_ONE)], &[]));
    a.extend(event(1300, 20, Meta::new(0, I64, None), &[42], &[]));
    a.push(Record::new(0, ID_THREAD_SWITCH, Meta(0), [102, 0]));
    a.extend(event(1400, 23, Meta::new(0, I64, Pointer), &[3, 0xdead], &[]));
    a.extend(event(1500, 19, Meta::new(0, None, None), &[], &[]));
    w.write_chunk(101, 0, &a, resolve).unwrap();

    let mut b: Vec<Record> = Vec::new();
    b.extend(event(2000, 21, Meta::new(1, DynStr, None), &[7, URL.len() as u64], &[URL.as_bytes()]));
    let words = [30, static_word(STATIC_ONE), static_word(STATIC_TWO)];
    b.extend(event(2100, 24, Meta::new(1, StaticStr, StaticStr), &words, &[]));
    b.extend(event(2200, 22, Meta::new(1, None, None), &[7], &[]));
    w.write_chunk(102, 0, &b, resolve).unwrap();

    let c = event(3000, 16, Meta::new(0, I64, U64), &[1, 2], &[]);
    w.write_chunk(101, 2, &c, resolve).unwrap();

    let d = event(4000, 16, Meta::new(0, I64, U64), &[3, 4], &[]);
    w.write_chunk(102, 1 << SEQ_STREAM_SHIFT, &d, resolve).unwrap();

    // 1.2: a warn log with four packed parameters (an int, a dynamic string, a float, a static
    // string), a data value, and an event named at run time by a static string.
    let mut e: Vec<Record> = Vec::new();
    let desc = params_desc(&[U64, DynStr, F64, StaticStr]);
    let words = [desc, 42, HOST.len() as u64, 12.25f64.to_bits(), static_word(STATIC_TWO)];
    e.extend(event(5000, 25, Meta::new(0, Params, None), &words, &[HOST.as_bytes()]));
    e.extend(event(5100, 26, Meta::new(0, U64, None), &[17], &[]));
    e.extend(event(5200, 27, Meta::new(0, StaticStr, U64), &[static_word(STATIC_ONE), 4096], &[]));
    w.write_chunk(101, 3, &e, resolve).unwrap();
    w.write_aggregates(&golden_aggregates()).unwrap();

    // 1.3: async slice 9 of `io/request`, and two polls of it (slices of 50 and 70 ticks) on two
    // threads, linked to it by their flow flag.
    let f = [
        event(6000, 21, Meta::new(1, None, None), &[9], &[]),
        event(6010, 30, Meta::new(1, U64, None), &[50, 9], &[]),
        event(6200, 22, Meta::new(1, None, None), &[9], &[]),
    ]
    .concat();
    w.write_chunk(101, 4, &f, resolve).unwrap();
    let g = event(6100, 30, Meta::new(1, U64, None), &[70, 9], &[]);
    w.write_chunk(102, 2, &g, resolve).unwrap();

    // 1.4: thread 101's chunk 5 streamed in two pieces (the same sequence number), the second
    // after another thread's chunk.
    let h = event(7000, 16, Meta::new(0, I64, U64), &[5, 6], &[]);
    w.write_chunk(101, 5, &h, resolve).unwrap();
    let i = event(7100, 16, Meta::new(0, I64, U64), &[7, 8], &[]);
    w.write_chunk(102, 3, &i, resolve).unwrap();
    let j = event(7200, 16, Meta::new(0, I64, U64), &[9, 10], &[]);
    w.write_chunk(101, 5, &j, resolve).unwrap();

    // 1.6: system context in two blocks, the status in the second.
    let [first, second] = golden_system();
    w.write_system(&first).unwrap();
    w.write_system(&second).unwrap();

    w.finish(&golden_trailer()).unwrap()
}

/// The trailer of the 1.3 golden file (and of the older ones).
fn golden_trailer_v1_3() -> Trailer {
    Trailer {
        recorded: 10,
        dropped: DropCounts { buffer_full: 5, contended: 2, overwritten: 127, ..DropCounts::default() },
        chunks_loaned: 4,
        chunks_overwritten: 1,
        chunks_total: 8,
        buffer_exhausted: true,
        saturation_markers: 0,
    }
}

/// The trailer of the 1.4 to 1.7 golden files: 1.4 adds the saturation markers.
fn golden_trailer_v1_4() -> Trailer {
    Trailer { saturation_markers: 3, ..golden_trailer_v1_3() }
}

/// The trailer the writer writes now: 1.8 adds the drops of fills that unwound.
fn golden_trailer() -> Trailer {
    let v1_4 = golden_trailer_v1_4();
    Trailer { dropped: DropCounts { unwound: 6, ..v1_4.dropped.clone() }, ..v1_4 }
}

/// The 1.6 golden file's system blocks: mappings (one with a build id, one without), switches of
/// each kind with an unknown CPU, a CPU sample and an allocation sample, heap totals; then the
/// status, switches on, samples unavailable, with losses.
fn golden_system() -> [SystemBatch; 2] {
    let first = SystemBatch {
        status: None,
        mappings: vec![
            Mapping {
                start: 0x5555_5555_0000,
                end: 0x5555_5556_0000,
                file_offset: 0x1000,
                path: "/usr/bin/golden".into(),
                build_id: (0..20).collect(),
            },
            Mapping {
                start: 0x7fff_0000_0000,
                end: 0x7fff_0000_2000,
                file_offset: 0,
                path: "[vdso]".into(),
                build_id: vec![],
            },
        ],
        switches: vec![
            Switch { tid: 101, time_ns: 5_000_100, cpu: 1, kind: SwitchKind::Out },
            Switch { tid: 101, time_ns: 5_000_400, cpu: 0, kind: SwitchKind::In },
            Switch { tid: 102, time_ns: 5_000_300, cpu: UNKNOWN_CPU, kind: SwitchKind::Preempted },
        ],
        samples: vec![
            Sample {
                tid: 101,
                time_ns: 5_000_050,
                cpu: 1,
                kind: SampleKind::Cpu,
                frames: vec![0x5555_5555_1234, 0x5555_5555_0f00, 0x5555_5555_2000],
            },
            Sample {
                tid: 102,
                time_ns: 5_000_020,
                cpu: UNKNOWN_CPU,
                kind: SampleKind::Allocation { bytes: 4096 },
                frames: vec![0x7fff_0000_0100],
            },
        ],
        heap: vec![
            HeapCounter { time_ns: 5_000_000, allocs: 10, frees: 4, alloc_bytes: 1000, freed_bytes: 200 },
            HeapCounter { time_ns: 5_000_500, allocs: 12, frees: 9, alloc_bytes: 1100, freed_bytes: 900 },
        ],
    };
    let second = SystemBatch {
        status: Some(SystemStatus {
            switches: Availability::On,
            samples: Availability::Unavailable("perf_event_open: EACCES".into()),
            allocations: Availability::Off,
            sample_hz: 999,
            kernel_lost: 3,
            dropped: 1,
            threads_missed: 2,
        }),
        switches: vec![Switch { tid: 102, time_ns: 5_000_600, cpu: 0, kind: SwitchKind::In }],
        ..SystemBatch::default()
    };
    [first, second]
}

#[test]
#[ignore = "writes tests/data/golden-v1.7*.phtrace; run by hand only"]
fn regenerate_the_v1_7_golden_files() {
    std::fs::write(format!("{DATA}/golden-v1.7.phtrace"), golden_v1()).unwrap();
    std::fs::write(
        format!("{DATA}/golden-v1.7-zstd.phtrace"),
        golden_v1_with(Compression::Zstd { level: 1 }),
    )
    .unwrap();
    std::fs::write(format!("{DATA}/golden-v1.7-lz4.phtrace"), golden_v1_with(Compression::Lz4)).unwrap();
}

#[test]
#[ignore = "writes tests/data/golden-v1.8.phtrace; run by hand only"]
fn regenerate_the_v1_8_golden_file() {
    std::fs::write(format!("{DATA}/golden-v1.8.phtrace"), golden_v1()).unwrap();
}

#[test]
fn the_writer_reproduces_the_v1_8_golden_file_byte_for_byte() {
    assert!(golden_v1() == GOLDEN_1_8, "the writer's output differs from {DATA}/golden-v1.8.phtrace");
}

#[test]
fn the_v1_8_golden_file_reads_back_the_1_7_content_and_the_unwound_drops() {
    let (mut r, mut old) = (Reader::new(GOLDEN_1_8).unwrap(), Reader::new(GOLDEN_1_7).unwrap());
    assert_eq!(r.version(), (1, 8));
    let blocks = |r: &mut Reader<&[u8]>| {
        let mut got = vec![format!("{:?}", r.header())];
        while let Some(b) = r.next_block().unwrap() {
            got.push(format!("{b:?}"));
        }
        // The trailers differ: compared below.
        got.pop_if(|b| b.starts_with("Trailer"));
        got
    };
    assert_eq!(blocks(&mut r), blocks(&mut old));
    assert_eq!(r.trailer(), Some(&golden_trailer()));
    assert_eq!(old.trailer(), Some(&golden_trailer_v1_4()), "a 1.7 trailer has no unwound drops");
    assert_eq!(golden_trailer().dropped.total(), golden_trailer_v1_4().dropped.total() + 6);
}

#[test]
fn the_plain_v1_7_golden_file_is_the_v1_6_one_but_for_the_minor_version() {
    assert_eq!(GOLDEN_1_7.len(), GOLDEN_1_6.len());
    assert_eq!(GOLDEN_1_6[10..12], 6u16.to_le_bytes());
    assert_eq!(GOLDEN_1_7[10..12], 7u16.to_le_bytes());
    assert_eq!(GOLDEN_1_7[..10], GOLDEN_1_6[..10]);
    assert_eq!(GOLDEN_1_7[12..], GOLDEN_1_6[12..]);
}

/// Everything a reader gives of a file, as text: each block, each event, the tables at the end.
pub fn everything(bytes: &[u8]) -> Vec<String> {
    let mut r = Reader::new(bytes).unwrap();
    let mut out = vec![format!("{:?}", r.header())];
    while let Some(b) = r.next_block().unwrap() {
        match b {
            Block::Chunk(c) => {
                out.push(format!("chunk {:?}", c.extents));
                out.extend(c.events().map(|e| {
                    let e = e.unwrap();
                    format!("{} {} {} {:?} {:?}", e.tid, e.ts, e.callsite.id, e.args, e.params)
                }));
            }
            b => out.push(format!("{b:?}")),
        }
    }
    out.push(format!("{:?}", r.aggregates()));
    out.push(format!("{:?}", r.system_status()));
    out.extend(r.callsites().map(|c| format!("{c:?}")));
    let mut names: Vec<String> = r.thread_names().map(|(t, n)| format!("{t} {n}")).collect();
    names.sort();
    out.extend(names);
    out
}

#[test]
fn the_compressed_v1_7_golden_files_read_back_what_the_plain_one_holds() {
    let plain = everything(GOLDEN_1_7);
    assert!(plain.len() > 40, "{plain:?}");
    for (bytes, codec) in
        [(GOLDEN_1_7_ZSTD, Compression::Zstd { level: 1 }), (GOLDEN_1_7_LZ4, Compression::Lz4)]
    {
        assert_eq!(everything(bytes), plain, "{codec}");
        let mut r = Reader::new(bytes).unwrap();
        r.for_each_event(|_| {}).unwrap();
        assert_eq!(r.codecs(), [codec]);
        assert_eq!(r.version(), (1, 7));
        // What they decode to is the plain file.
        assert_eq!(r.decoded_bytes(), GOLDEN_1_7.len() as u64, "{codec}");
        assert_eq!(r.stored_bytes(), bytes.len() as u64, "{codec}");
        // And what the writer writes today compressed reads as what it writes plain.
        assert_eq!(everything(&golden_v1_with(codec)), everything(&golden_v1()), "{codec}");
    }
}

#[test]
fn the_v1_6_golden_file_reads_back_the_1_5_content_and_its_system_blocks() {
    let mut r = Reader::new(GOLDEN_1_6).unwrap();
    assert_eq!(r.version(), (1, 6));
    let mut old = Reader::new(GOLDEN_1_5).unwrap();
    assert_eq!(r.header(), old.header());
    let events = |r: &mut Reader<&[u8]>| {
        let mut got = Vec::new();
        let mut system = Vec::new();
        while let Some(b) = r.next_block().unwrap() {
            match b {
                Block::Chunk(c) => got.extend(c.events().map(|e| {
                    let e = e.unwrap();
                    (e.tid, e.ts, e.callsite.id, format!("{:?}", e.args))
                })),
                Block::System(s) => system.push(s.clone()),
                _ => {}
            }
        }
        (got, system)
    };
    let (got, system) = events(&mut r);
    let (want, none) = events(&mut old);
    assert_eq!(got, want);
    assert!(none.is_empty());
    assert_eq!(system, golden_system());
    assert_eq!(r.system_status(), golden_system()[1].status.as_ref());
    assert_eq!(old.system_status(), None);
    assert_eq!(r.trailer(), old.trailer());
}

#[test]
fn the_v1_5_golden_file_reads_back_the_1_4_content_and_the_boot_id_and_host_name() {
    let mut r = Reader::new(GOLDEN_1_5).unwrap();
    assert_eq!(r.version(), (1, 5));
    assert_eq!(r.header().boot_id, Some(GOLDEN_BOOT_ID));
    assert_eq!(r.header().host_name.as_deref(), Some("golden-host"));
    let mut old = Reader::new(GOLDEN_1_4).unwrap();
    let (h, o) = (r.header().clone(), old.header().clone());
    assert_eq!((h.clock, h.pid, h.process_name), (o.clock, o.pid, o.process_name));
    while let Some(want) = old.next_chunk().unwrap() {
        let want_events: Vec<_> = want.events().map(Result::unwrap).collect();
        let got = r.next_chunk().unwrap().expect("as many chunks as in 1.4");
        assert_eq!(got.extents, want.extents);
        let got_events: Vec<_> = got.events().map(Result::unwrap).collect();
        assert_eq!(got_events.len(), want_events.len());
        for (g, w) in got_events.iter().zip(&want_events) {
            assert_eq!((g.tid, g.ts, g.callsite, g.args), (w.tid, w.ts, w.callsite, w.args));
        }
    }
    assert!(r.next_chunk().unwrap().is_none());
    assert_eq!(r.trailer(), old.trailer());
}

#[test]
fn headers_before_1_5_read_with_no_boot_id_and_no_host_name() {
    for (file, minor) in [(GOLDEN, 0), (GOLDEN_1_1, 1), (GOLDEN_1_2, 2), (GOLDEN_1_3, 3), (GOLDEN_1_4, 4)] {
        let r = Reader::new(file).unwrap();
        assert_eq!(r.version(), (1, minor));
        assert_eq!((r.header().boot_id, r.header().host_name.as_deref()), (None, None), "1.{minor}");
    }
}

#[test]
fn the_v1_4_golden_file_reads_back_the_1_3_content_then_a_chunk_in_pieces_and_the_markers() {
    let mut r = Reader::new(GOLDEN_1_4).unwrap();
    assert_eq!(r.version(), (1, 4));
    let mut old = Reader::new(GOLDEN_1_3).unwrap();
    while let Some(want) = old.next_chunk().unwrap() {
        let want_events: Vec<_> = want.events().map(Result::unwrap).collect();
        let got = r.next_chunk().unwrap().expect("as many chunks as in 1.3");
        let got_events: Vec<_> = got.events().map(Result::unwrap).collect();
        assert_eq!(got_events.len(), want_events.len());
        for (g, w) in got_events.iter().zip(&want_events) {
            assert_eq!((g.tid, g.ts, g.callsite, g.args), (w.tid, w.ts, w.callsite, w.args));
        }
    }
    let mut pieces = Vec::new();
    while let Some(chunk) = r.next_chunk().unwrap() {
        let seq = chunk.extents.seq;
        for e in chunk.events().map(Result::unwrap) {
            pieces.push((e.tid, seq, e.ts));
        }
    }
    assert_eq!(pieces, [(101, 5, 7000), (102, 3, 7100), (101, 5, 7200)]);
    let t = r.trailer().expect("a trailer");
    assert_eq!(t, &golden_trailer_v1_4());
    assert_eq!(t.emitted(), 10 - 3 + 134, "recorded less the markers, plus the drops");
}

#[test]
fn the_v1_3_golden_file_reads_back_the_1_2_content_then_polls_flagged_as_flows() {
    let mut r = Reader::new(GOLDEN_1_3).unwrap();
    assert_eq!(r.version(), (1, 3));
    let mut old = Reader::new(GOLDEN_1_2).unwrap();
    while let Some(want) = old.next_chunk().unwrap() {
        let want_events: Vec<_> = want.events().map(Result::unwrap).collect();
        let got = r.next_chunk().unwrap().expect("as many chunks as in 1.2");
        let got_events: Vec<_> = got.events().map(Result::unwrap).collect();
        assert_eq!(got_events.len(), want_events.len());
        for (g, w) in got_events.iter().zip(&want_events) {
            assert_eq!((g.tid, g.ts, g.callsite, g.args), (w.tid, w.ts, w.callsite, w.args));
            assert!(g.params.iter().eq(w.params.iter()));
        }
    }
    let mut polls = Vec::new();
    while let Some(chunk) = r.next_chunk().unwrap() {
        for e in chunk.events().map(Result::unwrap) {
            if e.callsite.flow {
                let task = match e.arg("task") {
                    Some(Value::U64(t)) => t,
                    other => panic!("a poll's task id is a u64, not {other:?}"),
                };
                polls.push((e.tid, e.ts, e.duration, task));
            } else {
                assert_eq!((e.callsite.name.as_str(), e.async_id), ("request", Some(9)));
            }
        }
    }
    assert_eq!(polls, [(101, 6010, Some(50), 9), (102, 6100, Some(70), 9)]);
    let mut cs: Vec<CallsiteInfo> = r.callsites().map(CallsiteInfo::into_owned).collect();
    cs.sort_by_key(|c| c.id);
    assert_eq!(cs, callsites_v1_3());
    assert_eq!(r.trailer(), Some(&golden_trailer_v1_3()));
}

#[test]
fn the_v1_2_golden_file_reads_back_the_1_1_content_then_logs_data_dynamic_names_and_aggregates() {
    let mut r = Reader::new(GOLDEN_1_2).unwrap();
    assert_eq!(r.version(), (1, 2));
    let mut old = Reader::new(GOLDEN_1_1).unwrap();
    while let Some(want) = old.next_chunk().unwrap() {
        let (want_extents, want_events): (_, Vec<_>) =
            (want.extents, want.events().map(Result::unwrap).collect());
        let got = r.next_chunk().unwrap().expect("as many chunks as in 1.1");
        assert_eq!(got.extents, want_extents);
        let got_events: Vec<_> = got.events().map(Result::unwrap).collect();
        assert_eq!(got_events.len(), want_events.len());
        for (g, w) in got_events.iter().zip(&want_events) {
            assert_eq!(
                (g.tid, g.ts, g.callsite, g.args, g.params),
                (w.tid, w.ts, w.callsite, w.args, w.params)
            );
        }
    }
    let chunk = r.next_chunk().unwrap().expect("the 1.2 chunk");
    let events: Vec<_> = chunk.events().map(Result::unwrap).collect();
    assert_eq!(events.len(), 3);
    let log = &events[0];
    assert_eq!(
        (log.callsite.level, log.callsite.name.as_str()),
        (Some(Level::Warn), "user {} from {} took {:.1} ms ({})")
    );
    assert_eq!(log.args, [None, None]);
    let params: Vec<Value<'_>> = log.params.iter().collect();
    assert_eq!(params, [Value::U64(42), Value::Str(HOST), Value::F64(12.25), Value::Str("static-two")]);
    assert_eq!(log.params.len(), 4);
    let data = &events[1];
    assert_eq!(
        (data.phase(), data.arg("value"), data.params.is_empty()),
        (Phase::Data, Some(Value::U64(17)), true)
    );
    let named = &events[2];
    assert!(named.callsite.dynamic_name);
    assert_eq!(
        (named.arg("name"), named.arg("bytes")),
        (Some(Value::Str("static-one")), Some(Value::U64(4096)))
    );
    assert!(r.next_chunk().unwrap().is_none());
    assert_eq!(r.aggregates(), golden_aggregates());
    let mut cs: Vec<CallsiteInfo> = r.callsites().map(CallsiteInfo::into_owned).collect();
    cs.sort_by_key(|c| c.id);
    assert_eq!(cs, callsites_v1_2());
    assert_eq!(r.trailer(), Some(&golden_trailer_v1_3()));
    assert_eq!(r.offset(), GOLDEN_1_2.len() as u64);
}

#[test]
fn the_v1_1_golden_file_reads_back_as_the_1_0_content_plus_a_pool_stream_chunk() {
    let mut r = Reader::new(GOLDEN_1_1).unwrap();
    assert_eq!(r.version(), (1, 1));
    let mut old = Reader::new(GOLDEN).unwrap();
    assert_eq!(r.header(), old.header());
    let mut n = 0;
    while let Some(want) = old.next_chunk().unwrap() {
        let (want_extents, want_events): (_, Vec<_>) =
            (want.extents, want.events().map(Result::unwrap).collect());
        let got = r.next_chunk().unwrap().expect("as many chunks as in 1.0");
        assert_eq!(got.extents, want_extents);
        assert_eq!(got.extents.stream(), 0);
        let got_events: Vec<_> = got.events().map(Result::unwrap).collect();
        assert_eq!(got_events.len(), want_events.len());
        for (g, w) in got_events.iter().zip(&want_events) {
            assert_eq!(
                (g.tid, g.ts, g.callsite, g.args, g.duration),
                (w.tid, w.ts, w.callsite, w.args, w.duration)
            );
        }
        n += 1;
    }
    assert_eq!(n, 3);
    let pool = r.next_chunk().unwrap().expect("the pool chunk");
    let x = pool.extents;
    assert_eq!((x.tid, x.stream(), x.stream_seq(), x.stream_key()), (102, 1, 0, (1, 0)));
    let e = pool.events().next().unwrap().unwrap();
    assert_eq!((e.tid, e.ts, e.arg("i"), e.arg("u")), (102, 4000, Some(Value::I64(3)), Some(Value::U64(4))));
    assert!(r.next_chunk().unwrap().is_none());
    assert_eq!(r.trailer(), Some(&golden_trailer_v1_3()));
    assert_eq!(r.offset(), GOLDEN_1_1.len() as u64);
}

#[test]
fn the_v1_golden_file_reads_back_exactly() {
    let mut r = Reader::new(GOLDEN).unwrap();
    assert_eq!(r.version(), (1, 0));
    let h = r.header().clone();
    assert_eq!(h.pid, 4242);
    assert_eq!(h.process_name, "golden");
    assert_eq!(h.clock.kind, ClockKind::Tsc);
    assert_eq!(h.clock.ns_per_tick, 0.5);
    assert_eq!(h.clock.origin_ticks, 1_000);
    assert_eq!(h.clock.origin_monotonic_ns, 5_000_000);
    assert_eq!(h.clock.origin_wall_ns, 1_700_000_000_000_000_000);
    assert_eq!(h.clock.fallback_reason, Option::None);

    let mut extents = Vec::new();
    let mut events = Vec::new();
    while let Some(chunk) = r.next_chunk().unwrap() {
        extents.push(chunk.extents);
        for e in chunk.events() {
            let e = e.unwrap();
            let args: Vec<String> = e.args.iter().flatten().map(|(n, v)| format!("{n}={v:?}")).collect();
            events.push(format!(
                "{} {} {}/{} {:?} dur={:?} id={:?} [{}]",
                e.tid,
                e.ts,
                e.callsite.category,
                e.callsite.name,
                e.phase(),
                e.duration,
                e.async_id,
                args.join(", ")
            ));
        }
    }
    let ext: Vec<_> = extents
        .iter()
        .map(|e| (e.tid, e.seq, e.record_count, e.event_count, e.first_ts, e.last_ts))
        .collect();
    assert_eq!(ext, [(101, 0, 8, 6, 1000, 1500), (102, 0, 5, 3, 2000, 2200), (101, 2, 1, 1, 3000, 3000)]);
    assert_eq!(
        events,
        [
            "101 1000 app/instant_ints Instant dur=None id=None [i=I64(-5), u=U64(7)]",
            "101 1100 app/complete_fb Complete dur=Some(50) id=None [f=F64(2.5), b=Bool(true)]",
            "101 1200 app/scope Begin dur=None id=None [s=Str(\"static-one\")]",
            "101 1300 mem/heap Counter dur=None id=None [value=I64(42)]",
            "102 1400 log/x={} at {} Log dur=None id=None [x=I64(3), p=Pointer(57005)]",
            "102 1500 app/scope End dur=None id=None []",
            "102 2000 io/request AsyncBegin dur=None id=Some(7) [url=Str(\"http://example/ünï\")]",
            "102 2100 lock/mutex LockHeld dur=Some(30) id=None [name=Str(\"static-one\"), owner=Str(\"static-two\")]",
            "102 2200 io/request AsyncEnd dur=None id=Some(7) []",
            "101 3000 app/instant_ints Instant dur=None id=None [i=I64(1), u=U64(2)]",
        ]
    );
    assert_eq!(r.thread_name(101).as_deref(), Some("main"));
    assert_eq!(r.thread_name(102).as_deref(), Some("worker-1"));
    let mut cs: Vec<CallsiteInfo> = r.callsites().map(CallsiteInfo::into_owned).collect();
    cs.sort_by_key(|c| c.id);
    assert_eq!(cs, callsites());
    assert_eq!(r.trailer(), Some(&golden_trailer_v1_3()));
    assert_eq!(r.offset(), GOLDEN.len() as u64);
}

#[test]
fn static_strings_are_stored_as_string_table_indices_not_addresses() {
    let mut r = Reader::new(GOLDEN).unwrap();
    let chunk = r.next_chunk().unwrap().unwrap();
    // Record 3 is the Begin event with one static string argument in slot 0.
    let word = chunk.records[3].slots[0];
    assert!(word < 1 << 32, "a string index, not a packed address: {word:#x}");
    let strings = r.strings();
    assert_eq!(&strings[word as usize], "static-one");
}

#[test]
fn events_borrow_their_strings_from_the_reader() {
    let mut r = Reader::new(GOLDEN).unwrap();
    let mut seen = Vec::new();
    r.for_each_event(|e| {
        if let Some(Value::Str(s)) = e.arg("url") {
            seen.push(s.to_owned());
        }
    })
    .unwrap();
    assert_eq!(seen, [URL]);
}

//! Tests of the Perfetto exporter: the builders of small trace files the other test files use, the
//! golden files, truncation and errors, and speed; the mapping of each kind of event is tested in
//! `perfetto/mapping_tests.rs`, the async layout in `perfetto/async_tests.rs`. Every output is
//! decoded by `scripts/check_pftrace.py` with the official generated protobuf code (see
//! `checker.rs`: it checks the schema, interning, tracks and clocks, and rebuilds the slices as
//! trace processor would); the tests then check what it decoded.

use std::time::Instant;

use phosphor_format::file::{CallsiteInfo, ClockInfo, ClockKind, Header, Reader, Trailer, Writer};
use phosphor_format::{ArgType, Meta, Phase, Record};
use serde_json::json;

use super::checker::{check, check_all, named, run_checker, s, slice, slices, thread, tracks};
use super::*;

const GOLDEN: &[u8] = include_bytes!("../../phosphor-format/tests/data/golden-v1.phtrace");
const GOLDEN_1_1: &[u8] = include_bytes!("../../phosphor-format/tests/data/golden-v1.1.phtrace");

pub(super) fn export(bytes: &[u8]) -> (Vec<u8>, Result<ExportSummary, Error>) {
    let mut out = Vec::new();
    let r = write_perfetto(Reader::new(bytes).unwrap(), &mut out);
    (out, r)
}

// ---- Building small trace files ----

pub(super) fn callsite(id: u32, name: &str, phase: Phase, args: [&str; 2]) -> CallsiteInfo {
    CallsiteInfo {
        id,
        category: "test".into(),
        name: name.into(),
        phase,
        arg_names: args.map(String::from),
        file: "perfetto_tests.rs".into(),
        line: 1,
        name_hash: 0,
        level: None,
        dynamic_name: false,
        flow: false,
    }
}

/// What a file is made of, in file order.
pub(super) enum Part {
    Callsites(Vec<CallsiteInfo>),
    Chunk(u32, Vec<Record>),
    Threads(Vec<(u32, &'static str)>),
}

/// Bytes of a record (FORMAT.md).
const RECORD_SIZE: usize = 32;

/// Origin of the handmade files: raw timestamps are nanoseconds after it.
pub(super) const T0: u64 = 1_000_000_000;

/// A file on a nanosecond clock whose origin (tick 0) is `T0` in `CLOCK_MONOTONIC`, so an event at
/// tick `t` is exported at `T0 + t`. Static string words are indices into `statics`.
pub(super) fn file(parts: Vec<Part>, statics: &[&'static str], trailer: &Trailer) -> Vec<u8> {
    let header = Header {
        clock: ClockInfo {
            kind: ClockKind::Monotonic,
            ns_per_tick: 1.0,
            origin_ticks: 0,
            origin_monotonic_ns: T0,
            origin_wall_ns: 1_600_000_000_000_000_000,
            fallback_reason: None,
        },
        pid: 7,
        process_name: "proc".into(),
        boot_id: None,
        host_name: None,
    };
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    // Each thread's chunks numbered 0, 1, 2…: no chunk looks lost.
    let mut seqs = std::collections::HashMap::<u32, u64>::new();
    for part in parts {
        match part {
            Part::Callsites(cs) => w.write_callsites(&cs).unwrap(),
            Part::Chunk(tid, records) => {
                let seq = seqs.entry(tid).or_default();
                w.write_chunk(tid, *seq, &records, |addr, _| statics[addr as usize]).unwrap();
                *seq += 1;
            }
            Part::Threads(names) => w.write_thread_names(names).unwrap(),
        }
    }
    w.finish(trailer).unwrap()
}

/// One event's records. `lead` are its lead words (a duration, an async id); each argument is a
/// type and its word (a dynamic string's word is its length; its bytes come from `strs`).
/// Continuation records are laid out as FORMAT.md says: the words after the first two, then the
/// string bytes, in 32-byte records.
pub(super) fn ev(
    ts: u64,
    id: u32,
    lead: &[u64],
    args: &[(ArgType, u64)],
    strs: &[&str],
    truncated: bool,
) -> Vec<Record> {
    let words: Vec<u64> = lead.iter().copied().chain(args.iter().map(|a| a.1)).collect();
    let mut payload: Vec<u8> = words.iter().skip(2).flat_map(|w| w.to_le_bytes()).collect();
    for s in strs {
        payload.extend_from_slice(s.as_bytes());
    }
    payload.resize(payload.len().div_ceil(RECORD_SIZE) * RECORD_SIZE, 0);
    let cont: Vec<Record> =
        payload.chunks(RECORD_SIZE).map(|c| Record::from_bytes(c.try_into().unwrap())).collect();
    let ty = |i: usize| args.get(i).map_or(ArgType::None, |a| a.0);
    let meta =
        Meta::new(lead.len(), ty(0), ty(1)).with_continuation(cont.len() as u32).with_truncated(truncated);
    let mut slots = [0; 2];
    for (slot, w) in slots.iter_mut().zip(&words) {
        *slot = *w;
    }
    let mut v = vec![Record::new(ts, id, meta, slots)];
    v.extend(cont);
    v
}

/// An event without lead words or strings.
pub(super) fn plain(ts: u64, id: u32, args: &[(ArgType, u64)]) -> Vec<Record> {
    ev(ts, id, &[], args, &[], false)
}

pub(super) fn chunk(tid: u32, events: Vec<Vec<Record>>) -> Part {
    Part::Chunk(tid, events.concat())
}

// ---- The golden file ----

#[test]
fn the_golden_file_decodes_with_the_official_schema_to_what_it_recorded() {
    let (pf, r) = export(GOLDEN);
    let summary = r.unwrap();
    assert_eq!((summary.chunks, summary.events, summary.threads, summary.complete), (3, 10, 2, true));
    let doc = check(&pf);
    assert_eq!(doc["sequences"], json!([1]));
    assert_eq!(doc["clock"]["primary"], "BUILTIN_CLOCK_MONOTONIC");
    assert_eq!(
        doc["clock"]["snapshot"],
        json!({"BUILTIN_CLOCK_MONOTONIC": 5_000_000, "BUILTIN_CLOCK_REALTIME": 1_700_000_000_000_000_000u64})
    );
    let process = tracks(&doc, "process");
    assert_eq!(process.len(), 1);
    assert_eq!((&process[0]["pid"], &process[0]["name"]), (&json!(4242), &json!("golden")));
    let process_uuid = &process[0]["uuid"];

    // The TSC ticks at 0.5 ns from origin tick 1000, which is CLOCK_MONOTONIC 5 ms.
    let main = thread(&doc, 101);
    assert_eq!((&main["pid"], &main["name"]), (&json!(4242), &json!("main")));
    assert_eq!(
        slices(main),
        [
            s("instant_ints", 5_000_000, Some(0), 0),
            s("complete_fb", 5_000_050, Some(25), 0),
            // Its end is on thread 102: it stays open, and the later instant is inside it.
            s("scope", 5_000_100, None, 0),
            s("instant_ints", 5_001_000, Some(0), 1),
        ]
    );
    assert_eq!(main["slices"][0]["args"], json!({"i": ["int", -5], "u": ["uint", 7]}));
    assert_eq!(main["slices"][0]["category"], "app");
    assert_eq!(main["slices"][1]["args"], json!({"f": ["double", 2.5], "b": ["bool", true]}));
    assert_eq!(main["slices"][2]["args"], json!({"s": ["string", "static-one"]}));

    let worker = thread(&doc, 102);
    assert_eq!(worker["name"], "worker-1");
    assert_eq!(
        slices(worker),
        [s("x={} at {}", 5_000_200, Some(0), 0), s("mutex (held)", 5_000_550, Some(15), 0)]
    );
    // Its end on thread 102, where nothing is open, closes nothing: it is not written (trace
    // processor would drop it too), and the trace summary counts it.
    assert_eq!(worker["unmatched_ends"], json!([]));
    assert_eq!(worker["slices"][0]["args"], json!({"x": ["int", 3], "p": ["pointer", 0xdead]}));
    assert_eq!(
        worker["slices"][1]["args"],
        json!({"name": ["string", "static-one"], "owner": ["string", "static-two"]})
    );
    assert_eq!(worker["slices"][1]["category"], "lock");

    let heap = named(&doc, "counter", "heap");
    assert_eq!(heap.len(), 1);
    assert_eq!(&heap[0]["parent"], process_uuid);
    assert_eq!(heap[0]["categories"], json!(["mem"]));
    assert_eq!(heap[0]["counter"], json!([[5_000_150, 42]]));

    let request = named(&doc, "track", "request");
    assert_eq!(request.len(), 1);
    assert_eq!(&request[0]["parent"], process_uuid);
    assert_eq!(slices(request[0]), [s("request", 5_000_500, Some(100), 0)]);
    assert_eq!(
        request[0]["slices"][0]["args"],
        json!({"url": ["string", "http://example/ünï"], "async_id": ["uint", 7]})
    );

    let end = &process[0]["slices"];
    assert_eq!(slices(process[0]), [s("trace summary", 5_001_000, Some(0), 0)]);
    assert_eq!(end[0]["category"], "phosphor");
    assert_eq!(
        end[0]["args"],
        json!({
            "events_recorded": ["uint", 10], "events_dropped": ["uint", 134],
            "dropped.buffer_full": ["uint", 5], "dropped.contended": ["uint", 2],
            "dropped.overwritten": ["uint", 127], "chunks_overwritten": ["uint", 1],
            "buffer_exhausted": ["bool", true], "chunks_lost": ["uint", 1],
            "unmatched_ends": ["uint", 1],
        })
    );
    assert_eq!(doc["tracks"].as_array().unwrap().len(), 5);
}

#[test]
fn the_golden_file_exports_to_the_committed_snapshot() {
    let (pf, r) = export(GOLDEN);
    r.unwrap();
    let dump = run_checker(&["--dump", "-"], &pf);
    assert!(dump.ends_with("errors: none\n"), "{dump}");
    insta::assert_snapshot!("golden_v1_perfetto_dump", dump);
}

#[test]
fn the_v1_1_golden_file_exports_its_pool_stream_chunk_too() {
    let (v1_0, _) = export(GOLDEN);
    let (v1_1, r) = export(GOLDEN_1_1);
    assert_eq!(r.unwrap().events, 11);
    let docs = check_all(&[v1_0, v1_1]);
    let (a, b) = (&docs[0], &docs[1]);
    assert_eq!((&a["ok"], &b["ok"]), (&json!(true), &json!(true)), "{:#} {:#}", a["errors"], b["errors"]);
    // The 1.1 file is the 1.0 content plus one instant of thread 102, written by a pool tenant.
    let worker = thread(b, 102);
    assert_eq!(slices(worker)[..2], slices(thread(a, 102))[..]);
    assert_eq!(slices(worker)[2], s("instant_ints", 5_001_500, Some(0), 0));
    assert_eq!(worker["slices"][2]["args"], json!({"i": ["int", 3], "u": ["uint", 4]}));
    assert_eq!(thread(a, 101), thread(b, 101));
}

// ---- Truncation and errors ----

#[test]
fn a_truncated_file_exports_a_valid_trace_of_its_complete_chunks_and_says_where_it_stopped() {
    let mut chunks = Vec::new();
    // The end of the chunk holding thread 102's end of a scope begun on thread 101: once read, it
    // is an end with no begin open on its thread, dropped and counted.
    let mut unmatched_end_read_at = u64::MAX;
    let mut r = Reader::new(GOLDEN).unwrap();
    while let Some(c) = r.next_chunk().unwrap() {
        if c.events().any(|e| e.unwrap().callsite.phase == phosphor_format::Phase::End) {
            unmatched_end_read_at = unmatched_end_read_at.min(c.end_offset());
        }
        chunks.push((c.end_offset(), c.events().count() as u64));
    }
    let mut outputs = Vec::new();
    let mut expected = Vec::new();
    for cut in 0..GOLDEN.len() {
        let Ok(reader) = Reader::new(&GOLDEN[..cut]) else { continue };
        let mut out = Vec::new();
        let err = write_perfetto(reader, &mut out).expect_err("a cut file is incomplete");
        let Error::Read { offset, exported, source } = &err else { panic!("{err}") };
        assert_eq!(Some(*offset), err.offset());
        assert_eq!(*offset, source.offset());
        assert!(*offset <= cut as u64, "cut {cut}: error at {offset}");
        let events: u64 = chunks.iter().filter(|(end, _)| *end <= *offset).map(|(_, n)| n).sum();
        assert_eq!(exported.events, events, "cut {cut}");
        assert!(!exported.complete);
        outputs.push(out);
        expected.push((cut, *offset));
    }
    assert!(outputs.len() > 100, "only {} cuts were past the header", outputs.len());
    for (result, (cut, offset)) in check_all(&outputs).iter().zip(expected) {
        assert_eq!(result["ok"], true, "cut {cut}: {:#}", result["errors"]);
        let process = result["tracks"].as_array().unwrap().iter().find(|t| t["kind"] == "process").unwrap();
        let summary = &process["slices"][0];
        assert_eq!(summary["name"], "trace summary", "cut {cut}");
        // The golden file's third chunk is thread 101's sequence number 2: once it was read, the
        // missing number 1 is a lost chunk.
        let mut args = json!({"incomplete": ["bool", true], "read_error_offset": ["uint", offset]});
        if chunks[2].0 <= offset {
            args["chunks_lost"] = json!(["uint", 1]);
        }
        if unmatched_end_read_at <= offset {
            args["unmatched_ends"] = json!(["uint", 1]);
        }
        assert_eq!(summary["args"], args, "cut {cut}");
    }
}

#[test]
fn a_corrupt_record_stops_the_export_at_its_offset_with_a_valid_trace_of_what_came_before() {
    let mut r = Reader::new(GOLDEN).unwrap();
    let second_chunk = {
        r.next_chunk().unwrap();
        r.next_chunk().unwrap().unwrap().offset
    };
    // The chunk block: 8 bytes of framing, 40 of extents, then records; meta is at 12 in each.
    let record = second_chunk + 8 + 40;
    let mut bad = GOLDEN.to_vec();
    bad[record as usize + 15] = 0xff; // reserved meta bits
    let (pf, r) = export(&bad);
    let err = r.unwrap_err();
    let Error::Read { offset, exported, .. } = &err else { panic!("{err}") };
    assert_eq!(*offset, record);
    assert_eq!((exported.chunks, exported.events), (2, 6), "the first chunk, and none of the second");
    let doc = check(&pf);
    let summary = slice(tracks(&doc, "process")[0], "trace summary");
    // The first chunk holds thread 102's end of a scope begun on thread 101: dropped, counted.
    let args = json!({"incomplete": ["bool", true], "read_error_offset": ["uint", record], "unmatched_ends": ["uint", 1]});
    assert_eq!(summary["args"], args);
}

#[test]
fn a_failing_output_is_a_write_error() {
    struct Broken;
    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::new(io::ErrorKind::BrokenPipe, "closed"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let err = write_perfetto(Reader::new(GOLDEN).unwrap(), Broken).unwrap_err();
    assert!(matches!(&err, Error::Write(e) if e.kind() == io::ErrorKind::BrokenPipe), "{err}");
    assert_eq!(err.offset(), None);
}

// ---- Speed ----

/// Converts a generated file of mixed events (complete with two arguments, instants, counters,
/// begin/end pairs, over 8 threads) and prints the rate, with reading alone and Chrome JSON for
/// comparison (best of three runs). `cargo test --release -p phosphor-export perfetto::tests::throughput -- --ignored
/// --nocapture`; `PHOSPHOR_EVENTS` sets the size (default 4 M).
#[test]
#[ignore = "a measurement; run in release by hand"]
fn throughput() {
    let n: u64 = std::env::var("PHOSPHOR_EVENTS").ok().and_then(|v| v.parse().ok()).unwrap_or(4_000_000);
    let cs = vec![
        callsite(16, "work", Phase::Complete, ["items", "ratio"]),
        callsite(17, "tick", Phase::Instant, ["n", ""]),
        callsite(18, "heap", Phase::Counter, ["value", ""]),
        callsite(19, "scope", Phase::Begin, ["", ""]),
        callsite(20, "scope", Phase::End, ["", ""]),
    ];
    use ArgType::*;
    let mut parts = vec![Part::Callsites(cs)];
    let per_chunk = 120u64;
    let mut ts = 1_000u64;
    let mut made = 0;
    while made < n {
        let mut records = Vec::new();
        for i in 0..per_chunk / 4 {
            ts += 37;
            records.extend(ev(ts - 30, 16, &[25], &[(U64, i), (F64, 0.5f64.to_bits())], &[], false));
            records.extend(plain(ts + 1, 17, &[(I64, i)]));
            records.extend(plain(ts + 2, 18, &[(I64, i * 4096)]));
            records.extend(plain(ts + 3, if i % 2 == 0 { 19 } else { 20 }, &[]));
        }
        made += per_chunk;
        parts.push(Part::Chunk((made / per_chunk % 8) as u32 + 1, records));
    }
    let bytes = file(parts, &[], &Trailer::default());
    // Best of three: the machine may be busy with other work.
    let time = |label: &str, f: &dyn Fn() -> u64| {
        let mut best = f64::INFINITY;
        let mut events = 0;
        for _ in 0..3 {
            let t = Instant::now();
            events = f();
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!("{label:<12} {events} events in {best:.3} s: {:.1} M events/s", events as f64 / best / 1e6);
    };
    time("read only", &|| {
        let mut r = Reader::new(&bytes[..]).unwrap();
        let mut k = 0;
        r.for_each_event(|_| k += 1).unwrap();
        k
    });
    time("chrome json", &|| {
        crate::chrome::write_chrome_json(Reader::new(&bytes[..]).unwrap(), io::sink()).unwrap().events
    });
    time("perfetto", &|| write_perfetto(Reader::new(&bytes[..]).unwrap(), io::sink()).unwrap().events);
    let mut pf = Vec::new();
    write_perfetto(Reader::new(&bytes[..]).unwrap(), &mut pf).unwrap();
    println!(
        "{} bytes in, {} bytes out ({:.1} bytes per event)",
        bytes.len(),
        pf.len(),
        pf.len() as f64 / n as f64
    );
}

#[test]
fn the_first_file_of_a_merged_export_is_the_single_file_export_byte_for_byte() {
    let planned = |bytes: &[u8]| AsyncPlan::from_reader(Reader::new(bytes).unwrap());
    let mut alone = Vec::new();
    write_perfetto_planned(Reader::new(GOLDEN_1_1).unwrap(), planned(GOLDEN_1_1), &mut alone).unwrap();
    let mut placed = Vec::new();
    let first = FilePlace::default();
    write_perfetto_placed(Reader::new(GOLDEN_1_1).unwrap(), Some(planned(GOLDEN_1_1)), first, &mut placed)
        .unwrap();
    assert!(alone == placed);
}

#[test]
fn two_files_merged_get_a_sequence_and_tracks_each_and_the_second_is_shifted() {
    let mut both = Vec::new();
    write_perfetto_placed(Reader::new(GOLDEN).unwrap(), None, FilePlace::default(), &mut both).unwrap();
    let second = FilePlace { index: 1, shift_ns: 1_000 };
    write_perfetto_placed(Reader::new(GOLDEN).unwrap(), None, second, &mut both).unwrap();
    let doc = check(&both);
    assert_eq!(doc["sequences"], json!([1, 2]));
    let processes = tracks(&doc, "process");
    assert_eq!(processes.len(), 2, "a process track per file, though both have pid 4242");
    assert_ne!(processes[0]["uuid"], processes[1]["uuid"]);
    // The same thread of each file: the second's slices 1,000 ns later, on a track of its own.
    let threads: Vec<&serde_json::Value> =
        tracks(&doc, "thread").into_iter().filter(|t| t["tid"] == 101).collect();
    assert_eq!(threads.len(), 2);
    let (a, b) = (slices(threads[0]), slices(threads[1]));
    assert!(!a.is_empty());
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!((&x.0, x.1 + 1_000, x.2), (&y.0, y.1, y.2));
    }
}

//! Tests of the Chrome JSON exporter on the v1 golden file and on small files built here.

use std::collections::BTreeSet;

use phosphor_format::file::{CallsiteInfo, Reader, Trailer, Writer};
use phosphor_format::{pack_static_str, ArgType, Meta, Phase, Record};
use serde_json::Value as Json;

use super::*;
use crate::test_files::{clock, header};

const GOLDEN: &[u8] = include_bytes!("../../phosphor-format/tests/data/golden-v1.phtrace");

fn export(bytes: &[u8]) -> (String, Result<ExportSummary, Error>) {
    let mut out = Vec::new();
    let r = write_chrome_json(Reader::new(bytes).unwrap(), &mut out);
    (String::from_utf8(out).unwrap(), r)
}

fn events(json: &str) -> Vec<Json> {
    let doc: Json = serde_json::from_str(json).unwrap_or_else(|e| panic!("invalid JSON ({e}):\n{json}"));
    doc["traceEvents"].as_array().expect("traceEvents is an array").clone()
}

fn callsite(id: u32, name: &str, phase: Phase, args: [&str; 2]) -> CallsiteInfo {
    CallsiteInfo {
        id,
        category: "test".into(),
        name: name.into(),
        phase,
        arg_names: args.map(String::from),
        file: "chrome_tests.rs".into(),
        line: 1,
        name_hash: 0,
        level: None,
        dynamic_name: false,
        flow: false,
    }
}

/// A file on a nanosecond clock (origin 0, so raw timestamps are the exported nanoseconds) with
/// one chunk per `(tid, records)`. Static string words are indices into `statics`.
fn file(callsites: &[CallsiteInfo], chunks: &[(u32, Vec<Record>)], statics: &[&'static str]) -> Vec<u8> {
    let header = header(clock(1.0));
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    w.write_callsites(callsites).unwrap();
    for (seq, (tid, records)) in chunks.iter().enumerate() {
        w.write_chunk(*tid, seq as u64, records, |addr, _| statics[addr as usize]).unwrap();
    }
    w.finish(&Trailer::default()).unwrap()
}

fn static_word(index: usize, s: &str) -> u64 {
    pack_static_str(index, s.len()).0
}

#[test]
fn the_golden_file_exports_to_the_committed_snapshot() {
    let (json, r) = export(GOLDEN);
    let summary = r.unwrap();
    assert_eq!((summary.chunks, summary.events, summary.threads, summary.complete), (3, 10, 2, true));
    insta::assert_snapshot!("golden_v1_chrome_json", json);
}

#[test]
fn every_event_has_the_fields_its_phase_requires() {
    let (json, _) = export(GOLDEN);
    let events = events(&json);
    let mut with_events = BTreeSet::new();
    let mut named = BTreeSet::new();
    for e in &events {
        for key in ["ph", "ts", "pid", "tid", "name"] {
            assert!(e.get(key).is_some(), "{e} has no {key}");
        }
        assert_eq!(e["pid"], 4242, "{e}");
        let ph = e["ph"].as_str().unwrap();
        assert!(e["ts"].is_number(), "{e}");
        match ph {
            "X" => assert!(e["dur"].as_f64().is_some_and(|d| d >= 0.0), "{e} has no duration"),
            "b" | "e" => {
                assert!(e["id"].is_string(), "{e} has no id");
                assert!(e["cat"].is_string(), "{e} has no cat");
            }
            "i" => assert_eq!(e["s"], "t", "{e}"),
            "C" => assert!(e["args"].as_object().is_some_and(|a| a.values().all(Json::is_number)), "{e}"),
            "M" => {
                assert!(e["args"]["name"].is_string(), "{e}");
                if e["name"] == "thread_name" {
                    named.insert(e["tid"].as_u64().unwrap());
                }
            }
            "B" | "E" => {}
            other => panic!("unexpected phase {other} in {e}"),
        }
        if ph != "M" {
            with_events.insert(e["tid"].as_u64().unwrap());
        }
    }
    assert_eq!(with_events, BTreeSet::from([101, 102]));
    assert!(with_events.is_subset(&named), "unnamed threads: {with_events:?} vs {named:?}");
    let phases: BTreeSet<&str> = events.iter().map(|e| e["ph"].as_str().unwrap()).collect();
    // The golden `scope` begins on thread 101 and ends on 102: the begin is a `B` never ended and
    // the end, which closes nothing on its thread, is dropped (as `phosphor stats` drops it).
    assert_eq!(phases, BTreeSet::from(["B", "C", "M", "X", "b", "e", "i"]));
}

#[test]
fn timestamps_are_exact_decimal_microseconds() {
    let cs =
        [callsite(16, "tick", Phase::Instant, ["", ""]), callsite(17, "work", Phase::Complete, ["", ""])];
    let records = vec![
        Record::new(1_234_567, 16, Meta::new(0, ArgType::None, ArgType::None), [0, 0]),
        Record::new(9_007_199_254_740_993, 17, Meta::new(1, ArgType::None, ArgType::None), [1_001, 0]),
        Record::new(5, 16, Meta::new(0, ArgType::None, ArgType::None), [0, 0]),
    ];
    let (json, r) = export(&file(&cs, &[(1, records)], &[]));
    r.unwrap();
    assert!(json.contains("\"ts\":1234.567,"), "{json}");
    // 2^53 + 1 ns: an f64 would round it; integer arithmetic does not. Alone in its nanoseconds,
    // a slice is written at its exact times (see `chrome_time`).
    assert!(json.contains("\"ts\":9007199254740.993,\"dur\":1.001,"), "{json}");
    assert!(json.contains("\"ts\":0.005,"), "{json}");
}

#[test]
fn a_clock_rate_json_cannot_hold_is_null_and_the_output_stays_valid_json() {
    for rate in [f64::INFINITY, f64::NAN, f64::NEG_INFINITY] {
        let mut w = Writer::new(Vec::new(), &header(clock(rate))).unwrap();
        w.write_callsites(&[callsite(16, "tick", Phase::Instant, ["", ""])]).unwrap();
        w.write_chunk(1, 0, &[Record::new(5, 16, Meta(0), [0; 2])], |_, _| "").unwrap();
        let bytes = w.finish(&Trailer::default()).unwrap();
        let (json, r) = export(&bytes);
        r.unwrap();
        let doc: Json = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{rate}: invalid JSON ({e})"));
        assert_eq!(doc["otherData"]["ns_per_tick"], Json::Null, "{rate}");
    }
}

#[test]
fn tsc_ticks_are_converted_with_the_header_rate_from_the_clock_origin() {
    // The golden clock: 0.5 ns per tick from origin tick 1000; its first event is at the origin
    // and its complete event starts 100 ticks later and lasts 50.
    let (json, _) = export(GOLDEN);
    assert!(json.contains("\"name\":\"instant_ints\",\"cat\":\"app\",\"ph\":\"i\",\"ts\":0.000,"), "{json}");
    assert!(json.contains("\"ph\":\"X\",\"ts\":0.050,\"dur\":0.025,"), "{json}");
}

#[test]
fn strings_are_escaped_so_that_they_round_trip_through_serde_json() {
    const NASTY: &str =
        "quote\" back\\ nl\n cr\r tab\t bell\x07 nul\0 esc\x1b del\x7f é 世界 🦀 \u{2028}\u{2029}";
    const NAME: &str = "name with \"quotes\"\n";
    let cs = [callsite(16, NAME, Phase::Instant, ["s\"1", "s\n2"])];
    let words = [static_word(0, NASTY), static_word(1, "")];
    let records = vec![Record::new(10, 16, Meta::new(0, ArgType::StaticStr, ArgType::StaticStr), words)];
    let (json, r) = export(&file(&cs, &[(1, records)], &[NASTY, ""]));
    r.unwrap();
    assert!(!json.contains('\u{2028}') && !json.contains('\u{7}'), "raw characters left: {json:?}");
    let e = events(&json).into_iter().find(|e| e["ph"] == "i").unwrap();
    assert_eq!(e["name"], NAME);
    assert_eq!(e["args"]["s\"1"], NASTY);
    assert_eq!(e["args"]["s\n2"], "");
}

#[test]
fn floats_that_json_cannot_hold_are_written_as_strings() {
    let cs = [callsite(16, "f", Phase::Instant, ["a", "b"])];
    let f = |ts, a: f64, b: f64| {
        Record::new(ts, 16, Meta::new(0, ArgType::F64, ArgType::F64), [a.to_bits(), b.to_bits()])
    };
    let records = vec![
        f(1, f64::NAN, f64::INFINITY),
        f(2, f64::NEG_INFINITY, -0.0),
        f(3, 1e-300, 0.1),
        f(4, f64::MAX, 2.5),
    ];
    let (json, r) = export(&file(&cs, &[(1, records)], &[]));
    r.unwrap();
    let args: Vec<(Json, Json)> = events(&json)
        .into_iter()
        .filter(|e| e["ph"] == "i")
        .map(|e| (e["args"]["a"].clone(), e["args"]["b"].clone()))
        .collect();
    assert_eq!(args[0], (Json::from("NaN"), Json::from("Infinity")));
    assert_eq!(args[1].0, Json::from("-Infinity"));
    assert_eq!(args[1].1.as_f64().map(f64::to_bits), Some((-0.0f64).to_bits()));
    assert_eq!((args[2].0.as_f64(), args[2].1.as_f64()), (Some(1e-300), Some(0.1)));
    assert_eq!((args[3].0.as_f64(), args[3].1.as_f64()), (Some(f64::MAX), Some(2.5)));
}

#[test]
fn a_thread_without_a_name_still_gets_a_thread_name_event() {
    let cs = [callsite(16, "tick", Phase::Instant, ["", ""])];
    let rec = Record::new(1, 16, Meta::new(0, ArgType::None, ArgType::None), [0, 0]);
    let (json, r) = export(&file(&cs, &[(3, vec![rec]), (9, vec![rec])], &[]));
    assert_eq!(r.unwrap().threads, 2);
    let names: Vec<(u64, String)> = events(&json)
        .into_iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| (e["tid"].as_u64().unwrap(), e["args"]["name"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(names, [(3, "thread 3".to_owned()), (9, "thread 9".to_owned())]);
}

#[test]
fn a_truncated_file_exports_its_complete_chunks_then_reports_where_reading_stopped() {
    // Where each chunk of the whole file ends, its events, and its ends (each merged into its
    // begin's `X` or, closing nothing, dropped).
    let mut chunks = Vec::new();
    let mut r = Reader::new(GOLDEN).unwrap();
    while let Some(c) = r.next_chunk().unwrap() {
        let ends = c.events().filter(|e| e.as_ref().unwrap().callsite.phase == Phase::End).count() as u64;
        chunks.push((c.end_offset(), c.events().count() as u64, ends));
    }
    let mut cuts_tested = 0;
    for cut in 0..GOLDEN.len() {
        let Ok(reader) = Reader::new(&GOLDEN[..cut]) else { continue };
        let mut out = Vec::new();
        let err = write_chrome_json(reader, &mut out).expect_err("a cut file is incomplete");
        let Error::Read { offset, exported, source } = &err else { panic!("{err}") };
        assert_eq!(Some(*offset), err.offset());
        assert_eq!(*offset, source.offset());
        assert!(*offset <= cut as u64, "cut {cut}: error at {offset}");
        let read = chunks.iter().filter(|(end, _, _)| *end <= *offset);
        let (expected, ends): (u64, u64) = read.fold((0, 0), |(n, e), c| (n + c.1, e + c.2));
        assert_eq!(exported.events, expected, "cut {cut}");
        assert!(!exported.complete);
        // The document is closed: it parses and holds exactly the exported events, but ends.
        let json = String::from_utf8(out).unwrap();
        let written = events(&json).iter().filter(|e| e["ph"] != "M").count() as u64;
        assert_eq!(written, expected - ends, "cut {cut}");
        cuts_tested += 1;
    }
    assert!(cuts_tested > 100, "only {cuts_tested} cuts were past the header");
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
    let err = write_chrome_json(Reader::new(GOLDEN).unwrap(), Broken).unwrap_err();
    assert!(matches!(&err, Error::Write(e) if e.kind() == io::ErrorKind::BrokenPipe), "{err}");
    assert_eq!(err.offset(), None);
}

#[test]
fn logs_are_named_by_their_formatted_message_and_dyn_names_by_argument_0() {
    let golden = include_bytes!("../../phosphor-format/tests/data/golden-v1.2.phtrace");
    let (json, r) = export(golden);
    r.unwrap();
    let evs = events(&json);
    let log = evs.iter().find(|e| e["cat"] == "net" && e["ph"] == "i").expect("the log");
    assert_eq!(log["name"], "user 42 from host-17.example took 12.2 ms (static-two)");
    assert_eq!(
        log["args"],
        serde_json::json!({"level": "warn", "p0": 42, "p1": "host-17.example", "p2": 12.25, "p3": "static-two"})
    );
    let named = evs.iter().find(|e| e["name"] == "static-one").expect("the dyn-named instant");
    assert_eq!(named["args"], serde_json::json!({"bytes": 4096}));
    let data = evs.iter().find(|e| e["name"] == "queue_depth").expect("the data value");
    assert_eq!((data["ph"].as_str(), &data["args"]), (Some("C"), &serde_json::json!({"value": 17})));
}

#[test]
fn polls_of_an_instrumented_future_carry_its_flow_and_its_end_closes_it() {
    // The 1.3 golden file: task 9's polls (flagged) on two threads; its async begin and end are
    // not flagged (written before futures' slices were), so the polls alone carry the flow.
    const GOLDEN_1_3: &[u8] = include_bytes!("../../phosphor-format/tests/data/golden-v1.3.phtrace");
    let (json, r) = export(GOLDEN_1_3);
    r.unwrap();
    let events = events(&json);
    let polls: Vec<&Json> = events.iter().filter(|e| e["ph"] == "X" && e["args"]["task"] == 9).collect();
    assert_eq!(polls.len(), 2);
    let flow = &polls[0]["bind_id"];
    assert!(flow.as_str().is_some_and(|f| f.starts_with("0x")), "{}", polls[0]);
    for p in &polls {
        assert_eq!(
            (&p["bind_id"], &p["flow_in"], &p["flow_out"]),
            (flow, &Json::Bool(true), &Json::Bool(true))
        );
    }
    let tids: BTreeSet<u64> = polls.iter().map(|p| p["tid"].as_u64().unwrap()).collect();
    assert_eq!(tids, BTreeSet::from([101, 102]));
    // No other event is in a flow: the async slices of `trace_async_begin!` (`request` 7, 9) start
    // none (`request` 7 once started a flow nothing continued).
    let others: Vec<&Json> = events.iter().filter(|e| e.get("bind_id").is_some_and(|b| b != flow)).collect();
    assert_eq!(others, Vec::<&Json>::new());
    assert!(events.iter().filter(|e| e["ph"] == "b").all(|e| e.get("bind_id").is_none()));
}

#[test]
fn a_futures_flagged_slice_starts_and_ends_its_flow_even_with_no_poll() {
    let mut begin = callsite(16, "fetch", Phase::AsyncBegin, ["", ""]);
    let mut end = callsite(17, "fetch", Phase::AsyncEnd, ["cancelled", ""]);
    (begin.flow, end.flow) = (true, true);
    let records = vec![
        Record::new(10, 16, Meta::new(1, ArgType::None, ArgType::None), [3, 0]),
        Record::new(20, 17, Meta::new(1, ArgType::None, ArgType::None), [3, 0]),
    ];
    let (json, r) = export(&file(&[begin, end], &[(1, records)], &[]));
    r.unwrap();
    let events = events(&json);
    let b = events.iter().find(|e| e["ph"] == "b").unwrap();
    let e = events.iter().find(|e| e["ph"] == "e").unwrap();
    assert_eq!((&b["flow_out"], &e["flow_in"]), (&Json::Bool(true), &Json::Bool(true)));
    assert!(b["bind_id"].is_string() && b["bind_id"] == e["bind_id"], "{b} {e}");
}

#[test]
fn a_lock_named_at_run_time_shows_its_name_with_the_phase_and_its_arguments() {
    let (json, r) = export(&crate::test_files::lock_trace_file());
    r.unwrap();
    let locks: Vec<(String, Json)> = events(&json)
        .into_iter()
        .filter(|e| e["cat"] == "sync")
        .map(|e| (e["name"].as_str().unwrap().to_owned(), e["args"].clone()))
        .collect();
    let table = serde_json::json!({"key": 9, "retry": true});
    assert_eq!(
        locks,
        [
            ("shard-1 (wait)".to_owned(), serde_json::json!({"key": 7})),
            ("shard-1 (held)".to_owned(), serde_json::json!({"key": 7})),
            ("table (wait)".to_owned(), table.clone()),
            ("table (held)".to_owned(), table),
        ],
        "the dyn lock's name is argument 0 (not shown as an argument), never its source text"
    );
}

/// What speedscope (1.25, `src/import/trace-event.ts`) builds of one thread's `B`, `E` and `X`
/// events: the number of frames at each path (`a/b/c`), and its warnings. Times are rebased on
/// the thread's first and `X` ends added in `f64`; `X` events sorted by `ts`, then longer first,
/// then in file order, and queued after the file's `B`s and `E`s; begins and ends each sorted by
/// `ts` (stable); at equal times an end goes first unless the next begin is the same frame; an
/// end is swapped with a later one of its time that matches the top of the stack.
fn speedscope(events: &[Json], tid: u64) -> (std::collections::BTreeMap<String, usize>, usize) {
    let key = |e: &Json| {
        format!("{} {}", e["name"].as_str().unwrap(), e.get("args").map_or(String::new(), Json::to_string))
    };
    let mine: Vec<&Json> = events
        .iter()
        .filter(|e| e["tid"] == tid && matches!(e["ph"].as_str(), Some("B" | "E" | "X")))
        .collect();
    let first = mine.iter().map(|e| e["ts"].as_f64().unwrap()).fold(f64::INFINITY, f64::min);
    let ts = |e: &Json| e["ts"].as_f64().unwrap() - first;
    let (mut begins, mut ends) = (Vec::new(), Vec::new());
    let mut xs = Vec::new();
    for e in &mine {
        match e["ph"].as_str() {
            Some("B") => begins.push((ts(e), key(e))),
            Some("E") => ends.push((ts(e), key(e))),
            _ => xs.push((ts(e), e["dur"].as_f64().unwrap(), key(e))),
        }
    }
    xs.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
    for (t, d, k) in xs {
        begins.push((t, k.clone()));
        ends.push((t + d, k));
    }
    begins.sort_by(|a, b| a.0.total_cmp(&b.0));
    ends.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut begins, mut ends) =
        (std::collections::VecDeque::from(begins), std::collections::VecDeque::from(ends));
    let (mut stack, mut paths, mut warnings) = (Vec::<String>::new(), std::collections::BTreeMap::new(), 0);
    while !begins.is_empty() || !ends.is_empty() {
        let take_begin = match (begins.front(), ends.front()) {
            (Some(b), Some(e)) => b.0 < e.0 || (b.0 == e.0 && b.1 == e.1),
            (b, _) => b.is_some(),
        };
        if take_begin {
            let (_, k) = begins.pop_front().unwrap();
            stack.push(k);
            let path: Vec<&str> = stack.iter().map(|k| k.split(' ').next().unwrap()).collect();
            *paths.entry(path.join("/")).or_insert(0) += 1;
            continue;
        }
        if let Some(top) = stack.last() {
            let t0 = ends[0].0;
            if let Some(i) = (1..ends.len()).take_while(|&i| ends[i].0 <= t0).find(|&i| &ends[i].1 == top) {
                ends.swap(0, i);
            }
        }
        let (_, k) = ends.pop_front().unwrap();
        match stack.last() {
            Some(top) if top == &k => {
                stack.pop();
            }
            _ => warnings += 1,
        }
    }
    (paths, warnings + stack.len())
}

/// A file of one thread (tid 1) of crafted `events`: callsites `ID` + 0 `outer`, 1 `parent`,
/// 2 `child`, 3 `leaf` (complete), 4 `open` (begin), 5 `close` (end).
fn crafted(events: &[Vec<Record>]) -> Vec<u8> {
    use phosphor_craft::{callsite, monotonic, ChunkStream, TraceWriter};
    let mut w = TraceWriter::new(Vec::new(), monotonic(), "t").unwrap();
    w.strings(&["craft", "", "chrome_tests.rs"]).unwrap();
    let names = w.strings(&["outer", "parent", "child", "leaf", "open", "close"]).unwrap();
    let phases =
        [Phase::Complete, Phase::Complete, Phase::Complete, Phase::Complete, Phase::Begin, Phase::End];
    w.callsites((0..6).map(|i| callsite(i + ID, phases[i as usize], names + i))).unwrap();
    let mut stream = ChunkStream::new(1);
    for e in events {
        stream.push(&mut w, e).unwrap();
    }
    stream.flush(&mut w).unwrap();
    w.finish(Trailer::default()).unwrap()
}

const ID: u32 = phosphor_format::FIRST_CALLSITE_ID;

/// Each crafted file's JSON, replayed as speedscope builds it, gives the tree `phosphor stats`
/// builds (the paths written by hand here, as the nesting engine builds them), with no warning.
/// Before the writer went through `Ordered`, each of these gave other paths: a begin/end pair
/// was opened before the complete event around it that starts in the same tick (speedscope
/// queues the file's `B`s before its `X`s), a zero-length scope at its parent's end was put after
/// the parent, and chains of equal scopes were written innermost first.
#[test]
fn speedscope_rebuilds_the_engines_tree_from_crafted_ties() {
    use phosphor_craft::records::{begin, complete, end};
    type Case = (&'static str, Vec<Vec<Record>>, Vec<(&'static str, usize)>);
    let cases: Vec<Case> = vec![
        (
            // A chain of three equal scopes, recorded innermost first (as guards drop), with a
            // zero-length leaf at its start and one at its end.
            "chain",
            vec![
                complete(10, ID + 3, 0).to_vec(),
                complete(30, ID + 3, 0).to_vec(),
                complete(10, ID + 2, 20).to_vec(),
                complete(10, ID + 1, 20).to_vec(),
                complete(10, ID, 20).to_vec(),
            ],
            vec![
                ("outer", 1),
                ("outer/parent", 1),
                ("outer/parent/child", 1),
                ("outer/parent/child/leaf", 2),
            ],
        ),
        (
            // A begin/end pair inside a complete event that starts and ends with it; a child in
            // the pair that starts with it; then a sibling of the same name touching it.
            "pair",
            vec![
                begin(0, ID + 4).to_vec(),
                complete(0, ID + 2, 5).to_vec(),
                complete(5, ID + 2, 5).to_vec(),
                end(10, ID + 5).to_vec(),
                complete(0, ID + 1, 10).to_vec(),
                complete(10, ID + 1, 10).to_vec(),
            ],
            vec![("parent", 2), ("parent/open", 1), ("parent/open/child", 2)],
        ),
        (
            // Zero-length children at a parent's start and end, nested zero-length at the end,
            // then a sibling starting at that end.
            "zero",
            vec![
                complete(0, ID + 3, 0).to_vec(),
                complete(4, ID + 3, 0).to_vec(),
                complete(4, ID + 2, 0).to_vec(),
                complete(0, ID + 1, 4).to_vec(),
                complete(4, ID + 1, 3).to_vec(),
            ],
            vec![("parent", 2), ("parent/child", 1), ("parent/child/leaf", 1), ("parent/leaf", 1)],
        ),
    ];
    for (name, events, want) in cases {
        let (json, r) = export(&crafted(&events));
        r.unwrap();
        let (paths, warnings) = speedscope(&self::events(&json), 1);
        let want: std::collections::BTreeMap<String, usize> =
            want.into_iter().map(|(p, n)| (p.to_owned(), n)).collect();
        assert_eq!((paths, warnings), (want, 0), "{name}:\n{json}");
    }
}

/// The rule holds at any depth and for many slices in one nanosecond: in a parent, a chain of
/// 300 equal zero-length scopes at one nanosecond (recorded innermost first, so each encloses the
/// one before), then one of 2,000 at the parent's end (4,001 points in that nanosecond).
#[test]
fn speedscope_rebuilds_deep_chains_and_crowds_of_zero_length_slices_in_one_nanosecond() {
    use phosphor_craft::records::complete;
    let mut events: Vec<Vec<Record>> = (0..300).map(|_| complete(5, ID + 2, 0).to_vec()).collect();
    events.extend((0..2_000).map(|_| complete(10, ID + 3, 0).to_vec()));
    events.push(complete(0, ID + 1, 10).to_vec());
    let (json, r) = export(&crafted(&events));
    r.unwrap();
    let (paths, warnings) = speedscope(&self::events(&json), 1);
    // Each path by its depth and last name, for short messages.
    let short = |p: &String| (p.matches('/').count(), p.rsplit('/').next().unwrap_or("").to_owned());
    let got: std::collections::BTreeSet<_> = paths.iter().map(|(p, n)| (short(p), *n)).collect();
    let mut want: std::collections::BTreeSet<_> = (1..=300).map(|d| ((d, "child".to_owned()), 1)).collect();
    want.insert(((0, "parent".to_owned()), 1));
    want.extend((1..=2_000).map(|d| ((d, "leaf".to_owned()), 1)));
    assert_eq!((got, warnings), (want, 0));
    assert!(paths.keys().all(|p| p == "parent" || p.starts_with("parent/")));
    // Rounded to the nanosecond, every time is the recorded one (the crafted clock's origin is
    // 1 µs after tick 0).
    for e in self::events(&json).iter().filter(|e| e["ph"] == "X") {
        let ts = e["ts"].as_f64().unwrap() * 1000.0 + 1000.0;
        let dur = e["dur"].as_f64().unwrap() * 1000.0;
        let want = match e["name"].as_str().unwrap() {
            "parent" => (0.0, 10.0),
            "child" => (5.0, 0.0),
            _ => (10.0, 0.0),
        };
        assert_eq!((ts.round(), dur.round()), want, "{e}");
    }
}

//! Tests of the Perfetto exporter's mapping of each kind of event: nesting, arguments, counters,
//! async slices and flows, thread names, redefined callsites, interning, time, the summary
//! instant, logs and `dyn` names. The file builders and the golden file, truncation and speed tests
//! are in `perfetto_tests.rs`; every output is decoded by `checker.rs`.

use phosphor_format::file::{DropCounts, Trailer};
use phosphor_format::{pack_static_str, ArgType, Phase, Record};
use serde_json::{json, Value as Json};

use super::checker::{check, named, run_checker, s, slice, slices, thread, tracks};
use super::tests::{callsite, chunk, ev, export, file, plain, Part, T0};
use super::*;

// ---- Mapping ----

#[test]
fn complete_events_recorded_after_their_children_nest_around_them() {
    let cs = vec![
        callsite(16, "child", Phase::Complete, ["", ""]),
        callsite(17, "parent", Phase::Complete, ["", ""]),
        callsite(18, "scope", Phase::Begin, ["", ""]),
        callsite(19, "scope", Phase::End, ["", ""]),
        callsite(20, "m", Phase::LockWait, ["", ""]),
        callsite(21, "m", Phase::LockHeld, ["", ""]),
        callsite(22, "tick", Phase::Instant, ["", ""]),
    ];
    let complete = |start, dur, id| ev(start, id, &[dur], &[], &[], false);
    // As recorded: each complete event when it ends.
    let events = vec![
        complete(10, 10, 16),  // child [10, 20]
        plain(25, 22, &[]),    // tick
        complete(30, 10, 16),  // child [30, 40]
        complete(5, 45, 17),   // parent [5, 50]
        plain(60, 18, &[]),    // scope begins
        complete(70, 10, 16),  // child [70, 80] inside the scope
        plain(90, 19, &[]),    // scope ends
        complete(100, 0, 16),  // a zero-length child at 100
        complete(95, 10, 20),  // wait [95, 105]
        complete(120, 10, 16), // child [120, 130] while the lock is held
        complete(105, 40, 21), // held [105, 145]
    ];
    let (pf, r) = export(&file(vec![Part::Callsites(cs), chunk(3, events)], &[], &Trailer::default()));
    assert_eq!(r.unwrap().events, 11);
    let doc = check(&pf);
    let t = |ns| T0 + ns;
    assert_eq!(
        slices(thread(&doc, 3)),
        [
            s("parent", t(5), Some(45), 0),
            s("child", t(10), Some(10), 1),
            s("tick", t(25), Some(0), 1),
            s("child", t(30), Some(10), 1),
            s("scope", t(60), Some(30), 0),
            s("child", t(70), Some(10), 1),
            s("m (wait)", t(95), Some(10), 0),
            s("child", t(100), Some(0), 1),
            s("m (held)", t(105), Some(40), 0),
            s("child", t(120), Some(10), 1),
        ]
    );
    assert_eq!(thread(&doc, 3)["unmatched_ends"], json!([]));
}

#[test]
fn arguments_of_every_type_become_typed_debug_annotations() {
    let cs = vec![
        callsite(16, "ints", Phase::Instant, ["i", "u"]),
        callsite(17, "floats", Phase::Instant, ["a", "b"]),
        callsite(18, "strings", Phase::Log, ["static", "dynamic"]),
        callsite(19, "misc", Phase::Begin, ["", ""]),
        callsite(20, "misc", Phase::End, ["ok", ""]),
    ];
    use ArgType::*;
    let f = |v: f64| v.to_bits();
    let long = "ü".repeat(100);
    let dynamic = "dyn ✓ \"quoted\"\n";
    let events = vec![
        plain(1, 16, &[(I64, i64::MIN as u64), (U64, u64::MAX)]),
        plain(2, 16, &[(I64, (-1i64) as u64), (U64, 0)]),
        plain(3, 17, &[(F64, f(f64::NAN)), (F64, f(f64::NEG_INFINITY))]),
        plain(4, 17, &[(F64, f(-0.0)), (F64, f(1e-300))]),
        ev(
            5,
            18,
            &[],
            &[(StaticStr, pack_static_str(0, 10).0), (DynStr, dynamic.len() as u64)],
            &[dynamic],
            false,
        ),
        // A string cut when recorded: the event says so.
        ev(6, 18, &[], &[(StaticStr, pack_static_str(1, 0).0), (DynStr, long.len() as u64)], &[&long], true),
        plain(7, 19, &[(Pointer, 0xffff_8000_0000_1234), (Bool, 0)]),
        plain(8, 20, &[(Bool, 1)]),
    ];
    let (pf, r) =
        export(&file(vec![Part::Callsites(cs), chunk(1, events)], &["static-str", ""], &Trailer::default()));
    r.unwrap();
    let doc = check(&pf);
    let t = thread(&doc, 1);
    let args: Vec<&Json> = t["slices"].as_array().unwrap().iter().map(|s| &s["args"]).collect();
    assert_eq!(*args[0], json!({"i": ["int", i64::MIN], "u": ["uint", u64::MAX]}));
    assert_eq!(*args[1], json!({"i": ["int", -1], "u": ["uint", 0]}));
    assert_eq!(*args[2], json!({"a": ["double", "NaN"], "b": ["double", "-Infinity"]}));
    assert_eq!(args[3]["a"][1].as_f64().map(f64::to_bits), Some((-0.0f64).to_bits()));
    assert_eq!(args[3]["b"], json!(["double", 1e-300]));
    assert_eq!(*args[4], json!({"static": ["string", "static-str"], "dynamic": ["string", dynamic]}));
    assert_eq!(
        *args[5],
        json!({"static": ["string", ""], "dynamic": ["string", long], "truncated": ["bool", true]})
    );
    // Unnamed arguments are arg0 and arg1; an end's arguments join its slice.
    assert_eq!(
        *args[6],
        json!({"arg0": ["pointer", 0xffff_8000_0000_1234u64], "arg1": ["bool", false], "ok": ["bool", true]})
    );
    assert_eq!(slices(t)[4], s("strings", T0 + 5, Some(0), 0));
    assert_eq!(t["slices"][4]["type"], "instant");
}

#[test]
fn counters_get_one_track_per_name_under_the_process() {
    use ArgType::*;
    let cs = vec![
        callsite(16, "heap", Phase::Counter, ["value", ""]),
        callsite(17, "load", Phase::Counter, ["value", ""]),
        callsite(18, "big", Phase::Counter, ["value", ""]),
        callsite(19, "flag", Phase::Counter, ["value", ""]),
        callsite(20, "label", Phase::Counter, ["value", ""]),
        callsite(21, "pair", Phase::Counter, ["rx", "tx"]),
    ];
    let chunks = vec![
        Part::Callsites(cs),
        chunk(
            1,
            vec![
                plain(10, 16, &[(I64, 100)]),
                plain(11, 17, &[(F64, 0.25f64.to_bits())]),
                plain(12, 18, &[(U64, u64::MAX)]),
                plain(13, 19, &[(Bool, 1)]),
                plain(14, 20, &[(StaticStr, pack_static_str(0, 4).0)]),
                plain(15, 21, &[(U64, 3), (I64, (-4i64) as u64)]),
            ],
        ),
        // The same counter from another thread goes on the same track.
        chunk(2, vec![plain(20, 16, &[(I64, (-7i64) as u64)]), plain(21, 17, &[(F64, 1.5f64.to_bits())])]),
    ];
    let (pf, r) = export(&file(chunks, &["idle"], &Trailer::default()));
    assert_eq!(r.unwrap().threads, 2);
    let doc = check(&pf);
    let process = &tracks(&doc, "process")[0]["uuid"];
    let counter = |name: &str| {
        let t = named(&doc, "counter", name);
        assert_eq!(t.len(), 1, "{name}");
        assert_eq!(&t[0]["parent"], process);
        assert_eq!(t[0]["categories"], json!(["test"]));
        t[0]["counter"].clone()
    };
    assert_eq!(counter("heap"), json!([[T0 + 10, 100], [T0 + 20, -7]]));
    assert_eq!(counter("load"), json!([[T0 + 11, 0.25], [T0 + 21, 1.5]]));
    // Too big for counter_value (int64): a double.
    assert_eq!(counter("big"), json!([[T0 + 12, u64::MAX as f64]]));
    assert_eq!(counter("flag"), json!([[T0 + 13, 1]]));
    assert_eq!(counter("pair.rx"), json!([[T0 + 15, 3]]));
    assert_eq!(counter("pair.tx"), json!([[T0 + 15, -4]]));
    assert_eq!(tracks(&doc, "counter").len(), 6);
    // A value that is not a number is kept as an instant.
    let label = slice(thread(&doc, 1), "label");
    assert_eq!((&label["ts"], &label["args"]), (&json!(T0 + 14), &json!({"value": ["string", "idle"]})));
}

#[test]
fn async_slices_get_a_track_per_open_key_even_when_the_end_comes_first_in_the_file() {
    let cs = vec![
        callsite(16, "req", Phase::AsyncBegin, ["", ""]),
        callsite(17, "req", Phase::AsyncEnd, ["", ""]),
        callsite(18, "other", Phase::AsyncBegin, ["", ""]),
        callsite(19, "other", Phase::AsyncEnd, ["", ""]),
    ];
    let a = |ts, id, cs| ev(ts, cs, &[id], &[], &[], false);
    let chunks = vec![
        Part::Callsites(cs),
        // Thread 2's chunk holds the end of request 1 and is written before the begin's chunk.
        chunk(2, vec![a(50, 1, 17), a(60, 2, 16), a(70, 2, 17)]),
        chunk(
            1,
            vec![
                a(10, 1, 16),
                // Request 3 begins twice before it ends (the model's rule: the second gives the
                // first up, never ended, and pairs with the first end; the second end is never
                // begun, alone on a track of its own).
                a(20, 3, 16),
                a(25, 3, 16),
                a(30, 3, 17),
                a(35, 3, 17),
                // Another name with the same id: another track.
                a(40, 1, 18),
                a(45, 1, 19),
                // Request 2 again, after it ended.
                a(80, 2, 16),
                a(90, 2, 17),
            ],
        ),
    ];
    let (pf, r) = export(&file(chunks, &[], &Trailer::default()));
    r.unwrap();
    let doc = check(&pf);
    let process = &tracks(&doc, "process")[0]["uuid"];
    let reqs = named(&doc, "track", "req");
    assert!(reqs.iter().all(|t| &t["parent"] == process));
    let mut got: Vec<_> = reqs.iter().map(|t| slices(t)).collect();
    got.sort();
    assert_eq!(
        got,
        [
            vec![],
            vec![s("req", T0 + 10, Some(40), 0)],
            vec![s("req", T0 + 20, None, 0)],
            vec![
                s("req", T0 + 25, Some(5), 0),
                // Request 2 again, after it ended: on a lane free since 30 (lanes are reused).
                s("req", T0 + 80, Some(10), 0)
            ],
            vec![s("req", T0 + 60, Some(10), 0)],
        ]
    );
    let other = named(&doc, "track", "other");
    assert_eq!(slices(other[0]), [s("other", T0 + 40, Some(5), 0)]);
    assert_eq!(slice(other[0], "other")["args"], json!({"async_id": ["uint", 1]}));
}

#[test]
fn polls_of_an_instrumented_future_are_linked_to_its_async_slice_by_one_flow() {
    let mut poll = callsite(18, "fetch", Phase::Complete, ["task", ""]);
    let mut begin = callsite(16, "fetch", Phase::AsyncBegin, ["", ""]);
    let mut end = callsite(17, "fetch", Phase::AsyncEnd, ["cancelled", ""]);
    (poll.flow, begin.flow, end.flow) = (true, true, true);
    let cs = vec![begin, end, poll];
    let a = |ts, id, cs| ev(ts, cs, &[id], &[], &[], false);
    let p = |ts, dur, task| ev(ts, 18, &[dur], &[(ArgType::U64, task)], &[], false);
    let chunks = vec![
        Part::Callsites(cs),
        // Task 5 is polled on thread 1, then on thread 2; task 6 on thread 2 only.
        chunk(1, vec![a(10, 5, 16), p(20, 5, 5), a(22, 6, 16)]),
        chunk(2, vec![p(30, 4, 6), p(40, 5, 5), a(50, 5, 17), p(60, 3, 6), a(70, 6, 17)]),
    ];
    let (pf, r) = export(&file(chunks, &[], &Trailer::default()));
    r.unwrap();
    let doc = check(&pf);
    let flows_of = |slice: &Json| slice["flows"].as_array().cloned().unwrap_or_default();
    let tracks = named(&doc, "track", "fetch");
    assert_eq!(tracks.len(), 2, "a lane per task open at once");
    let mut by_task = std::collections::BTreeMap::new();
    for t in &tracks {
        let [slice] = t["slices"].as_array().unwrap().as_slice() else { panic!("one slice: {t:#}") };
        let id = slice["args"]["async_id"][1].as_u64().unwrap();
        // The future's slice starts its flow at its begin and terminates it at its end.
        let flows = flows_of(slice);
        assert_eq!(flows.len(), 1, "the async slice starts one flow: {slice:#}");
        assert_eq!(slice["terminating_flows"], json!([flows[0].clone()]), "and its end ends it");
        by_task.insert(id, flows[0].clone());
    }
    assert_ne!(by_task[&5], by_task[&6], "each task has its own flow");
    // Every poll slice carries its task's flow, on the thread that ran it.
    let polls = |tid| -> Vec<(u64, Json)> {
        thread(&doc, tid)["slices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["args"]["task"][1].as_u64().unwrap(), flows_of(s)[0].clone()))
            .collect()
    };
    assert_eq!(polls(1), [(5, by_task[&5].clone())]);
    assert_eq!(polls(2), [(6, by_task[&6].clone()), (5, by_task[&5].clone()), (6, by_task[&6].clone())]);
    assert_eq!(
        slices(thread(&doc, 2)),
        [s("fetch", T0 + 30, Some(4), 0), s("fetch", T0 + 40, Some(5), 0), s("fetch", T0 + 60, Some(3), 0)]
    );
}

#[test]
fn async_keys_are_forgotten_once_their_slices_close() {
    let cs = vec![
        callsite(16, "req", Phase::AsyncBegin, ["", ""]),
        callsite(17, "req", Phase::AsyncEnd, ["", ""]),
    ];
    let events: Vec<Vec<Record>> = (0..500u64)
        .flat_map(|i| [ev(i * 10, 16, &[i], &[], &[], false), ev(i * 10 + 5, 17, &[i], &[], &[], false)])
        .collect();
    let open_one = ev(9_000, 16, &[9_999], &[], &[], false);
    let bytes =
        file(vec![Part::Callsites(cs), chunk(1, events), chunk(1, vec![open_one])], &[], &Trailer::default());
    let reader = Reader::new(&bytes[..]).unwrap();
    let mut out = Vec::new();
    let mut x = Exporter::new(&reader, &mut out, None, super::FilePlace::default());
    assert_eq!(x.run(reader).unwrap().events, 1001);
    assert_eq!(x.lanes.open_slices(), 1, "only the slice still open is remembered");
    assert_eq!(x.lanes.made, 1, "501 slices one after another share one lane");
    assert_eq!(x.threads.len(), 1);
    // "req" and "test", and the summary's "trace summary" and "phosphor".
    assert_eq!(x.interner.interned(INTERNED_EVENT_NAMES) + x.interner.interned(INTERNED_EVENT_CATEGORIES), 4);
}

#[test]
fn a_thread_named_only_after_its_chunks_gets_its_name() {
    let cs = vec![callsite(16, "tick", Phase::Instant, ["", ""])];
    let tick = |ts| plain(ts, 16, &[]);
    let parts = vec![
        Part::Callsites(cs),
        Part::Threads(vec![(1, "early")]),
        chunk(1, vec![tick(1)]),
        chunk(2, vec![tick(2)]),
        chunk(3, vec![tick(3)]),
        // Names for a thread seen before, a rename, and a thread with no events.
        Part::Threads(vec![(2, "late"), (1, "renamed"), (4, "idle")]),
    ];
    let (pf, r) = export(&file(parts, &[], &Trailer::default()));
    assert_eq!(r.unwrap().threads, 3);
    let doc = check(&pf);
    let names: Vec<(u64, Json, u64)> = tracks(&doc, "thread")
        .iter()
        .map(|t| (t["tid"].as_u64().unwrap(), t["name"].clone(), t["descriptors"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        names,
        [(1, json!("renamed"), 2), (2, json!("late"), 2), (3, Json::Null, 1)],
        "a thread's track is described when first seen and again when a threads block names it"
    );
    let dump = run_checker(&["--dump", "-"], &pf);
    assert!(dump.contains("track_descriptor { uuid: 34 thread { pid: 7 tid: 2 } }"), "{dump}");
    assert!(
        dump.contains("track_descriptor { uuid: 34 thread { pid: 7 tid: 2 thread_name: \"late\" } }"),
        "{dump}"
    );
}

#[test]
fn a_redefined_callsite_keeps_each_events_own_name() {
    let parts = vec![
        Part::Callsites(vec![callsite(16, "first", Phase::Instant, ["a", ""])]),
        chunk(1, vec![plain(1, 16, &[(ArgType::I64, 1)])]),
        Part::Callsites(vec![callsite(16, "second", Phase::Instant, ["b", ""])]),
        chunk(1, vec![plain(2, 16, &[(ArgType::I64, 2)])]),
        Part::Callsites(vec![callsite(17, "unrelated", Phase::Instant, ["", ""])]),
        chunk(1, vec![plain(3, 16, &[(ArgType::I64, 3)])]),
    ];
    let (pf, r) = export(&file(parts, &[], &Trailer::default()));
    r.unwrap();
    let doc = check(&pf);
    let t = thread(&doc, 1);
    let got: Vec<(&Json, &Json)> =
        t["slices"].as_array().unwrap().iter().map(|s| (&s["name"], &s["args"])).collect();
    assert_eq!(
        got,
        [
            (&json!("first"), &json!({"a": ["int", 1]})),
            (&json!("second"), &json!({"b": ["int", 2]})),
            (&json!("second"), &json!({"b": ["int", 3]})),
        ]
    );
}

#[test]
fn callsites_with_huge_ids_resolve_and_redefine_like_the_others() {
    let far = 4_000_000_000;
    let parts = vec![
        Part::Callsites(vec![
            callsite(far, "far", Phase::Instant, ["", ""]),
            callsite(16, "near", Phase::Instant, ["", ""]),
        ]),
        chunk(1, vec![plain(1, far, &[]), plain(2, 16, &[]), plain(3, far, &[])]),
        Part::Callsites(vec![callsite(far, "farther", Phase::Instant, ["", ""])]),
        chunk(1, vec![plain(4, far, &[]), plain(5, 16, &[])]),
    ];
    let (pf, r) = export(&file(parts, &[], &Trailer::default()));
    r.unwrap();
    let doc = check(&pf);
    let names: Vec<String> = slices(thread(&doc, 1)).into_iter().map(|s| s.0).collect();
    assert_eq!(names, ["far", "near", "far", "farther", "near"]);
}

#[test]
fn names_are_interned_once_in_or_before_the_first_packet_that_uses_them() {
    let cs = vec![
        callsite(16, "work", Phase::Complete, ["n", ""]),
        callsite(17, "work", Phase::Begin, ["n", ""]),
        callsite(18, "tick", Phase::Instant, ["n", ""]),
    ];
    let events = (0..20).map(|i| {
        ev(i * 10, 16 + (i % 3) as u32, &[1][..(i % 3 == 0) as usize], &[(ArgType::I64, i)], &[], false)
    });
    let (pf, r) =
        export(&file(vec![Part::Callsites(cs), chunk(1, events.collect())], &[], &Trailer::default()));
    r.unwrap();
    let dump = run_checker(&["--dump", "-"], &pf);
    // One definition per distinct string, in the packet of its first use or an earlier one
    // (the slices' names are interned as they are read, and the slices are written once their
    // tree is known: here every name goes into the first packet written, and the summary's
    // into its own); none refer to a missing iid (the checker would have failed).
    for (entry, count) in [
        ("event_names { iid: 1 name: \"work\" }", 1),
        ("event_names { iid: 2 name: \"tick\" }", 1),
        ("event_categories { iid: 1 name: \"test\" }", 1),
        ("debug_annotation_names { iid: 1 name: \"n\" }", 1),
        ("event_names {", 3), // work, tick, and the summary's name
        ("interned_data", 1 + 1),
    ] {
        assert_eq!(dump.matches(entry).count(), count, "{entry} in\n{dump}");
    }
    let first_event = dump.lines().find(|l| l.contains("track_event")).unwrap();
    assert!(first_event.contains("name: \"work\""), "{first_event}");
    assert!(check(&pf)["ok"] == true);
}

#[test]
fn timestamps_are_absolute_monotonic_nanoseconds_exactly() {
    let cs =
        vec![callsite(16, "tick", Phase::Instant, ["", ""]), callsite(17, "work", Phase::Complete, ["", ""])];
    // 2^53 + 1 ns: an f64 would round it; the nanosecond clock's integer path does not.
    let events = vec![plain(9_007_199_254_740_993, 16, &[]), ev(1, 17, &[1_001], &[], &[], false)];
    let (pf, r) = export(&file(vec![Part::Callsites(cs), chunk(1, events)], &[], &Trailer::default()));
    r.unwrap();
    let doc = check(&pf);
    assert_eq!(
        slices(thread(&doc, 1)),
        [s("work", T0 + 1, Some(1_001), 0), s("tick", T0 + 9_007_199_254_740_993, Some(0), 0)]
    );
    assert_eq!(doc["clock"]["snapshot"]["BUILTIN_CLOCK_REALTIME"], 1_600_000_000_000_000_000u64);
}

#[test]
fn the_summary_instant_reports_every_drop_reason_that_lost_events() {
    let cs = vec![callsite(16, "tick", Phase::Instant, ["", ""])];
    let trailer = Trailer {
        recorded: 1,
        dropped: DropCounts {
            no_chunk: 1,
            stopping: 2,
            reentrant: 3,
            thread_exited: 4,
            ..DropCounts::default()
        },
        ..Trailer::default()
    };
    let (pf, r) = export(&file(vec![Part::Callsites(cs), chunk(1, vec![plain(5, 16, &[])])], &[], &trailer));
    r.unwrap();
    let doc = check(&pf);
    let summary = slice(tracks(&doc, "process")[0], "trace summary");
    assert_eq!(summary["ts"], T0 + 5);
    assert_eq!(
        summary["args"],
        json!({
            "events_recorded": ["uint", 1], "events_dropped": ["uint", 10],
            "dropped.no_chunk": ["uint", 1], "dropped.stopping": ["uint", 2],
            "dropped.reentrant": ["uint", 3], "dropped.thread_exited": ["uint", 4],
        })
    );
}

// ---- Logs and names given at run time ----

const GOLDEN_1_2: &[u8] = include_bytes!("../../../phosphor-format/tests/data/golden-v1.2.phtrace");

#[test]
fn logs_show_their_formatted_message_data_is_a_counter_and_dyn_names_come_from_argument_0() {
    let (pf, r) = export(GOLDEN_1_2);
    r.unwrap();
    let doc = check(&pf);
    let main = thread(&doc, 101);
    let log = slice(main, "user 42 from host-17.example took 12.2 ms (static-two)");
    assert_eq!(log["category"], "net");
    assert_eq!(
        log["args"],
        json!({
            "level": ["string", "warn"], "p0": ["uint", 42], "p1": ["string", "host-17.example"],
            "p2": ["double", 12.25], "p3": ["string", "static-two"],
        })
    );
    let named_slice = slice(main, "static-one");
    assert_eq!(named_slice["args"], json!({"bytes": ["uint", 4096]}), "argument 0 is the name, not an arg");
    let depth = named(&doc, "counter", "queue_depth");
    assert_eq!(depth.len(), 1);
    assert_eq!(depth[0]["counter"].as_array().unwrap().len(), 1);
    assert_eq!(depth[0]["counter"][0][1], 17);
}

#[test]
fn a_lock_named_at_run_time_shows_its_name_with_the_phase_and_its_arguments() {
    let (pf, r) = export(&crate::test_files::lock_trace_file());
    r.unwrap();
    let doc = check(&pf);
    let threads = tracks(&doc, "thread");
    assert_eq!(threads.len(), 1);
    let names: Vec<String> = slices(threads[0]).into_iter().map(|(name, ..)| name).collect();
    assert_eq!(names, ["shard-1 (wait)", "shard-1 (held)", "table (wait)", "table (held)"]);
    for name in ["shard-1 (wait)", "shard-1 (held)"] {
        let lock = slice(threads[0], name);
        assert_eq!(lock["args"], json!({"key": ["uint", 7]}), "argument 0 is the name, not an arg");
        assert_eq!(lock["category"], "sync");
    }
    let table = slice(threads[0], "table (held)");
    assert_eq!(table["args"], json!({"key": ["uint", 9], "retry": ["bool", true]}));
}

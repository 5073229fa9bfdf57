//! What comes out of a trace: names, categories, phases, arguments of every type, threads,
//! timestamps and durations, for every macro.

use std::collections::HashMap;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use phosphor::{
    current_thread_id, fnv1a64, set_thread_name, trace_async_begin, trace_async_end, trace_begin,
    trace_complete, trace_counter, trace_end, trace_instant, trace_lock_guard, trace_scope, ArgValue,
    BufferMode, Phase, Static, TraceConfig,
};

use crate::support::{events, started, stop_and_take};

fn fixed(bytes: usize) -> TraceConfig {
    TraceConfig::new(BufferMode::Fixed, bytes)
}

#[test]
fn arguments_of_every_type_come_back_with_their_names_and_values() {
    let log = started(fixed(1 << 16));
    let x = 7u8;
    let p: *const u8 = &x;
    let mut y = 9u32;
    let q: *mut u32 = &mut y;
    let owned = String::from("owned ünïcode string");
    let borrowed = String::from("borrowed");
    trace_instant!(log: &log, "args", "ints", "i" => -42i64, "u" => u64::MAX);
    trace_instant!(log: &log, "args", "small_ints", "i8" => -3i8, "u16" => 65_535u16);
    trace_instant!(log: &log, "args", "float_bool", "f" => -2.5f64, "b" => true);
    trace_instant!(log: &log, "args", "f32_false", "f" => 0.25f32, "b" => false);
    trace_instant!(log: &log, "args", "static_ptr", "s" => Static("a static string"), "p" => p);
    trace_instant!(log: &log, "args", "mut_ptr", "p" => q);
    trace_instant!(log: &log, "args", "dyn", "d" => borrowed.as_str(), "o" => owned.clone());
    trace_instant!(log: &log, "args", "dyn_ref", "o" => &owned);
    trace_instant!(log: &log, "args", "none");
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    let names: Vec<&str> = ev.iter().map(|e| e.callsite.name).collect();
    assert_eq!(
        names,
        ["ints", "small_ints", "float_bool", "f32_false", "static_ptr", "mut_ptr", "dyn", "dyn_ref", "none"]
    );
    let me = current_thread_id();
    for e in &ev {
        assert_eq!(e.callsite.category, "args");
        assert_eq!(e.phase(), Phase::Instant);
        assert_eq!(e.tid, me, "{} was recorded on this thread", e.callsite.name);
        assert_eq!(e.duration, None);
        assert_eq!(e.async_id, None);
        assert!(!e.truncated);
    }
    assert_eq!(ev[0].arg("i"), Some(ArgValue::I64(-42)));
    assert_eq!(ev[0].arg("u"), Some(ArgValue::U64(u64::MAX)));
    assert_eq!(ev[1].arg("i8"), Some(ArgValue::I64(-3)));
    assert_eq!(ev[1].arg("u16"), Some(ArgValue::U64(65_535)));
    assert_eq!(ev[2].arg("f"), Some(ArgValue::F64(-2.5)));
    assert_eq!(ev[2].arg("b"), Some(ArgValue::Bool(true)));
    assert_eq!(ev[3].arg("f"), Some(ArgValue::F64(0.25)));
    assert_eq!(ev[3].arg("b"), Some(ArgValue::Bool(false)));
    assert_eq!(ev[4].arg("s"), Some(ArgValue::Str("a static string")));
    assert_eq!(ev[4].arg("p"), Some(ArgValue::Pointer(p as usize as u64)));
    assert_eq!(ev[5].arg("p"), Some(ArgValue::Pointer(q as usize as u64)));
    assert_eq!(ev[6].arg("d"), Some(ArgValue::Str("borrowed")));
    assert_eq!(ev[6].arg("o"), Some(ArgValue::Str("owned ünïcode string")));
    assert_eq!(ev[7].arg("o"), Some(ArgValue::Str(owned.as_str())));
    assert_eq!(ev[8].args, [None, None]);
    // Arguments keep their declared positions and names.
    assert_eq!(ev[0].args[0], Some(("i", ArgValue::I64(-42))));
    assert_eq!(ev[0].args[1], Some(("u", ArgValue::U64(u64::MAX))));
    assert_eq!(ev[0].arg("missing"), None);
    assert_eq!(trace.stats().recorded, ev.len() as u64);
    assert_eq!(trace.stats().dropped.total(), 0);
}

#[test]
fn callsite_metadata_names_the_source_line_and_hashes_the_name() {
    let log = started(fixed(1 << 16));
    let line = line!() + 1;
    trace_instant!(log: &log, "meta", "where_am_i", "k" => 1u8);
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    assert_eq!(ev.len(), 1);
    let cs = ev[0].callsite;
    assert_eq!(cs.line, line);
    assert!(cs.file.ends_with("events.rs"), "file is {}", cs.file);
    assert_eq!(cs.name_hash, fnv1a64(b"where_am_i"));
    assert_eq!(cs.arg_names, ["k", ""]);
    assert_eq!(trace.callsite(ev[0].id), Some(cs));
    assert!(trace.callsites().any(|(id, m)| id == ev[0].id && m == cs));
}

#[test]
fn begin_and_end_bracket_a_slice_in_recording_order_with_rising_timestamps() {
    let log = started(fixed(1 << 16));
    trace_begin!(log: &log, "slice", "outer", "depth" => 0u32);
    trace_begin!(log: &log, "slice", "inner");
    trace_instant!(log: &log, "slice", "mark");
    trace_end!(log: &log, "slice", "inner");
    trace_end!(log: &log, "slice", "outer", "result" => -1i32);
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    let got: Vec<(&str, Phase)> = ev.iter().map(|e| (e.callsite.name, e.phase())).collect();
    assert_eq!(
        got,
        [
            ("outer", Phase::Begin),
            ("inner", Phase::Begin),
            ("mark", Phase::Instant),
            ("inner", Phase::End),
            ("outer", Phase::End)
        ]
    );
    assert!(ev.windows(2).all(|w| w[0].ts <= w[1].ts), "timestamps go backwards: {ev:?}");
    assert_eq!(ev[0].arg("depth"), Some(ArgValue::U64(0)));
    assert_eq!(ev[4].arg("result"), Some(ArgValue::I64(-1)));
    assert!(ev.iter().all(|e| e.duration.is_none()));
}

#[test]
fn a_complete_event_keeps_the_given_start_and_duration() {
    let log = started(fixed(1 << 16));
    let start = log.now();
    let d = Duration::from_micros(1500);
    trace_complete!(log: &log, "work", "batch", start, d, "items" => 12u32, "ok" => true);
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    assert_eq!(ev.len(), 1);
    let e = &ev[0];
    assert_eq!(e.phase(), Phase::Complete);
    assert_eq!(e.ts, start);
    let ticks = e.duration.expect("a complete event has a duration");
    assert_eq!(ticks, log.duration_to_ticks(d));
    let ns = trace.clock().ticks_to_ns(ticks) as f64;
    assert!((ns - 1_500_000.0).abs() < 15_000.0, "1.5 ms came back as {ns} ns");
    assert_eq!(e.arg("items"), Some(ArgValue::U64(12)));
    assert_eq!(e.arg("ok"), Some(ArgValue::Bool(true)));
}

#[test]
fn a_scope_records_one_complete_event_spanning_its_block_after_its_children() {
    let log = started(fixed(1 << 16));
    {
        trace_scope!(log: &log, "scope", "outer", "n" => 5i64, "label" => Static("lbl"));
        std::thread::sleep(Duration::from_millis(3));
        trace_instant!(log: &log, "scope", "child");
    }
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    assert_eq!(ev.iter().map(|e| e.callsite.name).collect::<Vec<_>>(), ["child", "outer"]);
    let (child, outer) = (&ev[0], &ev[1]);
    assert_eq!(outer.phase(), Phase::Complete);
    let dur = outer.duration.expect("scope duration");
    assert!(trace.clock().ticks_to_ns(dur) >= 2_900_000, "the scope lasted at least 3 ms");
    assert!(outer.ts <= child.ts && child.ts <= outer.ts + dur, "the child lies inside the scope");
    assert_eq!(outer.arg("n"), Some(ArgValue::I64(5)));
    assert_eq!(outer.arg("label"), Some(ArgValue::Str("lbl")));
}

#[test]
fn async_events_carry_their_ids_and_may_end_on_another_thread() {
    let log = started(fixed(1 << 16));
    trace_async_begin!(log: &log, "io", "request", 77u32, "bytes" => 512u64);
    trace_async_begin!(log: &log, "io", "request", 78u64);
    let other = std::thread::scope(|s| {
        s.spawn(|| {
            trace_async_end!(log: &log, "io", "request", 77u32, "status" => Static("done"));
            trace_async_end!(log: &log, "io", "request", 78usize);
            current_thread_id()
        })
        .join()
        .unwrap()
    });
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    assert_eq!(ev.len(), 4);
    let me = current_thread_id();
    assert_ne!(me, other);
    let begins: Vec<_> = ev.iter().filter(|e| e.phase() == Phase::AsyncBegin).collect();
    let ends: Vec<_> = ev.iter().filter(|e| e.phase() == Phase::AsyncEnd).collect();
    assert_eq!(
        begins.iter().map(|e| (e.async_id, e.tid)).collect::<Vec<_>>(),
        [(Some(77), me), (Some(78), me)]
    );
    assert_eq!(
        ends.iter().map(|e| (e.async_id, e.tid)).collect::<Vec<_>>(),
        [(Some(77), other), (Some(78), other)]
    );
    assert_eq!(begins[0].arg("bytes"), Some(ArgValue::U64(512)));
    assert_eq!(ends[0].arg("status"), Some(ArgValue::Str("done")));
    assert!(ev.iter().all(|e| e.duration.is_none() && e.callsite.name == "request"));
}

#[test]
fn counters_record_integer_and_float_samples_as_their_value() {
    let log = started(fixed(1 << 16));
    trace_counter!(log: &log, "mem", "heap", 4096u64);
    trace_counter!(log: &log, "mem", "delta", -3i32);
    trace_counter!(log: &log, "mem", "load", 0.75f64);
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    let got: Vec<_> = ev.iter().map(|e| (e.callsite.name, e.phase(), e.arg("value"))).collect();
    assert_eq!(
        got,
        [
            ("heap", Phase::Counter, Some(ArgValue::U64(4096))),
            ("delta", Phase::Counter, Some(ArgValue::I64(-3))),
            ("load", Phase::Counter, Some(ArgValue::F64(0.75))),
        ]
    );
}

#[test]
fn a_lock_guard_records_wait_and_held_durations_and_derefs_to_the_inner_guard() {
    let log = started(fixed(1 << 16));
    let m = Arc::new(Mutex::new(40));
    let (locked_tx, locked_rx) = mpsc::channel();
    let holder = {
        let m = Arc::clone(&m);
        std::thread::spawn(move || {
            let g = m.lock().unwrap();
            locked_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(30));
            drop(g);
        })
    };
    locked_rx.recv().unwrap();
    {
        let mut g = trace_lock_guard!(log: &log, "sync", "counter", m.lock().unwrap());
        *g += 2;
        assert_eq!(*g, 42);
        std::thread::sleep(Duration::from_millis(3));
    }
    holder.join().unwrap();
    assert_eq!(*m.lock().unwrap(), 42, "the guard's writes went to the mutex");
    assert!(m.try_lock().is_ok(), "dropping the guard released the lock");
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    assert_eq!(
        ev.iter().map(|e| (e.callsite.name, e.phase())).collect::<Vec<_>>(),
        [("counter.wait", Phase::LockWait), ("counter.held", Phase::LockHeld)]
    );
    let (wait, held) = (&ev[0], &ev[1]);
    let clock = trace.clock();
    let waited = wait.duration.expect("wait duration");
    let kept = held.duration.expect("held duration");
    assert!(
        clock.ticks_to_ns(waited) >= 5_000_000,
        "waited {} ns for a lock held 30 ms",
        clock.ticks_to_ns(waited)
    );
    assert!(clock.ticks_to_ns(kept) >= 2_900_000, "held {} ns across a 3 ms sleep", clock.ticks_to_ns(kept));
    assert_eq!(held.ts, wait.ts.wrapping_add(waited), "holding starts when waiting ends");
    assert!(ev.iter().all(|e| e.tid == current_thread_id() && e.callsite.category == "sync"));
}

#[test]
fn a_lock_guard_turned_into_its_inner_guard_records_held_once_at_that_moment() {
    let log = started(fixed(1 << 16));
    let m = Mutex::new(1);
    let g = trace_lock_guard!(log: &log, "sync", "cv", m.lock().unwrap());
    let mut inner = g.into_inner();
    *inner += 1;
    trace_instant!(log: &log, "sync", "after_into_inner");
    drop(inner);
    assert_eq!(*m.lock().unwrap(), 2);
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    let names: Vec<&str> = ev.iter().map(|e| e.callsite.name).collect();
    assert_eq!(names, ["cv.wait", "cv.held", "after_into_inner"], "held is recorded once, by into_inner");
    let held = &ev[1];
    assert!(held.ts + held.duration.unwrap() <= ev[2].ts, "the held slice ended at into_inner");
}

#[test]
fn a_lock_guard_records_its_arguments_on_both_the_wait_and_the_held_event() {
    let log = started(fixed(1 << 16));
    let m = Mutex::new(0u64);
    let owner = String::from("writer-7");
    {
        let mut g = trace_lock_guard!(log: &log, "sync", "table", m.lock().unwrap(), "key" => 42u64, "owner" => owner.as_str());
        *g += 1;
    }
    {
        let _g = trace_lock_guard!(log: &log, "sync", "one", m.lock().unwrap(), "retry" => true);
    }
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    let got: Vec<(&str, Phase)> = ev.iter().map(|e| (e.name(), e.phase())).collect();
    assert_eq!(
        got,
        [
            ("table.wait", Phase::LockWait),
            ("table.held", Phase::LockHeld),
            ("one.wait", Phase::LockWait),
            ("one.held", Phase::LockHeld),
        ]
    );
    for e in &ev[..2] {
        assert_eq!(e.arg("key"), Some(ArgValue::U64(42)), "{}", e.name());
        assert_eq!(e.arg("owner"), Some(ArgValue::Str("writer-7")), "{}", e.name());
        assert!(e.duration.is_some() && !e.callsite.dynamic_name);
    }
    assert!(ev[2..].iter().all(|e| e.arg("retry") == Some(ArgValue::Bool(true))));
    assert_eq!(*m.lock().unwrap(), 1);
}

#[test]
fn a_lock_guard_named_at_run_time_carries_its_name_and_argument_on_both_events() {
    use phosphor::{pstr, PString};
    const SHARDS: [PString; 2] = [pstr!("shard-0"), pstr!("shard-1")];
    let log = started(fixed(1 << 16));
    let shards = [Mutex::new(0u64), Mutex::new(0u64)];
    for key in [3u64, 4] {
        let i = (key % 2) as usize;
        let mut g =
            trace_lock_guard!(log: &log, "sync", dyn SHARDS[i], shards[i].lock().unwrap(), "key" => key);
        *g += key;
    }
    let name = String::from("interned-lock");
    drop(trace_lock_guard!(log: &log, "sync", dyn &name, shards[0].lock().unwrap()));
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    let got: Vec<(&str, Phase)> = ev.iter().map(|e| (e.name(), e.phase())).collect();
    assert_eq!(
        got,
        [
            ("shard-1", Phase::LockWait),
            ("shard-1", Phase::LockHeld),
            ("shard-0", Phase::LockWait),
            ("shard-0", Phase::LockHeld),
            ("interned-lock", Phase::LockWait),
            ("interned-lock", Phase::LockHeld),
        ]
    );
    assert!(ev.iter().all(|e| e.callsite.dynamic_name && e.args[0].map(|(n, _)| n) == Some("name")));
    assert_eq!(ev[0].callsite.name, "SHARDS[i].wait", "a dyn callsite's own name is the expression");
    assert_eq!(ev[1].callsite.name, "SHARDS[i].held");
    let keys: Vec<_> = ev.iter().map(|e| e.arg("key")).collect();
    let k = |v| Some(ArgValue::U64(v));
    assert_eq!(keys, [k(3), k(3), k(4), k(4), None, None]);
    assert_eq!(ev[1].ts, ev[0].ts + ev[0].duration.unwrap(), "holding starts when waiting ends");
    assert_eq!((*shards[0].lock().unwrap(), *shards[1].lock().unwrap()), (4, 3));
}

#[test]
fn a_lock_guard_evaluates_its_arguments_only_when_its_category_is_traced() {
    let log = started(fixed(1 << 16).categories("-quiet").unwrap());
    let m = Mutex::new(0u64);
    let mut evaluated = 0;
    let mut arg = || {
        evaluated += 1;
        5u32
    };
    drop(trace_lock_guard!(log: &log, "quiet", "m", m.lock().unwrap(), "n" => arg()));
    drop(trace_lock_guard!(log: &log, "loud", "m", m.lock().unwrap(), "n" => arg()));
    assert_eq!(evaluated, 1, "only the traced lock's argument was evaluated");
    let trace = stop_and_take(&log);
    assert_eq!(events(&trace).len(), 2);
}

#[test]
fn set_thread_name_names_the_thread_in_the_trace_and_std_names_are_used_otherwise() {
    let log = started(fixed(1 << 16));
    let (named, std_named) = std::thread::scope(|s| {
        let named = s.spawn(|| {
            set_thread_name("worker-alpha");
            trace_instant!(log: &log, "threads", "hello");
            current_thread_id()
        });
        let std_named = std::thread::Builder::new()
            .name("std-named-beta".into())
            .spawn_scoped(s, || {
                trace_instant!(log: &log, "threads", "hello");
                current_thread_id()
            })
            .unwrap();
        (named.join().unwrap(), std_named.join().unwrap())
    });
    let trace = stop_and_take(&log);
    assert_eq!(trace.thread_name(named), Some("worker-alpha"));
    assert_eq!(trace.thread_name(std_named), Some("std-named-beta"));
    let tids: Vec<u32> = events(&trace).iter().map(|e| e.tid).collect();
    assert!(tids.contains(&named) && tids.contains(&std_named));
}

#[test]
fn a_dynamic_string_longer_than_256_bytes_is_cut_on_a_char_boundary_and_flagged() {
    let log = started(fixed(1 << 16));
    // 'x' then 2-byte chars: byte 256 falls inside a char, so the cut must back off to 255.
    let two = format!("x{}", "é".repeat(200));
    // 3-byte chars: the last boundary at or below 256 is 255.
    let three = "€".repeat(100);
    let exact = "a".repeat(256);
    let longer = "b".repeat(257);
    trace_instant!(log: &log, "str", "two", "s" => two.as_str());
    trace_instant!(log: &log, "str", "three", "s" => three.clone());
    trace_instant!(log: &log, "str", "exact", "s" => &exact);
    trace_instant!(log: &log, "str", "longer", "s" => longer.as_str(), "n" => 1u64);
    trace_instant!(log: &log, "str", "both", "a" => three.as_str(), "b" => two.as_str());
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    let by_name: HashMap<&str, _> = ev.iter().map(|e| (e.callsite.name, e)).collect();
    let s = |name: &str, arg: &str| match by_name[name].arg(arg) {
        Some(ArgValue::Str(s)) => s.to_owned(),
        other => panic!("{name}.{arg}: {other:?}"),
    };
    assert_eq!(s("two", "s"), two[..255]);
    assert!(by_name["two"].truncated);
    assert_eq!(s("three", "s"), three[..255]);
    assert!(by_name["three"].truncated);
    assert_eq!(s("exact", "s"), exact);
    assert!(!by_name["exact"].truncated, "256 bytes fit");
    assert_eq!(s("longer", "s"), longer[..256]);
    assert!(by_name["longer"].truncated);
    assert_eq!(by_name["longer"].arg("n"), Some(ArgValue::U64(1)));
    assert_eq!(s("both", "a"), three[..255]);
    assert_eq!(s("both", "b"), two[..255]);
    assert!(by_name["both"].truncated);
}

#[test]
fn a_static_string_longer_than_65535_bytes_is_cut_and_flagged() {
    let log = started(fixed(1 << 16));
    let long: &'static str = Box::leak("s".repeat(70_000).into_boxed_str());
    trace_instant!(log: &log, "str", "long_static", "s" => Static(long));
    trace_instant!(log: &log, "str", "short_static", "s" => Static("short"));
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    assert_eq!(ev[0].arg("s"), Some(ArgValue::Str(&long[..65_535])));
    assert!(ev[0].truncated);
    assert_eq!(ev[1].arg("s"), Some(ArgValue::Str("short")));
    assert!(!ev[1].truncated);
}

#[test]
fn each_threads_events_come_out_in_the_order_it_recorded_them_with_its_thread_id() {
    const THREADS: u64 = 4;
    const EVENTS: u64 = 1_000; // about eight chunks per thread
    let log = started(fixed(4 << 20));
    let tids: HashMap<u64, u32> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let log = &log;
                s.spawn(move || {
                    for i in 0..EVENTS {
                        trace_instant!(log: log, "order", "step", "t" => t, "i" => i);
                    }
                    (t, current_thread_id())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let trace = stop_and_take(&log);
    let ev = events(&trace);
    assert_eq!(ev.len() as u64, THREADS * EVENTS);
    let mut per_thread: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
    for e in &ev {
        let (Some(ArgValue::U64(t)), Some(ArgValue::U64(i))) = (e.arg("t"), e.arg("i")) else {
            panic!("bad args {e:?}")
        };
        assert_eq!(e.tid, tids[&t], "event {i} of thread {t} has the wrong tid");
        per_thread.entry(t).or_default().push((i, e.ts));
    }
    for (t, v) in per_thread {
        assert_eq!(v.iter().map(|p| p.0).collect::<Vec<_>>(), (0..EVENTS).collect::<Vec<_>>(), "thread {t}");
        assert!(v.windows(2).all(|w| w[0].1 <= w[1].1), "thread {t}: timestamps go backwards");
    }
}

#[test]
fn a_thread_that_reuses_a_dead_threads_id_does_not_inherit_its_name() {
    let log = started(fixed(1 << 16));
    let departed = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("departed".into())
            .spawn_scoped(s, || {
                trace_instant!(log: &log, "threads", "departed_event");
                current_thread_id()
            })
            .unwrap()
            .join()
            .unwrap()
    });
    // Linux hands out thread ids in order up to pid_max (32768 by default) and then wraps, so
    // spawning enough threads reaches the departed thread's id again.
    let reused = std::thread::scope(|s| {
        (0..100_000).any(|_| {
            std::thread::Builder::new()
                .name("successor".into())
                .spawn_scoped(s, || {
                    let mine = current_thread_id() == departed;
                    if mine {
                        trace_instant!(log: &log, "threads", "successor_event");
                    }
                    mine
                })
                .unwrap()
                .join()
                .unwrap()
        })
    });
    let trace = stop_and_take(&log);
    if !reused {
        eprintln!("thread id {departed} was not reused within 100,000 threads; nothing to check");
        return;
    }
    assert_eq!(events(&trace).iter().filter(|e| e.tid == departed).count(), 2);
    assert_eq!(trace.thread_name(departed), Some("successor"), "the live thread's name wins");
}

#[test]
fn a_name_chosen_at_run_time_is_argument_0_and_costs_one_record_for_a_pstring() {
    use phosphor::{pstr, PString, Static};
    const OPS: [PString; 2] = [pstr!("op-read"), pstr!("op-write")];
    let log = started(fixed(1 << 16));
    for (i, op) in OPS.iter().enumerate() {
        trace_instant!(log: &log, "dyn", dyn *op, "i" => i as u32);
    }
    {
        trace_scope!(log: &log, "dyn", dyn Static("op-scope"));
        phosphor::trace_begin!(log: &log, "dyn", dyn OPS[0]);
        phosphor::trace_end!(log: &log, "dyn", dyn OPS[0]);
    }
    let trace = stop_and_take(&log);
    let evs = events(&trace);
    let got: Vec<(&str, Phase)> = evs.iter().map(|e| (e.name(), e.phase())).collect();
    assert_eq!(
        got,
        [
            ("op-read", Phase::Instant),
            ("op-write", Phase::Instant),
            ("op-read", Phase::Begin),
            ("op-read", Phase::End),
            ("op-scope", Phase::Complete),
        ]
    );
    assert!(evs.iter().all(|e| e.callsite.dynamic_name && e.args[0].map(|(n, _)| n) == Some("name")));
    assert_eq!(evs[1].arg("i"), Some(ArgValue::U64(1)));
    assert_eq!(evs[0].callsite.name, "*op", "a dyn callsite's own name is the expression");
    // One record per event: a PString is stored by address, like a static name.
    assert_eq!(trace.stats().recorded, 5);
    let records: usize = trace.chunks().map(|c| c.records.len()).sum();
    assert_eq!(records, 5);
}

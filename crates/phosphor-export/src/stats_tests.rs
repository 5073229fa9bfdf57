//! Tests of `TraceStats` on small trace files built here, on the v1 golden file, and on traces
//! recorded by independent `TraceLog`s.

use std::time::Duration;

use phosphor::{trace_async_begin, trace_async_end, trace_lock_guard, BufferMode, TraceConfig, TraceLog};
use phosphor_format::file::{CallsiteInfo, DropCounts, ErrorKind, Trailer, Writer, SEQ_STREAM_SHIFT};
use phosphor_format::{ArgType, Meta, Record};

use super::*;
use crate::test_files::{clock, header, mark, slice};
use crate::{SortBy, TableOptions, EXACT_SAMPLES, PERCENTILE_ERROR};

const GOLDEN: &[u8] = include_bytes!("../../phosphor-format/tests/data/golden-v1.phtrace");

const FRAME: u32 = 16;
const FRAME_END: u32 = 17;
const UPDATE: u32 = 18;
const PHYSICS: u32 = 19;
const RENDER: u32 = 20;
const TICK: u32 = 21;
const DEPTH: u32 = 22;
const WAIT: u32 = 23;
const HELD: u32 = 24;
const STRAY_END: u32 = 25;
const JOB_BEGIN: u32 = 26;
const REQUEST: u32 = 27;
const REQUEST_END: u32 = 28;
const LOG: u32 = 29;

fn callsite(id: u32, name: &str, phase: Phase) -> CallsiteInfo {
    CallsiteInfo {
        id,
        category: "test".into(),
        name: name.into(),
        phase,
        arg_names: ["v".into(), String::new()],
        file: "stats_tests.rs".into(),
        line: id,
        name_hash: 0,
        level: None,
        dynamic_name: false,
        flow: false,
    }
}

fn callsites() -> Vec<CallsiteInfo> {
    vec![
        callsite(FRAME, "frame", Phase::Begin),
        callsite(FRAME_END, "frame", Phase::End),
        callsite(UPDATE, "update", Phase::Complete),
        callsite(PHYSICS, "physics", Phase::Complete),
        callsite(RENDER, "render", Phase::Complete),
        callsite(TICK, "tick", Phase::Instant),
        callsite(DEPTH, "depth", Phase::Counter),
        callsite(WAIT, "queue.wait", Phase::LockWait),
        callsite(HELD, "queue.held", Phase::LockHeld),
        callsite(STRAY_END, "stray", Phase::End),
        callsite(JOB_BEGIN, "job", Phase::Begin),
        callsite(REQUEST, "request", Phase::AsyncBegin),
        callsite(REQUEST_END, "request", Phase::AsyncEnd),
        callsite(LOG, "x={}", Phase::Log),
    ]
}

/// A trace file: one chunk per `(tid, seq, records)`; thread 1 is `main`, 2 is `worker`.
fn file(ns_per_tick: f64, chunks: &[(u32, u64, Vec<Record>)], trailer: &Trailer) -> Vec<u8> {
    let header = header(clock(ns_per_tick));
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    w.write_callsites(&callsites()).unwrap();
    w.write_thread_names([(1, "main"), (2, "worker")]).unwrap();
    for (tid, seq, records) in chunks {
        w.write_chunk(*tid, *seq, records, |_, _| "").unwrap();
    }
    w.finish(trailer).unwrap()
}

/// The statistics of a whole file on a nanosecond clock, one chunk per thread.
fn stats_of(threads: &[(u32, Vec<Record>)]) -> TraceStats {
    let chunks: Vec<_> = threads.iter().map(|(tid, r)| (*tid, 0, r.clone())).collect();
    let bytes = file(1.0, &chunks, &Trailer::default());
    TraceStats::from_reader(Reader::new(bytes.as_slice()).unwrap()).unwrap()
}

/// A counter sample or an async event (its lead word: the id) at `ts`.
fn valued(id: u32, ts: u64, value: u64) -> Record {
    if id == DEPTH {
        Record::new(ts, id, Meta::new(0, ArgType::U64, ArgType::None), [value, 0])
    } else {
        Record::new(ts, id, Meta::new(1, ArgType::None, ArgType::None), [value, 0])
    }
}

/// `(path, type, count, total_ns)` of the kinds of thread `tid`.
fn kinds_of(stats: &TraceStats, tid: u32) -> Vec<(String, EventType, u64, Option<u64>)> {
    stats
        .kinds
        .iter()
        .filter(|k| k.tid == Some(tid))
        .map(|k| (k.path_string(), k.event_type, k.count, k.durations.map(|d| d.total_ns)))
        .collect()
}

fn row(path: &str, ty: EventType, count: u64, total: Option<u64>) -> (String, EventType, u64, Option<u64>) {
    (path.to_owned(), ty, count, total)
}

#[test]
fn begin_end_pairs_nest_into_paths() {
    // frame [0, 100] > frame [10, 60] (a frame inside a frame), then frame [200, 250].
    let main = vec![mark(FRAME, 0), mark(FRAME, 10), mark(FRAME_END, 60), mark(FRAME_END, 100)];
    let main = [main, vec![mark(FRAME, 200), mark(FRAME_END, 250)]].concat();
    let stats = stats_of(&[(1, main)]);
    use EventType::Scope;
    assert_eq!(
        kinds_of(&stats, 1),
        [row("frame", Scope, 2, Some(150)), row("frame/frame", Scope, 1, Some(50))]
    );
    assert_eq!(stats.problem_count, 0, "{:?}", stats.problems);
}

#[test]
fn complete_events_recorded_after_their_children_get_their_paths() {
    // update [0, 100] > physics [10, 40] and physics [50, 70]; render [120, 150]; children first.
    let main =
        vec![slice(PHYSICS, 10, 30), slice(PHYSICS, 50, 20), slice(UPDATE, 0, 100), slice(RENDER, 120, 30)];
    let stats = stats_of(&[(1, main)]);
    use EventType::Scope;
    assert_eq!(
        kinds_of(&stats, 1),
        [
            row("render", Scope, 1, Some(30)),
            row("update", Scope, 1, Some(100)),
            row("update/physics", Scope, 2, Some(50))
        ]
    );
}

#[test]
fn begin_end_complete_lock_and_point_events_mix_into_one_tree() {
    // frame (begin/end) [0, 1000] > update [100, 600] > physics [200, 300] with a tick at 250,
    // a lock wait [310, 320] and held [320, 400] holding a depth sample at 350, a log at 500;
    // a tick at 800 directly in frame. Complete events arrive at their end.
    let main = vec![
        mark(FRAME, 0),
        mark(TICK, 250),
        slice(PHYSICS, 200, 100),
        slice(WAIT, 310, 10),
        valued(DEPTH, 350, 3),
        slice(HELD, 320, 80),
        mark(LOG, 500),
        slice(UPDATE, 100, 500),
        mark(TICK, 800),
        mark(FRAME_END, 1000),
    ];
    let stats = stats_of(&[(1, main)]);
    use EventType::*;
    assert_eq!(
        kinds_of(&stats, 1),
        [
            row("frame", Scope, 1, Some(1000)),
            row("frame/tick", Instant, 1, None),
            row("frame/update", Scope, 1, Some(500)),
            row("frame/update/physics", Scope, 1, Some(100)),
            row("frame/update/physics/tick", Instant, 1, None),
            row("frame/update/queue (held)", LockHeld, 1, Some(80)),
            row("frame/update/queue (held)/depth", Counter, 1, None),
            row("frame/update/queue (wait)", LockWait, 1, Some(10)),
            row("frame/update/x={}", Log, 1, None),
        ]
    );
    assert_eq!(stats.problem_count, 0, "{:?}", stats.problems);
}

#[test]
fn threads_have_their_own_kinds_and_paths_add_them_up() {
    let main = vec![slice(PHYSICS, 10, 10), slice(UPDATE, 0, 100)];
    // The worker's physics has no parent: another path.
    let worker = vec![slice(PHYSICS, 10, 30), slice(UPDATE, 50, 5), slice(UPDATE, 60, 7)];
    let stats = stats_of(&[(1, main), (2, worker)]);
    use EventType::Scope;
    assert_eq!(
        kinds_of(&stats, 1),
        [row("update", Scope, 1, Some(100)), row("update/physics", Scope, 1, Some(10))]
    );
    assert_eq!(kinds_of(&stats, 2), [row("physics", Scope, 1, Some(30)), row("update", Scope, 2, Some(12))]);
    let update = stats.path(&["update"]).unwrap();
    assert_eq!((update.tid, update.count, update.durations.unwrap().total_ns), (None, 3, 112));
    assert_eq!(stats.paths().len(), 3);
    let threads: Vec<_> = stats.threads.iter().map(|t| (t.tid, t.name.as_deref(), t.events)).collect();
    assert_eq!(threads, [(1, Some("main"), 2), (2, Some("worker"), 3)]);
    assert_eq!(stats.kind(2, &["update"]).unwrap().count, 2);
}

#[test]
fn durations_are_exact_counts_totals_extremes_and_means() {
    // 100 jobs of 1..=100 µs on a 0.5 ns clock (2 ticks a nanosecond), one after another.
    let mut main = Vec::new();
    let mut at = 0;
    for us in (1..=100u64).rev() {
        main.push(slice(UPDATE, at, us * 2_000));
        at += us * 2_000 + 10;
    }
    let bytes = file(0.5, &[(1, 0, main)], &Trailer::default());
    let stats = TraceStats::from_reader(Reader::new(bytes.as_slice()).unwrap()).unwrap();
    let d = stats.kind(1, &["update"]).unwrap().durations.unwrap();
    assert_eq!(
        (d.samples, d.total_ns, d.min_ns, d.max_ns, d.mean_ns),
        (100, 5_050_000, 1_000, 100_000, 50_500)
    );
    assert_eq!((d.p50_ns, d.p99_ns, d.exact_percentiles), (50_000, 99_000, true));
    assert_eq!(stats.span_ns, (at - 10) / 2);
}

#[test]
fn percentiles_of_many_durations_are_within_the_stated_bound() {
    // 20,000 durations of 1..=20,000 µs in a shuffled order, in chunks of 100 events.
    let n = 20_000u64;
    let durations: Vec<u64> = (0..n).map(|i| (i * 7_919 % n + 1) * 1_000).collect();
    let mut at = 0;
    let mut chunks = Vec::new();
    for (seq, part) in durations.chunks(100).enumerate() {
        let records: Vec<Record> = part
            .iter()
            .map(|&d| {
                let r = slice(RENDER, at, d);
                at += d;
                r
            })
            .collect();
        chunks.push((1, seq as u64, records));
    }
    let bytes = file(1.0, &chunks, &Trailer::default());
    let stats = TraceStats::from_reader(Reader::new(bytes.as_slice()).unwrap()).unwrap();
    let d = stats.kind(1, &["render"]).unwrap().durations.unwrap();
    assert!(n as usize > EXACT_SAMPLES && !d.exact_percentiles);
    assert_eq!((d.samples, d.min_ns, d.max_ns), (n, 1_000, n * 1_000));
    assert_eq!((d.total_ns, d.mean_ns), (n * (n + 1) / 2 * 1_000, (n + 1) * 500));
    for (got, exact) in [(d.p50_ns, 10_000_000u64), (d.p99_ns, 19_800_000)] {
        let error = got.abs_diff(exact) as f64 / exact as f64;
        assert!(error <= PERCENTILE_ERROR, "{got} vs {exact}: {error}");
    }
}

#[test]
fn every_scope_problem_is_reported_with_its_thread_and_time() {
    // On a 2 ns clock from origin 0, so times in ns are twice the ticks.
    let main = vec![
        mark(STRAY_END, 5),    // an end with nothing open
        mark(FRAME, 10),       // frame
        mark(JOB_BEGIN, 20),   //   job
        mark(FRAME_END, 30),   //   closes job: wrong name
        mark(FRAME_END, 40),   // closes frame
        slice(UPDATE, 50, 50), // update [50, 100]
        slice(RENDER, 90, 60), // render [90, 150] starts inside update, ends after it
        mark(JOB_BEGIN, 200),  // never ends
    ];
    let worker = vec![mark(FRAME_END, 7)];
    let bytes = file(2.0, &[(1, 0, main), (2, 0, worker)], &Trailer::default());
    let stats = TraceStats::from_reader(Reader::new(bytes.as_slice()).unwrap()).unwrap();
    let s = |v: &str| v.to_owned();
    let found: Vec<(u32, i64, ScopeProblemKind)> =
        stats.problems.iter().map(|p| (p.tid, p.at_ns, p.kind.clone())).collect();
    assert_eq!(
        found,
        [
            (1, 10, ScopeProblemKind::EndWithoutBegin { end: s("stray") }),
            (1, 60, ScopeProblemKind::WrongName { open: s("job"), end: s("frame") }),
            (1, 180, ScopeProblemKind::Interlaced { scope: s("render"), other: s("update") }),
            (1, 400, ScopeProblemKind::LeftOpen { open: s("job") }),
            (2, 14, ScopeProblemKind::EndWithoutBegin { end: s("frame") }),
        ]
    );
    assert_eq!(stats.problem_count, 5);
    let per_thread: Vec<_> = stats.threads.iter().map(|t| (t.tid, t.problems)).collect();
    assert_eq!(per_thread, [(1, 4), (2, 1)]);
    // The pair closed by the wrong name still counts (as viewers draw it), so do the two
    // siblings; the begin left open counts without a duration.
    let job = stats.kind(1, &["frame", "job"]).unwrap();
    assert_eq!((job.count, job.durations.unwrap().total_ns), (1, 20));
    let left_open = stats.kind(1, &["job"]).unwrap();
    assert_eq!((left_open.count, left_open.durations), (1, None));
    assert!(stats.kind(1, &["update", "render"]).is_none(), "interlaced scopes stay siblings");
    let report = stats.problem_report().to_string();
    assert!(report.contains("5 problems"), "{report}");
    assert!(
        report.contains(r#"tid 1 (main) at +180 ns: "render" overlaps its sibling "update""#),
        "{report}"
    );
}

#[test]
fn drops_come_from_the_trailer_and_lost_chunks_from_sequence_gaps() {
    let trailer = Trailer {
        recorded: 3,
        dropped: DropCounts { overwritten: 250, buffer_full: 4, ..DropCounts::default() },
        ..Trailer::default()
    };
    let pool = 1 << SEQ_STREAM_SHIFT;
    // Thread 1's own chunks 0 and 3 (two lost); pool tenant 1's chunks 1 and 2 (one lost), written
    // first by thread 2 then by thread 1.
    let chunks = [
        (1, 0, vec![mark(TICK, 1)]),
        (2, pool | 1, vec![mark(TICK, 2)]),
        (1, 3, vec![mark(TICK, 3)]),
        (1, pool | 2, vec![]),
    ];
    let bytes = file(1.0, &chunks, &trailer);
    let stats = TraceStats::from_reader(Reader::new(bytes.as_slice()).unwrap()).unwrap();
    assert!(stats.complete);
    assert_eq!((stats.events, stats.chunks, stats.recorded), (3, 4, Some(3)));
    assert_eq!(stats.drops.as_ref().unwrap().total(), 254);
    assert_eq!(stats.lost_chunks, 3);
    let lost: Vec<_> = stats.threads.iter().map(|t| (t.tid, t.lost_chunks)).collect();
    assert_eq!(lost, [(1, 2), (2, 0)]);
    let summary = stats.summary().to_string();
    assert!(summary.contains("dropped      254 (buffer_full 4, overwritten 250)"), "{summary}");
    assert!(summary.contains("lost chunks  3"), "{summary}");
}

#[test]
fn a_truncated_file_gives_the_statistics_before_the_damage_and_the_offset() {
    let header = header(clock(1.0));
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    w.write_callsites(&callsites()).unwrap();
    w.write_chunk(1, 0, &[slice(PHYSICS, 10, 10), slice(UPDATE, 0, 50)], |_, _| "").unwrap();
    let first_end = w.offset();
    w.write_chunk(1, 1, &[slice(RENDER, 100, 10)], |_, _| "").unwrap();
    let second_end = w.offset();
    let bytes = w.finish(&Trailer::default()).unwrap();
    let cut = &bytes[..(first_end + second_end) as usize / 2];

    let err = TraceStats::from_reader(Reader::new(cut).unwrap()).unwrap_err();
    assert_eq!(err.source.offset(), first_end);
    assert!(matches!(err.source.kind(), ErrorKind::Truncated { .. }), "{:?}", err.source);
    let partial = &err.partial;
    assert!(!partial.complete);
    assert_eq!(
        (partial.events, partial.chunks, partial.recorded, partial.drops.as_ref()),
        (2, 1, None, None)
    );
    assert_eq!(partial.kind(1, &["update", "physics"]).unwrap().count, 1);
    assert!(partial.kind(1, &["render"]).is_none());
    assert!(err.to_string().contains(&format!("past byte {first_end}")), "{err}");
    assert!(partial.summary().to_string().contains("no trailer was read"));
}

#[test]
fn a_long_flat_stream_stays_within_the_pending_limit() {
    let limit = 1_000;
    // On this thread, so that what is pending is known after each event.
    let mut b = StatsBuilder::new(&clock(1.0)).pending_limit(limit).background(false);
    let bytes = file(1.0, &[(1, 0, vec![slice(UPDATE, 0, 5), slice(RENDER, 1, 2)])], &Trailer::default());
    let mut reader = Reader::new(bytes.as_slice()).unwrap();
    let chunk = reader.next_chunk().unwrap().unwrap();
    let events: Vec<_> = chunk.events().map(Result::unwrap).collect();
    // 200,000 top-level slices, and every tenth has a child: nothing ever encloses the top level.
    let mut most = 0;
    for i in 0..200_000u64 {
        let mut e = events[0].clone();
        e.ts = i * 100;
        if i % 10 == 0 {
            let mut child = events[1].clone();
            child.ts = e.ts + 1;
            b.add(&child);
        }
        b.add(&e);
        most = most.max(b.pending());
    }
    assert!(most <= limit, "{most}");
    let stats = b.finish([], None);
    assert_eq!(stats.kind(1, &["update"]).unwrap().count, 200_000);
    assert_eq!(stats.kind(1, &["update", "render"]).unwrap().count, 20_000);
    assert!(stats.kind(1, &["render"]).is_none());
    assert_eq!(stats.problem_count, 0);
    assert!(stats.resolved_early > 200_000 - limit as u64);
}

#[test]
fn the_golden_file_renders_to_the_committed_tables_and_json() {
    let stats = TraceStats::from_reader(Reader::new(GOLDEN).unwrap()).unwrap();
    assert_eq!((stats.events, stats.chunks, stats.lost_chunks), (10, 3, 1));
    insta::assert_snapshot!("golden_v1_stats_text", stats.to_string());
    let mut json = Vec::new();
    stats.write_json(&mut json, TableOptions { sort: SortBy::Total, top: None }).unwrap();
    let json = String::from_utf8(json).unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["schema"], "phosphor-stats/1");
    assert_eq!(value["kinds"].as_array().unwrap().len(), stats.kinds.len());
    insta::assert_snapshot!("golden_v1_stats_json", json);
}

#[test]
fn tables_follow_the_sort_and_top_options() {
    let main = vec![slice(UPDATE, 0, 100), slice(RENDER, 100, 10), slice(RENDER, 110, 10), mark(TICK, 200)];
    let main = [main, vec![mark(TICK, 201), mark(TICK, 202), slice(PHYSICS, 300, 50)]].concat();
    let stats = stats_of(&[(1, main)]);
    let names = |sort, top| -> Vec<&str> {
        TableOptions { sort, top }.select(&stats.kinds).iter().map(|k| k.name()).collect()
    };
    assert_eq!(names(SortBy::Total, None), ["update", "physics", "render", "tick"]);
    assert_eq!(names(SortBy::Count, None), ["tick", "render", "update", "physics"]);
    assert_eq!(names(SortBy::Max, Some(2)), ["update", "physics"]);
    let table = stats.kinds_table(TableOptions { sort: SortBy::Count, top: Some(1) }, false).to_string();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 2, "{table}");
    assert_eq!(lines[1].split_whitespace().collect::<Vec<_>>(), ["main", "tick", "instant", "3"], "{table}");
}

#[test]
fn the_top_rows_are_the_first_rows_of_the_whole_table_ties_included() {
    // Eight threads of the same few kinds, durations and counts from a small set: many ties.
    let threads: Vec<(u32, Vec<Record>)> = (1..=8u32)
        .map(|tid| {
            let mut r = Vec::new();
            for (k, id) in [UPDATE, RENDER, PHYSICS].into_iter().enumerate() {
                for n in 0..(tid + k as u32) % 3 + 1 {
                    r.push(slice(id, u64::from(n) * 1_000 + k as u64 * 100, u64::from(tid % 2 + 1) * 10));
                }
            }
            r.extend((0..tid % 4).map(|n| mark(TICK, 10_000 + u64::from(n))));
            (tid, r)
        })
        .collect();
    let stats = stats_of(&threads);
    assert!(stats.kinds.len() > 24, "{}", stats.kinds.len());
    for sort in [SortBy::Total, SortBy::Count, SortBy::Max] {
        let kinds = |o: TableOptions| o.select(&stats.kinds);
        let paths = |o: TableOptions| o.select_paths(stats.paths());
        type Select<'a> = &'a dyn Fn(TableOptions) -> Vec<&'a KindStats>;
        for (len, select) in [(stats.kinds.len(), &kinds as Select<'_>), (stats.paths().len(), &paths)] {
            let all = select(TableOptions { sort, top: None });
            for top in 0..=len + 1 {
                let first = select(TableOptions { sort, top: Some(top) });
                let want = &all[..top.min(all.len())];
                assert!(
                    first.len() == want.len() && first.iter().zip(want).all(|(a, b)| std::ptr::eq(*a, *b)),
                    "{sort:?}, top {top}"
                );
            }
        }
    }
}

#[test]
fn recorded_traces_pair_async_slices_across_threads_and_type_lock_events() {
    let log = TraceLog::new(phosphor::TraceLogConfig::new().clock(phosphor::ClockKind::Monotonic)).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    let m = std::sync::Mutex::new(0);
    for _ in 0..4 {
        let mut g = trace_lock_guard!(log: &log, "test", "m", m.lock().unwrap());
        *g += 1;
    }
    trace_async_begin!(log: &log, "test", "request", 7u64);
    trace_async_begin!(log: &log, "test", "request", 8u64);
    std::thread::sleep(Duration::from_millis(1));
    std::thread::scope(|s| {
        s.spawn(|| trace_async_end!(log: &log, "test", "request", 7u64));
    });
    trace_async_end!(log: &log, "test", "request", 9u64);
    log.stop();
    let stats = TraceStats::from_bytes(&log.take_trace().unwrap().write_to(Vec::new()).unwrap()).unwrap();
    for (name, ty) in [("m (wait)", EventType::LockWait), ("m (held)", EventType::LockHeld)] {
        let k = stats.path(&[name]).unwrap();
        assert_eq!((k.event_type, k.count, k.durations.unwrap().samples), (ty, 4, 4));
    }
    let a = stats.async_slices("request").unwrap();
    assert_eq!((a.durations.unwrap().samples, a.unended, a.unbegun), (1, 1, 1));
    assert!(a.durations.unwrap().min_ns >= 1_000_000);
    assert_eq!((stats.recorded, stats.events), (Some(12), 12));
}

#[test]
fn a_fixed_buffer_that_ran_out_reports_its_drops_by_reason() {
    let log = TraceLog::new(phosphor::TraceLogConfig::new()).unwrap();
    // One 4 KiB chunk holds 127 records; the rest find the Fixed buffer full.
    log.start(TraceConfig::new(BufferMode::Fixed, 4096)).unwrap();
    for i in 0..1000u32 {
        phosphor::trace_instant!(log: &log, "test", "flood", "i" => i);
    }
    log.stop();
    let stats = TraceStats::from_bytes(&log.take_trace().unwrap().write_to(Vec::new()).unwrap()).unwrap();
    let recorded = stats.recorded.unwrap();
    assert!(recorded > 0 && recorded < 1000, "{recorded}");
    assert_eq!(stats.events, recorded);
    assert_eq!(stats.drops.as_ref().unwrap().buffer_full, 1000 - recorded);
    assert_eq!(stats.path(&["flood"]).unwrap().count, recorded);
}

#[test]
fn logs_aggregates_and_dyn_names_of_the_v1_2_golden_file() {
    let golden = include_bytes!("../../phosphor-format/tests/data/golden-v1.2.phtrace");
    let stats = TraceStats::from_reader(Reader::new(&golden[..]).unwrap()).unwrap();
    assert_eq!(stats.logs.len(), 1);
    let l = &stats.logs[0];
    assert_eq!(
        (l.level, l.category.as_str(), l.format.as_str(), l.count),
        (phosphor_format::Level::Warn, "net", "user {} from {} took {:.1} ms ({})", 1)
    );
    let names: Vec<(&str, &str)> =
        stats.aggregates.iter().map(|a| (a.category.as_str(), a.name.as_str())).collect();
    assert_eq!(names, [("net", "bytes_sent"), ("net", "latency_ns")]);
    assert_eq!(stats.aggregates[0].quantile(0.5), None);
    // Buckets (3, 1), (40, 3), (77, 1): the median is in bucket 40, [128, 143].
    let p50 = stats.aggregates[1].quantile(0.5).unwrap();
    assert!((128..=143).contains(&p50), "{p50}");
    // The event named at run time is a kind under that name, not the callsite's (inside the
    // scope thread 101 left open).
    assert_eq!(stats.path(&["scope", "static-one"]).map(|k| k.count), Some(1), "{:?}", stats.paths());
    assert!(stats.paths().iter().all(|k| !k.path.segments().any(|p| p == "op_name()")));
    let text = stats.to_string();
    insta::assert_snapshot!("golden_v1_2_stats_text", text);
    let mut json = Vec::new();
    stats.write_json(&mut json, TableOptions { sort: SortBy::Total, top: None }).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["logs"][0]["format"], "user {} from {} took {:.1} ms ({})");
    assert_eq!(
        v["aggregates"][0],
        serde_json::json!({"category": "net", "name": "bytes_sent", "kind": "sum", "count": 3, "sum": -12})
    );
    assert_eq!(v["aggregates"][1]["buckets"], serde_json::json!([[3, 1], [40, 3], [77, 1]]));
}

#[test]
fn begins_nested_past_the_depth_cap_make_a_bounded_number_of_kinds_and_are_counted() {
    // 4,000 nested begins never ended: 4,000 kinds of up to 4,000 names each without the cap.
    let main: Vec<Record> = (0..4000).map(|i| mark(FRAME, i)).collect();
    let stats = stats_of(&[(1, main)]);
    let depth = crate::DEFAULT_MAX_DEPTH;
    assert_eq!((stats.max_depth, stats.truncated), (depth, 4000 - depth as u64));
    // A kind per level down to the cap, then one for the frames below it, by name.
    assert_eq!(stats.kinds.len(), depth + 1);
    assert_eq!(stats.paths().len(), depth + 1);
    let deepest = stats.kinds.iter().max_by_key(|k| k.path.len()).unwrap();
    assert_eq!(deepest.path.len(), depth + 2);
    assert_eq!(deepest.path.segments().skip(depth).collect::<Vec<_>>(), ["[deeper than 256]", "frame"]);
    assert_eq!(deepest.count, 4000 - depth as u64);
    assert_eq!(stats.problem_count, 4000, "every begin is left open");

    let mut json = Vec::new();
    stats.write_json(&mut json, TableOptions { sort: SortBy::Count, top: None }).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(json["problems"]["truncated"], 4000 - depth as u64);
    assert_eq!(json["problems"]["max_depth"], depth);
    let text = stats.report(TableOptions::default()).to_string();
    assert!(text.contains("3,744 scopes and events nested deeper than 256 levels"), "{text}");
}

#[test]
fn the_depth_cap_can_be_set() {
    let main: Vec<Record> = (0..20).map(|i| mark(FRAME, i)).collect();
    let bytes = file(1.0, &[(1, 0, main)], &Trailer::default());
    let reader = Reader::new(bytes.as_slice()).unwrap();
    let stats =
        StatsBuilder::new(&reader.header().clock).max_depth(4).pending_limit(100).read(reader).unwrap();
    assert_eq!((stats.max_depth, stats.truncated, stats.kinds.len()), (4, 16, 5));
}

#[test]
fn the_kinds_of_deeply_nested_scopes_share_one_tree_of_names() {
    // 2,000 nested frames: 2,000 kinds per table, 2,001,000 names if each spelled its path out.
    let begins = (0..2000).map(|i| mark(FRAME, i));
    let ends = (0..2000).map(|i| mark(FRAME_END, 2000 + i));
    let bytes = file(1.0, &[(1, 0, begins.chain(ends).collect())], &Trailer::default());
    let reader = Reader::new(bytes.as_slice()).unwrap();
    let stats = StatsBuilder::new(&reader.header().clock).max_depth(5000).read(reader).unwrap();
    assert_eq!((stats.kinds.len(), stats.paths().len(), stats.truncated), (2000, 2000, 0));
    let first = &stats.kinds[0].path;
    assert!(stats.kinds.iter().chain(stats.paths()).all(|k| k.path.same_tree(first)));
    assert_eq!(first.tree_len(), 2001, "a node per depth, and the empty path");
    // In order of their names: the shorter prefix first.
    let lens: Vec<usize> = stats.kinds.iter().map(|k| k.path.len()).collect();
    assert_eq!(lens, (1..=2000).collect::<Vec<_>>());
    assert_eq!(stats.kind(1, &["frame"; 3]).map(|k| k.count), Some(1));
    assert_eq!(stats.paths().get(1999).unwrap().path_string().len(), 2000 * 6 - 1);
}

#[test]
fn names_longer_than_the_limit_are_shown_cut_and_counted() {
    let long = |fill: &str, end: &str| format!("{}{end}", fill.repeat(crate::MAX_NAME_BYTES + 100));
    // Two names that part after the limit, and one that parts before it.
    let sites = [
        callsite(16, &long("x", "a"), Phase::Complete),
        callsite(17, &long("x", "b"), Phase::Complete),
        callsite(18, &long("y", ""), Phase::Complete),
    ];
    let mut w = Writer::new(Vec::new(), &header(clock(1.0))).unwrap();
    w.write_callsites(&sites).unwrap();
    w.write_chunk(1, 0, &[slice(16, 0, 10), slice(17, 20, 10), slice(18, 40, 10)], |_, _| "").unwrap();
    let bytes = w.finish(&Trailer::default()).unwrap();
    let stats = TraceStats::from_reader(Reader::new(bytes.as_slice()).unwrap()).unwrap();
    assert_eq!(stats.names_cut, 2);
    let shown = |fill: &str| format!("{}{}", fill.repeat(crate::MAX_NAME_BYTES), crate::NAME_CUT_MARK);
    assert_eq!(stats.path(&[&shown("x")]).unwrap().count, 2);
    assert_eq!(stats.path(&[&shown("y")]).unwrap().count, 1);
    let options = TableOptions { sort: SortBy::Total, top: None };
    let mut json = Vec::new();
    stats.write_json(&mut json, options).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(json["problems"]["names_cut"], 2);
    assert_eq!(json["problems"]["max_name_bytes"], crate::MAX_NAME_BYTES);
    let report = stats.report(options).to_string();
    assert!(report.contains("2 names longer than 512 bytes are shown cut"), "{report}");
}

#[test]
fn threads_that_share_a_name_are_told_apart_by_their_tid_in_the_kinds_table() {
    let mut w = Writer::new(Vec::new(), &header(clock(1.0))).unwrap();
    w.write_callsites(&callsites()).unwrap();
    w.write_thread_names([(1, "main"), (11, "tokio-rt-worker"), (12, "tokio-rt-worker")]).unwrap();
    for (tid, dur) in [(1, 30), (11, 20), (12, 10)] {
        w.write_chunk(tid, 0, &[slice(UPDATE, 0, dur)], |_, _| "").unwrap();
    }
    let bytes = w.finish(&Trailer::default()).unwrap();
    let stats = TraceStats::from_reader(Reader::new(bytes.as_slice()).unwrap()).unwrap();
    let table = stats.kinds_table(TableOptions::default(), false).to_string();
    let threads: Vec<&str> =
        table.lines().skip(1).map(|l| l.split("  update").next().unwrap().trim()).collect();
    assert_eq!(threads, ["main", "tokio-rt-worker (tid 11)", "tokio-rt-worker (tid 12)"], "{table}");
    // In JSON every per-thread row carries its tid.
    let mut json = Vec::new();
    stats.write_json(&mut json, TableOptions { sort: SortBy::Total, top: None }).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
    for key in ["threads", "kinds"] {
        let tids: Vec<u64> =
            value[key].as_array().unwrap().iter().map(|r| r["tid"].as_u64().unwrap()).collect();
        assert_eq!(tids.len(), 3, "{key}");
    }
}

#[test]
fn scopes_filed_early_are_explained_in_plain_words_with_whether_the_paths_hold() {
    // 20 sibling slices on a limit of 8: the oldest are filed early; nothing encloses them.
    let flat: Vec<Record> = (0..20).map(|i| slice(RENDER, i * 10, 5)).collect();
    let bytes = file(1.0, &[(1, 0, flat.clone())], &Trailer::default());
    let stats =
        StatsBuilder::new(&clock(1.0)).pending_limit(8).read(Reader::new(bytes.as_slice()).unwrap()).unwrap();
    assert!(stats.resolved_early > 0);
    assert_eq!((stats.pending_limit, stats.late_parents), (8, 0));
    let text = stats.problem_report().to_string();
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("at most 8 wait per thread"), "{text}");
    assert!(text.contains("Counts and durations are exact, and so are the paths"), "{text}");
    // Then a slice around all of them turns up: a late parent, and the words say what it changed.
    let late = [flat, vec![slice(UPDATE, 0, 1_000)]].concat();
    let bytes = file(1.0, &[(1, 0, late)], &Trailer::default());
    let stats =
        StatsBuilder::new(&clock(1.0)).pending_limit(8).read(Reader::new(bytes.as_slice()).unwrap()).unwrap();
    assert_eq!(stats.late_parents, 1);
    let text = stats.problem_report().to_string();
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("1 scope turned up too late to take in what it enclosed"), "{text}");
    assert!(text.contains("every other path is exact"), "{text}");
}

#[test]
fn async_slices_show_how_long_one_was_open_beside_their_summed_durations() {
    // Three overlapping requests, [0, 100], [50, 150] and [60, 70], and one apart, [300, 310]:
    // begun on thread 1, ended on thread 2, whose chunk is read first.
    let begins =
        vec![valued(REQUEST, 0, 1), valued(REQUEST, 50, 2), valued(REQUEST, 60, 3), valued(REQUEST, 300, 4)];
    let ends = vec![valued(REQUEST_END, 70, 3), valued(REQUEST_END, 100, 1), valued(REQUEST_END, 150, 2)];
    let ends = [ends, vec![valued(REQUEST_END, 310, 4)]].concat();
    let stats = stats_of(&[(2, ends), (1, begins)]);
    let a = stats.async_slices("request").unwrap();
    assert_eq!(a.durations.unwrap().total_ns, 100 + 100 + 10 + 10);
    assert_eq!((a.union_ns, a.union_error_ns), (150 + 10, 0));
    let table = stats.asyncs_table().to_string();
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..6], ["request", "4", "160", "ns", "220", "ns"], "{table}");
    assert!(table.contains("open for: the time at least one slice of the name was open"), "{table}");
    let mut json = Vec::new();
    stats.write_json(&mut json, TableOptions::default()).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let a = &value["async"][0];
    assert_eq!((a["union_ns"].as_u64(), a["union_error_ns"].as_u64()), (Some(160), Some(0)));
    assert_eq!(a["durations"]["total_ns"], 220);
    // A union that filled gaps to stay bounded says it may be over, and by how much.
    let mut stats = stats;
    stats.asyncs[0].union_error_ns = 40;
    let table = stats.asyncs_table().to_string();
    assert!(table.contains("≤ 160 ns") && table.contains("at most 40 ns too much, for request"), "{table}");
}

#[test]
fn a_lock_named_at_run_time_is_counted_under_its_name_with_the_phase() {
    let bytes = crate::test_files::lock_trace_file();
    let stats = TraceStats::from_reader(phosphor_format::file::Reader::new(&bytes[..]).unwrap()).unwrap();
    let mut kinds: Vec<(String, EventType, u64)> =
        stats.kinds.iter().map(|k| (k.name().to_owned(), k.event_type, k.count)).collect();
    kinds.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        kinds,
        [
            ("shard-1 (held)".to_owned(), EventType::LockHeld, 1),
            ("shard-1 (wait)".to_owned(), EventType::LockWait, 1),
            ("table (held)".to_owned(), EventType::LockHeld, 1),
            ("table (wait)".to_owned(), EventType::LockWait, 1),
        ]
    );
}

#[test]
fn the_statistics_are_the_same_with_the_engine_on_a_second_core() {
    // Three threads of 40,000 records each (many batches for the engine's thread): frames of
    // updates with physics inside, renders, ticks, lock waits, a stray end now and then, on a
    // coarse clock full of ties, and a pending limit low enough to resolve slices early.
    let mut chunks = Vec::new();
    let mut x = 0x9e37_79b9_u64;
    for tid in 1..=3u32 {
        let (mut records, mut ts) = (Vec::new(), 0u64);
        while records.len() < 40_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            records.push(Record::new(ts, FRAME, Meta::new(0, ArgType::None, ArgType::None), [0, 0]));
            for _ in 0..x % 5 {
                records.push(slice(PHYSICS, ts, x % 3));
                records.push(slice(UPDATE, ts, x % 4 + 2));
                records.push(mark(TICK, ts + 1));
                ts += x % 3;
            }
            records.push(slice(WAIT, ts, 1));
            if x % 97 == 0 {
                records.push(Record::new(ts, STRAY_END, Meta::new(0, ArgType::None, ArgType::None), [0, 0]));
            }
            records.push(Record::new(ts + 2, FRAME_END, Meta::new(0, ArgType::None, ArgType::None), [0, 0]));
            ts += 3;
        }
        chunks.push((tid, 0, records));
    }
    let bytes = file(1.0, &chunks, &Trailer::default());
    let stats = |background: bool| {
        let reader = Reader::new(bytes.as_slice()).unwrap();
        let builder = StatsBuilder::new(&reader.header().clock).pending_limit(500).background(background);
        builder.read(reader).unwrap()
    };
    let (here, there) = (stats(false), stats(true));
    assert!(here.events >= 120_000 && here.resolved_early > 0 && here.problem_count > 0);
    assert!(here.kinds.iter().any(|k| k.path_string() == "frame/update/physics"));
    assert_eq!(here, there);
}

#[test]
fn async_halves_past_the_most_kept_waiting_are_given_up_and_counted() {
    // 300,000 ends, each of its own id, none begun: past the model's 262,144 halves waiting,
    // each is given up at once, unbegun; the rest are unbegun at the end.
    let n = 300_000u64;
    let ends: Vec<Record> = (0..n).map(|i| valued(REQUEST_END, i, i)).collect();
    let stats = stats_of(&[(1, ends)]);
    let request = stats.async_slices("request").expect("the async name");
    assert_eq!((request.unbegun, request.unended), (n, 0));
    let kept = phosphor_model::asyncs::DEFAULT_MAX_OPEN as u64;
    assert_eq!(stats.async_given_up, n - kept);
    let text = stats.asyncs_table().to_string();
    assert!(text.contains("37,856 begins and ends were given up unmatched"), "{text}");
}

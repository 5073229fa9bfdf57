//! `processes`, `drops` and `problems` against `phosphor stats`' own figures for the same file:
//! its counts, its drops by reason and lost chunks, its scope problems and unpaired async halves;
//! and damaged files, which fail every table naming the file and the byte, never panicking.

use std::collections::BTreeMap;
use std::path::Path;

use phosphor::{
    trace_async_begin, trace_async_end, trace_begin, trace_end, trace_scope, BufferMode, TraceConfig,
    TraceLog, TraceLogConfig,
};
use phosphor_export::TraceStats;
use phosphor_format::file::Reader;
use phosphor_sql::{read_from, read_tables, Error, Table, TraceSource};

use crate::files::{recorded, scratch};
use crate::tables::{i64_at, rows, str_at, u64_at};

/// A trace recorded in a ring buffer of `ring` bytes, overflowing it on two threads.
pub fn ring_trace(ring: usize) -> Vec<u8> {
    let log = TraceLog::new(TraceLogConfig::default()).expect("a log");
    log.start(TraceConfig::new(BufferMode::Ring, ring)).expect("started");
    std::thread::scope(|s| {
        for _ in 0..2 {
            let log = &log;
            s.spawn(move || {
                for i in 0..40_000u64 {
                    trace_scope!(log: log, "app", "work", "i" => i);
                }
            });
        }
    });
    log.stop();
    log.take_trace().expect("a trace").write_to(Vec::new()).expect("written")
}

#[test]
fn processes_and_drops_give_the_statistics_counts_and_losses() {
    let bytes = ring_trace(256 << 10);
    let stats = TraceStats::from_bytes(&bytes).unwrap();
    let drops = stats.drops.clone().expect("a trailer");
    assert!(drops.overwritten > 0 && stats.lost_chunks > 0, "the ring overflowed: {drops:?}");

    let p = rows(&bytes, Table::Processes);
    assert_eq!(p.len(), 1, "one row per file");
    let (b, i) = &p[0];
    assert_eq!(u64_at(b, "events", *i), Some(stats.events));
    assert_eq!(u64_at(b, "chunks", *i), Some(stats.chunks));
    assert_eq!(u64_at(b, "threads", *i), Some(stats.threads.iter().filter(|t| t.events > 0).count() as u64));
    assert_eq!(u64_at(b, "recorded", *i), stats.recorded);
    assert_eq!(u64_at(b, "dropped", *i), Some(drops.total()));
    assert_eq!(u64_at(b, "lost_chunks", *i), Some(stats.lost_chunks));
    assert!(b
        .column_by_name("complete")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow::array::BooleanArray>()
        .unwrap()
        .value(*i));
    let span = i64_at(b, "end_ts", *i).unwrap() - i64_at(b, "start_ts", *i).unwrap();
    assert_eq!(span as u64, stats.span_ns);

    // Events by reason, each reason once; chunks lost by thread.
    let mut events: BTreeMap<String, u64> = BTreeMap::new();
    let mut lost: BTreeMap<u64, u64> = BTreeMap::new();
    for (b, i) in rows(&bytes, Table::Drops) {
        let n = u64_at(&b, "count", i).unwrap();
        match str_at(&b, "unit", i).unwrap().as_str() {
            "events" => assert!(events.insert(str_at(&b, "reason", i).unwrap(), n).is_none()),
            "chunks" => {
                assert_eq!(str_at(&b, "reason", i).as_deref(), Some("lost_chunks"));
                *lost.entry(u64_at(&b, "tid", i).expect("a thread's own stream")).or_default() += n;
            }
            other => panic!("{other}"),
        }
    }
    let want: BTreeMap<String, u64> = drops.by_reason().iter().map(|(r, n)| (r.to_string(), *n)).collect();
    assert_eq!(events, want);
    let want: BTreeMap<u64, u64> = stats
        .threads
        .iter()
        .filter(|t| t.lost_chunks > 0)
        .map(|t| (u64::from(t.tid), t.lost_chunks))
        .collect();
    assert_eq!(lost, want);
}

/// A trace whose scopes and async slices do not all add up.
fn troubled_trace() -> Vec<u8> {
    let log = TraceLog::new(TraceLogConfig::default()).expect("a log");
    log.start(TraceConfig::new(BufferMode::Fixed, 8 << 20)).expect("started");
    std::thread::scope(|s| {
        let log = &log;
        s.spawn(move || {
            trace_end!(log: log, "io", "stray");
            trace_begin!(log: log, "io", "open");
            trace_end!(log: log, "io", "close");
            trace_async_begin!(log: log, "net", "lost", 1u64);
            trace_begin!(log: log, "io", "forever");
        });
        s.spawn(move || {
            trace_async_end!(log: log, "net", "unknown", 2u64);
            trace_scope!(log: log, "app", "fine");
        });
    });
    log.stop();
    log.take_trace().expect("a trace").write_to(Vec::new()).expect("written")
}

#[test]
fn problems_are_the_statistics_scope_problems_and_unpaired_async_halves() {
    let bytes = troubled_trace();
    let stats = TraceStats::from_bytes(&bytes).unwrap();
    assert_eq!(stats.problem_count, 3, "{:?}", stats.problems);
    // (kind, tid, detail) of each scope problem, and the async halves left unpaired.
    let mut want: Vec<(String, Option<u64>, String)> = stats
        .problems
        .iter()
        .map(|p| (p.kind.as_str().to_owned(), Some(u64::from(p.tid)), p.kind.to_string()))
        .collect();
    let unended: u64 = stats.asyncs.iter().map(|a| a.unended).sum();
    let unbegun: u64 = stats.asyncs.iter().map(|a| a.unbegun).sum();
    assert_eq!((unended, unbegun), (1, 1));

    let mut got = Vec::new();
    let mut asyncs = (0, 0);
    for (b, i) in rows(&bytes, Table::Problems) {
        let kind = str_at(&b, "kind", i).unwrap();
        assert_eq!(u64_at(&b, "count", i), Some(1));
        match kind.as_str() {
            "async_unended" => asyncs.0 += 1,
            "async_unbegun" => asyncs.1 += 1,
            _ => got.push((kind, u64_at(&b, "tid", i), str_at(&b, "detail", i).unwrap())),
        }
        assert!(i64_at(&b, "ts", i).is_some() && str_at(&b, "name", i).is_some());
    }
    assert_eq!(asyncs, (unended, unbegun));
    want.sort();
    got.sort();
    assert_eq!(got, want);

    // A clean trace has none.
    assert!(rows(&recorded(1, 5), Table::Problems).is_empty());
}

#[test]
fn a_damaged_file_fails_every_table_naming_the_file_and_the_byte() {
    let dir = scratch("tables-damaged");
    let bytes = recorded(2, 40);
    for keep in [bytes.len() * 2 / 3, bytes.len() - 3] {
        let cut = dir.join(format!("cut-{keep}.phos"));
        std::fs::write(&cut, &bytes[..keep]).unwrap();
        for table in Table::ALL {
            let e = read_tables(&TraceSource::new(&cut), &[table], 100, |_, _| Ok(()))
                .expect_err("a cut file does not read whole");
            assert!(matches!(e, Error::Read(_)), "{}: {e:?}", table.name());
            let text = e.to_string();
            assert!(text.contains(&cut.display().to_string()) && text.contains("byte"), "{text}");
        }
    }
    // Bytes flipped in the middle: an error or rows, never a panic.
    let mut flipped = bytes.clone();
    for at in (bytes.len() / 3..bytes.len() / 2).step_by(97) {
        flipped[at] ^= 0x5a;
    }
    if let Ok(reader) = Reader::new(&flipped[..]) {
        let _ = read_from(reader, Path::new("flipped"), "t", &Table::ALL, 64, |_, _| Ok(()));
    }
}

#[test]
fn the_models_bounds_are_rows_of_the_file_with_the_statistics_counts() {
    // A flat thread of more slices than the nesting keeps waiting for a parent: the oldest are
    // resolved early.
    let log = TraceLog::new(TraceLogConfig::default()).expect("a log");
    log.start(TraceConfig::new(BufferMode::Fixed, 16 << 20)).expect("started");
    for i in 0..70_000u64 {
        trace_scope!(log: &log, "app", "flat", "i" => i);
    }
    log.stop();
    let flat = log.take_trace().expect("a trace").write_to(Vec::new()).expect("written");
    // More async halves waiting for their other half than the pairing keeps (ends all read
    // before their begins).
    let slices = phosphor_model::asyncs::DEFAULT_MAX_OPEN as u32 + 500;
    let waiting = phosphor_craft::Shape::AsyncsWaiting { slices }.write(Vec::new()).unwrap();

    for (bytes, kind) in [(&flat, "resolved_early"), (&waiting, "async_given_up")] {
        let stats = TraceStats::from_bytes(bytes).unwrap();
        let want = if kind == "resolved_early" { stats.resolved_early } else { stats.async_given_up };
        assert!(want > 0, "{kind}");
        let mut found = Vec::new();
        for (b, i) in rows(bytes, Table::Problems) {
            if str_at(&b, "kind", i).as_deref() == Some(kind) {
                assert_eq!((u64_at(&b, "tid", i), i64_at(&b, "ts", i)), (None, None), "a row of the file");
                found.push(u64_at(&b, "count", i).unwrap());
            }
        }
        assert_eq!(found, [want], "{kind}");
    }
}

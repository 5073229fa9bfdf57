//! Scopes named at run time (`trace_scope!(CATEGORY, dyn NAME)`): each name is its own site,
//! shared by the callsites of one category, file and line and kept apart from another
//! callsite's, as the statistics count them; the same whether a query reads the nesting or not.

use std::collections::BTreeMap;

use arrow::array::AsArray;
use arrow::datatypes::Int64Type;
use phosphor::{trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig};
use phosphor_sql::{read_columns, Table, TraceSource};

use crate::files::scratch;
use crate::slices::{batches, stats_by_path};

const STAGES: [&str; 3] = ["decode", "resize", "encode"];

/// A trace of two threads whose scopes take their names from [`STAGES`] at run time, at two
/// callsites (the second's names shifted, of another category), in a scope of a static name.
fn named_at_run_time() -> Vec<u8> {
    let log = TraceLog::new(TraceLogConfig::default()).expect("a log");
    log.start(TraceConfig::new(BufferMode::Fixed, 8 << 20)).expect("started");
    std::thread::scope(|s| {
        for _ in 0..2 {
            let log = &log;
            s.spawn(move || {
                // Enough events (thousands) that the nesting engine moves to a thread of its own.
                for i in 0..1500usize {
                    trace_scope!(log: log, "app", "item");
                    {
                        trace_scope!(log: log, "app", dyn STAGES[i % 3]);
                    }
                    trace_scope!(log: log, "io", dyn STAGES[(i + 1) % 3]);
                }
            });
        }
    });
    log.stop();
    log.take_trace().expect("a trace").write_to(Vec::new()).expect("written")
}

#[test]
fn names_chosen_at_run_time_are_counted_per_name_as_the_statistics_count_them() {
    let bytes = named_at_run_time();
    let expected = stats_by_path(&bytes);
    let mut by_path: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for b in batches(&bytes, Table::Slices, 500) {
        let path = b.column_by_name("path").unwrap().as_string::<i32>();
        let dur = b.column_by_name("dur").unwrap().as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            let e = by_path.entry(path.value(i).to_owned()).or_default();
            e.0 += 1;
            e.1 += dur.value(i) as u64;
        }
    }
    assert_eq!(by_path, expected);
    // Every stage under `item`, from the two callsites together (the paths name no category).
    for stage in STAGES {
        assert_eq!(expected.get(&format!("item/{stage}")).map(|e| e.0), Some(2 * 1000), "{expected:?}");
    }

    // Read without the nesting (no column of it asked for): per name and category, the same.
    let dir = scratch("dynamic");
    let path = dir.join("t.phos");
    std::fs::write(&path, &bytes).unwrap();
    let schema = Table::Slices.schema();
    let at = |name: &str| schema.index_of(name).unwrap();
    let per_name = |columns: &[usize]| {
        let mut got: BTreeMap<(String, String), (u64, i64)> = BTreeMap::new();
        read_columns(&TraceSource::new(&path), Table::Slices, columns, 500, |_, b| {
            let (category, name) = (b.column(0).as_string::<i32>(), b.column(1).as_string::<i32>());
            let dur = b.column(2).as_primitive::<Int64Type>();
            for i in 0..b.num_rows() {
                let e = got.entry((category.value(i).to_owned(), name.value(i).to_owned())).or_default();
                e.0 += 1;
                e.1 += dur.value(i);
            }
            Ok(())
        })
        .expect("read whole");
        got
    };
    let flat = per_name(&[at("category"), at("name"), at("dur")]);
    let nested = per_name(&[at("category"), at("name"), at("dur"), at("depth")]);
    assert_eq!(flat, nested);
    assert_eq!(flat.len(), 1 + 2 * STAGES.len(), "{flat:?}");
    assert_eq!(flat.values().map(|v| v.0).sum::<u64>(), 2 * 1500 * 3);
    std::fs::remove_dir_all(&dir).ok();
}

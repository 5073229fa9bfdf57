//! The `slices` table against the trace model as `phosphor stats` reads it: per path, the same
//! count and total duration; each slice's parent encloses it, one level up; self time is its
//! duration less its children's.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{Int64Type, UInt32Type, UInt64Type};
use arrow::record_batch::RecordBatch;
use phosphor_export::TraceStats;
use phosphor_format::file::Reader;
use phosphor_sql::{read_from, Table};

use crate::files::recorded;

/// The batches of `table` read from `bytes` in batches of `batch_rows`.
pub fn batches(bytes: &[u8], table: Table, batch_rows: usize) -> Vec<RecordBatch> {
    let reader = Reader::new(bytes).expect("a trace");
    let mut out = Vec::new();
    read_from(reader, Path::new("memory"), "t", &[table], batch_rows, |t, b| {
        assert_eq!(t, table);
        assert_eq!(b.schema(), table.schema());
        out.push(b);
        Ok(())
    })
    .expect("read whole");
    out
}

/// Per path, the count and total nanoseconds of the slices the statistics give durations to
/// (scopes, locks, begin/end pairs; a begin never ended counted, without a duration).
pub fn stats_by_path(bytes: &[u8]) -> BTreeMap<String, (u64, u64)> {
    let stats = TraceStats::from_bytes(bytes).expect("statistics");
    stats
        .paths()
        .iter()
        .filter(|k| k.event_type.has_duration())
        .map(|k| (k.path_string(), (k.count, k.durations.as_ref().map_or(0, |d| d.total_ns))))
        .collect()
}

#[test]
fn slices_count_and_add_up_per_path_as_the_statistics_do() {
    let bytes = recorded(3, 60);
    let expected = stats_by_path(&bytes);
    assert!(expected.len() >= 5, "{expected:?}");
    // Small batches: the rows cross many batch boundaries.
    let mut got: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for b in batches(&bytes, Table::Slices, 100) {
        let path = b.column_by_name("path").unwrap().as_string::<i32>();
        let dur = b.column_by_name("dur").unwrap().as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            let e = got.entry(path.value(i).to_owned()).or_default();
            e.0 += 1;
            e.1 += if dur.is_null(i) { 0 } else { dur.value(i) as u64 };
        }
    }
    assert_eq!(got, expected);
}

#[test]
fn a_slice_lies_inside_its_parent_one_level_down_and_its_self_time_excludes_its_children() {
    let bytes = recorded(2, 40);
    struct S {
        tid: u32,
        parent: Option<u64>,
        depth: u32,
        ts: i64,
        dur: i64,
        self_dur: i64,
        path: String,
    }
    let mut slices: HashMap<u64, S> = HashMap::new();
    for b in batches(&bytes, Table::Slices, 64) {
        let col = |n: &str| b.column_by_name(n).unwrap().clone();
        let (id, parent) = (col("id"), col("parent_id"));
        let (id, parent) = (id.as_primitive::<UInt64Type>(), parent.as_primitive::<UInt64Type>());
        let (tid, depth) = (col("tid"), col("depth"));
        let (tid, depth) = (tid.as_primitive::<UInt32Type>(), depth.as_primitive::<UInt32Type>());
        let (ts, dur, self_dur) = (col("ts"), col("dur"), col("self_dur"));
        let (ts, dur, self_dur) = (
            ts.as_primitive::<Int64Type>(),
            dur.as_primitive::<Int64Type>(),
            self_dur.as_primitive::<Int64Type>(),
        );
        let path = col("path");
        let path = path.as_string::<i32>();
        for i in 0..b.num_rows() {
            let s = S {
                tid: tid.value(i),
                parent: (!parent.is_null(i)).then(|| parent.value(i)),
                depth: depth.value(i),
                ts: ts.value(i),
                dur: dur.value(i),
                self_dur: self_dur.value(i),
                path: path.value(i).to_owned(),
            };
            assert!(slices.insert(id.value(i), s).is_none(), "ids are unique");
        }
    }
    let mut children: HashMap<u64, i64> = HashMap::new();
    let mut nested = 0;
    for s in slices.values() {
        assert_eq!(s.depth as usize, s.path.split('/').count(), "{}", s.path);
        let Some(p) = s.parent else {
            assert_eq!(s.depth, 1, "a slice without a parent is at the top: {}", s.path);
            continue;
        };
        nested += 1;
        let parent = &slices[&p];
        assert_eq!(parent.tid, s.tid);
        assert_eq!(parent.depth + 1, s.depth);
        assert!(s.path.starts_with(&format!("{}/", parent.path)), "{} under {}", s.path, parent.path);
        assert!(
            parent.ts <= s.ts && s.ts + s.dur <= parent.ts + parent.dur,
            "{} inside {}",
            s.path,
            parent.path
        );
        *children.entry(p).or_default() += s.dur;
    }
    assert!(nested > 100, "the trace nests: {nested}");
    for (id, s) in &slices {
        assert_eq!(s.self_dur, s.dur - children.get(id).copied().unwrap_or(0), "{}", s.path);
    }
}

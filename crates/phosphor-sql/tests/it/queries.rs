//! The queries `docs/SQL.md` shows for the tables beside the slices, run on the engine: an
//! instrumented future's polls through `flows`, dropped events per reason per file, arguments
//! joined to their slices.

use arrow::array::AsArray;
use arrow::datatypes::{Int64Type, UInt64Type};
use phosphor_export::TraceStats;
use phosphor_sql::{Session, TraceSource};

use crate::files::{recorded_file, scratch};

/// The first column of every row, as `u64`s, and the second's (the query's own types).
fn pairs(session: &Session, q: &str) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for b in session.query(q).unwrap_or_else(|e| panic!("{q}: {e}")) {
        let (a, n) = (b.column(0).as_primitive::<UInt64Type>(), b.column(1));
        for i in 0..b.num_rows() {
            let n = match n.data_type() {
                arrow::datatypes::DataType::Int64 => n.as_primitive::<Int64Type>().value(i) as u64,
                _ => n.as_primitive::<UInt64Type>().value(i),
            };
            out.push((a.value(i), n));
        }
    }
    out
}

#[test]
fn the_longest_async_slices_and_their_polls_join_through_flows() {
    let dir = scratch("queries-polls");
    let (bytes, polls) = crate::tables::asyncs_trace();
    let file = dir.join("t.phos");
    std::fs::write(&file, bytes).unwrap();
    let session = Session::new(&[TraceSource::new(&file)], None).unwrap();
    let q = "SELECT a.async_id, count(*) FROM async_slices a \
             JOIN flows f ON f.trace = a.trace AND f.async_slice_id = a.id \
             JOIN slices s ON s.trace = f.trace AND s.id = f.to_slice_id \
             WHERE a.future AND s.name = a.name GROUP BY a.async_id";
    let mut got: Vec<u64> = pairs(&session, q).into_iter().map(|(_, n)| n).collect();
    let mut want: Vec<u64> = polls.iter().map(|&p| u64::from(p)).collect();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want, "each task's polls");
    // The longest first, as the documented query orders them.
    let q = "SELECT id, dur FROM async_slices WHERE future ORDER BY dur DESC LIMIT 2";
    let batches = session.query(q).unwrap();
    let durs: Vec<i64> =
        batches.iter().flat_map(|b| b.column(1).as_primitive::<Int64Type>().values().to_vec()).collect();
    assert!(durs.len() == 2 && durs[0] >= durs[1], "{durs:?}");
}

#[test]
fn dropped_events_per_reason_per_file_is_one_query() {
    let dir = scratch("queries-drops");
    let ring = dir.join("ring.phos");
    std::fs::write(&ring, crate::losses::ring_trace(256 << 10)).unwrap();
    let fixed = recorded_file(&dir, "fixed.phos", 1, 10);
    let session = Session::new(&[TraceSource::new(&ring), TraceSource::new(&fixed)], None).unwrap();
    let q = "SELECT trace, reason, count FROM drops WHERE unit = 'events' AND count > 0 ORDER BY trace, count DESC";
    let mut got = Vec::new();
    for b in session.query(q).unwrap() {
        let (t, r, n) = (b.column(0).as_string::<i32>(), b.column(1).as_string::<i32>(), b.column(2));
        for i in 0..b.num_rows() {
            got.push((t.value(i).to_owned(), r.value(i).to_owned(), n.as_primitive::<UInt64Type>().value(i)));
        }
    }
    let mut want = Vec::new();
    for f in [&ring, &fixed] {
        let drops = TraceStats::from_bytes(&std::fs::read(f).unwrap()).unwrap().drops.unwrap();
        let d = drops.by_reason().into_iter().filter(|(_, n)| *n > 0);
        want.extend(d.map(|(r, n)| (f.display().to_string(), r.to_string(), n)));
    }
    // By file, the most first (ties in any order).
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].2 >= w[1].2)), "{got:?}");
    got.sort();
    want.sort();
    assert!(!want.is_empty());
    assert_eq!(got, want);
}

#[test]
fn a_slices_arguments_join_it_by_id() {
    let dir = scratch("queries-args");
    let file = recorded_file(&dir, "t.phos", 2, 12);
    let session = Session::new(&[TraceSource::new(&file)], None).unwrap();
    // `frame` carries its number `n`: 0 to 11 on each thread.
    let q = "SELECT a.uint_value, count(*) FROM slices s \
             JOIN args a ON a.trace = s.trace AND a.slice_id = s.id AND a.kind = 'slice' \
             WHERE s.name = 'frame' AND a.key = 'n' GROUP BY a.uint_value ORDER BY a.uint_value";
    assert_eq!(pairs(&session, q), (0..12).map(|n| (n, 2)).collect::<Vec<_>>());
    // Every argument row joins a row of its kind's table.
    let q = "SELECT count(*) FROM args a LEFT JOIN slices s ON a.slice_id = s.id \
             LEFT JOIN instants i ON a.slice_id = i.id \
             WHERE (a.kind = 'slice' AND s.id IS NULL) OR (a.kind = 'instant' AND i.id IS NULL)";
    let b = session.query(q).unwrap();
    assert_eq!(b[0].column(0).as_primitive::<Int64Type>().value(0), 0);
}

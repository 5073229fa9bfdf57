//! `Session`: SQL over trace files and Parquet folders, and its errors.

use std::collections::BTreeMap;

use arrow::array::{Array, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type, UInt64Type};
use arrow::record_batch::RecordBatch;
use phosphor_sql::{write_parquet, Error, Output, Session, TraceSource};

use crate::files::{recorded_file, scratch};
use crate::slices::stats_by_path;

/// `(path, count, total)` rows of a `GROUP BY path` query.
fn by_path(batches: &[RecordBatch]) -> BTreeMap<String, (u64, u64)> {
    let mut out = BTreeMap::new();
    for b in batches {
        // Parquet's strings read as `Utf8View`.
        let path = cast(b.column(0), &DataType::Utf8).unwrap();
        let path = path.as_string::<i32>();
        let count = b.column(1).as_primitive::<Int64Type>();
        let total = b.column(2).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            let total = if total.is_null(i) { 0 } else { total.value(i) as u64 };
            out.insert(path.value(i).to_owned(), (count.value(i) as u64, total));
        }
    }
    out
}

const BY_PATH: &str = "SELECT path, count(*), sum(dur) FROM slices GROUP BY path";

#[test]
fn sql_per_path_counts_and_durations_equal_the_statistics_from_the_file_and_from_parquet() {
    let dir = scratch("session-stats");
    let file = recorded_file(&dir, "t.phos", 3, 50);
    let expected = stats_by_path(&std::fs::read(&file).unwrap());
    let session = Session::new(&[TraceSource::new(&file)], None).expect("a session");
    assert_eq!(by_path(&session.query(BY_PATH).expect("the query runs")), expected);

    let out = dir.join("parquet");
    write_parquet(&[TraceSource::new(&file)], &out).expect("written");
    let session = Session::new(&[], Some(&out)).expect("a session on the Parquet folder");
    assert_eq!(by_path(&session.query(BY_PATH).expect("the query runs")), expected);
}

#[test]
fn several_files_make_one_table_with_a_trace_column() {
    let dir = scratch("session-many");
    let a = recorded_file(&dir, "a.phos", 1, 20);
    let b = recorded_file(&dir, "b.phos", 2, 30);
    let session = Session::new(&[TraceSource::new(&a), TraceSource::new(&b)], None).unwrap();
    let q = "SELECT trace, count(*) FROM slices WHERE path = 'frame' GROUP BY trace ORDER BY trace";
    let batches = session.query(q).unwrap();
    let rows: Vec<(String, i64)> = batches
        .iter()
        .flat_map(|b| {
            let (t, n) = (b.column(0).as_string::<i32>(), b.column(1).as_primitive::<Int64Type>());
            (0..b.num_rows()).map(|i| (t.value(i).to_owned(), n.value(i))).collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(rows, [(a.display().to_string(), 20), (b.display().to_string(), 60)]);
    // Threads: one row per thread of each file.
    let threads = session.query("SELECT count(*), sum(events) FROM threads").unwrap();
    assert_eq!(threads[0].column(0).as_primitive::<Int64Type>().value(0), 3);
    assert!(threads[0].column(1).as_primitive::<UInt64Type>().value(0) > 0);
}

#[test]
fn results_print_as_a_table_csv_or_json_lines() {
    let dir = scratch("session-print");
    let file = recorded_file(&dir, "t.phos", 1, 10);
    let session = Session::new(&[TraceSource::new(&file)], None).unwrap();
    // Inside each frame: its update scope and its read begin/end pair.
    let q = "SELECT name, count(*) AS n FROM slices WHERE depth = 2 GROUP BY name ORDER BY name";
    let print = |output| {
        let mut out = Vec::new();
        session.run(q, output, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    assert_eq!(print(Output::Csv), "name,n\nread,10\nupdate,10\n");
    assert_eq!(print(Output::Json), "{\"name\":\"read\",\"n\":10}\n{\"name\":\"update\",\"n\":10}\n");
    let table = print(Output::Table);
    assert!(table.lines().any(|l| l.split('|').map(str::trim).eq(["", "update", "10", ""])), "{table}");
}

#[test]
fn a_bad_query_is_an_error_that_names_what_is_wrong() {
    let dir = scratch("session-bad-sql");
    let file = recorded_file(&dir, "t.phos", 1, 5);
    let session = Session::new(&[TraceSource::new(&file)], None).unwrap();
    let e = session.query("SELECT nope FROM slices").unwrap_err();
    assert!(matches!(e, Error::Sql(_)) && e.to_string().contains("nope"), "{e}");
    let e = session.query("SELEC 1").unwrap_err();
    assert!(e.to_string().contains("SELEC"), "{e}");
}

#[test]
fn a_damaged_file_fails_the_query_naming_the_file_and_the_byte() {
    let dir = scratch("session-damaged");
    let file = recorded_file(&dir, "t.phos", 2, 40);
    let mut bytes = std::fs::read(&file).unwrap();
    // Cut inside the chunks: the header reads, a later block does not.
    bytes.truncate(bytes.len() * 2 / 3);
    let cut = dir.join("cut.phos");
    std::fs::write(&cut, &bytes).unwrap();
    let session = Session::new(&[TraceSource::new(&cut)], None).expect("the header reads");
    let e = session.query("SELECT count(*) FROM slices").unwrap_err();
    assert!(matches!(e, Error::Read(_)), "{e:?}");
    let text = e.to_string();
    assert!(text.contains(&cut.display().to_string()) && text.contains("byte"), "{text}");

    let not_a_trace = dir.join("not.phos");
    std::fs::write(&not_a_trace, b"hello").unwrap();
    let e = Session::new(&[TraceSource::new(&not_a_trace)], None).unwrap_err();
    assert!(e.to_string().contains(&not_a_trace.display().to_string()), "{e}");
}

//! Parquet partitioned by trace (`Layout::ByTrace`) read back as the traces' own tables, and a
//! query's result written to a file (`Session::write_file`).

use std::fs::File;
use std::path::Path;

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use phosphor_sql::{
    partition_value, write_parquet_as, Layout, Output, Session, Table, TraceSource, PART_FILE,
};

use crate::files::{recorded_file, scratch};

/// The rows of `query`, as CSV lines without the header, sorted.
fn sorted_rows(session: &Session, query: &str) -> Vec<String> {
    let mut out = Vec::new();
    session.run(query, Output::Csv, &mut out).expect("the query runs");
    let mut lines: Vec<String> = String::from_utf8(out).unwrap().lines().skip(1).map(str::to_owned).collect();
    lines.sort();
    lines
}

#[test]
fn sql_partitioned_parquet_reads_back_as_the_traces_tables_with_their_trace_column() {
    let dir = scratch("partitions");
    // Names with a `/` (the folder), `=` and `%`, which the partition's folder name escapes.
    std::fs::create_dir_all(dir.join("run=1")).unwrap();
    let a = recorded_file(&dir.join("run=1"), "a 100%.phos", 2, 30);
    let b = recorded_file(&dir, "b.phos", 1, 20);
    // Async slices and polls, and a system context: rows for every table.
    let asyncs = dir.join("asyncs.phos");
    std::fs::write(&asyncs, crate::tables::asyncs_trace().0).unwrap();
    let system = dir.join("system.phos");
    std::fs::write(&system, phosphor_craft::system::system_trace().unwrap()).unwrap();
    let sources =
        [TraceSource::new(&a), TraceSource::new(&b), TraceSource::new(&asyncs), TraceSource::new(&system)];
    let out = dir.join("tables");
    let summary = write_parquet_as(&sources, &out, Layout::ByTrace).expect("written");
    assert_eq!(summary.tables.len(), Table::ALL.len());
    for source in &sources {
        let part =
            out.join("slices").join(format!("trace={}", partition_value(&source.trace))).join(PART_FILE);
        assert!(part.is_file(), "{}", part.display());
        // The files leave `trace` out: it is the folder's.
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&part).unwrap()).unwrap();
        assert!(reader.schema().fields().iter().all(|f| f.name() != "trace"));
    }

    let traces = Session::new(&sources, None).expect("a session on the traces");
    let parquet = Session::new(&[], Some(&out)).expect("a session on the partitions");
    for table in Table::ALL {
        let query = format!("SELECT * FROM {}", table.name());
        let expected = sorted_rows(&traces, &query);
        assert!(!expected.is_empty(), "{} has rows", table.name());
        assert_eq!(sorted_rows(&parquet, &query), expected, "{}", table.name());
        // `trace` comes first, as in a trace's tables.
        let columns = |s: &Session| {
            let mut out = Vec::new();
            s.run(&format!("{query} LIMIT 0"), Output::Csv, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(columns(&parquet), columns(&traces), "{}", table.name());
    }
    let per_trace = "SELECT trace, count(*) FROM slices GROUP BY trace";
    assert_eq!(sorted_rows(&parquet, per_trace), sorted_rows(&traces, per_trace));
    assert_eq!(sorted_rows(&parquet, per_trace).len(), 4);

    // A trace converted later adds its partition; the others stay.
    let c = recorded_file(&dir, "c.phos", 1, 5);
    write_parquet_as(&[TraceSource::new(&c)], &out, Layout::ByTrace).expect("written");
    let parquet = Session::new(&[], Some(&out)).unwrap();
    assert_eq!(sorted_rows(&parquet, per_trace).len(), 5);
}

#[test]
fn sql_a_querys_result_writes_to_parquet_csv_and_json_files() {
    let dir = scratch("write-file");
    let file = recorded_file(&dir, "t.phos", 2, 40);
    let session = Session::new(&[TraceSource::new(&file)], None).unwrap();
    let query = "SELECT path, count(*) AS n, sum(dur) AS total FROM slices GROUP BY path";
    let expected = sorted_rows(&session, query);
    assert!(expected.len() > 2);

    let parquet = dir.join("result.parquet");
    let rows = session.write_file(query, Output::Parquet, &parquet).expect("written");
    assert_eq!(rows as usize, expected.len());
    // Read back as a table of a Parquet folder.
    let folder = dir.join("folder");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::rename(&parquet, folder.join("result.parquet")).unwrap();
    let back = Session::new(&[], Some(&folder)).unwrap();
    assert_eq!(sorted_rows(&back, "SELECT * FROM result"), expected);

    for (name, output) in [("r.csv", Output::Csv), ("r.json", Output::Json)] {
        let path = dir.join(name);
        assert_eq!(Output::of_file(&path), Some(output));
        session.write_file(query, output, &path).expect("written");
        let mut printed = Vec::new();
        session.run(query, output, &mut printed).unwrap();
        let lines = |text: &[u8]| {
            let mut l: Vec<String> =
                String::from_utf8(text.to_vec()).unwrap().lines().map(str::to_owned).collect();
            l.sort();
            l
        };
        assert_eq!(lines(&std::fs::read(&path).unwrap()), lines(&printed), "{name}");
    }

    // A query that fails leaves no file.
    let bad = dir.join("bad.parquet");
    assert!(session.write_file("SELECT nope FROM slices", Output::Parquet, &bad).is_err());
    assert!(!Path::new(&bad).exists());
}

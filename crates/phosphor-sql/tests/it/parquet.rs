//! `write_parquet`: one file per table, holding every row the reader makes.

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use phosphor_sql::{write_parquet, Table, TraceSource};

use crate::files::{recorded_file, scratch};
use crate::slices::batches;

#[test]
fn parquet_files_hold_each_tables_rows() {
    let dir = scratch("parquet");
    let a = recorded_file(&dir, "a.phos", 2, 30);
    let b = recorded_file(&dir, "b.phos", 1, 20);
    // Async slices, futures' polls, and what does not pair: rows of `async_slices`, `flows`
    // and `problems`.
    let c = dir.join("c.phos");
    std::fs::write(&c, crate::tables::asyncs_trace().0).unwrap();
    // And one with system context, for its tables.
    let d = dir.join("d.phos");
    std::fs::write(&d, phosphor_craft::system::system_trace().unwrap()).unwrap();
    let out = dir.join("tables");
    let files = [TraceSource::new(&a), TraceSource::new(&b), TraceSource::new(&c), TraceSource::new(&d)];
    let summary = write_parquet(&files, &out).expect("written");
    assert_eq!(summary.tables.len(), Table::ALL.len());
    for (table, path, rows) in &summary.tables {
        let expected: usize = [&a, &b, &c, &d]
            .iter()
            .map(|f| {
                batches(&std::fs::read(f).unwrap(), *table, 1000).iter().map(|b| b.num_rows()).sum::<usize>()
            })
            .sum();
        assert_eq!(*rows as usize, expected, "{}", table.name());
        let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap()).unwrap();
        assert_eq!(reader.schema().fields(), table.schema().fields());
        let read: usize = reader.build().unwrap().map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(read, expected, "{}", table.name());
        assert!(expected > 0, "{} has rows", table.name());
    }
}

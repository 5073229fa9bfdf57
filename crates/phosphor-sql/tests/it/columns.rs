//! A table read with only some of its columns (what a query's projection asks for) is the whole
//! table's rows with those columns, in the order asked; with none (a `count(*)`), its row count.

use arrow::compute::concat_batches;
use arrow::record_batch::RecordBatch;
use phosphor_sql::{read_columns, read_tables, Error, Table, TraceSource};

use crate::files::{recorded_file, scratch};

/// The batches of `table`, of its columns at `columns`, as one batch.
fn whole(table: Table, batches: Vec<RecordBatch>, columns: &[usize]) -> RecordBatch {
    let schema = table.schema().project(columns).expect("columns of the table");
    let rows = batches.iter().map(RecordBatch::num_rows).sum();
    if columns.is_empty() {
        // No column to concatenate: only the row count says anything.
        let options = arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(rows));
        return RecordBatch::try_new_with_options(std::sync::Arc::new(schema), Vec::new(), &options).unwrap();
    }
    concat_batches(&std::sync::Arc::new(schema), &batches).expect("batches of one schema")
}

fn read(source: &TraceSource, table: Table, columns: &[usize]) -> RecordBatch {
    let mut batches = Vec::new();
    read_columns(source, table, columns, 1000, |t, b| {
        assert_eq!(t, table);
        batches.push(b);
        Ok(())
    })
    .expect("read whole");
    whole(table, batches, columns)
}

#[test]
fn a_projection_is_the_whole_tables_columns() {
    let dir = scratch("columns");
    let sources = [
        // Enough events (thousands) that the nesting engine moves to a thread of its own.
        TraceSource::new(recorded_file(&dir, "t.phos", 3, 400)),
        {
            let asyncs = dir.join("asyncs.phos");
            std::fs::write(&asyncs, crate::tables::asyncs_trace().0).unwrap();
            TraceSource::new(asyncs)
        },
        {
            let system = dir.join("system.phos");
            std::fs::write(&system, phosphor_craft::system::system_trace().unwrap()).unwrap();
            TraceSource::new(system)
        },
    ];
    for table in Table::ALL {
        let n = table.schema().fields().len();
        let all: Vec<usize> = (0..n).collect();
        let mut rows = 0;
        for source in &sources {
            let mut batches = Vec::new();
            read_tables(source, &[table], 1000, |t, b| {
                assert_eq!(t, table);
                batches.push(b);
                Ok(())
            })
            .expect("read whole");
            let full = whole(table, batches, &all);
            rows += full.num_rows();
            // Every column alone, every other one backwards, and none (a `count(*)`).
            let mut projections: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
            projections.push((0..n).rev().step_by(2).collect());
            projections.push(Vec::new());
            for columns in projections {
                let got = read(source, table, &columns);
                assert_eq!(got.num_rows(), full.num_rows(), "{table:?} {columns:?} of {}", source.trace);
                let expected = full.project(&columns).expect("columns of the table");
                assert_eq!(got.columns(), expected.columns(), "{table:?} {columns:?} of {}", source.trace);
            }
        }
        assert!(rows > 0, "{} has rows in one of the traces", table.name());
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_column_past_the_tables_is_an_error_naming_it() {
    let dir = scratch("no-column");
    let source = TraceSource::new(recorded_file(&dir, "t.phos", 1, 5));
    let n = Table::Slices.schema().fields().len();
    let e = read_columns(&source, Table::Slices, &[0, n], 100, |_, _| Ok(())).unwrap_err();
    assert!(matches!(e, Error::NoColumn { table: "slices", index } if index == n), "{e}");
    assert!(e.to_string().contains("slices"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

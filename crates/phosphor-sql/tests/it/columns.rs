//! A table read with only some of its columns (what a query's projection asks for) is the whole
//! table's rows with those columns, in the order asked; with none (a `count(*)`), its row count.
//! A projection of slices or marks with no column of the nesting (ids, depths, paths, self times)
//! is read without it: the same rows, in another order.

use arrow::compute::{concat_batches, lexsort_to_indices, take_record_batch, SortColumn};
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

/// Whether a projection of `table` has a column that only the nesting gives (so its rows come in
/// the nesting's order); without one, a table of slices or marks is read without it, its rows
/// in another order.
fn nested(table: Table, columns: &[usize]) -> bool {
    let schema = table.schema();
    let names = ["id", "parent_id", "slice_id", "depth", "path", "self_dur"];
    !matches!(table, Table::Slices | Table::Instants | Table::Counters | Table::Logs)
        || columns.iter().any(|&i| names.contains(&schema.field(i).name().as_str()))
}

/// `batch`'s rows sorted by all its columns, first to last.
fn sorted(batch: RecordBatch) -> RecordBatch {
    if batch.num_columns() == 0 {
        return batch;
    }
    let keys: Vec<SortColumn> =
        batch.columns().iter().map(|c| SortColumn { values: c.clone(), options: None }).collect();
    let order = lexsort_to_indices(&keys, None).expect("sortable columns");
    take_record_batch(&batch, &order).expect("indices of its rows")
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
        // Every phase, times at the clock's edges; begins never ended.
        {
            let every = dir.join("every.phos");
            let shape = phosphor_craft::Shape::ClockRate { ns_per_tick: 2.5 };
            std::fs::write(&every, shape.write(Vec::new()).unwrap()).unwrap();
            TraceSource::new(every)
        },
        {
            let open = dir.join("open.phos");
            std::fs::write(
                &open,
                phosphor_craft::Shape::UnclosedBegins { depth: 40 }.write(Vec::new()).unwrap(),
            )
            .unwrap();
            TraceSource::new(open)
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
                let (got, expected) = if nested(table, &columns) {
                    (got, expected)
                } else {
                    // Read without the nesting: the same rows, in the order they end.
                    (sorted(got), sorted(expected))
                };
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

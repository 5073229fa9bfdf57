//! [`write_parquet`] and [`write_parquet_as`]: the tables of trace files as Parquet, one file per table in a folder
//! (`slices.parquet`, `threads.parquet`, ...), for DuckDB, Polars, pandas, Spark or Trino; or,
//! with [`Layout::ByTrace`], a folder per table partitioned by trace in the Hive style
//! (`slices/trace=demo%2Ftrace.phos/part-0.parquet`), which those engines read as partitions.
//!
//! Every file is read once, all tables together, and each batch is written as it comes, so
//! memory is a row group per table (zstd-compressed columns) plus what reading keeps.
//!
//! The writer's settings ([`writer_properties_for`], per column of each table, on
//! [`writer_properties`]) are those measured in BENCHMARKS.md ("SQL: Parquet settings").

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::datatypes::{DataType, Schema};
use arrow::record_batch::RecordBatch;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesBuilder};
use parquet::schema::types::ColumnPath;

use crate::parquet_file::{columns_but, ParquetFile};
use crate::read::{read_tables_for_parquet, TraceSource, DEFAULT_BATCH_ROWS};
use crate::tables::Table;
use crate::Error;

/// The partition column of [`Layout::ByTrace`]: the `trace` column, which the files then leave
/// out (its value is the folder's name).
pub const PARTITION_COLUMN: &str = "trace";

/// The name of the one file of a table's partition.
pub const PART_FILE: &str = "part-0.parquet";

/// How [`write_parquet`] lays the tables out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Layout {
    /// One file per table: `DIR/slices.parquet`, every trace's rows in it.
    #[default]
    OneFilePerTable,
    /// A folder per table, a sub-folder per trace named `trace=VALUE` (the value
    /// percent-encoded as Hive and Spark do: [`partition_value`]), holding [`PART_FILE`], whose
    /// columns are the table's but `trace`. Writing adds (or replaces) the partitions of the
    /// traces written and leaves the others, so a folder can grow trace by trace.
    ByTrace,
}

/// What [`write_parquet`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParquetSummary {
    /// Per table, its file (its folder, partitioned) and its rows, in [`Table::ALL`]'s order.
    pub tables: Vec<(Table, PathBuf, u64)>,
    /// Bytes written, all files together.
    pub bytes: u64,
}

/// The settings every Parquet file written starts from (and those of query results written as
/// Parquet, whose columns are not known in advance): zstd level 1, dictionary encoding with a
/// dictionary of up to 4 MiB per column chunk (a column whose values do not repeat falls back to
/// plain encoding once it is full), row groups of up to 1 Mi rows, and per-page statistics (min
/// and max, for pruning). [`writer_properties_for`] sets each column of a table's file.
pub fn writer_properties() -> WriterProperties {
    base_properties().build()
}

/// The zstd level of every page: 1, which on the 11.6 M-event trace takes 20% less CPU time than
/// 3 for a folder 4% larger (1.18 times the trace: `bench/results/2026-12-06d-pqdict.md`).
const ZSTD_LEVEL: i32 = 1;

fn base_properties() -> WriterPropertiesBuilder {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL).unwrap_or_default()))
        .set_dictionary_enabled(true)
        .set_dictionary_page_size_limit(4 << 20)
        .set_max_row_group_row_count(Some(1 << 20))
        .set_statistics_enabled(EnabledStatistics::Page)
}

/// Whether 64-bit integer column `name` holds ids or timestamps: mostly distinct values, each
/// near the one before (ids count up, a thread's times move forward), which
/// `DELTA_BINARY_PACKED` stores in a few bits each where a dictionary would store them twice.
/// `stack_id` is not one: a sample's stack repeats earlier ones, which a dictionary serves.
fn delta_encoded(name: &str) -> bool {
    (name == "id" || name.ends_with("_id") || name == "ts" || name.ends_with("_ts")) && name != "stack_id"
}

/// Columns whose values rarely repeat (JSON arguments, messages, details, argument values):
/// plain (`BYTE_STREAM_SPLIT` for floats), no dictionary, as one would fill up and be dropped
/// after costing the time to build it, or worse, be kept and cost more bytes than plain values
/// (`args.uint_value` takes 6.7 MB plain, 11.8 MB with a dictionary, on the 11.6 M-event trace).
const DISTINCT_VALUES: &[&str] = &[
    "arguments",
    "end_arguments",
    "message",
    "string_value",
    "detail",
    "int_value",
    "uint_value",
    "real_value",
];

/// The settings of a file of `schema`'s columns, as measured in BENCHMARKS.md ("SQL: Parquet
/// settings", with `examples/parquet_tune.rs`): [`writer_properties`], and per column
/// - ids and timestamps (`id`, `parent_id`, `slice_id`, `async_id`, `ts`, `end_ts`, ... but
///   `stack_id`): `DELTA_BINARY_PACKED`, no dictionary (on the 11.6 M-event trace, `slices.id`
///   takes 0.3 MB so, 21 MB with a dictionary);
/// - durations (`dur`, `self_dur`): a dictionary, as the other columns below. With the integer
///   columns encoded by hand (`parquet_ints.rs`: a cache of recent values before the hash) it
///   costs less than zstd spends on PLAIN durations, and on the 11.6 M-event trace it is also
///   smaller (`slices.dur` 9.5 MB against 10.3 MB, `self_dur` 8.4 against 8.7:
///   `bench/results/2026-12-07b-convert.md`); parquet's own writer, hashing every value, made
///   the opposite choice the better one;
/// - columns whose values rarely repeat (`DISTINCT_VALUES`: the JSON `arguments`, log
///   messages, details, argument values): plain (floats `BYTE_STREAM_SPLIT`), no dictionary;
/// - floats (counter values): a dictionary, falling back to `BYTE_STREAM_SPLIT`;
/// - every other column (repeated strings: trace, process, thread, kind, category, name, path,
///   file, key, level; 32-bit integers: pid, tid, depth, line; counts, which repeat more than
///   they differ): a dictionary, falling back to plain once it is full.
///
/// Every encoding chosen has been in the Parquet format since 2019 (2.8); `BYTE_STREAM_SPLIT`
/// for integers would save some 3 MB more on that trace but is allowed only since 2024, which
/// older readers refuse.
pub fn writer_properties_for(schema: &Schema) -> WriterProperties {
    let mut b = base_properties();
    for field in schema.fields() {
        let name = field.name().as_str();
        let column = ColumnPath::from(name);
        b = match field.data_type() {
            DataType::Int64 | DataType::UInt64 if delta_encoded(name) => b
                .set_column_dictionary_enabled(column.clone(), false)
                .set_column_encoding(column, Encoding::DELTA_BINARY_PACKED),
            DataType::Float64 if DISTINCT_VALUES.contains(&name) => b
                .set_column_dictionary_enabled(column.clone(), false)
                .set_column_encoding(column, Encoding::BYTE_STREAM_SPLIT),
            _ if DISTINCT_VALUES.contains(&name) => b
                .set_column_dictionary_enabled(column.clone(), false)
                .set_column_encoding(column, Encoding::PLAIN),
            DataType::Float64 => b.set_column_encoding(column, Encoding::BYTE_STREAM_SPLIT),
            _ => b,
        };
    }
    b.build()
}

/// Writes the tables of `sources` (their rows one after the other, each with its `trace`) into
/// `dir`, created if missing: one Parquet file per table, every table written even when empty.
/// Stops at the first file that does not read, with its error (the file and byte offset).
pub fn write_parquet(sources: &[TraceSource], dir: &Path) -> Result<ParquetSummary, Error> {
    write_parquet_as(sources, dir, Layout::OneFilePerTable)
}

/// [`write_parquet`], laid out as `layout` says.
pub fn write_parquet_as(
    sources: &[TraceSource],
    dir: &Path,
    layout: Layout,
) -> Result<ParquetSummary, Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Open { path: dir.to_path_buf(), source })?;
    match layout {
        Layout::OneFilePerTable => {
            let mut writers = Writers::new(|table| Ok(dir.join(format!("{}.parquet", table.name()))), false)?;
            for source in sources {
                writers.read(source)?;
            }
            writers.close()
        }
        Layout::ByTrace => {
            let mut seen = std::collections::HashSet::new();
            if let Some(twice) = sources.iter().find(|s| !seen.insert(&s.trace)) {
                return Err(Error::Open {
                    path: twice.path.clone(),
                    source: std::io::Error::other("given twice: a trace is one partition"),
                });
            }
            let mut summary = ParquetSummary::default();
            for source in sources {
                let folder = format!("{PARTITION_COLUMN}={}", partition_value(&source.trace));
                let mut writers = Writers::new(
                    |table| {
                        let part = dir.join(table.name()).join(&folder);
                        std::fs::create_dir_all(&part)
                            .map_err(|source| Error::Open { path: part.clone(), source })?;
                        Ok(part.join(PART_FILE))
                    },
                    true,
                )?;
                writers.read(source)?;
                let written = writers.close()?;
                summary.bytes += written.bytes;
                for (table, _, rows) in written.tables {
                    match summary.tables.iter_mut().find(|(t, ..)| *t == table) {
                        Some((_, _, total)) => *total += rows,
                        None => summary.tables.push((table, dir.join(table.name()), rows)),
                    }
                }
            }
            if sources.is_empty() {
                summary.tables = Table::ALL.iter().map(|&t| (t, dir.join(t.name()), 0)).collect();
            }
            Ok(summary)
        }
    }
}

/// A writer per table, each writing to a `.partial` file renamed to its name once closed.
struct Writers {
    writers: HashMap<Table, TableWriter>,
    /// Whether the `trace` column is left out of the files (it names their folder).
    drop_trace: bool,
}

struct TableWriter {
    writer: ParquetFile,
    path: PathBuf,
    partial: PathBuf,
    rows: u64,
}

impl Writers {
    fn new(path_of: impl Fn(Table) -> Result<PathBuf, Error>, drop_trace: bool) -> Result<Writers, Error> {
        let mut writers = HashMap::new();
        for table in Table::ALL {
            let path = path_of(table)?;
            let partial = path.with_extension("parquet.partial");
            let mut schema = table.schema();
            if drop_trace {
                let fields: Vec<_> =
                    schema.fields().iter().filter(|f| f.name() != PARTITION_COLUMN).cloned().collect();
                schema = Arc::new(Schema::new(fields));
            }
            let file =
                File::create(&partial).map_err(|source| Error::Open { path: partial.clone(), source })?;
            let by_hand = schema
                .fields()
                .iter()
                .map(|f| f.data_type() == &DataType::Utf8 && !DISTINCT_VALUES.contains(&f.name().as_str()))
                .collect();
            let props = writer_properties_for(&schema);
            let writer = ParquetFile::new(file, schema.clone(), props, ZSTD_LEVEL, by_hand)
                .map_err(|source| Error::Parquet { path: path.clone(), source })?;
            writers.insert(table, TableWriter { writer, path, partial, rows: 0 });
        }
        Ok(Writers { writers, drop_trace })
    }

    /// Reads `source`, writing its batches on a second thread as they come (reading and
    /// encoding overlap); on an error, removes the partial files.
    fn read(&mut self, source: &TraceSource) -> Result<(), Error> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<(Table, RecordBatch)>(8);
        // The batches written go back to be freed where they were made.
        let (give_back, spent) = std::sync::mpsc::channel::<RecordBatch>();
        let result = std::thread::scope(|scope| {
            let writer = scope.spawn(|| {
                for (table, batch) in rx {
                    self.write(table, &batch)?;
                    // Once the reader is done, nobody takes them: freed here then.
                    let _ = give_back.send(batch);
                }
                Ok::<(), Error>(())
            });
            let read =
                read_tables_for_parquet(source, &Table::ALL, DEFAULT_BATCH_ROWS, spent, |table, batch| {
                    // A send fails only once the writer has stopped, on an error it returns.
                    tx.send((table, batch)).map_err(|_| Error::Stopped)
                });
            drop(tx);
            let written = writer.join().unwrap_or(Err(Error::Stopped));
            match (read, written) {
                (_, Err(e)) => Err(e),
                (Err(e), Ok(())) => Err(e),
                (Ok(()), Ok(())) => Ok(()),
            }
        });
        if result.is_err() {
            for w in self.writers.values() {
                let _ = std::fs::remove_file(&w.partial);
            }
        }
        result
    }

    /// Writes a batch of `table`.
    fn write(&mut self, table: Table, batch: &RecordBatch) -> Result<(), Error> {
        let drop_trace = self.drop_trace;
        let w = self.writers.get_mut(&table).ok_or(Error::Stopped)?;
        w.rows += batch.num_rows() as u64;
        let columns = columns_but(batch, drop_trace.then_some(PARTITION_COLUMN));
        let parquet = |source| Error::Parquet { path: w.path.clone(), source };
        w.writer.write(&columns, batch.num_rows()).map_err(parquet)
    }

    /// Closes every file and gives it its name.
    fn close(mut self) -> Result<ParquetSummary, Error> {
        let mut summary = ParquetSummary::default();
        for table in Table::ALL {
            let Some(w) = self.writers.remove(&table) else { continue };
            let parquet = |source| Error::Parquet { path: w.path.clone(), source };
            w.writer.close().map_err(parquet)?;
            std::fs::rename(&w.partial, &w.path)
                .map_err(|source| Error::Open { path: w.path.clone(), source })?;
            summary.bytes += std::fs::metadata(&w.path).map(|m| m.len()).unwrap_or(0);
            summary.tables.push((table, w.path, w.rows));
        }
        Ok(summary)
    }
}

/// A trace's name as a Hive partition's folder name (after `trace=`): percent-encoded as Hive
/// and Spark escape a partition value (`/` as `%2F`, `=` as `%3D`, `%` as `%25`, control
/// characters, and `"#'*:?[\]^{` and DEL); every other byte as it is.
pub fn partition_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        let escaped = c.is_ascii_control() || "\"#%'*/:=?[\\]^{".contains(c);
        if escaped {
            out.push_str(&format!("%{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// The value a Hive partition folder's name (after `trace=`) stands for: `%XX` decoded (`None`
/// if that is not UTF-8).
pub fn partition_value_decoded(name: &str) -> Option<String> {
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_times_delta_encoded_repeated_values_and_durations_dictionary_encoded() {
        let setting = |table: Table, column: &str| {
            assert!(table.schema().field_with_name(column).is_ok(), "{} has {column}", table.name());
            let props = writer_properties_for(&table.schema());
            let path = ColumnPath::from(column);
            (props.dictionary_enabled(&path), props.encoding(&path))
        };
        let delta = (false, Some(Encoding::DELTA_BINARY_PACKED));
        for (table, column) in [
            (Table::Slices, "id"),
            (Table::Slices, "parent_id"),
            (Table::Slices, "ts"),
            (Table::Args, "slice_id"),
            (Table::AsyncSlices, "async_id"),
            (Table::Flows, "to_ts"),
        ] {
            assert_eq!(setting(table, column), delta, "{}.{column}", table.name());
        }
        for (table, column) in [
            (Table::Slices, "name"),
            (Table::Slices, "depth"),
            (Table::Args, "key"),
            (Table::Slices, "dur"),
            (Table::Slices, "self_dur"),
            (Table::AsyncSlices, "dur"),
        ] {
            assert_eq!(setting(table, column), (true, None), "{}.{column}", table.name());
        }
        assert_eq!(setting(Table::Samples, "stack_id"), (true, None));
        assert_eq!(setting(Table::Slices, "arguments"), (false, Some(Encoding::PLAIN)));
        assert_eq!(setting(Table::Args, "uint_value"), (false, Some(Encoding::PLAIN)));
        assert_eq!(setting(Table::Counters, "value"), (true, Some(Encoding::BYTE_STREAM_SPLIT)));
    }

    #[test]
    fn partition_values_round_trip_and_escape_what_hive_escapes() {
        for name in ["demo-out/trace.phos", "a=b%c", "plain.phos", "é/ü:*?", "100%", "%zz", "C:\\x\\y.phos"]
        {
            let folder = partition_value(name);
            assert!(!folder.contains('/') && !folder.contains('=') && !folder.contains('\\'), "{folder}");
            assert_eq!(partition_value_decoded(&folder).as_deref(), Some(name), "{folder}");
        }
        assert_eq!(partition_value("out/a b.phos"), "out%2Fa b.phos");
        assert_eq!(partition_value("x=1"), "x%3D1");
    }
}

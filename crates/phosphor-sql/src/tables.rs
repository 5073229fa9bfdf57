//! The tables: their names, their Arrow schemas, and the batches made from resolved rows.
//!
//! Every table starts with the columns that say where a row was recorded: `trace` (the file, as
//! named to the reader), `process`, `pid` (the file header's), then, for rows of one thread,
//! `thread` (its name, `NULL` if the file names it only later or never) and `tid`. Times are
//! nanoseconds on the file's `CLOCK_MONOTONIC` (wall-clock nanoseconds for a `CLOCK_REALTIME`
//! trace), rounded per timestamp as every Phosphor output writes them (`phosphor_model::timeline`);
//! durations are the difference of two such times. `docs/SQL.md` documents each column.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, DictionaryArray, Float64Array, Int64Array, StringArray, StringBuilder, UInt32Array, UInt64Array,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt32Type};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use phosphor_model::nesting::{PathId, Paths, DEEPER};
use phosphor_model::timeline::Timeline;

use crate::rows::Row;
use crate::sites::{Kind, SiteTable};

/// A table made from a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Table {
    /// Scopes, complete and lock events, begin/end pairs (and begins never ended), with their
    /// place in their thread's tree.
    Slices,
    /// Instants, with the slice they happened in.
    Instants,
    /// Counter samples.
    Counters,
    /// Log messages, formatted.
    Logs,
    /// One row per thread that recorded events.
    Threads,
    /// One row per argument of a slice, an instant or an async slice's begin or end.
    Args,
    /// Async begins and ends, paired by the model's rule.
    AsyncSlices,
    /// An instrumented future's async slice and its polls, linked one to the next.
    Flows,
    /// One row per file: its process, clock, extent and counts.
    Processes,
    /// Events dropped while recording, by reason, and chunks lost, per file.
    Drops,
    /// What does not add up in a trace: scopes that do not nest, unpaired async halves, ...
    Problems,
    /// Context switches of the traced threads (system context).
    Switches,
    /// Off-CPU intervals, blocked or preempted, as `phosphor stats` measures scopes against them.
    OffCpu,
    /// CPU and allocation samples, each with its stack's number and leaf function.
    Samples,
    /// The symbolized frames of each sampled stack.
    Frames,
    /// Allocation counts per slice (`phosphor/scope_alloc`).
    Allocations,
    /// The process's heap totals over time.
    Heap,
    /// The executable mappings samples are symbolized through.
    Mappings,
}

impl Table {
    /// Every table, in the order `docs/SQL.md` lists them.
    pub const ALL: [Table; 18] = [
        Table::Slices,
        Table::Instants,
        Table::Counters,
        Table::Logs,
        Table::Threads,
        Table::Args,
        Table::AsyncSlices,
        Table::Flows,
        Table::Processes,
        Table::Drops,
        Table::Problems,
        Table::Switches,
        Table::OffCpu,
        Table::Samples,
        Table::Frames,
        Table::Allocations,
        Table::Heap,
        Table::Mappings,
    ];

    /// The table's SQL name.
    pub fn name(self) -> &'static str {
        match self {
            Table::Slices => "slices",
            Table::Instants => "instants",
            Table::Counters => "counters",
            Table::Logs => "logs",
            Table::Threads => "threads",
            Table::Args => "args",
            Table::AsyncSlices => "async_slices",
            Table::Flows => "flows",
            Table::Processes => "processes",
            Table::Drops => "drops",
            Table::Problems => "problems",
            Table::Switches => "switches",
            Table::OffCpu => "off_cpu",
            Table::Samples => "samples",
            Table::Frames => "frames",
            Table::Allocations => "allocations",
            Table::Heap => "heap",
            Table::Mappings => "mappings",
        }
    }

    /// The table's columns.
    pub fn schema(self) -> SchemaRef {
        if let Some(schema) = crate::system_tables::schema(self) {
            return schema;
        }
        use DataType::{Float64, Int64, UInt32, UInt64, Utf8};
        if let Some(schema) = crate::columns::schema(self) {
            return schema;
        }
        let f = |name: &str, ty: DataType, nullable: bool| Field::new(name, ty, nullable);
        let mut fields = vec![f("trace", Utf8, false), f("process", Utf8, false), f("pid", UInt32, false)];
        if self != Table::Threads {
            fields.extend([f("thread", Utf8, true), f("tid", UInt32, false)]);
        }
        let site = |fields: &mut Vec<Field>| {
            fields.extend([f("category", Utf8, false), f("name", Utf8, false), f("path", Utf8, false)]);
            fields.extend([f("file", Utf8, false), f("line", UInt32, false)]);
        };
        match self {
            Table::Slices => {
                fields.extend([
                    f("id", UInt64, false),
                    f("parent_id", UInt64, true),
                    f("depth", UInt32, false),
                ]);
                fields.extend([f("ts", Int64, false), f("dur", Int64, true), f("self_dur", Int64, true)]);
                fields.push(f("kind", Utf8, false));
                site(&mut fields);
                fields.push(f("arguments", Utf8, true));
            }
            Table::Instants | Table::Counters | Table::Logs => {
                fields.extend([
                    f("slice_id", UInt64, true),
                    f("depth", UInt32, false),
                    f("ts", Int64, false),
                ]);
                site(&mut fields);
                match self {
                    Table::Instants => {
                        fields.push(f("arguments", Utf8, true));
                        // Added after the first release of the table: its id, for `args`.
                        fields.push(f("id", UInt64, false));
                    }
                    Table::Counters => fields.push(f("value", Float64, false)),
                    _ => fields.extend([f("level", Utf8, false), f("message", Utf8, false)]),
                }
            }
            Table::Threads => {
                fields.extend([f("thread", Utf8, true), f("tid", UInt32, false), f("events", UInt64, false)]);
            }
            // Their schemas are `columns::schema`'s and `system_tables::schema`'s, above.
            _ => {}
        }
        Arc::new(Schema::new(fields))
    }
}

/// What every row of a file says of where it was recorded.
#[derive(Clone, Copy)]
pub(crate) struct Place<'a> {
    pub(crate) trace: &'a str,
    pub(crate) process: &'a str,
    pub(crate) pid: u32,
    /// A thread's name as the file gives it by now.
    pub(crate) thread_name: &'a dyn Fn(u32) -> Option<String>,
    /// Nanoseconds added to the file's times to put them on the timeline of the files read
    /// together ([`crate::TraceSource::shift_ns`]).
    pub(crate) shift_ns: i64,
}

/// What the batches of the rows resolved by the nesting engine are made with.
pub(crate) struct Context<'a> {
    pub(crate) place: Place<'a>,
    pub(crate) sites: &'a SiteTable,
    pub(crate) paths: &'a Paths,
    pub(crate) path_names: &'a mut PathNames,
    pub(crate) timeline: &'a Timeline,
    /// Whether the string columns of few distinct values are made as `Dictionary(UInt32, Utf8)`
    /// (for the Parquet writer: [`crate::read::read_tables_for_parquet`]) rather than `Utf8`.
    pub(crate) dictionary: bool,
}

impl Place<'_> {
    /// `trace`, `process`, `pid`, and with `tids`, `thread` and `tid`, for `n` rows.
    pub(crate) fn where_columns(&self, n: usize, tids: Option<&[u32]>) -> Vec<ArrayRef> {
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(crate::columns::repeated(self.trace, n)),
            Arc::new(crate::columns::repeated(self.process, n)),
            Arc::new(UInt32Array::from_iter_values(std::iter::repeat_n(self.pid, n))),
        ];
        if let Some(tids) = tids {
            let names = crate::columns::thread_names(tids.iter().map(|&t| Some(t)), n, self.thread_name);
            cols.push(Arc::new(names));
            cols.push(Arc::new(UInt32Array::from_iter_values(tids.iter().copied())));
        }
        cols
    }

    /// The `threads` table, its columns at `columns`: `(tid, events)` by thread.
    pub(crate) fn threads(&self, threads: &[(u32, u64)], columns: &[usize]) -> RecordBatch {
        let mut cols = self.where_columns(threads.len(), None);
        cols.push(Arc::new(threads.iter().map(|&(t, _)| (self.thread_name)(t)).collect::<StringArray>()));
        cols.push(Arc::new(UInt32Array::from_iter_values(threads.iter().map(|t| t.0))));
        cols.push(Arc::new(UInt64Array::from_iter_values(threads.iter().map(|t| t.1))));
        let arrays = columns.iter().map(|&i| cols[i].clone()).collect();
        projected_batch(&Table::Threads.schema(), columns, arrays, threads.len())
    }
}

impl Context<'_> {
    /// [`Place::where_columns`].
    pub(crate) fn where_columns(&self, n: usize, tids: Option<&[u32]>) -> Vec<ArrayRef> {
        self.place.where_columns(n, tids)
    }

    /// Nanoseconds of timeline time `t`.
    pub(crate) fn ns(&self, t: u64) -> i64 {
        shifted(self.timeline.clock().to_ns(t), self.place.shift_ns)
    }

    /// The thread names of `rows`' threads, looked up once per thread.
    fn thread_names(&self, rows: &[Row]) -> StringArray {
        crate::columns::thread_names(rows.iter().map(|r| Some(r.tid)), rows.len(), self.place.thread_name)
    }

    /// Column `name` of a batch of `table` (slices, instants, counters or logs) made of `rows`.
    fn column(&mut self, table: Table, name: &str, rows: &[Row]) -> ArrayRef {
        let n = rows.len();
        let sites = self.sites;
        let site = |r: &Row| sites.get(r.payload.site);
        let dur = |d: u64| i64::try_from(d).unwrap_or(i64::MAX);
        if self.dictionary {
            if let Some(column) = self.dictionary_column(name, rows) {
                return column;
            }
        }
        match name {
            "trace" => Arc::new(crate::columns::repeated(self.place.trace, n)),
            "process" => Arc::new(crate::columns::repeated(self.place.process, n)),
            "pid" => Arc::new(UInt32Array::from_iter_values(std::iter::repeat_n(self.place.pid, n))),
            "thread" => Arc::new(self.thread_names(rows)),
            "tid" => Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.tid))),
            "id" => Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.id))),
            "parent_id" | "slice_id" => Arc::new(rows.iter().map(|r| r.parent).collect::<UInt64Array>()),
            "depth" => Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.depth))),
            "ts" => Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| self.ns(r.start)))),
            "dur" => Arc::new(rows.iter().map(|r| r.dur.map(dur)).collect::<Int64Array>()),
            "self_dur" => {
                Arc::new(rows.iter().map(|r| r.dur.map(|_| dur(r.self_dur))).collect::<Int64Array>())
            }
            "kind" => strings(rows, &|r| r.payload.kind.as_str()),
            "category" => strings(rows, &|r| site(r).category.as_str()),
            "name" => strings(rows, &|r| sites.name(site(r).label)),
            "path" => {
                let (paths, names) = (self.paths, &mut *self.path_names);
                let mut b = StringBuilder::with_capacity(n, n * 16);
                for r in rows {
                    b.append_value(names.get(paths, sites, r.path));
                }
                Arc::new(b.finish())
            }
            "file" => strings(rows, &|r| site(r).file.as_str()),
            "line" => Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| site(r).line))),
            "value" => Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.payload.value))),
            "level" => strings(rows, &|r| site(r).level.map_or("", |l| l.as_str())),
            "message" => strings(rows, &|r| r.payload.text().unwrap_or("")),
            "arguments" => Arc::new(crate::json::column(rows.iter().map(|r| r.payload.args()), n)),
            // The schemas name no other column of these tables: a bug here, which the tests
            // (every column of every table) catch.
            other => unreachable!("{other} is no column of {}", table.name()),
        }
    }

    /// Column `name` made as a dictionary, keyed by the ids the rows already carry (no value
    /// hashed): `trace` and `process` (one value), `thread` (by thread), `kind`, `category`
    /// and `file` (by site), `name` (by label) and `path` (by path id). `None` for the others.
    fn dictionary_column(&mut self, name: &str, rows: &[Row]) -> Option<ArrayRef> {
        let sites = self.sites;
        let site = |r: &Row| sites.get(r.payload.site);
        let PathNames { names, remap } = &mut *self.path_names;
        let column: DictionaryArray<UInt32Type> = match name {
            "trace" => crate::columns::repeated_dictionary(self.place.trace, rows.len()),
            "process" => crate::columns::repeated_dictionary(self.place.process, rows.len()),
            "thread" => {
                crate::columns::thread_dictionary(rows.iter().map(|r| Some(r.tid)), self.place.thread_name)
            }
            "kind" => remap.dictionary(
                rows,
                |r| r.payload.kind as u32,
                |r, b| b.append_value(r.payload.kind.as_str()),
            ),
            "category" => {
                remap.dictionary(rows, |r| r.payload.site, |r, b| b.append_value(&site(r).category))
            }
            "file" => remap.dictionary(rows, |r| r.payload.site, |r, b| b.append_value(&site(r).file)),
            "name" => {
                remap.dictionary(rows, |r| site(r).label, |r, b| b.append_value(sites.name(site(r).label)))
            }
            "path" => {
                let paths = self.paths;
                remap.dictionary(
                    rows,
                    |r| r.path,
                    |r, b| b.append_value(path_name(names, paths, sites, r.path)),
                )
            }
            _ => return None,
        };
        Some(Arc::new(column))
    }

    /// A batch of `slices`, `instants`, `counters` or `logs` (the rows all of the table's kind):
    /// its columns at `columns` (indices into the table's schema) only; with `dictionary`, some
    /// of its string columns as dictionaries, which the batch's schema says.
    pub(crate) fn rows(&mut self, table: Table, rows: &[Row], columns: &[usize]) -> RecordBatch {
        let schema = table.schema();
        let arrays: Vec<ArrayRef> =
            columns.iter().map(|&i| self.column(table, schema.field(i).name(), rows)).collect();
        if !self.dictionary {
            return projected_batch(&schema, columns, arrays, rows.len());
        }
        let fields: Vec<Field> = columns
            .iter()
            .zip(&arrays)
            .map(|(&i, a)| schema.field(i).clone().with_data_type(a.data_type().clone()))
            .collect();
        let options = RecordBatchOptions::new().with_row_count(Some(rows.len()));
        RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
            .expect("the columns follow the table's schema, some as dictionaries")
    }
}

/// Nanoseconds `t` of a file's clock, moved by `shift` onto the timeline of the files read
/// together, as a column's value (saturating).
pub(crate) fn shifted(t: u64, shift: i64) -> i64 {
    i64::try_from(i128::from(t) + i128::from(shift)).unwrap_or(if shift < 0 { i64::MIN } else { i64::MAX })
}

/// A string column of `rows`, each row's value given by `f`.
fn strings<'s>(rows: &'s [Row], f: &dyn Fn(&'s Row) -> &'s str) -> ArrayRef {
    let mut b = StringBuilder::with_capacity(rows.len(), rows.len() * 16);
    for r in rows {
        b.append_value(f(r));
    }
    Arc::new(b.finish())
}

/// The batch of `table` with `columns`, made as its schema says.
pub(crate) fn batch(table: Table, columns: Vec<ArrayRef>) -> RecordBatch {
    // The columns are made in the schema's order and types, of one length: a mismatch is a bug
    // here, which the tests catch, not a property of the file.
    RecordBatch::try_new(table.schema(), columns).expect("the columns follow the table's schema")
}

/// The batch of the columns at `columns` of `schema`, made of `arrays` (in that order) of
/// `rows` rows each: with no column at all (a `count(*)`), the batch still counts its rows.
pub(crate) fn projected_batch(
    schema: &Schema,
    columns: &[usize],
    arrays: Vec<ArrayRef>,
    rows: usize,
) -> RecordBatch {
    // As in `batch`: the indices are the schema's (checked by `read_columns`), the arrays made
    // in its types, of one length.
    let schema = schema.project(columns).expect("projected columns are the schema's");
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(Arc::new(schema), arrays, &options)
        .expect("the columns follow the table's schema")
}

/// `batch` (of its table's full schema) with only the columns at `columns`.
pub(crate) fn project(batch: RecordBatch, columns: &[usize]) -> RecordBatch {
    if columns.len() == batch.num_columns() && columns.iter().enumerate().all(|(i, &c)| i == c) {
        return batch;
    }
    let rows = batch.num_rows();
    let arrays = columns.iter().map(|&i| batch.column(i).clone()).collect();
    projected_batch(&batch.schema(), columns, arrays, rows)
}

/// Which table rows of `kind` go to.
pub(crate) fn table_of(kind: Kind) -> Table {
    match kind {
        Kind::Scope | Kind::LockWait | Kind::LockHeld => Table::Slices,
        Kind::Instant => Table::Instants,
        Kind::Counter => Table::Counters,
        Kind::Log => Table::Logs,
    }
}

/// Paths spelled out (`frame/update/physics`), once each, by path id; and the [`Remap`] the
/// dictionary columns are made with, kept from batch to batch.
#[derive(Debug, Default)]
pub(crate) struct PathNames {
    names: Vec<Option<Box<str>>>,
    remap: Remap,
}

impl PathNames {
    /// Path `path`'s names joined by `/` (the depth cap's marker as `[deeper than N]`).
    pub(crate) fn get(&mut self, paths: &Paths, sites: &SiteTable, path: PathId) -> &str {
        path_name(&mut self.names, paths, sites, path)
    }
}

/// [`PathNames::get`].
fn path_name<'n>(
    names: &'n mut Vec<Option<Box<str>>>,
    paths: &Paths,
    sites: &SiteTable,
    path: PathId,
) -> &'n str {
    {
        let at = path as usize;
        if at >= names.len() {
            names.resize(at + 1, None);
        }
        if names[at].is_none() {
            let mut s = String::new();
            for label in paths.labels(path) {
                if !s.is_empty() {
                    s.push('/');
                }
                if label == DEEPER {
                    s.push_str(&format!("[deeper than {}]", paths.max_depth()));
                } else {
                    s.push_str(sites.name(label));
                }
            }
            names[at] = Some(s.into_boxed_str());
        }
        names[at].as_deref().unwrap_or("")
    }
}

/// Dense dictionary keys from ids (site, label, path numbers: small, dense), without hashing: a
/// slot per id, stamped with the column being made.
#[derive(Debug, Default)]
pub(crate) struct Remap {
    /// Per id, the column it was last seen in, and its key there.
    seen: Vec<(u32, u32)>,
    column: u32,
}

impl Remap {
    /// A dictionary column of `rows`: each row's key by its `id`, each id's value (appended by
    /// `value` of the first row with it) once, in the order first seen.
    pub(crate) fn dictionary(
        &mut self,
        rows: &[Row],
        id: impl Fn(&Row) -> u32,
        mut value: impl FnMut(&Row, &mut StringBuilder),
    ) -> DictionaryArray<UInt32Type> {
        self.column = self.column.wrapping_add(1);
        if self.column == 0 {
            // Stamps start again: none may look current.
            self.seen.iter_mut().for_each(|s| *s = (0, 0));
            self.column = 1;
        }
        let mut values = StringBuilder::new();
        let mut keys = Vec::with_capacity(rows.len());
        let mut distinct = 0u32;
        for r in rows {
            let at = id(r) as usize;
            if at >= self.seen.len() {
                self.seen.resize(at + 1, (0, 0));
            }
            let (column, key) = self.seen[at];
            if column == self.column {
                keys.push(key);
            } else {
                self.seen[at] = (self.column, distinct);
                keys.push(distinct);
                value(r, &mut values);
                distinct += 1;
            }
        }
        DictionaryArray::new(UInt32Array::from(keys), Arc::new(values.finish()))
    }
}

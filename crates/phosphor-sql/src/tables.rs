//! The tables: their names, their Arrow schemas, and the batches made from resolved rows.
//!
//! Every table starts with the columns that say where a row was recorded: `trace` (the file, as
//! named to the reader), `process`, `pid` (the file header's), then, for rows of one thread,
//! `thread` (its name, `NULL` if the file names it only later or never) and `tid`. Times are
//! nanoseconds on the file's `CLOCK_MONOTONIC` (wall-clock nanoseconds for a `CLOCK_REALTIME`
//! trace), rounded per timestamp as every Phosphor output writes them (`phosphor_model::timeline`);
//! durations are the difference of two such times. `docs/SQL.md` documents each column.

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray, UInt32Array, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use phosphor_model::nesting::{PathId, Paths, DEEPER};
use phosphor_model::timeline::Timeline;

use crate::rows::Row;
use crate::sites::{Kind, Sites};

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

/// What the batches of one file are made with.
pub(crate) struct Context<'a> {
    pub(crate) trace: &'a str,
    pub(crate) process: &'a str,
    pub(crate) pid: u32,
    pub(crate) thread_name: &'a dyn Fn(u32) -> Option<String>,
    pub(crate) sites: &'a Sites,
    pub(crate) paths: &'a Paths,
    pub(crate) path_names: &'a mut PathNames,
    pub(crate) timeline: &'a Timeline,
}

impl Context<'_> {
    /// `trace`, `process`, `pid`, and with `tids`, `thread` and `tid`, for `n` rows.
    pub(crate) fn where_columns(&self, n: usize, tids: Option<&[u32]>) -> Vec<ArrayRef> {
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n(self.trace, n))),
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n(self.process, n))),
            Arc::new(UInt32Array::from_iter_values(std::iter::repeat_n(self.pid, n))),
        ];
        if let Some(tids) = tids {
            let mut names: Vec<(u32, Option<String>)> = Vec::new();
            let name =
                |tid: u32, names: &mut Vec<(u32, Option<String>)>| match names.iter().find(|n| n.0 == tid) {
                    Some((_, n)) => n.clone(),
                    None => {
                        let n = (self.thread_name)(tid);
                        names.push((tid, n.clone()));
                        n
                    }
                };
            cols.push(Arc::new(tids.iter().map(|&t| name(t, &mut names)).collect::<StringArray>()));
            cols.push(Arc::new(UInt32Array::from_iter_values(tids.iter().copied())));
        }
        cols
    }

    /// Nanoseconds of timeline time `t`.
    pub(crate) fn ns(&self, t: u64) -> i64 {
        i64::try_from(self.timeline.clock().to_ns(t)).unwrap_or(i64::MAX)
    }

    /// The columns `category`, `name`, `path`, `file`, `line` of `rows`.
    fn site_columns(&mut self, rows: &[Row]) -> Vec<ArrayRef> {
        let sites = self.sites;
        let site = |r: &Row| sites.get(r.payload.site);
        let (paths, names) = (self.paths, &mut *self.path_names);
        let path: StringArray =
            rows.iter().map(|r| Some(names.get(paths, sites, r.path).to_owned())).collect();
        vec![
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| site(r).category.as_str()))),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| sites.name(site(r).label)))),
            Arc::new(path),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| site(r).file.as_str()))),
            Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| site(r).line))),
        ]
    }

    /// A batch of `slices`.
    pub(crate) fn slices(&mut self, rows: &[Row]) -> RecordBatch {
        let tids: Vec<u32> = rows.iter().map(|r| r.tid).collect();
        let mut cols = self.where_columns(rows.len(), Some(&tids));
        let dur = |d: u64| i64::try_from(d).unwrap_or(i64::MAX);
        cols.push(Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.id))));
        cols.push(Arc::new(rows.iter().map(|r| r.parent).collect::<UInt64Array>()));
        cols.push(Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.depth))));
        cols.push(Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| self.ns(r.start)))));
        cols.push(Arc::new(rows.iter().map(|r| r.dur.map(dur)).collect::<Int64Array>()));
        cols.push(Arc::new(rows.iter().map(|r| r.dur.map(|_| dur(r.self_dur))).collect::<Int64Array>()));
        cols.push(Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.payload.kind.as_str()))));
        cols.extend(self.site_columns(rows));
        cols.push(Arc::new(rows.iter().map(|r| r.payload.text.as_deref()).collect::<StringArray>()));
        batch(Table::Slices, cols)
    }

    /// A batch of `instants`, `counters` or `logs` (the rows all of its kind).
    pub(crate) fn marks(&mut self, table: Table, rows: &[Row]) -> RecordBatch {
        let tids: Vec<u32> = rows.iter().map(|r| r.tid).collect();
        let mut cols = self.where_columns(rows.len(), Some(&tids));
        cols.push(Arc::new(rows.iter().map(|r| r.parent).collect::<UInt64Array>()));
        cols.push(Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.depth))));
        cols.push(Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| self.ns(r.start)))));
        cols.extend(self.site_columns(rows));
        match table {
            Table::Counters => {
                cols.push(Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.payload.value))));
            }
            Table::Logs => {
                let level = |r: &Row| self.sites.get(r.payload.site).level.map_or("", |l| l.as_str());
                cols.push(Arc::new(StringArray::from_iter_values(rows.iter().map(level))));
                let messages = rows.iter().map(|r| r.payload.text.as_deref().unwrap_or(""));
                cols.push(Arc::new(StringArray::from_iter_values(messages)));
            }
            _ => {
                cols.push(Arc::new(rows.iter().map(|r| r.payload.text.as_deref()).collect::<StringArray>()));
                cols.push(Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.id))));
            }
        }
        batch(table, cols)
    }

    /// The `threads` table: `(tid, events)` by thread.
    pub(crate) fn threads(&self, threads: &[(u32, u64)]) -> RecordBatch {
        let mut cols = self.where_columns(threads.len(), None);
        cols.push(Arc::new(threads.iter().map(|&(t, _)| (self.thread_name)(t)).collect::<StringArray>()));
        cols.push(Arc::new(UInt32Array::from_iter_values(threads.iter().map(|t| t.0))));
        cols.push(Arc::new(UInt64Array::from_iter_values(threads.iter().map(|t| t.1))));
        batch(Table::Threads, cols)
    }
}

/// The batch of `table` with `columns`, made as its schema says.
pub(crate) fn batch(table: Table, columns: Vec<ArrayRef>) -> RecordBatch {
    // The columns are made above in the schema's order and types, of one length: a mismatch is
    // a bug here, which the tests catch, not a property of the file.
    RecordBatch::try_new(table.schema(), columns).expect("the columns follow the table's schema")
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

/// Paths spelled out (`frame/update/physics`), once each, by path id.
#[derive(Debug, Default)]
pub(crate) struct PathNames {
    names: Vec<Option<Box<str>>>,
}

impl PathNames {
    /// Path `path`'s names joined by `/` (the depth cap's marker as `[deeper than N]`).
    pub(crate) fn get(&mut self, paths: &Paths, sites: &Sites, path: PathId) -> &str {
        let at = path as usize;
        if at >= self.names.len() {
            self.names.resize(at + 1, None);
        }
        if self.names[at].is_none() {
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
            self.names[at] = Some(s.into_boxed_str());
        }
        self.names[at].as_deref().unwrap_or("")
    }
}

//! Phosphor traces as SQL tables.
//!
//! # Brief overview
//!
//! * [`read_tables`] reads a trace file in one streaming pass into Arrow [`RecordBatch`]es of
//!   the [`Table`]s asked for: `slices` (each scope with its id, parent, depth, path, self time
//!   and arguments), `instants`, `counters`, `logs`, `threads`. The rows come from the trace
//!   model (`phosphor_model`: its nesting, its timeline, the statistics' names), so per path the
//!   slices count and add up as `phosphor stats` does.
//!   Beside them, from the same model: `args` (each argument, typed), `async_slices` (paired as
//!   every tool pairs them), `flows` (a future's async slice linked to its polls), `processes`,
//!   `drops` (by reason, and lost chunks) and `problems` (what `phosphor stats` reports as wrong).
//!   A trace's system context (format 1.6)
//!   makes `switches`, `off_cpu`, `samples`, `frames`, `heap` and `mappings`, and its per-scope
//!   allocation counts `allocations`, as the statistics see them (`phosphor_export`'s
//!   `SystemContext` and `Symbolizer`).
//! * [`write_parquet`] writes those tables as Parquet files, one per table, for any engine;
//!   [`write_parquet_as`] also partitioned by trace in the Hive style ([`Layout::ByTrace`]).
//! * [`Session`] (feature `engine`, on by default) registers the tables of trace files, or of a
//!   Parquet folder, in an embedded DataFusion session and runs SQL over them, printing results
//!   as a table, CSV or JSON Lines ([`Output`]).
//!
//! Without the `engine` feature the crate needs Arrow and Parquet only: DataFusion is most of
//! its build (see docs/internals/phosphor-sql.md for the figures).
//!
//! [`RecordBatch`]: arrow::record_batch::RecordBatch

mod allocations;
mod args_table;
mod asyncs_table;
mod batches;
mod columns;
#[cfg(feature = "engine")]
mod engine;
mod error;
mod file_tables;
mod flows_table;
mod json;
mod parquet_dict;
mod parquet_file;
mod parquet_ints;
mod parquet_out;
mod parquet_pages;
mod problems_table;
mod read;
mod rows;
mod sites;
mod system_tables;
mod tables;

#[cfg(feature = "engine")]
pub use engine::{is_parquet_folder, Output, Session};
pub use error::Error;
pub use parquet_out::{
    partition_value, partition_value_decoded, write_parquet, write_parquet_as, writer_properties,
    writer_properties_for, Layout, ParquetSummary, PARTITION_COLUMN, PART_FILE,
};
pub use read::{align, read_columns, read_from, read_tables, TraceSource, DEFAULT_BATCH_ROWS};
pub use tables::Table;

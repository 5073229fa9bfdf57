//! Phosphor's exporters: what a trace file turns into for people and viewers.
//!
//! # Brief overview
//!
//! * [`TraceStats`] summarises a trace file, read in one streaming pass by
//!   [`TraceStats::from_reader`] (or fed event by event to a [`StatsBuilder`]):
//!   * [`KindStats`]: per event kind, a scope path on one thread (`frame/update/physics` on
//!     `worker-1`, as Palanteer has them; a [`ScopePath`], interned), the count and, for scopes,
//!     [`DurationStats`] (total, min, mean, p50, p99, max in nanoseconds; the percentiles exact up
//!     to [`EXACT_SAMPLES`] durations, then within [`PERCENTILE_ERROR`]); also per path across
//!     threads;
//!   * [`ThreadStats`]: events and lost chunks per thread, with the thread's name;
//!   * [`AsyncStats`]: async slices paired by name and id across threads: their durations, and
//!     how long at least one was open (the union of their intervals);
//!   * [`ScopeProblem`]s: ends without a begin or with another name, begins left open,
//!     interlaced scopes, each with its thread and time;
//!   * the trailer's drop counts by reason and the chunks lost to sequence gaps ([`ChunkLosses`]).
//! * Its `Display` renders aligned plain-text tables ([`TraceStats::report`] with
//!   [`TableOptions`] to choose the order and the number of rows; each table on its own too), and
//!   [`TraceStats::write_json`] writes JSON.
//!
//! ```
//! use phosphor::{trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig};
//! use phosphor_export::TraceStats;
//!
//! let log = TraceLog::new(TraceLogConfig::default()).unwrap();
//! log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
//! for _ in 0..3 {
//!     trace_scope!(log: &log, "app", "frame");
//! }
//! log.stop();
//! let trace = log.take_trace().unwrap();
//! // From memory here (the bytes of the file `Trace::save` would write);
//! // `TraceStats::from_reader` reads a saved file in bounded memory.
//! let stats = TraceStats::from_bytes(&trace.write_to(Vec::new()).unwrap()).unwrap();
//! assert_eq!(stats.path(&["frame"]).unwrap().count, 3);
//! println!("{stats}");
//! ```
//!
//! [`chrome`] streams a trace file into Chrome JSON; [`folded`] folds one into stacks of self time
//! and draws them as an SVG flame graph; [`perfetto`] writes Perfetto's protobuf. [`diff`] compares
//! two trace files path by path, for `phosphor diff` and its CI gate. Statistics and
//! folded stacks find which scope encloses which with the same engine (`nesting.rs`).
//! [`timeline::align`] places several files on one timeline (by `CLOCK_MONOTONIC` within a boot,
//! else by the wall clock), for the merged exports and the viewer.
//!
//! **Architecture invariant:** only this crate knows output formats.

mod async_union;
mod asyncs;
pub mod chrome;
mod chrome_time;
pub mod diff;
mod diff_json;
mod diff_stats;
mod diff_text;
mod durations;
mod error;
pub mod folded;
pub mod frames;
mod kinds;
mod labels;
#[cfg(test)]
mod layers_tests;
pub mod logs;
mod logs_window;
pub mod long_polls;
mod losses;
#[cfg(test)]
mod memory_tests;
pub mod perfetto;
pub mod sample_stacks;
mod scope_path;
mod scope_system;
mod scopes;
#[cfg(test)]
mod sizes_tests;
mod stacks;
mod stats;
mod stats_files;
mod stats_json;
pub mod symbolize;
pub mod system;
mod system_text;
pub mod tasks;
#[cfg(test)]
mod tasks_tests;
mod tasks_text;
#[cfg(test)]
mod test_files;
mod text;
pub mod timeline;

pub use diff::{DiffOptions, DiffRowJson, DiffSide, FailOn, TraceDiff};
pub use durations::{DurationStats, Durations, EXACT_SAMPLES, PERCENTILE_DIGITS, PERCENTILE_ERROR};
pub use losses::ChunkLosses;
pub use phosphor_model::names::{shown as shown_name, NameSet, MAX_NAME_BYTES, NAME_CUT_MARK};
pub use phosphor_model::nesting::{DEFAULT_MAX_DEPTH, DEFAULT_PENDING_LIMIT};
pub use scope_path::ScopePath;
pub use scope_system::{ScopeSystem, TOP_FUNCTIONS};
pub use scopes::{ScopeProblem, ScopeProblemKind};
pub use stats::{
    AggregateStats, AsyncStats, EventType, KindStats, LogStats, Paths, PathsIter, Saturation, StatsBuilder,
    StatsError, SystemSummary, ThreadStats, TraceStats, MAX_PROBLEM_EXAMPLES,
};
pub use stats_files::FilesStats;
pub use system_text::describe_status;
pub use text::{format_count, format_drops, format_ns, SortBy, TableOptions};

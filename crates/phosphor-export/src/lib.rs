//! Phosphor's exporters: what a finished [`phosphor::Trace`] turns into for people and viewers.
//!
//! # Brief overview
//!
//! * [`TraceStats`] summarises a trace, computed by [`TraceStats::from_trace`]:
//!   * [`ThreadStats`]: events per thread, with the thread's name;
//!   * [`KindStats`]: events per kind (category, name, phase), with [`DurationStats`] (min, mean,
//!     exact p50 and p99, max, in nanoseconds) for kinds that last: complete and lock events,
//!     begin/end pairs and async pairs;
//!   * [`Mismatch`]es: an end that does not close the innermost open begin of its thread, an end
//!     with nothing open, a begin never closed;
//!   * the trace's drop counts by reason.
//! * Its `Display` renders plain-text tables; [`TraceStats::threads_table`],
//!   [`TraceStats::kinds_table`], [`TraceStats::drops_summary`] and
//!   [`TraceStats::mismatch_report`] render one part each.
//!
//! ```
//! use phosphor::{trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig};
//! use phosphor_export::TraceStats;
//!
//! let log = TraceLog::new(TraceLogConfig::default()).unwrap();
//! log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
//! for _ in 0..3 {
//!     trace_scope!(log: &log, "app", "work");
//! }
//! log.stop();
//! let trace = log.take_trace().unwrap();
//! let stats = TraceStats::from_trace(&trace).unwrap();
//! assert_eq!(stats.kinds[0].count, 3);
//! println!("{stats}");
//! ```
//!
//! [`chrome`] streams a trace file into Chrome JSON; [`folded`] folds one into stacks of self time
//! and draws them as an SVG flame graph. Later: Perfetto protobuf.
//!
//! **Architecture invariant:** only this crate knows output formats.

pub mod chrome;
mod error;
pub mod folded;
pub mod perfetto;
mod scopes;
mod stats;
mod text;

pub use scopes::{Mismatch, MismatchKind};
pub use stats::{DurationStats, KindStats, ThreadStats, TraceStats, MAX_MISMATCH_EXAMPLES};
pub use text::{format_count, format_drops, format_ns};

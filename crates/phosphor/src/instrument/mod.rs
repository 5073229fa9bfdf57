//! What instrumentation calls: the argument types, `emit` (the macros' hot path into
//! `TraceLog::write_event`), logs, traced futures, and the run-time point API with its bridge for
//! other instrumentation. The top of the recording path: it takes the `TraceLog` and everything
//! below it; only `control` and the macros are above it.

pub(crate) mod arg;
pub mod bridge;
pub(crate) mod emit;
pub mod future;
pub(crate) mod logs;
pub mod points;

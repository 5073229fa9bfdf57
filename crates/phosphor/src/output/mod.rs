//! A recorded trace read back: [`Trace`](crate::Trace) and its decoded events, the trace file it
//! saves to (with the machine it ran on, `host.rs`), and the check of static string addresses that decoding relies on. It reads the
//! recording path's buffers and the registry's callsites; it does not know the `TraceLog`.

pub(crate) mod addr;
pub(crate) mod host;
pub(crate) mod trace;
pub(crate) mod trace_file;

//! The trace model every Phosphor tool reads a trace through: where events become slices.
//!
//! `phosphor-format` decodes a file into events; this crate decides what they mean, once, for
//! statistics, diffs, folded stacks and flame graphs, the Perfetto and Chrome writers, OpenTelemetry
//! spans and the viewer's index:
//!
//! * [`timeline`]: the times slices are nested and measured on: nanoseconds, rounded per
//!   timestamp as the outputs write them, so that a tie in an output is a tie here;
//! * [`nesting`]: each thread's tree of slices (scopes, begin/end pairs, complete and lock
//!   events, marks), built from a stream in which a complete event arrives after the slices
//!   nested in it, with one rule for an end whose begin has another name (it closes the innermost
//!   open begin, and is reported), bounded memory, and paths interned in a trie;
//! * [`background`]: the engine fed on the caller's thread and run on a second core;
//! * [`ordered`]: each thread's slices handed to a writer of begins and ends in the order its
//!   client rebuilds that tree (Perfetto's trace processor, Chrome JSON viewers);
//! * [`names`]: names as the outputs show them: cut at [`names::MAX_NAME_BYTES`], a lock's
//!   callsite shown as `NAME (wait)` / `NAME (held)` everywhere;
//! * [`problems`] (scopes that do not nest, named), [`flows`] (a future's async slice linked to
//!   its polls) and [`losses`] (chunks lost from their stream's sequence), for the statistics,
//!   the writers and the SQL tables alike.
//!
//! It depends on the format only: reading a trace never needs the recording runtime.

pub mod asyncs;
pub mod background;
pub mod event_type;
pub mod flows;
pub mod losses;
pub mod names;
pub mod nesting;
pub mod ordered;
mod paths;
pub mod problems;
mod siblings;
pub mod timeline;

#[cfg(test)]
mod test_rng;

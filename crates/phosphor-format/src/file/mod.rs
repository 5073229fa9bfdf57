//! The trace file: a versioned sequence of blocks, written by [`Writer`] and read back, in constant
//! memory, by [`Reader`].
//!
//! # Brief overview
//!
//! ```text
//! preamble  "PHOSPHOR", major u16, minor u16, 4 reserved bytes
//! block*    kind u32, len u32, body [u8; len]
//!   header     clock and process (first)
//!   strings    interned strings (appended to the string table)
//!   callsites  callsite definitions, referring to strings
//!   threads    thread names
//!   chunk      extents (tid, seq, counts, first/last timestamp), then the 32-byte records
//!   aggregates snapshots of sums and histograms (1.2)
//!   system     context switches, CPU samples, mappings, heap totals (1.6)
//!   compressed a group of the blocks above, compressed (1.7)
//!   trailer    recorded and dropped counters (last)
//! ```
//!
//! Everything is little-endian. Each block says its kind and length, so a reader skips kinds it
//! does not know (unless marked critical); that is how a later minor version adds blocks that old
//! readers still read past. The blocks can be written as the trace is produced, so a streaming
//! collector can write the same format. `docs/FORMAT.md` at the repository root is the full
//! specification.
//!
//! * [`Writer`] writes the blocks; [`Reader`] reads them, lending one [`Chunk`] at a time.
//! * [`Chunk::events`] decodes a chunk's events into [`Event`]s with callsites and strings resolved.
//! * [`StringTable`] holds each string of the file once; the [`Callsite`]s and thread names a
//!   reader lends refer to it through [`TableStr`] handles.
//! * [`Error`] names the byte offset of every problem; its [`ErrorKind`] says what it was.

pub mod ack;
mod aggregates;
mod ahead;
mod bytes;
mod chunk;
mod compress;
mod error;
mod event;
mod header;
mod held;
pub mod raw;
mod reader;
pub mod ring;
mod strings;
mod system_block;
mod tables;
mod transform;
mod writer;

pub use crate::clock::{ClockInfo, ClockKind};
pub use aggregates::{Aggregate, AggregateKind};
pub use ahead::READ_AHEAD_BYTES;
pub use chunk::{Chunk, Extents, EXTENTS_BYTES, SEQ_STREAM_SHIFT};
pub use compress::{split_virtual, transform_group, Compression, MAX_GROUP_BYTES, VIRTUAL_OFFSET};
pub use error::{Error, ErrorKind};
pub use event::{ChunkEvents, Event, ParamValues, Params, Value};
pub use header::{
    format_boot_id, kind, parse_boot_id, BootId, DropCounts, Header, Trailer, BLOCK_HEADER_BYTES,
    FORMAT_MAJOR, FORMAT_MINOR, MAGIC, MAX_BLOCK_BYTES, PREAMBLE_BYTES,
};
pub use held::{HeldEvents, TableSet};
pub use reader::{Block, Reader};
pub use strings::{StringTable, TableStr};
pub use system_block::{MAX_BUILD_ID_BYTES, MAX_PATH_BYTES, MAX_SYSTEM_ENTRIES, MAX_SYSTEM_FRAMES};
pub use tables::{Callsite, CallsiteInfo, RawCallsite, CALLSITE_FLOW_ARG0, CALLSITE_NAME_FROM_ARG0};
pub use writer::Writer;

//! The bytes of a Phosphor trace.
//!
//! # Brief overview
//!
//! * [`Record`] is the 32-byte unit every event is stored in: a raw clock value, a callsite id, a
//!   [`Meta`] word and two 8-byte slots.
//! * [`Meta`] describes the event's payload: argument types, how many leading words (a duration, an
//!   async id) come before the arguments, and how many continuation records follow.
//! * [`Phase`] and [`ArgType`] are the closed vocabularies stored in callsites and records.
//! * [`decode_event`] turns a run of records back into a [`RawEvent`], checking every length, so that
//!   corrupt input yields a [`DecodeError`] and never a panic.
//! * [`chunk`] holds the chunk geometry shared by the runtime and the readers.
//! * [`file`](mod@file) is the versioned trace file: [`file::Writer`] and the streaming [`file::Reader`].
//!
//! **Invariant:** this crate is the only place that knows the byte layout. The runtime builds records
//! through [`Record::new`] and [`encode_continuation`]; the tools read them through [`decode_event`].

pub mod chunk;
pub mod clock;
mod decode;
pub mod file;
mod glob;
mod hash;
pub mod hist;
mod id_map;
mod level;
pub mod logfmt;
mod record;
pub mod system;
pub mod trace_context;

pub use clock::{ClockInfo, ClockKind};
pub use decode::{count_events, decode_event, ArgWord, DecodeError, ParamIter, RawEvent, RawParams};
pub use glob::glob_match;
pub use hash::fnv1a64;
pub use id_map::{IdMap, Iter as IdMapIter};
pub use level::{Level, ParseLevelError};
pub use record::{
    continuation_records, encode_continuation, pack_static_str, params_desc, unpack_static_str, ArgType,
    Meta, Phase, Record, MAX_ARGS, MAX_DYN_STR_BYTES, MAX_LEAD_WORDS, MAX_PARAMS,
};

/// Callsite ids below this value are reserved for records that are not events.
pub const FIRST_CALLSITE_ID: u32 = 16;

/// A record with this id marks that the following records were written by another thread.
///
/// Slot 0 holds the new thread id. Only tenants shared by several threads (the pool) write it.
pub const ID_THREAD_SWITCH: u32 = 1;

//! The registry: what can be recorded. Callsites and their ids and enabled bits, the kinds and
//! selectors of points, categories and groups, interned strings, aggregates, and the ring file's
//! callsite metadata. Below the recording path, which looks callsites up; it uses only the base
//! modules (`sync`, `alloc`, `error`).

#[cfg(not(loom))]
pub(crate) mod aggregate;
#[cfg(not(loom))]
pub(crate) mod callsite;
pub(crate) mod category;
#[cfg(not(loom))]
pub(crate) mod crash_list;
#[cfg(not(loom))]
mod group;
pub(crate) mod intern;
#[cfg(not(loom))]
pub(crate) mod point;
#[cfg(all(not(loom), unix))]
pub(crate) mod ring_file;
pub(crate) mod site_cache;
#[cfg(not(loom))]
mod table;
pub(crate) mod trigger_gate;

/// The most `TraceLog`s that can exist at once, the global one included.
pub const MAX_LOGS: usize = 32;

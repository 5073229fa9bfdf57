//! Phosphor: a low-overhead in-process event tracer.
//!
//! # Brief overview
//!
//! * The macros ([`trace_scope!`], [`trace_instant!`], [`trace_counter!`], [`trace_begin!`] /
//!   [`trace_end!`], [`trace_complete!`], [`trace_async_begin!`] / [`trace_async_end!`],
//!   [`trace_lock_guard!`]) record events at about the cost of one clock read: no allocation, no
//!   lock, no system call.
//! * [`TraceLog`] starts and stops traces. [`TraceLogConfig`] is its one-time configuration (clock,
//!   tenant policy); [`TraceConfig`] configures one trace (buffer mode and size, categories, stop
//!   callback).
//! * A stopped trace is a [`Trace`]: its [`Event`]s decoded, plus [`Stats`] that account for every
//!   event, recorded or dropped.
//!
//! ```
//! use phosphor::{trace_instant, trace_scope, BufferMode, TraceConfig, TraceLog};
//!
//! let log = TraceLog::global();
//! log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
//! {
//!     trace_scope!("app", "work", "items" => 3u32);
//!     trace_instant!("app", "checkpoint");
//! }
//! log.stop();
//! let trace = log.take_trace().unwrap();
//! assert_eq!(trace.stats().recorded, 2);
//! ```
//!
//! # How it records
//!
//! Each thread writes into its own `ChunkTenant`, which holds one page-sized chunk of the
//! `TraceBuffer`, guarded by a three-state `ChunkLock` that the recording thread only ever *tries*.
//! See ARCHITECTURE.md for the whole path and its invariants.

#![cfg_attr(loom, allow(dead_code))]

// The modules are layers, lowest first: sync, error, stats, registry, record, output, trace_log,
// instrument, control, setup, macros. Each uses only the ones before it in that order (ARCHITECTURE.md's
// code map says why; tests/it/layers.rs checks it).
#[cfg(not(loom))]
pub mod alloc;
#[cfg(not(loom))]
pub mod control;
mod error;
#[cfg(not(loom))]
mod instrument;
#[cfg(not(loom))]
mod macros;
#[cfg(not(loom))]
mod output;
mod record;
mod registry;
#[cfg(not(loom))]
pub mod setup;
#[cfg(not(loom))]
mod stats;
mod sync;
#[cfg(all(feature = "tokio", not(loom)))]
pub mod tokio;
#[cfg(not(loom))]
mod trace_log;

#[cfg(all(test, loom))]
mod loom_pool;
#[cfg(all(test, loom))]
mod loom_stop;
#[cfg(all(test, loom))]
mod loom_tests;

pub use error::{Error, ErrorKind};
#[cfg(not(loom))]
pub use instrument::arg::{intern, Arg, Interned, IntoName, PString, Static};
#[cfg(not(loom))]
pub use instrument::logs::{LogParams, MAX_LOG_STR_BYTES, STATIC_MAX_LEVEL};
#[cfg(not(loom))]
pub use instrument::{bridge, future, points};
#[cfg(not(loom))]
pub use output::trace::{ArgValue, ChunkView, Event, Events, LogParamValues, Trace, TraceError};
#[cfg(not(loom))]
pub use output::trace_file::DEFAULT_SAVE_COMPRESSION;
/// The byte layout and the trace file reader and writer (`format::file`), re-exported so that
/// `Trace::save`'s errors and saved files can be handled without a second dependency.
pub use phosphor_format as format;
/// How a saved trace's or a datastream's blocks are compressed ([`Trace::with_compression`],
/// [`TraceConfig::compression`], [`stream::StreamConfig::compression`]); `Compression::None`
/// writes files every 1.x reader reads.
pub use phosphor_format::file::Compression;
pub use phosphor_format::trace_context::{IntoTraceContext, ParseTraceContextError, TraceContext};
pub use phosphor_format::{Level, Phase};
/// Records each call of a function as a scope, and each run of an `async fn` as an async slice
/// with a slice per poll: `#[phosphor::trace]`, `#[phosphor::trace(category = "net", name =
/// "fetch", args(id, len), group = net)]`. The defaults are the function's name and the last
/// segment of its module path.
///
/// ```
/// #[phosphor::trace(category = "db", args(rows))]
/// fn query(sql: &str, rows: u32) -> usize {
///     sql.len() + rows as usize
/// }
///
/// #[phosphor::trace]
/// async fn fetch(id: u64) -> Result<u64, std::num::ParseIntError> {
///     let n: u64 = "7".parse()?;
///     Ok(id + n)
/// }
/// # assert_eq!(query("select", 1), 7);
/// # drop(fetch(1));
/// ```
pub use phosphor_macros::trace;
/// USDT static tracepoints of their own, besides the `usdt` feature that makes every Phosphor
/// callsite one: the `phosphor-usdt` crate, so one dependency gives both.
///
/// ```
/// phosphor::usdt::sdt_define_semaphore!(myapp, query);
///
/// fn run(rows: u32) {
///     phosphor::usdt::sdt!(myapp, start, rows);
///     if phosphor::usdt::sdt_enabled!(myapp, query) {
///         // work that only an attached tool wants
///     }
/// }
/// # run(1);
/// ```
pub use phosphor_usdt as usdt;
pub use record::buffer::BufferMode;
pub use record::clock::{ClockInfo, ClockKind};
#[cfg(not(loom))]
pub use record::thread::{current_thread_id, set_thread_name};
#[cfg(not(loom))]
pub use registry::callsite::{fnv1a64, Callsite, CallsiteMeta, MAX_DYNAMIC_POINTS};
pub use registry::category::CategoryFilter;
#[cfg(not(loom))]
pub use registry::intern::intern_stats;
pub use registry::intern::{InternStats, MAX_INTERNED_BYTES};
pub use registry::MAX_LOGS;
#[cfg(not(loom))]
pub use setup::{init, Guard, Setup};
#[cfg(not(loom))]
pub use stats::{Drops, Stats};
#[cfg(not(loom))]
pub use trace_log::config::{StopCallback, ThreadPolicy, TraceConfig, TraceLogConfig, MAX_POOL_TENANTS};
#[cfg(not(loom))]
pub use trace_log::recorder;
#[cfg(not(loom))]
pub use trace_log::stream;
/// Test-only pause points (feature `test-hooks`): see `trace_log/test_hooks.rs`.
#[cfg(all(feature = "test-hooks", target_os = "linux", not(loom)))]
#[doc(hidden)]
pub use trace_log::test_hooks as __test_hooks;
#[cfg(not(loom))]
pub use trace_log::trigger;
#[cfg(not(loom))]
pub use trace_log::TraceLog;
/// Reads the global log's clock: a start value for [`trace_complete!`].
#[cfg(not(loom))]
#[inline(always)]
pub fn now() -> u64 {
    TraceLog::global().now()
}

/// Gives the calling thread its own tenant in the global log even under `ThreadPolicy::Pool`.
#[cfg(not(loom))]
pub fn register_thread() {
    TraceLog::global().register_thread();
}

#[cfg(not(loom))]
#[doc(hidden)]
pub mod __macro_support {
    pub use crate::instrument::arg::IntoName;
    pub use crate::instrument::emit::{
        check, check_scope, emit, emit_watched, enabled_in, At, LockGuard, NoArg, Now, Opening, ScopeGuard,
        Since, Stamp,
    };
    pub use crate::instrument::logs::emit_log;
    pub use crate::registry::aggregate::{AggregateRef, Histogram, Sum};
    #[cfg(linker_sections)]
    pub use crate::registry::callsite::CALLSITES;
    pub use crate::registry::callsite::{Callsite, CallsiteMeta};

    /// The name of a `dyn`-named event as its argument 0.
    #[inline(always)]
    pub fn name_arg<N: IntoName>(name: N) -> N::Arg {
        name.into_name()
    }
    pub use linkme;

    /// The last segment of a module path (`module_path!()`), the default category of
    /// `#[phosphor::trace]`: `app::net::tcp` gives `tcp`.
    pub const fn module_category(path: &'static str) -> &'static str {
        let bytes = path.as_bytes();
        let mut start = 0;
        let mut i = 0;
        while i + 1 < bytes.len() {
            if bytes[i] == b':' && bytes[i + 1] == b':' {
                start = i + 2;
            }
            i += 1;
        }
        let (_, tail) = bytes.split_at(start);
        match core::str::from_utf8(tail) {
            Ok(s) => s,
            Err(_) => path,
        }
    }
    pub use phosphor_format::Phase;
    #[cfg(feature = "usdt")]
    pub use phosphor_usdt as usdt;
}

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

#[cfg(not(loom))]
mod addr;
#[cfg(not(loom))]
mod aggregate;
#[cfg(not(loom))]
mod arg;
mod barrier;
#[cfg(not(loom))]
pub mod bridge;
mod buffer;
#[cfg(not(loom))]
mod callsite;
mod category;
mod chunk_lock;
mod clock;
mod config;
#[cfg(not(loom))]
pub mod control;
#[cfg(not(loom))]
mod emit;
mod error;
#[cfg(all(unix, not(loom)))]
mod fork;
#[cfg(not(loom))]
pub mod future;
#[cfg(not(loom))]
mod group;
mod intern;
#[cfg(not(loom))]
mod logs;
#[cfg(not(loom))]
mod macros;
#[cfg(not(loom))]
pub mod points;
#[cfg(all(not(loom), target_os = "linux"))]
pub mod recorder;
#[cfg(all(not(loom), unix))]
mod ring;
mod site_cache;
#[cfg(not(loom))]
mod stats;
#[cfg(not(loom))]
pub mod stream;
mod sync;
mod tenant;
#[cfg(not(loom))]
mod thread;
#[cfg(not(loom))]
mod trace;
#[cfg(not(loom))]
mod trace_file;
#[cfg(not(loom))]
mod trace_log;

#[cfg(all(test, loom))]
mod loom_tests;

#[cfg(not(loom))]
pub use arg::{Arg, Interned, IntoName, PString, Static};
#[cfg(not(loom))]
pub use callsite::{fnv1a64, Callsite, CallsiteMeta, MAX_DYNAMIC_POINTS};
pub use category::CategoryFilter;
pub use clock::{ClockInfo, ClockKind};
pub use config::{BufferMode, ThreadPolicy, TraceLogConfig, MAX_POOL_TENANTS};
#[cfg(not(loom))]
pub use config::{StopCallback, TraceConfig};
pub use error::{Error, ErrorKind};
pub use intern::{InternStats, MAX_INTERNED_BYTES};
#[cfg(not(loom))]
pub use logs::{LogParams, MAX_LOG_STR_BYTES, STATIC_MAX_LEVEL};
/// The byte layout and the trace file reader and writer (`format::file`), re-exported so that
/// `Trace::save`'s errors and saved files can be handled without a second dependency.
pub use phosphor_format as format;
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
#[cfg(not(loom))]
pub use stats::{Drops, Stats};
#[cfg(not(loom))]
pub use thread::{current_thread_id, set_thread_name};
#[cfg(not(loom))]
pub use trace::{ArgValue, ChunkView, Event, Events, LogParamValues, Trace, TraceError};
#[cfg(not(loom))]
pub use trace_log::TraceLog;

/// The most `TraceLog`s that can exist at once, the global one included.
pub const MAX_LOGS: usize = 32;

/// Reads the global log's clock: a start value for [`trace_complete!`].
#[cfg(not(loom))]
#[inline(always)]
pub fn now() -> u64 {
    TraceLog::global().now()
}

/// Interns a dynamic string (Palanteer's dynamic strings): the event then stores it like a static
/// string, and a trace file holds it once however many events use it. The interner is bounded
/// (`intern.rs`: 4,096 strings, 256 KiB); when it cannot take a string, the string is copied into
/// the event instead, and [`intern_stats`] counts the fallback. The lookup hashes the string and
/// takes no lock.
///
/// ```
/// let path = format!("/users/{}", 42);
/// phosphor::trace_instant!("http", "request", "path" => phosphor::intern(&path));
/// ```
#[cfg(not(loom))]
#[inline]
pub fn intern(s: &str) -> Interned<'_> {
    match intern::INTERNER.intern(s) {
        Some(copy) => Interned::Static(copy),
        None => Interned::Inline(s),
    }
}

/// What the string interner holds, and how many strings it could not take.
#[cfg(not(loom))]
pub fn intern_stats() -> InternStats {
    intern::INTERNER.stats()
}

/// Gives the calling thread its own tenant in the global log even under `ThreadPolicy::Pool`.
#[cfg(not(loom))]
pub fn register_thread() {
    TraceLog::global().register_thread();
}

#[cfg(not(loom))]
#[doc(hidden)]
pub mod __macro_support {
    pub use crate::aggregate::{AggregateRef, Histogram, Sum};
    pub use crate::arg::IntoName;
    #[cfg(any(
        target_os = "linux",
        target_os = "android",
        target_os = "macos",
        target_os = "ios",
        target_os = "windows",
        target_os = "freebsd",
        target_os = "openbsd",
        target_os = "illumos"
    ))]
    pub use crate::callsite::CALLSITES;
    pub use crate::callsite::{Callsite, CallsiteMeta};
    pub use crate::emit::{check, emit, enabled_in, At, LockGuard, NoArg, Now, ScopeGuard, Since, Stamp};
    pub use crate::logs::emit_log;

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

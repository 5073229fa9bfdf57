//! `TraceLogConfig` (one-time, per `TraceLog`) and `TraceConfig` (per trace).

#[cfg(not(loom))]
use std::sync::Arc;

#[cfg(not(loom))]
use phosphor_format::chunk::CHUNK_BYTES;

use crate::error::{Error, ErrorKind};
use crate::record::buffer::BufferMode;
use crate::record::clock::ClockKind;
#[cfg(not(loom))]
use crate::registry::category::CategoryFilter;
#[cfg(not(loom))]
use crate::TraceLog;

/// How threads that did not call `register_thread` get a tenant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ThreadPolicy {
    /// Each thread gets its own tenant on its first event (the default). Recording never contends.
    #[default]
    ThreadLocal,
    /// Unregistered threads share the pool, indexed by thread id; a thread that finds its pool
    /// tenant busy drops the event and counts it. Bounds memory with many short-lived threads.
    Pool,
}

/// One-time configuration of a `TraceLog`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceLogConfig {
    pub(crate) clock: ClockKind,
    pub(crate) pool_tenants: usize,
    pub(crate) policy: ThreadPolicy,
}

impl Default for TraceLogConfig {
    fn default() -> Self {
        TraceLogConfig { clock: ClockKind::Tsc, pool_tenants: 8, policy: ThreadPolicy::ThreadLocal }
    }
}

impl TraceLogConfig {
    /// The defaults: TSC clock, thread-local tenants, a pool of 8.
    pub fn new() -> Self {
        Self::default()
    }

    /// The clock to read.
    pub fn clock(mut self, clock: ClockKind) -> Self {
        self.clock = clock;
        self
    }

    /// Tenants in the shared pool (at least one, at most [`MAX_POOL_TENANTS`]).
    pub fn pool_tenants(mut self, n: usize) -> Self {
        self.pool_tenants = n;
        self
    }

    /// Whether unregistered threads use the pool or their own tenant.
    pub fn thread_policy(mut self, policy: ThreadPolicy) -> Self {
        self.policy = policy;
        self
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        if self.pool_tenants == 0 {
            return Err(Error::new(ErrorKind::EmptyPool));
        }
        if self.pool_tenants > MAX_POOL_TENANTS {
            return Err(Error::new(ErrorKind::PoolTooLarge {
                requested: self.pool_tenants,
                max: MAX_POOL_TENANTS,
            }));
        }
        Ok(())
    }
}

/// The most tenants a pool can have: each is a writer stream of the trace file, numbered 1 to
/// 65535 in 16 bits.
pub const MAX_POOL_TENANTS: usize = u16::MAX as usize;

/// Called on the recording thread when a Fixed buffer fills. It may call `TraceLog::stop`.
#[cfg(not(loom))]
pub type StopCallback = Arc<dyn Fn(&TraceLog) + Send + Sync>;

/// Configuration of one trace.
#[cfg(not(loom))]
#[derive(Clone)]
pub struct TraceConfig {
    pub(crate) mode: BufferMode,
    pub(crate) buffer_size: usize,
    pub(crate) categories: CategoryFilter,
    pub(crate) log_level: phosphor_format::Level,
    pub(crate) on_stop: Option<StopCallback>,
    pub(crate) ring_file: Option<std::path::PathBuf>,
    /// What the subsystems' own builder methods set (the triggers'), held without being known.
    pub(crate) parts: Parts,
    pub(crate) system: SystemConfig,
    pub(crate) compression: phosphor_format::file::Compression,
}

/// The parts of a trace's configuration that a subsystem owns (the triggers' settings, set by
/// the builder methods `trace_log/triggers.rs` adds to [`TraceConfig`]), at most one per type:
/// the core keeps, clones and prints them without knowing them.
#[cfg(not(loom))]
#[derive(Default)]
pub(crate) struct Parts(Vec<Box<dyn Part>>);

/// A subsystem's part of a [`TraceConfig`].
#[cfg(not(loom))]
pub(crate) trait Part: std::any::Any + Send + Sync + std::fmt::Debug {
    fn clone_part(&self) -> Box<dyn Part>;
    fn as_any(&self) -> &dyn std::any::Any;
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any;
}

#[cfg(not(loom))]
impl<T: std::any::Any + Clone + Send + Sync + std::fmt::Debug> Part for T {
    fn clone_part(&self) -> Box<dyn Part> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

#[cfg(not(loom))]
impl Parts {
    /// The part of type `T`, if a builder method set one.
    pub(crate) fn get<T: Part>(&self) -> Option<&T> {
        self.0.iter().find_map(|p| (**p).as_any().downcast_ref::<T>())
    }

    /// The part of type `T`, made with its default first if there is none, to change.
    pub(crate) fn get_mut<T: Part + Default>(&mut self) -> &mut T {
        let at = match self.0.iter().position(|p| (**p).as_any().is::<T>()) {
            Some(at) => at,
            None => {
                self.0.push(Box::new(T::default()));
                self.0.len() - 1
            }
        };
        (*self.0[at]).as_any_mut().downcast_mut::<T>().expect("the part at `at` is a `T`")
    }
}

#[cfg(not(loom))]
impl Clone for Parts {
    fn clone(&self) -> Parts {
        Parts(self.0.iter().map(|p| (**p).clone_part()).collect())
    }
}

#[cfg(not(loom))]
impl std::fmt::Debug for Parts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|p| &**p)).finish()
    }
}

/// Which system context a trace collects (issue 23); see [`TraceConfig::context_switches`],
/// [`TraceConfig::cpu_samples`] and [`TraceConfig::allocations`].
#[cfg(not(loom))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SystemConfig {
    /// Context switches of the traced threads.
    pub(crate) switches: bool,
    /// CPU samples per second of each traced thread (0: off).
    pub(crate) sample_hz: u32,
    /// Allocation counts per scope, and the process's heap counter.
    pub(crate) allocations: bool,
}

#[cfg(not(loom))]
impl std::fmt::Debug for TraceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceConfig")
            .field("mode", &self.mode)
            .field("buffer_size", &self.buffer_size)
            .field("categories", &self.categories)
            .field("log_level", &self.log_level)
            .field("ring_file", &self.ring_file)
            .field("on_stop", &self.on_stop.is_some())
            .field("parts", &self.parts)
            .field("system", &self.system)
            .field("compression", &self.compression)
            .finish()
    }
}

#[cfg(not(loom))]
impl TraceConfig {
    /// The largest buffer a trace may have on any machine: 64 GiB (16 Mi chunks, about two billion
    /// one-record events). A buffer is allocated whole at `start`, and writing each chunk's header
    /// makes every page of it resident, so a trace's buffer must fit in memory; past 64 GiB a size
    /// is more likely a wrong unit than a plan. On a machine with less physical memory, the
    /// physical memory is the limit. `start` refuses a larger buffer with
    /// [`ErrorKind::BufferTooLarge`], which names the limit.
    pub const MAX_BUFFER_BYTES: u64 = 64 << 30;

    /// A trace in `mode` using `buffer_size` bytes (rounded down to whole 4 KiB chunks), with every
    /// category enabled. The size is checked at `start`: at least one chunk, and at most the
    /// smaller of [`MAX_BUFFER_BYTES`](Self::MAX_BUFFER_BYTES) and the machine's physical memory.
    pub fn new(mode: BufferMode, buffer_size: usize) -> Self {
        TraceConfig {
            mode,
            buffer_size,
            categories: CategoryFilter::default(),
            log_level: phosphor_format::Level::Trace,
            on_stop: None,
            ring_file: None,
            parts: Parts::default(),
            system: SystemConfig::default(),
            compression: crate::output::trace_file::DEFAULT_SAVE_COMPRESSION,
        }
    }

    /// How the trace's saved files compress their blocks: the [`Trace`](crate::Trace)s that
    /// `take_trace` and `snapshot` return (what [`Trace::save`](crate::Trace::save) writes
    /// unless [`Trace::with_compression`](crate::Trace::with_compression) says otherwise), and
    /// the dumps the runtime writes itself (`recorder::dump_on_signal`, `dump_on_panic`, the
    /// triggers' `trigger-{n}.phos`). Default:
    /// [`DEFAULT_SAVE_COMPRESSION`](crate::DEFAULT_SAVE_COMPRESSION) (zstd level 1);
    /// [`Compression::None`](crate::Compression::None) writes files that readers of format 1.6
    /// and older read. The crash dump (`dump_on_crash`) is always uncompressed: its signal
    /// handler may not allocate. Datastreams have their own setting
    /// ([`StreamConfig::compression`](crate::stream::StreamConfig::compression)).
    pub fn compression(mut self, compression: phosphor_format::file::Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Records the traced threads' context switches (off by default): when each left a CPU,
    /// blocked or preempted, and when it resumed, through `perf_event_open` on the process's own
    /// threads, read by a thread of the trace's own, never on the recording path. Where the
    /// kernel refuses (a container's seccomp, `perf_event_paranoid` 3), the trace starts anyway
    /// and says why in its system status. Off Linux, `start` refuses the trace
    /// ([`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported)).
    pub fn context_switches(mut self, on: bool) -> Self {
        self.system.switches = on;
        self
    }

    /// Samples each traced thread's user-space call stack `hz` times per second of CPU time
    /// (0, the default, turns it off; 999 is a good rate). The stacks are walked by the kernel
    /// through frame pointers: build with `-C force-frame-pointers=yes` for whole stacks. The
    /// tools symbolize them from the binary's debug information. Unavailable as for
    /// [`context_switches`](Self::context_switches).
    pub fn cpu_samples(mut self, hz: u32) -> Self {
        self.system.sample_hz = hz;
        self
    }

    /// Counts each scope's allocations and bytes, and samples the process's heap totals (off by
    /// default). Needs `phosphor::alloc::Traced` as the program's global allocator; without it
    /// the trace says allocations are unavailable.
    pub fn allocations(mut self, on: bool) -> Self {
        self.system.allocations = on;
        self
    }

    /// Puts the buffer in a shared memory mapping of the file at `path` (created, or truncated),
    /// so that the committed events survive the process, even a `SIGKILL`:
    /// `phosphor recover FILE -o trace.phos` rebuilds a trace from it. Recording costs the same
    /// (see BENCHMARKS.md). The file holds the chunks, the callsites, and the trace's clock and
    /// process; static string arguments, which live in the process's memory, are lost in a
    /// recovery. Unix only; elsewhere `start` fails.
    pub fn file_backed(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.ring_file = Some(path.into());
        self
    }

    /// Records logs (`trace_log!`) of `level` and more severe only; the default records every
    /// level. Like the category filter, this is applied to each callsite's cached enabled bits,
    /// so a filtered-out log costs what a disabled category costs. Levels compiled out with the
    /// `max-level-*` features are never recorded, whatever this says.
    pub fn log_level(mut self, level: phosphor_format::Level) -> Self {
        self.log_level = level;
        self
    }

    /// Sets the category filter, e.g. `"net*,-net.verbose"` (see `CategoryFilter`).
    pub fn categories(mut self, spec: &str) -> Result<Self, Error> {
        self.categories = CategoryFilter::parse(spec)?;
        Ok(self)
    }

    /// Takes the category filter from `PHOSPHOR_CATEGORIES` when it is set.
    pub fn categories_from_env(self) -> Result<Self, Error> {
        match std::env::var("PHOSPHOR_CATEGORIES") {
            Ok(spec) => self.categories(&spec),
            Err(std::env::VarError::NotPresent) => Ok(self),
            Err(std::env::VarError::NotUnicode(_)) => Err(Error::new(ErrorKind::EnvNotUnicode)),
        }
    }

    /// Sets the callback run when a Fixed buffer fills.
    pub fn on_stop(mut self, f: impl Fn(&TraceLog) + Send + Sync + 'static) -> Self {
        self.on_stop = Some(Arc::new(f));
        self
    }

    pub(crate) fn chunks(&self) -> Result<usize, Error> {
        let max = max_buffer_bytes();
        if self.buffer_size > max {
            return Err(Error::new(ErrorKind::BufferTooLarge { size: self.buffer_size, max }));
        }
        match self.buffer_size / CHUNK_BYTES {
            0 => Err(Error::new(ErrorKind::BufferTooSmall { size: self.buffer_size, chunk: CHUNK_BYTES })),
            n => Ok(n),
        }
    }
}

/// The largest buffer on this machine: [`TraceConfig::MAX_BUFFER_BYTES`], or the physical memory
/// if that is smaller (when the system can tell).
#[cfg(not(loom))]
pub(crate) fn max_buffer_bytes() -> usize {
    let cap = usize::try_from(TraceConfig::MAX_BUFFER_BYTES).unwrap_or(usize::MAX);
    physical_memory().map_or(cap, |m| cap.min(m))
}

#[cfg(all(not(loom), unix))]
fn physical_memory() -> Option<usize> {
    // SAFETY: sysconf only reads system parameters; an unknown one returns -1.
    let (pages, page) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    let (pages, page) = (usize::try_from(pages).ok()?, usize::try_from(page).ok()?);
    Some(pages.saturating_mul(page)).filter(|&m| m > 0)
}

#[cfg(all(not(loom), not(unix)))]
fn physical_memory() -> Option<usize> {
    None
}

//! `TraceLog`: starts and stops traces, owns the tenants, and routes events to them.
//!
//! # Brief overview
//!
//! There is one global `TraceLog` ([`TraceLog::global`]), which the macros use, and up to
//! `MAX_LOGS - 1` independent ones ([`TraceLog::new`]), reached with the macros' `log:` form. Each
//! owns a slot: bit `slot` of every callsite's cached state says whether that log traces it.
//!
//! * [`TraceLog::start`] allocates the [`TraceBuffer`], publishes it, and sets the callsite bits.
//! * [`TraceLog::stop`] clears the bits, unpublishes the buffer, runs `evict_threads` (see
//!   `tenant::evict_all`), and keeps the finished [`Trace`] for [`TraceLog::take_trace`].
//! * [`TraceLog::write_event`] is the hot path's entry: this thread's tenant for the slot, then
//!   `Tenant::write`. A missing or dead tenant takes the `#[cold]` attach path.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use phosphor_format::file::{Aggregate, AggregateKind};
use phosphor_format::system::SystemStatus;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, ErrorKind};
use crate::output::trace::Trace;
use crate::record::buffer::TraceBuffer;
use crate::record::clock::{ClockInfo, ClockKind};
use crate::record::tenant::{evict_all, DropReason, Fill, LogCore, Outcome, Tenant};
use crate::record::thread::{self, current_thread_id, ThreadState, THREAD};
use crate::registry::callsite;
use crate::registry::MAX_LOGS;
use crate::stats::{Drops, Stats};
use crate::trace_log::config::{StopCallback, ThreadPolicy, TraceConfig, TraceLogConfig};

#[cfg(unix)]
mod after_fork;
pub(crate) mod config;
#[cfg(unix)]
pub(crate) mod fork;
#[cfg(target_os = "linux")]
pub mod recorder;
pub mod stream;
mod streams;
pub(crate) mod system;
pub mod trigger;
mod trigger_spec;

#[cfg(unix)]
pub(crate) use after_fork::ForkLocks;

/// A buffer owned by the running trace.
struct OwnedBuffer(*mut TraceBuffer);

// SAFETY: the pointer is `Box::into_raw` of a TraceBuffer, which is Send; only the control lock's
// holder turns it back into a Box.
unsafe impl Send for OwnedBuffer {}

struct Running {
    config: TraceConfig,
    buffer: OwnedBuffer,
    /// The collector thread of a streaming trace.
    collector: Option<crate::stream::Collector>,
    /// The aggregate points' snapshots at the start, by callsite id.
    aggregates_at_start: HashMap<u32, Aggregate>,
    /// The armed triggers and their dump thread.
    triggers: trigger::Armed,
    /// The system context's collector (`None` when the trace asked for none, or once `stop`
    /// has taken it).
    system: Option<system::SystemCollector>,
}

impl crate::record::tenant::DropCounters {
    /// The counters now (no allocation, no lock: the crash dump reads them too).
    pub(crate) fn load(&self) -> Drops {
        // Relaxed: statistics.
        let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        Drops {
            buffer_full: l(&self.buffer_full),
            no_chunk: l(&self.no_chunk),
            contended: l(&self.contended),
            stopping: l(&self.stopping),
            reentrant: l(&self.reentrant),
            thread_exited: l(&self.thread_exited),
            unwound: l(&self.unwound),
            overwritten: 0,
            other: 0,
        }
    }
}

impl Running {
    /// What the aggregate points this trace's categories take counted since it started.
    fn aggregates_so_far(&self) -> Vec<Aggregate> {
        callsite::aggregate_snapshots()
            .into_iter()
            .filter(|(_, meta)| self.config.categories.matches(meta.category))
            .map(|(a, _)| crate::registry::aggregate::delta(&a, self.aggregates_at_start.get(&a.callsite)))
            .filter(|a| match a.kind {
                AggregateKind::Sum { count, .. } | AggregateKind::Histogram { count, .. } => count > 0,
            })
            .collect()
    }
}

struct Control {
    config: Option<TraceLogConfig>,
    clock: Option<ClockInfo>,
    running: Option<Running>,
    tenants: Vec<Arc<Tenant>>,
    pool: Vec<Arc<Tenant>>,
    last_trace: Option<Trace>,
    last_stats: Stats,
    /// The log's cumulative drop counters when the last trace's figures were taken. Counters are
    /// never reset: a trace's drops are the growth since this baseline, so a drop that raced with
    /// `stop` (counted after its snapshot) lands in the next trace's figures instead of vanishing.
    drops_baseline: Drops,
    started_once: bool,
    /// The figures of the datastreams that were open when the last streaming trace stopped.
    last_streams: Vec<(crate::stream::StreamId, crate::stream::StreamStats)>,
    /// The last trace's system status, if it collected any.
    last_system: Option<SystemStatus>,
}

/// A trace log: the recorder's front door.
pub struct TraceLog {
    slot: u32,
    core: LogCore,
    /// The generation of a buffer whose exhaustion was found while its thread was busy (0: none);
    /// handled when a control lock is released.
    pending_exhausted: std::sync::atomic::AtomicU64,
    /// `is_enabled`: running and not exhausted.
    enabled: AtomicBool,
    control: Mutex<Control>,
}

impl std::fmt::Debug for TraceLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceLog").field("slot", &self.slot).field("enabled", &self.is_enabled()).finish()
    }
}

static GLOBAL: TraceLog = TraceLog::with_slot(0);

/// Slots in use; bit 0 is the global log's.
static SLOTS: AtomicU32 = AtomicU32::new(1);

/// The next trace's generation: every buffer of the process gets its own (from 1; a tenant that
/// never loaned has generation 0).
static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl TraceLog {
    const fn with_slot(slot: u32) -> TraceLog {
        TraceLog {
            slot,
            core: LogCore::new(slot),
            pending_exhausted: std::sync::atomic::AtomicU64::new(0),
            enabled: AtomicBool::new(false),
            control: Mutex::new(Control {
                config: None,
                clock: None,
                running: None,
                tenants: Vec::new(),
                pool: Vec::new(),
                last_trace: None,
                last_stats: Stats::ZERO,
                drops_baseline: Stats::ZERO.dropped,
                started_once: false,
                last_streams: Vec::new(),
                last_system: None,
            }),
        }
    }

    /// The process-wide log that the macros record into.
    #[inline(always)]
    pub fn global() -> &'static TraceLog {
        &GLOBAL
    }

    /// An independent log with its own configuration, buffers and traces. Record into it with the
    /// macros' `log:` form. At most `MAX_LOGS` logs exist at once, the global one included.
    pub fn new(config: TraceLogConfig) -> Result<Arc<TraceLog>, Error> {
        config.validate()?;
        // Relaxed: the slot mask only has to hand out distinct bits; `fetch_update` is atomic.
        let taken = SLOTS.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |m| {
            let free = !m & ((1u64 << MAX_LOGS) - 1) as u32;
            (free != 0).then(|| m | (1 << free.trailing_zeros()))
        });
        let mask = taken.map_err(|_| Error::new(ErrorKind::TooManyInstances { max: MAX_LOGS }))?;
        let slot = (!mask & ((1u64 << MAX_LOGS) - 1) as u32).trailing_zeros();
        let log = Arc::new(TraceLog::with_slot(slot));
        log.control().config = Some(config);
        LIVE.lock().unwrap_or_else(|p| p.into_inner()).push(Arc::as_ptr(&log) as usize);
        Ok(log)
    }

    /// Takes the control lock, marking the thread busy so that an event from a signal handler
    /// interrupting it neither attaches nor runs the stop callback (which both take this lock).
    fn control(&self) -> ControlGuard<'_> {
        let was_busy = THREAD.with(|t| !t.enter_busy());
        // Every critical section leaves Control consistent before it can panic (allocation
        // failure aside), so a poisoned lock is safe to keep using.
        let guard = self.control.lock().unwrap_or_else(|p| p.into_inner());
        ControlGuard { guard: std::mem::ManuallyDrop::new(guard), log: self, was_busy }
    }

    /// The control lock if it is free now (`None` at once if another thread holds it), marking
    /// the thread busy as [`control`](Self::control) does: an event recorded meanwhile on this
    /// thread (an instrumented allocator, a signal handler) neither attaches nor runs the stop
    /// callback, both of which take this lock. For paths that must never wait for it: panic
    /// hooks, the streaming collector.
    fn try_control(&self) -> Option<ControlGuard<'_>> {
        let was_busy = THREAD.with(|t| !t.enter_busy());
        let guard = match self.control.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                if !was_busy {
                    THREAD.with(|t| t.leave_busy());
                }
                return None;
            }
        };
        Some(ControlGuard { guard: std::mem::ManuallyDrop::new(guard), log: self, was_busy })
    }

    /// Applies one-time configuration. Fails if it was applied already or a trace has started
    /// (which fixes the defaults).
    pub fn configure(&self, config: TraceLogConfig) -> Result<(), Error> {
        config.validate()?;
        let mut c = self.control();
        if c.config.is_some() {
            return Err(Error::new(ErrorKind::AlreadyConfigured("configure was called before")));
        }
        if c.started_once {
            return Err(Error::new(ErrorKind::AlreadyConfigured(
                "a trace already started with the defaults",
            )));
        }
        c.config = Some(config);
        Ok(())
    }

    /// The slot of this log in callsite states. For the global log (the macros' default, whose
    /// address is a link-time constant) this folds to the constant 0, so the enabled test and the
    /// tenant lookup need no load.
    #[inline(always)]
    pub(crate) fn slot(&self) -> u32 {
        if std::ptr::eq(self, &GLOBAL) {
            0
        } else {
            self.slot
        }
    }

    /// Starts a trace. Events from before this call are not recorded.
    pub fn start(&self, config: TraceConfig) -> Result<(), Error> {
        let chunks = config.chunks()?;
        if !config.triggers.is_empty() && config.mode != crate::BufferMode::Ring {
            return Err(Error::new(ErrorKind::Trigger(format!(
                "triggers need a Ring buffer (the flight recorder), not {:?}",
                config.mode
            ))));
        }
        if config.dumps_per_minute == 0 {
            return Err(Error::new(ErrorKind::Trigger("dumps_per_minute must be at least 1".into())));
        }
        #[cfg(unix)]
        crate::trace_log::fork::install();
        let mut c = self.control();
        if c.running.is_some() {
            return Err(Error::new(ErrorKind::AlreadyRunning));
        }
        let log_config = c.config.get_or_insert_with(TraceLogConfig::default).clone();
        if c.clock.is_none() {
            let clock = crate::record::clock::calibrate(log_config.clock);
            set_clock_hint(self.slot, clock.kind, clock.ns_per_tick);
            c.clock = Some(clock);
        }
        c.started_once = true;
        c.tenants.retain(|t| !t.is_retired());
        let mut buffer = match &config.ring_file {
            None => TraceBuffer::new(config.mode, chunks)
                .map_err(|e| Error::new(ErrorKind::BufferAlloc { bytes: e.bytes }))?,
            Some(path) => {
                self.ring_buffer(path, config.mode, chunks, c.clock.clone().expect("calibrated above"))?
            }
        };
        // Relaxed: only uniqueness matters.
        buffer.generation = GENERATIONS.fetch_add(1, Ordering::Relaxed);
        let buffer = Box::into_raw(Box::new(buffer));
        // Markers and blocking are the streaming mode's; another mode clears what a streaming
        // trace of this log left. Relaxed: read by tenants only after they acquire the buffer
        // published below.
        self.core.saturation_id.store(0, Ordering::Relaxed);
        self.core.block_ns.store(0, Ordering::Relaxed);
        let collector = if config.mode == crate::BufferMode::Stream {
            let state = callsite::register(&crate::stream::SATURATION);
            // Relaxed: as above.
            self.core.saturation_id.store(callsite::id_of(state), Ordering::Relaxed);
            let header =
                crate::output::trace_file::process_header(c.clock.clone().expect("calibrated above"));
            match crate::stream::Collector::start(self, buffer, header) {
                Ok(col) => Some(col),
                Err(e) => {
                    // SAFETY: never published; ours to free.
                    drop(unsafe { Box::from_raw(buffer) });
                    return Err(Error::new(ErrorKind::Collector(e.to_string())));
                }
            }
        } else {
            None
        };
        // Armed before the buffer is published and the slot enabled, so a failure leaves nothing
        // to undo but the buffer and the dump thread (idle: no event can fire yet).
        let settings = trigger::DumpSettings {
            dir: config.trigger_dir.clone(),
            window: config.post_window,
            per_minute: config.dumps_per_minute,
        };
        let mut triggers = trigger::Armed::new(self, settings);
        for t in &config.triggers {
            if let Err(e) = triggers.arm(self, t.clone(), None) {
                triggers.disarm(None);
                if let Some(thread) = triggers.take_thread() {
                    trigger::finish_thread(self, thread);
                }
                // SAFETY: never published; ours to free (no collector: triggers need Ring mode).
                drop(unsafe { Box::from_raw(buffer) });
                return Err(e);
            }
        }
        // Release: pairs with the Acquire load in `Tenant::make_room`, publishing the buffer's
        // initialised chunk headers.
        self.core.buffer.store(buffer, Ordering::Release);
        let filter = callsite::SlotFilter {
            categories: Arc::new(config.categories.clone()),
            max_level: config.log_level,
            // issue 23 (alloc helper): scopes record their allocations.
            allocations: config.system.allocations,
        };
        let aggregates_at_start =
            callsite::aggregate_snapshots().into_iter().map(|(a, _)| (a.callsite, a)).collect();
        // Never fails the start: what is unavailable says why in its status.
        let forward = collector.as_ref().map(crate::stream::Collector::system_forwarder);
        let system = system::SystemCollector::start(
            self,
            config.system,
            config.mode == crate::BufferMode::Ring,
            forward,
        );
        c.running = Some(Running {
            config,
            buffer: OwnedBuffer(buffer),
            collector,
            aggregates_at_start,
            triggers,
            system,
        });
        // Relaxed: a status flag for `is_enabled`.
        self.enabled.store(true, Ordering::Relaxed);
        callsite::enable_slot(self.slot, filter);
        Ok(())
    }

    /// Stops the trace, takes every thread's chunk back, and keeps the result for
    /// [`TraceLog::take_trace`]. Events from after this call are not recorded. Does nothing when no
    /// trace is running.
    pub fn stop(&self) {
        // The trigger dump thread first, without the control lock, which its last dump takes;
        // the system collector too (it only tries the lock, but is joined without it).
        let (thread, system) = match self.control().running.as_mut() {
            Some(r) => (r.triggers.close(), r.system.take()),
            None => (None, None),
        };
        if let Some(thread) = thread {
            trigger::finish_thread(self, thread);
        }
        let system = system.map(system::SystemCollector::finish);
        let mut c = self.control();
        let Some(mut running) = c.running.take() else { return };
        c.last_system = system.as_ref().and_then(|b| b.status.clone());
        running.triggers.disarm(None);
        callsite::disable_slot(self.slot);
        #[cfg(unix)]
        if running.config.ring_file.is_some() {
            callsite::set_ring(None);
        }
        // Relaxed: a status flag.
        self.enabled.store(false, Ordering::Relaxed);
        // SeqCst: the swap must not be reordered after the evictions below (Release side) and sees
        // the pointer we stored (Acquire side); `evict_all`'s heavy barrier then makes it visible
        // to every slave that enters after it. Sequentially consistent for the crash dump's sake
        // (see `recorder::crash_dump_started`, read below).
        let ptr = self.core.buffer.swap(std::ptr::null_mut(), Ordering::SeqCst);
        debug_assert_eq!(ptr, running.buffer.0);
        // SAFETY: `ptr` came from `Box::into_raw` in `start` and is freed only below.
        let buf = unsafe { &*ptr };
        let all: Vec<Arc<Tenant>> = c.tenants.iter().chain(c.pool.iter()).cloned().collect();
        evict_all(&all, Some(buf), false);
        c.tenants.retain(|t| !t.is_retired());
        let now = self.load_drops();
        let stats = self.stats_of(buf, false, &now.since(&c.drops_baseline));
        c.drops_baseline = now;
        // Streaming: the collector writes every chunk given back (all of them, now), finishes the
        // datastreams with the final figures, and exits; its threads read the buffer until then.
        c.last_streams = match running.collector.take() {
            Some(col) => col.finish(stats.clone()),
            None => Vec::new(),
        };
        // A crash dump that loaded the pointer before we unpublished it may be reading the buffer:
        // the process is dying, so leave the buffer to it rather than free it.
        #[cfg(target_os = "linux")]
        if crate::recorder::crash_dump_started() {
            c.last_stats = stats;
            return;
        }
        // SAFETY: the buffer pointer is unpublished, every tenant has been evicted under its
        // master lock (so no slave holds or can reach the buffer), the collector's threads are
        // joined, and no crash dump started (one that starts now finds the pointer null): nothing
        // else refers to the buffer, and we own it again.
        let buffer = unsafe { Box::from_raw(running.buffer.0) };
        let clock = c.clock.clone().expect("calibrated in start");
        c.last_stats = stats.clone();
        // What the aggregate points this trace's categories take counted since it started.
        let aggregates = running.aggregates_so_far();
        let trace =
            Trace::new(*buffer, callsite::snapshot(), thread::thread_names(), clock, stats, aggregates);
        c.last_trace = Some(trace.with_system(system).with_compression(running.config.compression));
    }

    /// Whether a trace is running and accepting events (false once a Fixed buffer is full).
    pub fn is_enabled(&self) -> bool {
        // Relaxed: a status flag.
        self.enabled.load(Ordering::Relaxed)
    }

    /// Statistics of the running trace, or of the last one. While running, `recorded` lags by the
    /// chunks that threads still hold. After `stop`, drops of events that raced with it are added
    /// here as they are counted (and reported again in the next trace's figures).
    pub fn stats(&self) -> Stats {
        let c = self.control();
        self.stats_locked(&c)
    }

    fn stats_locked(&self, c: &Control) -> Stats {
        let late = self.load_drops().since(&c.drops_baseline);
        match &c.running {
            // SAFETY: the buffer stays alive while `running` holds it and we hold the control lock.
            Some(r) => self.stats_of(unsafe { &*r.buffer.0 }, true, &late),
            None => {
                let mut s = c.last_stats.clone();
                s.dropped = s.dropped.plus(&late);
                s
            }
        }
    }

    fn load_drops(&self) -> Drops {
        self.core.drops.load()
    }

    /// A buffer's figures, with `drops` (the log's drops since the baseline) added.
    fn stats_of(&self, buf: &TraceBuffer, running: bool, drops: &Drops) -> Stats {
        let mut dropped = drops.clone();
        let k = &buf.counters;
        // Relaxed: statistics.
        dropped.overwritten = k.events_overwritten.load(Ordering::Relaxed);
        Stats {
            running,
            recorded: buf.recorded_events(),
            saturation_markers: k.markers.load(Ordering::Relaxed),
            dropped,
            chunks_loaned: k.chunks_loaned.load(Ordering::Relaxed),
            chunks_overwritten: k.chunks_overwritten.load(Ordering::Relaxed),
            chunks_total: buf.chunk_count() as u64,
            buffer_exhausted: buf.is_exhausted(),
        }
    }

    /// A copy of what the running trace holds now, without stopping it: the flight recorder's dump
    /// on demand (`log.snapshot()?.save("dump.phos")?`). Every chunk in use, the ones threads are
    /// writing into included, is pinned in turn while its committed events are copied. Recording
    /// threads never wait for a dump and never drop an event because of one: a thread keeps its
    /// chunk and goes on writing past what was copied (those events are in the next dump), and a
    /// Ring loan passes over a chunk while it is pinned. A dump costs the writers nothing but the
    /// memory bandwidth of the copy (one pass over the buffer).
    ///
    /// The snapshot's `Stats` count the events it holds as recorded, and the drops (overwrites
    /// included) of the running trace so far.
    pub fn snapshot(&self) -> Result<Trace, Error> {
        self.snapshot_of(&self.control())
    }

    /// [`snapshot`](Self::snapshot), unless another thread holds this log's control lock (it is
    /// starting, stopping or dumping it): then `None` at once. For panic hooks, which must not
    /// wait for a lock the panicking code may hold.
    pub fn try_snapshot(&self) -> Option<Result<Trace, Error>> {
        let c = self.try_control()?;
        Some(self.snapshot_of(&c))
    }

    fn snapshot_of(&self, c: &Control) -> Result<Trace, Error> {
        let Some(running) = c.running.as_ref() else {
            return Err(Error::new(ErrorKind::NotRunning));
        };
        if running.collector.is_some() {
            return Err(Error::new(ErrorKind::WrongMode(
                "a streaming trace has no snapshot: its datastreams already hold its events",
            )));
        }
        // SAFETY: the buffer stays alive while `running` holds it and we hold the control lock
        // (only `stop`, under the same lock, frees it).
        let buf = unsafe { &*running.buffer.0 };
        let copy = buf.snapshot().map_err(|e| Error::new(ErrorKind::BufferAlloc { bytes: e.bytes }))?;
        let drops = self.load_drops().since(&c.drops_baseline);
        let live = self.stats_of(buf, true, &drops);
        let mut stats = self.stats_of(&copy, true, &drops);
        stats.dropped.overwritten = live.dropped.overwritten;
        stats.chunks_overwritten = live.chunks_overwritten;
        stats.chunks_total = live.chunks_total;
        stats.buffer_exhausted = live.buffer_exhausted;
        let aggregates = running.aggregates_so_far();
        let clock = c.clock.clone().expect("calibrated in start");
        let system = running.system.as_ref().map(system::SystemCollector::snapshot);
        Ok(Trace::new(copy, callsite::snapshot(), thread::thread_names(), clock, stats, aggregates)
            .with_system(system)
            .with_compression(running.config.compression))
    }

    /// A buffer in a new ring file at `path` (`TraceConfig::file_backed`), whose metadata then
    /// receives every callsite.
    #[cfg(unix)]
    fn ring_buffer(
        &self,
        path: &std::path::Path,
        mode: crate::BufferMode,
        chunks: usize,
        clock: ClockInfo,
    ) -> Result<TraceBuffer, Error> {
        let head = phosphor_format::file::raw::preamble_and_header(
            &crate::output::trace_file::process_header(clock),
        );
        let mapping = crate::registry::ring_file::create(path, chunks, &head)
            .map_err(|e| Error::new(ErrorKind::RingFile(format!("{}: {e}", path.display()))))?;
        let mapping = Arc::new(mapping);
        callsite::set_ring(Some(mapping.clone()));
        Ok(TraceBuffer::mapped(mode, mapping))
    }

    #[cfg(not(unix))]
    fn ring_buffer(
        &self,
        path: &std::path::Path,
        _mode: crate::BufferMode,
        _chunks: usize,
        _clock: ClockInfo,
    ) -> Result<TraceBuffer, Error> {
        Err(Error::new(ErrorKind::RingFile(format!("{}: file-backed buffers need Unix", path.display()))))
    }

    /// What a crash dump reads without locks: the recording core (buffer pointer, drop counters).
    pub(crate) fn core(&self) -> &LogCore {
        &self.core
    }

    /// The clock of the log's traces, once one has started.
    pub(crate) fn clock_info(&self) -> Option<ClockInfo> {
        self.control().clock.clone()
    }

    /// Takes the last finished trace.
    pub fn take_trace(&self) -> Option<Trace> {
        self.control().last_trace.take()
    }

    /// Shows `f` the last finished trace, if it was not taken, without taking it (the control
    /// channel's `trace.dump` after `trace.stop`).
    pub(crate) fn with_last_trace<R>(&self, f: impl FnOnce(&Trace) -> R) -> Option<R> {
        self.control().last_trace.as_ref().map(f)
    }

    /// Gives the calling thread a tenant of its own in this log even under `ThreadPolicy::Pool`.
    pub fn register_thread(&self) {
        THREAD.with(|t| {
            t.set_registered();
            let p = t.tenant(self.slot);
            // SAFETY: non-null table entries are live Arcs owned by the table.
            if !p.is_null() && unsafe { &*p }.is_pooled() {
                t.clear_tenant(self.slot);
            }
        });
    }

    /// The clock kind events are stamped with (before the first start: the configured one).
    pub fn clock_kind(&self) -> ClockKind {
        let c = self.control();
        c.clock.as_ref().map(|c| c.kind).or(c.config.as_ref().map(|c| c.clock)).unwrap_or_default()
    }

    /// Reads this log's clock: the start value for `trace_complete!` and scopes.
    #[inline(always)]
    pub fn now(&self) -> u64 {
        // The clock is fixed at the first start; before that no event is recorded, so any reading
        // will do. Read the TSC unless the log was configured otherwise.
        crate::record::clock::now(crate::record::clock::kind_from_u8(self.clock_hint()))
    }

    #[inline(always)]
    fn clock_hint(&self) -> u8 {
        // Relaxed: set once at the first start, before any callsite of this log is enabled.
        CLOCK_HINTS[self.slot() as usize].load(Ordering::Relaxed)
    }

    /// Writes one event of `n` records. `fill` must initialise all `n` slots it is given.
    ///
    /// Only the tenant lookup runs inside `THREAD.with`, in a closure small enough that it is
    /// always inlined. Every out-of-line path (attach, chunk swap, failure) is free of the fill,
    /// so the fill stays in registers.
    #[inline(always)]
    pub(crate) fn write_event<F: Fill>(&self, n: u32, fill: F) {
        let slot = self.slot();
        let mut p = THREAD.with(|t| t.tenant(slot));
        // At most two rounds: a dead tenant (whose log was dropped) is replaced by a fresh tenant
        // of `self`, and a tenant of `self` cannot die while the caller holds `&self`.
        loop {
            if p.is_null() {
                p = self.attach_current();
                if p.is_null() {
                    return; // counted by attach
                }
            }
            // SAFETY: `p` was a non-null entry of this thread's table, a live Arc the table owns.
            // Only this thread changes the table, but a signal handler on it may replace the entry
            // during this call (attaching over a dead tenant); a replaced tenant is then kept in
            // the thread's graveyard until the thread exits (`thread::set_tenant`), so `p` stays
            // valid for the whole call either way.
            match unsafe { &*p }.write(&self.core, current_thread_id, n, fill) {
                Outcome::Dead => p = std::ptr::null(),
                Outcome::Exhausted(generation) => return self.on_exhausted(generation),
                Outcome::Written | Outcome::Dropped => return,
            }
        }
    }

    /// Attaches a tenant for the calling thread (replacing a missing or dead one); null when the
    /// event must be dropped, which is then already counted.
    #[cold]
    #[inline(never)]
    fn attach_current(&self) -> *const Tenant {
        THREAD.with(|t| {
            if !t.enter_busy() {
                // An event from inside the recorder's slow path or a control call (an instrumented
                // allocator, a signal handler): attaching would take the locks already held.
                self.core.drops.count(DropReason::Reentrant);
                return std::ptr::null();
            }
            let p = self.attach(t).unwrap_or(std::ptr::null());
            t.leave_busy();
            p
        })
    }

    /// Gives the thread a tenant in this log (its own, or one from the pool), replacing a dead one.
    /// `None` (the drop already counted) when no trace is running or the thread is exiting.
    #[cold]
    #[inline(never)]
    fn attach(&self, t: &ThreadState) -> Option<*const Tenant> {
        if !t.arm_exit_guard() {
            // The thread is exiting and its tenants are retired: a new one would never be.
            self.core.drops.count(DropReason::ThreadExited);
            return None;
        }
        let tid = t.tid();
        let tenant = {
            let mut c = self.control();
            if c.running.is_none() {
                drop(c);
                self.core.drops.count(DropReason::Stopping);
                return None;
            }
            let config = c.config.clone().unwrap_or_default();
            let clock = c.clock.as_ref().map(|c| c.kind).unwrap_or_default();
            if config.policy == ThreadPolicy::Pool && !t.registered() {
                if c.pool.is_empty() {
                    // Writer streams 1..=n (validated to fit 16 bits); 0 is the threads' own.
                    let pool = (1..=config.pool_tenants)
                        .map(|k| Arc::new(Tenant::new(&self.core, clock, Some(k as u16), false, 0)));
                    c.pool = pool.collect();
                }
                c.pool[tid as usize % c.pool.len()].clone()
            } else {
                let exclusive_ok = crate::record::barrier::asymmetric_available();
                let tenant = Arc::new(Tenant::new(&self.core, clock, None, exclusive_ok, tid));
                c.tenants.push(tenant.clone());
                if let Some(sys) = c.running.as_ref().and_then(|r| r.system.as_ref()) {
                    sys.thread_attached();
                }
                tenant
            }
        };
        thread::sync_name(t);
        Some(t.set_tenant(self.slot(), tenant))
    }

    /// A Fixed buffer (of trace `generation`) just ran out: tracing is no longer enabled, and the
    /// stop callback runs here, on the thread whose event found it full, outside every tenant
    /// lock, provided that trace is still the running one. Generations are never reused (a freed
    /// buffer's address is, by the next trace's). If this thread is busy (a signal handler
    /// interrupted the recorder or a control call), the callback is deferred to when its control
    /// lock is released.
    #[cold]
    #[inline(never)]
    fn on_exhausted(&self, generation: u64) {
        if THREAD.with(|t| t.is_busy()) {
            // Relaxed: the value is all that is passed; `ControlGuard::drop` reads it on this
            // same thread, or under the control lock, which orders it.
            self.pending_exhausted.store(generation, Ordering::Relaxed);
            return;
        }
        let cb: Option<StopCallback> = {
            let c = self.control();
            let Some(r) = c.running.as_ref().filter(|r| {
                // SAFETY: the buffer stays alive while `running` holds it and we hold the lock.
                unsafe { &*r.buffer.0 }.generation == generation
            }) else {
                return;
            };
            // Relaxed: a status flag.
            self.enabled.store(false, Ordering::Relaxed);
            r.config.on_stop.clone()
        };
        if let Some(cb) = cb {
            cb(self);
        }
    }

    /// Arms `trigger` on the running trace (a Ring trace with a dump directory, see
    /// [`TraceConfig::trigger`]); returns its number, for [`disarm_trigger`](Self::disarm_trigger).
    pub fn arm_trigger(&self, trigger: trigger::Trigger) -> Result<u32, Error> {
        self.arm_trigger_into(trigger, None)
    }

    /// [`arm_trigger`](Self::arm_trigger), with `dir` as the dump directory if the trace has none.
    pub fn arm_trigger_into(
        &self,
        trigger: trigger::Trigger,
        dir: Option<&std::path::Path>,
    ) -> Result<u32, Error> {
        let mut c = self.control();
        let Some(r) = c.running.as_mut() else {
            return Err(Error::new(ErrorKind::NotRunning));
        };
        if r.config.mode != crate::BufferMode::Ring {
            return Err(Error::new(ErrorKind::Trigger(format!(
                "triggers need a Ring buffer (the flight recorder), not {:?}",
                r.config.mode
            ))));
        }
        r.triggers.arm(self, trigger, dir)
    }

    /// Disarms trigger `number` of the running trace; whether it was armed.
    pub fn disarm_trigger(&self, number: u32) -> bool {
        self.control().running.as_mut().is_some_and(|r| r.triggers.disarm(Some(number)) == 1)
    }

    /// Disarms every trigger of the running trace; how many were armed.
    pub fn disarm_all_triggers(&self) -> usize {
        self.control().running.as_mut().map_or(0, |r| r.triggers.disarm(None))
    }

    /// The armed triggers and what they did in the running trace (or, stopped, in the last one).
    pub fn triggers(&self) -> trigger::TriggerStatus {
        match self.control().running.as_ref() {
            Some(r) => r.triggers.status(self),
            None => trigger::status_of(self),
        }
    }

    /// Converts this log's clock ticks to nanoseconds.
    pub(crate) fn ticks_to_ns(&self, ticks: u64) -> f64 {
        // Relaxed: as in `duration_to_ticks`.
        ticks as f64 * f64::from_bits(NS_PER_TICK[self.slot as usize].load(Ordering::Relaxed))
    }

    /// Converts a duration to this log's clock ticks, for `trace_complete!`.
    #[inline]
    pub fn duration_to_ticks(&self, d: std::time::Duration) -> u64 {
        // Relaxed: set once at the first start, before any callsite of this log is enabled.
        let ns_per_tick = f64::from_bits(NS_PER_TICK[self.slot as usize].load(Ordering::Relaxed));
        (d.as_nanos() as f64 / ns_per_tick) as u64
    }
}

/// Clock kind per slot, readable without the control lock by `TraceLog::now`.
static CLOCK_HINTS: [std::sync::atomic::AtomicU8; MAX_LOGS] =
    [const { std::sync::atomic::AtomicU8::new(0) }; MAX_LOGS];
/// `f64` bits of nanoseconds per tick per slot (1.0 until calibrated).
static NS_PER_TICK: [std::sync::atomic::AtomicU64; MAX_LOGS] =
    [const { std::sync::atomic::AtomicU64::new(0x3ff0_0000_0000_0000) }; MAX_LOGS];

fn set_clock_hint(slot: u32, kind: ClockKind, ns_per_tick: f64) {
    // Relaxed: read by `TraceLog::now` and `duration_to_ticks`, which only pick a clock and a
    // scale; no event of this log is recorded before `start` publishes its buffer.
    CLOCK_HINTS[slot as usize].store(kind as u8, Ordering::Relaxed);
    NS_PER_TICK[slot as usize].store(ns_per_tick.to_bits(), Ordering::Relaxed);
}

impl Drop for TraceLog {
    fn drop(&mut self) {
        self.stop();
        let c = self.control.get_mut().unwrap_or_else(|p| p.into_inner());
        // Leave every tenant MasterLocked and dead: threads still pointing at them fail their
        // slave lock, see `dead`, and detach, without touching this log's memory.
        let all: Vec<Arc<Tenant>> = c.tenants.drain(..).chain(c.pool.drain(..)).collect();
        evict_all(&all, None, true);
        for t in &all {
            t.kill();
        }
        set_clock_hint(self.slot, ClockKind::Tsc, 1.0);
        // Relaxed: see `TraceLog::new`.
        SLOTS.fetch_and(!(1 << self.slot), Ordering::Relaxed);
        // Last: a fork's `prepare` holds this list (and so keeps this log's memory) while it forks.
        let me = std::ptr::from_ref(self) as usize;
        LIVE.lock().unwrap_or_else(|p| p.into_inner()).retain(|&a| a != me);
    }
}

/// The independent logs alive now (their addresses), for the fork handlers. A log leaves the list
/// at the end of its `Drop`, under this lock, so a fork that holds it sees only live logs.
static LIVE: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// The control lock's guard: derefs to `Control`, and on release clears the thread's busy mark
/// and runs a stop callback deferred while the lock was held.
struct ControlGuard<'a> {
    guard: std::mem::ManuallyDrop<MutexGuard<'a, Control>>,
    log: &'a TraceLog,
    was_busy: bool,
}

impl std::ops::Deref for ControlGuard<'_> {
    type Target = Control;
    fn deref(&self) -> &Control {
        &self.guard
    }
}

impl std::ops::DerefMut for ControlGuard<'_> {
    fn deref_mut(&mut self) -> &mut Control {
        &mut self.guard
    }
}

impl Drop for ControlGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: dropped exactly once, here; the field is not used afterwards. Unlocking before
        // clearing the busy mark leaves no window in which a signal handler on this thread could
        // block on a lock this thread holds.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.guard) };
        if self.was_busy {
            return; // an outer busy section clears the mark
        }
        THREAD.with(|t| t.leave_busy());
        // Relaxed: see `on_exhausted`.
        let pending = self.log.pending_exhausted.swap(0, Ordering::Relaxed);
        if pending != 0 {
            self.log.on_exhausted(pending);
        }
    }
}

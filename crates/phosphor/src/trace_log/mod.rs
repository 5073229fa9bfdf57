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
//!
//! The methods live by concern: `lifecycle.rs` (start, stop), `write.rs` (the hot-path entry,
//! attach, a Fixed buffer's exhaustion), `figures.rs` (stats, snapshots), `control_lock.rs` (the
//! control lock and its guard); this file holds the types, configuration and the clocks.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use phosphor_format::file::{Aggregate, AggregateKind};
use std::sync::{Arc, Mutex};

use crate::error::{Error, ErrorKind};
use crate::output::trace::Trace;
use crate::record::buffer::TraceBuffer;
use crate::record::clock::{ClockInfo, ClockKind};
use crate::record::tenant::{evict_all, LogCore, Tenant};
use crate::record::thread::THREAD;
use crate::registry::callsite;
use crate::registry::MAX_LOGS;
use crate::stats::{Drops, Stats};
use crate::trace_log::config::{TraceConfig, TraceLogConfig};

#[cfg(unix)]
mod after_fork;
mod alloc_count;
pub(crate) mod attach;
pub(crate) mod config;
mod control_lock;
mod figures;
#[cfg(unix)]
pub(crate) mod fork;
mod lifecycle;
pub mod recorder;
mod stop_gate;
pub mod stream;
mod streams;
mod subsystems;
pub(crate) mod system;
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
pub mod test_hooks;
pub mod trigger;
mod trigger_spec;
mod triggers;
mod write;

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
    /// The aggregate points' snapshots at the start, by callsite id.
    aggregates_at_start: HashMap<u32, Aggregate>,
    /// What runs with the trace (`attach.rs`): a streaming trace's collector, the triggers and
    /// their dump thread, the system context's collector.
    attached: attach::Attachments,
    /// The thread stopping this trace while `stop` joins its threads without the control lock
    /// (0: none); see `stop_gate.rs`.
    stopper: u32,
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
    /// What the last stopped trace's attachments kept (its datastreams' figures, its system
    /// status).
    kept: attach::Kept,
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
    /// Where calls that find a stop in progress wait for it (with `control`).
    stop_gate: stop_gate::StopGate,
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
            stop_gate: stop_gate::StopGate::new(),
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
                kept: attach::Kept(Vec::new()),
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

    /// What a crash dump reads without locks: the recording core (buffer pointer, drop counters).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the crash dump's (Linux only)
    pub(crate) fn core(&self) -> &LogCore {
        &self.core
    }

    /// The clock of the log's traces, once one has started.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the crash dump's (Linux only)
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
        // Through the lock, not `get_mut`: a fork's `prepare` on another thread may hold it (the
        // log is listed until the end of this), and its child reads this `Control`.
        let mut guard = self.control();
        let c = &mut *guard;
        // Leave every tenant MasterLocked and dead: threads still pointing at them fail their
        // slave lock, see `dead`, and detach, without touching this log's memory.
        let all: Vec<Arc<Tenant>> = c.tenants.drain(..).chain(c.pool.drain(..)).collect();
        evict_all(&all, None, true);
        for t in &all {
            t.kill();
        }
        drop(guard);
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

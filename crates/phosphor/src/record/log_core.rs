//! The part of a `TraceLog` that the write path touches ([`LogCore`]): the running trace's buffer
//! pointer, the drop counters (each lost event under its reason, [`DropReason`]), and the cold
//! re-check of a callsite an event may have raced a restart with. Nothing of a subsystem: what
//! the write path asks of the streaming collector goes through [`STREAM`]'s hooks.

use crate::record::buffer::TraceBuffer;
use crate::sync::{AtomicU64, HookSlot, Ordering};

#[cfg(loom)]
use loom::sync::atomic::AtomicPtr;
#[cfg(not(loom))]
use std::sync::atomic::AtomicPtr;

/// Why an event was not recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DropReason {
    /// A Fixed buffer had no chunk left.
    BufferFull,
    /// A Ring buffer's chunks were all held by tenants.
    NoChunk,
    /// A pool tenant was in use by another thread.
    Contended,
    /// Tracing was stopping (tenant master-locked, or the buffer already gone).
    Stopping,
    /// The thread was already inside the recorder (a signal handler interrupted an event).
    Reentrant,
    /// The thread's tenant had been torn down (thread exit in progress).
    ThreadExited,
    /// Writing the event unwound (a panic inside the critical section): nothing of it was kept.
    Unwound,
}

/// The drop counters of a `TraceLog`. They only grow; each trace reports its growth.
#[derive(Debug, Default)]
pub(crate) struct DropCounters {
    pub(crate) buffer_full: AtomicU64,
    pub(crate) no_chunk: AtomicU64,
    pub(crate) contended: AtomicU64,
    pub(crate) stopping: AtomicU64,
    pub(crate) reentrant: AtomicU64,
    pub(crate) thread_exited: AtomicU64,
    pub(crate) unwound: AtomicU64,
}

impl DropCounters {
    #[cold]
    pub(crate) fn count(&self, reason: DropReason) {
        let c = match reason {
            DropReason::BufferFull => &self.buffer_full,
            DropReason::NoChunk => &self.no_chunk,
            DropReason::Contended => &self.contended,
            DropReason::Stopping => &self.stopping,
            DropReason::Reentrant => &self.reentrant,
            DropReason::ThreadExited => &self.thread_exited,
            DropReason::Unwound => &self.unwound,
        };
        // Relaxed: a statistic; readers want the count, not an ordering with other memory.
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// What a writer in a Stream-mode trace asks of the streaming collector, off the fast path: when
/// it finds no free chunk (`Tenant::wait_for_chunk`) and when its fresh chunk starts with a
/// saturation marker (`Tenant::mark_saturation`). `trace_log/streams.rs` fills [`STREAM`] when a
/// streaming trace starts, before its buffer is published; empty, a writer neither waits nor
/// marks.
pub(crate) struct StreamHooks {
    /// The callsite id of the saturation marker (0: none).
    pub(crate) saturation_id: fn() -> u32,
    /// How long a writer of the log in slot `slot` waits for a free chunk before it drops its
    /// event (ns; 0: it does not wait): set while a `Block` datastream is open.
    pub(crate) block_ns: fn(u32) -> u64,
}

/// The streaming collector's write-path hooks.
pub(crate) static STREAM: HookSlot<StreamHooks> = HookSlot::empty();

/// The part of a `TraceLog` the write path touches.
#[derive(Debug)]
pub(crate) struct LogCore {
    /// The running trace's buffer, or null. Tenants load it only inside a slave critical section;
    /// `stop` clears it before `evict_all`, and so owns the buffer once eviction is done.
    pub(crate) buffer: AtomicPtr<TraceBuffer>,
    /// Core, not a subsystem's: every lost event is counted here under its reason, whichever
    /// subsystem (if any) reads the figures.
    pub(crate) drops: DropCounters,
    /// The log's slot: which enabled bit of a callsite's state is this log's.
    pub(crate) slot: u32,
}

impl LogCore {
    #[cfg(not(loom))]
    pub(crate) const fn new(slot: u32) -> LogCore {
        use std::sync::atomic::AtomicU64 as A;
        LogCore {
            buffer: AtomicPtr::new(std::ptr::null_mut()),
            drops: DropCounters {
                buffer_full: A::new(0),
                no_chunk: A::new(0),
                contended: A::new(0),
                stopping: A::new(0),
                reentrant: A::new(0),
                thread_exited: A::new(0),
                unwound: A::new(0),
            },
            slot,
        }
    }

    #[cfg(loom)]
    pub(crate) fn new(slot: u32) -> LogCore {
        LogCore { buffer: AtomicPtr::new(std::ptr::null_mut()), drops: DropCounters::default(), slot }
    }

    /// Whether this log still traces the callsite `id` (an event written into a chunk of a new
    /// trace may have passed its enabled check in the previous one). Unknown ids (the recorder's
    /// own markers) are traced.
    #[cold]
    pub(super) fn still_traces(&self, id: u32) -> bool {
        #[cfg(not(loom))]
        {
            crate::registry::callsite::by_id(id)
                .is_none_or(|cs| crate::registry::callsite::enabled_in(cs.state(), self.slot))
        }
        #[cfg(loom)]
        {
            let _ = id;
            true
        }
    }
}

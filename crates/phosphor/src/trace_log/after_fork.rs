//! The log's half of `fork` (see `crate::trace_log::fork`): its control lock held across the fork, and the
//! child's stop of the running trace, which waits for no one.

use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};

use super::{Control, TraceLog, GLOBAL, LIVE};
use crate::record::thread::THREAD;
use crate::registry::callsite;
use crate::stats::Stats;

/// Every log's control lock and the list of live logs, held across a `fork` (see `fork.rs`).
pub(crate) struct ForkLocks {
    /// Dropped first (fields drop in order): the logs' locks, then the list.
    controls: Vec<(&'static TraceLog, MutexGuard<'static, Control>)>,
    _live: MutexGuard<'static, Vec<usize>>,
}

impl ForkLocks {
    /// Takes the list of live logs, then each log's control lock, by slot.
    pub(crate) fn take() -> ForkLocks {
        let live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: a listed log is alive, and stays so while we hold the list (its `Drop` unlists
        // it under this lock before its memory goes), which `ForkLocks` does for as long as it
        // holds the log's guard: the fields drop in that order.
        let mut logs: Vec<&'static TraceLog> =
            live.iter().map(|&a| unsafe { &*(a as *const TraceLog) }).collect();
        logs.push(&GLOBAL);
        logs.sort_by_key(|l| l.slot);
        let controls =
            logs.into_iter().map(|l| (l, l.control.lock().unwrap_or_else(|p| p.into_inner()))).collect();
        ForkLocks { controls, _live: live }
    }

    /// In the child: stops every log's running trace there (see `fork.rs`), then releases.
    pub(crate) fn reset_in_child(mut self) {
        for (log, c) in &mut self.controls {
            log.reset_in_child(c);
        }
    }
}

impl TraceLog {
    /// The fork child's half of `stop`: no thread but this one exists, so nothing is waited for.
    /// Every tenant is unlocked by force and emptied (the other threads' retired), the running
    /// trace's buffer is freed (the child's copy; a ring file is only unmapped here) without
    /// being read, and its collector forgotten: its threads are gone, and its sinks must not
    /// write the parent's buffered bytes again. The child then has no trace, as if none had run.
    fn reset_in_child(&self, c: &mut Control) {
        let mine = THREAD.try_with(|t| t.tenant(self.slot)).unwrap_or(std::ptr::null());
        // A set slave flag on this thread's own tenant is this thread's write, which the fork
        // interrupted and which resumes once the fork returns (see `fork.rs`): that tenant is
        // killed rather than emptied, and the buffer kept. (A pool tenant's flag may be another
        // thread's; it is treated the same, at the cost of a kept buffer.)
        let mut interrupted = false;
        for t in c.tenants.iter().chain(c.pool.iter()) {
            // SAFETY: we are the child's only thread, holding this log's control lock.
            interrupted |= unsafe { t.reset_after_fork(std::ptr::eq(Arc::as_ptr(t), mine)) };
        }
        if interrupted {
            c.tenants.retain(|x| !std::ptr::eq(Arc::as_ptr(x), mine));
            c.pool.retain(|x| !std::ptr::eq(Arc::as_ptr(x), mine));
        }
        c.tenants.retain(|t| !t.is_retired());
        if let Some(mut running) = c.running.take() {
            callsite::disable_slot(self.slot);
            if running.config.ring_file.is_some() {
                callsite::set_ring(None);
            }
            // Relaxed: a status flag; single-threaded here.
            self.enabled.store(false, Ordering::Relaxed);
            // Relaxed: single-threaded here.
            self.core.buffer.store(std::ptr::null_mut(), Ordering::Relaxed);
            // Their threads are the parent's: forgotten, never joined.
            for a in std::mem::take(&mut running.attached.0) {
                a.forget_in_child();
            }
            if interrupted {
                // The interrupted write holds a chunk of it: kept, and counted.
                super::fork::count_buffer_kept();
            } else {
                // SAFETY: unpublished above, and no thread but this one exists to hold or reach
                // it (this thread is inside no write into it).
                drop(unsafe { Box::from_raw(running.buffer.0) });
            }
        }
        c.last_trace = None;
        c.last_stats = Stats::ZERO;
        c.kept.0.clear();
        c.drops_baseline = self.load_drops();
        // Relaxed: single-threaded here.
        self.pending_exhausted.store(0, Ordering::Relaxed);
    }
}

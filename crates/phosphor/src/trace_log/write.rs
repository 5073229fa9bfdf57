//! The recording entry: `write_event`, the cold attach path, and a Fixed buffer's exhaustion.

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::TraceLog;
use crate::record::tenant::{DropReason, Fill, Outcome, Tenant};
use crate::record::thread::{self, current_thread_id, ThreadState, THREAD};
use crate::registry::MAX_LOGS;
use crate::trace_log::config::{StopCallback, ThreadPolicy};

impl TraceLog {
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
    pub(super) fn attach_current(&self) -> *const Tenant {
        THREAD.with(|t| {
            if !t.enter_busy() {
                // An event from inside the recorder's slow path or a control call (an instrumented
                // allocator, a signal handler): attaching would take the locks already held.
                self.core.drops.count(DropReason::Reentrant);
                return std::ptr::null();
            }
            #[cfg(all(feature = "test-hooks", target_os = "linux"))]
            super::test_hooks::paused(self, super::test_hooks::Pause::Attaching);
            let p = self.attach(t).unwrap_or(std::ptr::null());
            t.leave_busy();
            p
        })
    }

    /// Gives the thread a tenant in this log (its own, or one from the pool), replacing a dead one.
    /// `None` (the drop already counted) when no trace is running or the thread is exiting.
    #[cold]
    #[inline(never)]
    pub(super) fn attach(&self, t: &ThreadState) -> Option<*const Tenant> {
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
                for a in c.running.iter().flat_map(|r| &r.attached.0) {
                    a.thread_attached();
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
    /// interrupted the recorder, a control call, an attach, a registration or a fork handler), it
    /// is deferred to when the thread leaves that busy section (`run_deferred`).
    #[cold]
    #[inline(never)]
    pub(super) fn on_exhausted(&self, generation: u64) {
        if THREAD.with(|t| t.is_busy()) {
            // Relaxed: the value is all that is passed; `run_deferred` (or `ControlGuard::drop`)
            // reads it on this same thread, or under the control lock, which orders it.
            self.pending_exhausted.store(generation, Ordering::Relaxed);
            self.defer_exhausted();
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
}

impl TraceLog {
    /// Makes this thread handle this log's pending exhaustion when it leaves its busy section,
    /// holding a reference to the log until then.
    #[cold]
    fn defer_exhausted(&self) {
        let _ = DEFERRED.try_with(|d| {
            let cell = &d[self.slot as usize];
            if !cell.get().is_null() {
                // Deferred already, and for this very log: the reference held keeps it alive, so
                // no other log can have its slot.
                return;
            }
            if !std::ptr::eq(self, super::TraceLog::global()) {
                // SAFETY: [1] every log but the global one is made by `TraceLog::new`, inside an
                // `Arc`, so `self` is that `Arc`'s pointer; [2] its strong count is at least 1:
                // this runs inside `write_event`, whose caller holds a reference to the log, and a
                // reference to an independent log comes from an `Arc` that outlives the call (a
                // log's own `Drop`, which runs at count 0, writes no event into itself). The
                // count is given back in `run_deferred`.
                unsafe { Arc::increment_strong_count(std::ptr::from_ref(self)) };
            }
            cell.set(self);
            THREAD.with(|t| t.defer(run_deferred));
        });
    }
}

thread_local! {
    /// The logs whose Fixed buffer ran out while this thread was busy, by slot; each independent
    /// one holds a strong count (see `defer_exhausted`). Const, without a destructor: a thread
    /// that exits before leaving its busy section leaks those counts (the logs are never freed)
    /// rather than run a stop callback during its exit.
    static DEFERRED: [Cell<*const TraceLog>; MAX_LOGS] =
        const { [const { Cell::new(std::ptr::null()) }; MAX_LOGS] };
}

/// Handles the exhaustions deferred while this thread was busy (see `on_exhausted`): run by
/// `ThreadState::leave_busy`, when the thread holds none of the recorder's locks.
fn run_deferred() {
    for slot in 0..MAX_LOGS {
        let p = DEFERRED.try_with(|d| d[slot].replace(std::ptr::null())).unwrap_or(std::ptr::null());
        if p.is_null() {
            continue;
        }
        // SAFETY: set by `defer_exhausted`, which holds a strong count of it (or it is the
        // static global log), given back only below.
        let log = unsafe { &*p };
        // Relaxed: see `on_exhausted`.
        let pending = log.pending_exhausted.swap(0, Ordering::Relaxed);
        if pending != 0 {
            log.on_exhausted(pending);
        }
        if !std::ptr::eq(p, super::TraceLog::global()) {
            // SAFETY: the strong count `defer_exhausted` took; this may free the log, which is
            // not used afterwards.
            unsafe { Arc::decrement_strong_count(p) };
        }
    }
}

//! The control lock: taking it marks the thread busy (see `ThreadState::busy`), and releasing it
//! runs a stop callback deferred while it was held.

use super::{Control, TraceLog};
use crate::record::thread::THREAD;
use std::sync::atomic::Ordering;
use std::sync::MutexGuard;

impl TraceLog {
    /// Takes the control lock, marking the thread busy so that an event from a signal handler
    /// interrupting it neither attaches nor runs the stop callback (which both take this lock).
    pub(super) fn control(&self) -> ControlGuard<'_> {
        let was_busy = THREAD.with(|t| !t.enter_busy());
        // Every critical section leaves Control consistent before it can panic (allocation
        // failure aside), so a poisoned lock is safe to keep using.
        let guard = self.control.lock().unwrap_or_else(|p| p.into_inner());
        ControlGuard { guard: std::mem::ManuallyDrop::new(guard), log: self, was_busy }
    }

    /// `c` once no other thread is stopping the trace (see `stop_gate.rs`), and whether it waited.
    pub(super) fn wait_for_stop<'a>(&'a self, mut c: ControlGuard<'a>, me: u32) -> (ControlGuard<'a>, bool) {
        let stopper = |c: &Control| c.running.as_ref().map_or(0, |r| r.stopper);
        if stopper(&c) == 0 || stopper(&c) == me {
            return (c, false);
        }
        #[cfg(all(feature = "test-hooks", target_os = "linux"))]
        super::test_hooks::paused(self, super::test_hooks::Pause::WaitingForStop);
        // SAFETY: the guard is taken out exactly once and put back below, before `c` is used or
        // dropped again; nothing between can unwind (the wait keeps a poisoned lock, and
        // `stopper` cannot panic), so `c`'s Drop never sees the field empty.
        let guard = unsafe { std::mem::ManuallyDrop::take(&mut c.guard) };
        let (guard, waited) = self.stop_gate.wait_while_stopping(guard, me, stopper);
        c.guard = std::mem::ManuallyDrop::new(guard);
        (c, waited)
    }

    /// The control lock if it is free now (`None` at once if another thread holds it), marking
    /// the thread busy as [`control`](Self::control) does: an event recorded meanwhile on this
    /// thread (an instrumented allocator, a signal handler) neither attaches nor runs the stop
    /// callback, both of which take this lock. For paths that must never wait for it: panic
    /// hooks, the streaming collector.
    pub(super) fn try_control(&self) -> Option<ControlGuard<'_>> {
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
}

/// The control lock's guard: derefs to `Control`, and on release clears the thread's busy mark
/// and runs a stop callback deferred while the lock was held.
pub(super) struct ControlGuard<'a> {
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

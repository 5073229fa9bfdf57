//! A stop in progress is state under the control lock, and the condition variable that the calls
//! waiting for it sleep on.
//!
//! `stop` joins the trigger dump thread and the system collector without the control lock (the
//! dump thread's last snapshot takes that lock). While it does, the running trace names its
//! stopper (`Running::stopper`, a thread id), and every other `stop` or `start` of the log waits
//! here until the stop has ended: a later `stop` then returns (it never stops again, so it cannot
//! free the buffer that the first one's dump thread is still reading, nor drop its system
//! context), and a `start` goes on once the trace is gone. A call on the stopper's own thread (a
//! stop callback run by a signal handler's event while the stop joins) does not wait for itself.
//!
//! Loom model: `loom_stop.rs` (two stops and a start around a dump thread that reads the buffer).

#[cfg(loom)]
use loom::sync::{Condvar, MutexGuard};
#[cfg(not(loom))]
use std::sync::{Condvar, MutexGuard};

/// Where the calls that find a stop in progress sleep.
pub(crate) struct StopGate {
    ended: Condvar,
}

impl StopGate {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> StopGate {
        StopGate { ended: Condvar::new() }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> StopGate {
        StopGate { ended: Condvar::new() }
    }

    /// Waits, the lock released meanwhile, while `stopper` (read under the lock: the stopping
    /// thread's id, or 0) names a thread other than `me`. Returns the guard and whether it waited:
    /// a `stop` that waited returns, since the stop it waited for did its work.
    pub(crate) fn wait_while_stopping<'a, T>(
        &self,
        mut guard: MutexGuard<'a, T>,
        me: u32,
        stopper: impl Fn(&T) -> u32,
    ) -> (MutexGuard<'a, T>, bool) {
        let mut waited = false;
        loop {
            let s = stopper(&guard);
            if s == 0 || s == me {
                return (guard, waited);
            }
            waited = true;
            // A poisoned lock is kept: see `TraceLog::control`.
            guard = self.ended.wait(guard).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The stop has ended (its stopper cleared under the lock): wakes every waiter.
    pub(crate) fn ended(&self) {
        self.ended.notify_all();
    }
}

/// What a `stop` that has the control lock does, given the running trace's stopper (`None`: no
/// trace runs) and whether it waited for another stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StopAction {
    /// Stop the trace: this call is its stopper.
    Stop,
    /// Nothing to do: no trace runs, another stop did the work while this one waited, or this
    /// thread is already stopping it.
    Return,
}

/// See [`StopAction`].
pub(crate) fn stop_action(stopper: Option<u32>, waited: bool) -> StopAction {
    match stopper {
        Some(0) if !waited => StopAction::Stop,
        _ => StopAction::Return,
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn only_a_call_that_finds_a_trace_nobody_stops_and_did_not_wait_stops_it() {
        assert_eq!(stop_action(Some(0), false), StopAction::Stop);
        assert_eq!(stop_action(Some(0), true), StopAction::Return, "waited: the other stop did it");
        assert_eq!(stop_action(Some(7), false), StopAction::Return, "this thread is stopping it");
        assert_eq!(stop_action(None, false), StopAction::Return, "no trace");
        assert_eq!(stop_action(None, true), StopAction::Return);
    }
}

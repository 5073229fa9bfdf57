//! Test-only pauses (feature `test-hooks`, which only the crate's own tests enable): a hook set
//! for one log runs at chosen points of its `start` and `stop`, so that a test can hold a call
//! there and show a race deterministically, without sleeping and hoping.

use std::sync::{Arc, Mutex};

use crate::TraceLog;

/// Where a hook runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pause {
    /// `stop` has made itself the trace's stopper and is about to join the trigger dump thread
    /// and the system collector, without the control lock.
    StopJoining,
    /// A `stop` or `start` found another thread's stop in progress and is about to wait for it.
    /// Runs under the control lock, so the waiter is asleep before that stop can end.
    WaitingForStop,
    /// The calling thread is attaching a tenant in the log: it is marked busy, its control lock
    /// not held.
    Attaching,
}

type Hook = Arc<dyn Fn(Pause) + Send + Sync>;

/// The hooks, by the address of their log.
static HOOKS: Mutex<Vec<(usize, Hook)>> = Mutex::new(Vec::new());

/// Runs `hook` at every [`Pause`] of `log` from now on (`None`: no more).
pub fn set(log: &TraceLog, hook: Option<Hook>) {
    let key = std::ptr::from_ref(log) as usize;
    let mut hooks = HOOKS.lock().unwrap_or_else(|p| p.into_inner());
    hooks.retain(|(k, _)| *k != key);
    hooks.extend(hook.map(|h| (key, h)));
}

/// Runs `hook` on every thread that takes the callsite registry's lock, with the lock held
/// (process-wide: the hook tells its own thread apart).
pub fn set_registry_hook(hook: Option<fn()>) {
    *crate::registry::callsite::HELD_HOOK.lock().unwrap_or_else(|p| p.into_inner()) = hook;
}

/// `log` reached `at`: runs its hook, if it has one (without the hooks' lock).
pub(crate) fn reached(log: &TraceLog, at: Pause) {
    let key = std::ptr::from_ref(log) as usize;
    let hook = HOOKS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, h)| h.clone());
    if let Some(hook) = hook {
        hook(at);
    }
}

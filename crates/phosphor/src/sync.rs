//! Atomics used by the lock and buffer code, swapped for loom's under `--cfg loom`.
//!
//! Only the modules that loom models (`chunk_lock`, `buffer`, `chunk`, `pool`, `tenant`, `intern`,
//! `site_cache`, `trigger_gate`) take their atomics from here. Callsite statics need `const` constructors, which
//! loom's atomics lack, so they use std's.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
#[cfg(loom)]
pub(crate) use loom::thread::yield_now;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;

/// A `static` slot for a subsystem's hooks (a `&'static T`), empty until the subsystem
/// [`fill`](Self::fill)s it: how the recording core calls a subsystem it does not name
/// (`trace_log/attach.rs`). Std's atomic even under loom, so that the slot is `const`.
pub(crate) struct HookSlot<T: 'static>(std::sync::atomic::AtomicPtr<T>);

impl<T: Sync + 'static> HookSlot<T> {
    /// An empty slot.
    pub(crate) const fn empty() -> HookSlot<T> {
        HookSlot(std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()))
    }

    /// Puts `hooks` in the slot (again, if they are there already).
    pub(crate) fn fill(&self, hooks: &'static T) {
        // SeqCst: publishes `*hooks` to `get`'s loads, and takes part in the crash dump's Dekker
        // pair (the dump's hooks are filled before its handler can run; `TraceLog::stop`'s SeqCst
        // swap of the buffer pointer, then its load of this slot, cannot both miss the dump).
        self.0.store(std::ptr::from_ref(hooks).cast_mut(), std::sync::atomic::Ordering::SeqCst);
    }

    /// The hooks, once filled.
    #[inline]
    pub(crate) fn get(&self) -> Option<&'static T> {
        // SeqCst: see `fill`.
        let p = self.0.load(std::sync::atomic::Ordering::SeqCst);
        // SAFETY: the slot holds null or what `fill` made of a `&'static T`: valid for ever, and
        // only ever read through (`T: Sync`, so shared across threads).
        unsafe { p.as_ref() }
    }
}

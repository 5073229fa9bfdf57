//! Allocation counting: [`Traced`], a wrapper global allocator (issue 23).
//!
//! # Brief overview
//!
//! ```
//! use std::alloc::System;
//!
//! #[global_allocator]
//! static ALLOC: phosphor::alloc::Traced<System> = phosphor::alloc::Traced::new(System);
//! # fn main() { assert!(phosphor::alloc::installed()); }
//! ```
//!
//! [`Traced`] forwards every call to the allocator it wraps and counts it twice, on the calling
//! thread, never with a lock, a system call or an atomic read-modify-write:
//!
//! * for the thread, in `const`-initialised thread-local `Cell`s without a destructor (so no
//!   lazy-initialisation branch, no destructor registration, and valid while the thread's other
//!   thread locals are destroyed): its allocations and their bytes. A scope of a trace with
//!   [`allocations`](crate::TraceConfig::allocations) keeps them in the thread's mark stack when
//!   it opens (`marks.rs`), and records the difference when it closes as its
//!   `phosphor/scope_alloc` event ([`unmatched_scopes`] counts the closes that found no mark);
//! * for the process, in the thread's slot of a static table (`totals.rs`): allocations, frees
//!   and their bytes, which [`heap_totals`] sums for the heap counter.
//!
//! A `realloc` counts as one allocation of the new size and one free of the old size; an
//! allocation that fails is not counted. No event is written per allocation.
//!
//! # The recorder's own allocations
//!
//! The recorder allocates on its slow paths (a thread's first event attaches a tenant, a
//! callsite's first event registers it, `start` and `stop` under the control lock). It marks the
//! thread busy meanwhile (`record/thread.rs`), whose hooks (plugged in by
//! `trace_log/alloc_count.rs` when a trace first starts) tell this module: what is allocated between
//! `recorder_enter` and `recorder_leave` still counts for the process, but is kept out of the
//! thread's scope counts, which then hold only the program's own allocations. The allocator itself
//! never calls into the recorder, so it can never wait on a lock the recorder holds.

mod marks;
mod totals;

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

pub(crate) use marks::{count_scope_alloc_event, discard_mark, new_counting_period, pop_mark, push_mark};
pub use marks::{scope_alloc_events, unmatched_scopes, MARKS};
pub use totals::{heap_totals, installed, unslotted_threads, SLOTS};

/// A global allocator that counts allocations per thread and per process, around `A`.
///
/// Install it with `#[global_allocator]` (see the [module docs](self)); then
/// [`TraceConfig::allocations`](crate::TraceConfig::allocations) records each scope's
/// allocations, and [`heap_totals`] gives the process's. The cost is a few thread-local additions
/// per call (measured in BENCHMARKS.md).
#[derive(Debug, Default)]
pub struct Traced<A> {
    inner: A,
}

impl<A> Traced<A> {
    /// Wraps `inner`.
    pub const fn new(inner: A) -> Traced<A> {
        Traced { inner }
    }

    /// The allocator it wraps.
    pub fn inner(&self) -> &A {
        &self.inner
    }
}

// SAFETY: every method forwards to `A` with the caller's arguments unchanged and returns what `A`
// returned, so `A`'s guarantees are `Traced`'s; the counting beside it touches no allocation and
// never allocates (const thread locals and static atomics only; see `totals.rs` for the one cold
// path that may, and its guard).
unsafe impl<A: GlobalAlloc> GlobalAlloc for Traced<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded; the caller upholds `alloc`'s contract for `layout`.
        let p = unsafe { self.inner.alloc(layout) };
        if !p.is_null() {
            count_alloc(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let p = unsafe { self.inner.alloc_zeroed(layout) };
        if !p.is_null() {
            count_alloc(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded; the caller upholds `dealloc`'s contract for `ptr` and `layout`.
        unsafe { self.inner.dealloc(ptr, layout) };
        totals::count_free(layout.size());
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded; the caller upholds `realloc`'s contract.
        let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count_alloc(new_size);
            totals::count_free(layout.size());
        }
        p
    }
}

/// One thread's counts. `const`-initialised and free of `Drop`, so reaching it is a TLS offset
/// with no state check, and it works until the thread is gone.
struct Local {
    /// Allocations this thread made, and their bytes.
    allocs: Cell<u64>,
    bytes: Cell<u64>,
    /// The part of `allocs` and `bytes` the recorder made.
    recorder_allocs: Cell<u64>,
    recorder_bytes: Cell<u64>,
    /// `allocs` and `bytes` when the recorder's slow path began (valid while `in_recorder`).
    entered_allocs: Cell<u64>,
    entered_bytes: Cell<u64>,
    in_recorder: Cell<bool>,
}

thread_local! {
    static LOCAL: Local = const {
        Local {
            allocs: Cell::new(0),
            bytes: Cell::new(0),
            recorder_allocs: Cell::new(0),
            recorder_bytes: Cell::new(0),
            entered_allocs: Cell::new(0),
            entered_bytes: Cell::new(0),
            in_recorder: Cell::new(false),
        }
    };
}

#[inline(always)]
fn count_alloc(size: usize) {
    count_thread(size);
    totals::count_alloc(size);
}

#[inline(always)]
fn count_thread(size: usize) {
    LOCAL.with(|l| {
        l.allocs.set(l.allocs.get().wrapping_add(1));
        l.bytes.set(l.bytes.get().wrapping_add(size as u64));
    });
}

/// The recorder's slow path begins on this thread (it marked the thread busy): what it allocates
/// until [`recorder_leave`] stays out of the thread's scope counts.
pub(crate) fn recorder_enter() {
    LOCAL.with(|l| {
        if !l.in_recorder.replace(true) {
            l.entered_allocs.set(l.allocs.get());
            l.entered_bytes.set(l.bytes.get());
        }
    });
}

/// The recorder's slow path ends on this thread.
pub(crate) fn recorder_leave() {
    LOCAL.with(|l| {
        if l.in_recorder.replace(false) {
            let allocs = l.allocs.get().wrapping_sub(l.entered_allocs.get());
            let bytes = l.bytes.get().wrapping_sub(l.entered_bytes.get());
            l.recorder_allocs.set(l.recorder_allocs.get().wrapping_add(allocs));
            l.recorder_bytes.set(l.recorder_bytes.get().wrapping_add(bytes));
        }
    });
}

/// This thread's allocations so far and their bytes, the recorder's own left out (counted only
/// while [`Traced`] is the global allocator; zero otherwise).
pub fn thread_allocations() -> (u64, u64) {
    LOCAL.with(|l| {
        let (mut allocs, mut bytes) = (l.allocs.get(), l.bytes.get());
        if l.in_recorder.get() {
            // Read inside the recorder's slow path: what it allocated so far is its own.
            allocs = l.entered_allocs.get();
            bytes = l.entered_bytes.get();
        }
        (allocs.wrapping_sub(l.recorder_allocs.get()), bytes.wrapping_sub(l.recorder_bytes.get()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn since((allocs, bytes): (u64, u64)) -> (u64, u64) {
        let (a, b) = thread_allocations();
        (a.wrapping_sub(allocs), b.wrapping_sub(bytes))
    }

    #[test]
    fn the_recorders_allocations_stay_out_of_the_thread_counts() {
        // The unit-test binary's global allocator is not `Traced`: drive the thread's counters.
        let start = thread_allocations();
        count_thread(10);
        recorder_enter();
        count_thread(100);
        let inside = thread_allocations();
        recorder_enter(); // nested: still one slow path
        count_thread(1000);
        recorder_leave();
        count_thread(5);
        assert_eq!(since(start), (2, 15));
        assert_eq!(since(inside), (1, 5), "counts read inside the recorder exclude it too");
    }
}

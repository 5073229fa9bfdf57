//! The mark stack: where a counting scope keeps its thread's allocation counts from when it
//! opened, so that its guard carries nothing more than an uncounted scope's.
//!
//! A scope whose trace counts allocations opens out of line (its callsite is armed) and pushes a
//! mark, {callsite id, allocations, bytes}, onto this thread's stack: a ring of [`MARKS`] entries,
//! a top and a length, in a `const`-initialised thread local without `Drop` (no lazy
//! initialisation, no destructor, no allocation). Its close, out of line too, pops the mark of its
//! callsite and records the difference.
//!
//! # Matching a close to its mark
//!
//! Scopes close in the reverse order they opened, so the mark is normally on top. The pop scans
//! down from the top for the closing callsite's id and discards what lies above it: marks of guards
//! that never closed on this thread (forgotten with `std::mem::forget`, or moved to another thread
//! and closed there). A close that finds no mark records no `phosphor/scope_alloc` and counts in
//! [`unmatched_scopes`]:
//!
//! * its mark was pushed out: a push onto a full stack overwrites the oldest mark. That is how the
//!   stack recovers from marks no close will ever take (guards forgotten or moved away, with no
//!   counting scope around them to discard them): they are the oldest, and go first. A recursion
//!   deeper than [`MARKS`] loses its outermost scopes' counts this way, and its inner ones stay
//!   exact;
//! * its guard was moved in from another thread, whose counts are not this thread's;
//! * it opened before the trace that closes it started counting: each start of a counting trace
//!   begins a new *period* of its log's slot, and a mark of an earlier period is stale (a push
//!   also discards the stale marks on top of the stack, such as those of scopes that closed after
//!   their trace stopped).
//!
//! A scope whose argument panics pushed its mark (the check comes before the arguments) but never
//! gets a guard: the macro's unwinding path takes the mark back ([`discard_mark`]).
//!
//! The counts are the thread's: a scope held across an `.await` counts what its thread allocated
//! meanwhile, whichever task did, and if the task resumes on another thread its scope is unmatched.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The counting scopes a thread can have open at once with their counts recorded.
pub const MARKS: usize = 64;

/// The logs a mark can belong to: `registry::MAX_LOGS`, the enabled half of a callsite's state.
const LOGS: usize = 32;

/// One open counting scope: its callsite, its log's slot and that slot's period, and the thread's
/// counts when it opened.
#[derive(Clone, Copy)]
struct Mark {
    id: u32,
    slot: u32,
    period: u32,
    allocs: u64,
    bytes: u64,
}

impl Mark {
    /// Whether its trace is still the one counting in its slot.
    #[inline(always)]
    fn current(&self) -> bool {
        // Relaxed: see `new_counting_period`.
        PERIODS[self.slot as usize % LOGS].load(Ordering::Relaxed) == self.period
    }
}

/// One thread's stack, a ring: the marks are `marks[(top - len) % MARKS..top % MARKS]`, oldest
/// first. `const`-initialised and free of `Drop`, as the thread's counters are.
struct Stack {
    marks: [Cell<Mark>; MARKS],
    /// One past the newest mark, as a count of pushes minus pops (wrapping; used modulo `MARKS`).
    top: Cell<usize>,
    /// Marks held, at most `MARKS`.
    len: Cell<usize>,
}

impl Stack {
    /// The mark `k` places below the top (0: the newest); `k < len`.
    fn below_top(&self, k: usize) -> Mark {
        self.marks[self.top.get().wrapping_sub(1 + k) % MARKS].get()
    }

    /// Removes the `n` newest marks.
    fn drop_top(&self, n: usize) {
        self.top.set(self.top.get().wrapping_sub(n));
        self.len.set(self.len.get() - n);
    }
}

thread_local! {
    static STACK: Stack = const {
        Stack {
            marks: [const { Cell::new(Mark { id: 0, slot: 0, period: 0, allocs: 0, bytes: 0 }) }; MARKS],
            top: Cell::new(0),
            len: Cell::new(0),
        }
    };
}

thread_local! {
    /// The `phosphor/scope_alloc` events this thread has written (or had dropped).
    static SCOPE_EVENTS: Cell<u64> = const { Cell::new(0) };
}

/// How many `phosphor/scope_alloc` events this thread has emitted since it started: each one is
/// recorded or counted as dropped, like any event. A program that checks its trace's accounting
/// (`recorded + dropped == emitted`, as `phosphor demo` does) adds them to the events it emitted
/// itself.
pub fn scope_alloc_events() -> u64 {
    SCOPE_EVENTS.with(Cell::get)
}

/// Counts one `phosphor/scope_alloc` event of this thread, before it is written.
pub(crate) fn count_scope_alloc_event() {
    SCOPE_EVENTS.with(|c| c.set(c.get().wrapping_add(1)));
}

/// Per log slot: bumped when a trace of that slot that counts allocations starts.
static PERIODS: [AtomicU32; LOGS] = [const { AtomicU32::new(0) }; LOGS];
/// Closes of counting scopes that found no mark.
static UNMATCHED: AtomicU64 = AtomicU64::new(0);

/// How many counting scopes closed without finding the mark of their open, so recorded no
/// `phosphor/scope_alloc` (docs/ALLOC.md): their mark was pushed out by [`MARKS`] newer ones (a
/// deeper recursion's outer scopes), they closed on another thread than the one that opened them,
/// or they opened before their log's trace started counting. Process-wide, since the process
/// started.
///
/// Each thread keeps its counting scopes' opening counts in a stack of [`MARKS`] entries rather
/// than in their guards, so that a scope no counting trace takes costs nothing. A close takes the
/// mark of its callsite nearest the top and discards those above it (guards forgotten, or moved
/// to another thread), so the scopes around a lost one stay exact; a push onto a full stack
/// overwrites the oldest mark, so marks that no close takes never block the newer scopes. In async code the counts are
/// the thread's, not the task's: a scope held across an `.await` counts what its thread allocated
/// meanwhile, and is unmatched if the task resumes on another thread.
pub fn unmatched_scopes() -> u64 {
    // Relaxed: a statistic; it orders nothing.
    UNMATCHED.load(Ordering::Relaxed)
}

/// A trace of slot `slot` that counts allocations starts: the marks of its slot's earlier traces
/// are stale.
pub(crate) fn new_counting_period(slot: u32) {
    // Relaxed: a scope racing the start may see the old period or the new one. With the old, its
    // mark is stale at once, and its close is unmatched (counted); with the new, it counts in the
    // new trace. The period guards no other memory.
    PERIODS[slot as usize % LOGS].fetch_add(1, Ordering::Relaxed);
}

/// A counting scope of callsite `id`, in the log of slot `slot`, opens on this thread: pushes the
/// thread's counts (over the oldest mark, if the stack is full).
pub(crate) fn push_mark(slot: u32, id: u32) {
    let (allocs, bytes) = super::thread_allocations();
    // Relaxed: see `new_counting_period`.
    let period = PERIODS[slot as usize % LOGS].load(Ordering::Relaxed);
    STACK.with(|s| {
        // Marks of traces that stopped meanwhile would only take room.
        while s.len.get() > 0 && !s.below_top(0).current() {
            s.drop_top(1);
        }
        let top = s.top.get();
        s.marks[top % MARKS].set(Mark { id, slot, period, allocs, bytes });
        s.top.set(top.wrapping_add(1));
        s.len.set((s.len.get() + 1).min(MARKS));
    });
}

/// A counting scope of callsite `id`, in the log of slot `slot`, closes on this thread: its
/// allocations and bytes since its mark, or `None` (counted in [`unmatched_scopes`]) if it has
/// none.
pub(crate) fn pop_mark(slot: u32, id: u32) -> Option<(u64, u64)> {
    let found = STACK.with(|s| {
        let k = (0..s.len.get()).find(|&k| {
            let m = s.below_top(k);
            m.id == id && m.slot == slot
        })?;
        let mark = s.below_top(k);
        s.drop_top(k + 1);
        Some(mark).filter(Mark::current)
    });
    match found {
        Some(mark) => {
            let (allocs, bytes) = super::thread_allocations();
            Some((allocs.wrapping_sub(mark.allocs), bytes.wrapping_sub(mark.bytes)))
        }
        None => {
            // Relaxed: a statistic.
            UNMATCHED.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

/// A counting scope of callsite `id`, in the log of slot `slot`, that pushed its mark on this
/// thread will never close: an argument of its macro panicked before its guard existed. Takes the
/// mark back if it is on top (nothing else was pushed since). No event was emitted, so nothing is
/// counted.
pub(crate) fn discard_mark(slot: u32, id: u32) {
    STACK.with(|s| {
        if s.len.get() > 0 {
            let m = s.below_top(0);
            if m.id == id && m.slot == slot {
                s.drop_top(1);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::count_thread;

    // Each test runs on a thread of its own: the stack is per thread. Periods are the process's:
    // only the period test bumps one, of a slot no other test uses (the registry's unit tests do
    // not count allocations: this binary's allocator is not `Traced`).

    fn on_thread(f: impl FnOnce() + Send + 'static) {
        std::thread::spawn(f).join().unwrap();
    }

    #[test]
    fn nested_marks_give_inclusive_counts() {
        on_thread(|| {
            push_mark(0, 7);
            count_thread(10);
            push_mark(0, 8);
            count_thread(5);
            assert_eq!(pop_mark(0, 8), Some((1, 5)));
            count_thread(1);
            assert_eq!(pop_mark(0, 7), Some((3, 16)));
            assert_eq!(STACK.with(|s| s.len.get()), 0);
        });
    }

    #[test]
    fn a_close_discards_the_marks_above_its_own() {
        on_thread(|| {
            push_mark(0, 1);
            push_mark(0, 2); // forgotten: never popped
            push_mark(0, 3); // forgotten too
            count_thread(4);
            assert_eq!(pop_mark(0, 1), Some((1, 4)));
            assert_eq!(STACK.with(|s| s.len.get()), 0);
        });
    }

    #[test]
    fn a_close_without_a_mark_is_counted_and_keeps_the_stack() {
        on_thread(|| {
            push_mark(0, 1);
            let before = unmatched_scopes();
            assert_eq!(pop_mark(0, 2), None, "moved in from another thread");
            assert!(unmatched_scopes() > before);
            assert_eq!(pop_mark(0, 1), Some((0, 0)), "the open scope below is still exact");
        });
    }

    #[test]
    fn a_push_onto_a_full_stack_overwrites_the_oldest_mark_and_the_newer_ones_stay_exact() {
        on_thread(|| {
            let extra = 5;
            for _ in 0..MARKS + extra {
                push_mark(0, 9);
                count_thread(1);
            }
            for k in 1..=MARKS as u64 {
                assert_eq!(pop_mark(0, 9), Some((k, k)), "{k} from the top");
            }
            for _ in 0..extra {
                assert_eq!(pop_mark(0, 9), None, "pushed out");
            }
            assert_eq!(STACK.with(|s| s.len.get()), 0);
        });
    }

    #[test]
    fn marks_no_close_takes_are_pushed_out_by_new_ones() {
        on_thread(|| {
            // Guards forgotten or moved away, with no scope around them.
            for id in 100..100 + 2 * MARKS as u32 {
                push_mark(0, id);
            }
            for id in 1..=3 {
                push_mark(0, id);
                count_thread(2);
                assert_eq!(pop_mark(0, id), Some((1, 2)));
            }
        });
    }

    #[test]
    fn an_abandoned_open_takes_its_own_mark_back_and_nothing_else() {
        on_thread(|| {
            push_mark(0, 1);
            push_mark(0, 2);
            discard_mark(0, 3);
            discard_mark(1, 2);
            assert_eq!(STACK.with(|s| s.len.get()), 2, "not on top: left");
            discard_mark(0, 2);
            assert_eq!(STACK.with(|s| s.len.get()), 1);
            assert_eq!(pop_mark(0, 1), Some((0, 0)));
        });
    }

    #[test]
    fn a_new_period_of_its_slot_makes_a_mark_stale_and_a_push_discards_it() {
        on_thread(|| {
            push_mark(0, 1);
            push_mark(5, 2);
            new_counting_period(5);
            assert_eq!(pop_mark(5, 2), None, "opened before its trace started counting");
            push_mark(5, 3);
            new_counting_period(5);
            push_mark(5, 4); // discards the stale mark of 3 below it
            assert_eq!(STACK.with(|s| s.len.get()), 2);
            assert_eq!(pop_mark(5, 4), Some((0, 0)));
            assert_eq!(pop_mark(0, 1), Some((0, 0)), "another slot's period did not move");
        });
    }
}

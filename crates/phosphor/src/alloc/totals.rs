//! The process's allocation totals: per-thread single-writer slots, summed by the reader.
//!
//! One counter shared by every thread would need a `fetch_add` per call (a locked instruction,
//! about 5 ns here, and a cache line bouncing between cores). Instead each thread claims a slot
//! of a static table ([`SLOTS`] of them) on its first allocation, with one compare-and-swap, and
//! is then its only writer: a Relaxed load and store per counter, plain moves. [`heap_totals`]
//! sums the slots.
//!
//! # Threads come and go
//!
//! A slot's counters never go back. When its thread exits, a small thread-local destructor
//! releases the slot (a Release store of its `owned` flag), and the next thread that claims it
//! (an Acquire compare-and-swap) continues its counters from where the last owner left them. So
//! the sum includes the threads that exited, with no "retired" total to fold them into, and a
//! reader never counts an exiting thread twice nor misses it in between.
//!
//! The destructor's thread local is touched only on the claim path. Registering it may allocate
//! (std's fallback list on platforms without `__cxa_thread_atexit_impl`); that nested allocation
//! finds the thread `CLAIMING` and is counted in the shared fallback. So are the threads past the
//! table's end ([`unslotted_threads`] counts them), a thread's allocations after its slot was
//! released (its later thread-local destructors), and the frees of a thread that never allocated:
//! a `fetch_add` each, which only those pay.
//!
//! After `fork`, the child's slots of the parent's other threads stay claimed (their counts stay
//! in the sum); the child's new threads claim the free ones.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use phosphor_format::system::HeapCounter;

/// The threads that can have a slot at once; the others count in the shared fallback.
pub const SLOTS: usize = 256;

/// Four cumulative counters.
#[derive(Debug)]
struct Counters {
    allocs: AtomicU64,
    alloc_bytes: AtomicU64,
    frees: AtomicU64,
    freed_bytes: AtomicU64,
}

impl Counters {
    const fn new() -> Counters {
        Counters {
            allocs: AtomicU64::new(0),
            alloc_bytes: AtomicU64::new(0),
            frees: AtomicU64::new(0),
            freed_bytes: AtomicU64::new(0),
        }
    }
}

/// A thread's slot, on a cache line of its own so that owners never share one.
#[derive(Debug)]
#[repr(align(64))]
struct Slot {
    owned: AtomicBool,
    counts: Counters,
}

static TABLE: [Slot; SLOTS] =
    [const { Slot { owned: AtomicBool::new(false), counts: Counters::new() } }; SLOTS];
/// What no slot took.
static SHARED: Counters = Counters::new();
static UNSLOTTED: AtomicU64 = AtomicU64::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

const UNCLAIMED: u8 = 0;
const CLAIMING: u8 = 1;
/// Claimed, or no slot for this thread (the table was full, or the slot was released).
const SETTLED: u8 = 2;

/// This thread's slot. `const` and free of `Drop`, like the thread's counters.
struct Owner {
    slot: Cell<Option<&'static Slot>>,
    state: Cell<u8>,
}

/// Releases this thread's slot when the thread exits.
struct Release;

impl Drop for Release {
    fn drop(&mut self) {
        let _ = OWNER.try_with(|o| {
            o.state.set(SETTLED);
            if let Some(slot) = o.slot.take() {
                // Release: the owner's last Relaxed stores to the counters happen before the next
                // owner's Acquire claim, which then continues from them (see `bump`).
                slot.owned.store(false, Ordering::Release);
            }
        });
    }
}

thread_local! {
    static OWNER: Owner = const { Owner { slot: Cell::new(None), state: Cell::new(UNCLAIMED) } };
    static RELEASE: Release = const { Release };
}

/// Adds `n` to a counter only this thread writes.
#[inline(always)]
fn bump(counter: &AtomicU64, n: u64) {
    // Relaxed load and store rather than a `fetch_add`: the slot's owner is its only writer (a
    // new owner's Acquire claim follows the old one's Release), so no write can fall between the
    // two; a reader sees the old or the new value, either of which is a true total.
    counter.store(counter.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

#[inline(always)]
pub(super) fn count_alloc(size: usize) {
    match OWNER.with(|o| o.slot.get()) {
        Some(s) => {
            bump(&s.counts.allocs, 1);
            bump(&s.counts.alloc_bytes, size as u64);
        }
        None => unslotted(true, size),
    }
}

#[inline(always)]
pub(super) fn count_free(size: usize) {
    match OWNER.with(|o| o.slot.get()) {
        Some(s) => {
            bump(&s.counts.frees, 1);
            bump(&s.counts.freed_bytes, size as u64);
        }
        None => unslotted(false, size),
    }
}

/// A call of a thread without a slot: claims one on its first allocation, else counts in the
/// shared fallback.
#[cold]
#[inline(never)]
fn unslotted(alloc: bool, size: usize) {
    let counts = match claim(alloc) {
        Some(slot) => {
            let c = &slot.counts;
            if alloc {
                bump(&c.allocs, 1);
                bump(&c.alloc_bytes, size as u64);
            } else {
                bump(&c.frees, 1);
                bump(&c.freed_bytes, size as u64);
            }
            return;
        }
        None => &SHARED,
    };
    // Relaxed: independent statistics, read only as totals.
    if alloc {
        counts.allocs.fetch_add(1, Ordering::Relaxed);
        counts.alloc_bytes.fetch_add(size as u64, Ordering::Relaxed);
    } else {
        counts.frees.fetch_add(1, Ordering::Relaxed);
        counts.freed_bytes.fetch_add(size as u64, Ordering::Relaxed);
    }
}

/// This thread's new slot, if it has none yet, this call is an allocation, and one is free.
fn claim(alloc: bool) -> Option<&'static Slot> {
    if !alloc || OWNER.with(|o| o.state.get()) != UNCLAIMED {
        return None;
    }
    OWNER.with(|o| o.state.set(CLAIMING));
    // Relaxed: a flag read on its own (`installed`); nothing is published with it.
    INSTALLED.store(true, Ordering::Relaxed);
    // Registers the release destructor (it may allocate: see the module docs). Fails if the
    // thread's destructors already ran, and then the thread takes no slot it could not release.
    let slot = if RELEASE.try_with(|_| ()).is_ok() {
        TABLE.iter().find(|s| {
            // Relaxed pre-check, then Acquire on success: pairs with the previous owner's Release
            // in `Release::drop`, so this thread's first `bump` continues from its last one.
            !s.owned.load(Ordering::Relaxed)
                && s.owned.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
        })
    } else {
        None
    };
    if slot.is_none() {
        // Relaxed: a statistic.
        UNSLOTTED.fetch_add(1, Ordering::Relaxed);
    }
    OWNER.with(|o| {
        o.slot.set(slot);
        o.state.set(SETTLED);
    });
    slot
}

/// Whether [`Traced`](super::Traced) is the program's global allocator: true once it has counted
/// an allocation (which happens before `main`).
pub fn installed() -> bool {
    // Relaxed: see `claim`.
    INSTALLED.load(Ordering::Relaxed)
}

/// The process's allocation totals since it started (`time_ns` left 0 for the caller to fill), or
/// `None` when [`Traced`](super::Traced) is not the global allocator. Every thread's counts, the
/// exited ones' included; each counter is exact up to the calls still under way.
pub fn heap_totals() -> Option<HeapCounter> {
    if !installed() {
        return None;
    }
    let mut t = HeapCounter::default();
    for c in TABLE.iter().map(|s| &s.counts).chain([&SHARED]) {
        // Relaxed: each counter only grows, and a sum of values read at slightly different times
        // is all a heap counter needs; no other memory is read on the strength of them.
        t.allocs = t.allocs.wrapping_add(c.allocs.load(Ordering::Relaxed));
        t.alloc_bytes = t.alloc_bytes.wrapping_add(c.alloc_bytes.load(Ordering::Relaxed));
        t.frees = t.frees.wrapping_add(c.frees.load(Ordering::Relaxed));
        t.freed_bytes = t.freed_bytes.wrapping_add(c.freed_bytes.load(Ordering::Relaxed));
    }
    Some(t)
}

/// The threads that found no free slot (more than [`SLOTS`] at once, or a first allocation during
/// their thread-local destructors) and so counted through the shared fallback: exact still, but
/// with a `fetch_add` per call.
pub fn unslotted_threads() -> u64 {
    // Relaxed: a statistic.
    UNSLOTTED.load(Ordering::Relaxed)
}

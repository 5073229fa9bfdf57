//! The test binaries' counting global allocator: the system allocator, counting on each thread
//! its allocations, its deallocations, and the bytes it holds with their peak. A test measures
//! its own thread while the others run in parallel. A global allocator is per binary, so each
//! test binary that counts installs it:
//!
//! ```
//! #[global_allocator]
//! static GLOBAL: phosphor_testalloc::Counting = phosphor_testalloc::Counting;
//!
//! let before = phosphor_testalloc::allocations();
//! let v = vec![1u8; 100];
//! assert_eq!(phosphor_testalloc::allocations() - before, 1);
//! let (_, peak) = phosphor_testalloc::peak_bytes_during(|| vec![0u8; 4096]);
//! assert!(peak >= 4096);
//! # drop(v);
//! ```
//!
//! Reading a counter in a binary that did not install the allocator panics, rather than read a
//! zero that would make every "allocates nothing" assertion pass. (The runtime's
//! `phosphor::alloc::Traced` counts too, but into a trace, for a program's users; the tests
//! count outside the recorder they test, so that they can catch it allocating.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Set by the first allocation through [`Counting`]: it is this binary's global allocator.
static INSTALLED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Allocations and reallocations by this thread.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    /// Deallocations by this thread.
    static DEALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    /// Bytes allocated and not freed by this thread (negative if it freed others' bytes).
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// The peak of `LIVE` since the last `peak_bytes_during` began.
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

/// Counts one allocation (or reallocation) that changes the bytes held by `delta`.
fn allocated(delta: isize) {
    // Relaxed: a flag that only goes from false to true; the counters are this thread's own.
    if !INSTALLED.load(Relaxed) {
        INSTALLED.store(true, Relaxed);
    }
    // `try_with`: the allocator can run while this thread's locals are being torn down.
    let _ = ALLOCATIONS.try_with(|a| a.set(a.get() + 1));
    held(delta);
}

fn held(delta: isize) {
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + delta);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
}

/// The system allocator, counting per thread (install it with `#[global_allocator]`).
#[derive(Debug)]
pub struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees are ours; the counting touches only const-initialised thread locals without a
// destructor, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        allocated(layout.size() as isize);
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        allocated(layout.size() as isize);
        // SAFETY: forwarded unchanged; the caller upholds `alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        allocated(new_size as isize - layout.size() as isize);
        // SAFETY: forwarded unchanged; `ptr` came from this allocator, i.e. from `System`, with
        // `layout`, and the caller upholds `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let _ = DEALLOCATIONS.try_with(|d| d.set(d.get() + 1));
        held(-(layout.size() as isize));
        // SAFETY: forwarded unchanged; `ptr` came from this allocator, i.e. from `System`, with
        // `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Panics unless [`Counting`] is this binary's global allocator (it has allocated: the test
/// harness allocates before any test runs). Allocates nothing itself.
fn check_installed() {
    // Relaxed: as in `allocated`; the harness's allocations happened before the test's thread
    // began.
    assert!(
        INSTALLED.load(Relaxed),
        "phosphor_testalloc::Counting is not this binary's #[global_allocator]: its counters would read 0"
    );
}

/// Allocations and reallocations made by this thread so far.
pub fn allocations() -> u64 {
    check_installed();
    ALLOCATIONS.with(Cell::get)
}

/// Deallocations made by this thread so far.
pub fn deallocations() -> u64 {
    check_installed();
    DEALLOCATIONS.with(Cell::get)
}

/// Bytes allocated and not yet freed by this thread (negative if it freed more than it allocated:
/// another thread's bytes).
pub fn live_bytes() -> isize {
    check_installed();
    LIVE.with(Cell::get)
}

/// `f`'s result, and the peak of the bytes this thread held while `f` ran, above what it held
/// before.
pub fn peak_bytes_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    check_installed();
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    (out, (PEAK.with(Cell::get) - base).max(0) as usize)
}

#[cfg(test)]
mod tests {
    // This unit-test binary does not install `Counting`: the counters refuse to be read.
    #[test]
    #[should_panic(expected = "not this binary's #[global_allocator]")]
    fn counters_are_not_read_where_the_allocator_is_not_installed() {
        super::allocations();
    }
}

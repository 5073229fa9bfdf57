//! [`Split`]: the tools' allocator. Blocks under [`LARGE`] come from mimalloc, larger ones from
//! the system's allocator, each mapped on its own (glibc's `M_MMAP_THRESHOLD`, set by [`init`]).
//!
//! Why two: the readers make and free many small blocks on several threads at once (rows, names,
//! Arrow and Parquet buffers), where glibc's malloc spent about 45% of `convert --to parquet`'s
//! time in `malloc_consolidate`, `unlink_chunk` and `_int_malloc`, and mimalloc takes half the
//! CPU (BENCHMARKS.md, "SQL: the allocator"). But the reading commands also grow large tables
//! (`stats` on a million callsites: 200 MiB of rows) and free each phase's before the next:
//! glibc grows a mapped block with `mremap` (no copy, no second block at the peak) and gives a
//! freed one back to the system at once, where mimalloc alone raised `stats`' peak RSS on that
//! file from 233 MiB to 381 MiB (2.8x to 4.6x the file; the target is 3x).
//!
//! Which allocator owns a block follows from its size alone, which `GlobalAlloc` is given back
//! on every `dealloc` and `realloc` (the layout the block was allocated or last reallocated
//! with), so no lookup is needed.

use std::alloc::{GlobalAlloc, Layout, System};

use mimalloc::MiMalloc;

/// The size from which a block is the system allocator's, and mapped on its own.
pub(crate) const LARGE: usize = 1 << 20;

/// Small blocks from mimalloc, blocks of [`LARGE`] bytes and more from [`System`].
#[derive(Debug, Default)]
pub(crate) struct Split;

fn large(size: usize) -> bool {
    size >= LARGE
}

// SAFETY: every block is allocated by exactly one of mimalloc and `System`, chosen by its size,
// and given back (freed, reallocated) to the same one, since `dealloc` and `realloc` receive the
// size it was allocated with (or last reallocated to): the `GlobalAlloc` contract. Each
// forwarded call passes the caller's arguments, so the inner allocators' contracts hold; a
// `realloc` crossing `LARGE` allocates in the other one, copies the bytes both sizes hold, and
// frees the old block, as `realloc`'s contract describes.
unsafe impl GlobalAlloc for Split {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded; the caller upholds `alloc`'s contract for `layout`.
        unsafe {
            if large(layout.size()) {
                System.alloc(layout)
            } else {
                MiMalloc.alloc(layout)
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe {
            if large(layout.size()) {
                System.alloc_zeroed(layout)
            } else {
                MiMalloc.alloc_zeroed(layout)
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated with `layout.size()` (the caller's contract), so by the
        // allocator this size chooses.
        unsafe {
            if large(layout.size()) {
                System.dealloc(ptr, layout)
            } else {
                MiMalloc.dealloc(ptr, layout)
            }
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        match (large(layout.size()), large(new_size)) {
            // SAFETY: the block is `System`'s (its size), and stays so.
            (true, true) => unsafe { System.realloc(ptr, layout, new_size) },
            // SAFETY: the block is mimalloc's (its size), and stays so.
            (false, false) => unsafe { MiMalloc.realloc(ptr, layout, new_size) },
            _ => {
                // SAFETY: the caller guarantees `new_size`, rounded up to `layout.align()`, does
                // not overflow `isize` (`realloc`'s contract), which is `Layout`'s condition.
                let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
                // SAFETY: `new_layout` has a non-zero size (`new_size` > 0 by `realloc`'s
                // contract).
                let new = unsafe { self.alloc(new_layout) };
                if !new.is_null() {
                    // SAFETY: both blocks are live and distinct, and hold at least the smaller
                    // size; the old one is then freed with the layout it was allocated with.
                    unsafe {
                        std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                }
                new
            }
        }
    }
}

/// Makes glibc map every block [`Split`] gives it on its own, so that a freed one goes back to
/// the system at once and a growing one is moved by `mremap`. By default glibc raises its
/// threshold for mapping a block on its own to 32 MiB after the first such block is freed, and
/// then keeps the freed blocks below it in its heap. Called first thing in `main`.
pub(crate) fn init() {
    // SAFETY: `mallopt` only sets a parameter of glibc's allocator; it is called before any
    // other thread exists, and the value is one glibc documents for M_MMAP_THRESHOLD (at most
    // 32 MiB).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, LARGE as i32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of each allocator, grown and shrunk across [`LARGE`] both ways, keep their bytes.
    #[test]
    fn a_block_reallocated_across_the_line_keeps_its_bytes() {
        let a = Split;
        for (from, to) in [(64, LARGE + 4096), (LARGE + 4096, 64), (LARGE - 1, LARGE), (LARGE, 3 * LARGE)] {
            let layout = Layout::from_size_align(from, 16).unwrap();
            // SAFETY: a non-zero layout; the block is written within its size, reallocated with
            // its layout, read within the smaller size, and freed with its new layout.
            unsafe {
                let p = a.alloc(layout);
                assert!(!p.is_null());
                for i in 0..from {
                    *p.add(i) = (i % 251) as u8;
                }
                let q = a.realloc(p, layout, to);
                assert!(!q.is_null());
                for i in 0..from.min(to) {
                    assert_eq!(*q.add(i), (i % 251) as u8, "byte {i} of {from} -> {to}");
                }
                a.dealloc(q, Layout::from_size_align(to, 16).unwrap());
            }
        }
    }

    #[test]
    fn zeroed_blocks_are_zero_on_both_sides() {
        for size in [100, 2 * LARGE] {
            let layout = Layout::from_size_align(size, 64).unwrap();
            // SAFETY: a non-zero layout, read within its size, freed with it.
            unsafe {
                let p = Split.alloc_zeroed(layout);
                assert!(!p.is_null() && p as usize % 64 == 0);
                assert!((0..size).all(|i| *p.add(i) == 0));
                Split.dealloc(p, layout);
            }
        }
    }
}

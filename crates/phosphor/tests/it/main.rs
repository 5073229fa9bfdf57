//! Integration tests of the recording engine, one binary (ripgrep's layout).
//!
//! The binary installs a counting global allocator whose counters are per thread, so the
//! allocation test measures only its own thread while the other tests run in parallel.

use std::alloc::{GlobalAlloc, Layout, System};

mod accounting;
mod aggregates;
mod alloc;
mod attribute;
mod bridge;
mod compression;
mod config;
mod control;
mod crash;
mod events;
#[cfg(target_os = "linux")]
mod fork_anytime;
mod fork_effects;
mod futures;
mod groups;
mod hardening;
mod intern;
#[cfg(target_os = "linux")]
mod internal_threads;
mod layers;
mod lifecycle;
mod limits;
mod logs;
#[cfg(feature = "otlp")]
mod otlp;
#[cfg(feature = "otlp")]
mod otlp_sampling;
mod points;
mod recorder;
mod reentrancy;
mod smoke;
mod snapshot;
mod soak;
#[cfg(target_os = "linux")]
mod stop_race;
mod stream;
mod stream_close;
mod support;
#[cfg(target_os = "linux")]
mod system;
#[cfg(feature = "tokio")]
mod tokio_hooks;
mod trace_context;
mod triggers;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod usdt_bridge;

/// The system allocator, counting calls per thread.
struct CountingAllocator;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees are ours; the counting touches only a const-initialised thread local without a
// destructor, which never allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        support::count_allocation();
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        support::count_allocation();
        // SAFETY: forwarded unchanged; the caller upholds `alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        support::count_allocation();
        // SAFETY: forwarded unchanged; the caller upholds `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        support::count_deallocation();
        // SAFETY: forwarded unchanged; `ptr` came from this allocator, i.e. from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

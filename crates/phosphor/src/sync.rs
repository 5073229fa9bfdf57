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

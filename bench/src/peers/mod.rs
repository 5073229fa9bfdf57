//! The other tracers, each measured the honest way PEERS.md describes, with its own
//! recorded-count check.
//!
//! - [`fastrace`]: a `LocalSpan` under a root refreshed every 1,000 spans, counted at the reporter.
//! - [`puffin`]: a scope at the top level and nested in a frame scope, counted in the frames.
//! - [`chrome`]: `tracing` + `tracing-chrome`, a span entered and exited and an event, counted in
//!   what the writer thread wrote.
//! - [`tracing_off`]: `tracing` with no subscriber, in a child process.

pub mod chrome;
pub mod fastrace;
pub mod puffin;
pub mod tracing_off;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A count that a collector or writer thread raises and the calling thread waits on: how the
/// harness knows that a tracer has taken in every event of a batch.
#[derive(Debug)]
pub struct Drain {
    count: AtomicU64,
    lock: Mutex<()>,
    raised: Condvar,
}

impl Drain {
    /// A zero count.
    pub const fn new() -> Drain {
        Drain { count: AtomicU64::new(0), lock: Mutex::new(()), raised: Condvar::new() }
    }

    /// Adds `n` and wakes the waiter.
    pub fn add(&self, n: u64) {
        // Relaxed: the count is read under `lock` by the waiter, and the lock orders it; the
        // lock is taken after the add, so a waiter that read the old value is already waiting.
        self.count.fetch_add(n, Ordering::Relaxed);
        let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.raised.notify_all();
    }

    /// The count now.
    pub fn get(&self) -> u64 {
        // Relaxed: a tally.
        self.count.load(Ordering::Relaxed)
    }

    /// Waits until the count reaches `target`, for at most `timeout`. Returns whether it did.
    pub fn wait_for(&self, target: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if self.get() >= target {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            g = self.raised.wait_timeout(g, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

impl Default for Drain {
    fn default() -> Self {
        Drain::new()
    }
}

/// How long a batch may take to drain before its events count as lost.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

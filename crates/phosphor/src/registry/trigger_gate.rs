//! `Gate`: the lock-free handshake between the threads a trigger fires on and a log's dump thread,
//! with the rate limit. The trigger machinery (`trace_log/trigger.rs`) keeps one per log; loom
//! model 13 checks it (`loom_tests.rs`).
//!
//! # The handshake
//!
//! `pending` is 0, or `1 << 32 | number` of the trigger whose firing opened the window that the
//! dump thread is to dump. A firing that finds it 0 (and a token, below) opens a window with one
//! compare-and-swap and then bumps `wake` with Release; a firing that finds a window open merges
//! into it. The dump thread loads `wake` (Acquire) *before* `pending`, and sleeps only while
//! `wake` still holds what it loaded (a futex wait compares it in the kernel): a window opened
//! after the dump thread found `pending` 0 has bumped `wake` after opening, so the sleep either
//! does not begin or is woken. No lock: a firing never waits.
//!
//! # The rate limit
//!
//! At most `per minute` windows in any 60 s: the generic cell rate algorithm (ATM Forum, traffic
//! management 4.0), one compare-and-swap on a theoretical arrival time `tat` (ns), an emission
//! interval of 60 s / N and a burst tolerance of 60 s minus one interval, so N tokens at once and
//! then one per interval. Two firings racing to open a window may both spend a token while one
//! of them merges: the limit is an upper bound.

use crate::sync::{AtomicU32, AtomicU64, Ordering};

const MINUTE_NS: u64 = 60_000_000_000;

/// What became of a firing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Firing {
    /// It opened a window: the dump thread is woken (the caller wakes the futex).
    Opened,
    /// A window was open: it joins that dump.
    Merged,
    /// No window was open and the rate limit is spent: no dump.
    RateLimited,
}

/// See the module docs.
pub(crate) struct Gate {
    pending: AtomicU64,
    wake: AtomicU32,
    tat: AtomicU64,
    interval: AtomicU64,
}

impl Gate {
    /// An idle gate that allows no dump until [`reset`](Self::reset).
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Gate {
        Gate {
            pending: AtomicU64::new(0),
            wake: AtomicU32::new(0),
            tat: AtomicU64::new(0),
            interval: AtomicU64::new(0),
        }
    }

    /// An idle gate (loom's atomics have no `const` constructor).
    #[cfg(loom)]
    pub(crate) fn new() -> Gate {
        Gate {
            pending: AtomicU64::new(0),
            wake: AtomicU32::new(0),
            tat: AtomicU64::new(0),
            interval: AtomicU64::new(0),
        }
    }

    /// Idle again, allowing `per_minute` windows a minute (at least one). Called before the
    /// trace's triggers are armed.
    pub(crate) fn reset(&self, per_minute: u32) {
        // Relaxed: published to the firings by the registry's lock and Release store that arm
        // their callsites afterwards.
        self.pending.store(0, Ordering::Relaxed);
        self.tat.store(0, Ordering::Relaxed);
        self.interval.store(MINUTE_NS / u64::from(per_minute.max(1)), Ordering::Relaxed);
    }

    /// A firing of trigger `number` at `now` (ns, monotonic).
    pub(crate) fn fire(&self, number: u32, now: u64) -> Firing {
        // Relaxed: only whether a window is open; nothing is read on the strength of it.
        if self.pending.load(Ordering::Relaxed) != 0 {
            return Firing::Merged;
        }
        if !self.take_token(now) {
            return Firing::RateLimited;
        }
        // Relaxed: the bump of `wake` below publishes it (Release).
        match self.pending.compare_exchange(
            0,
            1 << 32 | u64::from(number),
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            Ok(_) => {
                self.bump();
                Firing::Opened
            }
            Err(_) => Firing::Merged,
        }
    }

    fn take_token(&self, now: u64) -> bool {
        // Relaxed: a configuration value set before the trace's callsites were armed.
        let interval = self.interval.load(Ordering::Relaxed);
        let tau = MINUTE_NS - interval.min(MINUTE_NS);
        // Relaxed: the compare-and-swap loop is the whole protocol; nothing else is published.
        self.tat
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |tat| {
                let tat = tat.max(now);
                (tat - now <= tau).then_some(tat + interval)
            })
            .is_ok()
    }

    /// Bumps the wake word, publishing what was stored before (a window, the end of the trace)
    /// to the dump thread's next [`observe`](Self::observe). The caller then wakes the futex.
    pub(crate) fn bump(&self) {
        // Release: pairs with the Acquire load in `observe`.
        self.wake.fetch_add(1, Ordering::Release);
    }

    /// The dump thread's look: the wake word (to sleep on while it is unchanged), then the
    /// pending window (0: none).
    pub(crate) fn observe(&self) -> (u32, u64) {
        // Acquire: pairs with `bump`'s Release, so the `pending` read after it is at least as new
        // as the window (or stop) that bump published. No fence is needed between the two loads:
        // the Acquire orders the second after the first.
        let seen = self.wake.load(Ordering::Acquire);
        // Relaxed: ordered by the Acquire above.
        (seen, self.pending.load(Ordering::Relaxed))
    }

    /// Whether a window is open.
    pub(crate) fn is_pending(&self) -> bool {
        // Relaxed: a status figure.
        self.pending.load(Ordering::Relaxed) != 0
    }

    /// Closes the window the dump thread took: firings from now on open the next one.
    pub(crate) fn close_window(&self) {
        // Relaxed: nothing is published with it; a firing that reads the old value merges into
        // the window being dumped.
        self.pending.store(0, Ordering::Relaxed);
    }

    /// The wake word, for the futex wait and wake.
    #[cfg(not(loom))]
    pub(crate) fn wake_word(&self) -> &AtomicU32 {
        &self.wake
    }

    /// Whether the wake word still holds `seen` (loom's stand-in for the futex's check).
    #[cfg(loom)]
    pub(crate) fn unchanged(&self, seen: u32) -> bool {
        // Relaxed: as the kernel's comparison of the futex word is.
        self.wake.load(Ordering::Relaxed) == seen
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_rate_limit_allows_a_burst_of_n_then_one_per_interval() {
        let g = Gate::new();
        g.reset(3);
        let t0 = 5 * MINUTE_NS;
        let mut opened = 0;
        for k in 0..5 {
            if g.fire(1, t0 + k) == Firing::Opened {
                opened += 1;
                g.close_window();
            }
        }
        assert_eq!(opened, 3);
        assert_eq!(g.fire(1, t0 + MINUTE_NS / 3 - 10), Firing::RateLimited, "not yet a new token");
        assert_eq!(g.fire(1, t0 + MINUTE_NS / 3 + 10), Firing::Opened, "one token per 20 s");
        assert_eq!(g.fire(2, t0 + MINUTE_NS), Firing::Merged, "a window is open");
        assert_eq!(g.observe().1, 1 << 32 | 1);
    }
}

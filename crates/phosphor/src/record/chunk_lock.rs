//! `ChunkLock`: the three-state lock between a tenant's writers and `evict_threads`.
//!
//! # States
//!
//! As in Couchbase Phosphor, a tenant's lock is **Unlocked**, **SlaveLocked** (a recording thread
//! is writing into the tenant's chunk) or **MasterLocked** (`evict_threads` owns the tenant and is
//! taking its chunk back). The slave side only ever *tries*: if the lock is not free it gives up at
//! once and the event is counted as dropped. Only the master waits, and only for a slave already
//! inside its short, non-blocking critical section.
//!
//! # Algorithm
//!
//! The state is two flags, `slave` and `master`, and the protocol is Dekker's mutual exclusion
//! specialised to one side that never waits:
//!
//! ```text
//! slave:  slave = true;  barrier;  if master { slave = false; fail }  ... critical ...  slave = false
//! master: master = true; barrier;  while slave { yield }              ... critical ...  master = false
//! ```
//!
//! Whatever the interleaving, the two barriers ensure that at least one side sees the other's flag.
//! For a thread-local tenant there is exactly one slave, so the slave's flag store needs no atomic
//! read-modify-write, and the slave's barrier is only a compiler barrier paired with a membarrier
//! on the master side (see `barrier`). For a tenant shared by several threads (the pool), slaves
//! must also exclude each other, so they take the flag with a compare-and-swap, which is a full
//! barrier by itself.
//!
//! A "dead" tenant, whose `TraceLog` was dropped, stays MasterLocked for ever, so every slave fails
//! and goes to its slow path, where it notices and detaches.

use crate::record::barrier;
use crate::sync::{yield_now, AtomicBool, Ordering};

/// The observable state of a [`ChunkLock`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockState {
    Unlocked,
    SlaveLocked,
    MasterLocked,
}

/// Which side held a lock that a slave failed to take, as the slave saw it at that moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Held {
    /// Another slave, or the same thread re-entering (a signal handler).
    BySlave,
    /// The master: tracing is stopping or the tenant is dead.
    ByMaster,
}

#[derive(Debug)]
pub(crate) struct ChunkLock {
    /// Set while a recording thread is inside its critical section.
    slave: AtomicBool,
    /// Set while `evict_threads` (or a dying `TraceLog`) owns the tenant.
    master: AtomicBool,
}

impl ChunkLock {
    pub(crate) fn new() -> ChunkLock {
        ChunkLock { slave: AtomicBool::new(false), master: AtomicBool::new(false) }
    }

    /// Tries the slave lock where the caller is the only thread that ever takes the slave side.
    ///
    /// Fails without waiting if the master holds the lock, or if the caller already holds the
    /// slave side (a signal handler interrupting a record on the same thread), saying which.
    ///
    /// Sound only while [`barrier::asymmetric_available`] is true; otherwise use
    /// [`ChunkLock::try_slave_lock_shared`].
    #[inline(always)]
    pub(crate) fn try_slave_lock_exclusive(&self) -> Result<(), Held> {
        // Relaxed: only this thread writes `slave` true, so this load sees its own last store.
        if self.slave.load(Ordering::Relaxed) {
            return Err(Held::BySlave);
        }
        // Relaxed: ordering against the master's load of `slave` comes from the light/heavy
        // barrier pair, not from this store.
        self.slave.store(true, Ordering::Relaxed);
        barrier::light();
        // Acquire: pairs with the Release in `master_unlock`, so the tenant state the master left
        // (a cleared chunk pointer) is visible to this critical section.
        if self.master.load(Ordering::Acquire) {
            // Release: nothing was written, but keep every slave exit a release for uniformity.
            self.slave.store(false, Ordering::Release);
            return Err(Held::ByMaster);
        }
        Ok(())
    }

    /// Tries the slave lock where several threads may take the slave side; fails without waiting
    /// if another slave or the master holds it, saying which.
    #[inline]
    pub(crate) fn try_slave_lock_shared(&self) -> Result<(), Held> {
        // SeqCst: this RMW and the SeqCst load below, with the master's SeqCst store and load,
        // form Dekker's protocol without relying on `barrier::heavy`. Acquire is implied, which
        // pairs with the previous slave's Release in `slave_unlock`.
        if self.slave.compare_exchange(false, true, Ordering::SeqCst, Ordering::Relaxed).is_err() {
            return Err(Held::BySlave);
        }
        // Loom 0.7 models SeqCst loads and stores only as acquire/release, which would let it
        // report this Dekker protocol as racy; it does model SeqCst fences, so give it one. In real
        // builds the four SeqCst operations already order the protocol.
        #[cfg(loom)]
        crate::sync::fence(Ordering::SeqCst);
        if self.master.load(Ordering::SeqCst) {
            // Release: as in the exclusive path, every slave exit is a release.
            self.slave.store(false, Ordering::Release);
            return Err(Held::ByMaster);
        }
        Ok(())
    }

    /// Leaves the slave critical section.
    #[inline(always)]
    pub(crate) fn slave_unlock(&self) {
        // Release: publishes every write of the critical section to the next master or slave,
        // which acquire this flag.
        self.slave.store(false, Ordering::Release);
    }

    /// Raises the master flag without waiting. Call [`barrier::heavy`] once after raising the flags
    /// of a batch of locks, then [`ChunkLock::wait_for_slave`] on each.
    pub(crate) fn raise_master(&self) {
        // SeqCst: for shared tenants this store is one of the four SeqCst operations of Dekker's
        // protocol; for exclusive tenants the heavy barrier that follows orders it.
        self.master.store(true, Ordering::SeqCst);
    }

    /// Waits until no slave is inside its critical section. Slaves never wait, and the only
    /// work they do inside is bounded, so this ends as soon as a preempted slave runs again.
    pub(crate) fn wait_for_slave(&self) {
        // SeqCst load: the master's half of Dekker's protocol (see `raise_master`); Acquire is
        // implied, pairing with `slave_unlock`, so the slave's writes are visible after this.
        while self.slave.load(Ordering::SeqCst) {
            yield_now();
        }
    }

    /// Takes the master lock of this one lock.
    #[cfg(any(test, loom))]
    pub(crate) fn master_lock(&self) {
        self.raise_master();
        barrier::heavy();
        self.wait_for_slave();
    }

    /// Releases the master lock.
    pub(crate) fn master_unlock(&self) {
        // Release: pairs with the Acquire loads of `master` in the slave paths, publishing the
        // master's changes to the tenant.
        self.master.store(false, Ordering::Release);
    }

    /// Clears both flags, whoever set them. Only for a child process just forked, where the
    /// thread that held either side no longer exists and never will release it.
    #[cfg(not(loom))]
    #[cfg_attr(not(unix), allow(dead_code))] // for a fork child (Unix only)
    pub(crate) fn force_unlock_after_fork(&self) {
        // Relaxed: the child has one thread; the next master or slave synchronises afresh.
        self.slave.store(false, Ordering::Relaxed);
        self.master.store(false, Ordering::Relaxed);
    }

    /// The current state, for assertions and diagnostics; racy by nature.
    #[allow(dead_code)]
    pub(crate) fn state(&self) -> LockState {
        // Relaxed: a snapshot for diagnostics; no data is read on the strength of it.
        if self.master.load(Ordering::Relaxed) {
            LockState::MasterLocked
        } else if self.slave.load(Ordering::Relaxed) {
            LockState::SlaveLocked
        } else {
            LockState::Unlocked
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_slave_cannot_lock_while_the_master_holds_the_lock() {
        let l = ChunkLock::new();
        assert_eq!(l.state(), LockState::Unlocked);
        l.master_lock();
        assert_eq!(l.state(), LockState::MasterLocked);
        assert_eq!(l.try_slave_lock_shared(), Err(Held::ByMaster));
        if barrier::asymmetric_available() {
            assert_eq!(l.try_slave_lock_exclusive(), Err(Held::ByMaster));
        }
        l.master_unlock();
        assert!(l.try_slave_lock_shared().is_ok());
        assert_eq!(l.state(), LockState::SlaveLocked);
        l.slave_unlock();
    }

    #[test]
    fn slaves_exclude_each_other_and_reentry() {
        let l = ChunkLock::new();
        assert!(l.try_slave_lock_shared().is_ok());
        assert_eq!(l.try_slave_lock_shared(), Err(Held::BySlave), "a second shared slave must fail");
        assert_eq!(l.try_slave_lock_exclusive(), Err(Held::BySlave), "re-entry on the same thread must fail");
        l.slave_unlock();
        assert!(l.try_slave_lock_exclusive().is_ok());
        l.slave_unlock();
    }
}

//! `ChunkTenant`: where a thread's events go, and the write path itself.
//!
//! # Brief overview
//!
//! A [`Tenant`] holds at most one loaned chunk and the write cursor into it, guarded by a
//! [`ChunkLock`]. A thread-local tenant has one writer; a pool tenant is shared by the threads
//! whose ids map to it, and inserts a thread-switch record whenever the writer changes, so thread
//! ids stay in the chunk header and not in every record.
//!
//! [`Tenant::write`] is the hot path: take the slave lock (never waiting), make room (a `#[cold]`
//! chunk swap when the chunk is full or absent), let the caller fill the records, publish the new
//! committed count, unlock. Every way it can fail is counted in [`LogCore`]'s drop counters.
//!
//! [`evict_all`] is `evict_threads`: it master-locks every tenant, takes back its chunk and leaves
//! the tenant empty. With the buffer pointer already cleared, no slave can reach the old buffer
//! afterwards, so the tenant locks double as the grace period that lets `stop` own the buffer. The
//! master lock is taken only there (and by a dying log): dumps and the streaming collector read a
//! tenant's chunk by pinning it (`TraceChunk::pin`), never by locking the tenant, so a running
//! trace never makes a writer fail.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::Arc;

use phosphor_format::chunk::CHUNK_RECORDS;
use phosphor_format::file::SEQ_STREAM_SHIFT;
use phosphor_format::{Meta, Record, ID_THREAD_SWITCH};

use crate::record::barrier;
use crate::record::buffer::{Loan, TraceBuffer, TraceChunk};
use crate::record::chunk_lock::{ChunkLock, Held};
use crate::record::clock::ClockKind;
use crate::sync::{AtomicBool, AtomicU32, Ordering};

#[cfg(loom)]
use loom::sync::atomic::AtomicPtr;
#[cfg(not(loom))]
use std::sync::atomic::AtomicPtr;

use crate::record::log_core::STREAM;
pub(crate) use crate::record::log_core::{DropReason, LogCore};

/// Releases a slave lock if dropped while unwinding, so a panic inside the critical section (a
/// debug assertion, an index out of bounds) does not leave the lock held for ever, and counts the
/// event being written as dropped (`unwound`): none of its records is published. Normal returns
/// [`disarm`](UnlockOnUnwind::disarm) it and unlock themselves.
///
/// Where it is armed: around everything inside the critical section that can unwind. On the fast
/// path that is only a multi-record event's fill (`encode_continuation` is out of line and
/// indexes); a one-record fill is straight-line stores and a clock read, which cannot unwind, and
/// arming a guard around it would cost every event (the unwinding edge kept the compiler from
/// folding the write's outcome: 3 instructions per event under callgrind). `make_room`, the
/// out-of-line slow path inside the critical section, arms its own. It holds the tenant and reads
/// the core's drop counters only when it fires, so that `make_room` keeps no core pointer live.
struct UnlockOnUnwind<'a>(&'a Tenant);

impl UnlockOnUnwind<'_> {
    #[inline(always)]
    fn disarm(self) {
        std::mem::forget(self);
    }
}

impl Drop for UnlockOnUnwind<'_> {
    #[cold]
    fn drop(&mut self) {
        self.0.core().drops.count(DropReason::Unwound);
        self.0.lock.slave_unlock();
    }
}

/// Fills the record slots of one event. Implemented by `emit`'s record builders (always inlined,
/// so a callsite's write compiles to straight-line stores) and by any `FnOnce` with the same shape.
pub(crate) trait Fill: Copy {
    /// Writes all the records of the event into the slots starting at `dst`, reading `clock`
    /// where the event needs the time.
    fn fill(self, dst: *mut MaybeUninit<Record>, clock: ClockKind);

    /// The callsite id of the event (0: unknown, never re-checked), for the cold re-check of an
    /// event that may have passed its enabled check before the running trace started.
    #[inline(always)]
    fn callsite(&self) -> u32 {
        0
    }
}

/// A fill with its callsite id, for fills written as closures.
#[derive(Clone, Copy)]
pub(crate) struct Identified<F>(pub(crate) u32, pub(crate) F);

impl<F: FnOnce(*mut MaybeUninit<Record>, ClockKind) + Copy> Fill for Identified<F> {
    #[inline(always)]
    fn fill(self, dst: *mut MaybeUninit<Record>, clock: ClockKind) {
        (self.1)(dst, clock)
    }

    #[inline(always)]
    fn callsite(&self) -> u32 {
        self.0
    }
}

impl<F: FnOnce(*mut MaybeUninit<Record>, ClockKind) + Copy> Fill for F {
    #[inline(always)]
    fn fill(self, dst: *mut MaybeUninit<Record>, clock: ClockKind) {
        self(dst, clock)
    }
}

/// What a write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Written,
    /// Dropped and already counted.
    Dropped,
    /// Dropped and counted; this call exhausted a Fixed buffer first, so it owes the stop
    /// callback, if the trace of that buffer (this generation) is still the running one.
    Exhausted(u64),
    /// Not written and not counted: the tenant is dead, so the caller attaches a new one and retries.
    Dead,
}

/// State guarded by the tenant's lock.
struct TenantState {
    /// The loaned chunk, or null.
    chunk: *const TraceChunk,
    /// Next free record; `CHUNK_RECORDS` when there is no chunk, so one comparison covers both.
    pos: u32,
    /// Records in the chunk that are not events (continuations and thread switches), so that
    /// `pos - extra` events are handed back without walking the chunk.
    extra: u32,
    /// The thread whose events the chunk currently holds.
    tid: u32,
    /// Sequence number of the next chunk this tenant loans.
    seq: u64,
    /// Events dropped for want of a free chunk since this tenant's last chunk; in Stream mode its
    /// next chunk starts with a saturation marker that says how many. Core, not the streaming
    /// collector's: it is the loss accounting's per-tenant half (`DropCounters::no_chunk` is the
    /// total), kept where the loss happens, under the slave lock, and read on every chunk swap.
    lost: u64,
    /// The generation of the buffer the tenant last loaned a chunk from.
    generation: u64,
}

impl TenantState {
    /// Events in the current chunk.
    fn events(&self) -> u32 {
        self.pos - self.extra
    }
}

/// A chunk tenant.
///
/// Aligned (and so padded) to 128 bytes: each thread writes its tenant's lock flags and cursor on
/// every event, and tenants allocated one after the other would otherwise share cache lines, so two
/// threads recording at once would take each other's line on every event (the benchmark's
/// two-thread scaling went from 1.2-1.3× to about 1.8-2× with this). 128, not 64: x86 prefetches
/// lines in adjacent pairs (crossbeam's `CachePadded` uses the same figure).
#[repr(align(128))]
pub(crate) struct Tenant {
    lock: ChunkLock,
    /// Shared by several threads (the pool, or every thread where membarrier is unavailable), so
    /// slaves take the lock with a compare-and-swap.
    shared: bool,
    /// One of the pool's tenants, which outlive the threads that use them.
    pooled: bool,
    /// The writer stream in the top bits of every chunk sequence number (see the format's
    /// `Extents::stream`): 0 for a thread's own tenant, `k << SEQ_STREAM_SHIFT` for pool tenant k.
    stream: u64,
    /// The clock of the tenant's log, copied so the write path needs no other load.
    clock: ClockKind,
    /// Its TraceLog is gone; the lock is MasterLocked for ever.
    dead: AtomicBool,
    /// Its thread exited; `stop` prunes it.
    retired: AtomicBool,
    /// The log's core. Dereferenced only inside a slave critical section, or by the log itself:
    /// a dying log master-locks every tenant for ever before it frees the core.
    core: *const LogCore,
    st: UnsafeCell<TenantState>,
    /// The chunk the tenant holds (`st.chunk`), published for readers of the running trace that
    /// take no tenant lock (the streaming collector's periodic flush of quiet tenants pins it).
    /// Written only where `st.chunk` changes, all of them slow paths. Core, not the collector's:
    /// only the write path knows when the chunk changes, and it must publish that in the same
    /// critical section (`loom_tests.rs` models 10 and 12 check the hint against the loans).
    current: AtomicPtr<TraceChunk>,
    /// The kernel's id of the thread a thread's own tenant belongs to (0 for pool tenants), read
    /// by the system collector, which opens a perf event per traced thread. Changes only in a fork
    /// child (its thread's new id). Core, not the system context's: which thread a tenant belongs
    /// to is the tenant table's own record (as `pooled` and `retired` are), set when the thread
    /// attaches and by the core's fork reset; a copy kept by the system context would have to
    /// follow every attach, retirement and fork of the core's table.
    owner: AtomicU32,
}

impl std::fmt::Debug for Tenant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tenant")
            .field("shared", &self.shared)
            .field("lock", &self.lock)
            .finish_non_exhaustive()
    }
}

// SAFETY: `st` is accessed only by the holder of the slave or master lock, which excludes every
// other accessor and orders the accesses (Release on unlock, Acquire on lock). `core` points to a
// LogCore that is Sync and outlives every dereference (see the field's comment).
unsafe impl Sync for Tenant {}
// SAFETY: as above; nothing in a tenant is tied to the thread that created it.
unsafe impl Send for Tenant {}

impl Tenant {
    /// A tenant of the log whose core is `core`. Pool tenants (`pool_slot` is `Some(k)`, k ≥ 1, the
    /// writer stream) are shared by several threads; a thread's own tenant is shared only when
    /// `exclusive_ok` is false (no membarrier).
    pub(crate) fn new(
        core: &LogCore,
        clock: ClockKind,
        pool_slot: Option<u16>,
        exclusive_ok: bool,
        tid: u32,
    ) -> Tenant {
        let pooled = pool_slot.is_some();
        Tenant {
            lock: ChunkLock::new(),
            shared: pooled || !exclusive_ok,
            pooled,
            stream: u64::from(pool_slot.unwrap_or(0)) << SEQ_STREAM_SHIFT,
            clock,
            dead: AtomicBool::new(false),
            retired: AtomicBool::new(false),
            core,
            current: AtomicPtr::new(std::ptr::null_mut()),
            owner: AtomicU32::new(if pooled { 0 } else { tid }),
            st: UnsafeCell::new(TenantState {
                chunk: std::ptr::null(),
                pos: CHUNK_RECORDS as u32,
                extra: 0,
                tid,
                seq: 0,
                lost: 0,
                generation: 0,
            }),
        }
    }

    pub(crate) fn is_pooled(&self) -> bool {
        self.pooled
    }

    /// The thread a thread's own tenant belongs to; `None` for a pool tenant.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn owner(&self) -> Option<u32> {
        // Relaxed: an id; a fork child's only thread sets it before it starts a collector.
        (!self.pooled).then_some(self.owner.load(Ordering::Relaxed))
    }

    pub(crate) fn is_dead(&self) -> bool {
        // Acquire: pairs with the Release in `kill`.
        self.dead.load(Ordering::Acquire)
    }

    pub(crate) fn is_retired(&self) -> bool {
        // Acquire: pairs with the Release in `retire`.
        self.retired.load(Ordering::Acquire)
    }

    /// Writes one event of `n` records for the thread whose id `tid` returns (called only when
    /// needed: pool tenants and chunk swaps). `fill` gets a pointer to `n` contiguous writable
    /// record slots and the clock; it must initialise all `n`.
    ///
    /// Returns [`Outcome::Dead`] if the tenant is dead, so the caller can attach a new tenant and
    /// retry with its copy of `fill`.
    #[inline(always)]
    pub(crate) fn write<F, T>(&self, core: &LogCore, tid: T, n: u32, fill: F) -> Outcome
    where
        F: Fill,
        T: Fn() -> u32,
    {
        if self.shared {
            if let Err(outcome) = self.lock_shared(core, tid(), n, fill.callsite()) {
                return outcome;
            }
        } else if let Err(held) = self.lock.try_slave_lock_exclusive() {
            return self.lock_failed(core, held);
        }
        // SAFETY: the slave lock is held, so no one else touches `st` until it is released.
        let st = unsafe { &mut *self.st.get() };
        // Written as `pos > CAP - n` (n is a small constant) rather than `pos + n > CAP`: one compare.
        // `n <= CHUNK_RECORDS` always holds: `Arg` is sealed and emit.rs asserts the largest event
        // fits in a chunk.
        debug_assert!(n as usize <= CHUNK_RECORDS);
        debug_assert!(std::ptr::eq(core, self.core), "a tenant is written with its own log's core");
        if st.pos > CHUNK_RECORDS as u32 - n {
            // `make_room` releases the lock itself if it unwinds.
            if let Err(outcome) = self.make_room(st, tid(), n, fill.callsite()) {
                self.lock.slave_unlock();
                return outcome;
            }
        }
        let pos = st.pos;
        // SAFETY: the check above (or make_room) guarantees a chunk loaned to this tenant with
        // `pos + n <= CHUNK_RECORDS`; the slots at and above `pos` are unpublished and ours.
        let chunk = unsafe { &*st.chunk };
        // See `UnlockOnUnwind` for why only a multi-record fill is guarded. `n` is a constant at
        // every callsite, so one of these two branches is all a callsite compiles to.
        if n > 1 {
            let unwind = UnlockOnUnwind(self);
            fill.fill(chunk.slot(pos as usize), self.clock);
            unwind.disarm();
        } else {
            fill.fill(chunk.slot(pos as usize), self.clock);
        }
        // `n` is a constant at every callsite, so for one-record events this folds away.
        if n > 1 {
            st.extra += n - 1;
        }
        st.pos = pos + n;
        chunk.publish(pos + n);
        self.lock.slave_unlock();
        Outcome::Written
    }

    /// The slave lock of a tenant shared by several threads: a compare-and-swap, then a
    /// thread-switch record (or a new chunk) when the writer changes. Out of line and free of the
    /// fill, so the exclusive path keeps the fill in registers. Unlocks again if it fails.
    #[cold]
    #[inline(never)]
    fn lock_shared(&self, core: &LogCore, tid: u32, n: u32, callsite: u32) -> Result<(), Outcome> {
        if let Err(held) = self.lock.try_slave_lock_shared() {
            return Err(self.lock_failed(core, held));
        }
        // SAFETY: the slave lock is held.
        let st = unsafe { &mut *self.st.get() };
        if st.tid != tid {
            if let Err(outcome) = self.make_room(st, tid, n, callsite) {
                self.lock.slave_unlock();
                return Err(outcome);
            }
        }
        Ok(())
    }

    /// Whether the running trace still takes the event of `callsite`; if not, counts it as
    /// `stopping`. An event reaching a tenant's first chunk of a new trace (or a pool tenant just
    /// switched to its thread) may have passed its enabled check before that trace started: it
    /// raced a `stop` and the next `start`. If the new trace excludes its callsite, it is counted
    /// once, as `stopping`, and not written into the new trace.
    #[cold]
    fn still_traced(core: &LogCore, callsite: u32) -> bool {
        if callsite == 0 || core.still_traces(callsite) {
            return true;
        }
        core.drops.count(DropReason::Stopping);
        false
    }

    /// Counts a failed slave lock under the reason the failed attempt saw, unless the tenant is
    /// dead. A thread-local tenant's slave side is only ever its own thread's, so finding it held
    /// is re-entry; a shared tenant's may be another thread's, which counts as contention (even
    /// when it is a signal handler re-entering its own thread's hold on a pool tenant). The master
    /// side is taken only by `stop` (and a dying log or a forked child, whose tenants are dead or
    /// retired), so a master-held lock means the event raced the end of its trace.
    #[cold]
    #[inline(never)]
    fn lock_failed(&self, core: &LogCore, held: Held) -> Outcome {
        if self.is_dead() {
            return Outcome::Dead;
        }
        let reason = match held {
            Held::ByMaster => DropReason::Stopping,
            Held::BySlave if self.shared => DropReason::Contended,
            Held::BySlave => DropReason::Reentrant,
        };
        core.drops.count(reason);
        Outcome::Dropped
    }

    /// The tenant's log's core, the same as its writers' `core`.
    ///
    /// Only inside a slave critical section (or a master one): the lock keeps the log, and so its
    /// core, alive, since a dying log master-locks every tenant for ever before it frees the core.
    #[inline(always)]
    fn core(&self) -> &LogCore {
        // SAFETY: `core` points to the log's core, alive while the caller holds the tenant's lock
        // (see above and the field's comment).
        unsafe { &*self.core }
    }

    /// Ensures `n` free records in a chunk stamped for `tid`: a thread-switch record for a pool
    /// tenant changing writers, or a new chunk. The tenant's state is consistent at every point
    /// where this can fail or unwind.
    ///
    /// It reads its log's core from the tenant ([`core`](Self::core)) where it needs it, rather
    /// than taking the writer's `core` as an argument: fat LTO folds such an argument into a
    /// constant (the global log's core) only while every caller passes that constant, and since a
    /// subsystem's hook writes into the log it is handed (the triggers' markers, through
    /// `trace_log/attach.rs`'s `ARMED`) not every caller does; the argument then cost 3
    /// instructions per chunk swap (itself, and a register spilled for it), the load costs 1.
    #[cold]
    #[inline(never)]
    fn make_room(&self, st: &mut TenantState, tid: u32, n: u32, callsite: u32) -> Result<(), Outcome> {
        let unwind = UnlockOnUnwind(self);
        let room = self.make_room_locked(st, tid, n, callsite);
        unwind.disarm();
        room
    }

    #[inline(always)]
    fn make_room_locked(&self, st: &mut TenantState, tid: u32, n: u32, callsite: u32) -> Result<(), Outcome> {
        // A pool tenant switching to this thread: its event may have raced a restart.
        if self.pooled && st.tid != tid && !Self::still_traced(self.core(), callsite) {
            return Err(Outcome::Dropped);
        }
        if self.shared && st.tid != tid && st.pos + 1 + n <= CHUNK_RECORDS as u32 {
            // SAFETY: the chunk is non-null (pos < CHUNK_RECORDS) and loaned to this tenant, whose
            // slave lock we hold; slot `pos` is unpublished and ours to write.
            let chunk = unsafe { &*st.chunk };
            // SAFETY: as above.
            unsafe {
                (*chunk.slot(st.pos as usize)).write(Record::new(
                    0,
                    ID_THREAD_SWITCH,
                    Meta(0),
                    [u64::from(tid), 0],
                ))
            };
            st.pos += 1;
            st.extra += 1;
            st.tid = tid;
            return Ok(());
        }
        // Acquire: pairs with the Release store in `TraceLog::start`, so the buffer's memory is
        // initialised. The slave lock keeps `stop` from freeing it while we use it.
        let buf = self.core().buffer.load(Ordering::Acquire);
        if buf.is_null() {
            self.core().drops.count(DropReason::Stopping);
            return Err(Outcome::Dropped);
        }
        // SAFETY: non-null, and alive for as long as we hold the slave lock (see LogCore::buffer).
        let buf = unsafe { &*buf };
        // The tenant's first chunk of this trace: its event may have raced a restart (a pool
        // tenant's too, when its last writer is this same thread, which the switch check above
        // passes over). Checked before anything changes, so a refused event leaves the tenant as
        // it was.
        if st.generation != buf.generation && !Self::still_traced(self.core(), callsite) {
            return Err(Outcome::Dropped);
        }
        st.generation = buf.generation;
        if !st.chunk.is_null() {
            let (chunk, events) = (st.chunk, st.events());
            // Forget the chunk first: if `give_back` unwound, the tenant must not go on writing
            // into a chunk that may be FULL.
            st.chunk = std::ptr::null();
            st.pos = CHUNK_RECORDS as u32;
            // Relaxed: a hint for the collector, which pins the chunk before it trusts it.
            self.current.store(std::ptr::null_mut(), Ordering::Relaxed);
            // SAFETY: a tenant's chunk always belongs to the current buffer (eviction clears it
            // before a buffer is retired), and we held it under the slave lock.
            unsafe { buf.give_back(&*chunk, events) };
        }
        let mut loan = buf.loan(tid, self.stream | st.seq);
        if matches!(loan, Loan::AllLoaned) {
            loan = self.wait_for_chunk(buf, tid, st.seq);
        }
        match loan {
            Loan::Chunk(c) => {
                st.chunk = c;
                // Relaxed: a hint for the collector (see `current`).
                self.current.store(std::ptr::from_ref(c).cast_mut(), Ordering::Relaxed);
                st.pos = 0;
                st.extra = 0;
                st.seq += 1;
                st.tid = tid;
                if st.lost > 0 {
                    self.mark_saturation(buf, st, n);
                }
                Ok(())
            }
            Loan::Exhausted { first } => {
                self.core().drops.count(DropReason::BufferFull);
                Err(if first { Outcome::Exhausted(buf.generation) } else { Outcome::Dropped })
            }
            Loan::AllLoaned => {
                self.core().drops.count(DropReason::NoChunk);
                st.lost += 1;
                Err(Outcome::Dropped)
            }
        }
    }

    /// Stream mode with a `Block` datastream open: retries the loan until a chunk is free or the
    /// configured time has passed (LTTng's blocking mode). Otherwise, or in other modes, one more
    /// failed loan.
    #[cold]
    fn wait_for_chunk<'b>(&self, buf: &'b TraceBuffer, tid: u32, seq: u64) -> Loan<'b> {
        if buf.mode() != crate::BufferMode::Stream {
            return Loan::AllLoaned;
        }
        let ns = STREAM.get().map_or(0, |hooks| (hooks.block_ns)(self.core().slot));
        if ns == 0 {
            return Loan::AllLoaned;
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_nanos(ns);
        loop {
            crate::sync::yield_now();
            match buf.loan(tid, self.stream | seq) {
                Loan::AllLoaned if std::time::Instant::now() < deadline => continue,
                other => return other,
            }
        }
    }

    /// Writes the saturation marker at the start of a fresh chunk: an instant of the marker
    /// callsite whose argument is the number of events dropped since this tenant's last chunk.
    #[cold]
    fn mark_saturation(&self, buf: &TraceBuffer, st: &mut TenantState, n: u32) {
        if buf.mode() != crate::BufferMode::Stream || 1 + n > CHUNK_RECORDS as u32 {
            return;
        }
        let id = STREAM.get().map_or(0, |hooks| (hooks.saturation_id)());
        if id == 0 {
            return;
        }
        let meta = Meta::new(0, phosphor_format::ArgType::U64, phosphor_format::ArgType::None);
        let ts = crate::record::clock::now(self.clock);
        // SAFETY: the chunk was just loaned to this tenant, whose slave lock we hold; slot 0 is
        // unpublished and ours to write.
        unsafe { (*(*st.chunk).slot(0)).write(Record::new(ts, id, meta, [st.lost, 0])) };
        st.pos = 1;
        st.lost = 0;
        // Published now, so the marker is committed even if the event after it is not written.
        // SAFETY: as above.
        unsafe { (*st.chunk).publish(1) };
        // Relaxed: a statistic.
        buf.counters.markers.fetch_add(1, Ordering::Relaxed);
    }

    /// The owning thread is exiting: hand the chunk back (its events stay in the trace) and mark
    /// the tenant for pruning. Pool tenants outlive their threads and are left alone.
    pub(crate) fn retire(&self) {
        if self.pooled {
            return;
        }
        let locked = if self.shared {
            self.lock.try_slave_lock_shared().is_ok()
        } else {
            self.lock.try_slave_lock_exclusive().is_ok()
        };
        if locked {
            // SAFETY: slave lock held.
            let st = unsafe { &mut *self.st.get() };
            if !st.chunk.is_null() {
                // SAFETY: the slave lock keeps the log (and so `core`) alive: a dying log
                // master-locks us first, and we hold the slave side.
                let core = unsafe { &*self.core };
                // Acquire: as in `make_room`.
                let buf = core.buffer.load(Ordering::Acquire);
                // With the buffer already unpublished, `stop` is between its swap and `evict_all`:
                // leave the chunk in place for `evict_all` to give back, or its events would be in
                // the trace but missing from `recorded`.
                if !buf.is_null() {
                    // SAFETY: as in `make_room`; the chunk belongs to this buffer and we hold it.
                    unsafe { (*buf).give_back(&*st.chunk, st.events()) };
                    st.chunk = std::ptr::null();
                    // Relaxed: a hint for the collector, which pins the chunk before it trusts it.
                    self.current.store(std::ptr::null_mut(), Ordering::Relaxed);
                    st.pos = CHUNK_RECORDS as u32;
                }
            }
            self.lock.slave_unlock();
        }
        // If the lock was master-held, `evict_all` is taking the chunk back right now.
        // Release: the pruning thread sees the tenant's final state.
        self.retired.store(true, Ordering::Release);
    }

    /// Marks the tenant dead and leaves it MasterLocked for ever. The caller must hold the master
    /// lock (from `evict_all` with `keep_locked`).
    pub(crate) fn kill(&self) {
        // Release: pairs with `is_dead`.
        self.dead.store(true, Ordering::Release);
    }
}

/// `evict_threads`: master-locks every tenant, gives its chunk back to `buf` (or forgets it when
/// `buf` is `None`) and leaves it empty, its sequence numbers and losses reset for the next trace.
/// Unlocks them again unless `keep_locked`. Only `stop` and a dying log call this: it waits for a
/// writer that is inside its critical section, and a writer that arrives meanwhile drops its event
/// as `stopping`.
pub(crate) fn evict_all(tenants: &[Arc<Tenant>], buf: Option<&TraceBuffer>, keep_locked: bool) {
    for t in tenants {
        t.lock.raise_master();
    }
    // One heavy barrier for the whole batch: after it, every slave either saw its master flag or
    // has its own flag visible to us.
    barrier::heavy();
    for t in tenants {
        t.lock.wait_for_slave();
        // SAFETY: master lock held, no slave inside.
        let st = unsafe { &mut *t.st.get() };
        let (chunk, events) = (st.chunk, st.events());
        st.chunk = std::ptr::null();
        // Relaxed: a hint for the collector, which pins the chunk before it trusts it.
        t.current.store(std::ptr::null_mut(), Ordering::Relaxed);
        st.pos = CHUNK_RECORDS as u32;
        // A new trace starts the tenant afresh: sequence numbers, and losses to mark.
        st.seq = 0;
        st.lost = 0;
        if let (Some(buf), false) = (buf, chunk.is_null()) {
            // SAFETY: the chunk belongs to `buf`, and the master lock makes us its only holder.
            unsafe { buf.give_back(&*chunk, events) };
        }
        if !keep_locked {
            t.lock.master_unlock();
        }
    }
}

impl Tenant {
    /// The chunk the tenant holds now, as a hint (it may be given back at any moment): the
    /// streaming collector pins it before it reads it.
    pub(crate) fn current_chunk(&self) -> *const TraceChunk {
        // Relaxed: a hint; `TraceChunk::pin` orders what is read from the chunk.
        self.current.load(Ordering::Relaxed)
    }

    /// In a child process just forked: no other thread exists, so whatever a vanished thread held
    /// (its slave flag, a master flag raised by a `stop` that was running) is released by force,
    /// and the chunk, which belongs to the parent's trace, is forgotten. The tenant is then empty,
    /// as after `evict_all`, and `retired` unless it is the forking thread's own or a pool tenant.
    /// But the forking thread's (`keep`) with its slave side held is that thread's `write`, which
    /// the fork interrupted and which resumes after it: that tenant is master-locked and killed
    /// (its next event attaches afresh), not touched, and `true` says the caller keeps the buffer.
    ///
    /// # Safety
    ///
    /// Only in the child of a `fork`, from the forking thread (the only one), before any other
    /// thread is started, with the log's control lock held.
    #[cfg(not(loom))]
    #[cfg_attr(not(unix), allow(dead_code))] // for a fork child (Unix only)
    pub(crate) unsafe fn reset_after_fork(&self, keep: bool) -> bool {
        if keep && self.lock.state() == crate::record::chunk_lock::LockState::SlaveLocked {
            self.lock.raise_master();
            self.kill();
            return true;
        }
        self.lock.force_unlock_after_fork();
        // SAFETY: no other thread exists to hold either side of the lock (see the contract).
        let st = unsafe { &mut *self.st.get() };
        st.chunk = std::ptr::null();
        st.pos = CHUNK_RECORDS as u32;
        st.extra = 0;
        st.seq = 0;
        st.lost = 0;
        st.generation = 0;
        // Relaxed: single-threaded here.
        self.current.store(std::ptr::null_mut(), Ordering::Relaxed);
        if !keep && !self.pooled {
            // Release: as in `retire`.
            self.retired.store(true, Ordering::Release);
        } else if !self.pooled {
            // Relaxed: single-threaded here; the collector thread that reads it starts later.
            self.owner.store(crate::record::thread::os_tid(), Ordering::Relaxed);
        }
        false
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::BufferMode;

    fn one_record(id: u32) -> impl Fill {
        move |dst: *mut MaybeUninit<Record>, _: ClockKind| {
            // SAFETY: `Tenant::write` hands the fill one writable slot.
            unsafe { dst.write(MaybeUninit::new(Record::new(1, id, Meta(0), [0; 2]))) };
        }
    }

    /// A panic inside the slave critical section (here in the fill; in real code a debug
    /// assertion or an index) must not leave the lock held: later events are written, not counted
    /// as re-entrant, and eviction does not wait for ever.
    #[test]
    fn a_panic_inside_the_critical_section_releases_the_lock() {
        let core = LogCore::new(0);
        let buffer = Box::into_raw(Box::new(TraceBuffer::new(BufferMode::Fixed, 2).unwrap()));
        // Release: as in `TraceLog::start`.
        core.buffer.store(buffer, Ordering::Release);
        for shared in [false, true] {
            let exclusive_ok = !shared && barrier::asymmetric_available();
            let t = Arc::new(Tenant::new(&core, ClockKind::Monotonic, None, exclusive_ok, 7));
            assert_eq!(t.write(&core, || 7, 1, one_record(20)), Outcome::Written);
            // Two records: a multi-record fill is the one that calls out-of-line code that can
            // panic (`encode_continuation`); see `UnlockOnUnwind`.
            let panicking = |_: *mut MaybeUninit<Record>, _: ClockKind| panic!("inside the critical section");
            let r =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.write(&core, || 7, 2, panicking)));
            assert!(r.is_err());
            assert_eq!(t.lock.state(), crate::record::chunk_lock::LockState::Unlocked, "shared: {shared}");
            assert_eq!(t.write(&core, || 7, 1, one_record(21)), Outcome::Written);
            // Relaxed: single-threaded.
            assert_eq!(core.drops.reentrant.load(Ordering::Relaxed), 0);
            let unwound = if shared { 2 } else { 1 };
            // Relaxed: single-threaded.
            assert_eq!(core.drops.load().total(), unwound, "the panicking event is counted");
            // Relaxed: single-threaded.
            assert_eq!(core.drops.unwound.load(Ordering::Relaxed), unwound, "as unwound");
            // SAFETY: the buffer lives until the end of the test.
            evict_all(std::slice::from_ref(&t), Some(unsafe { &*buffer }), false);
        }
        // SAFETY: every tenant was evicted; nothing refers to the buffer.
        let buf = unsafe { Box::from_raw(buffer) };
        assert_eq!(
            buf.recorded_events(),
            4,
            "the two events before and after each panic, none of the panicking"
        );
    }
}

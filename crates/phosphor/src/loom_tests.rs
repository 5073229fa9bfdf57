//! Loom models of the `ChunkLock` protocol and of the tenant/chunk hand-off.
//!
//! Built only with `RUSTFLAGS="--cfg loom"` (see `scripts/loom.sh`). Under loom the lock's and the
//! buffer's atomics are loom's (see `sync`), and both halves of the asymmetric barrier are
//! `fence(SeqCst)` (see `barrier`), so loom explores every interleaving and every value a load may
//! return under the C++20 memory model, within its documented limits.
//!
//! * Models 1 and 2 guard a `loom::cell::UnsafeCell` with the lock. Loom tracks the causality of
//!   every access to such a cell and fails the run if two accesses are not ordered by
//!   happens-before, so a broken exclusion shows up as a reported race, not as a lucky pass.
//! * Model 3 runs `Tenant::write` against what `TraceLog::stop` does (unpublish the buffer,
//!   `evict_all`, read the chunks) and checks the accounting exactly: every write either lands in
//!   a chunk that the stopper sees (or is counted as overwritten there), or is counted as dropped.
//!   Each fill also touches a per-writer loom cell, which the stopper reads after eviction: a fill
//!   that could still run after `evict_all` returned would be reported as a race on that cell.
//!
//! * Model 12 pins the chunk a writer holds (the streaming collector's piece), reads its committed
//!   prefix on a third thread and unpins it there, while the writer writes on, gives the chunk
//!   back and loans again: no torn or mixed read, and the writer never fails.
//! * Model 11 races two insertions of one key into a `SiteCache` and a lookup (`site_cache.rs`).
//! * Model 13 fires two triggers into a log's `Gate` (`trigger_gate.rs`) while its dump thread
//!   takes windows and sleeps on the wake word (a futex stand-in: it waits while the word is
//!   unchanged), then stops it: every window a firing opened is taken, none twice, and the dump
//!   thread never sleeps through one.
//! * Model 9 interns one string from two threads (`intern.rs`); model 10 races a dump
//!   (`TraceBuffer::snapshot`, which pins each chunk in turn) against a ring writer. Every record
//!   of a chunk has a loom cell that `publish` writes and every reader reads, so a copy or a read
//!   of records that is not ordered after their writer, or a writer reusing records a reader may
//!   still be copying, is reported as a race (letting a loan take a pinned chunk makes models 10
//!   and 12 fail that way).
//!
//! Every model prints how many executions loom explored and how long it took.
//!
//! # Models that once failed
//!
//! * `shared_slaves_and_master_exclude_each_other` and `handoff_pool_tenant_two_writers` exercise
//!   `ChunkLock::try_slave_lock_shared`, whose Dekker protocol rests on `SeqCst` loads and stores.
//!   Loom 0.7 models `SeqCst` *accesses* only as acquire/release while it models `fence(SeqCst)`
//!   faithfully, so it reported a race that C++20 forbids. `chunk_lock.rs` now adds a
//!   `fence(SeqCst)` between the compare-and-swap and the load under `cfg(loom)` only.
//! * `handoff_retire_races_stop` found a real accounting bug: when `stop` had already swapped the
//!   buffer pointer to null, `Tenant::retire` (thread exit) dropped its chunk pointer without giving
//!   the chunk back, so its events were in the trace but missing from `Stats::recorded`. Fixed:
//!   `retire` now leaves the chunk for `evict_all`.
//!
use std::mem::MaybeUninit;
use std::sync::atomic::AtomicUsize as StdAtomicUsize;
use std::sync::Arc;
use std::time::Instant;

use loom::cell::UnsafeCell;
use loom::model::Builder;
use loom::thread;

use phosphor_format::{count_events, Meta, Record, FIRST_CALLSITE_ID};

use crate::record::buffer::TraceBuffer;
use crate::record::chunk_lock::{ChunkLock, LockState};
use crate::record::clock::ClockKind;
use crate::record::tenant::{evict_all, LogCore, Outcome, Tenant};
use crate::sync::Ordering;
use crate::BufferMode;

/// Runs `f` under loom and prints the executions explored. `bound` is the preemption bound used
/// unless `LOOM_MAX_PREEMPTIONS` sets one (`None`: exhaustive).
pub(crate) fn check<F>(name: &'static str, bound: Option<usize>, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    // A std counter, invisible to loom: it only counts executions for the report.
    let runs: &'static StdAtomicUsize = Box::leak(Box::new(StdAtomicUsize::new(0)));
    let mut b = Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = bound;
    }
    let bound = b.preemption_bound;
    let t0 = Instant::now();
    b.check(move || {
        // Relaxed (std atomic, not modelled): a statistic read after `check` returns.
        runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f();
    });
    eprintln!(
        "loom model {name}: {} executions in {:.2?} (preemption bound {bound:?})",
        // Relaxed: every execution has finished.
        runs.load(std::sync::atomic::Ordering::Relaxed),
        t0.elapsed()
    );
}

// ---------------------------------------------------------------------------------------------
// Models 1 and 2: mutual exclusion.
// ---------------------------------------------------------------------------------------------

/// A value that only the holder of `lock` may touch.
struct Guarded {
    lock: ChunkLock,
    value: UnsafeCell<u64>,
}

// SAFETY: [1] `lock` is Sync. [2] `value` is accessed only by the holder of the slave or master
// side of `lock` (or after every other thread was joined); that this excludes every other access
// is exactly what the models check, and loom reports any access it fails to order.
unsafe impl Sync for Guarded {}

impl Guarded {
    fn new() -> Guarded {
        Guarded { lock: ChunkLock::new(), value: UnsafeCell::new(0) }
    }

    /// Adds `d` to the value. The caller holds the slave or the master side of `lock`.
    fn add(&self, d: u64) {
        // SAFETY: [1] the pointer comes from loom's cell and is valid for the closure. [2] The
        // caller holds the lock, so no other access overlaps; if the protocol failed to exclude
        // one, loom reports the two accesses as a race instead of letting this pass.
        self.value.with_mut(|p| unsafe { *p += d });
    }

    fn get(&self) -> u64 {
        // SAFETY: [1] the pointer is valid for the closure. [2] Called after every other thread
        // was joined (or under the lock), so no write overlaps.
        self.value.with(|p| unsafe { *p })
    }
}

/// The master side as `evict_all` runs it: raise the flag, one heavy barrier, wait for the slave.
fn master_section(g: &Guarded, d: u64) {
    g.lock.raise_master();
    crate::record::barrier::heavy();
    g.lock.wait_for_slave();
    assert_eq!(g.lock.state(), LockState::MasterLocked);
    g.add(d);
    g.lock.master_unlock();
}

/// Model 1: one exclusive slave (a thread-local tenant's owner) against the master.
///
/// The slave tries once; if the master holds the lock the try fails and, as the tenant's owner
/// would on its next event, it tries again until the master has let go. That checks both mutual
/// exclusion and that a failed try leaves the lock usable (the slave flag is cleared again).
#[test]
fn exclusive_slave_and_master_exclude_each_other() {
    check("exclusive slave vs master", None, || {
        let g = Arc::new(Guarded::new());
        let slave = {
            let g = g.clone();
            thread::spawn(move || {
                // Two events from the tenant's owner. Either try may fail while the master holds
                // the lock; a try never waits, so the slave does not spin here (a slave retrying
                // in a loop could starve `wait_for_slave` in loom's adversarial schedules).
                let mut entered = 0u64;
                for _ in 0..2 {
                    if g.lock.try_slave_lock_exclusive().is_ok() {
                        g.add(1);
                        g.lock.slave_unlock();
                        entered += 1;
                    }
                }
                entered
            })
        };
        master_section(&g, 100);
        let entered = slave.join().unwrap();
        assert_eq!(g.get(), 100 + entered);
        // Whatever happened, failed tries included, the lock ends Unlocked and both sides can
        // take it again (this thread is the slave's owner now: the join ordered it after the
        // slave thread).
        assert_eq!(g.lock.state(), LockState::Unlocked);
        assert!(g.lock.try_slave_lock_exclusive().is_ok());
        assert!(!g.lock.try_slave_lock_exclusive().is_ok(), "re-entry must fail");
        g.lock.slave_unlock();
        g.lock.master_lock();
        assert!(!g.lock.try_slave_lock_exclusive().is_ok(), "master-locked");
        g.lock.master_unlock();
    });
}

/// Model 2: two slaves of a shared (pool) tenant, which take the lock with a compare-and-swap,
/// against the master.
#[test]
fn shared_slaves_and_master_exclude_each_other() {
    check("two shared slaves vs master", Some(3), || {
        let g = Arc::new(Guarded::new());
        let slaves: Vec<_> = (0..2)
            .map(|_| {
                let g = g.clone();
                thread::spawn(move || {
                    if g.lock.try_slave_lock_shared().is_ok() {
                        g.add(1);
                        g.lock.slave_unlock();
                        1
                    } else {
                        0
                    }
                })
            })
            .collect();
        g.lock.master_lock();
        g.add(100);
        g.lock.master_unlock();
        let entered: u64 = slaves.into_iter().map(|s| s.join().unwrap()).sum();
        assert_eq!(g.get(), 100 + entered);
        assert_eq!(g.lock.state(), LockState::Unlocked);
        assert!(g.lock.try_slave_lock_shared().is_ok(), "a failed try must leave the lock usable");
        g.lock.slave_unlock();
    });
}

// ---------------------------------------------------------------------------------------------
// Model 3: the tenant/chunk hand-off against `stop`.
// ---------------------------------------------------------------------------------------------

/// One hand-off scenario.
#[derive(Clone, Copy, Debug)]
struct Handoff {
    mode: BufferMode,
    chunks: usize,
    /// Writer threads (1 or 2).
    writers: usize,
    /// Events each writer emits.
    events: usize,
    /// Records per event: 64 puts one event in a chunk, 40 puts three.
    records: u32,
    /// One pool tenant shared by every writer, instead of one exclusive tenant each.
    pooled: bool,
    /// Each writer's thread exits after its events (`Tenant::retire`), racing with `stop`.
    retire: bool,
}

/// Counts the fills of one writer; loom checks every access to it for races.
struct Shadow(UnsafeCell<u64>);

// SAFETY: [1] one writer thread bumps the cell, inside its tenant's slave critical section; [2] the
// stopper reads it only after `evict_all`. That these never overlap is what model 3 checks, and loom
// reports any pair of accesses that happens-before does not order.
unsafe impl Sync for Shadow {}

impl Shadow {
    fn bump(&self) {
        // SAFETY: [1] the pointer is valid for the closure. [2] Only this shadow's writer thread
        // writes it, and only inside its tenant's slave critical section; the stopper reads it
        // after `evict_all`, which must order every such write before the read (loom reports a
        // race otherwise).
        self.0.with_mut(|p| unsafe { *p += 1 });
    }

    fn get(&self) -> u64 {
        // SAFETY: [1] the pointer is valid for the closure. [2] See `bump`: the caller has
        // evicted every tenant, so no fill runs concurrently.
        self.0.with(|p| unsafe { *p })
    }
}

/// The fill of event `e` of writer `w`: a lead record naming the event, then continuations.
fn fill_event(
    shadow: &Shadow,
    w: u64,
    e: u64,
    n: u32,
) -> impl FnOnce(*mut MaybeUninit<Record>, ClockKind) + Copy + '_ {
    move |dst, _clock| {
        let lead = Record::new(e, FIRST_CALLSITE_ID + w as u32, Meta(0).with_continuation(n - 1), [w, e]);
        // SAFETY: [1] `Tenant::write` hands the fill `n` contiguous, writable, unpublished slots
        // of a chunk its tenant holds under the slave lock, so `dst` and `dst.add(n - 1)` are in
        // bounds. [2] No one else reads or writes them until the count is published.
        unsafe {
            dst.write(MaybeUninit::new(lead));
            for i in 1..n as usize {
                dst.add(i).write(MaybeUninit::new(Record::new(0, 0, Meta(0), [w, e])));
            }
        }
        shadow.bump();
    }
}

fn handoff(h: Handoff) {
    let core = Arc::new(LogCore::new(0));
    let buffer = Box::into_raw(Box::new(TraceBuffer::new(h.mode, h.chunks).unwrap()));
    // Release: as in `TraceLog::start`, publishes the initialised buffer to the tenants' Acquire.
    core.buffer.store(buffer, Ordering::Release);

    let tenants: Vec<Arc<Tenant>> = if h.pooled {
        vec![Arc::new(Tenant::new(&core, ClockKind::Monotonic, Some(1), false, 0))]
    } else {
        (0..h.writers)
            .map(|w| Arc::new(Tenant::new(&core, ClockKind::Monotonic, None, true, w as u32 + 1)))
            .collect()
    };
    let shadows: Vec<Arc<Shadow>> = (0..h.writers).map(|_| Arc::new(Shadow(UnsafeCell::new(0)))).collect();

    let writers: Vec<_> = (0..h.writers)
        .map(|w| {
            let core = core.clone();
            let tenant = tenants[if h.pooled { 0 } else { w }].clone();
            let shadow = shadows[w].clone();
            thread::spawn(move || {
                let tid = w as u32 + 1;
                let outcomes = (0..h.events)
                    .map(|e| {
                        let fill = fill_event(&shadow, w as u64, e as u64, h.records);
                        tenant.write(&core, || tid, h.records, fill)
                    })
                    .collect::<Vec<Outcome>>();
                if h.retire {
                    tenant.retire();
                }
                outcomes
            })
        })
        .collect();

    // --- `TraceLog::stop` ---
    // AcqRel: as in `stop`; the swap is ordered before the evictions and sees our own store.
    let ptr = core.buffer.swap(std::ptr::null_mut(), Ordering::AcqRel);
    assert_eq!(ptr, buffer);
    // SAFETY: [1] `ptr` came from `Box::into_raw` above and is freed only below. [2] Shared
    // access only: writers that loaded it before the swap use it concurrently through `&`.
    let buf = unsafe { &*ptr };
    evict_all(&tenants, Some(buf), false);

    // Every fill that will ever run has run and is ordered before these reads.
    let fills: u64 = shadows.iter().map(|s| s.get()).sum();
    let mut seen = Vec::new();
    let mut recorded = 0u64;
    for i in buf.used_chunks() {
        // SAFETY: [1] the buffer pointer is unpublished and every tenant evicted, so no tenant
        // holds or can reach this chunk: no one writes it while the slice lives.
        let records = unsafe { buf.chunk(i).records() };
        recorded += count_events(records);
        seen.extend(records.iter().filter(|r| r.id >= FIRST_CALLSITE_ID).map(|r| (r.slots[0], r.slots[1])));
    }
    assert_eq!(recorded, seen.len() as u64);
    assert_eq!(recorded, buf.recorded_events(), "the buffer's own count agrees with its chunks");
    // Relaxed: the evictions above synchronised with every writer that touched the buffer.
    let overwritten = buf.counters.events_overwritten.load(Ordering::Relaxed);
    assert_eq!(recorded + overwritten, fills, "every fill is in a chunk or counted as overwritten");

    // --- accounting, once the writers are done (late writes are counted as `stopping`) ---
    let outcomes: Vec<Vec<Outcome>> = writers.into_iter().map(|t| t.join().unwrap()).collect();
    // `stop` frees the buffer right after the evictions; the model frees it only after the
    // join, so that a protocol failure shows up as a failed check rather than as a crash.
    // SAFETY: [1] `ptr` came from `Box::into_raw` and is freed once. [2] Every writer has been
    // joined, and `buf` is not used after this.
    drop(unsafe { Box::from_raw(ptr) });
    let emitted = (h.writers * h.events) as u64;
    let written = outcomes.iter().flatten().filter(|o| **o == Outcome::Written).count() as u64;
    assert!(outcomes.iter().flatten().all(|o| *o != Outcome::Dead), "no tenant was killed");
    let d = &core.drops;
    // Relaxed: statistics; the writers were joined.
    let counted = [&d.buffer_full, &d.no_chunk, &d.contended, &d.stopping, &d.reentrant, &d.thread_exited]
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum::<u64>();
    assert_eq!(written, fills, "a write reports Written exactly when it filled its records");
    assert_eq!(counted, emitted - written, "every unwritten event is counted once: {outcomes:?}");
    // The invariant itself: recorded + dropped == emitted.
    assert_eq!(recorded + overwritten + counted, emitted);
    for (w, e) in seen {
        assert_eq!(outcomes[w as usize][e as usize], Outcome::Written, "recorded events were written");
    }
}

/// Fixed, one chunk, one event per chunk: the second event finds the buffer exhausted.
#[test]
fn handoff_fixed_one_chunk() {
    let h = Handoff {
        mode: BufferMode::Fixed,
        chunks: 1,
        writers: 1,
        events: 2,
        records: 64,
        pooled: false,
        retire: false,
    };
    check("hand-off Fixed 1 chunk, 1 writer x 2 events", None, move || handoff(h));
}

/// Fixed, two chunks: the writer swaps chunks (`give_back`, `loan`) while the stopper evicts.
#[test]
fn handoff_fixed_two_chunks() {
    let h = Handoff {
        mode: BufferMode::Fixed,
        chunks: 2,
        writers: 1,
        events: 3,
        records: 64,
        pooled: false,
        retire: false,
    };
    check("hand-off Fixed 2 chunks, 1 writer x 3 events", None, move || handoff(h));
}

/// Ring, one chunk: the writer's third event overwrites its first chunk, counting what was lost.
#[test]
fn handoff_ring_one_chunk_overwrites() {
    let h = Handoff {
        mode: BufferMode::Ring,
        chunks: 1,
        writers: 1,
        events: 3,
        records: 64,
        pooled: false,
        retire: false,
    };
    check("hand-off Ring 1 chunk, 1 writer x 3 events", None, move || handoff(h));
}

/// Ring, one chunk, two writers with their own tenants: they compete for the chunk (`AllLoaned`
/// for the loser) and for the overwrite of a full one.
#[test]
fn handoff_ring_two_writers() {
    let h = Handoff {
        mode: BufferMode::Ring,
        chunks: 1,
        writers: 2,
        events: 2,
        records: 64,
        pooled: false,
        retire: false,
    };
    check("hand-off Ring 1 chunk, 2 writers x 2 events", Some(2), move || handoff(h));
}

/// Fixed, two chunks, two writers sharing one pool tenant: thread-switch records, contention on
/// the compare-and-swap lock, and eviction of a shared tenant.
#[test]
fn handoff_pool_tenant_two_writers() {
    let h = Handoff {
        mode: BufferMode::Fixed,
        chunks: 2,
        writers: 2,
        events: 2,
        records: 40,
        pooled: true,
        retire: false,
    };
    check("hand-off Fixed 2 chunks, pool tenant, 2 writers x 2 events", Some(2), move || handoff(h));
}

/// Fixed, two chunks: the writer's thread exits (`Tenant::retire` hands its chunk back) while
/// `stop` runs.
#[test]
fn handoff_retire_races_stop() {
    let h = Handoff {
        mode: BufferMode::Fixed,
        chunks: 2,
        writers: 1,
        events: 1,
        records: 64,
        pooled: false,
        retire: true,
    };
    check("hand-off Fixed 2 chunks, 1 writer x 1 event, then thread exit", None, move || handoff(h));
}

/// Model 9: two threads intern the same new string while one of them also interns another. Every
/// returned copy equals its input and was read after its bytes were published (the arena is a
/// loom cell, so an unordered read would be reported as a race), the shared string has one slot,
/// and each `None` is a counted fallback.
#[test]
fn intern_same_string_from_two_threads() {
    use crate::registry::intern::Interner;
    check("intern_same_string_from_two_threads", None, || {
        let i: &'static Interner = Box::leak(Box::new(Interner::new()));
        let t = thread::spawn(move || (i.intern("ab"), i.intern("cde")));
        let mine = i.intern("ab");
        let (theirs, other) = t.join().unwrap();
        let mut nones = 0;
        for (got, want) in [(mine, "ab"), (theirs, "ab"), (other, "cde")] {
            match got {
                Some(s) => assert_eq!(s, want),
                None => nones += 1,
            }
        }
        if let (Some(a), Some(b)) = (mine, theirs) {
            assert!(std::ptr::eq(a, b), "one copy of a string");
        }
        // Afterwards both are found, in one copy each.
        let again = i.intern("ab").expect("published by now");
        assert!(mine.is_none_or(|m| std::ptr::eq(m, again)));
        let st = i.stats();
        assert_eq!(st.strings, 2);
        assert_eq!(st.fallbacks, nones);
    });
}

/// A Ring buffer of `chunks` chunks, published as `TraceLog::start` does, and a thread writing
/// three 64-record events into its tenant (a chunk holds 127 records: one event per chunk).
struct RingWriter {
    core: Arc<LogCore>,
    buffer: *mut TraceBuffer,
    tenant: Arc<Tenant>,
    shadow: Arc<Shadow>,
    writer: thread::JoinHandle<Vec<Outcome>>,
}

fn ring_writer(chunks: usize) -> RingWriter {
    let core = Arc::new(LogCore::new(0));
    let buffer = Box::into_raw(Box::new(TraceBuffer::new(BufferMode::Ring, chunks).unwrap()));
    // Release: as in `TraceLog::start`.
    core.buffer.store(buffer, Ordering::Release);
    let tenant = Arc::new(Tenant::new(&core, ClockKind::Monotonic, None, true, 1));
    let shadow = Arc::new(Shadow(UnsafeCell::new(0)));
    let writer = {
        let (core, tenant, shadow) = (core.clone(), tenant.clone(), shadow.clone());
        thread::spawn(move || {
            (0..3u64)
                .map(|e| tenant.write(&core, || 1, 64, fill_event(&shadow, 0, e, 64)))
                .collect::<Vec<_>>()
        })
    };
    RingWriter { core, buffer, tenant, shadow, writer }
}

/// Model 10: a dump (`TraceBuffer::snapshot`: each chunk pinned, its committed prefix copied,
/// unpinned, the held chunk included, without touching the tenant) races a writer in a one-chunk
/// ring that overwrites its chunk (or, while the chunk is pinned, finds no chunk and drops). Every chunk the dump copies is read after
/// its last writer published it and before anyone re-loans it (the chunk's loom cell reports any
/// other order as a race), a copy holds whole events of one chunk generation only, and the trace
/// stopped afterwards still accounts for every event.
#[test]
fn snapshot_races_a_ring_writer() {
    check("snapshot races a Ring writer (1 chunk, 3 events)", None, || {
        // One event per chunk, so each event takes (or overwrites) the one chunk.
        let RingWriter { core, buffer, tenant, shadow, writer } = ring_writer(1);
        // SAFETY: the buffer is freed only after the writer is joined, below.
        let buf = unsafe { &*buffer };
        // Loom 0.7 does not take a load followed by another thread's compare-and-swap of the same
        // atomic as dependent, so a dump that starts with the chunks' state loads would be explored
        // in one order only (one execution). Reading the tenant's chunk hint first, which the
        // writer stores (what the streaming collector does first too), gives loom the branch
        // point, and from there it explores the pins against the loans.
        let _hint = tenant.current_chunk();
        let copy = buf.snapshot().unwrap();
        for i in copy.used_chunks() {
            // SAFETY: `copy` is this thread's own buffer.
            let records = unsafe { copy.chunk(i).records() };
            let events: Vec<u64> =
                records.iter().filter(|r| r.id >= FIRST_CALLSITE_ID).map(|r| r.slots[1]).collect();
            assert_eq!(events.len(), 1, "a copied chunk holds its one whole event");
            assert!(records.iter().all(|r| r.slots[1] == events[0]), "no record of another generation");
        }
        let outcomes = writer.join().unwrap();
        // AcqRel: as in `stop`.
        let ptr = core.buffer.swap(std::ptr::null_mut(), Ordering::AcqRel);
        evict_all(std::slice::from_ref(&tenant), Some(buf), false);
        let written = outcomes.iter().filter(|o| **o == Outcome::Written).count() as u64;
        let recorded: u64 =
            buf.used_chunks().iter().map(|&i| count_events(unsafe { buf.chunk(i).records() })).sum();
        // Relaxed: the writer was joined.
        let overwritten = buf.counters.events_overwritten.load(Ordering::Relaxed);
        assert_eq!(
            recorded + overwritten,
            written,
            "every written event is in the chunk or counted as overwritten"
        );
        assert_eq!(written, shadow.get());
        // Relaxed: the writer was joined.
        let (stopping, no_chunk) =
            (core.drops.stopping.load(Ordering::Relaxed), core.drops.no_chunk.load(Ordering::Relaxed));
        assert_eq!(stopping, 0, "a dump never fails a writer as `stopping`");
        assert_eq!(written + no_chunk, 3, "an event the pinned chunk kept out is counted as no_chunk");
        // SAFETY: from `Box::into_raw` above, freed once, after every use.
        drop(unsafe { Box::from_raw(ptr) });
    });
}

/// Model 12: the streaming collector's piece of a chunk a thread still holds (`stream::Pieces`):
/// the dispatcher finds the tenant's current chunk without any lock, pins it, and hands the
/// committed count to a stream thread (here through an atomic with Release/Acquire, as the job
/// queue does), which reads that prefix and unpins; meanwhile the writer goes on writing into the
/// chunk, gives it back and loans again in a two-chunk ring. The records the stream thread reads
/// are complete and of one loan (their chunk cells are checked for races), and the writer never
/// fails: nothing is dropped.
#[test]
fn a_pinned_piece_is_read_while_its_writer_goes_on() {
    check("a pinned piece is read while its writer goes on (2 chunks, 3 events)", Some(3), || {
        // One event per chunk: the second event needs the other chunk.
        let RingWriter { core, buffer, tenant, shadow: _, writer } = ring_writer(2);
        // The job: the chunk's address and the count, 0 while there is none.
        let job = Arc::new((crate::sync::AtomicUsize::new(0), crate::sync::AtomicU32::new(0)));
        let stream = {
            let job = job.clone();
            let buffer = buffer as usize;
            thread::spawn(move || {
                // Acquire: pairs with the dispatcher's Release, as a queue pop with its push.
                let n = job.1.load(Ordering::Acquire);
                if n == 0 {
                    return None;
                }
                // Relaxed: ordered by the Acquire above.
                let chunk = job.0.load(Ordering::Relaxed) as *const crate::record::buffer::TraceChunk;
                // SAFETY: the buffer outlives both threads (freed after the joins); the chunk is
                // pinned and `n` was acquired by the dispatcher, whose Release we acquired.
                let (chunk, _) = (unsafe { &*chunk }, buffer);
                // SAFETY: see above: pinned, and `n` is a committed count.
                let records = unsafe { chunk.prefix(n as usize) };
                let events: Vec<u64> =
                    records.iter().filter(|r| r.id >= FIRST_CALLSITE_ID).map(|r| r.slots[1]).collect();
                let whole = records.iter().all(|r| events.contains(&r.slots[1]));
                chunk.unpin();
                Some((events, whole))
            })
        };
        // The dispatcher: the tenant's chunk, by its hint, pinned.
        let current = tenant.current_chunk();
        if !current.is_null() {
            // SAFETY: a hint into the live buffer.
            let chunk = unsafe { &*current };
            if let Some(p) = chunk.pin_committed() {
                if p.records > 0 {
                    // Relaxed: published by the Release below.
                    job.0.store(current as usize, Ordering::Relaxed);
                    // Release: the stream thread's Acquire sees the pin and the count's reads.
                    job.1.store(p.records as u32, Ordering::Release);
                } else {
                    chunk.unpin();
                }
            }
        }
        let outcomes = writer.join().unwrap();
        if let Some((events, whole)) = stream.join().unwrap() {
            assert!(!events.is_empty() && whole, "a piece holds whole events of one loan: {events:?}");
        } else if job.1.load(Ordering::Relaxed) != 0 {
            // The stream thread looked before the job was there: unpin for it.
            // SAFETY: the chunk of the job, pinned by the dispatcher.
            unsafe { &*(job.0.load(Ordering::Relaxed) as *const crate::record::buffer::TraceChunk) }.unpin();
        }
        assert!(outcomes.iter().all(|o| *o == Outcome::Written), "the writer never failed: {outcomes:?}");
        // AcqRel: as in `stop`.
        let ptr = core.buffer.swap(std::ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: every thread that used the buffer was joined.
        evict_all(std::slice::from_ref(&tenant), Some(unsafe { &*ptr }), false);
        // SAFETY: from `Box::into_raw` above, freed once, after every use.
        drop(unsafe { Box::from_raw(ptr) });
    });
}

/// A value built in a loom cell: reading it on another thread is reported as a race unless the
/// read is ordered after the write.
struct Built(UnsafeCell<u64>);

// SAFETY: the cell is written once, by the thread that builds the value, before the cache
// publishes it; the model checks that every other access is ordered after that write.
unsafe impl Sync for Built {}

impl Built {
    fn new(v: u64) -> Built {
        Built(UnsafeCell::new(v))
    }

    fn read(&self) -> u64 {
        // SAFETY: a shared read, which loom checks is ordered after the write in `new`.
        self.0.with(|p| unsafe { *p })
    }
}

/// Model 11: two threads insert the same key into a `SiteCache` while a third looks it up. Both
/// inserts return the one published value (the loser's is dropped), the lookup finds nothing or
/// that value, and every read of the value is ordered after it was built (the value is a loom
/// cell; publishing with Relaxed instead of Release is reported as a race).
#[test]
fn site_cache_inserts_race_and_a_lookup_sees_a_built_value() {
    use crate::registry::site_cache::SiteCache;
    check("site cache: two inserts of one key and a lookup", None, || {
        let cache: &'static SiteCache<Built> = Box::leak(Box::new(SiteCache::new(64)));
        let other = thread::spawn(move || {
            let v = cache.insert(0x1000, || Built::new(1)).expect("room");
            (v as *const Built as usize, v.read())
        });
        let reader = thread::spawn(move || cache.get(0x1000).map(|v| (v as *const Built as usize, v.read())));
        let mine = cache.insert(0x1000, || Built::new(2)).expect("room");
        let (theirs, their_value) = other.join().unwrap();
        assert_eq!(mine as *const Built as usize, theirs, "one value per key");
        assert_eq!(mine.read(), their_value);
        assert!([1, 2].contains(&their_value));
        if let Some((at, value)) = reader.join().unwrap() {
            assert_eq!((at, value), (theirs, their_value));
        }
        assert!(cache.get(0x2000).is_none());
    });
}

/// Model 13: no window of a trigger's `Gate` is lost or taken twice (see `trigger_gate.rs`).
#[test]
fn trigger_gate_windows_are_each_taken_once() {
    use crate::registry::trigger_gate::{Firing, Gate};
    use crate::sync::AtomicBool;

    check("trigger_gate_windows_are_each_taken_once", Some(3), || {
        let gate = Arc::new(Gate::new());
        gate.reset(2); // two tokens: both firings may open a window
        let stop = Arc::new(AtomicBool::new(false));
        let dumper = {
            let (gate, stop) = (gate.clone(), stop.clone());
            thread::spawn(move || {
                let mut taken = 0;
                loop {
                    // As `trigger::dump_thread`.
                    let (seen, pending) = gate.observe();
                    let stopping = stop.load(Ordering::Acquire);
                    if pending != 0 {
                        gate.close_window();
                        taken += 1;
                        continue;
                    }
                    if stopping {
                        if gate.observe().1 != 0 {
                            continue;
                        }
                        return taken;
                    }
                    while gate.unchanged(seen) {
                        thread::yield_now();
                    }
                }
            })
        };
        let firers: Vec<_> = (1..=2u32)
            .map(|n| {
                let gate = gate.clone();
                thread::spawn(move || gate.fire(n, 0))
            })
            .collect();
        let outcomes: Vec<Firing> = firers.into_iter().map(|t| t.join().unwrap()).collect();
        stop.store(true, Ordering::Release);
        gate.bump();
        let taken = dumper.join().unwrap();
        let opened = outcomes.iter().filter(|f| **f == Firing::Opened).count();
        assert!(opened >= 1, "{outcomes:?}");
        assert!(!outcomes.contains(&Firing::RateLimited), "two tokens for two firings");
        assert_eq!(taken, opened, "{outcomes:?}");
    });
}

//! `TraceChunk` and `TraceBuffer`: the preallocated pages events are written into.
//!
//! # Brief overview
//!
//! * A [`TraceChunk`] is one page: [`CHUNK_RECORDS`] 32-byte records and a [`ChunkHeader`] holding
//!   its extents. A chunk is written by one tenant at a time, and its writer publishes the committed
//!   record count with a Release store after the records (optimistic logging, XRay FDR v2): a reader
//!   that acquires the count sees every record below it complete.
//! * A [`TraceBuffer`] owns every chunk of one trace, allocated at `start`. It loans chunks to
//!   tenants without locks:
//!   * **Fixed** hands out chunks in order with one `fetch_add`; when they run out the buffer is
//!     exhausted and tracing stops.
//!   * **Ring** walks the chunks round-robin and reuses the oldest chunk that no tenant holds,
//!     counting the events it overwrites. This is the flight recorder.
//!   * **Stream** loans FREE chunks only; `give_back` also queues the full chunk's index for the
//!     collector (a bounded lock-free queue as long as the pool, so a push never fails: a chunk is
//!     queued at most once between two loans), which writes it out and [`release`]s it (FULL →
//!     FREE). Nothing is overwritten: when no chunk is FREE the event is dropped and counted.
//!
//! [`release`]: TraceBuffer::release
//!
//! # Chunk states (ring mode)
//!
//! ```text
//!   FREE ──loan──▶ LOANED ──give_back / evict──▶ FULL ──loan (overwrite, counted)──▶ LOANED
//!                                                 FULL ◀──snapshot (copied)──▶ READING
//! ```
//!
//! A loan is a compare-and-swap from FREE or FULL to LOANED, so a chunk held by a tenant is never
//! reused under it. Fixed mode uses the same states but never overwrites. A dump of a running
//! trace ([`TraceBuffer::snapshot`]) pins each FULL chunk in turn (FULL → READING), copies it and
//! puts it back; a loan skips a READING chunk as it skips a LOANED one, so the copy is never torn.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;

use phosphor_format::chunk::CHUNK_RECORDS;
use phosphor_format::Record;

use crate::sync::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use crate::BufferMode;

const FREE: u8 = 0;
const LOANED: u8 = 1;
const FULL: u8 = 2;
const READING: u8 = 3;

/// The extents of a chunk, after its records.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct ChunkHeader {
    /// Global loan stamp: the order in which chunks were handed out.
    loan: AtomicU64,
    /// The tenant's sequence number for this chunk; a gap shows lost chunks.
    seq: AtomicU64,
    /// The thread that first wrote into the chunk.
    tid: AtomicU32,
    /// Records published; the writer stores it with Release after the records.
    committed: AtomicU32,
    /// Events (not records) in the chunk, counted when it is given back.
    events: AtomicU32,
    /// FREE, LOANED or FULL.
    state: AtomicU8,
}

/// One page of records plus its header.
#[repr(C, align(64))]
pub(crate) struct TraceChunk {
    records: [UnsafeCell<MaybeUninit<Record>>; CHUNK_RECORDS],
    header: ChunkHeader,
    /// Under loom, a tracked cell standing for the records: `publish` writes it and `records`
    /// reads it, so loom reports a reader whose access is not ordered after the writer's (the
    /// records themselves are std cells, which loom does not track).
    #[cfg(loom)]
    shadow: loom::cell::UnsafeCell<()>,
}

#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<TraceChunk>() == phosphor_format::chunk::CHUNK_BYTES);

impl std::fmt::Debug for TraceChunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceChunk").field("header", &self.header).finish_non_exhaustive()
    }
}

impl TraceChunk {
    /// A pointer to record slot `i`. Writing through it is allowed only to the tenant that holds
    /// the chunk, inside its slave critical section, and only at or above the committed count.
    #[inline(always)]
    pub(crate) fn slot(&self, i: usize) -> *mut MaybeUninit<Record> {
        debug_assert!(i < CHUNK_RECORDS);
        // The pointer is derived from the whole array, not from element `i`, because multi-record
        // events write records `i..i + n` through it (Stacked Borrows would confine a pointer from
        // `self.records[i].get()` to one record).
        // SAFETY: every caller passes a cursor below CHUNK_RECORDS (the tenant checks
        // `pos + n <= CHUNK_RECORDS` before writing), so `add(i)` stays in the array.
        UnsafeCell::raw_get(unsafe { self.records.as_ptr().add(i) })
    }

    /// Publishes `n` records. Release: every record written below `n` happens-before a reader's
    /// Acquire load of the count.
    #[inline(always)]
    pub(crate) fn publish(&self, n: u32) {
        #[cfg(loom)]
        self.shadow.with_mut(|_| ());
        self.header.committed.store(n, Ordering::Release);
    }

    pub(crate) fn committed(&self) -> u32 {
        // Acquire: pairs with `publish`.
        self.header.committed.load(Ordering::Acquire)
    }

    pub(crate) fn tid(&self) -> u32 {
        // Relaxed: written at loan time by the loaning thread; readers synchronise with it through
        // the tenant lock (eviction) or the chunk state before reading.
        self.header.tid.load(Ordering::Relaxed)
    }

    pub(crate) fn seq(&self) -> u64 {
        // Relaxed: as for `tid`.
        self.header.seq.load(Ordering::Relaxed)
    }

    /// Whether the chunk was ever loaned in this trace (FREE chunks hold nothing).
    pub(crate) fn is_used(&self) -> bool {
        // Relaxed: a crash dump's best effort; the committed count (Acquire) guards the records.
        self.header.state.load(Ordering::Relaxed) != FREE
    }

    /// The committed records copied into `out`, for a crash dump, which cannot stop the writers:
    /// a chunk re-loaned while it is copied may come out torn (the reader then reports the chunk
    /// as corrupt and keeps the others). Returns how many were copied.
    pub(crate) fn copy_records_racy(&self, out: &mut [Record]) -> usize {
        let n = (self.committed() as usize).min(CHUNK_RECORDS).min(out.len());
        for (i, dst) in out.iter_mut().enumerate().take(n) {
            // SAFETY: the slot is inside the array (i < CHUNK_RECORDS) and was initialised before
            // the committed count we acquired was published. A re-loan may be writing it now:
            // the read is volatile, so it is a (possibly stale or mixed) value, never assumed
            // stable, and nothing but the dump depends on it.
            *dst = unsafe { std::ptr::read_volatile(self.slot(i).cast::<Record>()) };
        }
        n
    }

    pub(crate) fn loan_stamp(&self) -> u64 {
        // Relaxed: as for `tid`.
        self.header.loan.load(Ordering::Relaxed)
    }

    /// The committed records.
    ///
    /// # Safety
    ///
    /// No tenant may write into this chunk for as long as the slice lives: the trace is stopped
    /// and every tenant evicted, or the caller otherwise owns the chunk.
    pub(crate) unsafe fn records(&self) -> &[Record] {
        #[cfg(loom)]
        self.shadow.with(|_| ());
        let n = (self.committed() as usize).min(CHUNK_RECORDS);
        // SAFETY: [1] `UnsafeCell<MaybeUninit<Record>>` has the layout of `Record`, both wrappers
        // being `repr(transparent)`. [2] The first `n` records were written before the Release
        // store of `n` that our Acquire load saw, so they are initialised. [3] The caller
        // guarantees that no one writes to them while the slice lives.
        unsafe { std::slice::from_raw_parts(self.records.as_ptr().cast::<Record>(), n) }
    }
}

/// What a loan produced.
#[derive(Debug)]
pub(crate) enum Loan<'a> {
    Chunk(&'a TraceChunk),
    /// Fixed mode is out of chunks; `first` is true for exactly one caller.
    Exhausted {
        first: bool,
    },
    /// Ring mode: every chunk is held by a tenant.
    AllLoaned,
}

/// Counters kept by a buffer for its own trace.
#[derive(Debug, Default)]
pub(crate) struct BufferCounters {
    pub(crate) chunks_loaned: AtomicU64,
    pub(crate) chunks_overwritten: AtomicU64,
    pub(crate) events_overwritten: AtomicU64,
    /// Events in chunks given back so far (overwritten ones included).
    pub(crate) events_given_back: AtomicU64,
}

/// Where a buffer's chunks live.
enum Chunks {
    /// Heap memory (the default).
    Heap(Box<[TraceChunk]>),
    /// A shared mapping of a ring file (`TraceConfig::file_backed`), which outlives the process.
    #[cfg(all(not(loom), unix))]
    Mapped(std::sync::Arc<crate::ring::Mapping>),
}

impl std::ops::Deref for Chunks {
    type Target = [TraceChunk];
    fn deref(&self) -> &[TraceChunk] {
        match self {
            Chunks::Heap(c) => c,
            #[cfg(all(not(loom), unix))]
            Chunks::Mapped(m) => m.chunks(),
        }
    }
}

/// Every chunk of one trace.
pub(crate) struct TraceBuffer {
    mode: BufferMode,
    chunks: Chunks,
    /// Loans so far; in ring mode also the round-robin cursor.
    next: AtomicU64,
    exhausted: AtomicBool,
    pub(crate) counters: BufferCounters,
    /// Stream mode: indices of the chunks given back and not yet released by the collector.
    #[cfg(not(loom))]
    full: Option<crossbeam_queue::ArrayQueue<u32>>,
}

impl std::fmt::Debug for TraceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceBuffer").field("mode", &self.mode).field("chunks", &self.chunks.len()).finish()
    }
}

// SAFETY: the records are `UnsafeCell`s written only by the tenant that holds the chunk (a loan
// is exclusive: a unique `fetch_add` ticket in Fixed mode, a compare-and-swap to LOANED in Ring
// mode) inside its slave critical section, and read only after that writer has published them or
// been evicted. Every other field is atomic.
unsafe impl Sync for TraceBuffer {}
// SAFETY: the buffer owns its chunks; nothing in it is tied to a thread.
unsafe impl Send for TraceBuffer {}

impl TraceBuffer {
    /// Allocates `chunks` chunks. Their records stay uninitialised until written.
    pub(crate) fn new(mode: BufferMode, chunks: usize) -> TraceBuffer {
        assert!(chunks > 0, "a buffer needs at least one chunk");
        let mut mem = Box::<[TraceChunk]>::new_uninit_slice(chunks);
        for c in mem.iter_mut() {
            let p = c.as_mut_ptr();
            // SAFETY: `p` points to an allocated, properly aligned TraceChunk; writing the header
            // field in place does not read the uninitialised memory.
            unsafe {
                std::ptr::addr_of_mut!((*p).header).write(ChunkHeader {
                    loan: AtomicU64::new(0),
                    seq: AtomicU64::new(0),
                    tid: AtomicU32::new(0),
                    committed: AtomicU32::new(0),
                    events: AtomicU32::new(0),
                    state: AtomicU8::new(FREE),
                });
                #[cfg(loom)]
                std::ptr::addr_of_mut!((*p).shadow).write(loom::cell::UnsafeCell::new(()));
            };
        }
        // SAFETY: every header was written above, and the records are `MaybeUninit`, for which
        // uninitialised memory is a valid value.
        let chunks = unsafe { mem.assume_init() };
        #[cfg(not(loom))]
        let count = chunks.len();
        TraceBuffer {
            mode,
            chunks: Chunks::Heap(chunks),
            next: AtomicU64::new(0),
            exhausted: AtomicBool::new(false),
            counters: BufferCounters::default(),
            #[cfg(not(loom))]
            full: (mode == BufferMode::Stream).then(|| crossbeam_queue::ArrayQueue::new(count)),
        }
    }

    /// A buffer whose chunks are those of a ring file's mapping (zero-filled: every chunk FREE).
    #[cfg(all(not(loom), unix))]
    pub(crate) fn mapped(mode: BufferMode, mapping: std::sync::Arc<crate::ring::Mapping>) -> TraceBuffer {
        let n = mapping.chunks().len();
        TraceBuffer {
            mode,
            chunks: Chunks::Mapped(mapping),
            next: AtomicU64::new(0),
            exhausted: AtomicBool::new(false),
            counters: BufferCounters::default(),
            full: (mode == BufferMode::Stream).then(|| crossbeam_queue::ArrayQueue::new(n)),
        }
    }

    pub(crate) fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    pub(crate) fn is_exhausted(&self) -> bool {
        // Relaxed: a status flag; no data is read on the strength of it.
        self.exhausted.load(Ordering::Relaxed)
    }

    /// Loans a chunk to a tenant for thread `tid`, stamping it with the tenant's sequence number.
    pub(crate) fn loan(&self, tid: u32, seq: u64) -> Loan<'_> {
        let n = self.chunks.len() as u64;
        match self.mode {
            BufferMode::Fixed => {
                // Relaxed: the ticket only has to be unique; the chunk's memory was initialised
                // before the buffer was published to tenants (an Acquire load in the tenant).
                let ticket = self.next.fetch_add(1, Ordering::Relaxed);
                if ticket >= n {
                    // Relaxed: `swap` is atomic, so exactly one caller sees `false`.
                    let first = !self.exhausted.swap(true, Ordering::Relaxed);
                    return Loan::Exhausted { first };
                }
                let chunk = &self.chunks[ticket as usize];
                // Relaxed: a fresh chunk in Fixed mode is FREE and only this ticket holder sees it.
                chunk.header.state.store(LOANED, Ordering::Relaxed);
                self.stamp(chunk, ticket, tid, seq)
            }
            BufferMode::Stream => {
                for _ in 0..n {
                    // Relaxed: as in Ring mode, the cursor only spreads the search.
                    let ticket = self.next.fetch_add(1, Ordering::Relaxed);
                    let chunk = &self.chunks[(ticket % n) as usize];
                    // Acquire: pairs with the collector's Release in `release`, so its reads of the
                    // chunk happen before our writes into it.
                    if chunk
                        .header
                        .state
                        .compare_exchange(FREE, LOANED, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                    {
                        return self.stamp(chunk, ticket, tid, seq);
                    }
                }
                Loan::AllLoaned
            }
            BufferMode::Ring => {
                for _ in 0..n {
                    // Relaxed: the cursor only spreads loans round-robin; ownership comes from the
                    // compare-and-swap below.
                    let ticket = self.next.fetch_add(1, Ordering::Relaxed);
                    let chunk = &self.chunks[(ticket % n) as usize];
                    // Relaxed: a hint; the compare-and-swap below re-checks it.
                    let state = chunk.header.state.load(Ordering::Relaxed);
                    if state == LOANED || state == READING {
                        continue;
                    }
                    // Acquire: pairs with the Release in `give_back`, so the previous holder's
                    // committed count is final when we read it to count the overwrite.
                    if chunk
                        .header
                        .state
                        .compare_exchange(state, LOANED, Ordering::Acquire, Ordering::Relaxed)
                        .is_err()
                    {
                        continue;
                    }
                    if state == FULL {
                        // Relaxed: ordered after the Acquire above.
                        let lost = chunk.header.events.load(Ordering::Relaxed);
                        self.counters.events_overwritten.fetch_add(u64::from(lost), Ordering::Relaxed);
                        self.counters.chunks_overwritten.fetch_add(1, Ordering::Relaxed);
                    }
                    return self.stamp(chunk, ticket, tid, seq);
                }
                Loan::AllLoaned
            }
        }
    }

    fn stamp<'a>(&self, chunk: &'a TraceChunk, ticket: u64, tid: u32, seq: u64) -> Loan<'a> {
        // Relaxed throughout: the chunk is now owned by the caller, and readers synchronise with
        // these stores through the tenant lock or `give_back`'s Release.
        chunk.header.committed.store(0, Ordering::Relaxed);
        chunk.header.events.store(0, Ordering::Relaxed);
        chunk.header.loan.store(ticket, Ordering::Relaxed);
        chunk.header.seq.store(seq, Ordering::Relaxed);
        chunk.header.tid.store(tid, Ordering::Relaxed);
        self.counters.chunks_loaned.fetch_add(1, Ordering::Relaxed);
        Loan::Chunk(chunk)
    }

    /// Returns a chunk whose tenant is done with it (full, evicted, or its thread exited), with
    /// the number of events (not records) it holds.
    ///
    /// # Safety
    ///
    /// The caller holds the chunk (its tenant's slave or master lock), so no one writes into it,
    /// and `events` is the number of events among its committed records.
    pub(crate) unsafe fn give_back(&self, chunk: &TraceChunk, events: u32) {
        debug_assert_eq!(
            // SAFETY: the caller holds the chunk.
            phosphor_format::count_events(unsafe { chunk.records() }),
            u64::from(events)
        );
        // Relaxed: published by the Release store of the state below.
        chunk.header.events.store(events, Ordering::Relaxed);
        self.counters.events_given_back.fetch_add(u64::from(events), Ordering::Relaxed);
        // Release: publishes the chunk's records and header to the next loaner (which acquires the
        // state) and to readers.
        chunk.header.state.store(FULL, Ordering::Release);
        #[cfg(not(loom))]
        if let Some(q) = &self.full {
            // The queue's push and pop synchronise: the collector sees what we wrote. It holds
            // every chunk at most once, so it is never full.
            let pushed = q.push(self.index_of(chunk));
            debug_assert!(pushed.is_ok(), "a chunk was queued twice");
        }
    }

    /// The position of `chunk` in this buffer.
    #[cfg(not(loom))]
    fn index_of(&self, chunk: &TraceChunk) -> u32 {
        let base = self.chunks.as_ptr() as usize;
        ((std::ptr::from_ref(chunk) as usize - base) / std::mem::size_of::<TraceChunk>()) as u32
    }

    /// Stream mode: the index of the next chunk given back and not yet released, if any. The
    /// caller reads it (nobody writes a FULL chunk) and then [`release`](Self::release)s it.
    #[cfg(not(loom))]
    pub(crate) fn pop_full_index(&self) -> Option<u32> {
        self.full.as_ref()?.pop()
    }

    /// Stream mode: puts a chunk the collector has written out back into the pool.
    #[cfg(not(loom))]
    pub(crate) fn release(&self, chunk: &TraceChunk) {
        // Release: pairs with the loaning compare-and-swap (Acquire), so the collector's reads of
        // the records happen before the next writer overwrites them.
        chunk.header.state.store(FREE, Ordering::Release);
    }

    /// The buffer's mode.
    pub(crate) fn mode(&self) -> BufferMode {
        self.mode
    }

    /// Events recorded and still held: given back and not overwritten. Exact once every tenant has
    /// been evicted; while tracing it lags by the chunks tenants still hold.
    pub(crate) fn recorded_events(&self) -> u64 {
        // Relaxed: statistics.
        let given = self.counters.events_given_back.load(Ordering::Relaxed);
        given.saturating_sub(self.counters.events_overwritten.load(Ordering::Relaxed))
    }

    /// The indices of the chunks that hold data, in loan order.
    pub(crate) fn used_chunks(&self) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.chunks.len())
            // Acquire: pairs with `give_back`.
            .filter(|&i| {
                self.chunks[i].header.state.load(Ordering::Acquire) != FREE && self.chunks[i].committed() > 0
            })
            .collect();
        v.sort_by_key(|&i| self.chunks[i].loan_stamp());
        v
    }

    pub(crate) fn chunk(&self, i: usize) -> &TraceChunk {
        &self.chunks[i]
    }

    /// Starts a copy of this buffer (a dump of a running trace): see [`Snapshot`].
    pub(crate) fn snapshot_begin(&self) -> Snapshot {
        Snapshot {
            copy: TraceBuffer::new(BufferMode::Fixed, self.chunks.len()),
            n: 0,
            events: 0,
            taken: std::collections::HashSet::new(),
        }
    }
}

/// A copy of a running buffer, made in two passes, so that the most recent events are never lost
/// to a writer that re-loans a chunk between a flush and its copy:
/// 1. [`add_held`](Snapshot::add_held): each tenant's current chunk, copied while the dump holds
///    the tenant's master lock (before the chunk is given back);
/// 2. [`finish`](Snapshot::finish): every other chunk that is given back (FULL), each pinned
///    (FULL → READING) while it is copied; a loan passes over a READING chunk, so writers never
///    wait and no copy is torn.
pub(crate) struct Snapshot {
    copy: TraceBuffer,
    n: usize,
    events: u64,
    /// The chunks copied in the first pass, not to be copied again.
    taken: std::collections::HashSet<usize>,
}

impl Snapshot {
    /// Copies `records` and `src`'s header into the next chunk of the copy.
    fn copy_in(&mut self, src: &TraceChunk, records: &[Record], events: u32) {
        let dst = &self.copy.chunks[self.n];
        for (i, r) in records.iter().enumerate() {
            // SAFETY: `dst` belongs to `copy`, which nobody else can reach yet; `i` is below the
            // committed count, itself at most CHUNK_RECORDS.
            unsafe { (*dst.slot(i)).write(*r) };
        }
        let (h, d) = (&src.header, &dst.header);
        // Relaxed throughout: the caller ordered these loads after the chunk's last writer (a
        // master lock, or the pinning Acquire), and `copy` is private to this thread.
        d.loan.store(h.loan.load(Ordering::Relaxed), Ordering::Relaxed);
        d.seq.store(h.seq.load(Ordering::Relaxed), Ordering::Relaxed);
        d.tid.store(h.tid.load(Ordering::Relaxed), Ordering::Relaxed);
        d.events.store(events, Ordering::Relaxed);
        d.state.store(FULL, Ordering::Relaxed);
        dst.publish(records.len() as u32);
        self.events += u64::from(events);
        self.n += 1;
    }

    /// Copies a chunk that a tenant holds, with its `events` events.
    ///
    /// # Safety
    ///
    /// The caller holds the chunk (its tenant's master lock), so no one writes it meanwhile.
    pub(crate) unsafe fn add_held(&mut self, chunk: &TraceChunk, events: u32) {
        // SAFETY: the caller holds the chunk.
        let records = unsafe { chunk.records() };
        if self.n < self.copy.chunks.len() && self.taken.insert(std::ptr::from_ref(chunk) as usize) {
            self.copy_in(chunk, records, events);
        }
    }

    /// Copies every other given-back chunk of `buf`, and returns the copy.
    pub(crate) fn finish(mut self, buf: &TraceBuffer) -> TraceBuffer {
        for chunk in buf.chunks.iter() {
            if self.n >= self.copy.chunks.len() || self.taken.contains(&(std::ptr::from_ref(chunk) as usize))
            {
                continue;
            }
            // Acquire: pairs with `give_back`'s Release, so the records and header are complete.
            if chunk
                .header
                .state
                .compare_exchange(FULL, READING, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            // SAFETY: the chunk is pinned: no loan takes a READING chunk, so nothing writes to it
            // until the Release store below.
            let records = unsafe { chunk.records() };
            // Relaxed: ordered by the Acquire above.
            let events = chunk.header.events.load(Ordering::Relaxed);
            self.copy_in(chunk, records, events);
            // Release: a later loaner's Acquire compare-and-swap sees our reads done before it
            // overwrites the chunk.
            chunk.header.state.store(FULL, Ordering::Release);
        }
        let copy = self.copy;
        // Relaxed: `copy` is private to this thread.
        copy.counters.chunks_loaned.store(self.n as u64, Ordering::Relaxed);
        copy.counters.events_given_back.store(self.events, Ordering::Relaxed);
        copy.next.store(self.n as u64, Ordering::Relaxed);
        copy
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn take(b: &TraceBuffer) -> &TraceChunk {
        match b.loan(1, 0) {
            Loan::Chunk(c) => c,
            other => panic!("expected a chunk, got {other:?}"),
        }
    }

    #[test]
    fn a_fixed_buffer_is_exhausted_once_and_reports_it_once() {
        let b = TraceBuffer::new(BufferMode::Fixed, 2);
        take(&b);
        take(&b);
        assert!(matches!(b.loan(1, 2), Loan::Exhausted { first: true }));
        assert!(matches!(b.loan(1, 3), Loan::Exhausted { first: false }));
        assert!(b.is_exhausted());
    }

    #[test]
    fn a_ring_buffer_overwrites_the_oldest_full_chunk_and_counts_its_events() {
        let b = TraceBuffer::new(BufferMode::Ring, 2);
        let c0 = take(&b);
        // SAFETY: the chunk is loaned to this test alone.
        unsafe { (*c0.slot(0)).write(Record::new(0, 20, Default::default(), [0; 2])) };
        c0.publish(1);
        // SAFETY: this test holds c0, which holds one event.
        unsafe { b.give_back(c0, 1) };
        let c1 = take(&b);
        // c1 is still loaned, so the next loan must reuse c0 and count its one event.
        let c2 = take(&b);
        assert!(std::ptr::eq(c0, c2));
        assert_eq!(b.counters.events_overwritten.load(Ordering::Relaxed), 1);
        assert_eq!(b.counters.chunks_overwritten.load(Ordering::Relaxed), 1);
        assert!(matches!(b.loan(1, 3), Loan::AllLoaned), "both chunks are held");
        // SAFETY: this test holds c1, which holds no event.
        unsafe { b.give_back(c1, 0) };
        assert!(std::ptr::eq(take(&b), c1));
    }

    #[test]
    fn committed_records_are_read_back_in_loan_order() {
        let b = TraceBuffer::new(BufferMode::Fixed, 3);
        for i in 0..2u64 {
            let c = take(&b);
            for j in 0..3 {
                // SAFETY: the chunk is loaned to this test alone.
                unsafe { (*c.slot(j)).write(Record::new(i * 10 + j as u64, 20, Default::default(), [0; 2])) };
            }
            c.publish(3);
            // SAFETY: this test holds c, which holds three events.
            unsafe { b.give_back(c, 3) };
        }
        let used = b.used_chunks();
        assert_eq!(used.len(), 2);
        // SAFETY: nothing writes to the chunks any more.
        let ts: Vec<u64> =
            used.iter().flat_map(|&i| unsafe { b.chunk(i).records() }.iter().map(|r| r.ts)).collect();
        assert_eq!(ts, [0, 1, 2, 10, 11, 12]);
        assert_eq!(b.recorded_events(), 6);
    }
}

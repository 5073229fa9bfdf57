//! `TraceBuffer`: every chunk of one trace (`chunk.rs`), and how they are loaned to tenants.
//!
//! # Brief overview
//!
//! A [`TraceBuffer`] owns every chunk of one trace, allocated at `start`. It loans chunks to
//! tenants without locks:
//! * **Fixed** hands out chunks in order with one `fetch_add`; when they run out the buffer is
//!   exhausted and tracing stops.
//! * **Ring** walks the chunks round-robin and reuses the oldest chunk that no tenant holds and no
//!   reader has pinned, counting the events it overwrites. This is the flight recorder.
//! * **Stream** loans FREE chunks only, popped from a lock-free stack of free chunks; `give_back`
//!   pushes the full chunk's index for the collector, which writes it out and [`release`]s it
//!   (FULL → FREE, pushed back on the free stack). Every push and pop is lock-free: none waits for
//!   another thread's operation to finish, and none fails for want of room (`pool.rs` has the
//!   algorithm and the invariant). Nothing is overwritten: when no chunk is FREE the event is
//!   dropped and counted, and the loan returns at once, after one failed pop.
//!
//! The chunks' states, pins and the pinned reads a running trace's readers use are in `chunk.rs`.
//!
//! [`release`]: TraceBuffer::release

use std::mem::MaybeUninit;

#[cfg(all(not(loom), unix))]
use phosphor_format::file::ring::RING_HEADER_BYTES;

#[cfg(all(not(loom), unix))]
use crate::registry::ring_file::Mapping;
use crate::sync::{AtomicBool, AtomicU64, Ordering};

pub(crate) use super::chunk::TraceChunk;
use super::chunk::{new_header, CLAIMED, FREE, FULL, KIND, LOANED};

/// What happens when the buffer is out of chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BufferMode {
    /// Stop tracing when full and call the stop callback; later events are counted as dropped.
    #[default]
    Fixed,
    /// Reuse the oldest full chunk and count the events it held: a flight recorder.
    Ring,
    /// Continuous tracing: full chunks go to a collector thread that writes them to the open
    /// datastreams (`TraceLog::open_stream`) and returns them to the pool. When every chunk is in
    /// use, events are dropped and counted (or the writer waits, under a `Block` datastream), and
    /// the writer's next chunk starts with a saturation marker. Events recorded while no
    /// datastream is open count as recorded and go to no sink.
    Stream,
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

/// Counters kept by a buffer for its own trace. Every writer updates them at every chunk swap:
/// aligned (and so padded) to 128 bytes, as `Tenant` is, so that they share no cache line with
/// the loan cursor or the read-mostly fields.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct BufferCounters {
    pub(crate) chunks_loaned: AtomicU64,
    pub(crate) chunks_overwritten: AtomicU64,
    pub(crate) events_overwritten: AtomicU64,
    /// Events in chunks given back so far (overwritten ones included).
    pub(crate) events_given_back: AtomicU64,
    /// Stream mode: saturation markers written (recorded events that the user did not emit).
    pub(crate) markers: AtomicU64,
}

/// The loan cursor, alone on its cache line (see `BufferCounters`).
#[repr(align(128))]
struct Cursor(AtomicU64);

/// Where a buffer's chunks live.
enum Chunks {
    /// Heap memory (the default).
    Heap(Box<[TraceChunk]>),
    /// A shared mapping of a ring file (`TraceConfig::file_backed`), which outlives the process.
    #[cfg(all(not(loom), unix))]
    Mapped(std::sync::Arc<Mapping>),
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

/// A ring file's chunks, seen as a buffer's: here rather than with [`Mapping`] (in the registry,
/// which writes the callsite metadata) so that the registry does not depend on the chunk type.
#[cfg(all(not(loom), unix))]
impl Mapping {
    /// The chunks, zero-filled by the file's creation: every header reads as a FREE chunk.
    pub(crate) fn chunks(&self) -> &[TraceChunk] {
        // SAFETY: [1] the chunk region starts page-aligned at RING_HEADER_BYTES and holds `chunks`
        // chunks of CHUNK_BYTES = size_of::<TraceChunk>(), with TraceChunk's alignment (64). [2]
        // Zero bytes are a valid TraceChunk: atomics at zero, records `MaybeUninit`. [3] The slice
        // lives as long as `self`, which keeps the mapping.
        unsafe {
            std::slice::from_raw_parts(self.base.add(RING_HEADER_BYTES).cast::<TraceChunk>(), self.chunks)
        }
    }
}

/// Every chunk of one trace.
pub(crate) struct TraceBuffer {
    mode: BufferMode,
    chunks: Chunks,
    /// Loans so far; in ring mode also the round-robin cursor. Every writer takes a ticket at
    /// every chunk swap: on a cache line of its own.
    next: Cursor,
    exhausted: AtomicBool,
    /// Which trace of the process this buffer belongs to (never reused, unlike its address).
    pub(crate) generation: u64,
    pub(crate) counters: BufferCounters,
    /// Stream mode: the stacks of chunks given back for the collector and of free ones
    /// (`pool.rs`).
    pool: Option<super::pool::ChunkPool>,
}

impl std::fmt::Debug for TraceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceBuffer").field("mode", &self.mode).field("chunks", &self.chunks.len()).finish()
    }
}

// SAFETY: the records are `UnsafeCell`s written only by the tenant that holds the chunk (a loan
// is exclusive: a unique `fetch_add` ticket in Fixed mode, a compare-and-swap to CLAIMED
// otherwise) inside its slave critical section, above the committed count, and read only below a
// committed count that the reader acquired while the chunk could not be loaned again (pinned,
// given back, or its holder evicted). Every other field is atomic or immutable.
unsafe impl Sync for TraceBuffer {}
// SAFETY: the buffer owns its chunks; nothing in it is tied to a thread.
unsafe impl Send for TraceBuffer {}

/// The heap could not give a buffer its memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AllocFailed {
    pub(crate) bytes: usize,
}

impl TraceBuffer {
    /// Allocates `chunks` chunks, or fails (never aborts) when the heap cannot give them. Their
    /// records stay uninitialised until written.
    pub(crate) fn new(mode: BufferMode, chunks: usize) -> Result<TraceBuffer, AllocFailed> {
        assert!(chunks > 0, "a buffer needs at least one chunk");
        let bytes = chunks.saturating_mul(std::mem::size_of::<TraceChunk>());
        let mut mem: Vec<MaybeUninit<TraceChunk>> = Vec::new();
        mem.try_reserve_exact(chunks).map_err(|_| AllocFailed { bytes })?;
        mem.resize_with(chunks, MaybeUninit::uninit);
        for c in mem.iter_mut() {
            let p = c.as_mut_ptr();
            // SAFETY: `p` points to an allocated, properly aligned TraceChunk; writing the header
            // field in place does not read the uninitialised memory.
            unsafe {
                std::ptr::addr_of_mut!((*p).header).write(new_header());
                #[cfg(loom)]
                std::ptr::addr_of_mut!((*p).shadow).write(
                    (0..phosphor_format::chunk::CHUNK_RECORDS)
                        .map(|_| loom::cell::UnsafeCell::new(()))
                        .collect(),
                );
            };
        }
        // SAFETY: every header was written above, and the records are `MaybeUninit`, for which
        // uninitialised memory is a valid value; `MaybeUninit<T>` has the layout of `T`.
        let chunks: Box<[TraceChunk]> =
            unsafe { Box::from_raw(Box::into_raw(mem.into_boxed_slice()) as *mut [TraceChunk]) };
        Ok(TraceBuffer::with_chunks(mode, Chunks::Heap(chunks)))
    }

    fn with_chunks(mode: BufferMode, chunks: Chunks) -> TraceBuffer {
        let count = chunks.len();
        TraceBuffer {
            mode,
            chunks,
            next: Cursor(AtomicU64::new(0)),
            exhausted: AtomicBool::new(false),
            generation: 0,
            counters: BufferCounters::default(),
            pool: (mode == BufferMode::Stream).then(|| super::pool::ChunkPool::new(count)),
        }
    }

    /// A buffer whose chunks are those of a ring file's mapping (zero-filled: every chunk FREE).
    #[cfg(all(not(loom), unix))]
    pub(crate) fn mapped(
        mode: BufferMode,
        mapping: std::sync::Arc<crate::registry::ring_file::Mapping>,
    ) -> TraceBuffer {
        TraceBuffer::with_chunks(mode, Chunks::Mapped(mapping))
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
                let ticket = self.next.0.fetch_add(1, Ordering::Relaxed);
                if ticket >= n {
                    // Relaxed: `swap` is atomic, so exactly one caller sees `false`.
                    let first = !self.exhausted.swap(true, Ordering::Relaxed);
                    return Loan::Exhausted { first };
                }
                // A fresh Fixed chunk is FREE, which no one pins, and only this ticket's holder
                // reaches it: no claim is needed before the stamp.
                self.stamp(&self.chunks[ticket as usize], ticket, tid, seq)
            }
            BufferMode::Stream | BufferMode::Ring => {
                if let Some(q) = &self.pool {
                    return self.loan_free(q, tid, seq);
                }
                let ring = self.mode == BufferMode::Ring;
                for _ in 0..n {
                    // Relaxed: the cursor only spreads loans round-robin; ownership comes from the
                    // compare-and-swap below.
                    let ticket = self.next.0.fetch_add(1, Ordering::Relaxed);
                    let chunk = &self.chunks[(ticket % n) as usize];
                    // Relaxed: a hint; the compare-and-swap below re-checks it. Only an unpinned
                    // FREE chunk (or, in a ring, an unpinned FULL one) can be taken.
                    let state = chunk.header.state.load(Ordering::Relaxed);
                    if state != FREE && !(ring && state == FULL) {
                        continue;
                    }
                    // Acquire: pairs with the Release of `give_back` (or the collector's
                    // `release`, or the last reader's `unpin`), so the previous holder's counts are
                    // final and every reader's copy is done before we overwrite the records.
                    if chunk
                        .header
                        .state
                        .compare_exchange(state, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
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

    /// Stream mode: loans a chunk from the free stack (see `pool.rs`); `AllLoaned` at once when
    /// none is free (or only pinned ones), without waiting for any other thread.
    fn loan_free(&self, q: &super::pool::ChunkPool, tid: u32, seq: u64) -> Loan<'_> {
        let claimed = q.take_free(|i| {
            // Acquire: pairs with the collector's `release` (Release), or with the last reader's
            // `unpin` (Release), so every read of the old records is done before we overwrite
            // them. It fails only while a reader still pins the chunk (FREE with pins).
            let state = &self.chunks[i as usize].header.state;
            state.compare_exchange(FREE, CLAIMED, Ordering::Acquire, Ordering::Relaxed).is_ok()
        });
        match claimed {
            Some(i) => {
                // Relaxed: the ticket is only a unique loan stamp; the claim gave us the chunk.
                let ticket = self.next.0.fetch_add(1, Ordering::Relaxed);
                self.stamp(&self.chunks[i as usize], ticket, tid, seq)
            }
            None => Loan::AllLoaned,
        }
    }

    /// Stamps a chunk this caller just took, then makes it LOANED (and so pinnable).
    fn stamp<'a>(&self, chunk: &'a TraceChunk, ticket: u64, tid: u32, seq: u64) -> Loan<'a> {
        let h = &chunk.header;
        // Relaxed: the count first, so that a crash in the middle leaves no old records under a
        // new header; the Release store of LOANED below publishes all of these to pinners, and
        // the tenant lock or `give_back` to everyone else.
        h.committed.store(0, Ordering::Relaxed);
        h.events.store(0, Ordering::Relaxed);
        h.loan.store(ticket, Ordering::Relaxed);
        h.seq.store(seq, Ordering::Relaxed);
        h.tid.store(tid, Ordering::Relaxed);
        // Release: a reader that pins the chunk (Acquire) sees the stamp, and so reads this loan's
        // committed count and no earlier holder's.
        h.state.store(LOANED, Ordering::Release);
        self.counters.chunks_loaned.fetch_add(1, Ordering::Relaxed);
        Loan::Chunk(chunk)
    }

    /// Returns a chunk whose tenant is done with it (full, evicted, or its thread exited), with
    /// the number of events (not records) it holds. Pins are kept: a reader copying the chunk
    /// goes on undisturbed.
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
        // Relaxed: published by the Release of the state change below.
        chunk.header.events.store(events, Ordering::Relaxed);
        self.counters.events_given_back.fetch_add(u64::from(events), Ordering::Relaxed);
        // Release: publishes the chunk's records and header to the next loaner (which acquires the
        // state) and to readers. LOANED ^ (LOANED ^ FULL) = FULL, with the pin count untouched.
        let before = chunk.header.state.fetch_xor(LOANED ^ FULL, Ordering::Release);
        debug_assert_eq!(before & KIND, LOANED, "gave back a chunk that was not loaned");
        if let Some(q) = &self.pool {
            // The push (Release) and the consumer's take (Acquire) synchronise: the collector sees
            // what we wrote. Lock-free: a dispatcher stopped mid-take holds up no give-back.
            q.push_full(self.index_of(chunk));
        }
    }

    /// The position of `chunk` in this buffer.
    pub(crate) fn index_of(&self, chunk: &TraceChunk) -> u32 {
        let base = self.chunks.as_ptr() as usize;
        ((std::ptr::from_ref(chunk) as usize - base) / std::mem::size_of::<TraceChunk>()) as u32
    }

    /// Stream mode: the index of the chunk given back the longest ago and not yet taken, if any.
    /// The caller reads it (nobody writes a FULL chunk) and then [`release`](Self::release)s it.
    /// One consumer only: the collector's dispatcher (see `pool.rs`).
    pub(crate) fn pop_full_index(&self) -> Option<u32> {
        self.pool.as_ref()?.pop_full()
    }

    /// Stream mode: the free stack's chunks, top first (tests: nothing else may run).
    #[cfg(all(test, unix))] // record/pool_tests.rs's
    pub(crate) fn free_indices(&self) -> Vec<u32> {
        self.pool.as_ref().map(|p| p.free_indices()).unwrap_or_default()
    }

    /// Stream mode: puts a chunk the collector has written out back into the pool (FULL → FREE,
    /// pins kept: a pinned chunk becomes loanable when its last pin goes).
    pub(crate) fn release(&self, chunk: &TraceChunk) {
        // Release: pairs with the loaning compare-and-swap (Acquire), so the collector's reads of
        // the records happen before the next writer overwrites them. FULL & !KIND = FREE.
        let before = chunk.header.state.fetch_and(!KIND, Ordering::Release);
        debug_assert_eq!(before & KIND, FULL, "released a chunk that was not full");
        if let Some(q) = &self.pool {
            // FREE now (pinned or not): onto the free stack, where a loan finds it.
            q.push_free(self.index_of(chunk));
        }
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

    /// Events written so far, those in chunks still held included (for a trigger's post-trigger
    /// window): the chunks given back, plus each loaned chunk's committed count. A reader's
    /// figure, not exact while writers run, and it never counts an event that is not written.
    pub(crate) fn live_events(&self) -> u64 {
        // Relaxed: statistics; `committed` is an Acquire load of its own.
        let given = self.counters.events_given_back.load(Ordering::Relaxed);
        let held: u64 = self
            .chunks
            .iter()
            .filter(|c| c.header.state.load(Ordering::Relaxed) & KIND == LOANED)
            .map(|c| u64::from(c.committed()))
            .sum();
        given + held
    }

    /// The indices of the chunks that hold data, in loan order.
    pub(crate) fn used_chunks(&self) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.chunks.len())
            // Acquire: pairs with `give_back`.
            .filter(|&i| {
                self.chunks[i].header.state.load(Ordering::Acquire) & KIND != FREE
                    && self.chunks[i].committed() > 0
            })
            .collect();
        v.sort_by_key(|&i| self.chunks[i].loan_stamp());
        v
    }

    pub(crate) fn chunk(&self, i: usize) -> &TraceChunk {
        &self.chunks[i]
    }

    /// A copy of what this running buffer holds now (a flight-recorder dump): every LOANED or FULL
    /// chunk, pinned in turn while its committed records are copied (see [`TraceChunk::pin`]).
    /// Writers never wait and never fail because of it: a tenant keeps its chunk and goes on
    /// writing above the copied prefix, and what it writes after the copy goes into the next dump.
    /// Returns the copy, a Fixed buffer whose counters say what it holds.
    pub(crate) fn snapshot(&self) -> Result<TraceBuffer, AllocFailed> {
        let copy = TraceBuffer::new(BufferMode::Fixed, self.chunks.len())?;
        let (mut n, mut events) = (0usize, 0u64);
        for chunk in self.chunks.iter() {
            let dst = &copy.chunks[n];
            let copied = chunk.read_pinned(|records, c| {
                if records.is_empty() {
                    return None;
                }
                for (i, r) in records.iter().enumerate() {
                    // SAFETY: `dst` belongs to `copy`, which nobody else can reach yet; `i` is
                    // below the committed count, itself at most CHUNK_RECORDS.
                    unsafe { (*dst.slot(i)).write(*r) };
                }
                // The events are counted in the copy: a held chunk has no count yet.
                let e = phosphor_format::count_events(records) as u32;
                let d = &dst.header;
                // Relaxed throughout: `copy` is private to this thread.
                d.loan.store(c.loan, Ordering::Relaxed);
                d.seq.store(c.seq, Ordering::Relaxed);
                d.tid.store(c.tid, Ordering::Relaxed);
                d.events.store(e, Ordering::Relaxed);
                d.state.store(FULL, Ordering::Relaxed);
                dst.publish(records.len() as u32);
                Some(e)
            });
            if let Some(Some(e)) = copied {
                events += u64::from(e);
                n += 1;
            }
        }
        // Relaxed: `copy` is private to this thread.
        copy.counters.chunks_loaned.store(n as u64, Ordering::Relaxed);
        copy.counters.events_given_back.store(events, Ordering::Relaxed);
        copy.next.0.store(n as u64, Ordering::Relaxed);
        Ok(copy)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use phosphor_format::Record;

    fn take(b: &TraceBuffer) -> &TraceChunk {
        match b.loan(1, 0) {
            Loan::Chunk(c) => c,
            other => panic!("expected a chunk, got {other:?}"),
        }
    }

    #[test]
    fn a_fixed_buffer_is_exhausted_once_and_reports_it_once() {
        let b = TraceBuffer::new(BufferMode::Fixed, 2).unwrap();
        take(&b);
        take(&b);
        assert!(matches!(b.loan(1, 2), Loan::Exhausted { first: true }));
        assert!(matches!(b.loan(1, 3), Loan::Exhausted { first: false }));
        assert!(b.is_exhausted());
    }

    #[test]
    fn a_ring_buffer_overwrites_the_oldest_full_chunk_and_counts_its_events() {
        let b = TraceBuffer::new(BufferMode::Ring, 2).unwrap();
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
        let b = TraceBuffer::new(BufferMode::Fixed, 3).unwrap();
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

    fn write(c: &TraceChunk, from: u32, to: u32) {
        for j in from..to {
            // SAFETY: the chunk is loaned to this test alone, and slot j is above the count.
            unsafe { (*c.slot(j as usize)).write(Record::new(u64::from(j), 20, Default::default(), [0; 2])) };
        }
        c.publish(to);
    }

    #[test]
    fn a_pinned_chunk_is_never_loaned_again_and_keeps_its_pin_when_given_back() {
        let b = TraceBuffer::new(BufferMode::Ring, 1).unwrap();
        let c = take(&b);
        write(c, 0, 2);
        assert!(c.pin());
        // The holder goes on writing above the pinned prefix, and gives the chunk back without
        // waiting for the reader.
        write(c, 2, 3);
        // SAFETY: this test holds c, which holds three events.
        unsafe { b.give_back(c, 3) };
        assert!(matches!(b.loan(1, 1), Loan::AllLoaned), "a pinned FULL chunk is not overwritten");
        c.unpin();
        assert!(std::ptr::eq(take(&b), c), "unpinned, it is reused");
        assert_eq!(b.counters.events_overwritten.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn a_free_chunk_or_one_being_stamped_cannot_be_pinned() {
        let b = TraceBuffer::new(BufferMode::Stream, 1).unwrap();
        assert!(!b.chunk(0).pin(), "FREE");
        b.chunk(0).header.state.store(CLAIMED, Ordering::Relaxed);
        assert!(!b.chunk(0).pin(), "CLAIMED: its header is being rewritten");
        assert!(b.chunk(0).pin_committed().is_none());
    }

    #[test]
    fn a_snapshot_copies_held_and_given_back_chunks_and_leaves_the_holders_writing() {
        let b = TraceBuffer::new(BufferMode::Ring, 4).unwrap();
        let full = take(&b);
        write(full, 0, 5);
        // SAFETY: this test holds `full`, which holds five events.
        unsafe { b.give_back(full, 5) };
        let held = take(&b);
        write(held, 0, 3);
        let copy = b.snapshot().unwrap();
        assert_eq!(copy.recorded_events(), 8, "5 given back + the 3 committed in the held chunk");
        let used = copy.used_chunks();
        assert_eq!(used.len(), 2);
        // The holder still holds its chunk (no give-back, no lock), and the records it writes now
        // are not in the copy.
        write(held, 3, 4);
        // SAFETY: `copy` is private to this test.
        let lens: Vec<usize> = used.iter().map(|&i| unsafe { copy.chunk(i).records() }.len()).collect();
        assert_eq!(lens, [5, 3]);
        assert_eq!(held.committed(), 4);
        // Every pin was released: both chunks can be loaned again once given back.
        // SAFETY: this test holds `held`, which holds four events.
        unsafe { b.give_back(held, 4) };
        assert_eq!(b.chunk(b.index_of(full) as usize).header.state.load(Ordering::Relaxed), FULL);
        assert_eq!(b.chunk(b.index_of(held) as usize).header.state.load(Ordering::Relaxed), FULL);
    }

    #[test]
    fn a_buffer_too_large_for_the_heap_is_an_error_not_an_abort() {
        let e = TraceBuffer::new(BufferMode::Fixed, usize::MAX / 4096).unwrap_err();
        assert!(e.bytes > 1 << 40);
    }
}

//! `TraceChunk`: one preallocated page of records, its header and its state byte (kind and
//! pins), which the loans of `buffer.rs` and every reader of a running trace go through.
//!
//! A [`TraceChunk`] is one page: [`CHUNK_RECORDS`] 32-byte records and a [`ChunkHeader`] holding
//! its extents. A chunk is written by one tenant at a time, and its writer publishes the committed
//! record count with a Release store after the records (optimistic logging, XRay FDR v2): a reader
//! that acquires the count sees every record below it complete, and those records do not change
//! until the chunk is loaned again.
//!
//! # Chunk states
//!
//! A chunk's state byte holds its kind in the low two bits and a count of *pins* above them:
//!
//! ```text
//!   FREE ──loan──▶ CLAIMED ──stamped──▶ LOANED ──give_back / evict──▶ FULL
//!   FULL ──loan (Ring: overwrite, counted)──▶ CLAIMED          FULL ──release (Stream)──▶ FREE
//! ```
//!
//! A loan is a compare-and-swap from FREE or FULL *with no pin* to CLAIMED; the new holder stamps
//! the header (committed count 0, loan stamp, sequence number, thread) and then stores LOANED with
//! Release. A reader that is not the holder (a dump, the streaming collector's flush of a quiet
//! thread, the crash dump) [`pin`](TraceChunk::pin)s a LOANED or FULL chunk (adds one pin, Acquire,
//! so it sees the stamp), reads the committed count (Acquire) and copies that prefix, and unpins.
//! While a chunk is pinned no loan can take it, so the prefix cannot be overwritten under the
//! reader; its holder keeps writing *above* the prefix and may give it back (LOANED → FULL keeps
//! the pins) without waiting for anyone. This is how dumps copy a running trace with no lock: a
//! writer never waits for, and never fails because of, a reader.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;

use phosphor_format::chunk::CHUNK_RECORDS;
use phosphor_format::Record;

use crate::sync::{AtomicU32, AtomicU64, AtomicU8, Ordering};

/// The kind bits of a chunk's state.
pub(super) const KIND: u8 = 0b11;
pub(super) const FREE: u8 = 0;
pub(super) const LOANED: u8 = 1;
pub(super) const FULL: u8 = 2;
/// Taken by a loan and being stamped; not yet readable.
pub(super) const CLAIMED: u8 = 3;
/// One pin, in the bits above the kind (at most 63 at once).
pub(super) const PIN: u8 = 1 << 2;

/// The extents of a chunk, after its records.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct ChunkHeader {
    /// Global loan stamp: the order in which chunks were handed out.
    pub(super) loan: AtomicU64,
    /// The tenant's sequence number for this chunk; a gap shows lost chunks.
    pub(super) seq: AtomicU64,
    /// The thread that first wrote into the chunk.
    pub(super) tid: AtomicU32,
    /// Records published; the writer stores it with Release after the records.
    pub(super) committed: AtomicU32,
    /// Events (not records) in the chunk, counted when it is given back.
    pub(super) events: AtomicU32,
    /// The kind (FREE, CLAIMED, LOANED or FULL) in the low two bits, the pin count above.
    pub(super) state: AtomicU8,
}

/// One page of records plus its header.
#[repr(C, align(64))]
pub(crate) struct TraceChunk {
    pub(super) records: [UnsafeCell<MaybeUninit<Record>>; CHUNK_RECORDS],
    pub(super) header: ChunkHeader,
    /// Under loom, a tracked cell per record: `publish` writes the newly published ones and every
    /// reader reads the ones it copies, so loom reports a reader whose access is not ordered after
    /// the record's writer, or a writer that reuses a record a reader may still be copying (the
    /// records themselves are std cells, which loom does not track).
    #[cfg(loom)]
    pub(super) shadow: Box<[loom::cell::UnsafeCell<()>]>,
}

#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<TraceChunk>() == phosphor_format::chunk::CHUNK_BYTES);

impl std::fmt::Debug for TraceChunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceChunk").field("header", &self.header).finish_non_exhaustive()
    }
}

/// What a pinned copy of a chunk holds: its header as it was when the records were copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Copied {
    /// Records copied (the committed count).
    pub(crate) records: usize,
    pub(crate) tid: u32,
    pub(crate) seq: u64,
    pub(crate) loan: u64,
    /// The chunk was given back (its event count is final), rather than still held by a tenant.
    pub(crate) full: bool,
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
        {
            // Relaxed: only the holder writes the count, so this is its own last store.
            let old = self.header.committed.load(Ordering::Relaxed) as usize;
            for c in &self.shadow[old.min(n as usize)..n as usize] {
                c.with_mut(|_| ());
            }
        }
        self.header.committed.store(n, Ordering::Release);
    }

    pub(crate) fn committed(&self) -> u32 {
        // Acquire: pairs with `publish`.
        self.header.committed.load(Ordering::Acquire)
    }

    pub(crate) fn tid(&self) -> u32 {
        // Relaxed: written at loan time by the loaning thread; readers synchronise with it through
        // the tenant lock (eviction), the chunk state, or a pin before reading.
        self.header.tid.load(Ordering::Relaxed)
    }

    pub(crate) fn seq(&self) -> u64 {
        // Relaxed: as for `tid`.
        self.header.seq.load(Ordering::Relaxed)
    }

    pub(crate) fn loan_stamp(&self) -> u64 {
        // Relaxed: as for `tid`.
        self.header.loan.load(Ordering::Relaxed)
    }

    /// Whether the chunk was ever loaned in this trace (FREE chunks hold nothing).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the crash dump's (Linux only)
    pub(crate) fn is_used(&self) -> bool {
        // Relaxed: a hint; `pin` decides what is read.
        self.header.state.load(Ordering::Relaxed) & KIND != FREE
    }

    /// Pins a LOANED or FULL chunk so that no loan can take it until [`unpin`](Self::unpin):
    /// its committed records stay as they are, whoever holds it. Fails (never waits) for a FREE
    /// chunk, one being stamped by a new holder, or one with 63 pins already.
    pub(crate) fn pin(&self) -> bool {
        // Relaxed: a first guess; the compare-and-swap checks it.
        let mut s = self.header.state.load(Ordering::Relaxed);
        loop {
            let kind = s & KIND;
            if (kind != LOANED && kind != FULL) || s > u8::MAX - PIN {
                return false;
            }
            // Acquire: the state we replace belongs to the release sequence of the holder's
            // LOANED store (made after its stamp) or of `give_back`'s Release, so the header and
            // every count the holder published before it are visible to us. Pins and unpins are
            // read-modify-writes, which keep that release sequence going.
            match self.header.state.compare_exchange_weak(s, s + PIN, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
    }

    /// Removes a pin taken by [`pin`](Self::pin).
    pub(crate) fn unpin(&self) {
        // Release: our reads of the records happen before a later loan's Acquire compare-and-swap
        // sees the chunk unpinned and lets a new holder overwrite them.
        let before = self.header.state.fetch_sub(PIN, Ordering::Release);
        debug_assert!(before >= PIN, "unpin without a pin");
    }

    /// Pins a LOANED or FULL chunk (see [`pin`](Self::pin)) and says what it holds now: the
    /// committed count and the header those records belong to. The caller reads at most that many
    /// records ([`prefix`](Self::prefix)) and then [`unpin`](Self::unpin)s it. `None` if the chunk
    /// could not be pinned.
    pub(crate) fn pin_committed(&self) -> Option<Copied> {
        if !self.pin() {
            return None;
        }
        // Relaxed: the pin's Acquire ordered these after the holder's stamp, which wrote them.
        let (tid, seq, loan) = (self.tid(), self.seq(), self.loan_stamp());
        // Acquire (in `committed`): pairs with the holder's `publish`, so the records below are
        // complete. The pin ordered the stamp's reset of the count before this load, so no earlier
        // holder's count can be read.
        let n = (self.committed() as usize).min(CHUNK_RECORDS);
        // Relaxed: a pinned chunk's kind only goes from LOANED to FULL; if FULL is seen, the
        // records and count were final before it (`give_back` follows the last publish).
        let full = self.header.state.load(Ordering::Relaxed) & KIND == FULL;
        Some(Copied { records: n, tid, seq, loan, full })
    }

    /// Shows `f` the committed records of a LOANED or FULL chunk, pinned while `f` runs, with the
    /// header they belong to; `None` if the chunk could not be pinned (free, or being loaned again
    /// at this moment). Never waits and never makes a writer fail: the holder goes on writing
    /// above the prefix meanwhile. Usable from a signal handler (no allocation, no lock).
    pub(crate) fn read_pinned<R>(&self, f: impl FnOnce(&[Record], Copied) -> R) -> Option<R> {
        let c = self.pin_committed()?;
        // SAFETY: the pin keeps every loan off this chunk, so no one writes records below the
        // committed count we acquired while it is held.
        let records = unsafe { self.prefix(c.records) };
        let r = f(records, c);
        self.unpin();
        Some(r)
    }

    /// The first `n` records, which must be committed and not written while the slice lives.
    ///
    /// # Safety
    ///
    /// `n` is at most a committed count that this thread acquired (or that a thread it
    /// synchronised with acquired), and no tenant writes the first `n` records while the slice
    /// lives (the chunk is pinned, given back, or its holder evicted).
    pub(crate) unsafe fn prefix(&self, n: usize) -> &[Record] {
        #[cfg(loom)]
        for c in &self.shadow[..n] {
            c.with(|_| ());
        }
        // SAFETY: [1] `UnsafeCell<MaybeUninit<Record>>` has the layout of `Record`, both wrappers
        // being `repr(transparent)`. [2] The first `n` records were written before the Release
        // store of a count ≥ `n` that the caller acquired, so they are initialised. [3] The caller
        // guarantees that no one writes to them while the slice lives.
        unsafe { std::slice::from_raw_parts(self.records.as_ptr().cast::<Record>(), n) }
    }

    /// The committed records.
    ///
    /// # Safety
    ///
    /// No tenant may write into this chunk for as long as the slice lives: the trace is stopped
    /// and every tenant evicted, or the caller otherwise owns the chunk.
    pub(crate) unsafe fn records(&self) -> &[Record] {
        let n = (self.committed() as usize).min(CHUNK_RECORDS);
        // SAFETY: `n` was just acquired, and the caller guarantees no writer.
        unsafe { self.prefix(n) }
    }
}

/// A FREE chunk's header, all counts zero.
pub(super) fn new_header() -> ChunkHeader {
    ChunkHeader {
        loan: AtomicU64::new(0),
        seq: AtomicU64::new(0),
        tid: AtomicU32::new(0),
        committed: AtomicU32::new(0),
        events: AtomicU32::new(0),
        state: AtomicU8::new(FREE),
    }
}

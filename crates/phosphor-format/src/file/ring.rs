//! The ring file: a Ring buffer in a shared memory-mapped file, which the kernel keeps when the
//! process dies (even of `SIGKILL`), and [`recover`], which turns it into a trace file.
//!
//! ```text
//! offset 0          ring header (RING_HEADER_BYTES)
//!   0   8  magic "PHOSRING"
//!   8   4  version (1)
//!  12   4  chunk size in bytes (CHUNK_BYTES)
//!  16   8  chunk count
//!  24   8  metadata offset (after the chunks)
//!  32   8  metadata capacity in bytes
//!  40   8  metadata length: bytes of whole blocks written (the runtime stores it last)
//!  48   8  strings defined by the metadata blocks so far
//!  56   4  length h of the trace file's preamble and header block, which follow at 64
//!  64   h  the preamble and header block of the trace file to recover
//! RING_HEADER_BYTES  chunks: count × CHUNK_BYTES, each the runtime's chunk as it is in memory
//! metadata offset    trace-file blocks (strings, callsites) appended as callsites register
//! ```
//!
//! A chunk is its 127 records, then its header: loan stamp (u64) at 4064, writer stream and
//! sequence number (u64) at 4072, thread id (u32) at 4080, committed record count (u32) at 4084,
//! events (u32) at 4088, state (u8) at 4092 (0 = never loaned). The runtime writes records before
//! it publishes their count, so [`recover`] trusts only the committed count: a chunk torn in the
//! middle of an event yields every event before it.

use super::error::{Error, ErrorKind};
use super::header::{kind, DropCounts, Trailer, BLOCK_HEADER_BYTES};
use super::raw;
use crate::chunk::{CHUNK_BYTES, CHUNK_RECORDS};
use crate::record::RECORD_SIZE;
use crate::Record;

/// Bytes before the first chunk.
pub const RING_HEADER_BYTES: usize = 4096;
/// The ring file's magic bytes.
pub const RING_MAGIC: [u8; 8] = *b"PHOSRING";
/// Offsets of the ring header's fields.
pub mod at {
    /// Version (u32).
    pub const VERSION: usize = 8;
    /// Chunk size (u32).
    pub const CHUNK_SIZE: usize = 12;
    /// Chunk count (u64).
    pub const CHUNK_COUNT: usize = 16;
    /// Metadata offset (u64).
    pub const META_OFFSET: usize = 24;
    /// Metadata capacity (u64).
    pub const META_CAPACITY: usize = 32;
    /// Metadata length (u64, stored last).
    pub const META_LEN: usize = 40;
    /// Strings defined by the metadata (u64).
    pub const META_STRINGS: usize = 48;
    /// Length of the stored preamble and header block (u32).
    pub const HEAD_LEN: usize = 56;
    /// The stored preamble and header block.
    pub const HEAD: usize = 64;
}
/// Offsets of a chunk header's fields, from the start of the chunk.
pub mod chunk_at {
    /// Loan stamp (u64).
    pub const LOAN: usize = 4064;
    /// Writer stream and sequence number (u64).
    pub const SEQ: usize = 4072;
    /// Thread id (u32).
    pub const TID: usize = 4080;
    /// Committed record count (u32).
    pub const COMMITTED: usize = 4084;
    /// State (u8; 0: never loaned).
    pub const STATE: usize = 4092;
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}

/// The records up to the first event that does not decode (or whose continuations run past the
/// end).
fn valid_prefix(records: &[Record]) -> usize {
    let mut i = 0;
    while let Some(r) = records.get(i) {
        let len = 1 + r.meta.continuation();
        if i + len > records.len()
            || (r.id >= crate::FIRST_CALLSITE_ID && crate::decode_event(records, i).is_err())
        {
            break;
        }
        i += len;
    }
    i
}

fn bad(what: impl Into<String>, at: usize) -> Error {
    Error::malformed("ring file", what.into(), at as u64)
}

/// Rebuilds a trace file from a ring file's bytes: the stored header, the metadata blocks, every
/// chunk that was ever loaned up to its committed count (in loan order), and a trailer that counts
/// the events recovered (the drop counters lived in the dead process: they are zero). Static string
/// arguments lived in the dead process's memory too: they come back as `<static string>`.
/// Errors name the offset of what is wrong; a chunk whose records do not decode is left out.
pub fn recover(ring: &[u8]) -> Result<Vec<u8>, Error> {
    if ring.get(..8) != Some(&RING_MAGIC[..]) {
        return Err(Error::new(ErrorKind::BadMagic, 0));
    }
    if ring.len() < RING_HEADER_BYTES {
        // A ring file cut short (a copy in progress, a full disk): say so, not "bad magic".
        return Err(Error::new(
            ErrorKind::Truncated {
                what: "ring header",
                needed: RING_HEADER_BYTES as u64,
                available: ring.len() as u64,
            },
            0,
        ));
    }
    if u32_at(ring, at::VERSION) != 1 {
        return Err(bad(format!("ring file version {}", u32_at(ring, at::VERSION)), at::VERSION));
    }
    if u32_at(ring, at::CHUNK_SIZE) as usize != CHUNK_BYTES {
        return Err(bad("chunk size is not 4096", at::CHUNK_SIZE));
    }
    let count = usize::try_from(u64_at(ring, at::CHUNK_COUNT)).unwrap_or(usize::MAX);
    let chunks_end = count.checked_mul(CHUNK_BYTES).and_then(|b| b.checked_add(RING_HEADER_BYTES));
    if chunks_end.is_none_or(|e| e > ring.len()) {
        return Err(bad(format!("{count} chunks do not fit in the file"), at::CHUNK_COUNT));
    }
    let meta_off = usize::try_from(u64_at(ring, at::META_OFFSET)).unwrap_or(usize::MAX);
    let meta_len = usize::try_from(u64_at(ring, at::META_LEN)).unwrap_or(usize::MAX);
    let meta = meta_off
        .checked_add(meta_len)
        .filter(|&e| e <= ring.len() && meta_off >= chunks_end.unwrap_or(0))
        .map(|e| &ring[meta_off..e])
        .ok_or_else(|| bad("the metadata region is outside the file", at::META_LEN))?;
    let head_len = u32_at(ring, at::HEAD_LEN) as usize;
    let head = ring
        .get(at::HEAD..at::HEAD + head_len)
        .filter(|_| at::HEAD + head_len <= RING_HEADER_BYTES)
        .ok_or_else(|| bad("the stored header does not fit", at::HEAD_LEN))?;

    let mut out = Vec::with_capacity(head.len() + meta.len() + count * (CHUNK_BYTES + 64));
    out.extend_from_slice(head);
    out.extend_from_slice(meta);
    // One string for every static string argument, which recovery cannot resolve.
    let placeholder = u32::try_from(u64_at(ring, at::META_STRINGS))
        .map_err(|_| bad("too many strings", at::META_STRINGS))?;
    let mut block = vec![0u8; 2 * CHUNK_BYTES];
    let n = raw::strings_block(&mut block, &[b"<static string>"]).expect("room for one string");
    out.extend_from_slice(&block[..n]);

    let chunk =
        |i: usize| &ring[RING_HEADER_BYTES + i * CHUNK_BYTES..RING_HEADER_BYTES + (i + 1) * CHUNK_BYTES];
    let mut order: Vec<usize> = (0..count).filter(|&i| chunk(i)[chunk_at::STATE] != 0).collect();
    order.sort_by_key(|&i| u64_at(chunk(i), chunk_at::LOAN));
    let mut recorded = 0;
    let mut records = Vec::with_capacity(CHUNK_RECORDS);
    for i in order {
        let c = chunk(i);
        let committed = (u32_at(c, chunk_at::COMMITTED) as usize).min(CHUNK_RECORDS);
        records.clear();
        records.extend(
            c[..committed * RECORD_SIZE]
                .chunks_exact(RECORD_SIZE)
                .map(|r| Record::from_bytes(r.try_into().expect("32 bytes"))),
        );
        // A corrupt committed count (say 0xFFFFFFFF, clamped to a whole chunk) takes in records
        // that were never written: keep the events that decode, up to the first that does not, so
        // that one bad chunk costs its own tail and not every chunk after it in the file.
        records.truncate(valid_prefix(&records));
        let (tid, seq) = (u32_at(c, chunk_at::TID), u64_at(c, chunk_at::SEQ));
        if let Ok(w) = raw::chunk_block(&mut block, tid, seq, &records, |_, _| placeholder) {
            recorded += crate::count_events(&records);
            out.extend_from_slice(&block[..w]);
        }
    }
    let trailer = Trailer { recorded, dropped: DropCounts::default(), ..Trailer::default() };
    let n = raw::trailer_block(&mut block, &trailer).expect("room for the trailer");
    out.extend_from_slice(&block[..n]);
    debug_assert!(out.len() >= BLOCK_HEADER_BYTES && kind::TRAILER == 6);
    Ok(out)
}

//! The chunk block: an extents header, then the chunk's records exactly as recorded.
//!
//! ```text
//! offset  size  field
//!      0     4  tid              the thread that first wrote into the chunk
//!      4     4  record_count     records that follow (events, continuations and markers)
//!      8     8  seq              the thread's chunk sequence number: a gap shows lost chunks
//!     16     8  first_ts         smallest timestamp of an event record (0 when there is none)
//!     24     8  last_ts          largest timestamp of an event record (0 when there is none)
//!     32     4  committed_bytes  record_count × 32
//!     36     4  event_count      event records among them
//!     40        records, 32 bytes each, as laid out in `record.rs`
//! ```
//!
//! This is XRay FDR's BufferExtents: a reader can skip or index a chunk from its extents alone.
//! The one change from memory: a [`StaticStr`](crate::ArgType::StaticStr) argument word, an
//! address in the recording process, is replaced by the index of that string in the file's string
//! table (a value below 2³²), so that the file means the same once the process is gone.

use super::bytes::Body;
use super::error::Error;
use super::strings::{StringTable, TableStr};
use super::tables::Tables;
use crate::record::RECORD_SIZE;
use crate::{decode_event, ArgType, Record, FIRST_CALLSITE_ID, ID_THREAD_SWITCH, MAX_ARGS};

/// Bytes of the extents header.
pub const EXTENTS_BYTES: usize = 40;

/// A chunk's extents header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Extents {
    /// The thread that first wrote into the chunk.
    pub tid: u32,
    /// The chunk's place in its writer stream: the stream in the top 16 bits (see
    /// [`Extents::stream`]), the sequence number within it in the low 48 (see
    /// [`Extents::stream_seq`]).
    pub seq: u64,
    /// Records in the chunk.
    pub record_count: u32,
    /// Bytes of records: `record_count × 32`.
    pub committed_bytes: u32,
    /// Smallest event timestamp.
    pub first_ts: u64,
    /// Largest event timestamp.
    pub last_ts: u64,
    /// Event records in the chunk.
    pub event_count: u32,
}

/// Bits of [`Extents::seq`] below the writer stream.
pub const SEQ_STREAM_SHIFT: u32 = 48;

impl Extents {
    /// The writer stream the chunk belongs to: 0 for a thread writing into its own tenant (the
    /// stream is then the thread, `tid`); `k ≥ 1` for the `k`-th tenant of a shared pool, whose
    /// chunks may come from several threads (format 1.1; 1.0 files have only stream 0). Sequence
    /// numbers count up by one per chunk within a stream, so a gap in one stream shows lost chunks.
    pub fn stream(&self) -> u16 {
        (self.seq >> SEQ_STREAM_SHIFT) as u16
    }

    /// The chunk's sequence number within its writer stream.
    pub fn stream_seq(&self) -> u64 {
        self.seq & ((1 << SEQ_STREAM_SHIFT) - 1)
    }

    /// The key under which sequence numbers count: `(stream, tid)` for stream 0, `(stream, 0)` for
    /// a pool stream, whatever thread started the chunk.
    pub fn stream_key(&self) -> (u16, u32) {
        match self.stream() {
            0 => (0, self.tid),
            s => (s, 0),
        }
    }

    /// Writes the 40 bytes of the extents into `out[..40]`.
    pub(crate) fn encode_into(&self, out: &mut [u8]) {
        out[0..4].copy_from_slice(&self.tid.to_le_bytes());
        out[4..8].copy_from_slice(&self.record_count.to_le_bytes());
        out[8..16].copy_from_slice(&self.seq.to_le_bytes());
        out[16..24].copy_from_slice(&self.first_ts.to_le_bytes());
        out[24..32].copy_from_slice(&self.last_ts.to_le_bytes());
        out[32..36].copy_from_slice(&self.committed_bytes.to_le_bytes());
        out[36..40].copy_from_slice(&self.event_count.to_le_bytes());
    }

    /// Decodes and checks the extents of a chunk body of `body.len()` bytes at file offset `base`.
    pub(crate) fn decode(body: &[u8], base: u64) -> Result<Extents, Error> {
        let what = "chunk block";
        let mut b = Body::new(body, base, what);
        let tid = b.u32()?;
        let record_count = b.u32()?;
        let seq = b.u64()?;
        let first_ts = b.u64()?;
        let last_ts = b.u64()?;
        let at = b.offset();
        let committed_bytes = b.u32()?;
        let event_count = b.u32()?;
        let e = Extents { tid, seq, record_count, committed_bytes, first_ts, last_ts, event_count };
        if u64::from(committed_bytes) != u64::from(record_count) * RECORD_SIZE as u64 {
            return Err(Error::malformed(
                what,
                format!("committed length {committed_bytes} is not {record_count} records"),
                at,
            ));
        }
        if b.remaining() != committed_bytes as usize {
            return Err(Error::malformed(
                what,
                format!("committed length {committed_bytes}, but {} bytes of records follow", b.remaining()),
                at,
            ));
        }
        if event_count > record_count {
            return Err(Error::malformed(
                what,
                format!("{event_count} events in {record_count} records"),
                at + 4,
            ));
        }
        Ok(e)
    }
}

/// The byte offset, from the first record, of payload word `word` of the event at record `i`:
/// words 0 and 1 sit in the slots, later ones at the start of the continuation bytes.
/// The length in records of the event at `records[i]` if it holds only numbers (no string, no
/// packed parameters) and is well formed, as [`decode_event`] checks it; otherwise `None`, and the
/// caller decodes it in full (which also reports what is wrong).
#[inline]
fn scalar_event_len(records: &[Record], i: usize) -> Option<usize> {
    let meta = records[i].meta;
    let scalar = |code: u8| {
        matches!(
            ArgType::from_code(code),
            Some(
                ArgType::None | ArgType::I64 | ArgType::U64 | ArgType::F64 | ArgType::Bool | ArgType::Pointer
            )
        )
    };
    let (lead, cont) = (meta.lead_words(), meta.continuation());
    let ok = meta.reserved_bits() == 0
        && lead <= crate::MAX_LEAD_WORDS
        && scalar(meta.arg_code(0))
        && scalar(meta.arg_code(1))
        && cont < records.len() - i;
    let args = usize::from(meta.arg_code(0) != 0) + usize::from(meta.arg_code(1) != 0);
    // The words beyond the two slots must fit in the continuation records.
    (ok && (lead + args).saturating_sub(2) * 8 <= cont * RECORD_SIZE).then_some(1 + cont)
}

fn word_offset(i: usize, word: usize) -> usize {
    if word < 2 {
        i * RECORD_SIZE + 16 + 8 * word
    } else {
        (i + 1) * RECORD_SIZE + 8 * (word - 2)
    }
}

/// Encodes a chunk's records for a file into `out` (extents first), replacing each static string
/// word by `intern(address, length)`. Fails on the first record that does not decode, with its
/// index.
pub(crate) fn encode_chunk(
    tid: u32,
    seq: u64,
    records: &[Record],
    out: &mut Vec<u8>,
    intern: impl FnMut(u64, usize) -> u32,
) -> Result<Extents, (usize, crate::DecodeError)> {
    let start = out.len();
    out.resize(start + EXTENTS_BYTES + records.len() * RECORD_SIZE, 0);
    encode_chunk_into(tid, seq, records, &mut out[start..], intern)
}

/// [`encode_chunk`] into `out`, which is exactly `EXTENTS_BYTES + 32 × records` long: no
/// allocation (the crash-dump path uses it through [`super::raw`]).
pub(crate) fn encode_chunk_into(
    tid: u32,
    seq: u64,
    records: &[Record],
    out: &mut [u8],
    mut intern: impl FnMut(u64, usize) -> u32,
) -> Result<Extents, (usize, crate::DecodeError)> {
    let recs = EXTENTS_BYTES;
    for (r, dst) in records.iter().zip(out[recs..].chunks_exact_mut(RECORD_SIZE)) {
        dst.copy_from_slice(&r.to_bytes());
    }
    let (mut first_ts, mut last_ts, mut events) = (u64::MAX, 0, 0u32);
    let mut i = 0;
    while i < records.len() {
        let r = &records[i];
        if r.id == ID_THREAD_SWITCH {
            i += 1;
            continue;
        }
        if r.id >= FIRST_CALLSITE_ID {
            events += 1;
            first_ts = first_ts.min(r.ts);
            last_ts = last_ts.max(r.ts);
        }
        // Most events hold only numbers: nothing to rewrite, and a check of the header alone
        // accepts exactly what `decode_event` would.
        if let Some(len) = scalar_event_len(records, i) {
            i += len;
            continue;
        }
        let ev = decode_event(records, i).map_err(|e| (i, e))?;
        let mut word = ev.lead_len;
        for a in 0..MAX_ARGS {
            let t = ArgType::from_code(r.meta.arg_code(a)).unwrap_or(ArgType::None);
            if t == ArgType::None {
                continue;
            }
            if let Some(crate::ArgWord::StaticStr { addr, len }) = ev.args[a] {
                let index = u64::from(intern(addr, len));
                out[recs + word_offset(i, word)..][..8].copy_from_slice(&index.to_le_bytes());
            }
            word += 1;
        }
        if let Some(p) = ev.params {
            for (k, w) in p.iter().enumerate() {
                if let crate::ArgWord::StaticStr { addr, len } = w {
                    let index = u64::from(intern(addr, len));
                    out[recs + word_offset(i, p.word_index(k))..][..8].copy_from_slice(&index.to_le_bytes());
                }
            }
        }
        i += ev.len;
    }
    if events == 0 {
        first_ts = 0;
    }
    let e = Extents {
        tid,
        seq,
        record_count: records.len() as u32,
        committed_bytes: (records.len() * RECORD_SIZE) as u32,
        first_ts,
        last_ts,
        event_count: events,
    };
    e.encode_into(&mut out[..EXTENTS_BYTES]);
    Ok(e)
}

/// One chunk read from a file. It borrows the reader, so read the next block only after you are
/// done with it.
#[derive(Clone, Copy, Debug)]
pub struct Chunk<'a> {
    /// The extents header.
    pub extents: Extents,
    /// File offset of the chunk's block (its framing); for a chunk inside a compressed group
    /// (format 1.7), a virtual offset (see [`VIRTUAL_OFFSET`](super::VIRTUAL_OFFSET)) that
    /// [`Reader::chunk_at`](super::Reader::chunk_at) takes back.
    pub offset: u64,
    /// The records (static string words hold string table indices).
    pub records: &'a [Record],
    pub(crate) tables: &'a Tables,
    /// How far the file was read to give this chunk.
    pub(crate) stored_end: u64,
}

impl<'a> Chunk<'a> {
    /// File offset of record `index` of this chunk.
    pub fn record_offset(&self, index: usize) -> u64 {
        self.offset
            + (super::header::BLOCK_HEADER_BYTES + EXTENTS_BYTES) as u64
            + (index as u64) * RECORD_SIZE as u64
    }

    /// File offset of the byte just past this chunk's block (virtual inside a compressed group,
    /// like [`Chunk::offset`]).
    pub fn end_offset(&self) -> u64 {
        self.record_offset(self.records.len())
    }

    /// How many bytes of the file were read to give this chunk: its block's end, or for a chunk
    /// inside a compressed group (format 1.7) the group's end. A file position, for progress and
    /// for how far a reader is behind a growing file's end.
    pub fn stored_end(&self) -> u64 {
        self.stored_end
    }

    /// The chunk's events, with callsites and strings resolved.
    pub fn events(&self) -> super::event::ChunkEvents<'a> {
        super::event::ChunkEvents::new(*self)
    }

    /// The name of thread `tid` as the blocks before this chunk define it (what
    /// [`Reader::thread_name`](super::Reader::thread_name) says, while the chunk borrows the
    /// reader).
    pub fn thread_name(&self, tid: u32) -> Option<TableStr<'a>> {
        self.tables.thread_name(tid)
    }

    /// The callsites and strings as the blocks before this chunk define them, to decode
    /// [`HeldEvents`](super::HeldEvents) against.
    pub fn tables(&self) -> super::TableSet<'a> {
        super::TableSet(self.tables)
    }

    /// The string table as the blocks before this chunk define it.
    pub fn strings(&self) -> &'a StringTable {
        &self.tables.strings
    }
}

#[cfg(test)]
mod scalar_fast_path_tests {
    use super::*;
    use crate::Meta;

    /// Every event shape the fast path accepts, `decode_event` accepts too, with the same length;
    /// and it accepts every well-formed numbers-only event.
    #[test]
    fn the_fast_path_accepts_only_what_decode_event_accepts() {
        let mut accepted = 0;
        for lead in 0..4u32 {
            for a0 in 0..16u32 {
                for a1 in 0..16u32 {
                    for cont in 0..4u32 {
                        for extra in [0u32, 1 << 8, 1 << 9] {
                            let meta = Meta(lead << 12 | a0 << 16 | a1 << 20 | cont | extra);
                            for available in 0..4usize {
                                let mut records = vec![Record::new(1, FIRST_CALLSITE_ID, meta, [3, 4])];
                                records.extend((0..available).map(|_| Record::new(0, 0, Meta(0), [0, 0])));
                                let fast = scalar_event_len(&records, 0);
                                let full = decode_event(&records, 0);
                                if let Some(len) = fast {
                                    accepted += 1;
                                    let ev =
                                        full.unwrap_or_else(|e| panic!("{meta:?}: fast path took {e:?}"));
                                    assert_eq!(ev.len, len, "{meta:?}");
                                } else if let Ok(ev) = full {
                                    // Declined: it holds a string or parameters.
                                    assert!(
                                        ev.params.is_some()
                                            || ev.args.iter().flatten().any(|a| matches!(
                                                a,
                                                crate::ArgWord::Str(_) | crate::ArgWord::StaticStr { .. }
                                            )),
                                        "{meta:?} is numbers only and well formed, yet declined"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(accepted > 1000, "{accepted}");
    }
}

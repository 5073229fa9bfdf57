//! [`TraceWriter`]: writes a trace file block by block from string indices, so that one string of
//! 60 MiB can name a million callsites without being copied, hashed or held more than once.
//!
//! `phosphor_format::file::Writer` interns strings by content and takes callsites with owned
//! names, which is right for a recorder and ruinous for a generator of hostile tables. This writer
//! leaves interning to its caller: [`TraceWriter::strings`] returns the index of the first string
//! it adds. The blocks are encoded with `phosphor_format::file::raw` and
//! [`RawCallsite::encode`]; only the two table framings (count, entry size) are laid out here, as
//! `docs/FORMAT.md` specifies them. [`ChunkStream`] cuts one writer stream's events into chunks.

use std::io::{self, Write};

use phosphor_format::chunk::CHUNK_RECORDS;
use phosphor_format::file::raw::{self, ChunkBlockError};
use phosphor_format::file::{
    kind, ClockInfo, Header, RawCallsite, Trailer, BLOCK_HEADER_BYTES, MAX_BLOCK_BYTES,
};
use phosphor_format::Record;

/// Entries per table block, as the recorder writes them.
const ENTRIES_PER_BLOCK: usize = 4096;
/// String bytes past which a strings block is closed (a single larger string gets a block alone).
const STRING_BLOCK_BYTES: usize = 8 << 20;
/// Bytes of a callsite entry (format 1.0 to 1.4).
const CALLSITE_ENTRY_BYTES: u32 = 40;
/// Bytes of a thread entry.
const THREAD_ENTRY_BYTES: u32 = 8;

/// Writes a trace file; see the module docs.
#[derive(Debug)]
pub struct TraceWriter<W: Write> {
    out: W,
    written: u64,
    next_string: u32,
    recorded: u64,
    scratch: Vec<u8>,
}

impl<W: Write> TraceWriter<W> {
    /// Writes the preamble and the header block.
    pub fn new(mut out: W, clock: ClockInfo, process_name: &str) -> io::Result<TraceWriter<W>> {
        let header =
            Header { clock, pid: 1, process_name: process_name.to_owned(), boot_id: None, host_name: None };
        let head = raw::preamble_and_header(&header);
        out.write_all(&head)?;
        Ok(TraceWriter { out, written: head.len() as u64, next_string: 0, recorded: 0, scratch: Vec::new() })
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Events written so far (the trailer's `recorded`).
    pub fn recorded(&self) -> u64 {
        self.recorded
    }

    /// Adds `strs` to the string table; returns the index of the first (the others follow it).
    pub fn strings<S: AsRef<str>>(&mut self, strs: &[S]) -> io::Result<u32> {
        let first = self.next_string;
        let mut start = 0;
        while start < strs.len() {
            let mut end = start;
            let mut bytes = 4;
            while end < strs.len()
                && (end == start || bytes + 4 + strs[end].as_ref().len() <= STRING_BLOCK_BYTES)
            {
                bytes += 4 + strs[end].as_ref().len();
                end += 1;
            }
            let batch: Vec<&[u8]> = strs[start..end].iter().map(|s| s.as_ref().as_bytes()).collect();
            self.scratch.resize(BLOCK_HEADER_BYTES + bytes, 0);
            let n = raw::strings_block(&mut self.scratch, &batch).ok_or_else(|| too_long("strings block"))?;
            self.block(n)?;
            start = end;
        }
        self.next_string += strs.len() as u32;
        Ok(first)
    }

    /// Adds one string of `unit` repeated to `bytes` bytes (cut to whole units), written in pieces
    /// so that it is never held whole; returns its index.
    pub fn repeated_string(&mut self, unit: &str, bytes: usize) -> io::Result<u32> {
        let len = if unit.is_empty() { 0 } else { bytes / unit.len() * unit.len() };
        let body = 8 + len;
        if body > MAX_BLOCK_BYTES as usize {
            return Err(too_long("strings block"));
        }
        // `docs/FORMAT.md`: kind, length, count, then the string's length and bytes.
        self.scratch.clear();
        for w in [kind::STRINGS, body as u32, 1, len as u32] {
            self.scratch.extend_from_slice(&w.to_le_bytes());
        }
        let n = self.scratch.len();
        self.block(n)?;
        let piece = unit.repeat((1 << 20) / unit.len().max(1) + 1);
        let mut left = len;
        while left > 0 {
            let take = left.min(piece.len() / unit.len().max(1) * unit.len());
            self.out.write_all(&piece.as_bytes()[..take])?;
            self.written += take as u64;
            left -= take;
        }
        self.next_string += 1;
        Ok(self.next_string - 1)
    }

    /// Adds one string; returns its index.
    pub fn string(&mut self, s: &str) -> io::Result<u32> {
        self.strings(&[s])
    }

    /// Defines callsites, in blocks of up to 4,096.
    pub fn callsites(&mut self, callsites: impl IntoIterator<Item = RawCallsite>) -> io::Result<()> {
        let mut entries = Vec::new();
        let mut count = 0;
        for c in callsites {
            entries.extend_from_slice(&c.encode());
            count += 1;
            if count == ENTRIES_PER_BLOCK {
                self.table(kind::CALLSITES, count, CALLSITE_ENTRY_BYTES, &mut entries)?;
                count = 0;
            }
        }
        if count > 0 {
            self.table(kind::CALLSITES, count, CALLSITE_ENTRY_BYTES, &mut entries)?;
        }
        Ok(())
    }

    /// Names threads: `(thread id, name's string index)`, in blocks of up to 4,096.
    pub fn threads(&mut self, threads: impl IntoIterator<Item = (u32, u32)>) -> io::Result<()> {
        let mut entries = Vec::new();
        let mut count = 0;
        for (tid, name) in threads {
            entries.extend_from_slice(&tid.to_le_bytes());
            entries.extend_from_slice(&name.to_le_bytes());
            count += 1;
            if count == ENTRIES_PER_BLOCK {
                self.table(kind::THREADS, count, THREAD_ENTRY_BYTES, &mut entries)?;
                count = 0;
            }
        }
        if count > 0 {
            self.table(kind::THREADS, count, THREAD_ENTRY_BYTES, &mut entries)?;
        }
        Ok(())
    }

    /// Writes one chunk block. Static string words must already be string indices (the writer
    /// stores `word as u32` for each). A record that does not decode is an error.
    pub fn chunk(&mut self, tid: u32, seq: u64, records: &[Record]) -> io::Result<()> {
        let len = BLOCK_HEADER_BYTES + phosphor_format::file::EXTENTS_BYTES + records.len() * 32;
        self.scratch.resize(len, 0);
        let n = raw::chunk_block(&mut self.scratch, tid, seq, records, |addr, _| addr as u32).map_err(
            |e| match e {
                ChunkBlockError::NoRoom => too_long("chunk block"),
                ChunkBlockError::Decode(i, e) => {
                    io::Error::new(io::ErrorKind::InvalidInput, format!("record {i}: {e}"))
                }
            },
        )?;
        self.recorded += phosphor_format::count_events(records);
        self.block(n)
    }

    /// Writes the trailer (its `recorded` is the events written, unless `trailer` says more) and
    /// flushes; returns the output.
    pub fn finish(mut self, trailer: Trailer) -> io::Result<W> {
        let trailer = Trailer { recorded: trailer.recorded.max(self.recorded), ..trailer };
        self.scratch.resize(256, 0);
        let n = raw::trailer_block(&mut self.scratch, &trailer).ok_or_else(|| too_long("trailer"))?;
        self.block(n)?;
        self.out.flush()?;
        Ok(self.out)
    }

    /// A table block: count, entry size, entries (`docs/FORMAT.md`, callsites and threads).
    fn table(&mut self, kind: u32, count: usize, size: u32, entries: &mut Vec<u8>) -> io::Result<()> {
        let body = 8 + entries.len();
        if body > MAX_BLOCK_BYTES as usize {
            return Err(too_long("table block"));
        }
        self.scratch.clear();
        for w in [kind, body as u32, count as u32, size] {
            self.scratch.extend_from_slice(&w.to_le_bytes());
        }
        self.scratch.append(entries);
        let n = self.scratch.len();
        self.block(n)
    }

    fn block(&mut self, n: usize) -> io::Result<()> {
        self.out.write_all(&self.scratch[..n])?;
        self.written += n as u64;
        Ok(())
    }
}

fn too_long(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("{what} longer than the format allows"))
}

/// One writer stream's events, cut into chunks of at most `capacity` records (an event is never
/// split): the recorder's 127 by default, 1 for a file of tiny chunks, up to a 64 MiB block.
#[derive(Debug)]
pub struct ChunkStream {
    tid: u32,
    seq: u64,
    capacity: usize,
    records: Vec<Record>,
}

impl ChunkStream {
    /// A stream of thread `tid` (writer stream 0), chunks of the recorder's size.
    pub fn new(tid: u32) -> ChunkStream {
        ChunkStream::with_capacity(tid, CHUNK_RECORDS)
    }

    /// A stream whose chunks hold up to `capacity` records.
    pub fn with_capacity(tid: u32, capacity: usize) -> ChunkStream {
        ChunkStream { tid, seq: 0, capacity: capacity.max(1), records: Vec::new() }
    }

    /// The next chunk's sequence number.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Skips `n` sequence numbers (chunks a ring buffer overwrote, as readers count them).
    pub fn skip(&mut self, n: u64) {
        self.seq = self.seq.saturating_add(n);
    }

    /// Appends one event (its record and continuation records), closing the chunk first if the
    /// event does not fit.
    pub fn push<W: Write>(&mut self, w: &mut TraceWriter<W>, event: &[Record]) -> io::Result<()> {
        if !self.records.is_empty() && self.records.len() + event.len() > self.capacity {
            self.flush(w)?;
        }
        self.records.extend_from_slice(event);
        Ok(())
    }

    /// Writes the records pushed since the last chunk, if any, as a chunk.
    pub fn flush<W: Write>(&mut self, w: &mut TraceWriter<W>) -> io::Result<()> {
        if self.records.is_empty() {
            return Ok(());
        }
        w.chunk(self.tid, self.seq, &self.records)?;
        self.records.clear();
        self.seq += 1;
        Ok(())
    }
}

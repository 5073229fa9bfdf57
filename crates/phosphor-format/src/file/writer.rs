//! [`Writer`]: writes a trace file block by block, so it can be driven incrementally.
//!
//! The writer keeps only the string interner and one block's bytes. Strings interned since the
//! last block are flushed as a string block just before the next block that may refer to them, so
//! every reference points backwards and a reader never waits for a later block.
//!
//! A writer made with [`Writer::with_compression`] (format 1.7) gathers the framed blocks after the
//! header into a group of about 256 KiB and writes each group as one compressed block (see
//! `compress.rs`); [`Writer::flush`] and [`Writer::finish`] write the group so far, so a flushed
//! file is whole up to its last block. The trailer stays plain.

use std::collections::HashMap;
use std::io::Write;

use super::chunk::{encode_chunk, EXTENTS_BYTES};
use super::compress::{Compression, GroupEncoder, GROUP_BYTES, MAX_GROUP_BYTES};
use super::error::{Error, ErrorKind};
use super::header::{kind, Header, Trailer, MAX_BLOCK_BYTES};
use super::tables::{CallsiteInfo, CALLSITE_ENTRY_BYTES, THREAD_ENTRY_BYTES};
use crate::record::RECORD_SIZE;
use crate::Record;

/// Entries per table block, so blocks stay far below [`MAX_BLOCK_BYTES`].
const ENTRIES_PER_BLOCK: usize = 4096;
/// Pending string bytes that trigger a string block.
const STRING_BLOCK_BYTES: usize = 1 << 20;

/// Writes a trace file to any [`Write`]. Wrap files in a `BufWriter`.
///
/// ```
/// use phosphor_format::file::{ClockInfo, Header, Reader, Trailer, Writer};
///
/// let header = Header {
///     clock: ClockInfo::monotonic(0, 0),
///     pid: 1,
///     process_name: "example".into(),
///     boot_id: None,
///     host_name: None,
/// };
/// let w = Writer::new(Vec::new(), &header).unwrap();
/// let bytes = w.finish(&Trailer::default()).unwrap();
/// let mut r = Reader::new(&bytes[..]).unwrap();
/// assert_eq!(r.header().process_name, "example");
/// assert!(r.next_chunk().unwrap().is_none());
/// assert_eq!(r.trailer(), Some(&Trailer::default()));
/// ```
#[derive(Debug)]
pub struct Writer<W: Write> {
    out: W,
    offset: u64,
    strings: HashMap<String, u32>,
    statics: HashMap<(u64, usize), u32>,
    next_string: u32,
    pending: Vec<u8>,
    pending_count: u32,
    block: Vec<u8>,
    chunk: Vec<u8>,
    /// With compression: the codec, the framed blocks of the group being gathered, and the
    /// group block's body.
    group: Option<Box<Group>>,
}

#[derive(Debug)]
struct Group {
    encoder: GroupEncoder,
    blocks: Vec<u8>,
    packed: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// Writes the preamble and the header block.
    pub fn new(out: W, header: &Header) -> Result<Writer<W>, Error> {
        let mut w = Writer {
            out,
            offset: 0,
            strings: HashMap::new(),
            statics: HashMap::new(),
            next_string: 0,
            pending: Vec::new(),
            pending_count: 0,
            block: Vec::new(),
            chunk: Vec::new(),
            group: None,
        };
        w.write_raw(&super::raw::preamble())?;
        header.encode(&mut w.block);
        w.write_block(kind::HEADER)?;
        Ok(w)
    }

    /// Writes the preamble and the header block; later blocks are compressed with `compression`
    /// (format 1.7), in groups of about 256 KiB written when full, at [`Writer::flush`] and at
    /// [`Writer::finish`]. [`Compression::None`] writes what [`Writer::new`] writes. A zstd level
    /// outside -7 to 22 is an error.
    pub fn with_compression(out: W, header: &Header, compression: Compression) -> Result<Writer<W>, Error> {
        let encoder = GroupEncoder::new(compression)?;
        let mut w = Writer::new(out, header)?;
        w.group = encoder.map(|encoder| Box::new(Group { encoder, blocks: Vec::new(), packed: Vec::new() }));
        Ok(w)
    }

    /// Bytes written to the output so far (with compression, blocks gathered into a group that is
    /// not written yet are not counted).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The string table index of `s`, adding it if it is new. New strings are written before the
    /// next block.
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.next_string;
        self.next_string += 1;
        // Strings longer than 4 GiB cannot be framed; keep a valid prefix.
        let mut end = s.len().min(u32::MAX as usize);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        super::bytes::put_str(&mut self.pending, &s[..end]);
        self.pending_count += 1;
        self.strings.insert(s.to_owned(), i);
        i
    }

    /// Defines callsites. Ids must be at least [`FIRST_CALLSITE_ID`](crate::FIRST_CALLSITE_ID).
    /// Their strings may be of any type that reads as a `str`: `String`, `&str`, or the
    /// [`TableStr`](super::TableStr)s of callsites a [`Reader`](super::Reader) lends.
    pub fn write_callsites<'c, S: AsRef<str> + 'c>(
        &mut self,
        callsites: impl IntoIterator<Item = &'c CallsiteInfo<S>>,
    ) -> Result<(), Error> {
        let mut entries = Vec::new();
        let mut count = 0u32;
        for c in callsites {
            if c.id < crate::FIRST_CALLSITE_ID {
                return Err(Error::malformed(
                    "callsite block",
                    format!("callsite id {} is reserved", c.id),
                    self.offset,
                ));
            }
            let strings = [&c.category, &c.name, &c.arg_names[0], &c.arg_names[1], &c.file]
                .map(|s| self.intern(s.as_ref()));
            let raw = super::tables::RawCallsite {
                id: c.id,
                phase: c.phase,
                level: c.level,
                dynamic_name: c.dynamic_name,
                flow: c.flow,
                line: c.line,
                strings,
                name_hash: c.name_hash,
            };
            entries.extend_from_slice(&raw.encode());
            count += 1;
            if count as usize == ENTRIES_PER_BLOCK {
                self.table_block(kind::CALLSITES, count, CALLSITE_ENTRY_BYTES, &mut entries)?;
                count = 0;
            }
        }
        if count > 0 {
            self.table_block(kind::CALLSITES, count, CALLSITE_ENTRY_BYTES, &mut entries)?;
        }
        Ok(())
    }

    /// Writes snapshots of aggregate points (format 1.2). Their callsites must be written first.
    pub fn write_aggregates(&mut self, aggregates: &[super::aggregates::Aggregate]) -> Result<(), Error> {
        if aggregates.is_empty() {
            return Ok(());
        }
        self.flush_strings()?;
        self.block.clear();
        super::aggregates::encode(aggregates, &mut self.block);
        self.write_block(kind::AGGREGATES)
    }

    /// Names threads.
    pub fn write_thread_names<'t>(
        &mut self,
        threads: impl IntoIterator<Item = (u32, &'t str)>,
    ) -> Result<(), Error> {
        let mut entries = Vec::new();
        let mut count = 0u32;
        for (tid, name) in threads {
            entries.extend_from_slice(&tid.to_le_bytes());
            let i = self.intern(name);
            entries.extend_from_slice(&i.to_le_bytes());
            count += 1;
            if count as usize == ENTRIES_PER_BLOCK {
                self.table_block(kind::THREADS, count, THREAD_ENTRY_BYTES, &mut entries)?;
                count = 0;
            }
        }
        if count > 0 {
            self.table_block(kind::THREADS, count, THREAD_ENTRY_BYTES, &mut entries)?;
        }
        Ok(())
    }

    /// Writes one chunk of thread `tid` with sequence number `seq`. Static string arguments are
    /// resolved once per distinct `(address, length)` with `resolve` and stored as string table
    /// indices. A record that does not decode is an error, and nothing is written.
    pub fn write_chunk<'s>(
        &mut self,
        tid: u32,
        seq: u64,
        records: &[Record],
        mut resolve: impl FnMut(u64, usize) -> &'s str,
    ) -> Result<(), Error> {
        let max = (MAX_BLOCK_BYTES as usize - EXTENTS_BYTES) / RECORD_SIZE;
        if records.len() > max {
            return Err(Error::malformed(
                "chunk block",
                format!("{} records (at most {max})", records.len()),
                self.offset,
            ));
        }
        // Encoded into its own buffer: the string block that may precede it uses `self.block`.
        let mut chunk = std::mem::take(&mut self.chunk);
        chunk.clear();
        let mut statics = std::mem::take(&mut self.statics);
        let encoded = encode_chunk(tid, seq, records, &mut chunk, |addr, len| {
            *statics.entry((addr, len)).or_insert_with(|| self.intern(resolve(addr, len)))
        });
        self.statics = statics;
        if let Err((index, e)) = encoded {
            self.chunk = chunk;
            // The records are in memory: name the offset the chunk's record would have had.
            let at = self.offset
                + (super::header::BLOCK_HEADER_BYTES + EXTENTS_BYTES + index * RECORD_SIZE) as u64;
            return Err(Error::new(ErrorKind::Decode(e), at));
        }
        self.flush_strings()?;
        let r = self.write_framed(kind::CHUNK, &chunk);
        self.chunk = chunk;
        r
    }

    /// Writes a system block (format 1.6): context switches, samples, mappings, heap totals. A
    /// batch past one block's caps ([`MAX_SYSTEM_ENTRIES`](super::MAX_SYSTEM_ENTRIES) of a kind,
    /// [`MAX_SYSTEM_FRAMES`](super::MAX_SYSTEM_FRAMES)) is written as several blocks, its status
    /// in the last. An empty batch writes nothing; a field over its cap (more than
    /// [`MAX_FRAMES`](crate::system::MAX_FRAMES) frames, a path or build id too long) is an error,
    /// and nothing is written.
    pub fn write_system(&mut self, batch: &crate::system::SystemBatch) -> Result<(), Error> {
        if batch.is_empty() {
            return Ok(());
        }
        super::system_block::check(batch).map_err(|e| Error::malformed("system block", e, self.offset))?;
        self.flush_strings()?;
        super::system_block::split(batch, |piece| {
            self.block.clear();
            super::system_block::encode(piece, &mut self.block);
            self.write_block(kind::SYSTEM)
        })
    }

    /// Flushes the output: everything written so far is a valid (trailer-less) trace file, which a
    /// reader reads to its last block. Strings interned since the last block wait for the block
    /// that uses them.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.write_group()?;
        self.out.flush().map_err(|e| Error::io(e, self.offset))
    }

    /// Writes the trailer and flushes; returns the output.
    pub fn finish(mut self, trailer: &Trailer) -> Result<W, Error> {
        self.flush_strings()?;
        self.write_group()?;
        trailer.encode(&mut self.block);
        self.write_block(kind::TRAILER)?;
        self.out.flush().map_err(|e| Error::io(e, self.offset))?;
        Ok(self.out)
    }

    fn table_block(
        &mut self,
        kind: u32,
        count: u32,
        size: usize,
        entries: &mut Vec<u8>,
    ) -> Result<(), Error> {
        self.flush_strings()?;
        self.block.clear();
        self.block.extend_from_slice(&count.to_le_bytes());
        self.block.extend_from_slice(&(size as u32).to_le_bytes());
        self.block.append(entries);
        self.write_block(kind)
    }

    /// Writes the strings interned since the last string block.
    fn flush_strings(&mut self) -> Result<(), Error> {
        if self.pending_count == 0 {
            return Ok(());
        }
        let mut pending = std::mem::take(&mut self.pending);
        let mut start = 0;
        let mut count = 0u32;
        let mut at = 0;
        // Split into blocks of about STRING_BLOCK_BYTES, on string boundaries.
        while at < pending.len() {
            let len = u32::from_le_bytes(pending[at..at + 4].try_into().expect("4 bytes")) as usize;
            at += 4 + len;
            count += 1;
            if at - start >= STRING_BLOCK_BYTES || at == pending.len() {
                let mut block = std::mem::take(&mut self.block);
                block.clear();
                block.extend_from_slice(&count.to_le_bytes());
                block.extend_from_slice(&pending[start..at]);
                self.block = block;
                self.write_block(kind::STRINGS)?;
                start = at;
                count = 0;
            }
        }
        pending.clear();
        self.pending = pending;
        self.pending_count = 0;
        Ok(())
    }

    /// Frames and writes `self.block`, then clears it.
    fn write_block(&mut self, kind: u32) -> Result<(), Error> {
        let block = std::mem::take(&mut self.block);
        let r = self.write_framed(kind, &block);
        self.block = block;
        self.block.clear();
        r
    }

    /// Writes a block's framing and body, or with compression adds them to the group (the header
    /// and the trailer, and a block too long for a group, are written plain).
    fn write_framed(&mut self, kind: u32, body: &[u8]) -> Result<(), Error> {
        let len = u32::try_from(body.len()).ok().filter(|&l| l <= MAX_BLOCK_BYTES).ok_or_else(|| {
            Error::malformed(kind::name(kind), format!("{} bytes is too long", body.len()), self.offset)
        })?;
        let mut head = [0u8; 8];
        head[..4].copy_from_slice(&kind.to_le_bytes());
        head[4..].copy_from_slice(&len.to_le_bytes());
        let framed = head.len() + body.len();
        if let Some(g) = &mut self.group {
            if kind != kind::HEADER && kind != kind::TRAILER && framed <= MAX_GROUP_BYTES as usize {
                if !g.blocks.is_empty() && g.blocks.len() + framed > GROUP_BYTES {
                    self.write_group()?;
                }
                let g = self.group.as_mut().expect("compressing");
                g.blocks.extend_from_slice(&head);
                g.blocks.extend_from_slice(body);
                if g.blocks.len() >= GROUP_BYTES {
                    self.write_group()?;
                }
                return Ok(());
            }
            // Out of order with the group otherwise.
            self.write_group()?;
        }
        self.write_raw(&head)?;
        self.write_raw(body)
    }

    /// Compresses and writes the group gathered so far, if any.
    fn write_group(&mut self) -> Result<(), Error> {
        let Some(mut g) = self.group.take() else { return Ok(()) };
        let r = if g.blocks.is_empty() {
            Ok(())
        } else {
            let Group { encoder, blocks, packed } = &mut *g;
            packed.clear();
            let r = encoder.encode(blocks, packed, self.offset).and_then(|()| {
                let len = packed.len() as u32;
                let mut head = [0u8; 8];
                head[..4].copy_from_slice(&kind::COMPRESSED.to_le_bytes());
                head[4..].copy_from_slice(&len.to_le_bytes());
                self.write_raw(&head)?;
                self.write_raw(packed)
            });
            blocks.clear();
            r
        };
        self.group = Some(g);
        r
    }

    fn write_raw(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.out.write_all(bytes).map_err(|e| Error::io(e, self.offset))?;
        self.offset += bytes.len() as u64;
        Ok(())
    }
}

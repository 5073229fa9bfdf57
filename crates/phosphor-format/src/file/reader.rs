//! [`Reader`]: reads a trace file of any size in constant memory, one block at a time.
//!
//! The reader holds the tables (strings, callsites, thread names: metadata, small next to the
//! events) and the current block's bytes. It keeps each string once and the entries that name it
//! by index (see [`StringTable`]), so the tables cost about what their blocks took in the file,
//! however often a long string is named. A chunk is read into a reusable buffer and lent out as a
//! [`Chunk`] until the next call. Every length read from the file is checked before use, and no
//! buffer is sized from a length field before the bytes have arrived, so a corrupt length cannot
//! make the reader allocate more than the file holds (and never more than
//! [`MAX_BLOCK_BYTES`]).
//!
//! # Truncation
//!
//! A file that ends early yields every complete block, then an [`ErrorKind::Truncated`] error whose
//! offset is the start of the first block that is not complete (where a resumed reader or a
//! `recover` tool would start). A file that ends cleanly between blocks but has no trailer is
//! truncated too: the trailer is what says the file is whole.
//!
//! # Compressed groups (format 1.7)
//!
//! A compressed group is decoded whole (at most [`MAX_GROUP_BYTES`](super::MAX_GROUP_BYTES)) and
//! its blocks are then lent one by one like plain ones, so memory is one decoded group and one
//! block. A chunk inside a group has a virtual offset (see
//! [`VIRTUAL_OFFSET`](super::VIRTUAL_OFFSET)) that [`Reader::chunk_at`] takes back, and an error
//! inside a group names the group's file offset and the offset in its decoded bytes
//! ([`Error::decoded_offset`]). A file cut inside a group loses that group: the
//! [`ErrorKind::Truncated`] error names the group's start.

use std::io::{Read, Seek, SeekFrom};

use super::chunk::{Chunk, Extents};
use super::compress::{split_virtual, virtual_offset, Compression, GroupDecoder, MAX_GROUP_OFFSET};
use super::error::{Error, ErrorKind};
use super::header::{
    kind, Header, Trailer, BLOCK_HEADER_BYTES, FORMAT_MAJOR, MAGIC, MAX_BLOCK_BYTES, PREAMBLE_BYTES,
};
use super::strings::{StringTable, TableStr};
use super::tables::{Callsite, Tables};
use crate::record::RECORD_SIZE;
use crate::Record;

/// A block buffer longer than this is freed once its block is read.
const KEEP_BODY_BYTES: usize = 1 << 20;

/// One block, as [`Reader::next_block`] returns it.
#[derive(Debug)]
#[non_exhaustive]
pub enum Block<'a> {
    /// Strings appended to the string table: indices `first..first + count`.
    Strings {
        /// Index of the first string added.
        first: u32,
        /// Strings added.
        count: u32,
    },
    /// Callsites defined.
    Callsites {
        /// Callsites defined by this block.
        count: u32,
    },
    /// Thread names defined.
    Threads {
        /// Names defined by this block.
        count: u32,
    },
    /// A chunk of records.
    Chunk(Chunk<'a>),
    /// Aggregate snapshots (format 1.2), appended to [`Reader::aggregates`].
    Aggregates {
        /// Snapshots in this block.
        count: u32,
    },
    /// System context (format 1.6): one block's switches, samples, mappings and heap totals. A
    /// trace's system context is the union of its system blocks; [`Reader::system_status`] keeps
    /// the last status seen.
    System(&'a crate::system::SystemBatch),
    /// The trailer; the file ends here.
    Trailer(&'a Trailer),
    /// A block of a kind this reader does not know, skipped.
    Unknown {
        /// Its kind.
        kind: u32,
        /// Its body length.
        len: u32,
    },
}

/// What [`Reader::read_block`] found, before it is lent out.
enum Found {
    Strings { first: u32, count: u32 },
    Callsites(u32),
    Threads(u32),
    Chunk { extents: Extents, offset: u64 },
    Aggregates(u32),
    System,
    Trailer,
    Unknown { kind: u32, len: u32 },
}

/// Reads a trace file from any [`Read`]. Wrap files in a `BufReader`.
///
/// After an error the reader is finished: later calls return `Ok(None)`.
#[derive(Debug)]
pub struct Reader<R: Read> {
    /// The input; with read-ahead on, the read-ahead thread's until it ends.
    input: Option<R>,
    ahead: Option<super::ahead::Ahead<R>>,
    /// Read-ahead asked for and not started yet: it starts at the first compressed group.
    start_ahead: Option<fn(R, u64) -> super::ahead::Ahead<R>>,
    offset: u64,
    version: (u16, u16),
    header: Header,
    tables: Tables,
    trailer: Option<Trailer>,
    aggregates: Vec<super::aggregates::Aggregate>,
    system: crate::system::SystemBatch,
    system_status: Option<crate::system::SystemStatus>,
    body: Vec<u8>,
    records: Vec<Record>,
    done: bool,
    /// The decoded bytes of the compressed group at file offset `group_at` (format 1.7), of which
    /// the blocks from `group_pos` on are still to read. Kept once read, for `chunk_at`.
    group: Vec<u8>,
    group_pos: usize,
    group_at: Option<u64>,
    decoder: GroupDecoder,
    decoded_bytes: u64,
    codecs: Vec<Compression>,
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
pub(super) fn read_full(input: &mut impl Read, buf: &mut [u8], offset: u64) -> Result<usize, Error> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(e, offset + n as u64)),
        }
    }
    Ok(n)
}

impl<R: Read> Reader<R> {
    /// Reads the preamble and the header block.
    pub fn new(mut input: R) -> Result<Reader<R>, Error> {
        let mut pre = [0u8; PREAMBLE_BYTES];
        let n = read_full(&mut input, &mut pre, 0)?;
        if n < PREAMBLE_BYTES {
            let m = n.min(MAGIC.len());
            if pre[..m] != MAGIC[..m] {
                return Err(Error::new(ErrorKind::BadMagic, 0));
            }
            let kind =
                ErrorKind::Truncated { what: "preamble", needed: PREAMBLE_BYTES as u64, available: n as u64 };
            return Err(Error::new(kind, 0));
        }
        if pre[..8] != MAGIC {
            return Err(Error::new(ErrorKind::BadMagic, 0));
        }
        let major = u16::from_le_bytes([pre[8], pre[9]]);
        let minor = u16::from_le_bytes([pre[10], pre[11]]);
        if major != FORMAT_MAJOR {
            return Err(Error::new(
                ErrorKind::UnsupportedVersion { major, minor, supported: FORMAT_MAJOR },
                8,
            ));
        }
        let mut r = Reader {
            input: Some(input),
            ahead: None,
            start_ahead: None,
            offset: PREAMBLE_BYTES as u64,
            version: (major, minor),
            header: Header {
                clock: crate::clock::ClockInfo::monotonic(0, 0),
                pid: 0,
                process_name: String::new(),
                boot_id: None,
                host_name: None,
            },
            tables: Tables::default(),
            trailer: None,
            aggregates: Vec::new(),
            system: crate::system::SystemBatch::default(),
            system_status: None,
            body: Vec::new(),
            records: Vec::new(),
            done: false,
            group: Vec::new(),
            group_pos: 0,
            group_at: None,
            decoder: GroupDecoder::default(),
            decoded_bytes: 0,
            codecs: Vec::new(),
        };
        let start = r.offset;
        let kind = r.read_frame()?;
        if kind != kind::HEADER {
            return Err(Error::new(ErrorKind::MissingHeader { found: kind }, start));
        }
        r.header = Header::decode(&r.body, start + BLOCK_HEADER_BYTES as u64)?;
        r.decoded_bytes = r.offset;
        Ok(r)
    }

    /// The header block.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The file's `(major, minor)` format version.
    pub fn version(&self) -> (u16, u16) {
        self.version
    }

    /// Where the next block starts: where a resumed reader would start. While the blocks of a
    /// compressed group (format 1.7) are being read, the group's start, which must be read again
    /// whole; [`Reader::stored_bytes`] is then past it.
    pub fn offset(&self) -> u64 {
        match self.group_at {
            Some(at) if self.group_pos < self.group.len() => at,
            _ => self.offset,
        }
    }

    /// Bytes of the file read so far: [`Reader::offset`], or past the compressed group being
    /// read.
    pub fn stored_bytes(&self) -> u64 {
        self.offset
    }

    /// What the bytes read so far decode to: the stored bytes, with each compressed group counted
    /// as the blocks it holds (the size of the same file written plain). `decoded_bytes() /
    /// stored_bytes()` is the compression ratio.
    pub fn decoded_bytes(&self) -> u64 {
        self.decoded_bytes
    }

    /// The codecs of the compressed groups read so far (format 1.7), each once, in the order first
    /// seen; empty for a plain file. A zstd group records its level.
    pub fn codecs(&self) -> &[Compression] {
        &self.codecs
    }

    /// The trailer, once it was read.
    pub fn trailer(&self) -> Option<&Trailer> {
        self.trailer.as_ref()
    }

    /// The callsite with `id`, if a block read so far defined it.
    pub fn callsite(&self, id: u32) -> Option<Callsite<'_>> {
        self.tables.callsite(id)
    }

    /// Every callsite defined so far, in the order first defined.
    pub fn callsites(&self) -> impl ExactSizeIterator<Item = Callsite<'_>> + '_ {
        self.tables.callsites()
    }

    /// The name of thread `tid`, if a block read so far named it.
    pub fn thread_name(&self, tid: u32) -> Option<TableStr<'_>> {
        self.tables.thread_name(tid)
    }

    /// Every thread name read so far, in no particular order.
    pub fn thread_names(&self) -> impl ExactSizeIterator<Item = (u32, TableStr<'_>)> + '_ {
        self.tables.thread_names()
    }

    /// Every aggregate snapshot read so far (aggregates blocks usually come just before the
    /// trailer).
    pub fn aggregates(&self) -> &[super::aggregates::Aggregate] {
        &self.aggregates
    }

    /// The last system status a system block gave (format 1.6; `None` before any, and in older
    /// files).
    pub fn system_status(&self) -> Option<&crate::system::SystemStatus> {
        self.system_status.as_ref()
    }

    /// The callsites and strings read so far, to decode [`HeldEvents`](super::HeldEvents)
    /// against.
    pub fn tables(&self) -> super::TableSet<'_> {
        super::TableSet(&self.tables)
    }

    /// The string table read so far: each string once, however many entries name it.
    pub fn strings(&self) -> &StringTable {
        &self.tables.strings
    }

    /// Reads the next block. `Ok(None)` after the trailer (or after an error).
    pub fn next_block(&mut self) -> Result<Option<Block<'_>>, Error> {
        let Some(found) = self.read_block()? else { return Ok(None) };
        Ok(Some(match found {
            Found::Strings { first, count } => Block::Strings { first, count },
            Found::Callsites(count) => Block::Callsites { count },
            Found::Threads(count) => Block::Threads { count },
            Found::Aggregates(count) => Block::Aggregates { count },
            Found::Chunk { extents, offset } => Block::Chunk(self.chunk(extents, offset)),
            Found::System => Block::System(&self.system),
            Found::Trailer => Block::Trailer(self.trailer.as_ref().expect("just read")),
            Found::Unknown { kind, len } => Block::Unknown { kind, len },
        }))
    }

    /// Reads blocks up to the next chunk, taking in the tables on the way. `Ok(None)` after the
    /// trailer.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk<'_>>, Error> {
        loop {
            match self.read_block()? {
                None => return Ok(None),
                Some(Found::Chunk { extents, offset }) => return Ok(Some(self.chunk(extents, offset))),
                Some(_) => {}
            }
        }
    }

    /// Calls `f` with every event of the rest of the file, in file order; stops at the first error.
    pub fn for_each_event(&mut self, mut f: impl FnMut(&super::event::Event<'_>)) -> Result<(), Error> {
        while let Some(chunk) = self.next_chunk()? {
            for e in chunk.events() {
                f(&e?);
            }
        }
        Ok(())
    }

    fn chunk(&self, extents: Extents, offset: u64) -> Chunk<'_> {
        Chunk { extents, offset, records: &self.records, tables: &self.tables, stored_end: self.offset }
    }

    fn read_block(&mut self) -> Result<Option<Found>, Error> {
        if self.done {
            return Ok(None);
        }
        let r = self.read_block_inner();
        if !matches!(r, Ok(Some(_))) {
            self.done = true;
        }
        // The block has been taken in (a chunk's records are copied out): a long one's buffer is
        // not kept for the small ones that usually follow, such as 60 MiB of strings before
        // chunks of 4 KiB.
        if self.body.capacity() > KEEP_BODY_BYTES {
            self.body = Vec::new();
        }
        r
    }

    fn read_block_inner(&mut self) -> Result<Option<Found>, Error> {
        loop {
            if self.group_at.is_some() && self.group_pos < self.group.len() {
                let (kind, start) = self.next_in_group()?;
                if matches!(kind, kind::HEADER | kind::TRAILER | kind::COMPRESSED) {
                    return Err(Error::malformed(kind::name(kind), "inside a compressed group", start));
                }
                return self.take_block(kind, start).map(Some);
            }
            let start = self.offset;
            if self.trailer.is_some() {
                if let Some(ahead) = &mut self.ahead {
                    // The read-ahead thread checked what follows the trailer.
                    return ahead.after_trailer().map(|()| None);
                }
                let mut one = [0u8; 1];
                let input = self.input.as_mut().expect("the input is the reader's unless it reads ahead");
                if read_full(input, &mut one, start)? == 0 {
                    return Ok(None);
                }
                return Err(Error::new(ErrorKind::TrailingData, start));
            }
            let kind = self.read_frame()?;
            if kind == kind::COMPRESSED {
                if self.ahead.is_none() {
                    self.open_group(start)?;
                    if let Some(start_ahead) = self.start_ahead.take() {
                        // The rest of the file, from the block after this group, on a thread.
                        let input =
                            self.input.take().expect("the input is the reader's until it reads ahead");
                        self.ahead = Some(start_ahead(input, self.offset));
                    }
                }
                continue;
            }
            self.decoded_bytes += self.offset - start;
            return self.take_block(kind, start).map(Some);
        }
    }

    /// Decodes the compressed group block in `self.body` (the block at file offset `start`) into
    /// `self.group`, to be read from its start.
    fn open_group(&mut self, start: u64) -> Result<(), Error> {
        self.group_at = None;
        if start > MAX_GROUP_OFFSET {
            return Err(Error::malformed(
                "compressed group",
                format!("starts past byte {MAX_GROUP_OFFSET}, beyond what a chunk offset can address"),
                start,
            ));
        }
        let codec = self.decoder.decode(&self.body, start + BLOCK_HEADER_BYTES as u64, &mut self.group)?;
        if !self.codecs.contains(&codec) {
            self.codecs.push(codec);
        }
        self.decoded_bytes += self.group.len() as u64;
        self.group_at = Some(start);
        self.group_pos = 0;
        Ok(())
    }

    /// Copies the next block of the current group into `self.body`; returns its kind and the
    /// virtual offset of its framing.
    fn next_in_group(&mut self) -> Result<(u32, u64), Error> {
        let group = self.group_at.expect("in a group");
        let pos = self.group_pos;
        let start = virtual_offset(group, pos as u64);
        let rest = &self.group[pos..];
        if rest.len() < BLOCK_HEADER_BYTES {
            return Err(Error::malformed(
                "compressed group",
                format!("ends {} bytes into a block header", rest.len()),
                start,
            ));
        }
        let kind = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(rest[4..8].try_into().expect("4 bytes")) as usize;
        let body = &rest[BLOCK_HEADER_BYTES..];
        if len > body.len() {
            return Err(Error::malformed(
                "compressed group",
                format!("ends inside a {} of {len} bytes ({} present)", kind::name(kind), body.len()),
                start,
            ));
        }
        self.body.clear();
        self.body.extend_from_slice(&body[..len]);
        self.group_pos = pos + BLOCK_HEADER_BYTES + len;
        Ok((kind, start))
    }

    /// Takes in the block of kind `kind` whose body is in `self.body` and whose framing is at
    /// (file or virtual) offset `start`.
    fn take_block(&mut self, kind: u32, start: u64) -> Result<Found, Error> {
        let base = start + BLOCK_HEADER_BYTES as u64;
        let found = match kind {
            kind::STRINGS => {
                let first = self.tables.strings.len() as u32;
                let count = self.tables.read_strings(&self.body, base)?;
                Found::Strings { first, count }
            }
            kind::CALLSITES => Found::Callsites(self.tables.read_callsites(&self.body, base)?),
            kind::THREADS => Found::Threads(self.tables.read_threads(&self.body, base)?),
            kind::CHUNK => Found::Chunk { extents: self.take_chunk(base)?, offset: start },
            kind::AGGREGATES => Found::Aggregates(super::aggregates::decode(
                &self.body,
                base,
                &self.tables,
                &mut self.aggregates,
            )?),
            kind::SYSTEM => {
                super::system_block::decode(&self.body, base, &mut self.system)?;
                if let Some(s) = &self.system.status {
                    self.system_status = Some(s.clone());
                }
                Found::System
            }
            kind::TRAILER => {
                self.trailer = Some(Trailer::decode(&self.body, base)?);
                Found::Trailer
            }
            kind::HEADER => return Err(Error::malformed("header block", "a second header block", start)),
            k if k & kind::CRITICAL != 0 => {
                return Err(Error::new(ErrorKind::UnknownCriticalBlock { kind: k }, start))
            }
            k => Found::Unknown { kind: k, len: self.body.len() as u32 },
        };
        Ok(found)
    }

    /// The extents of the chunk block in `self.body` (its body at file offset `base`), its records
    /// copied into `self.records`.
    fn take_chunk(&mut self, base: u64) -> Result<Extents, Error> {
        let extents = Extents::decode(&self.body, base)?;
        let recs = &self.body[super::chunk::EXTENTS_BYTES..];
        self.records.clear();
        self.records.extend(
            recs.chunks_exact(RECORD_SIZE)
                .map(|b| Record::from_bytes(b.try_into().expect("chunks_exact gives RECORD_SIZE bytes"))),
        );
        Ok(extents)
    }

    /// Reads one block's framing and body into `self.body`; returns its kind and advances the
    /// offset past it. With read-ahead on, the block (a compressed group decoded already) comes
    /// from the read-ahead thread.
    fn read_frame(&mut self) -> Result<u32, Error> {
        if let Some(ahead) = &mut self.ahead {
            let frame = ahead.next()?;
            self.offset = frame.end;
            if frame.kind == kind::COMPRESSED {
                let codec = frame.codec.expect("a decoded group says its codec");
                if !self.codecs.contains(&codec) {
                    self.codecs.push(codec);
                }
                self.decoded_bytes += frame.bytes.len() as u64;
                ahead.recycle(std::mem::replace(&mut self.group, frame.bytes));
                self.group_at = Some(frame.start);
                self.group_pos = 0;
            } else {
                ahead.recycle(std::mem::replace(&mut self.body, frame.bytes));
            }
            return Ok(frame.kind);
        }
        let input = self.input.as_mut().expect("the input is the reader's unless it reads ahead");
        let (kind, end) = read_frame(input, self.offset, &mut self.body)?;
        self.offset = end;
        Ok(kind)
    }
}

/// Reads up to `len` bytes into `body`; returns how many arrived. The buffer grows by at most the
/// bytes already read (64 KiB to start), never by the length field alone, so a corrupt length
/// costs no more than the bytes that follow it; and it ends no larger than the block, so a long
/// block costs its length once, not the double that growth by doubling may.
fn read_body(input: &mut impl Read, body: &mut Vec<u8>, len: usize, base: u64) -> Result<usize, Error> {
    body.clear();
    let mut got = 0;
    while got < len {
        let want = (len - got).min(got.max(64 << 10));
        body.reserve_exact(want);
        // Into the room just made: `read_to_end` grows the buffer only past what `take` lets
        // through, which is `want`.
        let n = input.take(want as u64).read_to_end(body).map_err(|e| Error::io(e, base + got as u64))?;
        got += n;
        if n < want {
            break;
        }
    }
    Ok(got)
}

/// Reads the block at file offset `start`, its body into `body`; returns its kind and the offset
/// past it.
pub(super) fn read_frame(input: &mut impl Read, start: u64, body: &mut Vec<u8>) -> Result<(u32, u64), Error> {
    let (kind, len) = read_head(input, start)?;
    read_frame_body(input, start, kind, len, body).map(|end| (kind, end))
}

/// Reads the framing of the block at file offset `start`: its kind and body length (checked).
pub(super) fn read_head(input: &mut impl Read, start: u64) -> Result<(u32, u32), Error> {
    let mut head = [0u8; BLOCK_HEADER_BYTES];
    let n = read_full(input, &mut head, start)?;
    if n < BLOCK_HEADER_BYTES {
        let kind = ErrorKind::Truncated {
            what: "block header",
            needed: BLOCK_HEADER_BYTES as u64,
            available: n as u64,
        };
        return Err(Error::new(kind, start));
    }
    let kind = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
    if len > MAX_BLOCK_BYTES {
        return Err(Error::malformed(
            kind::name(kind),
            format!("length {len} is over the limit of {MAX_BLOCK_BYTES}"),
            start + 4,
        ));
    }
    Ok((kind, len))
}

/// Reads the body of the block at `start` whose framing [`read_head`] read; returns the offset
/// past it.
pub(super) fn read_frame_body(
    input: &mut impl Read,
    start: u64,
    kind: u32,
    len: u32,
    body: &mut Vec<u8>,
) -> Result<u64, Error> {
    let got = read_body(input, body, len as usize, start + BLOCK_HEADER_BYTES as u64)?;
    if got < len as usize {
        let kind =
            ErrorKind::Truncated { what: kind::name(kind), needed: u64::from(len), available: got as u64 };
        return Err(Error::new(kind, start));
    }
    Ok(start + BLOCK_HEADER_BYTES as u64 + u64::from(len))
}

impl<R: Read + Send + 'static> Reader<R> {
    /// Reads the rest of the file ahead on a thread of its own: that thread reads the blocks and
    /// decodes the compressed groups (format 1.7), while the caller takes in the tables and
    /// decodes the chunks' events, in file order as before. Everything else is as without it:
    /// the same blocks, chunks, offsets and errors (an error is met, and the reader finished,
    /// where it would have been). Memory: the blocks queued and the one lent out come to at most
    /// [`READ_AHEAD_BYTES`](super::READ_AHEAD_BYTES), or to one block when it is longer (read
    /// alone, as without read-ahead).
    ///
    /// The thread starts after the first compressed group, which the reader decodes itself: a
    /// file with none (written plain) is read as without read-ahead, since its reading is the
    /// copy alone, which a second thread would only add to (a million tiny blocks took four times
    /// as long handed over one by one, and more memory than the reader's own).
    pub fn read_ahead(mut self) -> Reader<R> {
        if self.ahead.is_none() && !self.done {
            self.start_ahead = Some(super::ahead::Ahead::start);
        }
        self
    }

    /// Whether a thread reads ahead now ([`Reader::read_ahead`] was asked for and a compressed
    /// group was met).
    pub fn reads_ahead(&self) -> bool {
        self.ahead.is_some()
    }
}

impl<R: Read + Seek> Reader<R> {
    /// Reads the chunk block at file offset `offset` again (the [`Chunk::offset`] a reader gave),
    /// and decodes it with the tables read so far: random access to the events of a file that
    /// was read to its end once, as a viewer does to show one event's arguments. The reader is
    /// finished after it (`next_chunk` gives `Ok(None)`), but `chunk_at` may be called again.
    ///
    /// An offset that is not a chunk block's start is an error naming it, never a panic. For a
    /// chunk inside a compressed group (a virtual offset), the group is decoded again unless it is
    /// the one decoded last.
    pub fn chunk_at(&mut self, offset: u64) -> Result<Chunk<'_>, Error> {
        self.done = true;
        self.start_ahead = None;
        if let Some(ahead) = self.ahead.take() {
            self.input = Some(ahead.stop());
        }
        if let Some((group, inner)) = split_virtual(offset) {
            if self.group_at != Some(group) {
                self.group_at = None;
                let input = self.input.as_mut().expect("taken back from the read-ahead thread");
                input.seek(SeekFrom::Start(group)).map_err(|e| Error::io(e, group))?;
                self.offset = group;
                let kind = self.read_frame()?;
                if kind != kind::COMPRESSED {
                    return Err(Error::malformed(kind::name(kind), "not a compressed group", group));
                }
                self.open_group(group)?;
            }
            if inner >= self.group.len() as u64 {
                return Err(Error::malformed(
                    "compressed group",
                    format!("decodes to {} bytes, no block at {inner}", self.group.len()),
                    group,
                ));
            }
            self.group_pos = inner as usize;
            let (kind, start) = self.next_in_group()?;
            if kind != kind::CHUNK {
                return Err(Error::malformed(kind::name(kind), "not a chunk block", start));
            }
            let extents = self.take_chunk(start + BLOCK_HEADER_BYTES as u64)?;
            return Ok(self.chunk(extents, offset));
        }
        let input = self.input.as_mut().expect("taken back from the read-ahead thread");
        input.seek(SeekFrom::Start(offset)).map_err(|e| Error::io(e, offset))?;
        self.offset = offset;
        let kind = self.read_frame()?;
        if kind != kind::CHUNK {
            return Err(Error::malformed(kind::name(kind), "not a chunk block", offset));
        }
        let extents = self.take_chunk(offset + BLOCK_HEADER_BYTES as u64)?;
        Ok(self.chunk(extents, offset))
    }
}

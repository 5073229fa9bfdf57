//! Compressed blocks of records: how the index stores its large sections (index version 9).
//!
//! A section of fixed-size records is cut into blocks of a fixed number of records (the last one
//! shorter). A block is stored as one zstd frame, its decoded size and a checksum in the frame, of
//! its records turned into columns: each field of a record (a [`Field`] of the section's
//! [`Layout`]) coded against the record before it in the block ([`Coding`]: a time as its
//! difference from the one before, an end as its distance from its start, a float's bits XORed
//! with the previous ones), and each column split into byte planes (every value's lowest byte,
//! then every value's next one, …). Records are sorted (a level's slices by start), so the
//! differences are small, their high planes long runs of zeros, and repeated names long matches:
//! what zstd compresses best. A [`BlockTable`] says, for each section, how many records it holds,
//! how many a block, the record size, and where each block ends: record `i` is in block
//! `i / per_block`.
//!
//! Decoding gives the records' own bytes back (`records.rs`), which `store.rs` caches, so the code
//! above it reads records by number as it read them from an uncompressed section.

use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

use crate::records::{u32_at, u64_at};

/// How a field is stored, against the record before it in its block (zero before the first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Coding {
    /// As it is.
    Plain,
    /// Its difference from the previous record's, zigzagged (a small step back is small too).
    Delta,
    /// Its difference from the field numbered so in the same record, which comes before it (an
    /// end from its start: the duration).
    From(usize),
    /// Its bits XORed with the previous record's (a float that changes little).
    Xor,
}

/// A field of a record: `width` bytes (1 to 8, little-endian) at `at`, stored as `coding` says.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field {
    pub(crate) at: usize,
    pub(crate) width: usize,
    pub(crate) coding: Coding,
}

/// A record's fields, covering its `bytes` exactly.
#[derive(Debug)]
pub(crate) struct Layout {
    pub(crate) bytes: usize,
    pub(crate) fields: &'static [Field],
}

const fn field(at: usize, width: usize, coding: Coding) -> Field {
    Field { at, width, coding }
}

/// A slice (`records::Slice`, 32 bytes) and its scope path (4): start, end, name, callsite,
/// event offset (56 bits), flags, path.
pub(crate) const SLICES: Layout = Layout {
    bytes: 36,
    fields: &[
        field(0, 8, Coding::Delta),
        field(8, 8, Coding::From(0)),
        field(16, 4, Coding::Plain),
        field(20, 4, Coding::Plain),
        field(24, 7, Coding::Delta),
        field(31, 1, Coding::Plain),
        field(32, 4, Coding::Plain),
    ],
};

/// The places of [`SLICES`]' fields, for [`Columns`].
pub(crate) mod slice_fields {
    pub(crate) const START: usize = 0;
    pub(crate) const END: usize = 1;
    pub(crate) const NAME: usize = 2;
    pub(crate) const FLAGS: usize = 5;
    pub(crate) const PATH: usize = 6;
}

/// The places of [`POINTS`]' fields, for [`Columns`].
pub(crate) mod point_fields {
    pub(crate) const TS: usize = 0;
    pub(crate) const NAME: usize = 1;
}

/// A point (`records::Point`): time, name, callsite, event offset, kind.
pub(crate) const POINTS: Layout = Layout {
    bytes: 24,
    fields: &[
        field(0, 8, Coding::Delta),
        field(8, 4, Coding::Plain),
        field(12, 4, Coding::Plain),
        field(16, 7, Coding::Delta),
        field(23, 1, Coding::Plain),
    ],
};

/// A sample (`records::Sample`): time, value.
pub(crate) const SAMPLES: Layout =
    Layout { bytes: 16, fields: &[field(0, 8, Coding::Delta), field(8, 8, Coding::Xor)] };

/// A flow member (`flows::FlowMember`): id, time, event offset, kind, name, thread.
pub(crate) const FLOWS: Layout = Layout {
    bytes: 32,
    fields: &[
        field(0, 8, Coding::Delta),
        field(8, 8, Coding::Delta),
        field(16, 7, Coding::Delta),
        field(23, 1, Coding::Plain),
        field(24, 4, Coding::Plain),
        field(28, 4, Coding::Plain),
    ],
};

/// A flow member's place by event: event offset, member number.
pub(crate) const FLOW_EVENTS: Layout =
    Layout { bytes: 16, fields: &[field(0, 8, Coding::Delta), field(8, 8, Coding::Delta)] };

/// Records a block, by default: some 8 to 18 KiB decoded, what a window query's binary search
/// decodes at each block it reaches.
pub(crate) const PER_BLOCK: u32 = 512;
/// The most records a block may hold (what an index says is refused past it, so that decoding a
/// block takes at most this many records' bytes).
pub(crate) const MAX_PER_BLOCK: u32 = 1 << 16;
/// Bytes of a block table before its blocks' ends.
pub(crate) const TABLE_HEAD: usize = 16;
/// The compression level: zstd's fastest of its ordinary levels. Levels above it gain a few per
/// cent on these planes and cost the build several times the time.
const LEVEL: i32 = 1;

fn mask(width: usize) -> u64 {
    if width >= 8 {
        u64::MAX
    } else {
        (1 << (8 * width)) - 1
    }
}

/// Field `f` of `rec`, read as one 8-byte word: the 8 bytes from the field, or (near the
/// record's end) the 8 ending with it. (Every record is at least 8 bytes.)
#[inline]
fn get(rec: &[u8], f: &Field) -> u64 {
    if let Some(w) = rec.get(f.at..).and_then(|r| r.first_chunk::<8>()) {
        return u64::from_le_bytes(*w) & mask(f.width);
    }
    let end = f.at + f.width;
    match rec.get(end.saturating_sub(8)..end).and_then(|r| r.first_chunk::<8>()) {
        Some(w) => u64::from_le_bytes(*w) >> (64 - 8 * f.width),
        None => 0,
    }
}

/// Sets field `f` of `rec` to `v` (below 2^(8 × width)), as one 8-byte word: where the record
/// has 8 bytes from the field on, the bytes past the field are written as zeros (the fields are
/// set in order of place, so the next ones overwrite them); near its end, the 8 bytes ending with
/// the field, those before it kept.
#[inline]
fn put(rec: &mut [u8], f: &Field, v: u64) {
    if let Some(w) = rec.get_mut(f.at..).and_then(|r| r.first_chunk_mut::<8>()) {
        *w = v.to_le_bytes();
        return;
    }
    let end = f.at + f.width;
    if let Some(w) = rec.get_mut(end.saturating_sub(8)..end).and_then(|r| r.first_chunk_mut::<8>()) {
        let shift = 64 - 8 * f.width as u32;
        // (The field is narrower than 8 bytes here: `shift` is 8 to 56.)
        let kept = u64::from_le_bytes(*w) & ((1u64 << shift) - 1);
        *w = (kept | v << shift).to_le_bytes();
    }
}

/// `d`, a difference modulo 2^(8 × width), as a zigzagged signed one of the same width.
fn zigzag(d: u64, width: usize) -> u64 {
    let shift = 64 - 8 * width as u32;
    let s = ((d << shift) as i64) >> shift;
    ((s << 1) ^ (s >> 63)) as u64 & mask(width)
}

fn unzigzag(z: u64, width: usize) -> u64 {
    let s = ((z >> 1) as i64) ^ -((z & 1) as i64);
    s as u64 & mask(width)
}

/// Splits `column`'s values into `width` byte planes, plane after plane (`planes`: `width` ×
/// the values).
fn scatter(width: usize, column: &[u64], planes: &mut [u8]) {
    fn planes_of<const W: usize>(column: &[u64], planes: &mut [u8]) {
        let n = column.len();
        for (byte, plane) in planes.chunks_exact_mut(n.max(1)).take(W).enumerate() {
            for (b, v) in plane.iter_mut().zip(column) {
                *b = v.to_le_bytes()[byte];
            }
        }
    }
    match width {
        1 => planes_of::<1>(column, planes),
        4 => planes_of::<4>(column, planes),
        7 => planes_of::<7>(column, planes),
        _ => planes_of::<8>(column, planes),
    }
}

/// Puts the `width` byte planes of `n` values (`planes`, plane after plane) together into
/// `column`, one value a record: a pass over the column a plane, which the compiler vectorizes.
fn gather(width: usize, planes: &[u8], n: usize, column: &mut Vec<u64>) {
    column.clear();
    column.resize(n, 0);
    for (byte, plane) in planes.chunks_exact(n.max(1)).take(width).enumerate() {
        let shift = 8 * byte as u32;
        for (v, &b) in column.iter_mut().zip(plane) {
            *v |= u64::from(b) << shift;
        }
    }
}

/// Why a block could not be decoded.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BlockError(pub(crate) String);

/// Codes and compresses blocks: holds a zstd context and scratch buffers, reused block after block.
pub(crate) struct Encoder {
    zstd: zstd::bulk::Compressor<'static>,
    column: Vec<u64>,
    planes: Vec<u8>,
    frame: Vec<u8>,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder").finish_non_exhaustive()
    }
}

impl Encoder {
    pub(crate) fn new() -> io::Result<Encoder> {
        let mut zstd = zstd::bulk::Compressor::new(LEVEL)?;
        zstd.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
        zstd.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(true))?;
        Ok(Encoder { zstd, column: Vec::new(), planes: Vec::new(), frame: Vec::new() })
    }

    /// The frame of the records `records` (whole records of `layout`).
    pub(crate) fn encode(&mut self, layout: &Layout, records: &[u8]) -> io::Result<&[u8]> {
        let n = records.len() / layout.bytes;
        self.planes.clear();
        self.planes.resize(n * layout.bytes, 0);
        let mut base = 0;
        for f in layout.fields {
            self.column.clear();
            let mut prev = 0u64;
            let m = mask(f.width);
            self.column.extend(records.chunks_exact(layout.bytes).map(|rec| {
                let v = get(rec, f);
                let coded = match f.coding {
                    Coding::Plain => v,
                    Coding::Delta => zigzag(v.wrapping_sub(prev) & m, f.width),
                    Coding::From(g) => v.wrapping_sub(get(rec, &layout.fields[g])) & m,
                    Coding::Xor => v ^ prev,
                };
                prev = v;
                coded
            }));
            scatter(f.width, &self.column, &mut self.planes[base..base + f.width * n]);
            base += f.width * n;
        }
        self.frame.clear();
        self.frame.reserve(zstd::zstd_safe::compress_bound(self.planes.len()));
        self.zstd.compress_to_buffer(&self.planes[..], &mut self.frame)?;
        Ok(&self.frame)
    }
}

/// Decodes blocks: a zstd context and the columns of the block decoded last, reused.
pub(crate) struct Decoder {
    zstd: zstd::bulk::Decompressor<'static>,
    columns: Columns,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder").finish_non_exhaustive()
    }
}

/// A block decompressed, its fields decoded column by column as they are asked for
/// ([`Columns::want`]): a scan that tests one field decodes that one and not the others
/// (un-shuffling a field's byte planes and undoing its coding is most of a block's decoding
/// after zstd).
#[derive(Debug)]
pub(crate) struct Columns {
    layout: &'static Layout,
    n: usize,
    /// The block's byte planes, as zstd gave them.
    planes: Vec<u8>,
    /// Each field's values, one a record: filled for the fields in `done`.
    values: Vec<Vec<u64>>,
    /// The fields decoded, a bit each.
    done: u64,
}

impl Columns {
    fn new() -> Columns {
        Columns { layout: &SLICES, n: 0, planes: Vec::new(), values: Vec::new(), done: 0 }
    }

    /// A block of `n` records of `layout` whose every field is zero (a damaged block's).
    pub(crate) fn zeros(&mut self, layout: &'static Layout, n: usize) {
        self.reset(layout, n);
        self.planes.resize(n * layout.bytes, 0);
    }

    fn reset(&mut self, layout: &'static Layout, n: usize) {
        (self.layout, self.n, self.done) = (layout, n, 0);
        self.planes.clear();
        self.values.resize_with(layout.fields.len(), Vec::new);
    }

    /// Decodes the fields numbered `fields` (places in the layout's fields), those already
    /// decoded left as they are.
    pub(crate) fn want(&mut self, fields: &[usize]) {
        for &k in fields {
            self.field(k);
        }
    }

    /// Field `k`'s values, one a record: empty unless [`Columns::want`] decoded it.
    pub(crate) fn get(&self, k: usize) -> &[u64] {
        let done = (self.done >> k) & 1 == 1;
        debug_assert!(done, "field {k} read before it was decoded");
        if !done {
            return &[];
        }
        &self.values[k]
    }

    fn field(&mut self, k: usize) {
        let Some(f) = self.layout.fields.get(k).copied() else { return };
        if (self.done >> k) & 1 == 1 {
            return;
        }
        if let Coding::From(g) = f.coding {
            if g < k {
                self.field(g);
            }
        }
        let n = self.n;
        let plane: usize = self.layout.fields[..k].iter().map(|f| f.width * n).sum();
        let mut column = std::mem::take(&mut self.values[k]);
        gather(f.width, &self.planes[plane..plane + f.width * n], n, &mut column);
        let (m, w) = (mask(f.width), f.width);
        // One loop a coding, the coding chosen once a field.
        match f.coding {
            Coding::Delta => {
                let mut v = 0u64;
                for z in &mut column {
                    v = v.wrapping_add(unzigzag(*z, w)) & m;
                    *z = v;
                }
            }
            Coding::From(g) if g < k => {
                for (z, &from) in column.iter_mut().zip(&self.values[g]) {
                    *z = z.wrapping_add(from) & m;
                }
            }
            Coding::Xor => {
                let mut v = 0u64;
                for z in &mut column {
                    v ^= *z;
                    *z = v;
                }
            }
            Coding::Plain | Coding::From(_) => {}
        }
        self.values[k] = column;
        self.done |= 1 << k;
    }
}

impl Decoder {
    pub(crate) fn new() -> io::Result<Decoder> {
        Ok(Decoder { zstd: zstd::bulk::Decompressor::new()?, columns: Columns::new() })
    }

    /// Decompresses `frame`, a block of `n` records of `layout`, into `columns` (replacing what
    /// they held), none of its fields decoded yet. A frame that says another size than the
    /// block's, or that does not decode to it, is an error: nothing is allocated beyond the
    /// block's own size.
    pub(crate) fn columns(
        &mut self,
        layout: &'static Layout,
        n: usize,
        frame: &[u8],
        columns: &mut Columns,
    ) -> Result<(), BlockError> {
        let size = n * layout.bytes;
        check_frame(frame, size)?;
        columns.reset(layout, n);
        columns.planes.reserve(size);
        let got = self
            .zstd
            .decompress_to_buffer(frame, &mut columns.planes)
            .map_err(|e| BlockError(format!("the compressed block does not decode: {e}")))?;
        if got != size {
            return Err(BlockError(format!("the block decodes to {got} bytes, not {size}")));
        }
        Ok(())
    }

    /// An empty set of columns, to decompress blocks into ([`Decoder::columns`]).
    pub(crate) fn scratch() -> Columns {
        Columns::new()
    }

    /// Decodes `frame`, a block of `n` records of `layout`, into `out` (replacing what it held):
    /// the records' own bytes. Errors as [`Decoder::columns`].
    pub(crate) fn decode(
        &mut self,
        layout: &'static Layout,
        n: usize,
        frame: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), BlockError> {
        let mut columns = std::mem::replace(&mut self.columns, Columns::new());
        let decoded = self.columns(layout, n, frame, &mut columns);
        if decoded.is_ok() {
            let all: Vec<usize> = (0..layout.fields.len()).collect();
            columns.want(&all);
            out.clear();
            out.resize(n * layout.bytes, 0);
            for (k, f) in layout.fields.iter().enumerate() {
                for (rec, &v) in out.chunks_exact_mut(layout.bytes).zip(columns.get(k)) {
                    put(rec, f, v);
                }
            }
        }
        self.columns = columns;
        decoded
    }
}

/// Checks a block's frame without decoding it: it is one whole zstd frame of exactly `frame`'s
/// bytes that says it decodes to `size` bytes.
pub(crate) fn check_frame(frame: &[u8], size: usize) -> Result<(), BlockError> {
    match zstd::zstd_safe::get_frame_content_size(frame) {
        Ok(Some(s)) if s == size as u64 => {}
        Ok(Some(s)) => return Err(BlockError(format!("the block says it holds {s} bytes, not {size}"))),
        Ok(None) => return Err(BlockError("the block does not say its size".into())),
        Err(_) => return Err(BlockError("not a compressed block (bad frame header)".into())),
    }
    match zstd::zstd_safe::find_frame_compressed_size(frame) {
        Ok(len) if len == frame.len() => Ok(()),
        Ok(len) => {
            Err(BlockError(format!("the block's frame is {len} bytes, its table says {}", frame.len())))
        }
        Err(_) => Err(BlockError("the compressed block is truncated".into())),
    }
}

/// Where a section's blocks are: its record count, records a block, record size, and each
/// block's end (bytes from the section's start).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BlockTable {
    pub(crate) records: u64,
    pub(crate) per_block: u32,
    pub(crate) record_bytes: u32,
    pub(crate) ends: Vec<u64>,
}

impl BlockTable {
    /// The table's bytes: records u64, per block u32, record bytes u32, ends u64 × blocks.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(TABLE_HEAD + 8 * self.ends.len());
        b.extend_from_slice(&self.records.to_le_bytes());
        b.extend_from_slice(&self.per_block.to_le_bytes());
        b.extend_from_slice(&self.record_bytes.to_le_bytes());
        for e in &self.ends {
            b.extend_from_slice(&e.to_le_bytes());
        }
        b
    }

    /// The table in `b`, checked against its layout and its section's length: the error says
    /// what is wrong and at which byte of `b`.
    pub(crate) fn decode(b: &[u8], layout: &Layout, section: u64) -> Result<BlockTable, (String, usize)> {
        if b.len() < TABLE_HEAD {
            return Err(("block table too short".into(), 0));
        }
        let (records, per_block, record_bytes) = (u64_at(b, 0), u32_at(b, 8), u32_at(b, 12));
        if record_bytes as usize != layout.bytes {
            return Err((format!("block table says {record_bytes}-byte records, not {}", layout.bytes), 12));
        }
        if per_block == 0 || per_block > MAX_PER_BLOCK {
            return Err((format!("block table says {per_block} records a block"), 8));
        }
        let blocks = records.div_ceil(u64::from(per_block));
        if blocks.checked_mul(8).and_then(|n| n.checked_add(TABLE_HEAD as u64)) != Some(b.len() as u64) {
            return Err((format!("block table of {records} records is not {} bytes", b.len()), 0));
        }
        // A frame's bound: zstd's worst case for a block's bytes, and never empty.
        let most = zstd::zstd_safe::compress_bound(per_block as usize * layout.bytes) as u64;
        let mut ends = Vec::with_capacity(blocks as usize);
        let mut prev = 0u64;
        for k in 0..blocks as usize {
            let at = TABLE_HEAD + 8 * k;
            let end = u64_at(b, at);
            if end <= prev || end - prev > most || end > section {
                return Err((format!("block {k}'s end {end} is out of order or out of its section"), at));
            }
            ends.push(end);
            prev = end;
        }
        if prev != section {
            return Err((format!("the blocks end at {prev}, their section at {section}"), 0));
        }
        Ok(BlockTable { records, per_block, record_bytes, ends })
    }

    /// Block `k`'s bytes (from the section's start) and its records.
    pub(crate) fn block(&self, k: u64) -> (u64, u64, usize) {
        let start = if k == 0 { 0 } else { self.ends[k as usize - 1] };
        let first = k * u64::from(self.per_block);
        let n = (self.records - first).min(u64::from(self.per_block)) as usize;
        (start, self.ends[k as usize] - start, n)
    }
}

/// Writes a section as blocks as its records come, into `out`, keeping the table. The blocks
/// are coded and compressed on a thread of the writer's own, while the records of the next one
/// come: the index is written on one thread otherwise, and the machine's other core would wait.
#[derive(Debug)]
pub(crate) struct BlockWriter<W: Write + Send + 'static> {
    layout: &'static Layout,
    per_block: u32,
    pending: Vec<u8>,
    records: u64,
    /// Whole blocks, to the encoding thread (`None` once finished).
    blocks: Option<SyncSender<Vec<u8>>>,
    /// The encoding thread: it gives back the output and each block's end.
    worker: Option<JoinHandle<io::Result<Written<W>>>>,
}

/// What the encoding thread gives back: the output, and each block's end in it.
type Written<W> = (W, Vec<u64>);

/// Blocks waiting for the encoding thread at most (each of `per_block` records).
const QUEUED: usize = 4;

impl<W: Write + Send + 'static> BlockWriter<W> {
    pub(crate) fn new(mut out: W, layout: &'static Layout, per_block: u32) -> io::Result<BlockWriter<W>> {
        let per_block = per_block.clamp(1, MAX_PER_BLOCK);
        let (blocks, queue) = sync_channel::<Vec<u8>>(QUEUED);
        let worker = std::thread::Builder::new().name("phosphor-index-blocks".into()).spawn(move || {
            let mut encoder = Encoder::new()?;
            let (mut written, mut ends) = (0u64, Vec::new());
            for block in queue {
                let frame = encoder.encode(layout, &block)?;
                out.write_all(frame)?;
                written += frame.len() as u64;
                ends.push(written);
            }
            Ok((out, ends))
        })?;
        Ok(BlockWriter {
            layout,
            per_block,
            pending: Vec::with_capacity(per_block as usize * layout.bytes),
            records: 0,
            blocks: Some(blocks),
            worker: Some(worker),
        })
    }

    /// Appends a record (`layout.bytes` long), and returns its number.
    pub(crate) fn push(&mut self, record: &[u8]) -> io::Result<u64> {
        debug_assert_eq!(record.len(), self.layout.bytes);
        self.pending.extend_from_slice(record);
        let n = self.records;
        self.records += 1;
        let full = self.per_block as usize * self.layout.bytes;
        if self.pending.len() == full {
            let block = std::mem::replace(&mut self.pending, Vec::with_capacity(full));
            self.send(block)?;
        }
        Ok(n)
    }

    fn send(&mut self, block: Vec<u8>) -> io::Result<()> {
        let sent = self.blocks.as_ref().map(|b| b.send(block));
        match sent {
            Some(Ok(())) => Ok(()),
            // The thread has ended: with its error.
            _ => self.join().map(|_| ()),
        }
    }

    /// Waits for the encoding thread: its output and blocks' ends, or its error.
    fn join(&mut self) -> io::Result<Written<W>> {
        self.blocks = None;
        match self.worker.take().map(|w| w.join()) {
            Some(Ok(done)) => done,
            Some(Err(_)) => Err(io::Error::other("the thread compressing the index's blocks panicked")),
            None => Err(io::Error::other("the index's blocks were already finished")),
        }
    }

    /// Writes the last block, and gives back the output and the table.
    pub(crate) fn finish(mut self) -> io::Result<(W, BlockTable)> {
        if !self.pending.is_empty() {
            let block = std::mem::take(&mut self.pending);
            self.send(block)?;
        }
        let (out, ends) = self.join()?;
        let table = BlockTable {
            records: self.records,
            per_block: self.per_block,
            record_bytes: self.layout.bytes as u32,
            ends,
        };
        Ok((out, table))
    }
}

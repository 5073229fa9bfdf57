//! The index file: written once by `build.rs`, then read by position (`store.rs`; its small
//! tables through a mapping).
//!
//! ```text
//! header (64 bytes):  magic "PHOSVIEW", version u32, reserved u32, source length u64,
//!                     source modification time u64 (ns since the epoch), footer offset u64
//!                     (0 until the index is complete), reserved
//! slices:             compressed blocks (`blocks.rs`) of 36-byte records, by thread, level,
//!                     start: the 32-byte slice (`records::Slice`), its scope path u32
//!                     (u32::MAX: none, an async slice)
//! points:             compressed blocks of 24-byte records, by thread, time
//! samples:            compressed blocks of 16-byte records, by counter, time
//! names:              count u64, ends u64 × count (each name's end in the text), text (UTF-8)
//! threads:            32 bytes each: tid u32, name u32 (u32::MAX: none), first level u32,
//!                     levels u32, first point u64, points u64
//! levels:             16 bytes each: first slice u64, slices u64 (a thread's levels in a row)
//! counters:           24 bytes each: name u32, reserved u32, first sample u64, samples u64
//! meta:               JSON (`Meta`)
//! asyncs:             32 bytes each, as threads: name u32 (its id), name u32, first level u32,
//!                     lanes u32, 0 u64, 0 u64 (an async track's lanes are levels)
//! chunks:             u64 each: the trace's chunk blocks' offsets, in file order
//! slice summaries:    48 bytes each, one every 64 slices (`summary.rs`): first start u64,
//!                     last end u64, longest duration u64, widest gap u64, dominant name's
//!                     weight u64, dominant name u32, reserved u32 (version 8)
//! sample summaries:   32 bytes each, one every 64 samples: last time u64, smallest f64,
//!                     largest f64, last f64
//! flows:              compressed blocks of 32-byte records (`flows.rs`), by flow name, id and
//!                     time: id u64, time u64, event offset (56 bits) and kind (8 bits) u64,
//!                     name u32, tid u32
//! flows by event:     compressed blocks of 16-byte records, by event offset: event offset u64,
//!                     flow member u64
//! paths:              12 bytes each: parent u32, name u32, type u8, reserved (3 bytes)
//! block tables:       one for each compressed section above (slices, points, samples, flows,
//!                     flows by event; version 9): records u64, records a block u32, record
//!                     bytes u32, each block's end u64 (from its section's start)
//! footer:             (offset u64, length u64) of each of the 20 sections above, "PHVIEWFT"
//! ```
//!
//! Sections need not lie in this order in the file; the footer says where each is.
//! All integers are little-endian. An index is written beside its trace, or in a cache folder,
//! to a temporary name first and renamed when complete.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use phosphor_format::file::Header;
use serde::{Deserialize, Serialize};

use crate::blocks::{self, BlockTable, BlockWriter, Layout};
use crate::flows::{FlowMember, FLOW_BYTES};
use crate::records::{u32_at, u64_at, Point, Sample, Slice, POINT_BYTES, SAMPLE_BYTES, SLICE_BYTES};
use crate::store::Blocks;
use crate::summary::{
    SampleSummary, SliceBlock, SliceSummary, Summer, SAMPLE_SUMMARY_BYTES, SLICE_SUMMARY_BYTES, SPAN,
};
use crate::Error;

/// The index file's first bytes.
pub const MAGIC: &[u8; 8] = b"PHOSVIEW";
/// The footer's last bytes.
const FOOTER_MAGIC: &[u8; 8] = b"PHVIEWFT";
/// The version this crate writes and reads.
pub const VERSION: u32 = 9;
const HEADER_BYTES: u64 = 64;
const SECTIONS: usize = 20;
/// Bytes of a slice's record in its section: the slice, then its scope path (u32).
const SLICE_RECORD: usize = SLICE_BYTES + 4;
const FOOTER_BYTES: usize = SECTIONS * 16 + 8;
const THREAD_BYTES: usize = 32;
const LEVEL_BYTES: usize = 16;
const COUNTER_BYTES: usize = 24;
/// Bytes of a scope path in the paths section: its parent's number, its name's, its type.
const PATH_BYTES: usize = 12;
/// No name.
const NO_NAME: u32 = u32::MAX;

/// What the index says about its trace file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// The recording process's name.
    pub process: String,
    /// Its pid.
    pub pid: u32,
    /// The clock that stamped the events (`tsc`, `monotonic`, `realtime`).
    pub clock: String,
    /// Wall-clock nanoseconds since the Unix epoch at the clock's origin (time 0 of the index).
    pub origin_wall_ns: u64,
    /// Chunks read.
    pub chunks: u64,
    /// Events read.
    pub events: u64,
    /// The earliest event's time, in clock ticks (0 without events).
    pub start_ticks: u64,
    /// The latest end of an event.
    pub end_ticks: u64,
    /// Nanoseconds a clock tick (as the file says, even NaN or infinite: a JSON string then).
    #[serde(with = "any_f64")]
    pub ns_per_tick: f64,
    /// The clock's origin, in ticks.
    pub origin_ticks: u64,
    /// Where reading the trace stopped early, if it did (a truncated or damaged file): the events
    /// before it are indexed.
    pub read_error: Option<String>,
    /// `CLOCK_MONOTONIC` nanoseconds at the clock's origin (0 in an index written before it was
    /// kept), and the boot it counts in: what places several traces on one clock.
    #[serde(default)]
    pub origin_monotonic_ns: u64,
    /// See `origin_monotonic_ns` (none before format 1.5, or in an index older than the field).
    #[serde(default)]
    pub boot_id: Option<[u8; 16]>,
}

/// An `f64` in JSON, non-finite ones (which JSON's numbers cannot hold) as strings.
mod any_f64 {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Json {
        Number(f64),
        Text(String),
    }

    pub(super) fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            Json::Number(*v).serialize(s)
        } else {
            Json::Text(v.to_string()).serialize(s)
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match Json::deserialize(d)? {
            Json::Number(v) => Ok(v),
            Json::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl Meta {
    pub(crate) fn new(h: &Header) -> Meta {
        Meta {
            process: h.process_name.clone(),
            pid: h.pid,
            clock: h.clock.kind.as_str().to_owned(),
            origin_wall_ns: h.clock.origin_wall_ns,
            ns_per_tick: h.clock.ns_per_tick,
            origin_ticks: h.clock.origin_ticks,
            origin_monotonic_ns: h.clock.origin_monotonic_ns,
            boot_id: h.boot_id,
            ..Meta::default()
        }
    }
}

/// A thread's entry while the index is built.
#[derive(Debug)]
pub(crate) struct ThreadEntry {
    pub(crate) tid: u32,
    pub(crate) name: Option<u32>,
    /// Its levels: where they start in the list of every thread's (by level: first slice,
    /// slices), and how many.
    first_level: usize,
    n_levels: u32,
    /// First point, points.
    points: (u64, u64),
}

impl ThreadEntry {
    pub(crate) fn new(tid: u32) -> ThreadEntry {
        ThreadEntry { tid, name: None, first_level: 0, n_levels: 0, points: (0, 0) }
    }

    /// Slice number `at` is the next of level `depth` (levels come in order), and this thread's
    /// levels are the last of `levels`.
    pub(crate) fn add_slice(&mut self, levels: &mut Vec<(u64, u64)>, depth: u32, at: u64) {
        if self.n_levels == 0 {
            self.first_level = levels.len();
        }
        while self.n_levels <= depth {
            levels.push((at, 0));
            self.n_levels += 1;
        }
        levels[self.first_level + depth as usize].1 += 1;
    }

    /// Its levels in `levels`.
    fn levels<'a>(&self, levels: &'a [(u64, u64)]) -> &'a [(u64, u64)] {
        levels.get(self.first_level..self.first_level + self.n_levels as usize).unwrap_or(&[])
    }

    /// Point number `at` is the thread's next.
    pub(crate) fn add_point(&mut self, at: u64) {
        if self.points.1 == 0 {
            self.points.0 = at;
        }
        self.points.1 += 1;
    }
}

/// Writes an index file: the records in their sections' order, then the tables.
#[derive(Debug)]
pub(crate) struct IndexWriter {
    out: BufWriter<File>,
    path: PathBuf,
    /// Bytes written.
    at: u64,
    /// (offset, length) of each section, as they are finished.
    sections: Vec<(u64, u64)>,
    /// The record sections, compressed block by block into files of their own until the end
    /// (`blocks.rs`): slices (each with its scope path, `build::NO_PATH` for an async slice),
    /// points, samples, flow members and (event, member) pairs, as they come in their sections'
    /// order. (Taken at the end.)
    records: Option<Records>,
    /// The summaries, in files of their own until the end (`summary.rs`).
    slice_sums: Option<Summer<BufWriter<File>, SliceBlock>>,
    sample_sums: Option<Summer<BufWriter<File>, SampleSummary>>,
    /// The scope paths.
    paths: Option<BufWriter<File>>,
}

/// The record sections being written.
type Spool = BlockWriter<BufWriter<File>>;
#[derive(Debug)]
struct Records {
    slices: Spool,
    points: Spool,
    samples: Spool,
    flows: Spool,
    flow_events: Spool,
}

impl IndexWriter {
    /// Starts an index of a source of `source_len` bytes modified at `mtime_ns`, written to
    /// `file` (at `path`, for errors), its record sections in blocks of `block_records` records
    /// (0: [`blocks::PER_BLOCK`]).
    pub(crate) fn new(
        file: File,
        path: &Path,
        source_len: u64,
        mtime_ns: u64,
        block_records: u32,
    ) -> Result<IndexWriter, Error> {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let spool = || -> Result<BufWriter<File>, Error> {
            let f = tempfile::tempfile_in(dir).map_err(|e| Error::io(dir, e))?;
            Ok(BufWriter::with_capacity(1 << 16, f))
        };
        let per = if block_records == 0 { blocks::PER_BLOCK } else { block_records };
        let blocks = |layout| -> Result<Spool, Error> {
            BlockWriter::new(spool()?, layout, per).map_err(|e| Error::io(path, e))
        };
        let records = Records {
            slices: blocks(&blocks::SLICES)?,
            points: blocks(&blocks::POINTS)?,
            samples: blocks(&blocks::SAMPLES)?,
            flows: blocks(&blocks::FLOWS)?,
            flow_events: blocks(&blocks::FLOW_EVENTS)?,
        };
        let mut w = IndexWriter {
            out: BufWriter::with_capacity(1 << 16, file),
            path: path.to_owned(),
            at: 0,
            sections: Vec::new(),
            records: Some(records),
            slice_sums: Some(Summer::new(spool()?)),
            sample_sums: Some(Summer::new(spool()?)),
            paths: Some(spool()?),
        };
        let mut header = [0u8; HEADER_BYTES as usize];
        header[0..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&VERSION.to_le_bytes());
        header[16..24].copy_from_slice(&source_len.to_le_bytes());
        header[24..32].copy_from_slice(&mtime_ns.to_le_bytes());
        w.write(&header)?;
        Ok(w)
    }

    fn write(&mut self, b: &[u8]) -> Result<(), Error> {
        self.out.write_all(b).map_err(|e| Error::io(&self.path, e))?;
        self.at += b.len() as u64;
        Ok(())
    }

    /// Appends record `b` to the section `which` picks, and returns its number there.
    fn record(&mut self, which: impl FnOnce(&mut Records) -> &mut Spool, b: &[u8]) -> Result<u64, Error> {
        let Some(records) = &mut self.records else { return Ok(0) };
        which(records).push(b).map_err(|e| Error::io(&self.path, e))
    }

    /// Appends slice `s`, on scope path `path`, and returns its number.
    pub(crate) fn slice(&mut self, s: &Slice, path: u32) -> Result<u64, Error> {
        if let Some(sums) = &mut self.slice_sums {
            sums.add(s).map_err(|e| Error::io(&self.path, e))?;
        }
        let mut b = [0u8; SLICE_RECORD];
        b[..SLICE_BYTES].copy_from_slice(&s.encode());
        b[SLICE_BYTES..].copy_from_slice(&path.to_le_bytes());
        self.record(|r| &mut r.slices, &b)
    }

    pub(crate) fn point(&mut self, b: &[u8; POINT_BYTES]) -> Result<u64, Error> {
        self.record(|r| &mut r.points, b)
    }

    pub(crate) fn sample(&mut self, b: &[u8; SAMPLE_BYTES]) -> Result<u64, Error> {
        if let Some(sums) = &mut self.sample_sums {
            sums.add(&Sample::decode(b)).map_err(|e| Error::io(&self.path, e))?;
        }
        self.record(|r| &mut r.samples, b)
    }

    /// Appends a flow member (they come by name, id and time), and returns its number.
    pub(crate) fn flow(&mut self, m: &FlowMember) -> Result<u64, Error> {
        self.record(|r| &mut r.flows, &m.encode())
    }

    /// Appends that flow member `member` was recorded at `event` (they come by event).
    pub(crate) fn flow_event(&mut self, event: u64, member: u64) -> Result<(), Error> {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&event.to_le_bytes());
        b[8..].copy_from_slice(&member.to_le_bytes());
        self.record(|r| &mut r.flow_events, &b).map(|_| ())
    }

    /// Writes the scope paths, by number: each one's parent and last label (name and type).
    pub(crate) fn paths(
        &mut self,
        paths: impl Iterator<Item = (u32, crate::slices::PathLabel)>,
    ) -> Result<(), Error> {
        let Some(out) = &mut self.paths else { return Ok(()) };
        for (parent, (name, ty)) in paths {
            let mut b = [0u8; PATH_BYTES];
            b[0..4].copy_from_slice(&parent.to_le_bytes());
            b[4..8].copy_from_slice(&name.to_le_bytes());
            b[8] = ty;
            out.write_all(&b).map_err(|e| Error::io(&self.path, e))?;
        }
        Ok(())
    }

    /// Appends a spooled file's bytes as a section.
    fn copy_section(&mut self, spooled: BufWriter<File>) -> Result<(), Error> {
        let mut f = spooled.into_inner().map_err(|e| Error::io(&self.path, e.into_error()))?;
        f.seek(SeekFrom::Start(0)).map_err(|e| Error::io(&self.path, e))?;
        let start = self.at;
        let n = std::io::copy(&mut f, &mut self.out).map_err(|e| Error::io(&self.path, e))?;
        self.at += n;
        self.sections.push((start, n));
        Ok(())
    }

    /// Writes the tables and the footer, and marks the index complete.
    pub(crate) fn finish(
        mut self,
        names: &crate::build::Names,
        (threads, thread_levels): (&[ThreadEntry], &[(u64, u64)]),
        (asyncs, async_levels): (&[ThreadEntry], &[(u64, u64)]),
        counters: Vec<(u32, (u64, u64))>,
        chunks: &[u64],
        meta: &Meta,
    ) -> Result<(), Error> {
        // The record sections first, their tables kept for the end.
        let mut tables = Vec::new();
        let mut flow_sections = Vec::new();
        if let Some(r) = self.records.take() {
            let path = self.path.clone();
            let io = |e| Error::io(&path, e);
            let [slices, points, samples, flows, flow_events] =
                [r.slices, r.points, r.samples, r.flows, r.flow_events].map(|w| w.finish());
            for (k, done) in [slices, points, samples, flows, flow_events].into_iter().enumerate() {
                let (spool, table) = done.map_err(io)?;
                self.copy_section(spool)?;
                if k >= 3 {
                    // The flows' sections come later in the footer's list.
                    flow_sections.push(self.sections.pop().unwrap_or_default());
                }
                tables.push(table);
            }
        }

        let start = self.at;
        self.write(&u64::from(names.len()).to_le_bytes())?;
        let mut end = 0u64;
        for n in 0..names.len() {
            end += names.get(n).len() as u64;
            self.write(&end.to_le_bytes())?;
        }
        for n in 0..names.len() {
            self.write(names.get(n).as_bytes())?;
        }
        self.sections.push((start, self.at - start));

        // A track's entry: its levels are numbered from `first` in the levels section.
        let entry = |t: &ThreadEntry, first: u32| {
            let mut b = [0u8; THREAD_BYTES];
            b[0..4].copy_from_slice(&t.tid.to_le_bytes());
            b[4..8].copy_from_slice(&t.name.unwrap_or(NO_NAME).to_le_bytes());
            b[8..12].copy_from_slice(&first.to_le_bytes());
            b[12..16].copy_from_slice(&t.n_levels.to_le_bytes());
            b[16..24].copy_from_slice(&t.points.0.to_le_bytes());
            b[24..32].copy_from_slice(&t.points.1.to_le_bytes());
            b
        };
        let start = self.at;
        let mut first = 0u32;
        for t in threads {
            self.write(&entry(t, first))?;
            first += t.n_levels;
        }
        self.sections.push((start, self.at - start));
        // The threads' levels, then the async tracks' (lanes), each track's in a row.
        let start = self.at;
        let all = threads
            .iter()
            .map(|t| t.levels(thread_levels))
            .chain(asyncs.iter().map(|t| t.levels(async_levels)));
        for &(first, count) in all.flatten() {
            self.write(&first.to_le_bytes())?;
            self.write(&count.to_le_bytes())?;
        }
        self.sections.push((start, self.at - start));
        let start = self.at;
        for (name, (first, count)) in counters {
            let mut b = [0u8; COUNTER_BYTES];
            b[0..4].copy_from_slice(&name.to_le_bytes());
            b[8..16].copy_from_slice(&first.to_le_bytes());
            b[16..24].copy_from_slice(&count.to_le_bytes());
            self.write(&b)?;
        }
        self.sections.push((start, self.at - start));
        let start = self.at;
        let json = serde_json::to_vec(meta).map_err(|e| Error::io(&self.path, e.into()))?;
        self.write(&json)?;
        self.sections.push((start, self.at - start));
        let start = self.at;
        let mut first = threads.iter().map(|t| t.n_levels).sum::<u32>();
        for t in asyncs {
            self.write(&entry(t, first))?;
            first += t.n_levels;
        }
        self.sections.push((start, self.at - start));
        let start = self.at;
        for c in chunks {
            self.write(&c.to_le_bytes())?;
        }
        self.sections.push((start, self.at - start));
        if let Some(sums) = self.slice_sums.take() {
            self.copy_section(sums.finish::<Slice>().map_err(|e| Error::io(&self.path, e))?)?;
        }
        if let Some(sums) = self.sample_sums.take() {
            self.copy_section(sums.finish::<Sample>().map_err(|e| Error::io(&self.path, e))?)?;
        }
        self.sections.extend(flow_sections);
        if let Some(paths) = self.paths.take() {
            self.copy_section(paths)?;
        }
        for table in tables {
            let start = self.at;
            self.write(&table.encode())?;
            self.sections.push((start, self.at - start));
        }

        let footer = self.at;
        let sections = std::mem::take(&mut self.sections);
        for (offset, len) in sections {
            self.write(&offset.to_le_bytes())?;
            self.write(&len.to_le_bytes())?;
        }
        self.write(FOOTER_MAGIC)?;
        let path = self.path.clone();
        let mut file = self.out.into_inner().map_err(|e| Error::io(&path, e.into_error()))?;
        file.seek(SeekFrom::Start(32)).map_err(|e| Error::io(&path, e))?;
        file.write_all(&footer.to_le_bytes()).map_err(|e| Error::io(&path, e))?;
        file.sync_all().map_err(|e| Error::io(&path, e))?;
        Ok(())
    }
}

/// A thread of the index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadTrack {
    /// Its id.
    pub tid: u32,
    /// Its name's number in the index's names, if it was named.
    pub name: Option<u32>,
    /// By level (0: outermost): the first slice's number, and how many.
    pub levels: Vec<(u64, u64)>,
    /// Its points: the first one's number, and how many.
    pub points: (u64, u64),
}

/// A counter (or data) track of the index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterTrack {
    /// Its name's number.
    pub name: u32,
    /// Its samples: the first one's number, and how many.
    pub samples: (u64, u64),
}

/// An index file, mapped.
#[derive(Debug)]
pub struct IndexFile {
    /// The whole file mapped, for its small tables (names, chunks).
    pub(crate) map: Mmap,
    /// Its records, read by position (`store.rs`).
    store: crate::store::Store,
    pub(crate) path: PathBuf,
    /// The record sections, in compressed blocks.
    slices: Blocks,
    points: Blocks,
    samples: Blocks,
    flows: Blocks,
    flow_events: Blocks,
    names: (usize, usize),
    chunks: (usize, usize),
    slice_sums: (usize, usize),
    sample_sums: (usize, usize),
    paths: (usize, usize),
    /// The threads, by id.
    pub threads: Vec<ThreadTrack>,
    /// The counters, in the order first seen.
    pub counters: Vec<CounterTrack>,
    /// The async tracks, one per name (`tid` is the name's number), their lanes as levels.
    pub asyncs: Vec<ThreadTrack>,
    /// What the index says about its trace.
    pub meta: Meta,
}

impl IndexFile {
    /// Opens the index at `path`, if it is complete and indexes a source of `source_len` bytes
    /// modified at `mtime_ns`; `Ok(None)` if it is of another source or version.
    pub fn open(path: &Path, source_len: u64, mtime_ns: u64) -> Result<Option<IndexFile>, Error> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        // SAFETY: the index is this crate's own file, written to a temporary name and renamed when
        // complete, never written again in place; a process that truncated it under us would make
        // reads fault, as with any mapped file, which is the one risk taken for reading in place.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
        let store = crate::store::Store::new(
            file.try_clone().map_err(|e| Error::io(path, e))?,
            path.to_owned(),
            map.len() as u64,
        );
        let bad = |what: &str, at: usize| Error::Index {
            path: path.to_owned(),
            offset: at as u64,
            what: what.into(),
        };
        if map.len() < HEADER_BYTES as usize + FOOTER_BYTES || &map[0..8] != MAGIC {
            return Err(bad("not a Phosphor view index (no magic bytes)", 0));
        }
        if u32_at(&map, 8) != VERSION || u64_at(&map, 16) != source_len || u64_at(&map, 24) != mtime_ns {
            return Ok(None);
        }
        let footer = u64_at(&map, 32) as usize;
        if footer == 0 || footer.checked_add(FOOTER_BYTES) != Some(map.len()) {
            return Err(bad("incomplete index (no footer)", 32));
        }
        if &map[map.len() - 8..] != FOOTER_MAGIC {
            return Err(bad("bad footer magic", map.len() - 8));
        }
        let mut sections = [(0usize, 0usize); SECTIONS];
        for (i, s) in sections.iter_mut().enumerate() {
            let (offset, len) = (u64_at(&map, footer + 16 * i), u64_at(&map, footer + 16 * i + 8));
            let end = offset.checked_add(len).filter(|&e| e <= footer as u64);
            if end.is_none() || offset < HEADER_BYTES {
                return Err(bad("section out of the file", footer + 16 * i));
            }
            *s = (offset as usize, len as usize);
        }
        let [slices, points, samples, names, threads, levels, counters, meta, asyncs, chunks, slice_sums, sample_sums, flows, flow_events, paths, slice_table, point_table, sample_table, flow_table, flow_event_table] =
            sections;
        // The record sections' blocks: each table checked against its section, then each block's
        // frame against its table (`Store::check`).
        let open_blocks =
            |tag: u8, (at, len): (usize, usize), (t, t_len): (usize, usize), layout: &'static Layout| {
                let table = BlockTable::decode(&map[t..t + t_len], layout, len as u64)
                    .map_err(|(what, k)| bad(&what, t + k))?;
                let b = Blocks::new(tag, at as u64, layout, table);
                store.check(&b)?;
                Ok::<Blocks, Error>(b)
            };
        let slices = open_blocks(1, slices, slice_table, &blocks::SLICES)?;
        let points = open_blocks(2, points, point_table, &blocks::POINTS)?;
        let samples = open_blocks(3, samples, sample_table, &blocks::SAMPLES)?;
        let flows = open_blocks(4, flows, flow_table, &blocks::FLOWS)?;
        let flow_events = open_blocks(5, flow_events, flow_event_table, &blocks::FLOW_EVENTS)?;
        for (s, size, what) in [
            (threads, THREAD_BYTES, "threads"),
            (asyncs, THREAD_BYTES, "asyncs"),
            (chunks, 8, "chunks"),
            (slice_sums, SLICE_SUMMARY_BYTES, "slice summaries"),
            (sample_sums, SAMPLE_SUMMARY_BYTES, "sample summaries"),
            (levels, LEVEL_BYTES, "levels"),
            (counters, COUNTER_BYTES, "counters"),
            (paths, PATH_BYTES, "paths"),
        ] {
            if s.1 % size != 0 {
                return Err(bad(&format!("{what} section is not whole records"), s.0));
            }
        }
        let count = |s: (usize, usize), size: usize| (s.1 / size) as u64;
        let level_at = |i: usize| {
            let at = levels.0 + i * LEVEL_BYTES;
            (u64_at(&map, at), u64_at(&map, at + 8))
        };
        let n_levels = count(levels, LEVEL_BYTES) as usize;
        let (n_slices, n_points, n_samples) = (slices.records(), points.records(), samples.records());
        if flow_events.records() != flows.records() {
            return Err(bad("flows by event do not match the flows", flow_event_table.0));
        }
        if count(slice_sums, SLICE_SUMMARY_BYTES) != n_slices.div_ceil(SPAN) {
            return Err(bad("slice summaries do not match the slices", slice_sums.0));
        }
        if count(sample_sums, SAMPLE_SUMMARY_BYTES) != n_samples.div_ceil(SPAN) {
            return Err(bad("sample summaries do not match the samples", sample_sums.0));
        }
        let within = |(first, n): (u64, u64), total: u64| first.checked_add(n).is_some_and(|e| e <= total);
        let mut track_lists = [Vec::new(), Vec::new()];
        for (section, list) in [threads, asyncs].into_iter().zip(&mut track_lists) {
            for i in 0..count(section, THREAD_BYTES) as usize {
                let at = section.0 + i * THREAD_BYTES;
                let (first, n) = (u32_at(&map, at + 8) as usize, u32_at(&map, at + 12) as usize);
                if first.checked_add(n).is_none_or(|e| e > n_levels) {
                    return Err(bad("thread's levels out of the table", at + 8));
                }
                let levels: Vec<(u64, u64)> = (first..first + n).map(level_at).collect();
                let points = (u64_at(&map, at + 16), u64_at(&map, at + 24));
                if !levels.iter().all(|&l| within(l, n_slices)) || !within(points, n_points) {
                    return Err(bad("thread's records out of their section", at));
                }
                let name = u32_at(&map, at + 4);
                list.push(ThreadTrack {
                    tid: u32_at(&map, at),
                    name: (name != NO_NAME).then_some(name),
                    levels,
                    points,
                });
            }
        }
        let [thread_list, async_list] = track_lists;
        let mut counter_list = Vec::new();
        for i in 0..count(counters, COUNTER_BYTES) as usize {
            let at = counters.0 + i * COUNTER_BYTES;
            let samples = (u64_at(&map, at + 8), u64_at(&map, at + 16));
            if !within(samples, n_samples) {
                return Err(bad("counter's samples out of their section", at));
            }
            counter_list.push(CounterTrack { name: u32_at(&map, at), samples });
        }
        let meta: Meta = serde_json::from_slice(&map[meta.0..meta.0 + meta.1])
            .map_err(|e| bad(&format!("bad meta: {e}"), meta.0))?;
        let index = IndexFile {
            path: path.to_owned(),
            slices,
            points,
            samples,
            names,
            threads: thread_list,
            asyncs: async_list,
            chunks,
            slice_sums,
            sample_sums,
            flows,
            flow_events,
            paths,
            counters: counter_list,
            meta,
            map,
            store,
        };
        index.check_names()?;
        Ok(Some(index))
    }

    /// Checks the names' section: its ends in order, within its text, at character boundaries.
    fn check_names(&self) -> Result<(), Error> {
        let (at, len) = self.names;
        let bad = |what: &str, at: usize| Error::Index {
            path: self.path.clone(),
            offset: at as u64,
            what: what.into(),
        };
        if len < 8 {
            return Err(bad("names section too short", at));
        }
        let n = u64_at(&self.map, at);
        let text = n.checked_mul(8).and_then(|b| b.checked_add(8)).filter(|&b| b <= len as u64);
        let Some(text) = text else { return Err(bad("names' count past the section", at)) };
        let text = &self.map[at + text as usize..at + len];
        let text = std::str::from_utf8(text).map_err(|_| bad("names are not UTF-8", at))?;
        let mut prev = 0u64;
        for i in 0..n as usize {
            let end = u64_at(&self.map, at + 8 + 8 * i);
            if end < prev || end > text.len() as u64 || !text.is_char_boundary(end as usize) {
                return Err(bad("name's end out of order", at + 8 + 8 * i));
            }
            prev = end;
        }
        Ok(())
    }

    /// Where the index file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Names in the index.
    pub fn name_count(&self) -> u32 {
        u64_at(&self.map, self.names.0) as u32
    }

    /// The name numbered `n` (empty if there is none).
    pub fn name(&self, n: u32) -> &str {
        let at = self.names.0;
        let count = u64_at(&self.map, at);
        if u64::from(n) >= count {
            return "";
        }
        let end_at = |i: u32| u64_at(&self.map, at + 8 + 8 * i as usize) as usize;
        let text = at + 8 + 8 * count as usize;
        let start = if n == 0 { 0 } else { end_at(n - 1) };
        // Checked at open: the ends are in order, within the text, at character boundaries.
        std::str::from_utf8(&self.map[text + start..text + end_at(n)]).unwrap_or("")
    }

    /// The offset of the chunk block that holds the event whose main record is at `event`.
    pub fn chunk_of(&self, event: u64) -> Option<u64> {
        let n = (self.chunks.1 / 8) as u64;
        let at = |i: u64| u64_at(&self.map, self.chunks.0 + 8 * i as usize);
        // The last chunk that starts at or before the event.
        let after = crate::query::partition(0, n, |i| at(i) <= event);
        (after > 0).then(|| at(after - 1))
    }

    /// Slices in the index.
    pub fn slice_count(&self) -> u64 {
        self.slices.records()
    }

    /// Slice number `i`, if there is one.
    pub fn get_slice(&self, i: u64) -> Option<Slice> {
        (i < self.slice_count()).then(|| self.slice(i))
    }

    /// Slice number `i` (below [`IndexFile::slice_count`]).
    pub(crate) fn slice(&self, i: u64) -> Slice {
        Slice::decode(&self.store.record(&self.slices, i, 0))
    }

    /// The scope path of slice number `i` (below [`IndexFile::slice_count`]): `None` for an
    /// async slice.
    pub(crate) fn slice_path(&self, i: u64) -> Option<u32> {
        let p = u32::from_le_bytes(self.store.record(&self.slices, i, SLICE_BYTES));
        (p != crate::build::NO_PATH).then_some(p)
    }

    /// Scope paths in the index.
    pub(crate) fn path_count(&self) -> u32 {
        (self.paths.1 / PATH_BYTES) as u32
    }

    /// Scope path `p`: its parent (0 is the empty path), its last name's number and its type
    /// (`slice_flags::SCOPE` or a lock's kind); `None` for the empty path or one out of the table.
    pub(crate) fn scope_path(&self, p: u32) -> Option<(u32, u32, u8)> {
        if p == 0 || p >= self.path_count() {
            return None;
        }
        let at = self.paths.0 + p as usize * PATH_BYTES;
        Some((u32_at(&self.map, at), u32_at(&self.map, at + 4), self.map[at + 8]))
    }

    /// Point number `i`.
    pub(crate) fn point(&self, i: u64) -> Point {
        Point::decode(&self.store.record(&self.points, i, 0))
    }

    /// Sample number `i`.
    pub(crate) fn sample(&self, i: u64) -> Sample {
        Sample::decode(&self.store.record(&self.samples, i, 0))
    }

    /// The summary of slices `SPAN × block` on (`summary.rs`).
    pub(crate) fn slice_summary(&self, block: u64) -> SliceSummary {
        SliceSummary::decode(&self.store.read(self.slice_sums.0 as u64 + block * SLICE_SUMMARY_BYTES as u64))
    }

    /// The summary of samples `SPAN × block` on.
    pub(crate) fn sample_summary(&self, block: u64) -> SampleSummary {
        SampleSummary::decode(
            &self.store.read(self.sample_sums.0 as u64 + block * SAMPLE_SUMMARY_BYTES as u64),
        )
    }

    /// Flow members in the index.
    pub(crate) fn flow_count(&self) -> u64 {
        self.flows.records()
    }

    /// Flow member `i` (below [`IndexFile::flow_count`]).
    pub(crate) fn flow(&self, i: u64) -> FlowMember {
        FlowMember::decode(&self.store.record::<FLOW_BYTES>(&self.flows, i, 0))
    }

    /// The flow member recorded at `event`, if one was.
    pub(crate) fn flow_by_event(&self, event: u64) -> Option<FlowMember> {
        let at = |i: u64| self.store.record::<16>(&self.flow_events, i, 0);
        let n = self.flow_count();
        let i = crate::query::partition(0, n, |i| u64_at(&at(i), 0) < event);
        let pair = (i < n).then(|| at(i)).filter(|p| u64_at(p, 0) == event)?;
        let member = u64_at(&pair, 8);
        (member < n).then(|| self.flow(member))
    }

    /// Calls `f` with slices `first..end` and their numbers, in order (their blocks decoded one
    /// after the other, leaving the cache alone).
    pub(crate) fn scan_slices(&self, first: u64, end: u64, mut f: impl FnMut(u64, Slice)) {
        self.store.scan::<SLICE_BYTES>(&self.slices, first, end, 0, |i, b| f(i, Slice::decode(&b)));
    }

    /// Calls `f` with points `first..end` and their numbers, in order.
    pub(crate) fn scan_points(&self, first: u64, end: u64, mut f: impl FnMut(u64, Point)) {
        self.store.scan::<POINT_BYTES>(&self.points, first, end, 0, |i, b| f(i, Point::decode(&b)));
    }

    /// The first damage found in the index's compressed blocks since it was opened, if any
    /// (their records then read as zeros). Opening checks every block's frame; its checksum
    /// only when it is decoded.
    pub fn damage(&self) -> Option<&Error> {
        self.store.damage()
    }
}

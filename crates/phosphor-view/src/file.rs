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
use std::ops::Range;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use phosphor_format::file::Header;
use serde::{Deserialize, Serialize};

use crate::blocks::{self, BlockTable, Columns, Layout};
use crate::flows::{FlowMember, FLOW_BYTES};
use crate::records::{u32_at, u64_at, Point, Sample, Slice, SLICE_BYTES};
use crate::store::Blocks;
use crate::summary::{SampleSummary, SliceSummary, SAMPLE_SUMMARY_BYTES, SLICE_SUMMARY_BYTES, SPAN};
pub(crate) use crate::writer::{IndexWriter, ThreadEntry};
use crate::Error;

/// The index file's first bytes.
pub const MAGIC: &[u8; 8] = b"PHOSVIEW";
/// The footer's last bytes.
pub(crate) const FOOTER_MAGIC: &[u8; 8] = b"PHVIEWFT";
/// The version this crate writes and reads.
pub const VERSION: u32 = 9;
pub(crate) const HEADER_BYTES: u64 = 64;
const SECTIONS: usize = 20;
/// Bytes of a slice's record in its section: the slice, then its scope path (u32).
pub(crate) const SLICE_RECORD: usize = SLICE_BYTES + 4;
const FOOTER_BYTES: usize = SECTIONS * 16 + 8;
pub(crate) const THREAD_BYTES: usize = 32;
const LEVEL_BYTES: usize = 16;
pub(crate) const COUNTER_BYTES: usize = 24;
/// Bytes of a scope path in the paths section: its parent's number, its name's, its type.
pub(crate) const PATH_BYTES: usize = 12;
/// No name.
pub(crate) const NO_NAME: u32 = u32::MAX;

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
        let bad = |what: &str, at: usize| bad_at(path, what, at);
        if map.len() < HEADER_BYTES as usize + FOOTER_BYTES || &map[0..8] != MAGIC {
            return Err(bad("not a Phosphor view index (no magic bytes)", 0));
        }
        if u32_at(&map, 8) != VERSION || u64_at(&map, 16) != source_len || u64_at(&map, 24) != mtime_ns {
            return Ok(None);
        }
        let sections = footer_sections(&map, path)?;
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
        whole_records(
            [
                (threads, THREAD_BYTES, "threads"),
                (asyncs, THREAD_BYTES, "asyncs"),
                (chunks, 8, "chunks"),
                (slice_sums, SLICE_SUMMARY_BYTES, "slice summaries"),
                (sample_sums, SAMPLE_SUMMARY_BYTES, "sample summaries"),
                (levels, LEVEL_BYTES, "levels"),
                (counters, COUNTER_BYTES, "counters"),
                (paths, PATH_BYTES, "paths"),
            ],
            path,
        )?;
        let count = |s: (usize, usize), size: usize| (s.1 / size) as u64;
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
        let thread_list = read_tracks(&map, path, threads, levels, (n_slices, n_points))?;
        let async_list = read_tracks(&map, path, asyncs, levels, (n_slices, n_points))?;
        let counter_list = read_counters(&map, path, counters, n_samples)?;
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

    /// Calls `f` with each block of slices holding slices `first..end`, in order: the number of
    /// its first slice, its rows in `first..end`, and its columns (`blocks::slice_fields`), which
    /// `f` decodes as it needs them. Leaves the cache alone.
    pub(crate) fn scan_slices(&self, first: u64, end: u64, f: impl FnMut(u64, Range<usize>, &mut Columns)) {
        self.store.scan(&self.slices, first, end, f);
    }

    /// Calls `f` with each block of points holding points `first..end`, as
    /// [`IndexFile::scan_slices`] (`blocks::point_fields`).
    pub(crate) fn scan_points(&self, first: u64, end: u64, f: impl FnMut(u64, Range<usize>, &mut Columns)) {
        self.store.scan(&self.points, first, end, f);
    }

    /// The first damage found in the index's compressed blocks since it was opened, if any
    /// (their records then read as zeros). Opening checks every block's frame; its checksum
    /// only when it is decoded.
    pub fn damage(&self) -> Option<&Error> {
        self.store.damage()
    }
}

/// An error in the index `path` at byte `at`.
fn bad_at(path: &Path, what: &str, at: usize) -> Error {
    Error::Index { path: path.to_owned(), offset: at as u64, what: what.into() }
}

/// The sections the footer of `map` (the index `path`) lists, each checked to lie between the
/// header and the footer.
fn footer_sections(map: &[u8], path: &Path) -> Result<[(usize, usize); SECTIONS], Error> {
    let footer = u64_at(map, 32) as usize;
    if footer == 0 || footer.checked_add(FOOTER_BYTES) != Some(map.len()) {
        return Err(bad_at(path, "incomplete index (no footer)", 32));
    }
    if &map[map.len() - 8..] != FOOTER_MAGIC {
        return Err(bad_at(path, "bad footer magic", map.len() - 8));
    }
    let mut sections = [(0usize, 0usize); SECTIONS];
    for (i, s) in sections.iter_mut().enumerate() {
        let (offset, len) = (u64_at(map, footer + 16 * i), u64_at(map, footer + 16 * i + 8));
        let end = offset.checked_add(len).filter(|&e| e <= footer as u64);
        if end.is_none() || offset < HEADER_BYTES {
            return Err(bad_at(path, "section out of the file", footer + 16 * i));
        }
        *s = (offset as usize, len as usize);
    }
    Ok(sections)
}

/// Checks that each section of fixed-size records (section, record size, what) holds whole ones.
fn whole_records<const N: usize>(
    sections: [((usize, usize), usize, &str); N],
    path: &Path,
) -> Result<(), Error> {
    for (s, size, what) in sections {
        if s.1 % size != 0 {
            return Err(bad_at(path, &format!("{what} section is not whole records"), s.0));
        }
    }
    Ok(())
}

/// Whether the records `first`..`first + n` are among `total`.
fn within((first, n): (u64, u64), total: u64) -> bool {
    first.checked_add(n).is_some_and(|e| e <= total)
}

/// The tracks of a threads' (or asyncs') `section`, their levels from the `levels` section, each
/// checked against the levels and the `n_slices` and `n_points` records.
fn read_tracks(
    map: &[u8],
    path: &Path,
    section: (usize, usize),
    levels: (usize, usize),
    (n_slices, n_points): (u64, u64),
) -> Result<Vec<ThreadTrack>, Error> {
    let n_levels = levels.1 / LEVEL_BYTES;
    let level_at = |i: usize| {
        let at = levels.0 + i * LEVEL_BYTES;
        (u64_at(map, at), u64_at(map, at + 8))
    };
    let mut list = Vec::new();
    for i in 0..section.1 / THREAD_BYTES {
        let at = section.0 + i * THREAD_BYTES;
        let (first, n) = (u32_at(map, at + 8) as usize, u32_at(map, at + 12) as usize);
        if first.checked_add(n).is_none_or(|e| e > n_levels) {
            return Err(bad_at(path, "thread's levels out of the table", at + 8));
        }
        let levels: Vec<(u64, u64)> = (first..first + n).map(level_at).collect();
        let points = (u64_at(map, at + 16), u64_at(map, at + 24));
        if !levels.iter().all(|&l| within(l, n_slices)) || !within(points, n_points) {
            return Err(bad_at(path, "thread's records out of their section", at));
        }
        let name = u32_at(map, at + 4);
        list.push(ThreadTrack {
            tid: u32_at(map, at),
            name: (name != NO_NAME).then_some(name),
            levels,
            points,
        });
    }
    Ok(list)
}

/// The counters of the `counters` section, each checked against the `n_samples` records.
fn read_counters(
    map: &[u8],
    path: &Path,
    counters: (usize, usize),
    n_samples: u64,
) -> Result<Vec<CounterTrack>, Error> {
    let mut list = Vec::new();
    for i in 0..counters.1 / COUNTER_BYTES {
        let at = counters.0 + i * COUNTER_BYTES;
        let samples = (u64_at(map, at + 8), u64_at(map, at + 16));
        if !within(samples, n_samples) {
            return Err(bad_at(path, "counter's samples out of their section", at));
        }
        list.push(CounterTrack { name: u32_at(map, at), samples });
    }
    Ok(list)
}

//! Building an index from a trace file, in memory bounded whatever the file's size.
//!
//! 1. The file is read once. Each thread's slices (begin/end pairs, complete and lock events) go
//!    through the model (`slices.rs`: `phosphor_model::nesting`, the tree `phosphor stats`
//!    counts), which hands each slice over with its scope path once that is final; the slice, its
//!    level (its path's depth) and its path go to an external sorter ([`extsort`]: sorted segments
//!    of [`BuildOptions::segment_items`] on disk, merged), by thread, level and start. Points,
//!    counter samples, async slices and flows go to sorters of their own.
//! 2. Slices are written level after level ([`Placer`]: a slice that overlaps the one before it
//!    on its level, interlaced, goes a level down); async slices get lanes; points by thread and
//!    time; samples by counter and time.
//!
//! What a build holds in memory: what the model holds (its pending limit of slices per thread,
//! and the open begins), a counter of each kind per thread, the names (each distinct name once),
//! the paths, the sorters' segments, and the tables of the index (16 bytes a thread's level).

use std::cmp::Ordering;
use std::io::{self, Read, Write};
use std::path::PathBuf;

use extsort::{ExternalSorter, Sortable};
use phosphor_format::file::{Event, Extents, Reader, Value};
use phosphor_format::Phase;
use rustc_hash::FxHashMap as HashMap;

use crate::file::{IndexWriter, Meta, ThreadEntry};
use crate::flows::{member_kinds, FlowMember, FLOW_BYTES};
use crate::records::{
    point_kinds, slice_flags, Point, Sample, Slice, POINT_BYTES, SAMPLE_BYTES, SLICE_BYTES,
};
use crate::slices::Model;
use crate::Error;
use phosphor_model::asyncs::{async_name, AsyncKey, Lanes, Matched, Pairing};
use phosphor_model::timeline::Timeline;

/// How an index is built.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// Where the sorters write their segments (the system's temporary directory by default).
    pub sort_dir: Option<PathBuf>,
    /// Records a sorter holds in memory before it writes a segment: about 48 bytes each.
    pub segment_items: usize,
    /// Set to the bytes of the trace read so far, as the build goes (for a progress figure).
    pub progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// Records in each compressed block of the index's record sections (0: the default, 512).
    pub block_records: u32,
}

impl Default for BuildOptions {
    fn default() -> BuildOptions {
        BuildOptions { sort_dir: None, segment_items: 1 << 17, progress: None, block_records: 0 }
    }
}

/// A slice on its way through the sorters: its thread, its place in the file's order, and (after
/// the first sort) its level.
#[derive(Clone, Copy, Debug)]
struct Pending {
    tid: u32,
    depth: u32,
    seq: u64,
    /// Its scope path's number ([`NO_PATH`] for an async slice).
    path: u32,
    slice: Slice,
}

/// The path of a slice that has none (an async slice).
pub(crate) const NO_PATH: u32 = u32::MAX;

impl Sortable for Pending {
    fn encode<W: Write>(&self, w: &mut W) -> io::Result<()> {
        w.write_all(&self.tid.to_le_bytes())?;
        w.write_all(&self.depth.to_le_bytes())?;
        w.write_all(&self.seq.to_le_bytes())?;
        w.write_all(&self.path.to_le_bytes())?;
        w.write_all(&self.slice.encode())
    }

    fn decode<R: Read>(r: &mut R) -> io::Result<Pending> {
        let mut b = [0u8; 20 + SLICE_BYTES];
        r.read_exact(&mut b)?;
        let mut s = [0u8; SLICE_BYTES];
        s.copy_from_slice(&b[20..]);
        Ok(Pending {
            tid: crate::records::u32_at(&b, 0),
            depth: crate::records::u32_at(&b, 4),
            seq: crate::records::u64_at(&b, 8),
            path: crate::records::u32_at(&b, 16),
            slice: Slice::decode(&s),
        })
    }
}

/// A point or a sample on its way through a sorter: its group (a thread, a counter), its place in
/// the file's order, and its bytes.
#[derive(Clone, Copy, Debug)]
struct Keyed<const N: usize> {
    group: u32,
    seq: u64,
    ts: u64,
    bytes: [u8; N],
}

impl<const N: usize> Sortable for Keyed<N> {
    fn encode<W: Write>(&self, w: &mut W) -> io::Result<()> {
        w.write_all(&self.group.to_le_bytes())?;
        w.write_all(&self.seq.to_le_bytes())?;
        w.write_all(&self.ts.to_le_bytes())?;
        w.write_all(&self.bytes)
    }

    fn decode<R: Read>(r: &mut R) -> io::Result<Keyed<N>> {
        let mut head = [0u8; 20];
        r.read_exact(&mut head)?;
        let mut bytes = [0u8; N];
        r.read_exact(&mut bytes)?;
        Ok(Keyed {
            group: crate::records::u32_at(&head, 0),
            seq: crate::records::u64_at(&head, 4),
            ts: crate::records::u64_at(&head, 12),
            bytes,
        })
    }
}

impl Sortable for FlowMember {
    fn encode<W: Write>(&self, w: &mut W) -> io::Result<()> {
        w.write_all(&FlowMember::encode(self))
    }

    fn decode<R: Read>(r: &mut R) -> io::Result<FlowMember> {
        let mut b = [0u8; FLOW_BYTES];
        r.read_exact(&mut b)?;
        Ok(FlowMember::decode(&b))
    }
}

/// What the first pass takes in: a chunk (its extents, and its block's offset), or an event.
enum Item<'a, 'e> {
    Chunk { extents: &'a Extents, offset: u64 },
    Event(&'a Event<'e>),
}

/// What the index keeps of an async begin or end while the model pairs it: its callsite, its
/// event and its thread.
#[derive(Clone, Copy, Debug)]
struct AsyncHalf {
    callsite: u32,
    event: u64,
    tid: u32,
}

/// A thread's state while the file is read.
#[derive(Debug, Default)]
struct Thread {
    /// The latest time of its events.
    last: u64,
}

/// Each distinct name once, numbered in the order first seen (in one buffer: a trace of a
/// million thread names costs their bytes, not a million allocations).
pub(crate) type Names = phosphor_export::NameSet;

/// Where what the model hands over goes: a pair is an async slice of its name's track; a begin
/// never ended, one that runs to the end of the trace (its end is set once that is known); an
/// end never begun, a point on its thread.
fn async_matched(
    key: AsyncKey,
    m: Matched<AsyncHalf>,
    seq: u64,
    asyncs: &mut impl FnMut(Pending) -> io::Result<()>,
    points: &mut impl FnMut(Keyed<POINT_BYTES>) -> io::Result<()>,
) -> io::Result<()> {
    let name = key.name;
    let (begin, end, flags) = match m {
        Matched::Pair { begin, end, .. } => (begin, end.ts, slice_flags::SCOPE),
        Matched::Unended(begin) => (begin, u64::MAX, slice_flags::SCOPE | slice_flags::UNCLOSED),
        Matched::Unbegun(h) => {
            let kind = point_kinds::END_WITHOUT_BEGIN;
            let p = Point { ts: h.ts, name, callsite: h.payload.callsite, event: h.payload.event, kind };
            return points(Keyed { group: h.payload.tid, seq, ts: h.ts, bytes: p.encode() });
        }
    };
    let (start, AsyncHalf { callsite, event, .. }) = (begin.ts, begin.payload);
    // An end earlier than its begin: a pair of no length (the model's rule).
    let slice = Slice { start, end: end.max(start), name, callsite, event, flags };
    asyncs(Pending { tid: name, depth: 0, seq, path: NO_PATH, slice })
}

/// A counter's or data point's value: its argument 0, if it is a number or a bool.
pub(crate) fn sample_value(e: &Event<'_>) -> Option<f64> {
    match e.args[0] {
        Some((_, Value::U64(v))) => Some(v as f64),
        Some((_, Value::I64(v))) => Some(v as f64),
        Some((_, Value::F64(v))) => Some(v),
        Some((_, Value::Bool(v))) => Some(f64::from(u8::from(v))),
        _ => None,
    }
}

/// What an instant is: the runtime's saturation marker, or an instant of the program's.
pub(crate) fn instant_kind(e: &Event<'_>) -> u8 {
    let saturation = e.callsite.category == "phosphor" && e.callsite.name == "saturation";
    if saturation {
        point_kinds::SATURATION
    } else {
        point_kinds::INSTANT
    }
}

/// Builds the index of the file `reader` reads into `out`.
pub(crate) fn build<R: Read>(
    mut reader: Reader<R>,
    mut out: IndexWriter,
    options: &BuildOptions,
) -> Result<Meta, Error> {
    let sorter = || {
        let s = ExternalSorter::new().with_segment_size(options.segment_items.max(1));
        match &options.sort_dir {
            Some(dir) => s.with_sort_dir(dir.clone()),
            None => s,
        }
    };
    // Thread slices, as the model nests them, by thread, level and start.
    let by_level = |a: &Pending, b: &Pending| -> Ordering {
        (a.tid, a.depth, a.slice.start, a.seq).cmp(&(b.tid, b.depth, b.slice.start, b.seq))
    };
    let mut slices = sorter().pushed_by(by_level);
    let mut model = Model::new(Timeline::new(&reader.header().clock));
    let mut resolved = 0u64;
    let mut take = |model: &mut Model| {
        model.drain(|tid, depth, path, slice| {
            resolved += 1;
            slices.push(Pending { tid, depth, seq: resolved, path, slice })
        })
    };
    // Async slices, by name (their `tid`) and start: lanes are given in that order.
    let by_start =
        |a: &Pending, b: &Pending| (a.tid, a.slice.start, a.seq).cmp(&(b.tid, b.slice.start, b.seq));
    let mut asyncs = sorter().pushed_by(by_start);
    // Begins and ends paired by the model's rule (by shown name and id, in file order).
    let mut pairing: Pairing<AsyncHalf> = Pairing::default();
    let by_time =
        |a: &Keyed<POINT_BYTES>, b: &Keyed<POINT_BYTES>| (a.group, a.ts, a.seq).cmp(&(b.group, b.ts, b.seq));
    let mut points = sorter().pushed_by(by_time);
    let by_counter = |a: &Keyed<SAMPLE_BYTES>, b: &Keyed<SAMPLE_BYTES>| {
        (a.group, a.ts, a.seq).cmp(&(b.group, b.ts, b.seq))
    };
    let mut samples = sorter().pushed_by(by_counter);
    // Flagged events of instrumented futures (`flows.rs`), by name, id and time.
    let mut flows = sorter().pushed_by(|a: &FlowMember, b: &FlowMember| a.key().cmp(&b.key()));

    let mut meta = Meta::new(reader.header());
    let mut names = Names::default();
    let mut counters: HashMap<u32, u32> = HashMap::default();
    let mut counter_names: Vec<u32> = Vec::new();
    let mut threads: HashMap<u32, Thread> = HashMap::default();
    let mut seq = 0u64;
    let mut span: Option<(u64, u64)> = None;
    let mut scratch = String::new();

    // By writer stream, the last chunk number seen.
    let mut streams: HashMap<(u16, u32), u64> = HashMap::default();
    // Every chunk block's offset, in file order: an event's chunk is found by it, to read again.
    let mut chunk_offsets: Vec<u64> = Vec::new();
    let mut add = |item: Item<'_, '_>, names: &mut Names| -> io::Result<()> {
        seq += 1;
        let e = match item {
            Item::Event(e) => e,
            Item::Chunk { extents: x, offset } => {
                // The index stores offsets in 56 bits (`records::pack_offset`); an event's offset
                // fits whenever its chunk's does, as they share the chunk's block or group.
                if crate::records::pack_offset(offset).is_none() {
                    let why = format!(
                        "the chunk at offset {offset:#x} is past what the viewer's index addresses \
                         (compressed groups starting up to 4 GiB into the file)"
                    );
                    return Err(io::Error::new(io::ErrorKind::InvalidData, why));
                }
                chunk_offsets.push(offset);
                // A gap in a writer stream's chunk numbers: chunks lost (overwritten in a ring)
                // just before this one, marked where the stream picks up again. The pieces of a
                // streamed chunk share its number.
                let n = x.seq & ((1 << phosphor_format::file::SEQ_STREAM_SHIFT) - 1);
                let lost = match streams.insert(x.stream_key(), n) {
                    None => n,
                    Some(last) => n.saturating_sub(last.saturating_add(1)),
                };
                if lost > 0 {
                    let plural = if lost == 1 { "" } else { "s" };
                    let name = names.number(&format!("{lost} chunk{plural} lost"));
                    let kind = point_kinds::LOST_CHUNKS;
                    let p = Point { ts: x.first_ts, name, callsite: 0, event: offset, kind };
                    points.push(Keyed { group: x.tid, seq, ts: x.first_ts, bytes: p.encode() })?;
                }
                return Ok(());
            }
        };
        let cs = &e.callsite;
        let ts = e.ts;
        let end = e.ts.saturating_add(e.duration.unwrap_or(0));
        let thread = threads.entry(e.tid).or_default();
        thread.last = thread.last.max(end);
        span = Some(span.map_or((ts, end), |(lo, hi): (u64, u64)| (lo.min(ts), hi.max(end))));
        let point = |name: u32, kind: u8| {
            let p = Point { ts, name, callsite: cs.id, event: e.offset, kind };
            Keyed { group: e.tid, seq, ts, bytes: p.encode() }
        };
        // Marks, as the statistics nest them (all but the runtime's bookkeeping of a scope's
        // allocations).
        let bookkeeping = cs.category == "phosphor" && cs.name == "scope_alloc";
        if matches!(cs.phase, Phase::Instant | Phase::Log | Phase::Counter | Phase::Data) && !bookkeeping {
            model.mark(e.tid, ts);
        }
        match cs.phase {
            Phase::Complete | Phase::LockWait | Phase::LockHeld => {
                // A lock's callsites are `NAME.wait` / `NAME.held`: `NAME (wait)` / `NAME (held)`,
                // as every output names them.
                let event_name = phosphor_export::logs::event_name(e, &mut scratch);
                let name = names.number(&phosphor_model::names::lock_name(event_name, cs.phase));
                let flags = match cs.phase {
                    Phase::LockWait => slice_flags::LOCK_WAIT,
                    Phase::LockHeld => slice_flags::LOCK_HELD,
                    _ => slice_flags::COMPLETE,
                };
                let slice =
                    Slice { start: ts, end: end.max(ts), name, callsite: cs.id, event: e.offset, flags };
                model.slice(e.tid, cs.phase, slice);
                take(&mut model)?;
                // A poll of an instrumented future: argument 0 is its task's id.
                if let (true, Phase::Complete, Some((_, Value::U64(id)))) = (cs.flow, cs.phase, e.args[0]) {
                    let kind = member_kinds::POLL;
                    flows.push(FlowMember { name, id, ts, tid: e.tid, event: e.offset, kind })?;
                }
            }
            Phase::Begin => {
                let name = names.number(phosphor_export::logs::event_name(e, &mut scratch));
                let slice = Slice { start: ts, end: ts, name, callsite: cs.id, event: e.offset, flags: 0 };
                model.slice(e.tid, Phase::Begin, slice);
            }
            Phase::End => {
                let name = names.number(phosphor_export::logs::event_name(e, &mut scratch));
                // It closes the innermost open begin, whatever its name (the model's rule).
                if model.end(e.tid, name, ts) {
                    take(&mut model)?;
                } else {
                    points.push(point(name, point_kinds::END_WITHOUT_BEGIN))?;
                }
            }
            Phase::Instant => {
                let name = names.number(phosphor_export::logs::event_name(e, &mut scratch));
                points.push(point(name, instant_kind(e)))?;
            }
            Phase::Log => {
                // Named by the format string: the message is made when it is shown.
                let name = names.number(&cs.name);
                points.push(point(name, point_kinds::LOG))?;
            }
            Phase::Counter | Phase::Data => {
                let Some(value) = sample_value(e) else { return Ok(()) };
                let name = names.number(phosphor_export::logs::event_name(e, &mut scratch));
                let next = counter_names.len() as u32;
                let track = *counters.entry(name).or_insert(next);
                if track == next {
                    counter_names.push(name);
                }
                let sample = Sample { ts, value };
                samples.push(Keyed { group: track, seq, ts, bytes: sample.encode() })?;
            }
            Phase::AsyncBegin | Phase::AsyncEnd => {
                let name = names.number(async_name(e));
                let key = AsyncKey { name, id: e.async_id.unwrap_or(0) };
                let begin = cs.phase == Phase::AsyncBegin;
                if cs.flow {
                    let kind = if begin { member_kinds::BEGIN } else { member_kinds::END };
                    flows.push(FlowMember { name, id: key.id, ts, tid: e.tid, event: e.offset, kind })?;
                }
                let half = AsyncHalf { callsite: cs.id, event: e.offset, tid: e.tid };
                let mut done = Ok(());
                let (asyncs, points) = (&mut asyncs, &mut points);
                pairing.add(key, begin, ts, half, &mut |k, m| {
                    if done.is_ok() {
                        done = async_matched(k, m, seq, &mut |p| asyncs.push(p), &mut |p| points.push(p));
                    }
                });
                done?;
            }
        }
        Ok(())
    };

    loop {
        let chunk = match reader.next_chunk() {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(e) => {
                meta.read_error = Some(e.to_string());
                break;
            }
        };
        meta.chunks += 1;
        if let Some(p) = &options.progress {
            // Relaxed: a figure for display; nothing is read through it.
            p.store(chunk.stored_end(), std::sync::atomic::Ordering::Relaxed);
        }
        add(Item::Chunk { extents: &chunk.extents, offset: chunk.offset }, &mut names)?;
        for event in chunk.events() {
            match event {
                Ok(e) => {
                    meta.events += 1;
                    add(Item::Event(&e), &mut names)?;
                }
                Err(e) => {
                    meta.read_error = Some(e.to_string());
                    break;
                }
            }
        }
        if meta.read_error.is_some() {
            break;
        }
    }
    (meta.start_ticks, meta.end_ticks) = span.unwrap_or((0, 0));
    // The last chunk number of each writer stream (a million of them, for a million threads).
    drop(streams);
    let mut tids: Vec<u32> = threads.keys().copied().collect();
    tids.sort_unstable();
    // Begins never ended run to their thread's last event.
    model.finish();
    model.drain(|tid, depth, path, mut slice| {
        if slice.flags & slice_flags::UNCLOSED != 0 {
            slice.end = threads.get(&tid).map_or(slice.start, |t| t.last).max(slice.start);
        }
        resolved += 1;
        slices.push(Pending { tid, depth, seq: resolved, path, slice })
    })?;
    drop(threads);
    // The halves still waiting: begins never ended run to the end of the trace (below), ends
    // never begun are points.
    let mut done = Ok(());
    pairing.finish(&mut |k, m| {
        seq += 1;
        if done.is_ok() {
            done = async_matched(k, m, seq, &mut |p| asyncs.push(p), &mut |p| points.push(p));
        }
    });
    done?;

    // Lanes (the model's packing): by start, each async slice takes the lane of its name that
    // freed first if that lane's last slice ended before it begins, or a new one: as few lanes as
    // slices open at once.
    let mut laned = sorter().pushed_by(by_level);
    let mut lanes = Lanes::default();
    for p in asyncs.done()? {
        let mut p = p?;
        if p.slice.flags & slice_flags::UNCLOSED != 0 {
            p.slice.end = meta.end_ticks.max(p.slice.start);
        }
        p.depth = lanes.place(p.tid, p.slice.start, p.slice.end);
        laned.push(p)?;
    }
    drop(lanes);

    // Pass 3: the index, level after level.
    // Every thread gets an entry: room for all at once, not grown by doubling.
    let mut table: Vec<ThreadEntry> = Vec::with_capacity(tids.len());
    // The levels of every thread, a thread's in a row (the thread being written is the last).
    let mut levels: Vec<(u64, u64)> = Vec::new();
    let mut placer = Placer::default();
    let mut write = |p: Pending| -> Result<(), Error> {
        let at = out.slice(&p.slice, p.path)?;
        match table.last_mut() {
            Some(t) if t.tid == p.tid => t.add_slice(&mut levels, p.depth, at),
            _ => {
                let mut t = ThreadEntry::new(p.tid);
                t.add_slice(&mut levels, p.depth, at);
                table.push(t);
            }
        }
        Ok(())
    };
    for p in slices.done()? {
        placer.take(p?, &mut write)?;
    }
    placer.flush(&mut write)?;
    let mut async_table: Vec<ThreadEntry> = Vec::new();
    let mut async_levels: Vec<(u64, u64)> = Vec::new();
    for p in laned.done()? {
        let p = p?;
        let at = out.slice(&p.slice, NO_PATH)?;
        match async_table.last_mut() {
            Some(t) if t.tid == p.tid => t.add_slice(&mut async_levels, p.depth, at),
            _ => {
                let mut t = ThreadEntry::new(p.tid);
                t.name = Some(p.tid);
                t.add_slice(&mut async_levels, p.depth, at);
                async_table.push(t);
            }
        }
    }
    for p in points.done()? {
        let p = p?;
        let at = out.point(&p.bytes)?;
        let i = match table.binary_search_by_key(&p.group, |t| t.tid) {
            Ok(i) => i,
            Err(i) => {
                table.insert(i, ThreadEntry::new(p.group));
                i
            }
        };
        table[i].add_point(at);
    }
    let mut counter_spans: Vec<(u64, u64)> = vec![(0, 0); counter_names.len()];
    for s in samples.done()? {
        let s = s?;
        let at = out.sample(&s.bytes)?;
        let span = &mut counter_spans[s.group as usize];
        if span.1 == 0 {
            span.0 = at;
        }
        span.1 += 1;
    }
    // Flows, and where each member was recorded, by event.
    // (A pair goes as a keyed record of no bytes: `ts` the event, `seq` the member.)
    let mut by_event = sorter().pushed_by(|a: &Keyed<0>, b: &Keyed<0>| (a.ts, a.seq).cmp(&(b.ts, b.seq)));
    for m in flows.done()? {
        let m = m?;
        let at = out.flow(&m)?;
        by_event.push(Keyed { group: 0, seq: at, ts: m.event, bytes: [] })?;
    }
    for pair in by_event.done()? {
        let pair = pair?;
        out.flow_event(pair.ts, pair.seq)?;
    }
    for &tid in &tids {
        if let Err(i) = table.binary_search_by_key(&tid, |t| t.tid) {
            table.insert(i, ThreadEntry::new(tid));
        }
    }
    for t in &mut table {
        t.name = reader.thread_name(t.tid).map(|n| names.number(&n));
    }
    let counters = counter_names.into_iter().zip(counter_spans).collect();
    // `chunk_of` searches them by value: plain offsets sort before virtual ones, whatever the
    // order of plain and compressed blocks in the file.
    chunk_offsets.sort_unstable();
    out.paths(model.paths())?;
    out.finish(&names, (&table, &levels), (&async_table, &async_levels), counters, &chunk_offsets, &meta)?;
    Ok(meta)
}

/// Puts each thread's slices on their levels as they come, by thread, level and start: a slice
/// that overlaps the one before it on its level (interlaced scopes, which the model leaves
/// siblings) goes a level further down, flagged [`slice_flags::INTERLACED`], so that a level's
/// slices never overlap and its list is sorted by end as well as by start. It holds the slices
/// moved down until their level is written.
#[derive(Debug, Default)]
struct Placer {
    /// The thread and level being written.
    at: Option<(u32, u32)>,
    /// The latest end on that level so far.
    last_end: u64,
    /// Slices moved down from the level being written, in order of start.
    down: Vec<Pending>,
    /// Slices moved down to the level being written, in order of start.
    carried: std::collections::VecDeque<Pending>,
}

type Emit<'a> = dyn FnMut(Pending) -> Result<(), Error> + 'a;

impl Placer {
    /// Takes the next slice, in order of thread, level and start.
    fn take(&mut self, p: Pending, write: &mut Emit<'_>) -> Result<(), Error> {
        loop {
            match self.at {
                Some(at) if at == (p.tid, p.depth) => break,
                Some((tid, depth)) if !self.down.is_empty() || !self.carried.is_empty() => {
                    // The level before is done: then those moved down from it, a level lower.
                    while let Some(c) = self.carried.pop_front() {
                        self.place(c, write)?;
                    }
                    if !self.down.is_empty() {
                        self.start(tid, depth + 1);
                    }
                }
                _ => {
                    self.start(p.tid, p.depth);
                    break;
                }
            }
        }
        while self.carried.front().is_some_and(|c| (c.slice.start, c.seq) < (p.slice.start, p.seq)) {
            let c = self.carried.pop_front().expect("not empty");
            self.place(c, write)?;
        }
        self.place(p, write)
    }

    /// Starts level `depth` of `tid`, with the slices moved down to it.
    fn start(&mut self, tid: u32, depth: u32) {
        self.carried = std::mem::take(&mut self.down).into();
        self.at = Some((tid, depth));
        self.last_end = 0;
    }

    fn place(&mut self, mut p: Pending, write: &mut Emit<'_>) -> Result<(), Error> {
        let Some((_, depth)) = self.at else { return Ok(()) };
        if self.last_end > p.slice.start {
            p.slice.flags |= slice_flags::INTERLACED;
            p.depth = depth + 1;
            self.down.push(p);
            return Ok(());
        }
        self.last_end = self.last_end.max(p.slice.end);
        p.depth = depth;
        write(p)
    }

    /// Writes what is left moved down, level after level.
    fn flush(&mut self, write: &mut Emit<'_>) -> Result<(), Error> {
        while let Some((tid, depth)) = self.at {
            while let Some(c) = self.carried.pop_front() {
                self.place(c, write)?;
            }
            if self.down.is_empty() {
                return Ok(());
            }
            self.start(tid, depth + 1);
        }
        Ok(())
    }
}

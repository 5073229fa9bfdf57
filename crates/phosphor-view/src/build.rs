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

use extsort::{ExternalSorter, PushExternalSorter, Sortable};
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
use placer::Placer;

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

mod placer;

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

/// How a sorter orders its records: one of the functions below (a type of its own each, so that
/// the sorts call it directly, inlined: through a function pointer, the build took 7% more
/// instructions).
trait Cmp<T>: Fn(&T, &T) -> Ordering + Send + Sync + Clone {}

impl<T, F: Fn(&T, &T) -> Ordering + Send + Sync + Clone> Cmp<T> for F {}

/// A sorter of the build, its records ordered by `F`.
type Sorter<T, F> = PushExternalSorter<T, F>;

/// A sorter writing its segments where `options` says.
fn sorter<T: Sortable, F: Cmp<T>>(options: &BuildOptions, cmp: F) -> Sorter<T, F> {
    let s = ExternalSorter::new().with_segment_size(options.segment_items.max(1));
    match &options.sort_dir {
        Some(dir) => s.with_sort_dir(dir.clone()),
        None => s,
    }
    .pushed_by(cmp)
}

/// Thread slices, as the model nests them (and async slices once laned): by thread, level and
/// start.
fn by_level(a: &Pending, b: &Pending) -> Ordering {
    (a.tid, a.depth, a.slice.start, a.seq).cmp(&(b.tid, b.depth, b.slice.start, b.seq))
}

/// Async slices, by name (their `tid`) and start: lanes are given in that order.
fn by_start(a: &Pending, b: &Pending) -> Ordering {
    (a.tid, a.slice.start, a.seq).cmp(&(b.tid, b.slice.start, b.seq))
}

/// Points by thread, samples by counter; then by time.
fn by_group<const N: usize>(a: &Keyed<N>, b: &Keyed<N>) -> Ordering {
    (a.group, a.ts, a.seq).cmp(&(b.group, b.ts, b.seq))
}

/// Flagged events of instrumented futures (`flows.rs`), by name, id and time.
fn by_flow(a: &FlowMember, b: &FlowMember) -> Ordering {
    a.key().cmp(&b.key())
}

/// A flow member's place, by event (`ts` the event, `seq` the member).
fn by_event(a: &Keyed<0>, b: &Keyed<0>) -> Ordering {
    (a.ts, a.seq).cmp(&(b.ts, b.seq))
}

/// Builds the index of the file `reader` reads into `out`.
pub(crate) fn build<R: Read>(
    mut reader: Reader<R>,
    mut out: IndexWriter,
    options: &BuildOptions,
) -> Result<Meta, Error> {
    // Pass 1: the file, once, into the sorters.
    let mut first = first_pass(&reader, options);
    first.read(&mut reader, options)?;
    // Pass 2: what is left open at the end, and the async slices' lanes.
    let Sorted { sorters, tids, mut names, model, counter_names, mut chunk_offsets, meta } =
        first.finish()?;
    // Pass 3: the index, level after level.
    let tables = sorters.write(&mut out, &tids, counter_names.len(), options)?;
    let Tables { mut table, levels, async_table, async_levels, counter_spans } = tables;
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

/// What the first pass gathers as it reads the file, into sorters ordered by `L` (thread
/// slices, and async slices once laned), `A` (async slices), `P` (points), `S` (samples) and `F`
/// (flow members).
struct FirstPass<
    L: Cmp<Pending>,
    A: Cmp<Pending>,
    P: Cmp<Keyed<POINT_BYTES>>,
    S: Cmp<Keyed<SAMPLE_BYTES>>,
    F: Cmp<FlowMember>,
> {
    /// Thread slices, as the model nests them, by thread, level and start.
    slices: Sorter<Pending, L>,
    /// Async slices on their lanes (filled once the file is read).
    laned: Sorter<Pending, L>,
    /// Slices the model has handed over so far.
    resolved: u64,
    asyncs: Sorter<Pending, A>,
    /// Begins and ends paired by the model's rule (by shown name and id, in file order).
    pairing: Pairing<AsyncHalf>,
    points: Sorter<Keyed<POINT_BYTES>, P>,
    samples: Sorter<Keyed<SAMPLE_BYTES>, S>,
    flows: Sorter<FlowMember, F>,
    model: Model,
    meta: Meta,
    names: Names,
    /// A counter's track, by its name.
    counters: HashMap<u32, u32>,
    /// The tracks' names, by track.
    counter_names: Vec<u32>,
    threads: HashMap<u32, Thread>,
    /// The place of the item being added, in the file's order.
    seq: u64,
    span: Option<(u64, u64)>,
    scratch: String,
    /// By writer stream, the last chunk number seen.
    streams: HashMap<(u16, u32), u64>,
    /// Every chunk block's offset, in file order: an event's chunk is found by it, to read again.
    chunk_offsets: Vec<u64>,
}

/// The first pass of a build of the file `reader` reads.
#[allow(clippy::type_complexity)]
fn first_pass<R: Read>(
    reader: &Reader<R>,
    options: &BuildOptions,
) -> FirstPass<
    impl Cmp<Pending>,
    impl Cmp<Pending>,
    impl Cmp<Keyed<POINT_BYTES>>,
    impl Cmp<Keyed<SAMPLE_BYTES>>,
    impl Cmp<FlowMember>,
> {
    FirstPass {
        slices: sorter(options, by_level),
        laned: sorter(options, by_level),
        resolved: 0,
        asyncs: sorter(options, by_start),
        pairing: Pairing::default(),
        points: sorter(options, by_group::<POINT_BYTES>),
        samples: sorter(options, by_group::<SAMPLE_BYTES>),
        flows: sorter(options, by_flow),
        model: Model::new(Timeline::new(&reader.header().clock)),
        meta: Meta::new(reader.header()),
        names: Names::default(),
        counters: HashMap::default(),
        counter_names: Vec::new(),
        threads: HashMap::default(),
        seq: 0,
        span: None,
        scratch: String::new(),
        streams: HashMap::default(),
        chunk_offsets: Vec::new(),
    }
}

impl<L, A, P, S, F> FirstPass<L, A, P, S, F>
where
    L: Cmp<Pending>,
    A: Cmp<Pending>,
    P: Cmp<Keyed<POINT_BYTES>>,
    S: Cmp<Keyed<SAMPLE_BYTES>>,
    F: Cmp<FlowMember>,
{
    /// Reads the file to its end or its first error (kept in the meta).
    fn read<R: Read>(&mut self, reader: &mut Reader<R>, options: &BuildOptions) -> io::Result<()> {
        loop {
            let chunk = match reader.next_chunk() {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) => {
                    self.meta.read_error = Some(e.to_string());
                    break;
                }
            };
            self.meta.chunks += 1;
            if let Some(p) = &options.progress {
                // Relaxed: a figure for display; nothing is read through it.
                p.store(chunk.stored_end(), std::sync::atomic::Ordering::Relaxed);
            }
            self.seq += 1;
            self.chunk(&chunk.extents, chunk.offset)?;
            for event in chunk.events() {
                match event {
                    Ok(e) => {
                        self.meta.events += 1;
                        self.seq += 1;
                        self.event(&e)?;
                    }
                    Err(e) => {
                        self.meta.read_error = Some(e.to_string());
                        break;
                    }
                }
            }
            if self.meta.read_error.is_some() {
                break;
            }
        }
        (self.meta.start_ticks, self.meta.end_ticks) = self.span.unwrap_or((0, 0));
        Ok(())
    }

    /// A chunk: its offset, and a point where chunks of its writer stream were lost before it.
    fn chunk(&mut self, x: &Extents, offset: u64) -> io::Result<()> {
        // The index stores offsets in 56 bits (`records::pack_offset`); an event's offset fits
        // whenever its chunk's does, as they share the chunk's block or group.
        if crate::records::pack_offset(offset).is_none() {
            let why = format!(
                "the chunk at offset {offset:#x} is past what the viewer's index addresses \
                 (compressed groups starting up to 4 GiB into the file)"
            );
            return Err(io::Error::new(io::ErrorKind::InvalidData, why));
        }
        self.chunk_offsets.push(offset);
        // A gap in a writer stream's chunk numbers: chunks lost (overwritten in a ring) just
        // before this one, marked where the stream picks up again. The pieces of a streamed
        // chunk share its number.
        let n = x.seq & ((1 << phosphor_format::file::SEQ_STREAM_SHIFT) - 1);
        let lost = match self.streams.insert(x.stream_key(), n) {
            None => n,
            Some(last) => n.saturating_sub(last.saturating_add(1)),
        };
        if lost > 0 {
            let plural = if lost == 1 { "" } else { "s" };
            let name = self.names.number(&format!("{lost} chunk{plural} lost"));
            let kind = point_kinds::LOST_CHUNKS;
            let p = Point { ts: x.first_ts, name, callsite: 0, event: offset, kind };
            self.points.push(Keyed { group: x.tid, seq: self.seq, ts: x.first_ts, bytes: p.encode() })?;
        }
        Ok(())
    }

    /// Hands what the model has resolved to the slices' sorter.
    fn take(&mut self) -> io::Result<()> {
        let (slices, resolved) = (&mut self.slices, &mut self.resolved);
        self.model.drain(|tid, depth, path, slice| {
            *resolved += 1;
            slices.push(Pending { tid, depth, seq: *resolved, path, slice })
        })
    }

    /// A point of event `e` on its thread.
    fn point(&self, e: &Event<'_>, name: u32, kind: u8) -> Keyed<POINT_BYTES> {
        let p = Point { ts: e.ts, name, callsite: e.callsite.id, event: e.offset, kind };
        Keyed { group: e.tid, seq: self.seq, ts: e.ts, bytes: p.encode() }
    }

    /// An event: to the model, or to the sorter of its kind.
    fn event(&mut self, e: &Event<'_>) -> io::Result<()> {
        let cs = &e.callsite;
        let ts = e.ts;
        let end = e.ts.saturating_add(e.duration.unwrap_or(0));
        let thread = self.threads.entry(e.tid).or_default();
        thread.last = thread.last.max(end);
        self.span = Some(self.span.map_or((ts, end), |(lo, hi): (u64, u64)| (lo.min(ts), hi.max(end))));
        // Marks, as the statistics nest them (all but the runtime's bookkeeping of a scope's
        // allocations).
        let bookkeeping = cs.category == "phosphor" && cs.name == "scope_alloc";
        if matches!(cs.phase, Phase::Instant | Phase::Log | Phase::Counter | Phase::Data) && !bookkeeping {
            self.model.mark(e.tid, ts);
        }
        match cs.phase {
            Phase::Complete | Phase::LockWait | Phase::LockHeld => self.complete(e, end)?,
            Phase::Begin => {
                let name = self.names.number(phosphor_export::logs::event_name(e, &mut self.scratch));
                let slice = Slice { start: ts, end: ts, name, callsite: cs.id, event: e.offset, flags: 0 };
                self.model.slice(e.tid, Phase::Begin, slice);
            }
            Phase::End => {
                let name = self.names.number(phosphor_export::logs::event_name(e, &mut self.scratch));
                // It closes the innermost open begin, whatever its name (the model's rule).
                if self.model.end(e.tid, name, ts) {
                    self.take()?;
                } else {
                    self.points.push(self.point(e, name, point_kinds::END_WITHOUT_BEGIN))?;
                }
            }
            Phase::Instant => {
                let name = self.names.number(phosphor_export::logs::event_name(e, &mut self.scratch));
                self.points.push(self.point(e, name, instant_kind(e)))?;
            }
            Phase::Log => {
                // Named by the format string: the message is made when it is shown.
                let name = self.names.number(&cs.name);
                self.points.push(self.point(e, name, point_kinds::LOG))?;
            }
            Phase::Counter | Phase::Data => self.sample(e)?,
            Phase::AsyncBegin | Phase::AsyncEnd => self.async_half(e)?,
        }
        Ok(())
    }

    /// A complete slice or a lock's wait or hold, ending at `end`.
    fn complete(&mut self, e: &Event<'_>, end: u64) -> io::Result<()> {
        let (cs, ts) = (&e.callsite, e.ts);
        // A lock's callsites are `NAME.wait` / `NAME.held`: `NAME (wait)` / `NAME (held)`, as
        // every output names them.
        let event_name = phosphor_export::logs::event_name(e, &mut self.scratch);
        let name = self.names.number(&phosphor_model::names::lock_name(event_name, cs.phase));
        let flags = match cs.phase {
            Phase::LockWait => slice_flags::LOCK_WAIT,
            Phase::LockHeld => slice_flags::LOCK_HELD,
            _ => slice_flags::COMPLETE,
        };
        let slice = Slice { start: ts, end: end.max(ts), name, callsite: cs.id, event: e.offset, flags };
        self.model.slice(e.tid, cs.phase, slice);
        self.take()?;
        // A poll of an instrumented future: argument 0 is its task's id.
        if let (true, Phase::Complete, Some((_, Value::U64(id)))) = (cs.flow, cs.phase, e.args[0]) {
            let kind = member_kinds::POLL;
            self.flows.push(FlowMember { name, id, ts, tid: e.tid, event: e.offset, kind })?;
        }
        Ok(())
    }

    /// A counter's or data point's sample, on its name's track.
    fn sample(&mut self, e: &Event<'_>) -> io::Result<()> {
        let Some(value) = sample_value(e) else { return Ok(()) };
        let name = self.names.number(phosphor_export::logs::event_name(e, &mut self.scratch));
        let next = self.counter_names.len() as u32;
        let track = *self.counters.entry(name).or_insert(next);
        if track == next {
            self.counter_names.push(name);
        }
        let sample = Sample { ts: e.ts, value };
        self.samples.push(Keyed { group: track, seq: self.seq, ts: e.ts, bytes: sample.encode() })
    }

    /// An async begin or end, to be paired (and a member of its flow if its callsite is flagged).
    fn async_half(&mut self, e: &Event<'_>) -> io::Result<()> {
        let (cs, ts, seq) = (&e.callsite, e.ts, self.seq);
        let name = self.names.number(async_name(e));
        let key = AsyncKey { name, id: e.async_id.unwrap_or(0) };
        let begin = cs.phase == Phase::AsyncBegin;
        if cs.flow {
            let kind = if begin { member_kinds::BEGIN } else { member_kinds::END };
            self.flows.push(FlowMember { name, id: key.id, ts, tid: e.tid, event: e.offset, kind })?;
        }
        let half = AsyncHalf { callsite: cs.id, event: e.offset, tid: e.tid };
        let mut done = Ok(());
        let (asyncs, points) = (&mut self.asyncs, &mut self.points);
        self.pairing.add(key, begin, ts, half, &mut |k, m| {
            if done.is_ok() {
                done = async_matched(k, m, seq, &mut |p| asyncs.push(p), &mut |p| points.push(p));
            }
        });
        done
    }

    /// Ends the first pass: begins never ended run to their thread's last event, async ones to the
    /// end of the trace; the async slices get their lanes.
    fn finish(mut self) -> io::Result<Sorted<L, P, S, F>> {
        // The last chunk number of each writer stream (a million of them, for a million threads).
        drop(std::mem::take(&mut self.streams));
        let mut tids: Vec<u32> = self.threads.keys().copied().collect();
        tids.sort_unstable();
        self.model.finish();
        let (slices, resolved, threads) = (&mut self.slices, &mut self.resolved, &self.threads);
        self.model.drain(|tid, depth, path, mut slice| {
            if slice.flags & slice_flags::UNCLOSED != 0 {
                slice.end = threads.get(&tid).map_or(slice.start, |t| t.last).max(slice.start);
            }
            *resolved += 1;
            slices.push(Pending { tid, depth, seq: *resolved, path, slice })
        })?;
        drop(std::mem::take(&mut self.threads));
        // The halves still waiting: begins never ended run to the end of the trace (below), ends
        // never begun are points.
        let mut done = Ok(());
        let (asyncs, points, seq) = (&mut self.asyncs, &mut self.points, &mut self.seq);
        self.pairing.finish(&mut |k, m| {
            *seq += 1;
            if done.is_ok() {
                done = async_matched(k, m, *seq, &mut |p| asyncs.push(p), &mut |p| points.push(p));
            }
        });
        done?;
        let laned = lanes(self.asyncs, self.laned, self.meta.end_ticks)?;
        let sorters = Sorters {
            slices: self.slices,
            laned,
            points: self.points,
            samples: self.samples,
            flows: self.flows,
        };
        Ok(Sorted {
            sorters,
            tids,
            names: self.names,
            model: self.model,
            counter_names: self.counter_names,
            chunk_offsets: self.chunk_offsets,
            meta: self.meta,
        })
    }
}

/// Lanes (the model's packing): by start, each async slice takes the lane of its name that freed
/// first if that lane's last slice ended before it begins, or a new one: as few lanes as slices
/// open at once. Those never ended run to `end_ticks`, the end of the trace.
fn lanes<A: Cmp<Pending>, L: Cmp<Pending>>(
    asyncs: Sorter<Pending, A>,
    mut laned: Sorter<Pending, L>,
    end_ticks: u64,
) -> io::Result<Sorter<Pending, L>> {
    let mut lanes = Lanes::default();
    for p in asyncs.done()? {
        let mut p = p?;
        if p.slice.flags & slice_flags::UNCLOSED != 0 {
            p.slice.end = end_ticks.max(p.slice.start);
        }
        p.depth = lanes.place(p.tid, p.slice.start, p.slice.end);
        laned.push(p)?;
    }
    Ok(laned)
}

/// What the first pass leaves sorted, for the index.
struct Sorted<L: Cmp<Pending>, P: Cmp<Keyed<POINT_BYTES>>, S: Cmp<Keyed<SAMPLE_BYTES>>, F: Cmp<FlowMember>> {
    sorters: Sorters<L, P, S, F>,
    /// Every thread seen, in order.
    tids: Vec<u32>,
    names: Names,
    model: Model,
    counter_names: Vec<u32>,
    chunk_offsets: Vec<u64>,
    meta: Meta,
}

/// The records, sorted as the index lists them.
struct Sorters<L: Cmp<Pending>, P: Cmp<Keyed<POINT_BYTES>>, S: Cmp<Keyed<SAMPLE_BYTES>>, F: Cmp<FlowMember>> {
    slices: Sorter<Pending, L>,
    laned: Sorter<Pending, L>,
    points: Sorter<Keyed<POINT_BYTES>, P>,
    samples: Sorter<Keyed<SAMPLE_BYTES>, S>,
    flows: Sorter<FlowMember, F>,
}

/// The index's tables, as the records are written.
struct Tables {
    /// Every thread's entry, by thread.
    table: Vec<ThreadEntry>,
    /// The levels of every thread, a thread's in a row.
    levels: Vec<(u64, u64)>,
    /// Each async name's entry.
    async_table: Vec<ThreadEntry>,
    async_levels: Vec<(u64, u64)>,
    /// Each counter's first sample and count, by track.
    counter_spans: Vec<(u64, u64)>,
}

impl<L: Cmp<Pending>, P: Cmp<Keyed<POINT_BYTES>>, S: Cmp<Keyed<SAMPLE_BYTES>>, F: Cmp<FlowMember>>
    Sorters<L, P, S, F>
{
    /// Writes the records to `out`, and returns the tables that find them: an entry for each of
    /// `tids`, a span for each of `counters`.
    fn write(
        self,
        out: &mut IndexWriter,
        tids: &[u32],
        counters: usize,
        options: &BuildOptions,
    ) -> Result<Tables, Error> {
        let (mut table, levels) = write_slices(self.slices, out, tids.len())?;
        let (async_table, async_levels) = write_asyncs(self.laned, out)?;
        for p in self.points.done()? {
            let p = p?;
            let at = out.point(&p.bytes)?;
            let i = entry(&mut table, p.group);
            table[i].add_point(at);
        }
        let counter_spans = write_samples(self.samples, out, counters)?;
        write_flows(self.flows, out, options)?;
        for &tid in tids {
            entry(&mut table, tid);
        }
        Ok(Tables { table, levels, async_table, async_levels, counter_spans })
    }
}

/// Tracks' entries, and the levels of all of them (a track's in a row).
type Entries = (Vec<ThreadEntry>, Vec<(u64, u64)>);

/// The place of `tid`'s entry in `table` (sorted by thread), added if it has none.
fn entry(table: &mut Vec<ThreadEntry>, tid: u32) -> usize {
    match table.binary_search_by_key(&tid, |t| t.tid) {
        Ok(i) => i,
        Err(i) => {
            table.insert(i, ThreadEntry::new(tid));
            i
        }
    }
}

/// Writes the thread slices level after level ([`Placer`]), and returns each thread's entry and
/// the levels of all (`threads`: how many threads, for room).
fn write_slices(
    slices: Sorter<Pending, impl Cmp<Pending>>,
    out: &mut IndexWriter,
    threads: usize,
) -> Result<Entries, Error> {
    // Every thread gets an entry: room for all at once, not grown by doubling.
    let mut table: Vec<ThreadEntry> = Vec::with_capacity(threads);
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
    Ok((table, levels))
}

/// Writes the async slices on their lanes, and returns each name's entry and the lanes of all.
fn write_asyncs(laned: Sorter<Pending, impl Cmp<Pending>>, out: &mut IndexWriter) -> Result<Entries, Error> {
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
    Ok((async_table, async_levels))
}

/// Writes the samples by counter, and returns each counter's first sample and count.
fn write_samples(
    samples: Sorter<Keyed<SAMPLE_BYTES>, impl Cmp<Keyed<SAMPLE_BYTES>>>,
    out: &mut IndexWriter,
    counters: usize,
) -> Result<Vec<(u64, u64)>, Error> {
    let mut counter_spans: Vec<(u64, u64)> = vec![(0, 0); counters];
    for s in samples.done()? {
        let s = s?;
        let at = out.sample(&s.bytes)?;
        let span = &mut counter_spans[s.group as usize];
        if span.1 == 0 {
            span.0 = at;
        }
        span.1 += 1;
    }
    Ok(counter_spans)
}

/// Writes the flows, and where each member was recorded, by event.
fn write_flows(
    flows: Sorter<FlowMember, impl Cmp<FlowMember>>,
    out: &mut IndexWriter,
    options: &BuildOptions,
) -> Result<(), Error> {
    // (A pair goes as a keyed record of no bytes: `ts` the event, `seq` the member.)
    let mut by_event = sorter::<Keyed<0>, _>(options, by_event);
    for m in flows.done()? {
        let m = m?;
        let at = out.flow(&m)?;
        by_event.push(Keyed { group: 0, seq: at, ts: m.event, bytes: [] })?;
    }
    for pair in by_event.done()? {
        let pair = pair?;
        out.flow_event(pair.ts, pair.seq)?;
    }
    Ok(())
}

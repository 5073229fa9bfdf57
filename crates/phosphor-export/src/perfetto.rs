//! Perfetto's protobuf trace format (`.pftrace`), as [Perfetto's UI](https://ui.perfetto.dev) and
//! trace processor load it.
//!
//! [`write_perfetto`] streams a trace file into a `perfetto.protos.Trace`: each event is encoded
//! into one reused buffer and written out as a `TracePacket`, as the [`Reader`] decodes it or, for
//! a thread's slices, once their nesting is known (below), so memory stays bounded whatever the
//! size of the file. What grows is per thread (its slices held, up to a limit), per distinct name,
//! and per open async slice (bounded); never per event, but for the [`AsyncPlan`] of
//! [`write_perfetto_planned`], 4 bytes per async begin or end up to a cap. The protobuf is written by hand (`pb`: varints and
//! length-delimited fields), since the output is a fixed set of messages; the field numbers
//! (`proto`) come from the official `perfetto_trace.proto`. The tests decode every output with the
//! code generated from that schema (`scripts/check_pftrace.py`), and check that it holds no
//! unknown field and that trace processor's rules for interning, tracks and clocks hold.
//!
//! # Mapping
//!
//! | Phosphor phase | Perfetto `TrackEvent` | track |
//! |---|---|---|
//! | begin / end | `TYPE_SLICE_BEGIN` / `TYPE_SLICE_END` | the thread's |
//! | complete | `TYPE_SLICE_BEGIN` at `ts`, `TYPE_SLICE_END` at `ts + dur` | the thread's |
//! | lock wait / lock held | the same; the name gets ` (wait)` / ` (held)` | the thread's |
//! | instant, log | `TYPE_INSTANT`; a log's name is its format string | the thread's |
//! | counter | `TYPE_COUNTER`, `counter_value` (integers, bools) or `double_counter_value` | one counter track per category, name and argument, under the process |
//! | async begin / end | `TYPE_SLICE_BEGIN` / `TYPE_SLICE_END`; the begin carries `async_id` | a lane of its (category, name), under the process |
//!
//! Tracks are `TrackDescriptor`s: the process (`ProcessDescriptor`: pid and name from the header),
//! each thread with events (`ThreadDescriptor`: pid, tid, name), counters (`CounterDescriptor`)
//! and async slices, each emitted before the first event on it. A thread's name may come in a
//! threads block after its chunks, so its descriptor is written when the thread is first seen (with
//! its name if one is known by then) and again, under the same uuid, whenever a threads block names
//! or renames it; trace processor keeps the last name. A counter whose value is not a number (a
//! string or a pointer) becomes an instant with the values as arguments, so nothing is dropped.
//!
//! # Slices recorded at their end, and ties
//!
//! A complete event (and a lock event) is recorded when it ends, after the events nested inside
//! it. Trace processor sorts each track's events by timestamp, ties in stream order (its sorter
//! compares `(ts, arrival)`), then an end closes the innermost open slice: so a child stamped in
//! the nanosecond its parent began must come after the parent's begin in the stream, and ends of
//! one nanosecond inner-first. The thread slices (begins, ends, complete and lock events,
//! instants, logs) therefore go through [`phosphor_model::ordered::Ordered`], which holds each
//! thread's slices until their tree is known, on the nanoseconds written here, and hands them
//! back as a walk in time order (`perfetto/walk.rs`): what trace processor builds is the tree
//! `phosphor stats` counts. It holds at most
//! [`WRITER_PENDING_LIMIT`](phosphor_model::ordered::WRITER_PENDING_LIMIT) slices per thread;
//! past it the oldest are written early (`slices_written_early` in the trace summary), and a
//! slice that later encloses them in the very nanosecond one of them began may not nest it. Other events
//! (counters, async slices, system context) are written as they are read.
//!
//! `TYPE_SLICE_END` carries no name: like an `E` event it closes the innermost open slice of its
//! track, so an end whose name differs from its begin still closes it (the statistics report such
//! mismatches: the model's one rule). An end with no begin open on its thread closes nothing; it
//! is not written, and the trace summary counts it (`unmatched_ends`). The arguments of an end event go on its `TYPE_SLICE_END`, and trace processor adds
//! them to the slice.
//!
//! # Async slices
//!
//! Async slices of one name share a few tracks, *lanes*, named as the slices (for a `dyn`
//! callsite, the name its events carry): a lane holds one slice at a time, as Perfetto's own SDK
//! lays out its async tracks, and Perfetto's UI shows the lanes of one name together. Begins and
//! ends pair by the model's rule (`phosphor_model::asyncs`: shown name and id, in file order; a
//! second begin gives the first up, left open on a lane of its own). Chunks are written per thread, so an end recorded on one thread can come before its
//! begin in the file, and slices come in no time order. [`write_perfetto_planned`] follows an
//! [`AsyncPlan`] made in a first reading of the file, which knows every slice's interval and so
//! gives each name as many lanes as it has slices open at one instant, the fewest possible
//! (`perfetto/plan.rs`: what counts as open for unpaired, reused or backwards slices, and the
//! memory cap, past which it falls back, counted). [`write_perfetto`] lays them out in one pass
//! (`perfetto/lanes.rs`): a lane is reused only by a slice that begins after everything it held,
//! and an end that comes first takes a new lane, so a file whose ends precede their begins gets
//! about a lane per slice. Either way no two slices overlap on a lane. Pairs are matched in file
//! order, so an id reused while an earlier use's begin and end are still out of order in the file
//! can pair the wrong ones; ids that are not reused at once (request ids, pointers) are safe.
//!
//! # Time
//!
//! Timestamps are absolute `CLOCK_MONOTONIC` nanoseconds: the header's `origin_monotonic_ns` plus
//! the nanoseconds since the clock origin (`ClockInfo::since_origin_ns`, exact for nanosecond
//! clocks, rounded for the TSC), clamped to `0..=i64::MAX`. The first packet is a `ClockSnapshot`
//! pairing `BUILTIN_CLOCK_MONOTONIC` and `BUILTIN_CLOCK_REALTIME` at the origin (so the UI can show
//! wall time), with `primary_trace_clock = BUILTIN_CLOCK_MONOTONIC` so that trace processor keeps
//! monotonic time as trace time instead of converting to `BOOTTIME` (which the header does not
//! know). The same packet sets `TracePacketDefaults.timestamp_clock_id = BUILTIN_CLOCK_MONOTONIC`
//! for the sequence, so no packet repeats it. A slice's end is `ns(ts + dur)`, never before its
//! begin.
//!
//! # Sequence and interning
//!
//! Every packet of a file is on one sequence (`trusted_packet_sequence_id = 1`, or the file's in a
//! merged export): tracks already separate the threads, and one sequence means one interning
//! table. The first packet sets `SEQ_INCREMENTAL_STATE_CLEARED`. Event packets do not set
//! `SEQ_NEEDS_INCREMENTAL_STATE`, although they rely on the sequence's defaults and interned
//! names: trace processor uses that flag only to skip the packets of a sequence that lost its
//! state, which a file written whole never does, and it took two bytes of every packet. An event
//! on a thread's track names no track: `TrackEventDefaults.track_uuid` is set to the thread's by
//! the first packet after a switch of thread (about once per chunk). Event names, categories and argument names are interned (`EventName`, `EventCategory`,
//! `DebugAnnotationName`, iids from 1 by order of first use), each defined in the `interned_data`
//! of the packet that first uses it, or of an earlier one: a thread slice's names are interned as
//! it is read, and it may be written later (`perfetto/walk.rs`), so its entries go into the next
//! event packet written; events refer to them by `TrackEvent.name_iid`,
//! `TrackEvent.category_iids` and `DebugAnnotation.name_iid`. Names from the file are interned by
//! their index in the reader's string table, which holds each distinct string once, so callsites
//! with the same name share an iid, a callsite id that a later callsites block redefines gets its
//! new names, and the exporter holds no copy of a name (`perfetto/intern.rs`).
//!
//! # Several files
//!
//! [`write_perfetto_placed`] writes one file of a merged export, so that files written one after
//! the other to one output make one trace (a `Trace` is a list of packets): file `n` (its
//! [`FilePlace::index`]) is on packet sequence `n + 1`, with interning of its own, under a process
//! track of its own whose uuid, like its threads', counters' and lanes', carries `n` in its top 16
//! bits, so two files never share a track even with one pid. Its times are moved by
//! [`FilePlace::shift_ns`] onto the shared timeline ([`crate::timeline`]). Each sequence's first
//! packet is a clock snapshot defining its incremental clock; only the first file's pairs
//! `CLOCK_MONOTONIC` with the wall clock and names the primary trace clock, which holds for
//! them all. The first file at
//! [`FilePlace::default()`] writes exactly what [`write_perfetto_planned`] writes.
//!
//! # Arguments and drops
//!
//! Arguments are debug annotations: `int_value`, `uint_value`, `double_value` (NaN and the
//! infinities as they are), `bool_value`, `string_value`, `pointer_value`. An argument without a
//! name is `arg0` / `arg1`. An event whose string argument was cut when recorded gets the extra
//! annotation `truncated = true`.
//!
//! The last packet is an instant named `trace summary` (category `phosphor`) on the process
//! track, at the latest timestamp written: `events_recorded`, `events_dropped`, one
//! `dropped.<reason>` per reason that lost events, `chunks_overwritten` and `buffer_exhausted` when
//! set, from the trailer; or `incomplete = true` and `read_error_offset` when the file ended early;
//! and `chunks_lost`, the chunks missing from the writer streams' sequence numbers
//! ([`ChunkLosses`](crate::ChunkLosses)), when there are any.
//!
//! # Compression
//!
//! [`CompressedPackets`] wraps the output of any of the writers here: it bundles the packets, about
//! 256 KiB at a time, into packets of `compressed_packets` (a zlib-compressed `Trace`, as
//! Perfetto's own service writes them), which trace processor and the UI inflate and read in
//! place, so nothing of the trace changes but its size (the demo: 28.8 → 8.0 bytes per event).
//! The compression runs on a second thread, so on two cores the wall time stays about the same.
//!
//! # Speed
//!
//! About 11 M events/s in a release build, converting a generated file of mixed events to a sink
//! on the development machine, where reading the file alone runs at 24 M and Chrome JSON at 6.5 M
//! (the ignored test `perfetto::tests::throughput` measures all three). An event is a few varints
//! written in place, with no allocation and no formatting. A planned export reads the file twice;
//! the plan's reading decodes every event once an async callsite is defined (none before, so a
//! file without async callsites is only read) but keeps only the async ones (the full demo, 920k
//! events: 260 to 360 ms planned, 210 to 260 ms in one pass, on a busy 2-core machine).

mod clock;
mod compress;
mod counters;
mod intern;
mod lanes;
mod packets;
mod pb;
mod plan;
mod proto;
mod streamed;
mod summary;
mod system;
mod tracks;
mod walk;

use rustc_hash::FxHashMap as HashMap;
use std::io::{self, Read, Write};

use phosphor_format::file::{Block, Callsite, Chunk, ClockInfo, Event, Reader, Value};
use phosphor_format::system::{PHOSPHOR_CATEGORY, SCOPE_ALLOC_ARGS, SCOPE_ALLOC_NAME};
use phosphor_format::Phase;

/// Whether `cs` is the runtime's per-scope allocation counts (`phosphor/scope_alloc`).
fn is_scope_alloc(cs: &Callsite<'_>) -> bool {
    cs.phase == Phase::Instant && cs.category == PHOSPHOR_CATEGORY && cs.name == SCOPE_ALLOC_NAME
}

use intern::{CallsiteCache, Interner};
use lanes::Lanes;
use packets::FLUSH_AT;
use pb::Enc;
use phosphor_model::ordered::{is_thread_slice, Ordered};
use proto::*;
use tracks::{ThreadTrack, UUID_PROCESS};

pub use crate::error::{Error, ExportSummary};
pub use compress::{CompressedPackets, PacketCompression, IN_FLIGHT};
pub use plan::{AsyncPlan, MAX_PLANNED_ASYNC_EVENTS};

/// Writes the trace that `reader` reads as a Perfetto protobuf trace to `out` (in blocks of about
/// 64 KiB: `out` needs no buffering of its own).
///
/// On a read error (a truncated or corrupt file) the events read so far stay written, followed by
/// the summary instant, so the output is a valid trace; [`Error::Read`] says where reading stopped.
/// See the [module docs](self) for the mapping.
///
/// ```
/// # let bytes = include_bytes!("../../phosphor-format/tests/data/golden-v1.phtrace");
/// use phosphor_format::file::Reader;
///
/// let mut pftrace = Vec::new();
/// let summary = phosphor_export::perfetto::write_perfetto(Reader::new(&bytes[..])?, &mut pftrace)?;
/// assert!(summary.complete);
/// assert_eq!(pftrace[0], 0x0a); // Trace.packet, length-delimited
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Async slices are laid out in one pass, in file order, which can take many more tracks than
/// [`write_perfetto_planned`] (see the [module docs](self#async-slices)).
pub fn write_perfetto<R: Read, W: Write>(reader: Reader<R>, out: W) -> Result<ExportSummary, Error> {
    Exporter::new(&reader, out, None, FilePlace::default()).run(reader)
}

/// [`write_perfetto`], with the async slices laid out on the fewest tracks by `plan`, which
/// [`AsyncPlan::from_reader`] made from a first reading of the same file (`reader` is a second).
///
/// Async events the plan does not cover (it overflowed [`MAX_PLANNED_ASYNC_EVENTS`], or the file
/// holds more than when it was planned) are laid out in one pass, on lanes of their own, and
/// counted in the trace summary (and flagged by [`ExportSummary::async_unplanned`]).
///
/// ```
/// # let bytes = include_bytes!("../../phosphor-format/tests/data/golden-v1.phtrace");
/// use phosphor_export::perfetto::{write_perfetto_planned, AsyncPlan};
/// use phosphor_format::file::Reader;
///
/// let plan = AsyncPlan::from_reader(Reader::new(&bytes[..])?);
/// let mut pftrace = Vec::new();
/// let summary = write_perfetto_planned(Reader::new(&bytes[..])?, plan, &mut pftrace)?;
/// assert!(!summary.async_unplanned);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_perfetto_planned<R: Read, W: Write>(
    reader: Reader<R>,
    plan: AsyncPlan,
    out: W,
) -> Result<ExportSummary, Error> {
    Exporter::new(&reader, out, Some(plan), FilePlace::default()).run(reader)
}

/// Where one file of a merged export goes ([`write_perfetto_placed`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FilePlace {
    /// The file's number among the files: its packets go on sequence `index + 1` (its own
    /// interning and clock snapshot), and its tracks' uuids carry it in their top 16 bits, so
    /// two files never share a track, even with the same pid.
    pub index: u16,
    /// Added to the file's `CLOCK_MONOTONIC` times: its place on the shared timeline
    /// ([`crate::timeline::Placement::shift_ns`]).
    pub shift_ns: i64,
}

/// One file of a merged export: [`write_perfetto_planned`] (or, without a plan,
/// [`write_perfetto`]) with the file's packets on a sequence of its own, its tracks under a
/// process track of its own, and its times shifted onto the shared timeline, as `place` says.
/// Files written one after the other to one output make one trace (a `Trace` is its packets);
/// the first file at [`FilePlace::default()`] writes what a single-file export writes.
pub fn write_perfetto_placed<R: Read, W: Write>(
    reader: Reader<R>,
    plan: Option<AsyncPlan>,
    place: FilePlace,
    out: W,
) -> Result<ExportSummary, Error> {
    Exporter::new(&reader, out, plan, place).run(reader)
}

/// The streaming state.
struct Exporter<W: Write> {
    out: W,
    /// Packets encoded and not yet written, the last one possibly still being encoded.
    buf: Enc,
    /// Where the body of the packet being encoded starts in `buf`.
    packet: usize,
    interner: Interner,
    /// The sequence's incremental clocks and defaults (`perfetto/clock.rs`).
    clocks: clock::Clocks,
    callsites: CallsiteCache,
    clock: ClockInfo,
    /// `CLOCK_MONOTONIC` at the clock origin, shifted onto the shared timeline, clamped to `i64`.
    origin_ns: i64,
    /// The same, for the clock snapshot.
    snapshot_monotonic_ns: u64,
    /// The packet sequence (`FilePlace::index + 1`).
    sequence: u64,
    /// Or'ed into every track uuid: the file's index in the top 16 bits.
    uuid_base: u64,
    pid: u32,
    process_uuid: u64,
    threads: HashMap<u32, ThreadTrack>,
    last_thread: Option<(u32, u64)>,
    counters: HashMap<(String, String), u64>,
    lanes: Lanes,
    /// The plan being followed, if one was given.
    plan: Option<plan::Follow>,
    /// Async events laid out in one pass although a plan was given.
    unplanned: u64,
    next_track: u64,
    /// Iids of the annotations the exporter adds, once interned (0 before).
    truncated_iid: u64,
    async_id_iid: u64,
    /// The flow id the next `TrackEvent` carries (set just before it is written).
    flow: Option<u64>,
    /// The flow id the next `TrackEvent` terminates.
    terminating_flow: Option<u64>,
    /// The latest timestamp written.
    last_ns: Option<u64>,
    /// Chunks seen per writer stream, for the chunks lost to sequence gaps.
    losses: crate::ChunkLosses,
    /// A log's formatted message or a run-time name, for the event being written.
    message: String,
    /// Scratch for the fields of a thread slice held by [`Ordered`] (`perfetto/walk.rs`).
    held: Enc,
    /// Interned annotation names `level`, `p0`, `p1`, ... (0 until first used).
    level_iid: u64,
    param_iids: [u64; phosphor_format::MAX_PARAMS],
    /// Format 1.6's system context: off-CPU tracks, samples, the heap (`perfetto/system.rs`).
    system: system::SystemTracks,
    /// The thread, start and end (written nanoseconds, as its slice has them) of the complete
    /// event just read, and its end in raw ticks, if the event just read was one: a
    /// `phosphor/scope_alloc` right after it, stamped with its end, is its allocation counts.
    last_complete: Option<((u32, u64, u64), u64)>,
    /// Allocation counts attached to complete events not written yet, by (thread, start, end):
    /// they go on the slice's `TYPE_SLICE_END` as arguments.
    allocs: HashMap<(u32, u64, u64), AllocCounts>,
    /// `phosphor/scope_alloc` events that followed no complete event of their thread (dropped).
    allocs_unattached: u64,
    /// The first write error met while [`Ordered`] walked slices (`perfetto/walk.rs`).
    walk_error: Option<io::Error>,
    /// Thread slices written before their tree was known, and ends dropped ([`Ordered`]), for
    /// the trace summary.
    slices_written_early: u64,
    unmatched_ends: u64,
}

/// A scope's `phosphor/scope_alloc` counts, by argument name (`SCOPE_ALLOC_ARGS`).
type AllocCounts = [Option<(&'static str, u64)>; 2];

/// The flow that links async slice `id` of `cs`'s category and name to the slices that work for
/// it (its polls): a hash of the three, the same in every chunk and generation of the export.
pub(crate) fn flow_id(cs: &Callsite<'_>, id: u64) -> u64 {
    phosphor_model::flows::flow_id(cs.category.as_str(), cs.name.as_str(), id)
}

impl<W: Write> Exporter<W> {
    fn new<R: Read>(reader: &Reader<R>, out: W, plan: Option<AsyncPlan>, place: FilePlace) -> Exporter<W> {
        let header = reader.header();
        let uuid_base = u64::from(place.index) << 48;
        let shifted = i128::from(header.clock.origin_monotonic_ns) + i128::from(place.shift_ns);
        Exporter {
            out,
            buf: Enc::with_capacity(FLUSH_AT + 1024),
            packet: 0,
            interner: Interner::default(),
            clocks: clock::Clocks::new(shifted.clamp(0, i128::from(u64::MAX)) as u64),
            callsites: CallsiteCache::new(),
            clock: header.clock.clone(),
            origin_ns: plan::origin_ns(&header.clock).saturating_add(place.shift_ns),
            snapshot_monotonic_ns: shifted.clamp(0, i128::from(u64::MAX)) as u64,
            sequence: u64::from(place.index) + 1,
            uuid_base,
            pid: header.pid,
            process_uuid: uuid_base | u64::from(header.pid) << 4 | UUID_PROCESS,
            threads: HashMap::default(),
            last_thread: None,
            counters: HashMap::default(),
            lanes: Lanes::default(),
            plan: plan.map(plan::Follow::new),
            unplanned: 0,
            next_track: 1,
            truncated_iid: 0,
            async_id_iid: 0,
            flow: None,
            terminating_flow: None,
            last_ns: None,
            losses: crate::ChunkLosses::default(),
            message: String::new(),
            held: Enc::default(),
            level_iid: 0,
            param_iids: [0; phosphor_format::MAX_PARAMS],
            system: system::SystemTracks::default(),
            last_complete: None,
            allocs: HashMap::default(),
            allocs_unattached: 0,
            walk_error: None,
            slices_written_early: 0,
            unmatched_ends: 0,
        }
    }

    /// Exports the rest of the file and flushes.
    fn run<R: Read>(&mut self, mut reader: Reader<R>) -> Result<ExportSummary, Error> {
        let mut summary = ExportSummary::default();
        let mut ordered = Ordered::default();
        self.preamble(&reader.header().process_name)?;
        // Not `read_events`: table blocks matter here (redefined callsites, late thread names).
        let failure = loop {
            match reader.next_block() {
                Ok(Some(Block::Chunk(chunk))) => {
                    summary.chunks += 1;
                    self.losses.add(&chunk.extents);
                    let mut failed = None;
                    for event in chunk.events() {
                        // By reference: moving an `Event` out of the `Result` is a copy of its
                        // 288 bytes, per event.
                        match &event {
                            Ok(e) => {
                                self.event(e, &chunk, &mut ordered)?;
                                summary.events += 1;
                            }
                            Err(_) => {
                                failed = event.err();
                                break;
                            }
                        }
                    }
                    if failed.is_some() {
                        break failed;
                    }
                }
                Ok(Some(Block::Callsites { .. })) => self.callsites.generation += 1,
                Ok(Some(Block::Threads { .. })) => self.sync_thread_names(&reader)?,
                Ok(Some(Block::System(batch))) => self.system(batch)?,
                Ok(Some(_)) => {}
                Ok(None) => break None,
                Err(e) => break Some(e),
            }
        };
        ordered.finish(reader.tables(), self);
        self.walked()?;
        self.slices_written_early = ordered.written_early();
        self.unmatched_ends = ordered.unmatched_ends();
        self.close_off_cpu()?;
        summary.threads = u32::try_from(self.threads.len()).unwrap_or(u32::MAX);
        summary.async_unplanned = self.unplanned > 0;
        summary.complete = reader.trailer().is_some();
        self.trace_summary(reader.trailer(), failure.as_ref().map(|e| e.offset()))?;
        self.out.write_all(self.buf.as_slice())?;
        self.buf.clear();
        self.out.flush()?;
        match failure {
            None => Ok(summary),
            Some(source) => Err(Error::Read { offset: source.offset(), exported: summary, source }),
        }
    }

    /// Absolute `CLOCK_MONOTONIC` nanoseconds of a raw timestamp.
    #[inline]
    fn ns(&self, ticks: u64) -> u64 {
        plan::ns(self.origin_ns, &self.clock, ticks)
    }

    /// Writes event `e` of `chunk`; a slice of its thread's track goes through `ordered`, which
    /// writes it once its place in the thread's tree is known (`perfetto/walk.rs`).
    fn event(&mut self, e: &Event<'_>, chunk: &Chunk<'_>, ordered: &mut Ordered) -> io::Result<()> {
        let cs = &e.callsite;
        let last_complete = self.last_complete.take();
        if is_scope_alloc(cs) {
            self.attach_alloc(e, last_complete);
            return Ok(());
        }
        let ts = self.ns(e.ts);
        // Described here, in stream order, with the name the chunk knows; written to later.
        let thread = self.thread_track(e.tid, ts, chunk)?;
        if is_thread_slice(cs.phase) {
            let mut end_ns = ts;
            if cs.phase.has_duration() {
                let end = e.ts.saturating_add(e.duration.unwrap_or(0));
                end_ns = self.ns(end).max(ts);
                self.last_complete = Some(((e.tid, ts, end_ns), end));
            }
            ordered.push_at(chunk, e, ts, end_ns, self);
            return self.walked();
        }
        self.clocks.streamed(thread);
        let mut r = self.callsites.get(cs.id);
        let before = r.counters;
        match cs.phase {
            Phase::Counter | Phase::Data => self.counter(ts, thread, &mut r, e)?,
            Phase::AsyncBegin | Phase::AsyncEnd => {
                let begin = cs.phase == Phase::AsyncBegin;
                let id = e.async_id.unwrap_or(0);
                let track = self.async_track(e, id, begin, ts)?;
                let ty = if begin { TYPE_SLICE_BEGIN } else { TYPE_SLICE_END };
                // An instrumented future's slice (flagged): its begin starts the flow its polls
                // carry and its end terminates it, so the flow has two ends even with no poll.
                match (cs.flow, begin) {
                    (true, true) => self.flow = Some(flow_id(cs, id)),
                    (true, false) => self.terminating_flow = Some(flow_id(cs, id)),
                    (false, _) => {}
                }
                self.slice(ty, ts, track, &mut r, e, begin.then_some(id))?;
            }
            _ => unreachable!("thread slices went to `ordered`"),
        }
        if r.counters != before {
            self.callsites.set(cs.id, r.counters);
        }
        Ok(())
    }

    /// Keeps the counts of `alloc`, a `phosphor/scope_alloc` event, for the end of the complete
    /// event read just before it (`last`), if that is its scope: same thread, ending when the
    /// counts were stamped. One whose scope was lost (overwritten in a ring, dropped) is counted.
    fn attach_alloc(&mut self, alloc: &Event<'_>, last: Option<((u32, u64, u64), u64)>) {
        match last {
            Some((key @ (tid, _, _), end)) if tid == alloc.tid && end == alloc.ts => {
                let [a, b] = SCOPE_ALLOC_ARGS;
                let count = |name: &str| match alloc.arg(name) {
                    Some(Value::U64(v)) => Some(v),
                    Some(Value::I64(v)) => u64::try_from(v).ok(),
                    _ => None,
                };
                let counts = [count(a).map(|v| (a, v)), count(b).map(|v| (b, v))];
                self.allocs.insert(key, counts);
            }
            _ => self.allocs_unattached += 1,
        }
    }

    /// The error a walk of `Ordered` met, if any.
    fn walked(&mut self) -> io::Result<()> {
        self.walk_error.take().map_or(Ok(()), Err)
    }

    #[inline]
    fn saw(&mut self, ts: u64) {
        self.last_ns = Some(self.last_ns.map_or(ts, |l| l.max(ts)));
    }
}

#[cfg(test)]
mod async_tests;
#[cfg(test)]
mod checker;
#[cfg(test)]
mod mapping_tests;
#[cfg(test)]
mod system_tests;
#[cfg(test)]
#[path = "perfetto_tests.rs"]
mod tests;

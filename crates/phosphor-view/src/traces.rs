//! The traces a server shows, and their indexing in the background.
//!
//! Serving starts as soon as each file's header is read: that places the traces on one timeline.
//! A thread of its own ([`Traces::index_all`]) then scans each file's chunks for the coarse
//! [`Overview`] (where each thread was busy), then builds or opens each file's index; the page
//! shows the overview until a trace's index is ready, then its tracks.
//!
//! A server beside `phosphor record` starts with no traces: each connection adds one
//! ([`Traces::add_live`]), shown from a live model (`live.rs`) fed as its file is written. Once
//! the connection has ended and the file is read to its end, the trace is indexed like any other
//! (one build at a time) and then served from its index; the live model is freed. The slots are
//! made once, with room for [`MAX_LIVE_TRACES`], so that a trace handed out stays where it is
//! while others are added.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use phosphor_export::timeline::align;
use phosphor_format::file::{Header, Reader};
use phosphor_format::{ClockInfo, ClockKind};

use crate::file::IndexFile;
use crate::live::{Live, LiveHandle, LiveOptions};
use crate::overview::Overview;
use crate::placement::{arrange, Align, Placed, PlacedBy};
use crate::{BuildOptions, Error};

/// The most traces a server beside the recorder shows; the connections past it are recorded
/// but not shown.
pub const MAX_LIVE_TRACES: usize = 1 << 14;

/// The most ticks [`Place::ticks`] steps over to reach the edge of a nanosecond.
const MAX_TICK_STEPS: u32 = 1024;

/// Where a trace's times fall on the shared timeline.
#[derive(Clone, Debug)]
pub(crate) struct Place {
    /// The trace's clock, which converts its ticks.
    clock: ClockInfo,
    /// Added to the trace's times (nanoseconds since its clock's origin): its origin on the
    /// shared timeline (`phosphor_export::timeline::align`: by `CLOCK_MONOTONIC` within a boot,
    /// else by the wall clock).
    offset_ns: i64,
}

impl Place {
    /// A trace's place, for tests.
    #[cfg(test)]
    pub(crate) fn new(clock: ClockInfo, offset_ns: i64) -> Place {
        Place { clock, offset_ns }
    }

    /// The trace's clock.
    pub(crate) fn clock(&self) -> &ClockInfo {
        &self.clock
    }

    /// Added to the trace's times to place them on the shared timeline.
    pub(crate) fn offset_ns(&self) -> i64 {
        self.offset_ns
    }

    /// Clock value `ticks` on the shared timeline, in nanoseconds.
    pub(crate) fn ns(&self, ticks: u64) -> i64 {
        self.clock.since_origin_ns(ticks).saturating_add(self.offset_ns)
    }

    /// The clock value at `ns` on the shared timeline: the last at or before it, or (`up`) the
    /// first at or after it.
    pub(crate) fn ticks(&self, ns: i64, up: bool) -> u64 {
        let since = i128::from(ns) - i128::from(self.offset_ns);
        let origin = self.clock.origin_ticks;
        let rate = self.clock.ns_per_tick;
        if rate == 1.0 || !(rate.is_finite() && rate > 0.0) {
            return (i128::from(origin) + since).clamp(0, i128::from(u64::MAX)) as u64;
        }
        let t = origin as f64 + since as f64 / rate;
        // `as` saturates (and maps a NaN to 0).
        let mut t = (if up { t.ceil() } else { t.floor() }) as u64;
        // `ns` rounds a tick to the nearest nanosecond, so with ticks shorter than a nanosecond
        // the ticks just before (after) this one may read as `ns` too: step to the first (last)
        // of them, so that a window takes every item whose times, as answered, fall in it. A
        // nanosecond holds at most `1 / rate` ticks; the steps are bounded all the same.
        for _ in 0..MAX_TICK_STEPS {
            match up {
                false if t > 0 && self.ns(t - 1) >= ns => t -= 1,
                true if t < u64::MAX && self.ns(t + 1) <= ns => t += 1,
                _ => break,
            }
        }
        t
    }
}

/// A trace whose index is ready.
#[derive(Debug)]
pub struct Trace {
    /// The trace file.
    pub path: PathBuf,
    /// Its index.
    pub index: IndexFile,
    /// Where its times fall on the shared timeline.
    place: Place,
    /// Its events read again, for their details.
    pub(crate) events: crate::events::Events,
    /// The statistics of the whole trace, once made (`stats.rs`).
    pub(crate) whole_stats: OnceLock<crate::stats::Table>,
    /// Its system context, once read (`system.rs`).
    system: OnceLock<crate::system::SystemView>,
    /// Its frame sets, once read (`frame_track.rs`).
    frames: OnceLock<crate::frame_track::FrameSets>,
    /// Its tokio tasks by name, once read (`task_table.rs`).
    tasks: OnceLock<crate::task_table::TaskTable>,
}

impl Trace {
    /// Its system context: read on the first call (a pass over the file's system blocks), so
    /// call it on a blocking thread.
    pub(crate) fn system(&self) -> &crate::system::SystemView {
        self.system.get_or_init(|| {
            let end = self.place.clock.to_ns(self.index.meta.end_ticks);
            crate::system::SystemView::read(&self.path, end)
        })
    }

    pub(crate) fn place(&self) -> &Place {
        &self.place
    }

    /// Its frame sets: read on the first call (a pass over the file), so call it on a blocking
    /// thread.
    pub(crate) fn frame_sets(&self) -> &crate::frame_track::FrameSets {
        self.frames.get_or_init(|| crate::frame_track::FrameSets::read(&self.path))
    }

    /// Its tokio tasks by name and their longest long polls: read on the first call (a pass over
    /// the file; with a system context, one more over its system blocks), so call it on a
    /// blocking thread.
    pub(crate) fn task_table(&self) -> &crate::task_table::TaskTable {
        self.tasks.get_or_init(|| crate::task_table::TaskTable::read(&self.path, !self.system().is_empty()))
    }

    /// The trace's clock.
    pub(crate) fn clock_info(&self) -> &ClockInfo {
        &self.place.clock
    }

    /// Added to the trace's times to place them on the shared timeline.
    pub fn offset_ns(&self) -> i64 {
        self.place.offset_ns
    }

    /// Clock value `ticks` on the shared timeline, in nanoseconds.
    pub(crate) fn ns(&self, ticks: u64) -> i64 {
        self.place.ns(ticks)
    }

    /// See [`Place::ticks`].
    pub(crate) fn ticks(&self, ns: i64, up: bool) -> u64 {
        self.place.ticks(ns, up)
    }
}

/// How far a trace has come: [`Slot::stage`].
pub mod stages {
    /// Its chunks are being scanned for the overview.
    pub const SCANNING: u8 = 0;
    /// Its index is being built (or opened).
    pub const INDEXING: u8 = 1;
    /// Its index is ready, or failed.
    pub const DONE: u8 = 2;
}

/// A trace the server was given.
#[derive(Debug)]
pub struct Slot {
    /// The trace file.
    pub path: PathBuf,
    /// The recording process's name and pid, from the header.
    pub process: String,
    /// See `process`.
    pub pid: u32,
    /// The clock's name.
    pub clock: String,
    /// The file's length when it was opened.
    pub len: u64,
    /// Where it falls until every trace's span is known (`placement.rs`), and how.
    provisional: (Place, PlacedBy),
    /// Where it falls once every trace's span is known: set before it is served from its index.
    placed: OnceLock<(Place, PlacedBy)>,
    /// Bytes of the file read by the current stage (relaxed: a figure for display).
    progress: Arc<AtomicU64>,
    stage: AtomicU8,
    overview: OnceLock<Overview>,
    done: OnceLock<Result<Trace, String>>,
    /// The live model, for a trace being recorded.
    live: Option<Arc<Live>>,
}

impl Slot {
    fn new(path: PathBuf, len: u64, header: &Header, placed: Placed, stage: u8) -> Slot {
        let place = Place { clock: header.clock.clone(), offset_ns: placed.offset_ns };
        Slot {
            path,
            process: header.process_name.clone(),
            pid: header.pid,
            clock: header.clock.kind.as_str().to_owned(),
            len,
            provisional: (place, placed.by),
            placed: OnceLock::new(),
            progress: Arc::default(),
            stage: AtomicU8::new(stage),
            overview: OnceLock::new(),
            done: OnceLock::new(),
            live: None,
        }
    }

    /// The live model, while the trace is served from it: until its index is ready.
    pub fn live(&self) -> Option<&Live> {
        self.live.as_deref().filter(|_| self.trace().is_none())
    }

    /// The stage it is at (`stages`) and the bytes that stage has read.
    pub fn stage(&self) -> (u8, u64) {
        // Acquire pairs with the Release store of the next stage: a stage seen as past
        // scanning has its overview set.
        (self.stage.load(Ordering::Acquire), self.progress.load(Ordering::Relaxed))
    }

    /// The coarse overview, once scanned.
    pub fn overview(&self) -> Option<&Overview> {
        self.overview.get()
    }

    /// The trace, once indexed.
    pub fn trace(&self) -> Option<&Trace> {
        self.done.get().and_then(|d| d.as_ref().ok())
    }

    /// Why it could not be indexed.
    pub fn failure(&self) -> Option<&str> {
        self.done.get().and_then(|d| d.as_ref().err()).map(String::as_str)
    }

    pub(crate) fn place(&self) -> &Place {
        &self.placed.get().unwrap_or(&self.provisional).0
    }

    /// How it was placed among the others (`placement.rs`).
    pub fn placed_by(&self) -> PlacedBy {
        self.placed.get().unwrap_or(&self.provisional).1
    }

    /// Places it for good, at `offset_ns`: before it is served from its index.
    fn place_at(&self, placed: Placed) {
        let place = Place { clock: self.provisional.0.clock.clone(), offset_ns: placed.offset_ns };
        let _ = self.placed.set((place, placed.by));
    }

    /// Its index, or why there is none, served from now on; whether there is one.
    fn set_done(&self, done: Result<IndexFile, String>) -> bool {
        let ok = done.is_ok();
        let _ = self.done.set(done.map(|index| Trace {
            path: self.path.clone(),
            index,
            place: self.place().clone(),
            events: Default::default(),
            whole_stats: OnceLock::new(),
            system: OnceLock::new(),
            frames: OnceLock::new(),
            tasks: OnceLock::new(),
        }));
        self.set_stage(stages::DONE);
        ok
    }

    fn set_stage(&self, stage: u8) {
        self.progress.store(0, Ordering::Relaxed);
        // Release: see `stage`.
        self.stage.store(stage, Ordering::Release);
    }
}

/// The traces of one server, on one timeline.
#[derive(Debug)]
pub struct Traces {
    /// Made once: a trace handed out never moves. The first `len` are set.
    slots: Box<[OnceLock<Box<Slot>>]>,
    len: AtomicUsize,
    /// Held while a trace is added.
    adding: Mutex<()>,
    /// The header of the first live trace, whose origin is the live timeline's zero.
    base: OnceLock<Header>,
    /// Whether traces are added as they are recorded.
    live: Option<LiveOptions>,
    /// Held while an ended live trace is indexed: one build at a time.
    building: Mutex<()>,
    /// The headers of the traces given at the start (not live), and how to place them.
    headers: Vec<Header>,
    align: Align,
    /// The two traces compared, if any (`compare.rs`).
    pub(crate) comparison: OnceLock<crate::compare::Comparison>,
    /// Where the recorder of the live traces listens (`HOST:PORT`), for the page's notice.
    listening: OnceLock<String>,
}

impl Traces {
    fn with(
        slots: Vec<Slot>,
        live: Option<LiveOptions>,
        room: usize,
        headers: Vec<Header>,
        align: Align,
    ) -> Traces {
        let room = room.max(slots.len());
        let len = slots.len();
        let mut all: Vec<OnceLock<Box<Slot>>> =
            slots.into_iter().map(|s| OnceLock::from(Box::new(s))).collect();
        all.resize_with(room, OnceLock::new);
        Traces {
            slots: all.into_boxed_slice(),
            len: AtomicUsize::new(len),
            adding: Mutex::new(()),
            base: OnceLock::new(),
            live,
            building: Mutex::new(()),
            headers,
            align,
            comparison: OnceLock::new(),
            listening: OnceLock::new(),
        }
    }

    /// No traces yet: each connection of the recorder adds one ([`Traces::add_live`]), its model
    /// kept as `options` says.
    pub fn live(options: LiveOptions) -> Traces {
        Traces::with(Vec::new(), Some(options), MAX_LIVE_TRACES, Vec::new(), Align::Clock)
    }

    /// Adds the trace that the recorder writes at `path` (its `header` read already), shown live
    /// from a model that a thread of its own feeds as the file grows; once the returned handle is
    /// dropped (the file complete) and the file read, the trace is indexed (beside the file) and
    /// served from its index. `None` if this server takes no live traces, or has no room left.
    pub fn add_live(self: &Arc<Self>, path: PathBuf, header: &Header) -> Option<LiveHandle> {
        let options = self.live?;
        let live = Arc::new(Live::new(options));
        let n = {
            let _adding = self.adding.lock().unwrap_or_else(|p| p.into_inner());
            // Relaxed: only adders write it, and they hold `adding`.
            let n = self.len.load(Ordering::Relaxed);
            if n >= self.slots.len() {
                return None;
            }
            let base = self.base.get_or_init(|| header.clone());
            let t = align([base, header]);
            let offset_ns = t.files[1].origin_ns.saturating_sub(t.files[0].origin_ns);
            // Live traces are recorded at one moment: on their shared clock.
            let by = if n == 0 { PlacedBy::First } else { PlacedBy::Monotonic { with: 0 } };
            let by = match t.files[1].by {
                phosphor_export::timeline::AlignedBy::Realtime(_) => PlacedBy::WallClock { with: 0 },
                _ => by,
            };
            let mut slot = Slot::new(path.clone(), 0, header, Placed { offset_ns, by }, stages::SCANNING);
            slot.live = Some(live.clone());
            let _ = self.slots[n].set(Box::new(slot));
            // Release: readers that see the new length (Acquire, in `slots`) see the slot set.
            self.len.store(n + 1, Ordering::Release);
            n
        };
        let (traces, feed) = (self.clone(), live.clone());
        let spawned = std::thread::Builder::new().name("phosphor-live".into()).spawn(move || {
            crate::live::follow(&feed, &path);
            // Reading may stop early (at a damaged block): the index waits for the whole file.
            while !feed.ended() {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            traces.index_ended(n);
        });
        if let Err(e) = spawned {
            // The trace is listed, empty and saying why; the recording goes on.
            live.fail(format!("no thread to read it: {e}"));
        }
        Some(LiveHandle(live))
    }

    /// Indexes live trace `n`, whose file is complete and read, then serves it from its index.
    fn index_ended(&self, n: usize) {
        let Some(slot) = self.slot(n) else { return };
        let _building = self.building.lock().unwrap_or_else(|p| p.into_inner());
        slot.set_stage(stages::INDEXING);
        let options = BuildOptions { progress: Some(slot.progress.clone()), ..BuildOptions::default() };
        let done = crate::open(&slot.path, None, &options).map_err(|e| e.to_string());
        if slot.set_done(done) {
            if let Some(live) = &slot.live {
                live.clear();
            }
        }
    }

    /// Reads the header of each trace at `paths` and places them as [`Align::Auto`] says;
    /// nothing is indexed yet ([`Traces::index_all`]).
    pub fn open(paths: Vec<PathBuf>) -> Result<Traces, Error> {
        Traces::open_aligned(paths, Align::Auto)
    }

    /// [`Traces::open`], placing the traces as `how` says (`placement.rs`): until every trace's
    /// span is known, traces of one boot share its clock.
    pub fn open_aligned(paths: Vec<PathBuf>, how: Align) -> Result<Traces, Error> {
        let mut headers = Vec::new();
        for path in paths {
            let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
            let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
            let reader = Reader::new(BufReader::with_capacity(1 << 12, file))
                .map_err(|source| Error::Trace { path: path.clone(), source })?;
            headers.push((path, len, reader.header().clone()));
        }
        let refs: Vec<&Header> = headers.iter().map(|h| &h.2).collect();
        let placed = arrange(&refs, &vec![None; refs.len()], how);
        let slots = headers
            .iter()
            .zip(placed)
            .map(|((path, len, h), at)| Slot::new(path.clone(), *len, h, at, stages::SCANNING))
            .collect();
        Ok(Traces::with(slots, None, 0, headers.into_iter().map(|h| h.2).collect(), how))
    }

    /// The traces of indexes already opened, ready to serve, placed as [`Align::Auto`] says.
    pub fn ready(indexes: Vec<(PathBuf, IndexFile)>) -> Traces {
        let headers: Vec<Header> = indexes.iter().map(|(_, index)| header_of(&index.meta)).collect();
        let spans: Vec<Option<(i64, i64)>> =
            indexes.iter().zip(&headers).map(|((_, index), h)| Some(span_of(h, &index.meta))).collect();
        let placed = arrange(&headers.iter().collect::<Vec<_>>(), &spans, Align::Auto);
        let slots = indexes
            .into_iter()
            .zip(headers.iter().zip(placed))
            .map(|((path, index), (header, at))| {
                let len = std::fs::metadata(&path).map_or(0, |m| m.len());
                let mut slot = Slot::new(path, len, header, at, stages::DONE);
                slot.clock = index.meta.clock.clone();
                slot.place_at(at);
                slot.set_done(Ok(index));
                slot
            })
            .collect();
        Traces::with(slots, None, 0, headers, Align::Auto)
    }

    /// Scans every trace for its overview, places them all for good (`placement.rs`: their spans
    /// are known now), then opens (or builds) every index, in order; each is served as soon as
    /// it is ready. `report` is told what went wrong with a trace: an index that could not be
    /// built, or a file read only up to an error. Runs until all are done: call it on a thread
    /// of its own.
    pub fn index_all(&self, cache: Option<&Path>, options: &BuildOptions, report: impl Fn(&Slot, &str)) {
        let waiting = |s: &&Slot| s.done.get().is_none() && s.live.is_none();
        // An index already built needs no scan (a pass over the whole file): it is served once
        // the traces are placed.
        let mut built: Vec<Option<IndexFile>> = Vec::new();
        for slot in self.slots().filter(waiting) {
            if let Some(index) = crate::open_existing(&slot.path, cache) {
                built.push(Some(index));
                continue;
            }
            built.push(None);
            match Overview::scan(&slot.path, &slot.progress) {
                Ok(o) => {
                    let _ = slot.overview.set(o);
                }
                Err(e) => report(slot, &e.to_string()),
            }
            slot.set_stage(stages::INDEXING);
        }
        self.place_all(&built);
        for (slot, index) in self.slots().filter(waiting).zip(built) {
            if let Some(index) = index {
                slot.set_done(Ok(index));
                continue;
            }
            let options = BuildOptions { progress: Some(slot.progress.clone()), ..options.clone() };
            let done = crate::open(&slot.path, cache, &options).map_err(|e| e.to_string());
            match &done {
                Ok(index) => {
                    if let Some(e) = &index.meta.read_error {
                        report(slot, &format!("indexed the events before a read error: {e}"));
                    }
                }
                Err(e) => report(slot, e),
            }
            slot.set_done(done);
        }
        // Then the statistics of each whole trace, which the page's panel asks for first: ready
        // before it is opened (a request meanwhile waits for this one, not for one of its own).
        let ready: Vec<(usize, &Trace)> = self.ready_traces().collect();
        for (n, t) in ready {
            crate::stats::whole_table(n, t);
            let _ = t.system();
        }
    }

    /// Places the traces given at the start for good, from their spans: the overviews scanned,
    /// or `built[k]`, the index of the k-th trace not yet served, if it had one already.
    fn place_all(&self, built: &[Option<IndexFile>]) {
        let mut built = built.iter();
        let spans: Vec<Option<(i64, i64)>> = self
            .slots()
            .zip(&self.headers)
            .map(|(slot, h)| {
                let known = slot.trace().map(|t| &t.index.meta);
                let waiting = slot.done.get().is_none() && slot.live.is_none();
                let cached = if waiting { built.next().and_then(Option::as_ref) } else { None };
                if let Some(m) = known.or(cached.map(|i| &i.meta)) {
                    return Some(span_of(h, m));
                }
                let o = slot.overview()?;
                Some((h.clock.since_origin_ns(o.start_ticks), h.clock.since_origin_ns(o.end_ticks)))
            })
            .collect();
        let placed = arrange(&self.headers.iter().collect::<Vec<_>>(), &spans, self.align);
        for (slot, at) in self.slots().zip(placed) {
            slot.place_at(at);
        }
    }

    /// Every trace, by number.
    pub fn slots(&self) -> impl Iterator<Item = &Slot> + '_ {
        // Acquire: pairs with the Release store in `add_live`: each slot below it is set.
        let len = self.len.load(Ordering::Acquire);
        self.slots[..len.min(self.slots.len())].iter().filter_map(|s| s.get().map(|s| &**s))
    }

    /// Trace `n`.
    pub fn slot(&self, n: usize) -> Option<&Slot> {
        // Acquire: as in `slots`.
        let len = self.len.load(Ordering::Acquire);
        self.slots.get(n).filter(|_| n < len).and_then(|s| s.get()).map(|s| &**s)
    }

    /// The number of traces.
    pub fn len(&self) -> usize {
        // Relaxed: a count for messages; `slot` orders the reading of a slot.
        self.len.load(Ordering::Relaxed)
    }

    /// Whether there are none yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Says where the recorder of the live traces listens (`HOST:PORT`): `/api/traces` gives it,
    /// and the page shows it until a program connects.
    pub fn set_listening(&self, addr: String) {
        let _ = self.listening.set(addr);
    }

    /// Where the recorder of the live traces listens, if said.
    pub fn listening(&self) -> Option<&str> {
        self.listening.get().map(String::as_str)
    }

    /// Whether traces are added as they are recorded.
    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// Trace `n`, if its index is ready.
    pub fn get(&self, n: usize) -> Option<&Trace> {
        self.slot(n).and_then(Slot::trace)
    }

    /// The traces whose indexes are ready, with their numbers.
    pub fn ready_traces(&self) -> impl Iterator<Item = (usize, &Trace)> {
        self.slots().enumerate().filter_map(|(n, s)| Some((n, s.trace()?)))
    }

    /// Whether every trace is indexed (or failed); never, while traces may still be added.
    pub fn all_done(&self) -> bool {
        self.live.is_none() && self.slots().all(|s| s.done.get().is_some())
    }

    /// Scans every trace for its overview and stops there, as if its index were being built:
    /// what `/api/traces` and `/api/overview` give while indexing (`api_doc_tests.rs`).
    #[cfg(test)]
    pub(crate) fn scan_only(&self) {
        for slot in self.slots() {
            if let Ok(o) = Overview::scan(&slot.path, &slot.progress) {
                let _ = slot.overview.set(o);
            }
            slot.set_stage(stages::INDEXING);
        }
    }
}

/// The header an index's `meta` stands for: what placing it needs.
fn header_of(m: &crate::file::Meta) -> Header {
    let clock = ClockInfo {
        kind: ClockKind::default(),
        ns_per_tick: m.ns_per_tick,
        origin_ticks: m.origin_ticks,
        origin_monotonic_ns: m.origin_monotonic_ns,
        origin_wall_ns: m.origin_wall_ns,
        fallback_reason: None,
    };
    Header { clock, pid: m.pid, process_name: m.process.clone(), boot_id: m.boot_id, host_name: None }
}

/// A trace's first and last times, in ns since its clock's origin.
fn span_of(h: &Header, m: &crate::file::Meta) -> (i64, i64) {
    (h.clock.since_origin_ns(m.start_ticks), h.clock.since_origin_ns(m.end_ticks))
}

#[cfg(test)]
#[path = "traces_tests.rs"]
mod tests;

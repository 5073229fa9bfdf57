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
use crate::{BuildOptions, Error};

/// The most traces a server beside the recorder shows; the connections past it are recorded
/// but not shown.
pub const MAX_LIVE_TRACES: usize = 1 << 14;

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
        (if up { t.ceil() } else { t.floor() }) as u64
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
    place: Place,
    /// Bytes of the file read by the current stage (relaxed: a figure for display).
    progress: Arc<AtomicU64>,
    stage: AtomicU8,
    overview: OnceLock<Overview>,
    done: OnceLock<Result<Trace, String>>,
    /// The live model, for a trace being recorded.
    live: Option<Arc<Live>>,
}

impl Slot {
    fn new(path: PathBuf, len: u64, header: &Header, place: Place, stage: u8) -> Slot {
        Slot {
            path,
            process: header.process_name.clone(),
            pid: header.pid,
            clock: header.clock.kind.as_str().to_owned(),
            len,
            place,
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
        &self.place
    }

    /// Its index, or why there is none, served from now on; whether there is one.
    fn set_done(&self, done: Result<IndexFile, String>) -> bool {
        let ok = done.is_ok();
        let _ = self.done.set(done.map(|index| Trace {
            path: self.path.clone(),
            index,
            place: self.place.clone(),
            events: Default::default(),
            whole_stats: OnceLock::new(),
            system: OnceLock::new(),
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
    /// Where the recorder of the live traces listens (`HOST:PORT`), for the page's notice.
    listening: OnceLock<String>,
}

impl Traces {
    fn with(slots: Vec<Slot>, live: Option<LiveOptions>, room: usize) -> Traces {
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
            listening: OnceLock::new(),
        }
    }

    /// No traces yet: each connection of the recorder adds one ([`Traces::add_live`]), its model
    /// kept as `options` says.
    pub fn live(options: LiveOptions) -> Traces {
        Traces::with(Vec::new(), Some(options), MAX_LIVE_TRACES)
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
            let place = Place { clock: header.clock.clone(), offset_ns };
            let mut slot = Slot::new(path.clone(), 0, header, place, stages::SCANNING);
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

    /// Reads the header of each trace at `paths` and places them on one timeline
    /// (`phosphor_export::timeline::align`); nothing is indexed yet ([`Traces::index_all`]).
    pub fn open(paths: Vec<PathBuf>) -> Result<Traces, Error> {
        let mut headers = Vec::new();
        for path in paths {
            let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
            let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
            let reader = Reader::new(BufReader::with_capacity(1 << 12, file))
                .map_err(|source| Error::Trace { path: path.clone(), source })?;
            headers.push((path, len, reader.header().clone()));
        }
        let timeline = align(headers.iter().map(|h| &h.2));
        let slots = headers
            .into_iter()
            .zip(timeline.files)
            .map(|((path, len, h), at)| {
                let place = Place { offset_ns: at.origin_ns, clock: h.clock.clone() };
                Slot::new(path, len, &h, place, stages::SCANNING)
            })
            .collect();
        Ok(Traces::with(slots, None, 0))
    }

    /// The traces of indexes already opened, ready to serve.
    pub fn ready(indexes: Vec<(PathBuf, IndexFile)>) -> Traces {
        // An index keeps no boot id nor monotonic origin: these are placed by the wall clock.
        let headers: Vec<Header> = indexes
            .iter()
            .map(|(_, index)| {
                let m = &index.meta;
                let clock = ClockInfo {
                    kind: ClockKind::default(),
                    ns_per_tick: m.ns_per_tick,
                    origin_ticks: m.origin_ticks,
                    origin_monotonic_ns: 0,
                    origin_wall_ns: m.origin_wall_ns,
                    fallback_reason: None,
                };
                Header { clock, pid: m.pid, process_name: String::new(), boot_id: None, host_name: None }
            })
            .collect();
        let timeline = align(&headers);
        let slots = indexes
            .into_iter()
            .zip(headers.into_iter().zip(timeline.files))
            .map(|((path, index), (header, at))| {
                let m = &index.meta;
                let place = Place { offset_ns: at.origin_ns, clock: header.clock };
                let slot = Slot {
                    process: m.process.clone(),
                    pid: m.pid,
                    clock: m.clock.clone(),
                    len: std::fs::metadata(&path).map_or(0, |m| m.len()),
                    place: place.clone(),
                    progress: Arc::default(),
                    stage: AtomicU8::new(stages::DONE),
                    overview: OnceLock::new(),
                    done: OnceLock::new(),
                    path: path.clone(),
                    live: None,
                };
                let trace = Trace {
                    path,
                    index,
                    place,
                    events: Default::default(),
                    whole_stats: OnceLock::new(),
                    system: OnceLock::new(),
                };
                let _ = slot.done.set(Ok(trace));
                slot
            })
            .collect();
        Traces::with(slots, None, 0)
    }

    /// Scans every trace for its overview, then opens (or builds) every index, in order; each
    /// is served as soon as it is ready. `report` is told what went wrong with a trace: an index
    /// that could not be built, or a file read only up to an error. Runs until all are done:
    /// call it on a thread of its own.
    pub fn index_all(&self, cache: Option<&Path>, options: &BuildOptions, report: impl Fn(&Slot, &str)) {
        for slot in self.slots().filter(|s| s.done.get().is_none() && s.live.is_none()) {
            // An index already built is served at once: no scan (a pass over the whole file).
            if let Some(index) = crate::open_existing(&slot.path, cache) {
                slot.set_done(Ok(index));
                continue;
            }
            match Overview::scan(&slot.path, &slot.progress) {
                Ok(o) => {
                    let _ = slot.overview.set(o);
                }
                Err(e) => report(slot, &e.to_string()),
            }
            slot.set_stage(stages::INDEXING);
        }
        for slot in self.slots().filter(|s| s.done.get().is_none() && s.live.is_none()) {
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
}

#[cfg(test)]
mod tests {
    use phosphor_format::file::{Trailer, Writer};

    use super::*;

    /// A trace file with nothing in it, its origin at `mono` on CLOCK_MONOTONIC and `wall` on the
    /// wall clock, of boot `boot`.
    fn empty_trace(path: &Path, mono: u64, wall: u64, boot: Option<[u8; 16]>) {
        let header = Header {
            clock: ClockInfo {
                kind: ClockKind::Monotonic,
                ns_per_tick: 1.0,
                origin_ticks: mono,
                origin_monotonic_ns: mono,
                origin_wall_ns: wall,
                fallback_reason: None,
            },
            pid: 1,
            process_name: "t".into(),
            boot_id: boot,
            host_name: None,
        };
        let w = Writer::new(Vec::new(), &header).unwrap();
        std::fs::write(path, w.finish(&Trailer::default()).unwrap()).unwrap();
    }

    fn offsets(paths: &[PathBuf]) -> Vec<i64> {
        Traces::open(paths.to_vec()).unwrap().slots().map(|s| s.place.offset_ns).collect()
    }

    #[test]
    fn traces_of_one_boot_are_placed_by_monotonic_time_and_older_ones_by_the_wall_clock() {
        let dir = std::env::temp_dir().join(format!("phosphor-view-traces-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a.phos"), dir.join("b.phos"));
        // The wall clock was stepped by 5 s between the two starts; CLOCK_MONOTONIC says 2 µs.
        empty_trace(&a, 1_000, 50_000_000_000, Some([3; 16]));
        empty_trace(&b, 3_000, 55_000_002_000, Some([3; 16]));
        assert_eq!(offsets(&[a.clone(), b.clone()]), [0, 2_000]);
        // Without boot ids (files before format 1.5), as the viewer always placed them.
        empty_trace(&a, 1_000, 50_000_000_000, None);
        empty_trace(&b, 3_000, 55_000_002_000, None);
        assert_eq!(offsets(&[a, b]), [0, 5_000_002_000]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

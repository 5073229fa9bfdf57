//! The traces a server shows, and their indexing in the background.
//!
//! Serving starts as soon as each file's header is read: that places the traces on one timeline.
//! A thread of its own ([`Traces::index_all`]) then scans each file's chunks for the coarse
//! [`Overview`] (where each thread was busy), then builds or opens each file's index; the page
//! shows the overview until a trace's index is ready, then its tracks.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use phosphor_format::file::Reader;
use phosphor_format::{ClockInfo, ClockKind};

use crate::file::IndexFile;
use crate::overview::Overview;
use crate::{BuildOptions, Error};

/// Where a trace's times fall on the shared timeline.
#[derive(Clone, Debug)]
pub(crate) struct Place {
    /// The trace's clock, which converts its ticks.
    clock: ClockInfo,
    /// Added to the trace's times (nanoseconds since its clock's origin): the difference of the
    /// files' origins in wall-clock time.
    offset_ns: i64,
}

impl Place {
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
}

impl Trace {
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
}

impl Slot {
    /// The stage it is at ([`stages`]) and the bytes that stage has read.
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

    fn set_stage(&self, stage: u8) {
        self.progress.store(0, Ordering::Relaxed);
        // Release: see `stage`.
        self.stage.store(stage, Ordering::Release);
    }
}

/// The traces of one server, on one timeline.
#[derive(Debug)]
pub struct Traces {
    slots: Vec<Slot>,
}

impl Traces {
    /// Reads the header of each trace at `paths` and places them on one timeline by their
    /// origins' wall-clock times; nothing is indexed yet ([`Traces::index_all`]).
    pub fn open(paths: Vec<PathBuf>) -> Result<Traces, Error> {
        let mut headers = Vec::new();
        for path in paths {
            let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
            let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
            let reader = Reader::new(BufReader::with_capacity(1 << 12, file))
                .map_err(|source| Error::Trace { path: path.clone(), source })?;
            let h = reader.header();
            headers.push((path, len, h.process_name.clone(), h.pid, h.clock.clone()));
        }
        let first = headers.iter().map(|h| h.4.origin_wall_ns).min().unwrap_or(0);
        let slots = headers
            .into_iter()
            .map(|(path, len, process, pid, clock)| Slot {
                path,
                process,
                pid,
                clock: clock.kind.as_str().to_owned(),
                len,
                place: Place { offset_ns: offset(clock.origin_wall_ns, first), clock },
                progress: Arc::default(),
                stage: AtomicU8::new(stages::SCANNING),
                overview: OnceLock::new(),
                done: OnceLock::new(),
            })
            .collect();
        Ok(Traces { slots })
    }

    /// The traces of indexes already opened, ready to serve.
    pub fn ready(indexes: Vec<(PathBuf, IndexFile)>) -> Traces {
        let first = indexes.iter().map(|(_, i)| i.meta.origin_wall_ns).min().unwrap_or(0);
        let slots = indexes
            .into_iter()
            .map(|(path, index)| {
                let m = &index.meta;
                let clock = ClockInfo {
                    kind: ClockKind::default(),
                    ns_per_tick: m.ns_per_tick,
                    origin_ticks: m.origin_ticks,
                    origin_monotonic_ns: 0,
                    origin_wall_ns: m.origin_wall_ns,
                    fallback_reason: None,
                };
                let place = Place { offset_ns: offset(m.origin_wall_ns, first), clock };
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
                };
                let trace = Trace { path, index, place, events: Default::default() };
                let _ = slot.done.set(Ok(trace));
                slot
            })
            .collect();
        Traces { slots }
    }

    /// Scans every trace for its overview, then opens (or builds) every index, in order; each
    /// is served as soon as it is ready. `report` is told what went wrong with a trace: an index
    /// that could not be built, or a file read only up to an error. Runs until all are done:
    /// call it on a thread of its own.
    pub fn index_all(&self, cache: Option<&Path>, options: &BuildOptions, report: impl Fn(&Slot, &str)) {
        for slot in self.slots.iter().filter(|s| s.done.get().is_none()) {
            match Overview::scan(&slot.path, &slot.progress) {
                Ok(o) => {
                    let _ = slot.overview.set(o);
                }
                Err(e) => report(slot, &e.to_string()),
            }
            slot.set_stage(stages::INDEXING);
        }
        for slot in self.slots.iter().filter(|s| s.done.get().is_none()) {
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
            let _ = slot.done.set(done.map(|index| Trace {
                path: slot.path.clone(),
                index,
                place: slot.place.clone(),
                events: Default::default(),
            }));
            slot.set_stage(stages::DONE);
        }
    }

    /// Every trace, by number.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// Trace `n`, if its index is ready.
    pub fn get(&self, n: usize) -> Option<&Trace> {
        self.slots.get(n).and_then(Slot::trace)
    }

    /// The traces whose indexes are ready, with their numbers.
    pub fn ready_traces(&self) -> impl Iterator<Item = (usize, &Trace)> {
        self.slots.iter().enumerate().filter_map(|(n, s)| Some((n, s.trace()?)))
    }

    /// Whether every trace is indexed (or failed).
    pub fn all_done(&self) -> bool {
        self.slots.iter().all(|s| s.done.get().is_some())
    }
}

/// `wall − first` as an offset on the timeline.
fn offset(wall: u64, first: u64) -> i64 {
    i64::try_from(wall.saturating_sub(first)).unwrap_or(i64::MAX)
}

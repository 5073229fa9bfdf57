//! Statistics of several trace files as one trace: [`FilesStats`] reads the files one after the
//! other into one [`StatsBuilder`], so paths add up across the files, while every file's threads
//! stay threads of their own, named `process/pid name`.
//!
//! Each file's times are moved onto the shared timeline ([`crate::timeline`]) as they are read:
//! the builder's clock is one nanosecond a tick, and an event's start and end are the file's
//! nanoseconds since its origin plus the file's origin on the timeline, so a duration is what the
//! file's own clock says and the span runs from the first file's first event to the last one's
//! end. A thread keeps its id unless an earlier file had a thread of that id; it then takes the
//! highest id no thread has (counting down from `u32::MAX`). Callsite and async ids are each
//! file's own. Memory is what one [`StatsBuilder`] holds for all the kinds, plus an id and a
//! name per thread; a file is read one chunk at a time.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::io::Read;

use phosphor_format::file::{self, ClockInfo, Reader, Trailer};

use crate::error::{read_chunks, Item};
use crate::stats::{StatsBuilder, TraceStats};

/// Statistics of several files on one timeline: [`add_file`](Self::add_file) each, then
/// [`finish`](Self::finish).
#[derive(Debug)]
pub struct FilesStats {
    builder: StatsBuilder,
    /// Thread ids taken so far, and the next id to try when one is taken twice.
    used: HashSet<u32>,
    next_free: u32,
    /// Each thread's name as shown, by its id in the statistics.
    names: Vec<(u32, String)>,
    /// The trailers added up; `None` once a file had none.
    trailer: Option<Trailer>,
    files: u32,
}

impl Default for FilesStats {
    fn default() -> FilesStats {
        FilesStats::new()
    }
}

impl FilesStats {
    /// No file yet.
    pub fn new() -> FilesStats {
        let ns = ClockInfo::monotonic(0, 0);
        FilesStats {
            builder: StatsBuilder::new(&ns),
            used: HashSet::default(),
            next_free: u32::MAX,
            names: Vec::new(),
            trailer: Some(Trailer::default()),
            files: 0,
        }
    }

    /// Reads the rest of the file that `reader` reads, its clock origin at `origin_ns` on the
    /// shared timeline ([`crate::timeline::Placement::origin_ns`]). On a read error, what came
    /// before it stays counted (and the statistics are then incomplete).
    pub fn add_file<R: Read>(&mut self, mut reader: Reader<R>, origin_ns: i64) -> Result<(), file::Error> {
        let header = reader.header().clone();
        let clock = &header.clock;
        self.builder.start_file(self.files);
        self.files += 1;
        let mut tids: HashMap<u32, u32> = HashMap::default();
        let (used, next_free, builder) = (&mut self.used, &mut self.next_free, &mut self.builder);
        let mut tid_of = |tid: u32| -> u32 {
            *tids.entry(tid).or_insert_with(|| {
                let mut t = tid;
                while !used.insert(t) {
                    t = *next_free;
                    *next_free = next_free.wrapping_sub(1);
                }
                t
            })
        };
        let at = |ticks: u64| clock.since_origin_ns(ticks).saturating_add(origin_ns).max(0) as u64;
        let failure = read_chunks(&mut reader, |item| -> Result<(), std::convert::Infallible> {
            match item {
                Item::Chunk(x) => builder.chunk(&file::Extents { tid: tid_of(x.tid), ..*x }),
                Item::Event(e) => {
                    let mut e = e.clone();
                    e.tid = tid_of(e.tid);
                    let start = at(e.ts);
                    e.duration = e.duration.map(|d| at(e.ts.saturating_add(d)).saturating_sub(start));
                    e.ts = start;
                    builder.add(&e);
                }
            }
            Ok(())
        });
        let Ok(failure) = failure;
        builder.aggregates(reader.aggregates(), |id| reader.callsite(id));
        let process = format!("{}/{}", header.process_name, header.pid);
        let mut threads: Vec<(u32, u32)> = tids.into_iter().collect();
        threads.sort_unstable();
        for (tid, id) in threads {
            let name = match reader.thread_name(tid) {
                Some(n) => format!("{process} {}", phosphor_model::names::shown(n.as_str())),
                None => format!("{process} {tid}"),
            };
            self.names.push((id, name));
        }
        self.trailer = match (self.trailer.take(), reader.trailer()) {
            (Some(a), Some(b)) => Some(Trailer {
                recorded: a.recorded.saturating_add(b.recorded),
                dropped: a.dropped.plus(&b.dropped),
                chunks_loaned: a.chunks_loaned.saturating_add(b.chunks_loaned),
                chunks_overwritten: a.chunks_overwritten.saturating_add(b.chunks_overwritten),
                chunks_total: a.chunks_total.saturating_add(b.chunks_total),
                buffer_exhausted: a.buffer_exhausted || b.buffer_exhausted,
                saturation_markers: a.saturation_markers.saturating_add(b.saturation_markers),
            }),
            _ => None,
        };
        match failure {
            None => Ok(()),
            Some(e) => {
                self.trailer = None;
                Err(e)
            }
        }
    }

    /// The statistics of every file added.
    pub fn finish(mut self) -> TraceStats {
        self.names.sort_unstable();
        let trailer = self.trailer.filter(|_| self.files > 0);
        self.builder.finish(self.names.iter().map(|(t, n)| (*t, n.as_str())), trailer.as_ref())
    }
}

#[cfg(test)]
#[path = "stats_files_tests.rs"]
mod tests;

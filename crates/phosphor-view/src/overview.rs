//! The coarse first view: where each thread was busy, from the chunks' headers alone.
//!
//! Building an index decodes every event; this reads only each chunk block's extents (its
//! thread, first and last time, and number of events), which takes one pass over the file's
//! bytes and a few dozen bytes of memory a chunk. The server shows it while the index is built:
//! per thread, how many events fall in each pixel of a window, a chunk's events spread evenly
//! over its span.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use phosphor_format::file::Reader;

use crate::query::Window;
use crate::Error;

/// A thread seen in the chunks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverviewThread {
    /// Its id.
    pub tid: u32,
    /// Its name, where the file has one.
    pub name: Option<String>,
    /// Events in its chunks.
    pub events: u64,
}

/// One chunk: its thread (a place in [`Overview::threads`]), its span in ticks, its events.
#[derive(Clone, Copy, Debug)]
struct Span {
    thread: u32,
    first: u64,
    last: u64,
    events: u32,
}

/// Where each thread was busy, chunk by chunk.
#[derive(Clone, Debug, Default)]
pub struct Overview {
    /// The threads, by id.
    pub threads: Vec<OverviewThread>,
    /// The first and last event time of the chunks (ticks).
    pub start_ticks: u64,
    /// See `start_ticks`.
    pub end_ticks: u64,
    /// Why the scan stopped before the end of the file, if it did.
    pub read_error: Option<String>,
    /// The chunks, in file order.
    spans: Vec<Span>,
}

impl Overview {
    /// Scans the chunks of the trace at `path`; `progress` is set to the bytes read so far.
    pub fn scan(path: &Path, progress: &AtomicU64) -> Result<Overview, Error> {
        let input = File::open(path).map_err(|e| Error::io(path, e))?;
        let mut reader = Reader::new(BufReader::with_capacity(1 << 16, input))
            .map_err(|source| Error::Trace { path: path.to_owned(), source })?
            .read_ahead();
        let mut o = Overview { start_ticks: u64::MAX, ..Overview::default() };
        // By thread id, its place in `threads`; chunks come a thread at a time, so the last
        // one is checked first.
        let mut last: Option<(u32, u32)> = None;
        let mut places: rustc_hash::FxHashMap<u32, u32> = Default::default();
        loop {
            let chunk = match reader.next_chunk() {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) => {
                    o.read_error = Some(e.to_string());
                    break;
                }
            };
            let x = chunk.extents;
            let thread = match last {
                Some((tid, at)) if tid == x.tid => at,
                _ => {
                    let next = places.len() as u32;
                    let at = *places.entry(x.tid).or_insert(next);
                    if at == next {
                        o.threads.push(OverviewThread { tid: x.tid, name: None, events: 0 });
                    }
                    last = Some((x.tid, at));
                    at
                }
            };
            if x.event_count > 0 {
                o.threads[thread as usize].events += u64::from(x.event_count);
                o.start_ticks = o.start_ticks.min(x.first_ts);
                o.end_ticks = o.end_ticks.max(x.last_ts);
                o.spans.push(Span {
                    thread,
                    first: x.first_ts,
                    last: x.last_ts.max(x.first_ts),
                    events: x.event_count,
                });
            }
            // Relaxed: a progress figure for display; nothing is read through it.
            progress.store(reader.offset(), Ordering::Relaxed);
        }
        if o.start_ticks > o.end_ticks {
            (o.start_ticks, o.end_ticks) = (0, 0);
        }
        for t in &mut o.threads {
            t.name = reader.thread_name(t.tid).map(|n| n.to_string());
        }
        // Threads by id, and the chunks' thread numbers with them.
        let mut order: Vec<u32> = (0..o.threads.len() as u32).collect();
        order.sort_unstable_by_key(|&i| o.threads[i as usize].tid);
        let mut new_place = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            new_place[old as usize] = new as u32;
        }
        let mut threads: Vec<Option<OverviewThread>> = o.threads.drain(..).map(Some).collect();
        o.threads = order.iter().filter_map(|&old| threads[old as usize].take()).collect();
        for s in &mut o.spans {
            s.thread = new_place[s.thread as usize];
        }
        Ok(o)
    }

    /// Events of each thread of `threads` (places in [`Overview::threads`]) in each pixel of
    /// `w`, a chunk's events spread evenly over its span: one pass over the chunks.
    pub fn densities(&self, threads: &[usize], w: Window) -> Vec<Vec<f64>> {
        let pixels = ((w.end - w.start) / w.pixel + 1).min(1 << 16) as usize;
        let mut out = vec![vec![0f64; pixels]; threads.len()];
        // By thread place, its row in `out`.
        let mut row = vec![usize::MAX; self.threads.len()];
        for (r, &t) in threads.iter().enumerate() {
            if let Some(slot) = row.get_mut(t) {
                *slot = r;
            }
        }
        for s in self.spans.iter().filter(|s| s.last >= w.start && s.first <= w.end) {
            let Some(cells) = row.get(s.thread as usize).and_then(|&r| out.get_mut(r)) else { continue };
            let span = (s.last - s.first + 1) as f64;
            let (lo, hi) = (s.first.max(w.start), s.last.min(w.end));
            let (p0, p1) = (((lo - w.start) / w.pixel) as usize, ((hi - w.start) / w.pixel) as usize);
            for (p, cell) in cells.iter_mut().enumerate().take(p1.min(pixels - 1) + 1).skip(p0) {
                // The part of the chunk's span inside this pixel.
                let at = |k: u64| w.start.saturating_add(k.saturating_mul(w.pixel));
                let a = at(p as u64).max(s.first);
                let b = at(p as u64 + 1).saturating_sub(1).min(s.last);
                if b >= a {
                    *cell += f64::from(s.events) * (b - a + 1) as f64 / span;
                }
            }
        }
        out
    }
}

//! `GET /api/search`: the slices and points whose name matches a pattern, counted, and the first
//! of them from a time on, for the page's results list and its next/previous.
//!
//! A search reads every record of every served trace once: their names, block by block
//! (`blocks::Columns`), and the times only of the blocks where a name matches. What it keeps is
//! bounded: a count per matching name and the `limit` earliest hits.

use std::collections::{BinaryHeap, HashMap};

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};

use crate::blocks::{point_fields, slice_fields};
use crate::server::{Failure, Shared, Trace};

/// The most hits one answer lists.
pub const MAX_HITS: usize = 1000;

#[derive(Debug, Deserialize)]
pub(crate) struct SearchQuery {
    /// A glob (`*`, `?`) matched against whole names, or else a substring, either case.
    q: String,
    /// List hits starting at or after this time (ns on the shared timeline).
    after: Option<i64>,
    /// How many hits to list (default 100).
    limit: Option<usize>,
    /// With `end` and `px`: instead of hits, the pixel columns of the window `start`..`end` (ns on
    /// the shared timeline) `px` wide that hold a hit, by track and level (`ticks_of`).
    start: Option<i64>,
    end: Option<i64>,
    px: Option<u32>,
}

/// Whether a name matches `q`: a glob (with `*` or `?`) matches the whole name; other text is a
/// substring, either case.
fn matcher(q: &str) -> impl Fn(&str) -> bool + '_ {
    let glob = q.contains(['*', '?']);
    let lower = q.to_lowercase();
    move |name: &str| {
        if glob {
            phosphor_format::glob_match(q, name)
        } else {
            name.to_lowercase().contains(&lower)
        }
    }
}

/// A hit: its time on the shared timeline, and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Hit {
    start: i64,
    trace: usize,
    /// 0 for a slice, 1 for a point.
    point: u8,
    index: u64,
    end: i64,
    tid: u32,
    /// The async track (its place in the trace's `asyncs`), for a hit on one.
    async_track: Option<u32>,
    level: u32,
    name: u32,
}

pub(crate) async fn search(
    State(traces): State<Shared>,
    Query(q): Query<SearchQuery>,
) -> Result<Json<SearchAnswer>, Failure> {
    // Reads a whole trace at worst: on a blocking thread, not an async worker.
    crate::stats::blocking(move || search_of(&traces, q)).await
}

/// `/api/search`'s answer: the hits, or with a window where they are.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum SearchAnswer {
    /// A list of hits (no window asked for).
    Hits {
        /// How many records match.
        total: u64,
        /// How many hits each name of each trace has.
        names: Vec<NameCount>,
        /// The earliest hits that start at or after `after`, at most `limit`.
        hits: Vec<HitEntry>,
        /// Where the next page starts (pass it as `after`); null when nothing is left.
        next_after: Option<i64>,
        /// What the live traces' answers cover (`live::scan::coverage`).
        live: Vec<crate::api::LiveCoverage>,
    },
    /// Where the hits in a window are (`start`, `end`, `px` asked for).
    Ticks {
        /// For each track and level (or a track's points) holding a hit, the pixel columns they cover.
        ticks: Vec<Ticks>,
    },
}

/// How many hits a name of a trace has.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct NameCount {
    /// The trace.
    trace: usize,
    /// The name.
    name: String,
    /// How many hits have it.
    count: u64,
}

/// A hit: a slice or a point.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct HitEntry {
    /// Its trace.
    trace: usize,
    /// `slice` or `point`.
    kind: &'static str,
    /// Its number, for `/api/slice` or `/api/point`.
    index: u64,
    /// Its thread's id; for a hit on an async track, `async` says which.
    tid: u32,
    /// Its async track; null on a thread.
    #[serde(rename = "async")]
    async_track: Option<u32>,
    /// Its level on its track.
    level: u32,
    /// Its start, on the shared timeline.
    start_ns: i64,
    /// Its end (a point's is its start).
    end_ns: i64,
    /// Its name.
    name: String,
}

/// The pixel columns a track's level (or its points) has hits in.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Ticks {
    /// The trace.
    trace: usize,
    /// The thread.
    tid: u32,
    /// The async track; null on a thread.
    #[serde(rename = "async")]
    async_track: Option<usize>,
    /// The level (0 for points).
    level: usize,
    /// `slice` or `point`.
    kind: &'static str,
    /// The runs `[from, to]` of pixel columns (0 to `px` - 1) its hits cover.
    runs: Vec<[u32; 2]>,
}

fn search_of(traces: &Shared, q: SearchQuery) -> Result<Json<SearchAnswer>, Failure> {
    if q.q.is_empty() || q.q.len() > 1024 {
        return Err(Failure(StatusCode::BAD_REQUEST, "q must be 1 to 1024 bytes".into()));
    }
    if let (Some(start), Some(end), Some(px)) = (q.start, q.end, q.px) {
        if end <= start || px == 0 || px > crate::server::MAX_PIXELS {
            return Err(Failure(StatusCode::BAD_REQUEST, "start < end and 1 <= px <= 8192 needed".into()));
        }
        return Ok(Json(ticks_of(traces, &q.q, start, end, px)));
    }
    let limit = q.limit.unwrap_or(100).clamp(1, MAX_HITS);
    let after = q.after.unwrap_or(i64::MIN);
    let matches = matcher(&q.q);
    let mut found = Found::new(limit, after);
    for (n, t) in traces.ready_traces() {
        found.in_index(n, t, &matches);
    }
    // The live traces: what their live views hold.
    let live_names = found.in_live(traces, &matches);
    let Found { first, total, next_after, names, .. } = found;
    let hits: Vec<HitEntry> =
        first.into_sorted_vec().into_iter().map(|h| hit_entry(traces, &live_names, h)).collect();
    let live = crate::live::scan::coverage(traces);
    Ok(Json(SearchAnswer::Hits { total, names, hits, next_after, live }))
}

/// What a search has found so far: the `limit` earliest hits at or after `after`, and how many
/// hits each name has.
struct Found {
    limit: usize,
    after: i64,
    /// The earliest hits: the latest of them on top.
    first: BinaryHeap<Hit>,
    total: u64,
    /// The earliest start of a hit left out by the limit.
    next_after: Option<i64>,
    names: Vec<NameCount>,
}

impl Found {
    fn new(limit: usize, after: i64) -> Found {
        Found { limit, after, first: BinaryHeap::new(), total: 0, next_after: None, names: Vec::new() }
    }

    /// Keeps `hit` if it is among the `limit` earliest at or after `after` so far.
    fn keep(&mut self, hit: Hit) {
        if hit.start < self.after {
            return;
        }
        self.first.push(hit);
        if self.first.len() > self.limit {
            let dropped = self.first.pop().map(|h| h.start);
            self.next_after = match (self.next_after, dropped) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
    }

    /// Adds trace `n`'s counts by name (`name` names them), and returns the names counted.
    fn count<'a>(&mut self, n: usize, counts: &[u64], name: impl Fn(u32) -> &'a str) -> Vec<u32> {
        let mut counted = Vec::new();
        for (i, &c) in counts.iter().enumerate() {
            if c > 0 {
                self.total += c;
                self.names.push(NameCount { trace: n, name: name(i as u32).to_owned(), count: c });
                counted.push(i as u32);
            }
        }
        counted
    }

    /// The hits of trace `n`, read from its index.
    fn in_index(&mut self, n: usize, t: &Trace, matches: &impl Fn(&str) -> bool) {
        let index = &t.index;
        let wanted: Vec<bool> = (0..index.name_count()).map(|i| matches(index.name(i))).collect();
        if !wanted.contains(&true) {
            return;
        }
        let mut counts = vec![0u64; wanted.len()];
        let threads = index.threads.len();
        for (k, th) in index.threads.iter().chain(&index.asyncs).enumerate() {
            let async_track = k.checked_sub(threads).map(|a| a as u32);
            let track = Track { n, t, tid: th.tid, async_track, wanted: &wanted };
            for (level, &(from, count)) in th.levels.iter().enumerate() {
                self.slices_of(&track, level as u32, (from, count), &mut counts);
            }
            self.points_of(&track, th.points, &mut counts);
        }
        self.count(n, &counts, |name| index.name(name));
    }

    /// The hits among a level's slices (`from`, `count`) of a track.
    fn slices_of(&mut self, track: &Track<'_>, level: u32, (from, count): (u64, u64), counts: &mut [u64]) {
        let Track { n, t, tid, async_track, wanted } = *track;
        // The names first: a block's times are decoded only when one of them matches.
        t.index.scan_slices(from, from + count, |base, rows, c| {
            c.want(&[slice_fields::NAME]);
            for r in rows {
                let name = c.get(slice_fields::NAME)[r] as u32;
                if !wanted.get(name as usize).copied().unwrap_or(false) {
                    continue;
                }
                counts[name as usize] += 1;
                c.want(&[slice_fields::START, slice_fields::END]);
                self.keep(Hit {
                    start: t.ns(c.get(slice_fields::START)[r]),
                    trace: n,
                    point: 0,
                    index: base + r as u64,
                    end: t.ns(c.get(slice_fields::END)[r]),
                    tid,
                    async_track,
                    level,
                    name,
                });
            }
        });
    }

    /// The hits among a track's points (`from`, `count`).
    fn points_of(&mut self, track: &Track<'_>, (from, count): (u64, u64), counts: &mut [u64]) {
        let Track { n, t, tid, async_track, wanted } = *track;
        t.index.scan_points(from, from + count, |base, rows, c| {
            c.want(&[point_fields::NAME]);
            for r in rows {
                let name = c.get(point_fields::NAME)[r] as u32;
                if !wanted.get(name as usize).copied().unwrap_or(false) {
                    continue;
                }
                counts[name as usize] += 1;
                c.want(&[point_fields::TS]);
                let at = t.ns(c.get(point_fields::TS)[r]);
                let index = base + r as u64;
                self.keep(Hit {
                    start: at,
                    trace: n,
                    point: 1,
                    index,
                    end: at,
                    tid,
                    async_track,
                    level: 0,
                    name,
                });
            }
        });
    }

    /// The hits of the live traces, from what their live views hold; returns the names they
    /// matched (kept, as a live trace may be indexed before the answer is made).
    fn in_live(&mut self, traces: &Shared, matches: &impl Fn(&str) -> bool) -> HashMap<(usize, u32), String> {
        let mut live_names: HashMap<(usize, u32), String> = HashMap::new();
        for (n, slot, live) in crate::live::scan::live_traces(traces) {
            let m = live.model();
            let wanted: Vec<bool> = (0..m.name_count()).map(|i| matches(m.name(i))).collect();
            if !wanted.contains(&true) {
                continue;
            }
            let mut counts = vec![0u64; wanted.len()];
            let p = slot.place();
            m.each_record(|r| {
                if !wanted.get(r.name as usize).copied().unwrap_or(false) {
                    return;
                }
                counts[r.name as usize] += 1;
                self.keep(Hit {
                    start: p.ns(r.start),
                    trace: n,
                    point: u8::from(r.point),
                    index: r.id,
                    end: p.ns(r.end),
                    tid: r.tid,
                    async_track: r.async_track,
                    level: r.level,
                    name: r.name,
                });
            });
            for name in self.count(n, &counts, |name| m.name(name)) {
                live_names.insert((n, name), m.name(name).to_owned());
            }
        }
        live_names
    }
}

/// A track of an indexed trace being searched: trace `n`'s thread `tid` (or async track), and the
/// names wanted.
#[derive(Clone, Copy)]
struct Track<'a> {
    n: usize,
    t: &'a Trace,
    tid: u32,
    async_track: Option<u32>,
    wanted: &'a [bool],
}

/// A hit as the answer lists it, named (`live_names`: the names of live hits).
fn hit_entry(traces: &Shared, live_names: &HashMap<(usize, u32), String>, h: Hit) -> HitEntry {
    let name = match live_names.get(&(h.trace, h.name)) {
        Some(name) => name.clone(),
        None => traces.get(h.trace).map_or(String::new(), |t: &Trace| t.index.name(h.name).to_owned()),
    };
    let kind = if h.point == 1 { "point" } else { "slice" };
    HitEntry {
        trace: h.trace,
        kind,
        index: h.index,
        tid: h.tid,
        async_track: h.async_track,
        level: h.level,
        start_ns: h.start,
        end_ns: h.end,
        name,
    }
}

/// Where a live hit's ticks go: its async track, thread, whether a point, and level.
type TickPlace = (Option<u32>, u32, bool, u32);

/// The hits in the window `start`..`end` (ns on the shared timeline) as pixel columns of a window
/// `px` wide: for each track and level (or a track's points) holding one, its runs of columns
/// `[from, to]` that a hit covers. Reads only the slices and points in the window (each level
/// and each thread's points are in time order; a level's slices do not overlap, so at most one
/// that starts before the window reaches into it): the answer is bounded by the pixels, the
/// reading by the window's records.
fn ticks_of(traces: &Shared, q: &str, start: i64, end: i64, px: u32) -> SearchAnswer {
    let matches = matcher(q);
    let span = (end - start) as f64;
    let col = |ns: i64| (((ns.clamp(start, end) - start) as f64 / span * px as f64) as u32).min(px - 1);
    let mut ticks: Vec<Ticks> = Vec::new();
    for (n, t) in traces.ready_traces() {
        let index = &t.index;
        let wanted: Vec<bool> = (0..index.name_count()).map(|i| matches(index.name(i))).collect();
        if !wanted.contains(&true) {
            continue;
        }
        let is = |name: u32| wanted.get(name as usize).copied().unwrap_or(false);
        let (a, b) = (t.ticks(start, false), t.ticks(end, true));
        // Adds the columns `from`..`to` to `runs`, merged with the last run they touch.
        let add = |runs: &mut Vec<[u32; 2]>, from: u32, to: u32| match runs.last_mut() {
            Some(last) if from <= last[1] + 1 => last[1] = last[1].max(to),
            _ => runs.push([from, to]),
        };
        let threads = index.threads.len();
        for (k, th) in index.threads.iter().chain(&index.asyncs).enumerate() {
            let async_track = k.checked_sub(threads);
            let place = |level: Option<usize>, runs: Vec<[u32; 2]>| {
                let kind = if level.is_some() { "slice" } else { "point" };
                Ticks { trace: n, tid: th.tid, async_track, level: level.unwrap_or(0), kind, runs }
            };
            for (level, &(first, count)) in th.levels.iter().enumerate() {
                let last = first + count;
                let from = crate::query::partition(first, last, |i| index.slice(i).start < a)
                    .saturating_sub(1)
                    .max(first);
                let to = crate::query::partition(from, last, |i| index.slice(i).start <= b);
                let mut runs = Vec::new();
                index.scan_slices(from, to, |_, rows, c| {
                    c.want(&[slice_fields::NAME]);
                    for r in rows {
                        if !is(c.get(slice_fields::NAME)[r] as u32) {
                            continue;
                        }
                        c.want(&[slice_fields::START, slice_fields::END]);
                        let (start, end) = (c.get(slice_fields::START)[r], c.get(slice_fields::END)[r]);
                        if end >= a {
                            add(&mut runs, col(t.ns(start)), col(t.ns(end)));
                        }
                    }
                });
                if !runs.is_empty() {
                    ticks.push(place(Some(level), runs));
                }
            }
            let (first, count) = th.points;
            let from = crate::query::partition(first, first + count, |i| index.point(i).ts < a);
            let to = crate::query::partition(from, first + count, |i| index.point(i).ts <= b);
            let mut runs = Vec::new();
            index.scan_points(from, to, |_, rows, c| {
                c.want(&[point_fields::NAME, point_fields::TS]);
                for r in rows {
                    if is(c.get(point_fields::NAME)[r] as u32) {
                        let x = col(t.ns(c.get(point_fields::TS)[r]));
                        add(&mut runs, x, x);
                    }
                }
            });
            if !runs.is_empty() {
                ticks.push(place(None, runs));
            }
        }
    }
    // The live traces: each record in the window, its columns by track and level.
    for (n, slot, live) in crate::live::scan::live_traces(traces) {
        let m = live.model();
        let p = slot.place();
        let (a, b) = (p.ticks(start, false), p.ticks(end, true));
        let wanted: Vec<bool> = (0..m.name_count()).map(|i| matches(m.name(i))).collect();
        // By (async track, thread, point, level): the columns of each hit.
        let mut runs: std::collections::BTreeMap<TickPlace, Vec<[u32; 2]>> = Default::default();
        m.each_record(|r| {
            if r.end >= a && r.start <= b && wanted.get(r.name as usize).copied().unwrap_or(false) {
                let run = [col(p.ns(r.start)), col(p.ns(r.end))];
                runs.entry((r.async_track, r.tid, r.point, r.level)).or_default().push(run);
            }
        });
        for ((async_track, tid, point, level), mut cols) in runs {
            cols.sort_unstable();
            let mut merged: Vec<[u32; 2]> = Vec::new();
            for [from, to] in cols {
                match merged.last_mut() {
                    Some(last) if from <= last[1] + 1 => last[1] = last[1].max(to),
                    _ => merged.push([from, to]),
                }
            }
            let kind = if point { "point" } else { "slice" };
            let (async_track, level) = (async_track.map(|a| a as usize), level as usize);
            ticks.push(Ticks { trace: n, tid, async_track, level, kind, runs: merged });
        }
    }
    SearchAnswer::Ticks { ticks }
}

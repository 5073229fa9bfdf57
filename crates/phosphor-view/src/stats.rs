//! `GET /api/stats`: the statistics panel's table, per scope path across threads, for the whole
//! trace or a range: count, total, min, mean, p50, p99 and max, accumulated as `phosphor stats`
//! accumulates them (`phosphor_export::Durations`, in clock ticks), so that the whole trace gives
//! the figures `phosphor stats` gives.
//!
//! A slice's path is its name under the path of the slice that holds it: the slice a level up
//! that starts at or before it and ends at or after it. An interlaced slice, drawn a level lower
//! than its nesting, is held by the first slice further up that contains it. The table walks a
//! thread's slices by start across its levels, so that the last slice seen on each level is the
//! candidate there, its path known; one slice's context (`context`) finds its holders by binary
//! search.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::Json;
use phosphor_export::Durations;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::file::{IndexFile, ThreadTrack};
use crate::query::partition;
use crate::records::{slice_flags, Slice};
use crate::server::{Failure, Shared, Trace};

/// Runs `f` on a blocking thread: a request that may read a whole trace.
pub(crate) async fn blocking(
    f: impl FnOnce() -> Result<Json<Value>, Failure> + Send + 'static,
) -> Result<Json<Value>, Failure> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(Failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())))
}

/// The most rows one answer gives.
pub const MAX_ROWS: usize = 5000;

/// No parent: a path of one name.
const ROOT: u32 = u32::MAX;

#[derive(Debug, Deserialize)]
pub(crate) struct StatsQuery {
    /// The range: slices that start in it (ns on the shared timeline; the whole trace without).
    start: Option<i64>,
    end: Option<i64>,
    /// Rows to give, the largest total first (default 500).
    limit: Option<usize>,
}

/// The paths met, as (parent, name, type): each once.
#[derive(Default)]
struct Paths {
    list: Vec<(u32, String, &'static str)>,
    ids: HashMap<(u32, String, &'static str), u32>,
}

impl Paths {
    fn id(&mut self, parent: u32, name: &str, ty: &'static str) -> u32 {
        if let Some(&id) = self.ids.get(&(parent, name.to_owned(), ty)) {
            return id;
        }
        let id = self.list.len() as u32;
        self.list.push((parent, name.to_owned(), ty));
        self.ids.insert((parent, name.to_owned(), ty), id);
        id
    }

    fn names(&self, mut id: u32) -> Vec<&str> {
        let mut out = Vec::new();
        while let Some((parent, name, _)) = self.list.get(id as usize) {
            out.push(name.as_str());
            id = *parent;
        }
        out.reverse();
        out
    }
}

fn type_of(flags: u8) -> &'static str {
    match flags & slice_flags::KIND_MASK {
        slice_flags::LOCK_WAIT => "lock_wait",
        slice_flags::LOCK_HELD => "lock_held",
        _ => "scope",
    }
}

/// One thread's walk: the path of each slice, its parents' remembered per level.
struct Walk<'a> {
    index: &'a IndexFile,
    thread: &'a ThreadTrack,
    /// By level, the last slice whose path was found, that path, and the slice's end.
    last: Vec<Option<(u64, u32, u64)>>,
    /// Whether slices are walked by start across levels ([`sweep`]): then the last slice seen a
    /// level up is the last there that starts at or before the one walked, if any was seen.
    sweeping: bool,
}

impl Walk<'_> {
    /// The slice that holds slice `i` of level `level`: the first level up with one that starts at
    /// or before it and ends at or after it.
    fn holder(&self, level: usize, i: u64) -> Option<(usize, u64)> {
        let s = self.index.slice(i);
        (0..level).rev().find_map(|up| {
            if let (true, Some((at, _, end))) = (self.sweeping, self.last[up]) {
                return (end >= s.end).then_some((up, at));
            }
            let (first, n) = self.thread.levels[up];
            let p = partition(first, first + n, |k| self.index.slice(k).start <= s.start);
            (p > first && self.index.slice(p - 1).end >= s.end).then_some((up, p - 1))
        })
    }

    /// The path of slice `i` of level `level`. Iterative: a path may be thousands of levels deep.
    fn path(&mut self, paths: &mut Paths, level: usize, i: u64) -> u32 {
        // Up from the slice to one whose path is remembered, or to the top.
        let mut chain = vec![(level, i)];
        let mut path = ROOT;
        while let Some(&(lv, at)) = chain.last() {
            if let Some(&Some((known, p, _))) = self.last.get(lv) {
                if known == at {
                    chain.pop();
                    path = p;
                    break;
                }
            }
            match self.holder(lv, at) {
                Some(up) => chain.push(up),
                None => break,
            }
        }
        // Down again, each slice's path its holder's and its name.
        while let Some((lv, at)) = chain.pop() {
            let s = self.index.slice(at);
            path = paths.id(path, self.index.name(s.name), type_of(s.flags));
            if let Some(slot) = self.last.get_mut(lv) {
                *slot = Some((at, path, s.end));
            }
        }
        path
    }
}

/// Slice `i` of level `level` of `thread` in its context: its scope path, and its self time (its
/// duration less those of the slices it holds a level down) and how many those are, in ticks.
pub(crate) fn context(
    index: &IndexFile,
    thread: &ThreadTrack,
    level: usize,
    i: u64,
) -> (Vec<String>, u64, u64) {
    let mut paths = Paths::default();
    let mut walk = Walk { index, thread, last: vec![None; thread.levels.len()], sweeping: false };
    let path = walk.path(&mut paths, level, i);
    let names = paths.names(path).into_iter().map(str::to_owned).collect();
    let s = index.slice(i);
    let (mut children, mut nested) = (0u64, 0u64);
    if let Some(&(first, n)) = thread.levels.get(level + 1) {
        let end = first + n;
        let from = partition(first, end, |k| index.slice(k).start < s.start);
        let to = partition(from, end, |k| index.slice(k).start <= s.end);
        for k in from..to {
            let c = index.slice(k);
            if c.end <= s.end {
                children += 1;
                nested = nested.saturating_add(c.duration());
            }
        }
    }
    (names, s.duration().saturating_sub(nested), children)
}

/// Calls `f` with the path and the slice of every slice of `thread` that starts from `a` to `b`,
/// by start across levels (the upper level first at equal starts), so that a slice's holder is
/// the last slice seen a level up, its path already known: no search a slice.
fn sweep(
    index: &IndexFile,
    thread: &ThreadTrack,
    a: u64,
    b: u64,
    paths: &mut Paths,
    mut f: impl FnMut(u32, Slice),
) {
    let mut walk = Walk { index, thread, last: vec![None; thread.levels.len()], sweeping: true };
    // By level, the next slice to walk and the end of those in the range.
    let mut next: BinaryHeap<Reverse<(u64, usize, u64)>> = BinaryHeap::new();
    let mut ends = Vec::with_capacity(thread.levels.len());
    for (level, &(first, count)) in thread.levels.iter().enumerate() {
        let end = first + count;
        let from = partition(first, end, |k| index.slice(k).start < a);
        let to = partition(from, end, |k| index.slice(k).start <= b);
        ends.push(to);
        if from < to {
            next.push(Reverse((index.slice(from).start, level, from)));
        }
    }
    while let Some(Reverse((_, level, i))) = next.pop() {
        let path = walk.path(paths, level, i);
        f(path, index.slice(i));
        if i + 1 < ends[level] {
            next.push(Reverse((index.slice(i + 1).start, level, i + 1)));
        }
    }
}

pub(crate) async fn stats(
    State(traces): State<Shared>,
    Query(q): Query<StatsQuery>,
) -> Result<Json<Value>, Failure> {
    // Reads a whole trace at worst: on a blocking thread, not an async worker.
    blocking(move || stats_of(&traces, q)).await
}

/// One trace's table: its rows (at most [`MAX_ROWS`], by total, largest first: `(total_ns, path
/// number, row)`), how many paths it has, and the slices it counted.
#[derive(Debug, Default)]
pub(crate) struct Table {
    rows: Vec<(u64, u32, Value)>,
    kinds: usize,
    slices: u64,
}

/// The table of trace `n` (`t`) from `a` to `b` (ticks).
fn table(n: usize, t: &Trace, a: u64, b: u64) -> Table {
    let mut paths = Paths::default();
    // Durations are in the trace's own clock's ticks.
    let mut acc: HashMap<u32, Durations> = HashMap::new();
    let mut slices = 0u64;
    for thread in &t.index.threads {
        sweep(&t.index, thread, a, b, &mut paths, |path, s| {
            acc.entry(path).or_default().add(s.duration());
            slices += 1;
        });
    }
    let mut rows: Vec<(u64, u32, Value)> = acc
        .iter()
        .filter_map(|(&path, d)| {
            let s = d.stats(t.clock_info())?;
            let (_, _, ty) = &paths.list[path as usize];
            let row = json!({
                "trace": n, "path": paths.names(path), "type": ty, "count": s.samples,
                "total_ns": s.total_ns, "min_ns": s.min_ns, "mean_ns": s.mean_ns, "p50_ns": s.p50_ns,
                "p99_ns": s.p99_ns, "max_ns": s.max_ns, "exact": s.exact_percentiles,
            });
            Some((s.total_ns, path, row))
        })
        .collect();
    let kinds = rows.len();
    // Ties by path, in the order they were met: the same answer every time.
    rows.sort_by_key(|r| (std::cmp::Reverse(r.0), r.1));
    rows.truncate(MAX_ROWS);
    Table { rows, kinds, slices }
}

/// The table of the whole of trace `n` (`t`): made once, and kept.
pub(crate) fn whole_table(n: usize, t: &Trace) -> &Table {
    t.whole_stats.get_or_init(|| table(n, t, 0, u64::MAX))
}

fn stats_of(traces: &Shared, q: StatsQuery) -> Result<Json<Value>, Failure> {
    if let (Some(s), Some(e)) = (q.start, q.end) {
        if e < s {
            return Err(Failure(StatusCode::BAD_REQUEST, "end must be at least start".into()));
        }
    }
    let limit = q.limit.unwrap_or(500).clamp(1, MAX_ROWS);
    let (mut kinds, mut slices) = (0, 0);
    let mut rows: Vec<(u64, usize, u32, &Value)> = Vec::new();
    let mut ranged = Vec::new();
    for (n, t) in traces.ready_traces() {
        if q.start.is_none() && q.end.is_none() {
            let whole = whole_table(n, t);
            (kinds, slices) = (kinds + whole.kinds, slices + whole.slices);
            rows.extend(whole.rows.iter().map(|(total, path, row)| (*total, n, *path, row)));
        } else {
            let (a, b) = range(t, q.start, q.end);
            ranged.push((n, table(n, t, a, b)));
        }
    }
    for (n, part) in &ranged {
        (kinds, slices) = (kinds + part.kinds, slices + part.slices);
        rows.extend(part.rows.iter().map(|(total, path, row)| (*total, *n, *path, row)));
    }
    // Ties by trace and path: the same answer every time.
    rows.sort_by_key(|r| (std::cmp::Reverse(r.0), r.1, r.2));
    rows.truncate(limit);
    let rows: Vec<&Value> = rows.into_iter().map(|(_, _, _, r)| r).collect();
    Ok(Json(json!({ "slices": slices, "kinds": kinds, "rows": rows })))
}

/// The range in `t`'s ticks: from `start` to `end` on the shared timeline, or all of it.
fn range(t: &Trace, start: Option<i64>, end: Option<i64>) -> (u64, u64) {
    (start.map_or(0, |s| t.ticks(s, false)), end.map_or(u64::MAX, |e| t.ticks(e, true)))
}

#[derive(Debug, Deserialize)]
pub(crate) struct KindQuery {
    trace: usize,
    /// The path's names, as a JSON array (names may hold `/`).
    path: String,
    /// `scope`, `lock_wait` or `lock_held`.
    #[serde(rename = "type")]
    ty: String,
    start: Option<i64>,
    end: Option<i64>,
}

/// Buckets of the histogram of `/api/kind`.
const BUCKETS: usize = 40;
/// Slowest occurrences listed.
const SLOWEST: usize = 20;

/// `GET /api/kind`: one row of the statistics: the histogram of its durations (40 buckets of equal
/// ratio from the shortest to the longest) and its slowest occurrences.
pub(crate) async fn kind(
    State(traces): State<Shared>,
    Query(q): Query<KindQuery>,
) -> Result<Json<Value>, Failure> {
    // Reads a whole trace at worst: on a blocking thread, not an async worker.
    blocking(move || kind_of(&traces, q)).await
}

fn kind_of(traces: &Shared, q: KindQuery) -> Result<Json<Value>, Failure> {
    let bad = |why: String| Failure(StatusCode::BAD_REQUEST, why);
    let t = crate::server::trace(traces, q.trace)?;
    let want: Vec<String> =
        serde_json::from_str(&q.path).map_err(|e| bad(format!("path: a JSON array of names: {e}")))?;
    if want.is_empty() {
        return Err(bad("path has no name".into()));
    }
    let (a, b) = range(t, q.start, q.end);
    let mut paths = Paths::default();
    let mut durations: Vec<u64> = Vec::new();
    // The slowest: the shortest of them on top.
    let mut slowest: BinaryHeap<Reverse<(u64, u64, u32)>> = BinaryHeap::new();
    for thread in &t.index.threads {
        let mut walk =
            Walk { index: &t.index, thread, last: vec![None; thread.levels.len()], sweeping: false };
        // A path of n names is at level n - 1, or lower down for an interlaced slice.
        for (level, &(first, count)) in thread.levels.iter().enumerate().skip(want.len() - 1) {
            let end = first + count;
            let from = partition(first, end, |k| t.index.slice(k).start < a);
            let to = partition(from, end, |k| t.index.slice(k).start <= b);
            for i in from..to {
                let s = t.index.slice(i);
                if t.index.name(s.name) != want[want.len() - 1] || type_of(s.flags) != q.ty {
                    continue;
                }
                let path = walk.path(&mut paths, level, i);
                if paths.names(path) != want {
                    continue;
                }
                durations.push(s.duration());
                slowest.push(Reverse((s.duration(), i, thread.tid)));
                if slowest.len() > SLOWEST {
                    slowest.pop();
                }
            }
        }
    }
    let clock = t.clock_info();
    let (lo, hi) =
        (durations.iter().copied().min().unwrap_or(0), durations.iter().copied().max().unwrap_or(0));
    // Bucket k holds durations up to lo × ratio^(k+1); a duration of 0 counts as 1 tick.
    let (lo_f, hi_f) = ((lo.max(1)) as f64, (hi.max(1)) as f64);
    let ratio = (hi_f / lo_f).powf(1.0 / BUCKETS as f64).max(1.0 + 1e-9);
    let mut counts = [0u64; BUCKETS];
    for &d in &durations {
        let k = ((d.max(1) as f64 / lo_f).ln() / ratio.ln()).floor() as usize;
        counts[k.min(BUCKETS - 1)] += 1;
    }
    let histogram: Vec<Value> = counts
        .iter()
        .enumerate()
        .map(|(k, &n)| {
            let edge = |k: usize| clock.ticks_to_ns((lo_f * ratio.powi(k as i32)).round() as u64);
            json!([edge(k), edge(k + 1), n])
        })
        .collect();
    let slowest: Vec<Value> = slowest
        .into_sorted_vec()
        .into_iter()
        .map(|Reverse((d, i, tid))| {
            let s = t.index.slice(i);
            json!({ "index": i, "tid": tid, "start_ns": t.ns(s.start), "end_ns": t.ns(s.end), "duration_ns": clock.ticks_to_ns(d) })
        })
        .collect();
    Ok(Json(json!({
        "count": durations.len(),
        "min_ns": clock.ticks_to_ns(lo),
        "max_ns": clock.ticks_to_ns(hi),
        "histogram": histogram,
        "slowest": slowest,
    })))
}

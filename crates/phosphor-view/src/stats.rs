//! `GET /api/stats`: the statistics panel's table, per scope path across threads, for the whole
//! trace or a range: count, total, min, mean, p50, p99 and max, accumulated as `phosphor stats`
//! accumulates them (`phosphor_export::Durations`), so that the whole trace gives the figures
//! `phosphor stats` gives.
//!
//! A slice's path is the one the model gave it when the index was built (`slices.rs`), stored
//! beside it: the tree `phosphor stats` counts. Durations are measured on the model's timeline.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::Json;
use phosphor_export::Durations;
use serde::{Deserialize, Serialize};

use phosphor_format::Phase;
use phosphor_model::names;
use phosphor_model::nesting::DEFAULT_MAX_DEPTH;
use phosphor_model::timeline::Timeline;

use crate::blocks::slice_fields as F;
use crate::file::{IndexFile, ThreadTrack};
use crate::query::partition;
use crate::records::{slice_flags, Slice};
use crate::server::{Failure, Shared, Trace};

/// Runs `f` on a blocking thread: a request that may read a whole trace.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<Json<T>, Failure> + Send + 'static,
) -> Result<Json<T>, Failure> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(Failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())))
}

/// The most rows one answer gives.
pub const MAX_ROWS: usize = 5000;

#[derive(Debug, Deserialize)]
pub(crate) struct StatsQuery {
    /// The range: slices that start in it (ns on the shared timeline; the whole trace without).
    start: Option<i64>,
    end: Option<i64>,
    /// Rows to give, the largest total first (default 500).
    limit: Option<usize>,
    /// Only thread `tid` of trace `trace` (the flame graph of one thread); both or neither.
    trace: Option<usize>,
    tid: Option<u32>,
}

/// A thread slice's scope path as `phosphor stats` shows it: the names of the slices enclosing
/// it, outermost first, then its own, each cut as the statistics cut names; past the statistics'
/// depth cap, the ancestors down to it, the cap's marker, then its own name. With its type.
pub(crate) fn shown_path(index: &IndexFile, path: u32) -> (Vec<String>, &'static str) {
    let mut names = Vec::new();
    let mut ty = "scope";
    let mut at = path;
    while let Some((parent, name, kind)) = index.scope_path(at) {
        if names.is_empty() {
            ty = type_of(kind);
        }
        names.push(names::shown(index.name(name)).into_owned());
        // A parent comes before its children (corrupt: stop).
        if parent >= at {
            break;
        }
        at = parent;
    }
    names.reverse();
    let cap = DEFAULT_MAX_DEPTH;
    if names.len() > cap {
        let own = names.pop().unwrap_or_default();
        names.truncate(cap);
        names.push(format!("[deeper than {cap}]"));
        names.push(own);
    }
    (names, ty)
}

pub(crate) fn type_of(flags: u8) -> &'static str {
    match flags & slice_flags::KIND_MASK {
        slice_flags::LOCK_WAIT => "lock_wait",
        slice_flags::LOCK_HELD => "lock_held",
        _ => "scope",
    }
}

/// Slice `i` of level `level` of `thread` in its context: its scope path, and its self time (its
/// duration less those of the slices drawn a level down inside it, each measured by `dur`) and
/// how many those are.
pub(crate) fn context(
    index: &IndexFile,
    thread: &ThreadTrack,
    level: usize,
    i: u64,
    dur: impl Fn(&Slice) -> u64,
) -> (Vec<String>, u64, u64) {
    let s = index.slice(i);
    let names = match index.slice_path(i) {
        Some(p) => shown_path(index, p).0,
        None => vec![index.name(s.name).to_owned()],
    };
    let (mut children, mut nested) = (0u64, 0u64);
    if let Some(&(first, n)) = thread.levels.get(level + 1) {
        let end = first + n;
        let from = partition(first, end, |k| index.slice(k).start < s.start);
        let to = partition(from, end, |k| index.slice(k).start <= s.end);
        for k in from..to {
            let c = index.slice(k);
            if c.end <= s.end {
                children += 1;
                nested = nested.saturating_add(dur(&c));
            }
        }
    }
    (names, dur(&s).saturating_sub(nested), children)
}

/// Calls `f` with the number, the start, the end and the path of every slice of `thread` that
/// starts from `a` to `b` (ticks) and has a duration: begins never ended are left out, as the
/// statistics leave them out. Decodes only those fields of the slices' blocks.
fn each_slice(
    index: &IndexFile,
    thread: &ThreadTrack,
    a: u64,
    b: u64,
    mut f: impl FnMut(u64, u64, u64, u32),
) {
    for &(first, count) in &thread.levels {
        let end = first + count;
        let from = partition(first, end, |k| index.slice(k).start < a);
        let to = partition(from, end, |k| index.slice(k).start <= b);
        index.scan_slices(from, to, |base, rows, c| {
            c.want(&[F::FLAGS, F::PATH, F::START, F::END]);
            let (flags, path) = (c.get(F::FLAGS), c.get(F::PATH));
            let (start, end) = (c.get(F::START), c.get(F::END));
            for r in rows {
                let path = path[r] as u32;
                if flags[r] as u8 & slice_flags::UNCLOSED == 0 && path != crate::build::NO_PATH {
                    f(base + r as u64, start[r], end[r], path);
                }
            }
        });
    }
}

pub(crate) async fn stats(
    State(traces): State<Shared>,
    Query(q): Query<StatsQuery>,
) -> Result<Json<StatsAnswer>, Failure> {
    // Reads a whole trace at worst: on a blocking thread, not an async worker.
    blocking(move || stats_of(&traces, q)).await
}

/// One trace's table: its rows (at most [`MAX_ROWS`], by total, largest first: `(total_ns, path
/// number, row)`), how many paths it has, and the slices it counted.
#[derive(Debug, Default)]
pub(crate) struct Table {
    pub(crate) rows: Vec<(u64, u32, StatsRow)>,
    pub(crate) kinds: usize,
    pub(crate) slices: u64,
}

/// The table of trace `n` (`t`) from `a` to `b` (ticks). Durations are measured as `phosphor
/// stats` measures them: on the [`Timeline`], each end and start rounded to the nanosecond.
fn table(n: usize, t: &Trace, a: u64, b: u64, tid: Option<u32>) -> Table {
    let timeline = Timeline::new(t.clock_info());
    let mut acc: HashMap<u32, Durations> = HashMap::new();
    let mut slices = 0u64;
    for thread in t.index.threads.iter().filter(|th| tid.is_none_or(|tid| th.tid == tid)) {
        each_slice(&t.index, thread, a, b, |_, start, end, path| {
            acc.entry(path).or_default().add(timeline.time(end) - timeline.time(start));
            slices += 1;
        });
    }
    // Paths that show alike (names cut, or past the depth cap) are one row, as in the statistics.
    let mut shown: HashMap<(Vec<String>, &'static str), (u32, Durations)> = HashMap::new();
    for (path, d) in acc {
        let row = shown.entry(shown_path(&t.index, path)).or_insert_with(|| (path, Durations::default()));
        row.0 = row.0.min(path);
        row.1.merge(&d);
    }
    let mut rows: Vec<(u64, u32, StatsRow)> = shown
        .into_iter()
        .filter_map(|((names, ty), (path, d))| {
            let row = StatsRow::new(n, names, ty, &d.stats(timeline.clock())?);
            Some((row.total_ns, path, row))
        })
        .collect();
    let kinds = rows.len();
    // Ties by path number: the same answer every time.
    rows.sort_by_key(|r| (std::cmp::Reverse(r.0), r.1));
    rows.truncate(MAX_ROWS);
    Table { rows, kinds, slices }
}

/// A row's own name as every output shows it: a lock's rows read `queue (wait)` and `queue
/// (held)` ([`names::lock_name`]).
pub(crate) fn row_name(name: &str, ty: &str) -> String {
    let phase = match ty {
        "lock_wait" => Phase::LockWait,
        "lock_held" => Phase::LockHeld,
        _ => Phase::Complete,
    };
    // The index names a lock's slices so already; an older one by the callsite's name.
    if !names::lock_suffix(phase).is_empty() && name.ends_with(names::lock_suffix(phase)) {
        return name.to_owned();
    }
    names::lock_name(name, phase).into_owned()
}

/// The table of the whole of trace `n` (`t`): made once, and kept.
pub(crate) fn whole_table(n: usize, t: &Trace) -> &Table {
    t.whole_stats.get_or_init(|| table(n, t, 0, u64::MAX, None))
}

/// `/api/stats`' answer.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct StatsAnswer {
    /// The slices counted.
    slices: u64,
    /// How many rows there are, of which at most `limit` are given.
    kinds: usize,
    /// The rows, by `total_ns`, largest first.
    rows: Vec<StatsRow>,
    /// What the live traces' rows cover (`live::scan::coverage`); empty without live traces.
    live: Vec<crate::api::LiveCoverage>,
}

/// A row of the statistics: one scope path (of one trace), its durations' figures.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct StatsRow {
    /// The trace the row counts.
    pub(crate) trace: usize,
    /// Its scope path: the names of the slices that hold it, outermost first, then its own.
    pub(crate) path: Vec<String>,
    /// `scope`, `lock_wait` or `lock_held`.
    #[serde(rename = "type")]
    pub(crate) ty: &'static str,
    /// Its own name as every output shows it (`queue (wait)` for a lock's).
    pub(crate) name: String,
    /// How many slices it has.
    pub(crate) count: u64,
    /// Their total duration.
    pub(crate) total_ns: u64,
    /// The shortest.
    pub(crate) min_ns: u64,
    /// The mean.
    pub(crate) mean_ns: u64,
    /// The median (within 0.1% above when not `exact`).
    pub(crate) p50_ns: u64,
    /// The 99th percentile (within 0.1% above when not `exact`).
    pub(crate) p99_ns: u64,
    /// The longest.
    pub(crate) max_ns: u64,
    /// False when p50 and p99 come from a histogram.
    pub(crate) exact: bool,
}

impl StatsRow {
    /// The row of path `names` (of kind `ty`) of trace `n`, whose durations' figures are `s`.
    pub(crate) fn new(
        n: usize,
        names: Vec<String>,
        ty: &'static str,
        s: &phosphor_export::DurationStats,
    ) -> StatsRow {
        let name = row_name(names.last().map_or("", String::as_str), ty);
        StatsRow {
            trace: n,
            path: names,
            ty,
            name,
            count: s.samples,
            total_ns: s.total_ns,
            min_ns: s.min_ns,
            mean_ns: s.mean_ns,
            p50_ns: s.p50_ns,
            p99_ns: s.p99_ns,
            max_ns: s.max_ns,
            exact: s.exact_percentiles,
        }
    }
}

fn stats_of(traces: &Shared, q: StatsQuery) -> Result<Json<StatsAnswer>, Failure> {
    if let (Some(s), Some(e)) = (q.start, q.end) {
        if e < s {
            return Err(Failure(StatusCode::BAD_REQUEST, "end must be at least start".into()));
        }
    }
    let limit = q.limit.unwrap_or(500).clamp(1, MAX_ROWS);
    let one = match (q.trace, q.tid) {
        (Some(n), Some(tid)) => {
            crate::server::source(traces, n)?;
            Some((n, tid))
        }
        (None, None) => None,
        _ => return Err(Failure(StatusCode::BAD_REQUEST, "trace and tid go together".into())),
    };
    let (mut kinds, mut slices) = (0, 0);
    let mut rows: Vec<(u64, usize, u32, &StatsRow)> = Vec::new();
    let mut ranged = Vec::new();
    for (n, t) in traces.ready_traces() {
        if let Some((trace, tid)) = one {
            if n == trace {
                let (a, b) = range(t, q.start, q.end);
                ranged.push((n, table(n, t, a, b, Some(tid))));
            }
        } else if q.start.is_none() && q.end.is_none() {
            let whole = whole_table(n, t);
            (kinds, slices) = (kinds + whole.kinds, slices + whole.slices);
            rows.extend(whole.rows.iter().map(|(total, path, row)| (*total, n, *path, row)));
        } else {
            let (a, b) = range(t, q.start, q.end);
            ranged.push((n, table(n, t, a, b, None)));
        }
    }
    // The live traces: what their live views hold now.
    for (n, slot, live) in crate::live::scan::live_traces(traces) {
        if one.is_some_and(|(trace, _)| trace != n) {
            continue;
        }
        let p = slot.place();
        let (a, b) = (q.start.map_or(0, |s| p.ticks(s, false)), q.end.map_or(u64::MAX, |e| p.ticks(e, true)));
        ranged.push((n, crate::live::stats::table(n, &live.model(), a, b, one.map(|o| o.1))));
    }
    for (n, part) in &ranged {
        (kinds, slices) = (kinds + part.kinds, slices + part.slices);
        rows.extend(part.rows.iter().map(|(total, path, row)| (*total, *n, *path, row)));
    }
    // Ties by trace and path: the same answer every time.
    rows.sort_by_key(|r| (std::cmp::Reverse(r.0), r.1, r.2));
    rows.truncate(limit);
    let rows: Vec<StatsRow> = rows.into_iter().map(|(_, _, _, r)| r.clone()).collect();
    let live = crate::live::scan::coverage(traces);
    Ok(Json(StatsAnswer { slices, kinds, rows, live }))
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
    /// `scope`, `lock_wait` or `lock_held`; or `async`, for the async slices of the name `path`
    /// holds alone.
    #[serde(rename = "type")]
    ty: String,
    start: Option<i64>,
    end: Option<i64>,
}

/// Buckets of the histogram of `/api/kind`.
const BUCKETS: usize = 40;
/// Slowest occurrences listed.
const SLOWEST: usize = 20;

/// `GET /api/kind`: one row of the statistics (or the async slices of a name): the histogram of its
/// durations (40 buckets of equal ratio from the shortest to the longest) and its slowest
/// occurrences.
pub(crate) async fn kind(
    State(traces): State<Shared>,
    Query(q): Query<KindQuery>,
) -> Result<Json<KindAnswer>, Failure> {
    // Reads a whole trace at worst: on a blocking thread, not an async worker.
    blocking(move || kind_of(&traces, q)).await
}

/// `/api/kind`'s answer.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct KindAnswer {
    /// How many occurrences were counted.
    count: usize,
    /// The shortest duration.
    min_ns: u64,
    /// The longest.
    max_ns: u64,
    /// The median: the nearest rank, exact.
    p50_ns: u64,
    /// The 90th percentile, exact.
    p90_ns: u64,
    /// The 99th percentile, exact.
    p99_ns: u64,
    /// `[from_ns, to_ns, count]`.
    histogram: Vec<(u64, u64, u64)>,
    /// The 20 slowest occurrences, slowest first.
    slowest: Vec<Occurrence>,
    /// For a live trace: what the answer covers (`live::scan::coverage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    live: Option<Vec<crate::api::LiveCoverage>>,
}

/// One of the slowest occurrences: on a thread (`tid`) or an async track (`async`).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Occurrence {
    /// The slice's number, for `/api/slice`.
    index: u64,
    /// Its thread; absent for an async slice.
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<u32>,
    /// Its async track; absent for a slice on a thread.
    #[serde(rename = "async", skip_serializing_if = "Option::is_none")]
    async_track: Option<u32>,
    /// Its start, on the shared timeline.
    start_ns: i64,
    /// Its end, on the shared timeline.
    end_ns: i64,
    /// Its duration.
    duration_ns: u64,
}

fn kind_of(traces: &Shared, q: KindQuery) -> Result<Json<KindAnswer>, Failure> {
    let bad = |why: String| Failure(StatusCode::BAD_REQUEST, why);
    let want: Vec<String> =
        serde_json::from_str(&q.path).map_err(|e| bad(format!("path: a JSON array of names: {e}")))?;
    if want.is_empty() {
        return Err(bad("path has no name".into()));
    }
    let t = match crate::server::source(traces, q.trace)? {
        crate::server::Source::Index(t) => t,
        crate::server::Source::Live(slot, live) => {
            // What the live view holds now.
            let p = slot.place();
            let (a, b) =
                (q.start.map_or(0, |s| p.ticks(s, false)), q.end.map_or(u64::MAX, |e| p.ticks(e, true)));
            let m = live.model();
            let found = crate::live::stats::kind(&m, &want, &q.ty, a, b);
            let durations: Vec<u64> = found.iter().map(|f| f.0).collect();
            let mut slowest: Vec<(u64, u64, u32, i64, i64)> =
                found.iter().map(|&(d, i, tid, s, e)| (d, i, tid, p.ns(s), p.ns(e))).collect();
            slowest.sort_by_key(|&(d, i, ..)| (Reverse(d), i));
            slowest.truncate(SLOWEST);
            let mut v = kind_answer(durations, &slowest, false, crate::live::stats::clock(&m));
            // The model's lock is taken again for what it covers.
            drop(m);
            v.live = Some(crate::live::scan::coverage(traces));
            return Ok(Json(v));
        }
    };
    let (a, b) = range(t, q.start, q.end);
    let timeline = Timeline::new(t.clock_info());
    let mut durations: Vec<u64> = Vec::new();
    // The slowest: the shortest of them on top.
    let mut slowest: BinaryHeap<Reverse<(u64, u64, u32)>> = BinaryHeap::new();
    // By path number, whether it is the one asked for.
    let mut wanted: HashMap<u32, bool> = HashMap::new();
    let asyncs = q.ty == "async";
    if asyncs {
        // Each async track of the name (its place among them in the slowest): its lanes' slices.
        for (k, track) in t.index.asyncs.iter().enumerate() {
            let name = t.index.name(track.tid);
            if want.len() != 1 || (name != want[0] && names::shown(name) != want[0]) {
                continue;
            }
            for &(first, count) in &track.levels {
                let end = first + count;
                let from = partition(first, end, |i| t.index.slice(i).start < a);
                let to = partition(from, end, |i| t.index.slice(i).start <= b);
                t.index.scan_slices(from, to, |base, rows, c| {
                    c.want(&[F::FLAGS, F::START, F::END]);
                    let (flags, start, end) = (c.get(F::FLAGS), c.get(F::START), c.get(F::END));
                    for r in rows {
                        if flags[r] as u8 & slice_flags::UNCLOSED != 0 {
                            continue;
                        }
                        let d = timeline.time(end[r]) - timeline.time(start[r]);
                        durations.push(d);
                        slowest.push(Reverse((d, base + r as u64, k as u32)));
                        if slowest.len() > SLOWEST {
                            slowest.pop();
                        }
                    }
                });
            }
        }
    }
    for thread in t.index.threads.iter().filter(|_| !asyncs) {
        each_slice(&t.index, thread, a, b, |i, start, end, path| {
            let hit = *wanted.entry(path).or_insert_with(|| {
                let (names, ty) = shown_path(&t.index, path);
                names == want && ty == q.ty
            });
            if !hit {
                return;
            }
            let d = timeline.time(end) - timeline.time(start);
            durations.push(d);
            slowest.push(Reverse((d, i, thread.tid)));
            if slowest.len() > SLOWEST {
                slowest.pop();
            }
        });
    }
    let slowest: Vec<(u64, u64, u32, i64, i64)> = slowest
        .into_sorted_vec()
        .into_iter()
        .map(|Reverse((d, i, on))| {
            let s = t.index.slice(i);
            (d, i, on, t.ns(s.start), t.ns(s.end))
        })
        .collect();
    Ok(Json(kind_answer(durations, &slowest, asyncs, timeline.clock())))
}

/// `/api/kind`'s answer: of `durations` (ticks of `clock`), the histogram and the percentiles;
/// `slowest` as (duration, number, track, start, end), slowest first, each track a thread, or
/// (`asyncs`) a place among the trace's async tracks.
fn kind_answer(
    mut durations: Vec<u64>,
    slowest: &[(u64, u64, u32, i64, i64)],
    asyncs: bool,
    clock: &phosphor_format::ClockInfo,
) -> KindAnswer {
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
    let histogram = counts
        .iter()
        .enumerate()
        .map(|(k, &n)| {
            let edge = |k: usize| clock.ticks_to_ns((lo_f * ratio.powi(k as i32)).round() as u64);
            (edge(k), edge(k + 1), n)
        })
        .collect();
    // Exact percentiles, the nearest rank: the duration that `p` of them do not exceed.
    durations.sort_unstable();
    let rank = |p: f64| {
        let n = durations.len();
        let k = ((p * n as f64).ceil() as usize).clamp(1, n.max(1)) - 1;
        clock.ticks_to_ns(durations.get(k).copied().unwrap_or(0))
    };
    let slowest = slowest
        .iter()
        .map(|&(d, i, on_track, start_ns, end_ns)| Occurrence {
            index: i,
            tid: (!asyncs).then_some(on_track),
            async_track: asyncs.then_some(on_track),
            start_ns,
            end_ns,
            duration_ns: clock.ticks_to_ns(d),
        })
        .collect();
    KindAnswer {
        count: durations.len(),
        min_ns: clock.ticks_to_ns(lo),
        max_ns: clock.ticks_to_ns(hi),
        p50_ns: rank(0.5),
        p90_ns: rank(0.9),
        p99_ns: rank(0.99),
        histogram,
        slowest,
        live: None,
    }
}

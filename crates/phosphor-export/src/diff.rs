//! `phosphor diff`: two traces' statistics compared path by path, and the gate a CI job sets on
//! them.
//!
//! # Brief overview
//!
//! * [`DiffSide`] reads one trace file in a streaming pass (the paths and kinds of
//!   [`TraceStats`](crate::TraceStats): scopes and lock events by scope path across threads,
//!   instants, counters and logs counted at theirs, async slices by name), keeping each row's
//!   durations as `phosphor stats` does (exact up to [`EXACT_SAMPLES`](crate::EXACT_SAMPLES), then
//!   binned within 0.1%).
//! * [`TraceDiff::new`] pairs two sides' rows by path and type: count, total, p50, p90, p99 and max
//!   of each, their change, and a rank test of the durations ([`RankTest`], `diff_stats.rs`).
//!   Rows on one side only are [`RowStatus::New`] or [`RowStatus::Gone`].
//! * [`FailOn`] is a gate (`p99>+10%`, `p50>+2ms`, `count>+100`); [`TraceDiff::regressions`] lists
//!   the rows past one.
//!
//! # When a change is a regression
//!
//! Two runs of one program differ by noise, and with millions of durations a rank test finds
//! even a shift of a few nanoseconds significant. So a row regresses on a gate only if the change
//! is past the gate's threshold *at the conservative end of what the data allow*, and the rank
//! test finds the new durations significantly longer:
//! * `p50`, `p90`, `p99`: the new quantile's lower confidence bound against the base's upper one
//!   (each at 99.9%, from order statistics: distribution-free); a base too small to bound its
//!   quantile from above (100 durations and a p99) cannot regress on it; and the rank test is
//!   significant (p < [`SIGNIFICANCE`]), the new durations the longer.
//! * `total` and `max`: the figures as they are, and the rank test as above (these are not
//!   estimates, but they move with the slowest durations, so they suit noisy runs less).
//! * `count`: the counts as they are (a count is exact, no test).
//!
//! Gates apply to rows on both sides; a new or gone path is listed, never a regression.

use std::convert::Infallible;
use std::fmt;
use std::io::Read;

use phosphor_format::file::{self, Reader};
use phosphor_format::glob_match;

use crate::diff_stats::{rank_test, Sample};
use crate::durations::Durations;
use crate::error::{read_chunks, Item};
use crate::stats::{EventType, StatsBuilder};
use phosphor_model::nesting::DEEPER;

pub use crate::diff_json::{
    BoundsJson, ChangeJson, ChangesJson, ConservativeJson, DiffRowJson, DurationsJson, QuantilesJson,
    SideJson, TestJson, DIFF_SCHEMA,
};
pub use crate::diff_stats::{RankMethod, RankTest, BOUND_Z, PERMUTATION_LIMIT, SIGNIFICANCE};

/// What a row counts: events of a type at a scope path, or async slices of a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DiffKind {
    /// Events of this type (its last segment's) at the path.
    Event(EventType),
    /// Async slices of the name (the row's path), paired by id across threads.
    Async,
}

impl DiffKind {
    /// The event type's name (`scope`, `lock_wait`, `instant`...), or `async`.
    pub fn as_str(self) -> &'static str {
        match self {
            DiffKind::Event(t) => t.as_str(),
            DiffKind::Async => "async",
        }
    }
}

/// One trace file's rows, ready to be compared.
#[derive(Clone, Debug)]
pub struct DiffSide {
    rows: Vec<SideRow>,
    /// Events read.
    pub events: u64,
    /// Whether the file was read to its trailer.
    pub complete: bool,
}

#[derive(Clone, Debug)]
struct SideRow {
    path: String,
    names: Vec<String>,
    kind: DiffKind,
    figures: Figures,
    /// The durations exactly (if kept) and binned, for the rank test.
    exact: Option<Sample>,
    binned: Sample,
}

/// One side's figures of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Figures {
    /// Events, scopes or slices.
    pub count: u64,
    /// Their durations, if they have any.
    pub durations: Option<DurationFigures>,
}

/// Durations of one side of a row, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DurationFigures {
    /// Durations measured (a scope left open counts in `count`, not here).
    pub samples: u64,
    /// Their sum.
    pub total_ns: u64,
    /// Nearest-rank percentiles, exact or within 0.1% above (as `phosphor stats`).
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Longest.
    pub max_ns: u64,
    /// Whether every duration was kept (so the percentiles are exact).
    pub exact: bool,
    /// Confidence bounds of p50, p90 and p99 (see the module's notes).
    pub bounds: [Bounds; 3],
}

/// A quantile's confidence bounds, each holding with 99.9% confidence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Lower bound (0: none).
    pub lower_ns: u64,
    /// Upper bound; `None` when the durations are too few to bound it.
    pub upper_ns: Option<u64>,
}

impl DiffSide {
    /// Reads the rest of the file `reader` reads. A file that cannot be read to its end is an
    /// error (with the byte offset): a diff of part of a run would mislead.
    pub fn from_reader<R: Read>(mut reader: Reader<R>) -> Result<DiffSide, file::Error> {
        let mut b = StatsBuilder::new(&reader.header().clock);
        let mut events = 0u64;
        let failure = read_chunks(&mut reader, |item| -> Result<(), Infallible> {
            match item {
                Item::Chunk(x) => b.chunk(x),
                Item::Event(e) => {
                    events += 1;
                    b.add(e);
                }
            }
            Ok(())
        });
        let Ok(failure) = failure;
        if let Some(e) = failure {
            return Err(e);
        }
        let complete = reader.trailer().is_some();
        drop(reader);
        let (kinds, paths, labels, asyncs, clock) = b.resolved();
        // Each path's kinds on every thread added up; then by path text and type (two paths with
        // one text, as a name made at run time may give, are one row).
        let mut by_path: Vec<Option<(u64, Durations)>> = vec![None; paths.len()];
        for k in kinds {
            let (count, d) = by_path[k.path as usize].get_or_insert_with(Default::default);
            *count += k.acc.count;
            d.merge(&k.acc.durations);
        }
        let marker = format!("[deeper than {}]", paths.max_depth());
        let mut raw: Vec<(String, DiffKind, u64, Durations, Vec<String>)> = Vec::new();
        for (path, acc) in by_path.into_iter().enumerate() {
            let Some((count, d)) = acc else { continue };
            let labels_of = paths.labels(path as u32);
            let text: Vec<&str> = labels_of
                .iter()
                .map(|&l| if l == DEEPER { marker.as_str() } else { labels.name(l) })
                .collect();
            let ty = labels.event_type(paths.label(path as u32));
            let names = text.iter().map(|&n| n.to_owned()).collect();
            raw.push((text.join("/"), DiffKind::Event(ty), count, d, names));
        }
        for (name, d) in asyncs.durations() {
            let count = d.stats(clock).map_or(0, |s| s.samples);
            raw.push((name.to_owned(), DiffKind::Async, count, d.clone(), vec![name.to_owned()]));
        }
        raw.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let mut rows: Vec<SideRow> = Vec::with_capacity(raw.len());
        let mut merged: Option<(String, DiffKind, u64, Durations, Vec<String>)> = None;
        for r in raw.into_iter().map(Some).chain([None]) {
            match (&mut merged, r) {
                (Some(m), Some(r)) if (&m.0, m.1) == (&r.0, r.1) => {
                    m.2 += r.2;
                    m.3.merge(&r.3);
                }
                (m, r) => {
                    if let Some((path, kind, count, d, names)) = std::mem::replace(m, r) {
                        rows.push(side_row(path, names, kind, count, &d, clock));
                    }
                }
            }
        }
        Ok(DiffSide { rows, events, complete })
    }
}

fn side_row(
    path: String,
    names: Vec<String>,
    kind: DiffKind,
    count: u64,
    d: &Durations,
    clock: &file::ClockInfo,
) -> SideRow {
    let ns = |t: u64| clock.ticks_to_ns(t);
    let exact = d.exact_ticks().map(|v| Sample::exact(v.into_iter().map(ns)));
    let binned = Sample::binned(d.bins().into_iter().map(|(lo, hi, n)| (ns(lo), ns(hi), n)));
    let has_durations =
        matches!(kind, DiffKind::Async) || matches!(kind, DiffKind::Event(t) if t.has_duration());
    let durations = d.stats(clock).filter(|_| has_durations).map(|s| {
        let sample = exact.as_ref().unwrap_or(&binned);
        let bounds = [50, 90, 99].map(|p| {
            let (lower_ns, upper_ns) = sample.percentile_bounds(p, s.min_ns, s.max_ns);
            Bounds { lower_ns, upper_ns }
        });
        DurationFigures {
            samples: s.samples,
            total_ns: s.total_ns,
            p50_ns: s.p50_ns,
            p90_ns: sample.percentile(90, s.min_ns, s.max_ns),
            p99_ns: s.p99_ns,
            max_ns: s.max_ns,
            exact: s.exact_percentiles,
            bounds,
        }
    });
    SideRow { path, names, kind, figures: Figures { count, durations }, exact, binned }
}

/// A figure a gate watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    /// Events, scopes or slices.
    Count,
    /// Total duration.
    Total,
    /// Median duration.
    P50,
    /// 90th percentile.
    P90,
    /// 99th percentile.
    P99,
    /// Longest duration.
    Max,
}

impl Metric {
    /// Every metric, in the order the reports show them.
    pub const ALL: [Metric; 6] =
        [Metric::Count, Metric::Total, Metric::P50, Metric::P90, Metric::P99, Metric::Max];

    /// `count`, `total`, `p50`, `p90`, `p99` or `max`.
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Count => "count",
            Metric::Total => "total",
            Metric::P50 => "p50",
            Metric::P90 => "p90",
            Metric::P99 => "p99",
            Metric::Max => "max",
        }
    }

    /// The figure on one side (`None` for a duration of a row without them).
    pub fn of(self, f: &Figures) -> Option<u64> {
        let d = f.durations.as_ref();
        match self {
            Metric::Count => Some(f.count),
            Metric::Total => d.map(|d| d.total_ns),
            Metric::P50 => d.map(|d| d.p50_ns),
            Metric::P90 => d.map(|d| d.p90_ns),
            Metric::P99 => d.map(|d| d.p99_ns),
            Metric::Max => d.map(|d| d.max_ns),
        }
    }

    /// The place of a quantile among [`DurationFigures::bounds`].
    fn quantile(self) -> Option<usize> {
        match self {
            Metric::P50 => Some(0),
            Metric::P90 => Some(1),
            Metric::P99 => Some(2),
            _ => None,
        }
    }
}

/// A change from a base figure to a new one.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Change {
    /// The base figure (for a conservative change, the upper bound of the base's quantile).
    pub base: u64,
    /// The new figure (for a conservative change, the lower bound of the new quantile).
    pub new: u64,
}

impl Change {
    /// `new - base`.
    pub fn absolute(&self) -> i128 {
        i128::from(self.new) - i128::from(self.base)
    }

    /// `(new - base) / base`; `None` when the base is 0.
    pub fn relative(&self) -> Option<f64> {
        (self.base > 0).then(|| self.absolute() as f64 / self.base as f64)
    }
}

/// Where a row's path is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowStatus {
    /// In both traces.
    Both,
    /// Only in the new trace.
    New,
    /// Only in the base trace.
    Gone,
}

impl RowStatus {
    /// `both`, `new` or `gone`.
    pub fn as_str(self) -> &'static str {
        match self {
            RowStatus::Both => "both",
            RowStatus::New => "new",
            RowStatus::Gone => "gone",
        }
    }
}

/// A path and type, on either side or both.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct DiffRow {
    /// The scope path (names joined by `/`), or an async slice's name.
    pub path: String,
    /// The path's names, outermost first (those of the first of several paths that `path`
    /// spells alike), or the async slice's name: `path` is them joined by `/`.
    pub names: Vec<String>,
    /// What the row counts.
    pub kind: DiffKind,
    /// The base trace's figures, if the path is in it.
    pub base: Option<Figures>,
    /// The new trace's figures, if the path is in it.
    pub new: Option<Figures>,
    /// The rank test of the durations, when both sides have some.
    pub test: Option<RankTest>,
}

impl DiffRow {
    /// Whether the path is in both traces or one.
    pub fn status(&self) -> RowStatus {
        match (&self.base, &self.new) {
            (Some(_), None) => RowStatus::Gone,
            (None, Some(_)) => RowStatus::New,
            _ => RowStatus::Both,
        }
    }

    /// The change of `metric` (a side without the row counts as 0).
    pub fn change(&self, metric: Metric) -> Option<Change> {
        let side = |f: &Option<Figures>| f.as_ref().map_or(Some(0), |f| metric.of(f));
        let (base, new) = (side(&self.base)?, side(&self.new)?);
        (metric.of(self.base.as_ref().or(self.new.as_ref())?).is_some()).then_some(Change { base, new })
    }

    /// For a quantile, its change at the conservative end: the base's upper bound to the new lower
    /// bound. `None` for other metrics, a row on one side, or a base too small to bound it.
    pub fn conservative_change(&self, metric: Metric) -> Option<Change> {
        let q = metric.quantile()?;
        let base = self.base.as_ref()?.durations?.bounds[q].upper_ns?;
        let new = self.new.as_ref()?.durations?.bounds[q].lower_ns;
        Some(Change { base, new })
    }

    /// Whether the row is past `gate` (see the module's notes for the rule).
    pub fn past(&self, gate: &FailOn) -> bool {
        if self.status() != RowStatus::Both {
            return false;
        }
        let slower = self.test.is_some_and(|t| t.slower());
        let change = match gate.metric {
            Metric::Count => self.change(Metric::Count),
            Metric::Total | Metric::Max if slower => self.change(gate.metric),
            Metric::P50 | Metric::P90 | Metric::P99 if slower => self.conservative_change(gate.metric),
            _ => None,
        };
        change.is_some_and(|c| gate.limit.exceeded(&c))
    }

    /// The size of the change the reports sort by: of the total duration, else of the count.
    fn impact(&self) -> (u128, u128) {
        let size = |m| self.change(m).map_or(0, |c| c.absolute().unsigned_abs());
        (size(Metric::Total), size(Metric::Count))
    }
}

/// A threshold past which a change regresses, as `--fail-on` takes it: `METRIC>+AMOUNT`.
#[derive(Clone, Debug, PartialEq)]
pub struct FailOn {
    /// The figure watched.
    pub metric: Metric,
    /// How far it may grow.
    pub limit: Limit,
    spec: String,
}

/// How far a figure may grow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// By this fraction of the base (`+10%` is 0.1).
    Relative(f64),
    /// By this much: nanoseconds for durations, a number for `count`.
    Absolute(u64),
}

impl Limit {
    fn exceeded(&self, c: &Change) -> bool {
        match *self {
            Limit::Relative(f) => c.relative().map_or(c.new > 0, |r| r > f),
            Limit::Absolute(a) => c.absolute() > i128::from(a),
        }
    }
}

impl fmt::Display for FailOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spec)
    }
}

/// A `--fail-on` spec that does not parse, and why.
#[derive(Debug, thiserror::Error)]
#[error("bad --fail-on {spec:?}: {why} (expected METRIC>+AMOUNT, e.g. 'p99>+10%', 'p50>+2ms', 'count>+100'; METRIC is one of count, total, p50, p90, p99, max)")]
pub struct FailOnError {
    spec: String,
    why: String,
}

impl std::str::FromStr for FailOn {
    type Err = FailOnError;

    fn from_str(spec: &str) -> Result<FailOn, FailOnError> {
        let bad = |why: &str| FailOnError { spec: spec.to_owned(), why: why.to_owned() };
        let compact: String = spec.chars().filter(|c| !c.is_whitespace()).collect();
        let (name, amount) = compact.split_once('>').ok_or_else(|| bad("no '>'"))?;
        let metric = Metric::ALL
            .into_iter()
            .find(|m| m.as_str() == name.to_ascii_lowercase())
            .ok_or_else(|| bad(&format!("unknown metric {name:?}")))?;
        if amount.starts_with('-') {
            return Err(bad("a threshold is an increase; write it with '+'"));
        }
        let amount = amount.strip_prefix('+').unwrap_or(amount);
        let number = |text: &str| -> Result<f64, FailOnError> {
            let ok = !text.is_empty() && text.chars().all(|c| c.is_ascii_digit() || c == '.');
            text.parse::<f64>()
                .ok()
                .filter(|v| ok && v.is_finite())
                .ok_or_else(|| bad(&format!("{text:?} is not a number")))
        };
        let limit = if let Some(pct) = amount.strip_suffix('%') {
            Limit::Relative(number(pct)? / 100.0)
        } else if metric == Metric::Count {
            let digits = amount.trim_start_matches(|c: char| c.is_ascii_digit());
            if !digits.is_empty() || amount.is_empty() {
                return Err(bad("a count's threshold is a whole number or a percentage"));
            }
            Limit::Absolute(amount.parse().map_err(|_| bad("the count is too large"))?)
        } else {
            let split = amount.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(amount.len());
            let (value, unit) = amount.split_at(split);
            let scale = match unit {
                "ns" => 1.0,
                "us" | "µs" => 1e3,
                "ms" => 1e6,
                "s" => 1e9,
                "" => return Err(bad("a duration needs a unit (ns, us, ms, s) or '%'")),
                u => return Err(bad(&format!("unknown unit {u:?} (ns, us, ms, s)"))),
            };
            let ns = (number(value)? * scale).round();
            if ns >= u64::MAX as f64 {
                return Err(bad("the duration is too long"));
            }
            Limit::Absolute(ns as u64)
        };
        Ok(FailOn { metric, limit, spec: format!("{}>+{amount}", metric.as_str()) })
    }
}

/// What to compare and how to gate it.
#[derive(Clone, Debug, Default)]
pub struct DiffOptions {
    /// Only rows whose path matches one of these globs (`*`, `?`; all rows if empty).
    pub paths: Vec<String>,
    /// The gates.
    pub fail_on: Vec<FailOn>,
}

/// A row past a gate.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Regression {
    /// The row's place in [`TraceDiff::rows`].
    pub row: usize,
    /// The gate's place in [`TraceDiff::fail_on`].
    pub gate: usize,
}

/// Two traces compared: the rows, largest change first, and the gates.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TraceDiff {
    /// Every row the options keep, by the size of the change of its total duration (then of its
    /// count), largest first.
    pub rows: Vec<DiffRow>,
    /// The gates.
    pub fail_on: Vec<FailOn>,
    /// Events read from each side.
    pub events: [u64; 2],
}

fn key(r: &SideRow) -> (&str, DiffKind) {
    (r.path.as_str(), r.kind)
}

impl TraceDiff {
    /// Compares `base` with `new`.
    pub fn new(base: &DiffSide, new: &DiffSide, options: &DiffOptions) -> TraceDiff {
        let keep = |path: &str| options.paths.is_empty() || options.paths.iter().any(|g| glob_match(g, path));
        let (mut i, mut j) = (0, 0);
        let mut rows = Vec::new();
        // Both sides are sorted by (path, kind): merge them.
        while i < base.rows.len() || j < new.rows.len() {
            let (a, b) = (base.rows.get(i), new.rows.get(j));
            let (a, b) = match (a, b) {
                (Some(x), Some(y)) if key(x) == key(y) => (Some(x), Some(y)),
                (Some(x), Some(y)) if key(x) < key(y) => (Some(x), None),
                (Some(_), Some(y)) => (None, Some(y)),
                (x, y) => (x, y),
            };
            i += usize::from(a.is_some());
            j += usize::from(b.is_some());
            let Some(r) = a.or(b) else { break };
            if !keep(&r.path) {
                continue;
            }
            let test = match (a, b) {
                (Some(x), Some(y)) if x.figures.durations.is_some() && y.figures.durations.is_some() => {
                    Some(match (&x.exact, &y.exact) {
                        (Some(xe), Some(ye)) => rank_test(xe, ye),
                        _ => rank_test(&x.binned, &y.binned),
                    })
                }
                _ => None,
            };
            rows.push(DiffRow {
                path: r.path.clone(),
                names: r.names.clone(),
                kind: r.kind,
                base: a.map(|x| x.figures),
                new: b.map(|y| y.figures),
                test,
            });
        }
        rows.sort_by(|x, y| {
            y.impact().cmp(&x.impact()).then_with(|| (&x.path, x.kind).cmp(&(&y.path, y.kind)))
        });
        TraceDiff { rows, fail_on: options.fail_on.clone(), events: [base.events, new.events] }
    }

    /// Every row past a gate, in the rows' order.
    pub fn regressions(&self) -> Vec<Regression> {
        let mut out = Vec::new();
        for (row, r) in self.rows.iter().enumerate() {
            for (gate, g) in self.fail_on.iter().enumerate() {
                if r.past(g) {
                    out.push(Regression { row, gate });
                }
            }
        }
        out
    }
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;

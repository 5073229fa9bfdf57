//! Plain-text rendering of [`TraceStats`]: aligned tables for a terminal.
//!
//! Counts are grouped by thousands (`1,234,567`), durations carry the unit that keeps three
//! significant digits (`812 ns`, `4.21 µs`, `13.0 ms`). Each part renders on its own
//! ([`TraceStats::threads_table`] and friends) so a tool can put its own lines between them;
//! [`TraceStats::report`] renders them all, and so does `Display` with the default
//! [`TableOptions`] (the top 20 kinds by total time).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::fmt::{self, Display, Formatter};

use phosphor_format::file::DropCounts as Drops;

use crate::durations::{DurationStats, EXACT_SAMPLES, PERCENTILE_ERROR};
use phosphor_format::file::AggregateKind;

use crate::stats::{KindStats, Paths, TraceStats};

/// `n` with its thousands grouped by commas.
pub fn format_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration in nanoseconds, with three significant digits and a unit.
pub fn format_ns(ns: u64) -> String {
    if ns < 1_000 {
        return format!("{ns} ns");
    }
    let mut v = ns as f64 / 1e3;
    let mut units = ["µs", "ms", "s"].iter().peekable();
    while let Some(unit) = units.next() {
        // Round first: 999,960 ns is "1.00 ms", not "1000 µs".
        if v >= 999.5 && units.peek().is_some() {
            v /= 1e3;
            continue;
        }
        let decimals = if v < 9.995 {
            2
        } else if v < 99.95 {
            1
        } else {
            0
        };
        return format!("{v:.decimals$} {unit}");
    }
    unreachable!("the last unit always formats")
}

/// The total of `drops`, followed by the reasons that dropped any: `1,024 (buffer_full 1,024)`.
pub fn format_drops(drops: &Drops) -> String {
    let mut out = format_count(drops.total());
    let reasons: Vec<String> = drops
        .by_reason()
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(reason, n)| format!("{reason} {}", format_count(*n)))
        .collect();
    if !reasons.is_empty() {
        out.push_str(&format!(" ({})", reasons.join(", ")));
    }
    out
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Align {
    Left,
    Right,
}

/// A table with a header row; each column as wide as its widest cell.
pub(crate) struct Table {
    columns: Vec<(&'static str, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(columns: &[(&'static str, Align)]) -> Table {
        Table { columns: columns.to_vec(), rows: Vec::new() }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.columns.len());
        self.rows.push(cells);
    }
}

fn width(s: &str) -> usize {
    s.chars().count()
}

/// Writes one line of a table whose columns are `widths` wide.
fn write_line<S: AsRef<str>>(
    f: &mut Formatter<'_>,
    columns: &[(&'static str, Align)],
    widths: &[usize],
    cells: &[S],
) -> fmt::Result {
    let mut line = String::from(" ");
    for (c, cell) in cells.iter().enumerate() {
        let cell = cell.as_ref();
        let pad = " ".repeat(widths[c].saturating_sub(width(cell)));
        line.push_str("  ");
        match columns[c].1 {
            Align::Left => {
                line.push_str(cell);
                line.push_str(&pad);
            }
            Align::Right => {
                line.push_str(&pad);
                line.push_str(cell);
            }
        }
    }
    writeln!(f, "{}", line.trim_end())
}

/// Writes a table of many rows without holding them: `rows` is called twice, once to find the
/// columns' widths and once to write the rows one at a time (a file may have a million threads).
fn write_streamed<const N: usize, I: Iterator<Item = [String; N]>>(
    f: &mut Formatter<'_>,
    columns: &[(&'static str, Align); N],
    rows: impl Fn() -> I,
) -> fmt::Result {
    let mut widths = columns.map(|(h, _)| width(h));
    for row in rows() {
        for (w, cell) in widths.iter_mut().zip(&row) {
            *w = (*w).max(width(cell));
        }
    }
    write_line(f, columns, &widths, &columns.map(|(h, _)| h))?;
    for row in rows() {
        write_line(f, columns, &widths, &row)?;
    }
    Ok(())
}

impl Display for Table {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let widths: Vec<usize> = (0..self.columns.len())
            .map(|c| {
                self.rows.iter().map(|r| width(&r[c])).chain([width(self.columns[c].0)]).max().unwrap_or(0)
            })
            .collect();
        let header = self.columns.iter().map(|(h, _)| *h).collect::<Vec<_>>();
        write_line(f, &self.columns, &widths, &header)?;
        for row in &self.rows {
            write_line(f, &self.columns, &widths, row)?;
        }
        Ok(())
    }
}

pub(crate) struct Render<F>(pub(crate) F);

impl<F: Fn(&mut Formatter<'_>) -> fmt::Result> Display for Render<F> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        (self.0)(f)
    }
}

/// What orders the kinds in tables and JSON, largest first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SortBy {
    /// Total duration (kinds without durations last, by count).
    #[default]
    Total,
    /// Count.
    Count,
    /// Longest duration.
    Max,
}

/// How the kinds are listed: in which order, and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableOptions {
    /// The order, largest first; ties keep the order of thread, then path.
    pub sort: SortBy,
    /// At most this many rows (`None`: all).
    pub top: Option<usize>,
}

impl Default for TableOptions {
    /// By total duration, the top 20.
    fn default() -> TableOptions {
        TableOptions { sort: SortBy::Total, top: Some(20) }
    }
}

impl TableOptions {
    /// `kinds` in this order, cut to the top rows.
    pub fn select<'a>(&self, kinds: &'a [KindStats]) -> Vec<&'a KindStats> {
        self.order(kinds.len(), |i| kinds.get(i)).into_iter().map(|i| &kinds[i as usize]).collect()
    }

    /// The kinds across threads ([`TraceStats::paths`]) in this order, cut to the top rows.
    pub fn select_paths<'a>(&self, paths: Paths<'a>) -> Vec<&'a KindStats> {
        self.order(paths.len(), |i| paths.get(i)).into_iter().filter_map(|i| paths.get(i as usize)).collect()
    }

    /// The places among `len` rows (`row(i)` the `i`th) of the rows [`TableOptions::select`] gives:
    /// 4 bytes a row, and for the top rows of a larger table, memory for them only.
    pub(crate) fn order<'a>(&self, len: usize, row: impl Fn(usize) -> Option<&'a KindStats>) -> Vec<u32> {
        let key = |k: Option<&KindStats>| {
            // (Every place names a row.)
            let Some(k) = k else { return (0, 0) };
            let d = k.durations.as_ref();
            match self.sort {
                SortBy::Total => (d.map_or(0, |d| d.total_ns), k.count),
                SortBy::Count => (k.count, d.map_or(0, |d| d.total_ns)),
                SortBy::Max => (d.map_or(0, |d| d.max_ns), k.count),
            }
        };
        // Smaller is first: the larger key, then the earlier row. (Fewer than 2^32 rows: each
        // takes more than a byte of memory.)
        let rank = |i: u32| (Reverse(key(row(i as usize))), i);
        let rows = 0..len as u32;
        match self.top {
            Some(top) if top < len => {
                // The `top` first so far, the last of them on the heap's top.
                let mut first = BinaryHeap::with_capacity(top.saturating_add(1));
                for i in rows {
                    first.push(rank(i));
                    if first.len() > top {
                        first.pop();
                    }
                }
                first.into_sorted_vec().into_iter().map(|(_, i)| i).collect()
            }
            _ => {
                let mut all: Vec<u32> = rows.collect();
                all.sort_unstable_by_key(|&i| rank(i));
                all
            }
        }
    }

    /// What a table of `of` kinds under these options shows: `top 20 of 45, by total time`, or
    /// `12, by count` when it shows them all.
    pub fn heading(&self, of: usize) -> String {
        let by = match self.sort {
            SortBy::Total => "total time",
            SortBy::Count => "count",
            SortBy::Max => "longest",
        };
        match self.top {
            Some(top) if top < of => format!("top {top} of {of}, by {by}"),
            _ => format!("{of}, by {by}"),
        }
    }
}

/// A time since the clock origin, `+1.23 µs` or `-40 ns`.
/// A signed count with thousands separators.
fn format_signed(n: i64) -> String {
    let s = format_count(n.unsigned_abs());
    if n < 0 {
        format!("-{s}")
    } else {
        s
    }
}

fn format_at(ns: i64) -> String {
    let sign = if ns < 0 { '-' } else { '+' };
    format!("{sign}{}", format_ns(ns.unsigned_abs()))
}

impl TraceStats {
    /// The totals, one per line: events and chunks read, drops, lost chunks, span.
    pub fn summary(&self) -> impl Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            let recorded = match self.recorded {
                Some(r) if r == self.events => format!(", all {} recorded", format_count(r)),
                Some(r) => format!(", but the trailer says {} were recorded", format_count(r)),
                None => "; no trailer was read".to_owned(),
            };
            let chunks = format_count(self.chunks);
            writeln!(f, "events       {} in {chunks} chunks{recorded}", format_count(self.events))?;
            match &self.drops {
                Some(d) => writeln!(f, "dropped      {}", format_drops(d))?,
                None => writeln!(f, "dropped      unknown: no trailer was read")?,
            }
            writeln!(f, "lost chunks  {}", format_count(self.lost_chunks))?;
            if self.saturation.markers > 0 {
                writeln!(
                    f,
                    "saturation   {} markers: {} events dropped just before them for want of a free chunk",
                    format_count(self.saturation.markers),
                    format_count(self.saturation.dropped)
                )?;
            }
            writeln!(f, "span         {}", format_ns(self.span_ns))
        })
    }

    /// A table of threads: id, name, events, lost chunks and scope problems.
    pub fn threads_table(&self) -> impl Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            use Align::*;
            let columns = [
                ("tid", Right),
                ("name", Left),
                ("events", Right),
                ("lost chunks", Right),
                ("problems", Right),
            ];
            write_streamed(f, &columns, || {
                self.threads.iter().map(|th| {
                    [
                        th.tid.to_string(),
                        th.name.clone().unwrap_or_else(|| "-".into()),
                        format_count(th.events),
                        format_count(th.lost_chunks),
                        format_count(th.problems),
                    ]
                })
            })
        })
    }

    /// A table of the kinds per thread (`paths`: all threads together), as `options` selects:
    /// count, and the durations of scopes. A note follows when a percentile shown is not exact.
    pub fn kinds_table(&self, options: TableOptions, paths: bool) -> impl Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            use Align::*;
            let kinds = if paths { options.select_paths(self.paths()) } else { options.select(&self.kinds) };
            let mut columns = vec![("path", Left), ("type", Left), ("count", Right)];
            if !paths {
                columns.insert(0, ("thread", Left));
            }
            columns.extend(["total", "min", "mean", "p50", "p99", "max"].map(|c| (c, Right)));
            let mut t = Table::new(&columns);
            let shared = self.shared_thread_names(kinds.iter().filter_map(|k| k.tid.filter(|_| !paths)));
            for k in &kinds {
                let mut row = Vec::with_capacity(columns.len());
                if let Some(tid) = k.tid.filter(|_| !paths) {
                    row.push(self.thread_label(tid, &shared));
                }
                row.extend([k.path_string(), k.event_type.as_str().to_owned(), format_count(k.count)]);
                row.extend(duration_cells(k.durations.as_ref()));
                t.row(row);
            }
            write!(f, "{t}")?;
            if kinds.iter().any(|k| k.durations.is_some_and(|d| !d.exact_percentiles)) {
                writeln!(
                    f,
                    "  (p50 and p99 of kinds of more than {EXACT_SAMPLES} scopes are within {}% above the exact values)",
                    PERCENTILE_ERROR * 100.0
                )?;
            }
            Ok(())
        })
    }

    /// A table of the async slices by name: pairs, how long at least one was open, their
    /// durations (added up, then min to max), and the unmatched halves; then what the two
    /// totals mean.
    pub fn asyncs_table(&self) -> impl Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            use Align::*;
            let mut t = Table::new(&[
                ("name", Left),
                ("pairs", Right),
                ("open for", Right),
                ("sum", Right),
                ("min", Right),
                ("mean", Right),
                ("p50", Right),
                ("p99", Right),
                ("max", Right),
                ("unended", Right),
                ("unbegun", Right),
            ]);
            for a in &self.asyncs {
                let open = match a.union_error_ns {
                    0 => format_ns(a.union_ns),
                    _ => format!("≤ {}", format_ns(a.union_ns)),
                };
                let mut row = vec![a.name.clone(), format_count(a.durations.map_or(0, |d| d.samples)), open];
                row.extend(duration_cells(a.durations.as_ref()));
                row.extend([format_count(a.unended), format_count(a.unbegun)]);
                t.row(row);
            }
            write!(f, "{t}")?;
            writeln!(
                f,
                "  (open for: the time at least one slice of the name was open;\n   sum: their \
                 durations added up, so overlapping slices count again)"
            )?;
            if self.async_given_up > 0 {
                writeln!(
                    f,
                    "  ({} begins and ends were given up unmatched, counted in unended and unbegun: \
                     {} were already waiting for their other half, the most kept)",
                    format_count(self.async_given_up),
                    format_count(phosphor_model::asyncs::DEFAULT_MAX_OPEN as u64),
                )?;
            }
            if let Some(a) =
                self.asyncs.iter().filter(|a| a.union_error_ns > 0).max_by_key(|a| a.union_error_ns)
            {
                writeln!(
                    f,
                    "  (≤: too many separate stretches to keep each; the smallest gaps between them are \
                     counted as open, at most {} too much, for {})",
                    format_ns(a.union_error_ns),
                    a.name
                )?;
            }
            Ok(())
        })
    }

    /// A table of the frame sets (frames, their total, min, mean, p50, p99, max), then each set's
    /// slowest frames: number, start and duration.
    pub fn frames_table(&self) -> impl Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            use Align::*;
            let mut t = Table::new(&[
                ("set", Left),
                ("frames", Right),
                ("total", Right),
                ("min", Right),
                ("mean", Right),
                ("p50", Right),
                ("p99", Right),
                ("max", Right),
            ]);
            for s in &self.frames {
                let mut row = vec![s.name.clone(), format_count(s.durations.map_or(0, |d| d.samples))];
                row.extend(duration_cells(s.durations.as_ref()));
                t.row(row);
            }
            write!(f, "{t}")?;
            for s in self.frames.iter().filter(|s| !s.slowest.is_empty()) {
                let slowest: Vec<String> = s
                    .slowest
                    .iter()
                    .map(|x| format!("#{} at {} ({})", x.number, format_at(x.start_ns), format_ns(x.dur_ns)))
                    .collect();
                writeln!(f, "  slowest {}: {}", s.name, slowest.join(", "))?;
                if s.marks_ignored > 0 {
                    writeln!(
                        f,
                        "  {}: {} marks past the limit not measured",
                        s.name,
                        format_count(s.marks_ignored)
                    )?;
                }
            }
            Ok(())
        })
    }

    /// A table of the log callsites: level, category, count and format string.
    pub fn logs_table(&self) -> impl Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            use Align::*;
            let mut t =
                Table::new(&[("level", Left), ("category", Left), ("count", Right), ("format", Left)]);
            for l in &self.logs {
                t.row(vec![l.level.to_string(), l.category.clone(), format_count(l.count), l.format.clone()]);
            }
            write!(f, "{t}")
        })
    }

    /// A table of the aggregate points: sums with their count, histograms with count, sum and
    /// percentiles (p50, p90, p99 within 6.25%).
    pub fn aggregates_table(&self) -> impl Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            use Align::*;
            let mut t = Table::new(&[
                ("point", Left),
                ("kind", Left),
                ("count", Right),
                ("sum", Right),
                ("min", Right),
                ("p50", Right),
                ("p90", Right),
                ("p99", Right),
                ("max", Right),
            ]);
            for a in &self.aggregates {
                let name = format!("{}/{}", a.category, a.name);
                let q = |q| a.quantile(q).map_or_else(String::new, format_count);
                match &a.kind {
                    AggregateKind::Sum { count, sum } => t.row(vec![
                        name,
                        "sum".into(),
                        format_count(*count),
                        format_signed(*sum),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                    ]),
                    AggregateKind::Histogram { count, sum, min, max, .. } => t.row(vec![
                        name,
                        "histogram".into(),
                        format_count(*count),
                        format_count(*sum),
                        format_count(*min),
                        q(0.5),
                        q(0.9),
                        q(0.99),
                        format_count(*max),
                    ]),
                }
            }
            write!(f, "{t}")
        })
    }

    /// The scope checks: the problems, one per line with thread and time, or that there are none.
    pub fn problem_report(&self) -> impl Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            if self.problem_count == 0 {
                writeln!(f, "  every scope nests: ends match their begins, no scope overlaps a sibling")?;
            } else {
                let s = if self.problem_count == 1 { "" } else { "s" };
                writeln!(f, "  {} problem{s}", format_count(self.problem_count))?;
                for p in &self.problems {
                    let name = match self.thread(p.tid).and_then(|t| t.name.as_deref()) {
                        Some(name) => format!(" ({name})"),
                        None => String::new(),
                    };
                    writeln!(f, "    tid {}{name} at {}: {}", p.tid, format_at(p.at_ns), p.kind)?;
                }
                let hidden = self.problem_count - self.problems.len() as u64;
                if hidden > 0 {
                    writeln!(f, "    ... and {} more", format_count(hidden))?;
                }
            }
            if self.resolved_early > 0 {
                write!(f, "{}", self.resolved_early_note())?;
            }
            if self.truncated > 0 {
                writeln!(
                    f,
                    "  {} scopes and events nested deeper than {} levels are counted by name under \
                     \"[deeper than {}]\"",
                    format_count(self.truncated),
                    self.max_depth,
                    self.max_depth
                )?;
            }
            if self.names_cut > 0 {
                writeln!(
                    f,
                    "  {} names longer than {} bytes are shown cut, ending in \"{}\"",
                    format_count(self.names_cut),
                    crate::MAX_NAME_BYTES,
                    crate::NAME_CUT_MARK
                )?;
            }
            Ok(())
        })
    }

    /// Everything: the summary, threads, kinds per thread and across threads as `options` selects,
    /// async slices, scope checks.
    pub fn report(&self, options: TableOptions) -> impl Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            write!(f, "{}", self.summary())?;
            writeln!(f, "\nthreads ({})", self.threads.len())?;
            write!(f, "{}", self.threads_table())?;
            writeln!(f, "\nkinds by thread ({})", options.heading(self.kinds.len()))?;
            write!(f, "{}", self.kinds_table(options, false))?;
            writeln!(f, "\nkinds across threads ({})", options.heading(self.paths().len()))?;
            write!(f, "{}", self.kinds_table(options, true))?;
            write!(f, "{}", self.system_report(options))?;
            if !self.asyncs.is_empty() {
                writeln!(f, "\nasync slices ({})", self.asyncs.len())?;
                write!(f, "{}", self.asyncs_table())?;
            }
            if !self.frames.is_empty() {
                writeln!(
                    f,
                    "\nframes ({} set{}; trace_frame!)",
                    self.frames.len(),
                    if self.frames.len() == 1 { "" } else { "s" }
                )?;
                write!(f, "{}", self.frames_table())?;
            }
            if !self.tasks.is_empty() {
                let n: u64 = self.tasks.iter().map(|t| t.spawned).sum();
                writeln!(f, "\ntokio tasks ({} spawned, {} names)", format_count(n), self.tasks.len())?;
                write!(f, "{}", self.tasks_table())?;
            }
            if !self.logs.is_empty() {
                let n: u64 = self.logs.iter().map(|l| l.count).sum();
                let (m, c) = (if n == 1 { "" } else { "s" }, if self.logs.len() == 1 { "" } else { "s" });
                writeln!(
                    f,
                    "\nlogs ({} message{m} from {} callsite{c}; print them with phosphor logs)",
                    format_count(n),
                    self.logs.len()
                )?;
                write!(f, "{}", self.logs_table())?;
            }
            if !self.aggregates.is_empty() {
                writeln!(f, "\naggregates ({}; histogram percentiles within 6.25%)", self.aggregates.len())?;
                write!(f, "{}", self.aggregates_table())?;
            }
            writeln!(f, "\nscope checks")?;
            write!(f, "{}", self.problem_report())
        })
    }

    /// The names two or more threads have.
    /// Of the names of threads `tids` (the rows shown), those that two or more threads have: a
    /// set of the names shown only, not of every thread's.
    fn shared_thread_names(&self, tids: impl Iterator<Item = u32>) -> HashSet<&str> {
        let mut count: HashMap<&str, u32> =
            tids.filter_map(|tid| self.thread(tid)?.name.as_deref()).map(|name| (name, 0)).collect();
        for name in self.threads.iter().filter_map(|t| t.name.as_deref()) {
            if let Some(n) = count.get_mut(name) {
                *n += 1;
            }
        }
        count.into_iter().filter(|&(_, n)| n > 1).map(|(name, _)| name).collect()
    }

    /// The thread's name, with its id when another thread has that name too (`shared`, see
    /// [`Self::shared_thread_names`]: two `tokio-rt-worker`s must not read as one); its id when it
    /// has no name.
    fn thread_label(&self, tid: u32, shared: &HashSet<&str>) -> String {
        match self.thread(tid).and_then(|t| t.name.as_deref()) {
            Some(name) if shared.contains(name) => format!("{name} (tid {tid})"),
            Some(name) => name.to_owned(),
            None => tid.to_string(),
        }
    }

    /// What [`TraceStats::resolved_early`] means, in words a newcomer follows, and whether the
    /// figures are still right.
    fn resolved_early_note(&self) -> impl Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            let mut text = format!(
                "{} scopes and events were filed under their path early. A scope is written when it \
                 ends, after the scopes inside it, so each finished scope waits for the scope around \
                 it to turn up; to bound memory, at most {} wait per thread, and past that the oldest \
                 are filed under the path known then. ",
                format_count(self.resolved_early),
                format_count(self.pending_limit as u64)
            );
            match self.late_parents {
                0 => text.push_str(
                    "Counts and durations are exact, and so are the paths: no scope turned up later \
                     around them.",
                ),
                1 => text.push_str(
                    "Counts and durations are exact. 1 scope turned up too late to take in what it \
                     enclosed (the \"late parent\" problem): what was inside it is counted under a path \
                     without it; every other path is exact.",
                ),
                n => text.push_str(&format!(
                    "Counts and durations are exact. {} scopes turned up too late to take in what they \
                     enclosed (the \"late parent\" problems): what was inside them is counted under a \
                     path without them; every other path is exact.",
                    format_count(n)
                )),
            }
            write_wrapped(f, &text, "  ")
        })
    }
}

/// Writes `text` in lines of at most [`WRAP`] columns where its words allow, each after `indent`.
fn write_wrapped(f: &mut Formatter<'_>, text: &str, indent: &str) -> fmt::Result {
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent.len() + line.chars().count() + 1 + word.chars().count() > WRAP {
            writeln!(f, "{indent}{line}")?;
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        writeln!(f, "{indent}{line}")?;
    }
    Ok(())
}

/// The widest a wrapped paragraph's lines go.
const WRAP: usize = 100;

/// Total, min, mean, p50, p99, max; blank without durations.
fn duration_cells(d: Option<&DurationStats>) -> Vec<String> {
    match d {
        Some(d) => [d.total_ns, d.min_ns, d.mean_ns, d.p50_ns, d.p99_ns, d.max_ns].map(format_ns).to_vec(),
        None => vec![String::new(); 6],
    }
}

impl Display for TraceStats {
    /// [`TraceStats::report`] with the default [`TableOptions`].
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.report(TableOptions::default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(format_count(0), "0");
        assert_eq!(format_count(999), "999");
        assert_eq!(format_count(1_000), "1,000");
        assert_eq!(format_count(1_234_567), "1,234,567");
    }

    #[test]
    fn durations_keep_three_significant_digits() {
        assert_eq!(format_ns(812), "812 ns");
        assert_eq!(format_ns(4_213), "4.21 µs");
        assert_eq!(format_ns(13_040_000), "13.0 ms");
        assert_eq!(format_ns(250_000_000), "250 ms");
        assert_eq!(format_ns(2_500_000_000), "2.50 s");
        assert_eq!(format_ns(999_960), "1.00 ms");
        assert_eq!(format_ns(9_996), "10.0 µs");
        assert_eq!(format_ns(4_000_000_000_000), "4000 s");
    }

    #[test]
    fn table_columns_line_up_with_multibyte_cells() {
        let mut t = Table::new(&[("name", Align::Left), ("time", Align::Right)]);
        t.row(vec!["a".into(), "1.00 µs".into()]);
        t.row(vec!["long name".into(), "2 ns".into()]);
        let text = t.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines, ["   name          time", "   a          1.00 µs", "   long name     2 ns"]);
    }
}

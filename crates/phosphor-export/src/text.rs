//! Plain-text rendering of [`TraceStats`]: aligned tables for a terminal.
//!
//! Counts are grouped by thousands (`1,234,567`), durations carry the unit that keeps three
//! significant digits (`812 ns`, `4.21 µs`, `13.0 ms`). Each part renders on its own
//! ([`TraceStats::threads_table`] and friends) so a tool can put its own lines between them;
//! `Display` for `TraceStats` renders them all.

use std::fmt::{self, Display, Formatter};

use phosphor::Drops;

use crate::stats::{KindStats, TraceStats};

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
enum Align {
    Left,
    Right,
}

/// A table with a header row; each column as wide as its widest cell.
struct Table {
    columns: Vec<(&'static str, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(columns: &[(&'static str, Align)]) -> Table {
        Table { columns: columns.to_vec(), rows: Vec::new() }
    }

    fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.columns.len());
        self.rows.push(cells);
    }
}

impl Display for Table {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let width = |s: &str| s.chars().count();
        let widths: Vec<usize> = (0..self.columns.len())
            .map(|c| {
                self.rows.iter().map(|r| width(&r[c])).chain([width(self.columns[c].0)]).max().unwrap_or(0)
            })
            .collect();
        let header = self.columns.iter().map(|(h, _)| h.to_string()).collect::<Vec<_>>();
        for row in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::from(" ");
            for (c, cell) in row.iter().enumerate() {
                let pad = " ".repeat(widths[c] - width(cell));
                line.push_str("  ");
                match self.columns[c].1 {
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
            writeln!(f, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

struct Render<F>(F);

impl<F: Fn(&mut Formatter<'_>) -> fmt::Result> Display for Render<F> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        (self.0)(f)
    }
}

impl TraceStats {
    /// One line: events recorded and dropped, with the reasons that dropped any.
    pub fn drops_summary(&self) -> impl Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            write!(f, "{} recorded, {} dropped", format_count(self.recorded), format_drops(&self.drops))
        })
    }

    /// A table of threads: id, name, events and begin/end mismatches.
    pub fn threads_table(&self) -> impl Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            use Align::*;
            let mut t =
                Table::new(&[("tid", Right), ("name", Left), ("events", Right), ("mismatches", Right)]);
            for th in &self.threads {
                t.row(vec![
                    th.tid.to_string(),
                    th.name.clone().unwrap_or_else(|| "-".into()),
                    format_count(th.events),
                    format_count(th.mismatches),
                ]);
            }
            write!(f, "{t}")
        })
    }

    /// A table of event kinds: count, and the duration distribution of those that last.
    pub fn kinds_table(&self) -> impl Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            use Align::*;
            let mut t = Table::new(&[
                ("category", Left),
                ("name", Left),
                ("phase", Left),
                ("count", Right),
                ("min", Right),
                ("mean", Right),
                ("p50", Right),
                ("p99", Right),
                ("max", Right),
            ]);
            for k in &self.kinds {
                t.row(kind_row(k));
            }
            write!(f, "{t}")
        })
    }

    /// The begin/end and async pairing problems, one per line; "none" when there are none.
    pub fn mismatch_report(&self) -> impl Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            if self.mismatch_count == 0 {
                writeln!(f, "  begin/end: every end closes the innermost open begin of the same name")?;
            } else {
                writeln!(f, "  begin/end: {} mismatched", format_count(self.mismatch_count))?;
                for m in &self.mismatches {
                    let name = self.thread(m.tid).and_then(|t| t.name.as_deref()).unwrap_or("-");
                    writeln!(f, "    tid {} ({name}) at +{}: {}", m.tid, format_ns(m.at_ns), m.kind)?;
                }
                let hidden = self.mismatch_count - self.mismatches.len() as u64;
                if hidden > 0 {
                    writeln!(f, "    ... and {} more", format_count(hidden))?;
                }
            }
            if self.async_unended + self.async_unbegun == 0 {
                writeln!(f, "  async: every begin has its end")
            } else {
                writeln!(
                    f,
                    "  async: {} begins without an end, {} ends without a begin",
                    format_count(self.async_unended),
                    format_count(self.async_unbegun)
                )
            }
        })
    }
}

fn kind_row(k: &KindStats) -> Vec<String> {
    let mut row =
        vec![k.category.to_string(), k.name.to_string(), k.phase.as_str().to_string(), format_count(k.count)];
    match &k.durations {
        Some(d) => row.extend([d.min_ns, d.mean_ns, d.p50_ns, d.p99_ns, d.max_ns].map(format_ns)),
        None => row.extend(std::iter::repeat_n(String::new(), 5)),
    }
    row
}

impl Display for TraceStats {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(f, "events: {}", self.drops_summary())?;
        if self.events != self.recorded {
            writeln!(
                f,
                "warning: {} events decoded, but the trace says it recorded {}",
                self.events, self.recorded
            )?;
        }
        writeln!(f, "span: {}", format_ns(self.span_ns))?;
        writeln!(f, "\nthreads ({})", self.threads.len())?;
        write!(f, "{}", self.threads_table())?;
        writeln!(f, "\nevent kinds ({})", self.kinds.len())?;
        write!(f, "{}", self.kinds_table())?;
        writeln!(f, "\nscope checks")?;
        write!(f, "{}", self.mismatch_report())
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

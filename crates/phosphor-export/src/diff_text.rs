//! The diff as an aligned plain-text table, largest change first, regressions marked and named
//! again in the last line.

use std::io::{self, Write};

use crate::diff::{Change, Metric, RowStatus, TraceDiff};
use crate::text::{format_count, format_ns};

impl TraceDiff {
    /// Writes the table: the first `top` rows (all if `None`), then a line that names every
    /// regression (or says there is none). `names` are the base and new files' names.
    pub fn write_table(&self, out: &mut impl Write, names: [&str; 2], top: Option<usize>) -> io::Result<()> {
        let regressions = self.regressions();
        writeln!(out, "base: {} ({} events)", names[0], format_count(self.events[0]))?;
        writeln!(out, "new:  {} ({} events)", names[1], format_count(self.events[1]))?;
        let gates: Vec<String> = self.fail_on.iter().map(|g| g.to_string()).collect();
        match gates.is_empty() {
            true => writeln!(out, "gates: none (report only)")?,
            false => writeln!(out, "gates: {}", gates.join(", "))?,
        }
        writeln!(out)?;
        // Each row is up to three lines (the base's figures, the new's, their change), so the
        // table stays about 110 columns wide however long the figures.
        let mut table: Vec<Vec<String>> =
            vec![["", "PATH", "TYPE", "", "COUNT", "TOTAL", "P50", "P90", "P99", "MAX", "P-VALUE", "TEST"]
                .map(String::from)
                .to_vec()];
        let shown = top.unwrap_or(usize::MAX).min(self.rows.len());
        for (i, r) in self.rows.iter().enumerate().take(shown) {
            let mark = if regressions.iter().any(|x| x.row == i) {
                "REGRESSED".to_owned()
            } else {
                match r.status() {
                    RowStatus::Both => String::new(),
                    s => s.as_str().to_owned(),
                }
            };
            let (test, method) = match &r.test {
                Some(t) => {
                    let dir = if t.slower() {
                        " slower"
                    } else if t.faster() {
                        " faster"
                    } else {
                        ""
                    };
                    (format!("{}{dir}", p_value(t.p_value)), t.method.as_str().to_owned())
                }
                None => (String::new(), String::new()),
            };
            let mut head = vec![mark, r.path.clone(), r.kind.as_str().to_owned()];
            let sides = [("base", &r.base), ("new", &r.new)];
            let mut first = true;
            for (side, figures) in sides {
                let Some(f) = figures else { continue };
                let mut line = if first { std::mem::take(&mut head) } else { vec![String::new(); 3] };
                first = false;
                line.push(side.to_owned());
                line.extend(Metric::ALL.map(|m| m.of(f).map(|v| show(m, v)).unwrap_or_default()));
                line.extend([String::new(), String::new()]);
                table.push(line);
            }
            if r.status() == RowStatus::Both {
                let mut line = vec![String::new(); 3];
                line.push("change".to_owned());
                line.extend(Metric::ALL.map(|m| r.change(m).map(|c| relative(&c)).unwrap_or_default()));
                line.extend([test, method]);
                table.push(line);
            }
        }
        let widths: Vec<usize> = (0..table[0].len())
            .map(|c| table.iter().map(|l| l[c].chars().count()).max().unwrap_or(0))
            .collect();
        for line in &table {
            let mut text = String::new();
            for (c, cell) in line.iter().enumerate() {
                let pad = widths[c] - cell.chars().count();
                // Names to the left, figures to the right.
                if !(4..10).contains(&c) {
                    text.push_str(cell);
                    text.extend(std::iter::repeat_n(' ', pad));
                } else {
                    text.extend(std::iter::repeat_n(' ', pad));
                    text.push_str(cell);
                }
                text.push_str("  ");
            }
            writeln!(out, "{}", text.trim_end())?;
        }
        if shown < self.rows.len() {
            writeln!(out, "... and {} more rows (--top)", format_count((self.rows.len() - shown) as u64))?;
        }
        writeln!(out)?;
        if regressions.is_empty() {
            match self.fail_on.is_empty() {
                true => writeln!(out, "no gates given (--fail-on): nothing can regress")?,
                false => writeln!(out, "no regression past the gates")?,
            }
        }
        for x in &regressions {
            let (r, g) = (&self.rows[x.row], &self.fail_on[x.gate]);
            let m = g.metric;
            let mut why = r.change(m).map(|c| show_change(m, &c)).unwrap_or_default();
            if let Some(c) = r.conservative_change(m) {
                why.push_str(&format!("; at the confidence bounds {}", show_change(m, &c)));
            }
            let p = r.test.map(|t| format!(", p={}", p_value(t.p_value))).unwrap_or_default();
            writeln!(out, "REGRESSION: {} ({}) past {g}: {why}{p}", r.path, r.kind.as_str())?;
        }
        Ok(())
    }
}

fn show(m: Metric, v: u64) -> String {
    match m {
        Metric::Count => format_count(v),
        _ => format_ns(v),
    }
}

/// `base → new (+x%)`.
fn show_change(m: Metric, c: &Change) -> String {
    let rel = match c.relative() {
        Some(r) => format!(" ({:+.1}%)", r * 100.0),
        None => String::new(),
    };
    format!("{} → {}{rel}", show(m, c.base), show(m, c.new))
}

/// A change as a signed percentage, or `=` when nothing changed (`new` when the base is 0).
fn relative(c: &Change) -> String {
    match c.relative() {
        _ if c.base == c.new => "=".to_owned(),
        Some(r) => format!("{:+.1}%", r * 100.0),
        None => "new".to_owned(),
    }
}

fn p_value(p: f64) -> String {
    if p < 1e-9 {
        "<1e-9".to_owned()
    } else if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

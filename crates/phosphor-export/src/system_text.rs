//! The statistics' system context as text: the status line, and a table of the scope paths with
//! what the system saw during them (`phosphor stats`).

use std::fmt::{self, Formatter, Write as _};

use phosphor_format::system::{Availability, SystemStatus};

use crate::stats::{KindStats, TraceStats};
use crate::text::{format_count, format_ns, Align, Render, Table, TableOptions};

/// One line for people: each source's availability (`context switches unavailable: why`), the
/// sampling frequency and what was lost.
pub fn describe_status(s: &SystemStatus) -> String {
    let mut line = String::new();
    for (name, a) in
        [("context switches", &s.switches), ("CPU samples", &s.samples), ("allocations", &s.allocations)]
    {
        if !line.is_empty() {
            line.push_str("; ");
        }
        let _ = match a {
            Availability::Off => write!(line, "{name} off"),
            Availability::On if name == "CPU samples" && s.sample_hz > 0 => {
                write!(line, "{name} on ({} Hz)", s.sample_hz)
            }
            Availability::On => write!(line, "{name} on"),
            Availability::Unavailable(why) => write!(line, "{name} unavailable: {why}"),
        };
    }
    for (n, what) in [
        (s.kernel_lost, "records lost by the kernel"),
        (s.dropped, "records dropped by the runtime"),
        (u64::from(s.threads_missed), "threads without a perf event"),
    ] {
        if n > 0 {
            let _ = write!(line, "; {} {what}", format_count(n));
        }
    }
    line
}

impl TraceStats {
    /// The system context: the status and counts, then the scope paths with what the system saw
    /// during them, as `options` orders and cuts them. Empty if the trace has none.
    pub fn system_report(&self, options: TableOptions) -> impl fmt::Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            let rows: Vec<KindStats> = self.paths().iter().filter(|k| k.system.is_some()).cloned().collect();
            if self.system.is_none() && rows.is_empty() {
                return Ok(());
            }
            writeln!(f)?;
            let mut switches = false;
            let mut samples = false;
            if let Some(s) = &self.system {
                let status = s.status.as_ref().map_or("no status recorded".into(), describe_status);
                writeln!(f, "system       {status}")?;
                let c = &s.counts;
                writeln!(
                    f,
                    "             {} switches, {} samples, {} heap totals, {} mappings in {} system blocks",
                    format_count(c.switches),
                    format_count(c.samples),
                    format_count(c.heap),
                    format_count(c.mappings),
                    format_count(c.blocks)
                )?;
                if c.not_held > 0 {
                    writeln!(
                        f,
                        "             {} switches and samples past the limit of {} are not counted per scope",
                        format_count(c.not_held),
                        format_count(crate::system::MAX_HELD)
                    )?;
                }
                switches = s.switches;
                samples = c.samples > 0;
            }
            let allocs = rows.iter().any(|k| k.system.as_ref().is_some_and(|s| s.alloc_scopes > 0));
            if !(switches || samples || allocs) {
                return Ok(());
            }
            let shown = options.select(&rows);
            writeln!(f, "\nscopes and the system, across threads ({})", options.heading(rows.len()))?;
            use Align::*;
            let mut columns = vec![("path", Left), ("count", Right), ("total", Right)];
            if switches {
                columns.extend([
                    ("on-CPU", Right),
                    ("off-CPU", Right),
                    ("preempted", Right),
                    ("switches", Right),
                ]);
            }
            if allocs {
                columns.extend([("allocs", Right), ("bytes", Right)]);
            }
            if samples {
                columns.extend([("samples", Right), ("top functions (samples)", Left)]);
            }
            let mut t = Table::new(&columns);
            for k in shown {
                let Some(s) = &k.system else { continue };
                let mut row = vec![
                    k.path_string(),
                    format_count(k.count),
                    format_ns(k.durations.map_or(0, |d| d.total_ns)),
                ];
                if switches {
                    row.extend([
                        format_ns(s.on_cpu_ns),
                        format_ns(s.off_cpu_ns),
                        format_ns(s.preempted_ns),
                        format_count(s.switches),
                    ]);
                }
                if allocs {
                    row.extend([format_count(s.allocs), format_count(s.alloc_bytes)]);
                }
                if samples {
                    let top: Vec<String> = s
                        .functions
                        .iter()
                        .map(|(name, n)| format!("{name} ({})", format_count(*n)))
                        .collect();
                    row.extend([format_count(s.samples), top.join(", ")]);
                }
                t.row(row);
            }
            write!(f, "{t}")
        })
    }
}

//! `phosphor stats`' table of tokio tasks by name (see [`tasks`](crate::tasks)).

use std::fmt::{Display, Formatter};

use crate::stats::TraceStats;
use crate::text::{format_count, format_ns, Align, Render, Table};

impl TraceStats {
    /// A table of the tokio tasks by name: spawned, ended, polls, busy (time in polls), p99 and
    /// longest poll, scheduled (woken, waiting for a worker), the longest such wait, idle (parked,
    /// of the lives seen whole) and long polls.
    pub fn tasks_table(&self) -> impl Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            use Align::*;
            let mut t = Table::new(&[
                ("task", Left),
                ("spawned", Right),
                ("ended", Right),
                ("polls", Right),
                ("busy", Right),
                ("p99 poll", Right),
                ("max poll", Right),
                ("scheduled", Right),
                ("max wait", Right),
                ("idle", Right),
                ("long polls", Right),
            ]);
            for s in &self.tasks {
                let d = s.poll_durations.as_ref();
                t.row(vec![
                    s.name.clone(),
                    format_count(s.spawned),
                    format_count(s.ended),
                    format_count(s.polls),
                    format_ns(s.busy_ns),
                    d.map_or_else(String::new, |d| format_ns(d.p99_ns)),
                    d.map_or_else(String::new, |d| format_ns(d.max_ns)),
                    format_ns(s.scheduled_ns),
                    format_ns(s.max_scheduled_ns),
                    format_ns(s.idle_ns),
                    format_count(s.long_polls),
                ]);
            }
            write!(f, "{t}")?;
            let untracked: u64 = self.tasks.iter().map(|s| s.untracked).sum();
            if untracked > 0 {
                writeln!(
                    f,
                    "  {} tasks past the limit: their idle time is not measured",
                    format_count(untracked)
                )?;
            }
            write!(f, "{}", self.long_polls_table())
        })
    }
}

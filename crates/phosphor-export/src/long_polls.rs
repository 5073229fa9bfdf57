//! The slowest long polls of tokio tasks (`phosphor::tokio`'s
//! [`LONG_POLL_NAME`] slices), each
//! tied to what the system saw inside it: its worker's on- and off-CPU time, and the CPU samples
//! that fell in it with their leaf functions (from the trace's system context, `--system`). A long
//! poll that computed shows samples in the task's own code; one whose worker was preempted shows
//! off-CPU time instead.
//!
//! `phosphor stats` lists them under its table of tasks ([`TraceStats::long_polls`]), the
//! longest first; the kinds table's `long poll` rows give the same samples summed over all. The
//! viewer's `GET /api/tasks` reads them with the tasks ([`read_tasks_and_long_polls`]), by the
//! same code.

use std::fmt::{Display, Formatter};
use std::io::Read;
use std::sync::Arc;

use phosphor_format::file::{self, ClockInfo, Reader, Value};
use phosphor_format::Phase;
use phosphor_model::timeline::Timeline;

use crate::error::{read_chunks, Item};
use crate::scope_system::{ScopeHook, ScopeSystem, SystemAcc};
use crate::stats::TraceStats;
use crate::system::SystemContext;
use crate::tasks::{TaskStats, Tasks, LONG_POLL_NAME, TASK_CATEGORY};
use crate::text::{format_count, format_ns, Align, Render, Table};

/// The long polls [`TraceStats::long_polls`] keeps: the longest.
pub const SLOWEST_LONG_POLLS: usize = 10;

/// The name given to a long poll whose task the trace does not name (its poll was not recorded).
pub const UNKNOWN_TASK: &str = "(unknown task)";

/// One long poll, and what the system saw during it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LongPoll {
    /// Its task's name (spawn location or the name given at spawn), or [`UNKNOWN_TASK`].
    pub task: String,
    /// tokio's id of the task.
    pub task_id: u64,
    /// The worker thread that polled it.
    pub tid: u32,
    /// Its start, in nanoseconds from the trace's origin.
    pub start_ns: i64,
    /// Its duration, in nanoseconds.
    pub dur_ns: u64,
    /// What the system context saw inside it: on- and off-CPU time, switches, the CPU samples and
    /// their leaf functions (most samples first); `None` when the statistics had no context.
    pub system: Option<ScopeSystem>,
}

/// A long poll kept while the file is read (times on the statistics' timeline).
#[derive(Debug)]
struct Kept {
    task: String,
    task_id: u64,
    tid: u32,
    start: u64,
    dur: u64,
}

/// The longest long polls seen so far, and the system context to ask about them at the end.
#[derive(Debug, Default)]
pub(crate) struct LongPolls {
    hook: Option<ScopeHook>,
    kept: Vec<Kept>,
}

impl LongPolls {
    /// Ties the long polls to `context`'s samples and switches; `clock` maps the timeline's ticks
    /// to its `CLOCK_MONOTONIC` nanoseconds.
    pub(crate) fn system(&mut self, context: Arc<SystemContext>, clock: ClockInfo) {
        self.hook = Some(ScopeHook { context, clock });
    }

    /// A long poll of task `task_id` (named `task`, if known) on thread `tid`, from `start` for
    /// `dur` ticks of the timeline.
    pub(crate) fn add(&mut self, task: Option<&str>, task_id: u64, tid: u32, start: u64, dur: u64) {
        // Longer first, then earlier: the last of this order gives way to a longer poll.
        let key = |k: &Kept| (std::cmp::Reverse(k.dur), k.start);
        if self.kept.len() == SLOWEST_LONG_POLLS {
            let (at, last) =
                self.kept.iter().enumerate().max_by_key(|(_, k)| key(k)).expect("SLOWEST_LONG_POLLS > 0");
            if key(last) <= (std::cmp::Reverse(dur), start) {
                return;
            }
            self.kept.swap_remove(at);
        }
        self.kept.push(Kept { task: task.unwrap_or(UNKNOWN_TASK).to_string(), task_id, tid, start, dur });
    }

    /// The long polls kept, longest first, each with what the system context saw inside it.
    pub(crate) fn finish(self, clock: &ClockInfo) -> Vec<LongPoll> {
        let hook = self.hook;
        let mut out: Vec<(u64, u64, LongPoll)> = self
            .kept
            .into_iter()
            .map(|k| {
                let system = hook.as_ref().map(|h| {
                    let mut acc = SystemAcc::default();
                    h.add(&mut acc, k.tid, k.start, k.dur);
                    acc.stats(Some(&h.context))
                });
                let poll = LongPoll {
                    task: k.task,
                    task_id: k.task_id,
                    tid: k.tid,
                    start_ns: clock.since_origin_ns(k.start),
                    dur_ns: clock.ticks_to_ns(k.dur),
                    system,
                };
                (k.dur, k.start, poll)
            })
            .collect();
        out.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        out.into_iter().map(|(_, _, p)| p).collect()
    }
}

/// What [`read_tasks_and_long_polls`] read of a file.
#[derive(Debug)]
#[non_exhaustive]
pub struct TasksRead {
    /// The tasks by name, as [`TraceStats::tasks`] gives them.
    pub tasks: Vec<TaskStats>,
    /// The longest long polls, longest first, as [`TraceStats::long_polls`] gives them: with
    /// what the system context saw in each when one was given.
    pub long_polls: Vec<LongPoll>,
    /// Where reading stopped, if the file is damaged: the figures are those of the events before.
    pub failure: Option<file::Error>,
}

/// The tasks of the rest of the file `reader` reads, by name, and their longest long polls, each
/// tied to `context`'s samples and switches when it is given (read first, its leaves named:
/// [`SystemContext::name_leaves`]): what `phosphor stats` gives of them, by the same code, in one
/// pass that decodes the task events only.
pub fn read_tasks_and_long_polls<R: Read>(
    mut reader: Reader<R>,
    context: Option<Arc<SystemContext>>,
) -> TasksRead {
    let timeline = Timeline::new(&reader.header().clock);
    let mut tasks = Tasks::default();
    let mut long_polls = LongPolls::default();
    if let Some(context) = context {
        long_polls.system(context, timeline.clock().clone());
    }
    let failure = read_chunks(&mut reader, |item| -> Result<(), std::convert::Infallible> {
        if let Item::Event(e) = item {
            if e.callsite.category == TASK_CATEGORY {
                let ts = timeline.time(e.ts);
                let end = e.duration.map_or(ts, |d| timeline.end(e.ts, d));
                tasks.event(0, e, ts, end - ts);
                if let (Phase::Complete, LONG_POLL_NAME, Some(Value::U64(id))) =
                    (e.callsite.phase, e.callsite.name.as_ref(), e.arg("task"))
                {
                    long_polls.add(tasks.task_name(0, id), id, e.tid, ts, end - ts);
                }
            }
        }
        Ok(())
    });
    // The callback cannot fail.
    let Ok(failure) = failure;
    let clock = timeline.clock();
    TasksRead { long_polls: long_polls.finish(clock), tasks: tasks.finish(clock), failure }
}

impl TraceStats {
    /// A table of the longest long polls ([`TraceStats::long_polls`]): task, worker thread, start,
    /// duration, and what the system context saw in each (on and off CPU, CPU samples and their
    /// leaf functions), when the statistics had one.
    pub fn long_polls_table(&self) -> impl Display + '_ {
        Render(move |f: &mut Formatter<'_>| {
            if self.long_polls.is_empty() {
                return Ok(());
            }
            let total: u64 = self.tasks.iter().map(|t| t.long_polls).sum();
            let with_system = self.long_polls.iter().any(|p| p.system.is_some());
            writeln!(
                f,
                "\nlongest long polls ({} of {}{})",
                self.long_polls.len(),
                format_count(total),
                if with_system {
                    "; CPU samples inside each"
                } else {
                    "; no system context: record with --system for their CPU samples"
                }
            )?;
            use Align::*;
            let mut columns = vec![("task", Left), ("thread", Left), ("at", Right), ("poll", Right)];
            if with_system {
                columns.extend([
                    ("on CPU", Right),
                    ("off CPU", Right),
                    ("samples", Right),
                    ("leaf functions", Left),
                ]);
            }
            let mut t = Table::new(&columns);
            for p in &self.long_polls {
                let thread = match self.thread(p.tid).and_then(|t| t.name.as_deref()) {
                    Some(name) => format!("{name} ({})", p.tid),
                    None => p.tid.to_string(),
                };
                let at = if p.start_ns < 0 {
                    format!("-{}", format_ns(p.start_ns.unsigned_abs()))
                } else {
                    format_ns(p.start_ns as u64)
                };
                let mut row = vec![format!("{} #{}", p.task, p.task_id), thread, at, format_ns(p.dur_ns)];
                if with_system {
                    match &p.system {
                        Some(s) => row.extend([
                            format_ns(s.on_cpu_ns),
                            format_ns(s.off_cpu_ns),
                            format_count(s.samples),
                            s.functions
                                .iter()
                                .map(|(name, n)| format!("{name} ({n})"))
                                .collect::<Vec<_>>()
                                .join(", "),
                        ]),
                        None => row.extend([String::new(), String::new(), String::new(), String::new()]),
                    }
                }
                t.row(row);
            }
            write!(f, "{t}")
        })
    }
}

#[cfg(test)]
#[path = "long_polls_tests.rs"]
mod tests;

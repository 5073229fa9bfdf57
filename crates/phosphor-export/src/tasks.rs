//! tokio tasks (`phosphor::tokio`), by task name: how many were spawned, how often they were
//! polled, and where their lives went. The one place these figures are made: `phosphor stats`
//! ([`TraceStats::tasks`](crate::TraceStats::tasks)) and the viewer's `GET /api/tasks`
//! ([`read_tasks`]) both call it.
//!
//! The events are category [`TASK_CATEGORY`]'s: a task is an async slice (id: tokio's task id)
//! named by its spawn location; each poll a complete slice of the same name with arguments `task`
//! (the id) and `wait_ns` (how long the task waited between its wake-up and this poll, tokio's
//! schedule latency); a poll over the threshold also a [`LONG_POLL_NAME`] slice naming its task.
//!
//! A task seen from its spawn to its end lived `busy + scheduled + idle`: polled (**busy**), woken
//! but not yet polled (**scheduled**), or parked until a wake-up (**idle**, the rest). Tasks the
//! trace holds only part of (a ring that wrapped, a task still running at the end) add their polls
//! to busy and scheduled, and nothing to idle.

use std::io::Read;

use phosphor_format::file::{self, Event, Reader, Value};
use phosphor_format::{ClockInfo, Phase};
use rustc_hash::FxHashMap as HashMap;

use crate::durations::{DurationStats, Durations};

/// The category of the task events.
pub const TASK_CATEGORY: &str = "tokio";

/// The name of the slice over a poll longer than the hooks' threshold.
pub const LONG_POLL_NAME: &str = "long poll";

/// The tasks whose lives are followed (about 80 bytes each): past them, a task's polls are still
/// counted by name, but its lifetime is not measured ([`TaskStats::untracked`]).
pub const MAX_TASKS: usize = 1 << 22;

/// The tasks of one name (spawn location, or the name given at spawn).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskStats {
    /// The tasks' name.
    pub name: String,
    /// Tasks spawned (their async slice's begin is in the trace).
    pub spawned: u64,
    /// Tasks ended.
    pub ended: u64,
    /// Polls.
    pub polls: u64,
    /// The polls' durations (their total is the busy time); `None` without polls.
    pub poll_durations: Option<DurationStats>,
    /// Time spent in polls, in nanoseconds.
    pub busy_ns: u64,
    /// Time between a wake-up and the poll it led to, in nanoseconds (summed over the polls).
    pub scheduled_ns: u64,
    /// The longest of those waits.
    pub max_scheduled_ns: u64,
    /// The lifetimes of the tasks seen from spawn to end, in nanoseconds.
    pub lived_ns: u64,
    /// Of `lived_ns`, the time neither polled nor scheduled: parked, waiting for a wake-up.
    pub idle_ns: u64,
    /// Polls longer than the hooks' threshold (`long poll` slices).
    pub long_polls: u64,
    /// Tasks past [`MAX_TASKS`] whose lifetime was not measured.
    pub untracked: u64,
}

/// One name's sums, as read.
#[derive(Debug, Default)]
struct ByName {
    spawned: u64,
    ended: u64,
    polls: Durations,
    scheduled_ns: u64,
    max_scheduled_ns: u64,
    long_polls: u64,
    untracked: u64,
}

/// One task, as read: what its idle time is made of. Its events come from several threads
/// (spawn, polls on any worker, end), whose chunks the file interleaves in no set order.
#[derive(Debug, Default)]
struct Task {
    /// Index of its name in `Tasks::names` (`u32::MAX`: only a long poll named it so far).
    name: u32,
    begin: Option<u64>,
    end: Option<u64>,
    busy: u64,
    scheduled_ns: u64,
}

/// The task events of a trace, as read.
#[derive(Debug, Default)]
pub(crate) struct Tasks {
    index: HashMap<String, u32>,
    names: Vec<(String, ByName)>,
    /// By file number and task id (ids are a process's own).
    tasks: HashMap<(u32, u64), Task>,
}

const UNNAMED: u32 = u32::MAX;

impl Tasks {
    fn name(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.index.insert(name.to_string(), i);
        self.names.push((name.to_string(), ByName::default()));
        i
    }

    /// The task `id` of file `file`, if it is followed (or can be).
    fn task(&mut self, file: u32, id: u64, name: u32) -> Option<&mut Task> {
        let full = self.tasks.len() >= MAX_TASKS;
        match self.tasks.entry((file, id)) {
            std::collections::hash_map::Entry::Occupied(o) => {
                let t = o.into_mut();
                if t.name == UNNAMED {
                    t.name = name;
                }
                Some(t)
            }
            std::collections::hash_map::Entry::Vacant(_) if full => None,
            std::collections::hash_map::Entry::Vacant(v) => Some(v.insert(Task { name, ..Task::default() })),
        }
    }

    /// The name of task `id` of file `file`, once an event of it named it.
    pub(crate) fn task_name(&self, file: u32, id: u64) -> Option<&str> {
        let t = self.tasks.get(&(file, id)).filter(|t| t.name != UNNAMED)?;
        Some(&self.names[t.name as usize].0)
    }

    /// An event of category [`TASK_CATEGORY`] of file `file`: `ts` and `end` are its start and end
    /// on the statistics' timeline, `dur` its duration in the same ticks.
    pub(crate) fn event(&mut self, file: u32, e: &Event<'_>, ts: u64, dur: u64) {
        let cs = &e.callsite;
        let arg = |k: &str| match e.arg(k) {
            Some(Value::U64(n)) => Some(n),
            _ => None,
        };
        match cs.phase {
            Phase::AsyncBegin | Phase::AsyncEnd => {
                let Some(id) = e.async_id else { return };
                let n = self.name(cs.name.as_ref());
                let begin = cs.phase == Phase::AsyncBegin;
                let by = &mut self.names[n as usize].1;
                if begin {
                    by.spawned += 1;
                } else {
                    by.ended += 1;
                }
                match self.task(file, id, n) {
                    Some(t) if begin => t.begin = Some(ts),
                    Some(t) => t.end = Some(ts),
                    None if begin => self.names[n as usize].1.untracked += 1,
                    None => {}
                }
            }
            Phase::Complete if cs.name == LONG_POLL_NAME => {
                let Some(id) = arg("task") else { return };
                // Its poll (recorded just before it, on the same thread) has named the task.
                match self.tasks.get(&(file, id)).map(|t| t.name).filter(|&n| n != UNNAMED) {
                    Some(n) => self.names[n as usize].1.long_polls += 1,
                    None => {
                        let n = self.name("(unknown task)");
                        self.names[n as usize].1.long_polls += 1;
                    }
                }
            }
            Phase::Complete => {
                let Some(id) = arg("task") else { return };
                let wait = arg("wait_ns").unwrap_or(0);
                let n = self.name(cs.name.as_ref());
                let by = &mut self.names[n as usize].1;
                by.polls.add(dur);
                by.scheduled_ns = by.scheduled_ns.saturating_add(wait);
                by.max_scheduled_ns = by.max_scheduled_ns.max(wait);
                if let Some(t) = self.task(file, id, n) {
                    t.busy = t.busy.saturating_add(dur);
                    t.scheduled_ns = t.scheduled_ns.saturating_add(wait);
                }
            }
            _ => {}
        }
    }

    /// The figures by name, on `clock` (whose ticks are the timeline's times).
    pub(crate) fn finish(mut self, clock: &ClockInfo) -> Vec<TaskStats> {
        let mut lived = vec![(0u64, 0u64); self.names.len()];
        for t in self.tasks.values() {
            if let (Some(b), Some(e), true) = (t.begin, t.end, t.name != UNNAMED) {
                let life = clock.ticks_to_ns(e.saturating_sub(b));
                let idle = life.saturating_sub(clock.ticks_to_ns(t.busy)).saturating_sub(t.scheduled_ns);
                let l = &mut lived[t.name as usize];
                *l = (l.0.saturating_add(life), l.1.saturating_add(idle));
            }
        }
        self.tasks = HashMap::default();
        let mut out: Vec<TaskStats> = self
            .names
            .into_iter()
            .zip(lived)
            .map(|((name, by), (lived_ns, idle_ns))| {
                let poll_durations = by.polls.stats(clock);
                TaskStats {
                    name,
                    spawned: by.spawned,
                    ended: by.ended,
                    polls: poll_durations.map_or(0, |d| d.samples),
                    busy_ns: poll_durations.map_or(0, |d| d.total_ns),
                    poll_durations,
                    scheduled_ns: by.scheduled_ns,
                    max_scheduled_ns: by.max_scheduled_ns,
                    lived_ns,
                    idle_ns,
                    long_polls: by.long_polls,
                    untracked: by.untracked,
                }
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }
}

/// The tasks of the rest of the file `reader` reads, by name: the figures `phosphor stats` gives,
/// made by the same code. A read error stops it: the figures of the events before it are kept,
/// and the error is given beside them. (The viewer reads them with their long polls:
/// [`read_tasks_and_long_polls`](crate::long_polls::read_tasks_and_long_polls).)
pub fn read_tasks<R: Read>(reader: Reader<R>) -> (Vec<TaskStats>, Option<file::Error>) {
    let read = crate::long_polls::read_tasks_and_long_polls(reader, None);
    (read.tasks, read.failure)
}

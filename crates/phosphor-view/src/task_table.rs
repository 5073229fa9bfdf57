//! `GET /api/tasks`: the tokio tasks of a trace (`phosphor::tokio`) by task name, and their
//! longest long polls each with the CPU samples and off-CPU time inside it, as
//! `phosphor_export::long_polls::read_tasks_and_long_polls` measures them (the figures and the
//! long polls `phosphor stats` gives, by the same code), read once per trace on the first request.
//! The stacks of a long poll's samples come from `/api/stacks` (`system.rs`).

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::Json;
use phosphor_export::long_polls::{read_tasks_and_long_polls, LongPoll};
use phosphor_export::symbolize::Symbolizer;
use phosphor_export::system::SystemContext;
use phosphor_export::tasks::TaskStats;
use phosphor_format::file::Reader;
use serde::{Deserialize, Serialize};

use crate::server::{trace, Failure, Shared};
use crate::stats::blocking;

/// A trace's tasks by name and longest long polls, once read, or the error that stopped the
/// reading.
#[derive(Debug)]
pub(crate) struct TaskTable {
    tasks: Vec<TaskStats>,
    long_polls: Vec<LongPoll>,
    read_error: Option<String>,
}

/// The trace file at `path`, opened for a pass.
fn open(path: &Path) -> Result<Reader<BufReader<File>>, String> {
    File::open(path)
        .map_err(|e| format!("{}: {e}", path.display()))
        .and_then(|f| Reader::new(BufReader::with_capacity(1 << 16, f)).map_err(|e| e.to_string()))
}

impl TaskTable {
    /// The tasks of the trace file at `path`; with `system` (the trace has system blocks), its
    /// long polls tied to the system context, read first as `phosphor stats` reads it (its
    /// samples' leaves symbolized).
    pub(crate) fn read(path: &Path, system: bool) -> TaskTable {
        let context = system.then(|| open(path).ok()).flatten().and_then(|r| SystemContext::read(r).ok());
        let context = context.map(|mut c| {
            c.name_leaves(&mut Symbolizer::new());
            Arc::new(c)
        });
        match open(path) {
            Ok(reader) => {
                let read = read_tasks_and_long_polls(reader, context);
                TaskTable {
                    tasks: read.tasks,
                    long_polls: read.long_polls,
                    read_error: read.failure.map(|e| format!("{}: {e}", path.display())),
                }
            }
            Err(e) => TaskTable { tasks: Vec::new(), long_polls: Vec::new(), read_error: Some(e) },
        }
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct TasksQuery {
    trace: usize,
}

/// The tasks of one name.
#[derive(Debug, Serialize)]
pub(crate) struct TaskRow {
    name: String,
    spawned: u64,
    ended: u64,
    polls: u64,
    busy_ns: u64,
    p50_poll_ns: u64,
    p99_poll_ns: u64,
    max_poll_ns: u64,
    scheduled_ns: u64,
    max_scheduled_ns: u64,
    lived_ns: u64,
    idle_ns: u64,
    long_polls: u64,
}

/// A long poll (`phosphor_export::long_polls::LongPoll`), placed on the shared timeline.
#[derive(Debug, Serialize)]
pub(crate) struct LongPollRow {
    /// Its task's name, or `(unknown task)`.
    task: String,
    task_id: u64,
    /// The worker thread that polled it.
    tid: u32,
    /// Its start on the shared timeline, and its duration.
    start_ns: i64,
    dur_ns: u64,
    /// What the system context saw inside it; null without one.
    system: Option<LongPollSystem>,
}

/// What the system context saw inside a long poll (`phosphor_export::ScopeSystem`).
#[derive(Debug, Serialize)]
pub(crate) struct LongPollSystem {
    on_cpu_ns: u64,
    off_cpu_ns: u64,
    preempted_ns: u64,
    switches: u64,
    samples: u64,
    /// The samples' leaf functions, most samples first: `[function, samples]`.
    functions: Vec<(String, u64)>,
}

/// The answer: the trace's tasks, by name, and their longest long polls.
#[derive(Debug, Serialize)]
pub(crate) struct TasksAnswer {
    tasks: Vec<TaskRow>,
    /// The longest long polls (at most `phosphor_export::long_polls::SLOWEST_LONG_POLLS`),
    /// longest first.
    long_polls: Vec<LongPollRow>,
    /// Where reading the trace for its tasks stopped, if it is damaged.
    read_error: Option<String>,
}

/// `GET /api/tasks?trace=T`.
pub(crate) async fn tasks(
    State(traces): State<Shared>,
    Query(q): Query<TasksQuery>,
) -> Result<Json<TasksAnswer>, Failure> {
    blocking(move || {
        let t = trace(&traces, q.trace)?;
        let read = t.task_table();
        let tasks = read
            .tasks
            .iter()
            .map(|s| {
                let d = s.poll_durations.as_ref();
                TaskRow {
                    name: s.name.clone(),
                    spawned: s.spawned,
                    ended: s.ended,
                    polls: s.polls,
                    busy_ns: s.busy_ns,
                    p50_poll_ns: d.map_or(0, |d| d.p50_ns),
                    p99_poll_ns: d.map_or(0, |d| d.p99_ns),
                    max_poll_ns: d.map_or(0, |d| d.max_ns),
                    scheduled_ns: s.scheduled_ns,
                    max_scheduled_ns: s.max_scheduled_ns,
                    lived_ns: s.lived_ns,
                    idle_ns: s.idle_ns,
                    long_polls: s.long_polls,
                }
            })
            .collect();
        let offset = t.place().offset_ns();
        let long_polls = read
            .long_polls
            .iter()
            .map(|p| LongPollRow {
                task: p.task.clone(),
                task_id: p.task_id,
                tid: p.tid,
                start_ns: p.start_ns.saturating_add(offset),
                dur_ns: p.dur_ns,
                system: p.system.as_ref().map(|s| LongPollSystem {
                    on_cpu_ns: s.on_cpu_ns,
                    off_cpu_ns: s.off_cpu_ns,
                    preempted_ns: s.preempted_ns,
                    switches: s.switches,
                    samples: s.samples,
                    functions: s.functions.clone(),
                }),
            })
            .collect();
        Ok(Json(TasksAnswer { tasks, long_polls, read_error: read.read_error.clone() }))
    })
    .await
}

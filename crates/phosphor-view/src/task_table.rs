//! `GET /api/tasks`: the tokio tasks of a trace (`phosphor::tokio`) by task name, as
//! `phosphor_export::tasks::read_tasks` measures them (the figures `phosphor stats` gives, by the
//! same code), read once per trace on the first request.

use std::fs::File;
use std::io::BufReader;

use axum::extract::{Query, State};
use axum::Json;
use phosphor_export::tasks::{read_tasks, TaskStats};
use phosphor_format::file::Reader;
use serde::{Deserialize, Serialize};

use crate::server::{trace, Failure, Shared};
use crate::stats::blocking;

/// A trace's tasks by name, once read, or the error that stopped the reading.
#[derive(Debug)]
pub(crate) struct TaskTable {
    tasks: Vec<TaskStats>,
    read_error: Option<String>,
}

impl TaskTable {
    /// The tasks of the trace file at `path`.
    pub(crate) fn read(path: &std::path::Path) -> TaskTable {
        let reader = File::open(path)
            .map_err(|e| format!("{}: {e}", path.display()))
            .and_then(|f| Reader::new(BufReader::with_capacity(1 << 16, f)).map_err(|e| e.to_string()));
        match reader {
            Ok(reader) => {
                let (tasks, failure) = read_tasks(reader);
                TaskTable { tasks, read_error: failure.map(|e| format!("{}: {e}", path.display())) }
            }
            Err(e) => TaskTable { tasks: Vec::new(), read_error: Some(e) },
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

/// The answer: the trace's tasks, by name.
#[derive(Debug, Serialize)]
pub(crate) struct TasksAnswer {
    tasks: Vec<TaskRow>,
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
        Ok(Json(TasksAnswer { tasks, read_error: read.read_error.clone() }))
    })
    .await
}

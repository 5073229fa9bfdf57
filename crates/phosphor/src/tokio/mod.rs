//! tokio tasks as Phosphor events (feature `tokio`): the runtime's task hooks installed on a
//! [`tokio::runtime::Builder`].
//!
//! ```no_run
//! # #[cfg(tokio_unstable)] {
//! let mut builder = tokio::runtime::Builder::new_multi_thread();
//! builder.enable_all();
//! phosphor::tokio::instrument(&mut builder);
//! let runtime = builder.build().unwrap();
//! # }
//! ```
//!
//! With the hooks installed, a running trace of the log (the global one unless
//! [`TaskHooks::log`] says otherwise) records, in category `tokio`:
//!
//! * one **async slice per task**, from its spawn to its end, whose id is tokio's task id and
//!   whose name is the task's spawn location (`file:line`, from `TaskMeta::spawned_at`);
//! * one **poll slice** (a complete slice on the worker thread) per poll, named like the task,
//!   flagged as a flow whose argument `task` is the task id: exporters link each poll to the
//!   task's async slice, as for [`trace_future!`](crate::trace_future!). Its argument `wait_ns`
//!   is the poll's wake-to-poll delay: how long the task waited, once woken (scheduled), for a
//!   worker to poll it (tokio's `TaskMeta::schedule_latency`, which the hooks turn on with
//!   `Builder::track_task_schedule_latency`; 0 on 32-bit targets, where tokio has no such
//!   measure). `phosphor stats` sums these by task name (busy, scheduled, idle);
//! * a **`long poll`** slice over every poll longer than [`TaskHooks::long_poll`] (default
//!   [`DEFAULT_LONG_POLL`], 10 ms), with arguments `task` and `poll_ns`: a flight recorder keys on
//!   it with `Trigger::slower_than("tokio", "long poll", limit)`.
//!
//! # tokio_unstable
//!
//! tokio's task hooks (`on_task_spawn`, `on_task_terminate`, `on_before_task_poll`,
//! `on_after_task_poll`) and `TaskMeta` are unstable APIs: they exist only when the program is
//! built with `RUSTFLAGS="--cfg tokio_unstable"`. Without that flag this module still builds, and
//! [`instrument`] leaves the builder as it is ([`HOOKS_AVAILABLE`] is `false`).
//!
//! # Task names
//!
//! A task is named by its spawn location, unless it is spawned inside [`named`]. tokio's
//! `TaskMeta` (1.54) gives the hooks the task's id and spawn location but not the name given to
//! `tokio::task::Builder::name` (tokio keeps that for its own `tracing` spans), so the hooks
//! cannot see that name; [`named`] hands one to them, since tokio runs the spawn hook on the
//! spawning thread, inside `spawn`:
//!
//! ```no_run
//! # async fn serve_connection() {}
//! let handle = phosphor::tokio::named("connection", || tokio::spawn(serve_connection()));
//! # drop(handle);
//! ```
//!
//! # Cost
//!
//! The hooks take no lock and allocate nothing: a lock-free lookup of the spawn location's
//! callsites, the callsite's enabled test, one clock read per poll edge and the event's write.
//! The exception is the first spawn from each location, which registers its three callsites (a
//! copy of the name, the registry's lock) once for the life of the process, as a bridge's first
//! event does; past `MAX_DYNAMIC_POINTS` locations, tasks share the static callsites named `task`.
//! A task spawned while no trace records it and ending while one does leaves an unmatched end.
//!
//! A poll's `wait_ns` costs more than the rest of the poll's hooks, and most of it is tokio's:
//! with its schedule-latency tracking on, tokio reads `Instant::now` when it schedules a task and
//! again when it polls it, and subtracts `Instant`s twice (on an axum server, about 185
//! instructions a request, as much as every hook together). The hooks cannot measure the wait
//! more cheaply with their own clock: tokio calls no hook when it schedules (wakes) a task, and
//! its wakers are its own. [`TaskHooks::wait_ns`] turns the wait, and tokio's tracking, off.

use std::time::Duration;

use crate::TraceLog;

#[cfg(tokio_unstable)]
mod hooks;

/// Whether this build can install tokio's task hooks (it was compiled with `--cfg tokio_unstable`).
pub const HOOKS_AVAILABLE: bool = cfg!(tokio_unstable);

/// The category of every event the hooks record.
pub const CATEGORY: &str = "tokio";

/// The poll duration past which a poll is marked `long poll`, unless set otherwise.
pub const DEFAULT_LONG_POLL: Duration = Duration::from_millis(10);

/// The task hooks' settings: which log records, and the long-poll threshold. [`install`]
/// puts them on a runtime builder.
///
/// [`install`]: TaskHooks::install
#[derive(Clone, Copy, Debug)]
pub struct TaskHooks {
    log: &'static TraceLog,
    long_poll: Duration,
    wait_ns: bool,
}

impl Default for TaskHooks {
    fn default() -> Self {
        TaskHooks::new()
    }
}

impl TaskHooks {
    /// Hooks recording into the global log, marking polls longer than [`DEFAULT_LONG_POLL`].
    pub fn new() -> TaskHooks {
        TaskHooks { log: TraceLog::global(), long_poll: DEFAULT_LONG_POLL, wait_ns: true }
    }

    /// Records into `log` instead of the global log.
    pub fn log(mut self, log: &'static TraceLog) -> TaskHooks {
        self.log = log;
        self
    }

    /// Marks polls longer than `threshold` with a `long poll` slice.
    pub fn long_poll(mut self, threshold: Duration) -> TaskHooks {
        self.long_poll = threshold;
        self
    }

    /// Whether polls record `wait_ns` (default: yes). Off, the hooks leave tokio's schedule
    /// latency off (a clock read at each wake and each poll) and a poll slice has only its `task`
    /// argument (one record instead of two), and `phosphor stats` gives no scheduled time. On an
    /// axum server (`scripts/callgrind-server.sh`, bench/results/2026-12-06c-server.md) this
    /// takes the hooks from about 3.3% of a request's instructions to about 1.4%: of the
    /// difference, about 185 instructions a request are tokio's tracking and 19 the third word.
    pub fn wait_ns(mut self, on: bool) -> TaskHooks {
        self.wait_ns = on;
        self
    }

    /// Installs the hooks on `builder` (replacing any task hooks set before), and returns it.
    /// Without `--cfg tokio_unstable` this does nothing (see [`HOOKS_AVAILABLE`]).
    pub fn install(self, builder: &mut ::tokio::runtime::Builder) -> &mut ::tokio::runtime::Builder {
        #[cfg(tokio_unstable)]
        hooks::install(self.log, self.long_poll, self.wait_ns, builder);
        #[cfg(not(tokio_unstable))]
        let _ = (self.log, self.long_poll, self.wait_ns);
        builder
    }
}

/// Runs `spawn` (a call of `tokio::spawn`, `tokio::task::Builder::spawn`, `JoinSet::spawn`...)
/// with `name` as the name of the tasks it spawns on this thread: their async slices and polls
/// are named `name` instead of by their spawn location. Each distinct name's points are made once
/// (keyed by the string's address: pass literals or other `'static` strings that live on).
pub fn named<R>(name: &'static str, spawn: impl FnOnce() -> R) -> R {
    #[cfg(tokio_unstable)]
    {
        /// Puts the name before back, also if `spawn` panics.
        struct Restore(Option<&'static str>);
        impl Drop for Restore {
            fn drop(&mut self) {
                hooks::NAME.with(|n| n.set(self.0));
            }
        }
        let _restore = Restore(hooks::NAME.with(|n| n.replace(Some(name))));
        spawn()
    }
    #[cfg(not(tokio_unstable))]
    {
        let _ = name;
        spawn()
    }
}

/// Installs the task hooks with the default settings ([`TaskHooks::new`]) on `builder`.
pub fn instrument(builder: &mut ::tokio::runtime::Builder) -> &mut ::tokio::runtime::Builder {
    TaskHooks::new().install(builder)
}

/// `builder.phosphor()`: [`instrument`] as a method of tokio's runtime builder.
pub trait BuilderExt {
    /// Installs Phosphor's task hooks with the default settings.
    fn phosphor(&mut self) -> &mut Self;
}

impl BuilderExt for ::tokio::runtime::Builder {
    fn phosphor(&mut self) -> &mut Self {
        instrument(self)
    }
}

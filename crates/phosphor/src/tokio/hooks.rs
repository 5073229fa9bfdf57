//! The hooks themselves (only with `--cfg tokio_unstable`, where tokio has them).

use std::cell::Cell;
use std::hash::{Hash, Hasher};
use std::panic::Location;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use ::tokio::runtime::TaskMeta;
use phosphor_format::Phase;

use crate::instrument::emit::{check, emit, emit_watched, At, NoArg, Now};
use crate::record::thread::busy;
use crate::registry::callsite::{self, Callsite, CallsiteMeta};
use crate::registry::site_cache::SiteCache;
use crate::TraceLog;

use super::CATEGORY;

/// A task's callsites, made once per spawn location: async begin, async end, poll.
#[derive(Debug)]
struct TaskSites {
    begin: &'static Callsite,
    end: &'static Callsite,
    poll: &'static Callsite,
}

// The fallback task sites and the long-poll slice: registered at their first event, like the
// recorder's own callsites (`trigger::MARKER`).
static DEFAULT_BEGIN: Callsite = Callsite::new(
    CallsiteMeta::new(CATEGORY, "task", Phase::AsyncBegin, ["", ""], file!(), line!()).with_flow(),
);
static DEFAULT_END: Callsite = Callsite::new(
    CallsiteMeta::new(CATEGORY, "task", Phase::AsyncEnd, ["", ""], file!(), line!()).with_flow(),
);
static DEFAULT_POLL: Callsite = Callsite::new(
    CallsiteMeta::new(CATEGORY, "task", Phase::Complete, POLL_ARGS, file!(), line!()).with_flow(),
);
static LONG_POLL: Callsite = Callsite::new(CallsiteMeta::new(
    CATEGORY,
    "long poll",
    Phase::Complete,
    ["task", "poll_ns"],
    file!(),
    line!(),
));

/// The sites of tasks whose location has none (the cache or the registry is full).
static DEFAULT_SITES: TaskSites = TaskSites { begin: &DEFAULT_BEGIN, end: &DEFAULT_END, poll: &DEFAULT_POLL };

/// Spawn locations' sites, by the location's address (`Location`s of `#[track_caller]` are
/// statics).
static SITES: OnceLock<SiteCache<TaskSites>> = OnceLock::new();

/// The tasks with an open async slice, by task id modulo `OPEN_SLOTS`: the slot holds the
/// task's sites (null: none open). A task is recorded from its spawn to its end or not at all
/// (tokio also calls the terminate hook for `spawn_blocking` tasks, which it never announces to
/// the spawn hook, and a task spawned before the trace started may end during it), and its polls
/// and end take the sites its spawn chose (its location's, or a name given with
/// [`named`](super::named)). Two live tasks whose ids are `OPEN_SLOTS` apart share a slot; that
/// takes 262,144 tasks alive at once. 2 MiB of zeroed memory, touched as task ids grow.
const OPEN_SLOTS: usize = 1 << 18;
static OPEN: [AtomicPtr<TaskSites>; OPEN_SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; OPEN_SLOTS];

fn open_slot(id: u64) -> &'static AtomicPtr<TaskSites> {
    &OPEN[id as usize % OPEN_SLOTS]
}

/// A slot's sites, if one is open.
fn sites_in(p: *mut TaskSites) -> Option<&'static TaskSites> {
    // SAFETY: [1] the slots hold only null or pointers made from `&'static TaskSites` (the
    // statics, or the caches' leaked values, never freed); [2] nothing writes through them.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// Sites names given with [`named`](super::named), by the name's address and length.
static NAMED: OnceLock<SiteCache<TaskSites>> = OnceLock::new();

thread_local! {
    /// The name [`named`](super::named) gives the tasks spawned on this thread now, if any.
    pub(super) static NAME: Cell<Option<&'static str>> = const { Cell::new(None) };
}

fn named_sites(name: &'static str, location: &'static Location<'static>) -> &'static TaskSites {
    let cache = NAMED.get_or_init(|| SiteCache::new(1024));
    // Addresses are below 2^48: the length goes above them (`"ab"` and `"abc"` may share one).
    let key = (name.as_ptr() as usize) ^ (name.len() << 48);
    if let Some(sites) = cache.get(key) {
        return sites;
    }
    cache.insert(key, || make_sites(name, location)).unwrap_or(&DEFAULT_SITES)
}

/// A poll slice's arguments: its task's id, and how long the task waited between being woken
/// (scheduled) and this poll's start, in nanoseconds (tokio's `TaskMeta::schedule_latency`).
const POLL_ARGS: [&str; 2] = ["task", "wait_ns"];

thread_local! {
    /// When the poll running on this worker thread started (0: none), and its task's sites.
    static POLL_START: Cell<(u64, *const TaskSites)> = const { Cell::new((0, std::ptr::null())) };
}

fn sites_for(location: &'static Location<'static>) -> &'static TaskSites {
    let cache = SITES.get_or_init(|| SiteCache::new(1024));
    let key = location as *const Location<'static> as usize;
    if let Some(sites) = cache.get(key) {
        return sites;
    }
    // The first task from this location: its callsites are made and registered once.
    let name =
        || -> &'static str { Box::leak(format!("{}:{}", location.file(), location.line()).into_boxed_str()) };
    cache.insert(key, || make_sites(name(), location)).unwrap_or(&DEFAULT_SITES)
}

#[cold]
fn make_sites(name: &'static str, location: &'static Location<'static>) -> TaskSites {
    let one = |phase: Phase, args: [&'static str; 2], fallback: &'static Callsite| -> &'static Callsite {
        let make = || -> &'static Callsite {
            let meta =
                CallsiteMeta::new(CATEGORY, name, phase, args, location.file(), location.line()).with_flow();
            Box::leak(Box::new(Callsite::new(meta)))
        };
        busy(|| callsite::dynamic(CATEGORY, name, phase, "tokio task", make)).unwrap_or(fallback)
    };
    TaskSites {
        begin: one(Phase::AsyncBegin, ["", ""], &DEFAULT_BEGIN),
        end: one(Phase::AsyncEnd, ["", ""], &DEFAULT_END),
        poll: one(Phase::Complete, POLL_ARGS, &DEFAULT_POLL),
    }
}

/// tokio's task id as a number: `Id` hashes its one `NonZeroU64` with `write_u64`, which this
/// hasher keeps (tokio has no other way to read it, and `Display` would format).
#[derive(Default)]
struct IdWord(u64);

impl Hasher for IdWord {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Not reached for `Id`; folds any other shape into the word all the same.
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

fn task_id(meta: &TaskMeta<'_>) -> u64 {
    let mut h = IdWord::default();
    meta.id().hash(&mut h);
    h.finish()
}

/// The wait before this poll, in nanoseconds: 0 where tokio cannot measure it (32-bit targets,
/// where its `schedule-latency` feature does not build).
fn wait_ns(meta: &TaskMeta<'_>) -> u64 {
    #[cfg(target_pointer_width = "64")]
    let wait = meta.schedule_latency().map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    #[cfg(not(target_pointer_width = "64"))]
    let wait = {
        let _ = meta;
        0
    };
    wait
}

pub(super) fn install(
    log: &'static TraceLog,
    long_poll: Duration,
    with_wait: bool,
    builder: &mut ::tokio::runtime::Builder,
) {
    // Compared with each poll's length in nanoseconds: a multiplication per poll, where
    // converting the `Duration` to ticks would take a 128-bit integer to a float every time.
    let long_poll_ns = long_poll.as_nanos() as f64;
    // Costs tokio a clock read when it schedules a task and one when it polls it; gives each
    // poll its wait.
    #[cfg(target_pointer_width = "64")]
    if with_wait {
        builder.track_task_schedule_latency();
    }
    builder
        .on_task_spawn(move |meta| {
            // The spawn hook runs on the spawning thread, inside `spawn`: `named` is around it.
            let sites = match NAME.with(Cell::get) {
                Some(name) => named_sites(name, meta.spawned_at()),
                None => sites_for(meta.spawned_at()),
            };
            if let Some(state) = check(log, sites.begin) {
                let id = task_id(meta);
                // Relaxed: the slot only hands this task's sites to its end and polls, which
                // tokio orders after its spawn (the sites themselves are 'static and were
                // published to this thread by the cache's Acquire, or are statics).
                open_slot(id).store(sites as *const TaskSites as *mut TaskSites, Ordering::Relaxed);
                emit(log, sites.begin, state, Now, [id], NoArg, NoArg);
            }
        })
        .on_task_terminate(move |meta| {
            let id = task_id(meta);
            // Relaxed: as at the spawn. A task whose begin was not recorded ends unrecorded.
            let Some(sites) = sites_in(open_slot(id).swap(std::ptr::null_mut(), Ordering::Relaxed)) else {
                return;
            };
            if let Some(state) = check(log, sites.end) {
                emit(log, sites.end, state, Now, [id], NoArg, NoArg);
            }
        })
        .on_before_task_poll(move |meta| {
            // Only the polls of a task with an open slice are recorded. Read here, not after the
            // poll: tokio runs the terminate hook inside a task's last poll, before the after-poll
            // hook. Relaxed: as at the spawn.
            let sites = open_slot(task_id(meta)).load(Ordering::Relaxed);
            let start = if sites.is_null() { 0 } else { log.now() };
            POLL_START.with(|s| s.set((start, sites)));
        })
        .on_after_task_poll(move |meta| {
            let (start, sites) = POLL_START.with(|s| s.replace((0, std::ptr::null())));
            if start == 0 {
                return;
            }
            let Some(sites) = sites_in(sites.cast_mut()) else { return };
            // One clock read ends the poll slice and measures it against the threshold.
            let ticks = log.now().wrapping_sub(start);
            let id = task_id(meta);
            if let Some(state) = check(log, sites.poll) {
                if with_wait {
                    emit(log, sites.poll, state, At(start), [ticks], id, wait_ns(meta));
                } else {
                    // Two words: one record, written in line.
                    emit(log, sites.poll, state, At(start), [ticks], id, NoArg);
                }
            }
            let ns = log.ticks_to_ns(ticks);
            if ns > long_poll_ns {
                if let Some(state) = check(log, &LONG_POLL) {
                    emit_watched(log, &LONG_POLL, state, At(start), [ticks], id, ns as u64);
                }
            }
        });
}

//! System context (issue 23): the traced threads' context switches and CPU samples, the
//! process's heap totals and its executable mappings, collected by a thread of the trace's own,
//! `phosphor-system`, never on the recording path (see `docs/SYSTEM.md`).
//!
//! # Brief overview
//!
//! * [`SystemCollector::start`] (from `TraceLog::start`) decides what is available: it opens and
//!   maps one probe event on the calling thread, which is where a refusal (`perf_event_paranoid`,
//!   seccomp, the locked-memory budget, not Linux) shows, and says why in the status; the trace
//!   starts either way. Then it starts the thread, unless nothing is left to collect.
//! * Every [`PERIOD`] (and at once when a thread attaches to the log) the thread lists the log's
//!   traced threads (its own tenants' owners, under `try_control`: it never waits for the control
//!   lock), opens a perf event for each new one (`perf.rs`), drains every ring, closes those of
//!   threads that exited, reads the heap totals and, every [`MAPS_EVERY`] periods, the new
//!   executable mappings (`maps.rs`), and adds it all to the bounded store (`store.rs`). Each
//!   CPU sample's copy of its thread's stack is unwound as it is drained (`unwind.rs`).
//! * [`SystemCollector::finish`] (from `stop`, without the control lock) wakes it for a last
//!   period, joins it, and hands the store over as the trace's [`SystemBatch`];
//!   [`SystemCollector::forget`] (a fork child) lets it go without joining: the thread is the
//!   parent's.
//!
//! A thread is watched from its first event in the trace (its attach), or from the start for a
//! thread that attached in an earlier trace of the log; switches and samples before the
//! collector opened its event (well under a period) are not seen. Unregistered threads of a
//! `ThreadPolicy::Pool` log share pool tenants and are not watched.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use phosphor_format::system::{Availability, SystemBatch, SystemStatus};

use crate::trace_log::config::SystemConfig;
use crate::trace_log::TraceLog;

mod attached;
#[cfg(target_os = "linux")]
mod maps;
#[cfg(target_os = "linux")]
mod perf;
pub(crate) mod store;
pub(crate) use attached::ATTACHER;
#[cfg(target_os = "linux")]
mod unwind;

/// How often the collector drains the rings.
pub(crate) const PERIOD: Duration = Duration::from_millis(10);
/// Mappings are read again every this many periods (100 ms).
#[cfg(target_os = "linux")]
const MAPS_EVERY: u32 = 10;

/// Setting this environment variable to `1` makes every trace behave as if `perf_event_open`
/// were refused with `EACCES` (its status then says so): for testing the refused path where the
/// kernel allows it.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub const FORCE_UNAVAILABLE: &str = "PHOSPHOR_PERF_UNAVAILABLE";

/// Where a streaming trace's collector sends each period's new system context (to every
/// datastream, see `stream::Collector::system_forwarder`).
pub(crate) type Forward = Box<dyn Fn(Arc<SystemBatch>) + Send>;

/// State shared with the collector thread.
#[derive(Debug)]
struct Shared {
    store: Mutex<store::Store>,
    /// `(stop, woken)`: stop asked; a thread attached since the last period.
    flags: Mutex<(bool, bool)>,
    wake: Condvar,
}

/// A running trace's system collection: its thread and store.
#[derive(Debug)]
pub(crate) struct SystemCollector {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The log, sent to the collector thread; alive until `stop` (also run by its `Drop`) has joined
/// the thread.
struct LogPtr(*const TraceLog);
// SAFETY: `TraceLog` is `Sync`; the pointer is only dereferenced by the collector thread, which
// `stop` joins (or, in a fork child, which does not exist) before the log can go.
unsafe impl Send for LogPtr {}

impl SystemCollector {
    /// Starts collecting for `log`'s trace: `None` when `config` asks for nothing. `keep_newest`:
    /// the trace is a Ring (the store then drops its oldest records past its bounds).
    /// `forward`: a streaming trace's datastreams, sent each period's new records.
    pub(crate) fn start(
        log: &TraceLog,
        config: SystemConfig,
        keep_newest: bool,
        forward: Option<Forward>,
    ) -> Option<SystemCollector> {
        let perf_wanted = config.switches || config.sample_hz > 0;
        if !perf_wanted && !config.allocations {
            return None;
        }
        let mut status = SystemStatus { sample_hz: config.sample_hz, ..SystemStatus::default() };
        let perf = probe(config, &mut status);
        if config.allocations {
            status.allocations = if crate::alloc::heap_totals().is_some() {
                Availability::On
            } else {
                Availability::Unavailable("phosphor::alloc::Traced is not the global allocator".into())
            };
        }
        let shared = Arc::new(Shared {
            store: Mutex::new(store::Store::new(keep_newest, status)),
            flags: Mutex::new((false, false)),
            wake: Condvar::new(),
        });
        let heap = config.allocations && status_on(&shared, |s| &s.allocations);
        if perf.is_none() && !heap {
            if let Some(f) = forward {
                f(Arc::new(SystemBatch {
                    status: Some(lock(&shared.store).status.clone()),
                    ..Default::default()
                }));
            }
            return Some(SystemCollector { shared, thread: None });
        }
        let (s, l) = (shared.clone(), LogPtr(log));
        let spawned =
            crate::record::internal_thread::Builder::new().name("phosphor-system".into()).spawn(move || {
                let l = l;
                // SAFETY: see `LogPtr`.
                run(&s, unsafe { &*l.0 }, perf, heap, forward);
            });
        let thread = match spawned {
            Ok(t) => Some(t),
            Err(e) => {
                let why = Availability::Unavailable(format!("the collector thread: {e}"));
                let st = &mut lock(&shared.store).status;
                for a in [&mut st.switches, &mut st.samples, &mut st.allocations] {
                    if *a == Availability::On {
                        *a = why.clone();
                    }
                }
                None
            }
        };
        Some(SystemCollector { shared, thread })
    }

    /// A thread attached to the log: collect at once rather than at the end of the period.
    pub(crate) fn thread_attached(&self) {
        lock(&self.shared.flags).1 = true;
        self.shared.wake.notify_one();
    }

    /// The status so far.
    pub(crate) fn status(&self) -> SystemStatus {
        lock(&self.shared.store).status.clone()
    }

    /// A copy of what was collected so far (a snapshot's).
    pub(crate) fn snapshot(&self) -> SystemBatch {
        lock(&self.shared.store).batch()
    }

    /// Collects a last period, stops the thread and returns everything. `stop` calls it without
    /// the log's control lock: the thread only ever tries that lock, but joining it while holding
    /// the lock would hold up every attach for a period.
    pub(crate) fn finish(mut self) -> SystemBatch {
        self.stop_thread();
        let shared = self.shared.clone();
        drop(self);
        match Arc::try_unwrap(shared) {
            Ok(shared) => shared.store.into_inner().unwrap_or_else(|p| p.into_inner()).into_batch(),
            Err(shared) => lock(&shared.store).batch(),
        }
    }

    /// Wakes the thread for its last period and joins it.
    fn stop_thread(&mut self) {
        lock(&self.shared.flags).0 = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// In a fork child: the thread does not exist there, and the store's lock may have been held
    /// by it at the fork, so nothing is touched or joined.
    #[cfg(unix)]
    pub(crate) fn forget(self) {
        std::mem::forget(self);
    }
}

impl TraceLog {
    /// The system context's status (context switches, CPU samples, allocations; see
    /// [`TraceConfig::context_switches`](crate::TraceConfig::context_switches)): of the running
    /// trace so far, else of the last one; `None` when that trace asked for none. A source the
    /// system refused is [`Availability::Unavailable`] with the reason, and the trace ran
    /// without it.
    pub fn system_status(&self) -> Option<SystemStatus> {
        let c = self.control();
        match &c.running {
            Some(r) => r
                .attached
                .find::<attached::Attached>()
                .and_then(|a| a.0.as_ref())
                .map(SystemCollector::status),
            None => attached::last_status(&c.kept),
        }
    }
}

/// Never left running: the thread holds a pointer to the log (see `LogPtr`).
impl Drop for SystemCollector {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every critical section here leaves its data consistent before it could panic.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn status_on(shared: &Shared, which: impl Fn(&SystemStatus) -> &Availability) -> bool {
    *which(&lock(&shared.store).status) == Availability::On
}

/// Whether perf events are available for `config`, filling the status either way: what the
/// collector thread should open.
#[cfg(target_os = "linux")]
fn probe(config: SystemConfig, status: &mut SystemStatus) -> Option<(perf::Want, Starter)> {
    let want = perf::Want { switches: config.switches, sample_hz: config.sample_hz };
    if !want.switches && want.sample_hz == 0 {
        return None;
    }
    let result = if perf::forced() {
        Err(perf::OpenError::FORCED)
    } else {
        // Kept: the probe is the starting thread's own event (see `Starter`).
        perf::PerfRing::open(0, want, perf::max_stack())
    };
    let (on, ring) = match result {
        Ok(ring) => (Availability::On, Some(ring)),
        Err(e) => (Availability::Unavailable(e.reason()), None),
    };
    if want.switches {
        status.switches = on.clone();
    }
    if want.sample_hz > 0 {
        status.samples = on.clone();
    }
    ring.map(|ring| (want, Starter { tid: crate::record::thread::os_tid(), ring }))
}

/// The thread that started the trace, watched from `start` by the probe's event: a program
/// that starts a trace and then traces on the same thread has its first scope's switches and
/// samples too, not only those after the collector's first period. The collector adopts the
/// ring once the thread is among the traced ones (or drains it meanwhile).
#[cfg(target_os = "linux")]
struct Starter {
    tid: u32,
    ring: perf::PerfRing,
}

#[cfg(not(target_os = "linux"))]
fn probe(config: SystemConfig, status: &mut SystemStatus) -> Option<()> {
    let no = Availability::Unavailable("not Linux".into());
    if config.switches {
        status.switches = no.clone();
    }
    if config.sample_hz > 0 {
        status.samples = no;
    }
    None
}

/// Waits out a period (or a wake-up); whether stop was asked.
fn wait(shared: &Shared) -> bool {
    let mut flags = lock(&shared.flags);
    if !flags.0 && !flags.1 {
        flags = shared.wake.wait_timeout(flags, PERIOD).unwrap_or_else(|p| p.into_inner()).0;
    }
    flags.1 = false;
    flags.0
}

/// `CLOCK_MONOTONIC` now, in nanoseconds.
fn monotonic_ns() -> u64 {
    crate::record::clock::now(crate::record::clock::ClockKind::Monotonic)
}

#[cfg(target_os = "linux")]
fn run(
    shared: &Shared,
    log: &TraceLog,
    perf: Option<(perf::Want, Starter)>,
    heap: bool,
    forward: Option<Forward>,
) {
    use std::collections::HashMap;
    let (perf, mut starter) = match perf {
        Some((want, starter)) => (Some(want), Some(starter)),
        None => (None, None),
    };
    let mut sent_status = None;

    // Busy for good: the control guards this thread takes then never run a deferred stop
    // callback here (which could call `stop`, which joins this thread), and an event recorded
    // on it would be dropped as reentrant rather than attach.
    let _ = crate::record::thread::THREAD.try_with(|t| t.enter_busy());
    let max_stack = perf::max_stack();
    let mut rings: HashMap<u32, Watched> = HashMap::new();
    let mut missed: Vec<*const crate::record::tenant::Tenant> = Vec::new();
    let mut maps = maps::Maps::default();
    let mut scratch = Vec::new();
    // Made here, off the traced threads: it reads the loaded objects' unwind sections.
    let mut unwinder =
        perf.is_some_and(|w| w.sample_hz > 0 && unwind::enabled()).then(unwind::StackUnwinder::new);
    let mut period = 0u32;
    loop {
        let stopping = wait(shared);
        let mut drained = perf::Drained::default();
        let mut threads_missed = 0;
        if let Some(want) = perf {
            // The traced threads now; `None` when the control lock is busy (next period, then).
            let traced: Option<Vec<_>> = log.try_control().map(|c| {
                c.tenants
                    .iter()
                    .filter(|t| !t.is_retired())
                    .filter_map(|t| Some((t.owner()?, t.clone())))
                    .collect()
            });
            if let Some(traced) = traced {
                // Threads that exited (or whose id a new thread took): a last drain, then closed.
                rings.retain(|tid, w| {
                    let live = traced.iter().any(|(t, ten)| t == tid && Arc::ptr_eq(ten, &w.tenant));
                    if !live {
                        w.ring.drain(&mut drained, &mut scratch, unwinder.as_mut());
                    }
                    live
                });
                missed.retain(|&p| traced.iter().any(|(_, t)| std::ptr::eq(Arc::as_ptr(t), p)));
                for (tid, tenant) in traced {
                    if rings.contains_key(&tid) || missed.contains(&Arc::as_ptr(&tenant)) {
                        continue;
                    }
                    if let Some(st) = starter.take_if(|st| st.tid == tid) {
                        rings.insert(tid, Watched { tenant, ring: st.ring });
                        continue;
                    }
                    if !is_ours(tid) {
                        // Not a thread of this process (a tenant's owner from before a fork, say):
                        // a trace never observes another process. Not a loss of ours.
                        missed.push(Arc::as_ptr(&tenant));
                        continue;
                    }
                    match perf::PerfRing::open(tid, want, max_stack) {
                        Ok(ring) => {
                            rings.insert(tid, Watched { tenant, ring });
                        }
                        Err(e) if e.is_gone() => {}
                        Err(_) => {
                            missed.push(Arc::as_ptr(&tenant));
                            threads_missed += 1;
                        }
                    }
                }
            }
            for w in rings.values_mut() {
                w.ring.drain(&mut drained, &mut scratch, unwinder.as_mut());
            }
            if let Some(st) = &mut starter {
                st.ring.drain(&mut drained, &mut scratch, unwinder.as_mut());
            }
        }
        let heap_now = heap.then(crate::alloc::heap_totals).flatten().map(|mut h| {
            h.time_ns = monotonic_ns();
            h
        });
        let sampling = perf.is_some_and(|w| w.sample_hz > 0);
        let mappings = if sampling && period % MAPS_EVERY == 0 { maps.new_mappings() } else { Vec::new() };
        period = period.wrapping_add(1);
        let mut st = lock(&shared.store);
        st.status.kernel_lost += drained.lost;
        st.status.threads_missed += threads_missed;
        if let Some(f) = &forward {
            // The status when it changed, and always in the last batch.
            let status = (stopping || sent_status.as_ref() != Some(&st.status)).then(|| st.status.clone());
            sent_status = Some(st.status.clone());
            let batch = SystemBatch {
                status,
                mappings: mappings.clone(),
                switches: drained.switches.clone(),
                samples: drained.samples.clone(),
                heap: heap_now.into_iter().collect(),
            };
            if !batch.is_empty() {
                f(Arc::new(batch));
            }
        }
        st.add_mappings(mappings);
        st.add_switches(drained.switches);
        st.add_samples(drained.samples);
        if let Some(h) = heap_now {
            st.add_heap(h);
        }
        drop(st);
        if stopping {
            return;
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn run(shared: &Shared, _log: &TraceLog, _perf: Option<()>, heap: bool, forward: Option<Forward>) {
    loop {
        let stopping = wait(shared);
        if let Some(mut h) = heap.then(crate::alloc::heap_totals).flatten() {
            h.time_ns = monotonic_ns();
            if let Some(f) = &forward {
                let status = stopping.then(|| lock(&shared.store).status.clone());
                f(Arc::new(SystemBatch { status, heap: vec![h], ..Default::default() }));
            }
            lock(&shared.store).add_heap(h);
        }
        if stopping {
            return;
        }
    }
}

/// Whether `tid` is a thread of this process: `tgkill` with signal 0 checks that thread `tid`
/// is in this process's thread group, and sends nothing. A perf event opened on a thread is not
/// limited to the opener's process, so this is checked before each one.
#[cfg(target_os = "linux")]
fn is_ours(tid: u32) -> bool {
    let Ok(tid) = libc::pid_t::try_from(tid) else { return false };
    // SAFETY: getpid cannot fail; tgkill with signal 0 delivers nothing and touches no memory.
    unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, 0) == 0 }
}

/// A watched thread: its tenant (to tell it from a later thread with the same id) and its ring.
#[cfg(target_os = "linux")]
struct Watched {
    tenant: Arc<crate::record::tenant::Tenant>,
    ring: perf::PerfRing,
}

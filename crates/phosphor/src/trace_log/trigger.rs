//! Triggered dumps: the flight recorder dumps itself when something is slow.
//!
//! # Brief overview
//!
//! * A running Ring trace arms [`Trigger`]s (from its `TraceConfig`, or later with
//!   [`TraceLog::arm_trigger`]). Each takes one of the process's [`MAX_TRIGGERS`] *slots*: its
//!   threshold in `SLOTS[k]`, and in the registry a selector that sets bit k of the `triggers`
//!   mask, and the armed bit of the state word, of every callsite it watches.
//! * An event of an armed callsite is written as usual, then `on_armed` (`on_slice` for a scope; out of line) reads the
//!   callsite's mask and the thresholds of its slots. The value is already at hand: a scope's
//!   duration (read with its one clock read), the counter's value, the log's level.
//! * A firing marks the trace with an instant `phosphor/trigger` on the firing thread (arguments:
//!   the trigger's number and the value that fired it) and opens a *window*: it sets the log's
//!   `pending` word and wakes the log's `phosphor-trigger` thread (a futex wake: no lock, no
//!   wait). A firing while a window is pending *merges* into it (marked, counted, one dump). A
//!   firing when the rate limit allows no dump is counted as rate-limited and not marked.
//! * The thread waits out the post-trigger window ([`PostWindow`]: events or time), takes a
//!   [`TraceLog::snapshot`] (pinned copies: no tenant lock, no dropped event) and saves it to
//!   `DIR/trigger-{n}.phos` through a temporary file and a rename.
//!
//! # Rate limit and hand-off
//!
//! The log's `Gate` (`registry/trigger_gate.rs`, loom model 13) holds the pending window, the
//! wake word and the rate limit: at most N dumps in any 60 s, one compare-and-swap.
//!
//! # Orderings
//!
//! A slot's threshold and word are stored before its selector reaches the registry, whose lock
//! and Release store of each callsite's mask publish them to `on_armed`'s Acquire load of the
//! mask. Disarming clears the selector (and so the masks) first, then the slot. A firing that
//! loaded a mask before that may read the emptied slot (skipped) or, if the slot was armed again
//! at once, a new trigger of another log (skipped: the slot names its log) or of the same log;
//! slots are taken round-robin, so that needs 64 arms meanwhile.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use phosphor_format::{ArgType, Meta, Record};

use crate::error::{Error, ErrorKind};
use crate::record::buffer::TraceBuffer;
use crate::record::clock::ClockKind;
use crate::record::tenant::Fill;
use crate::record::thread::BusyGuard;
pub use crate::registry::callsite::MAX_TRIGGERS;
use crate::registry::callsite::{self, Callsite};
use crate::registry::trigger_gate::{Firing, Gate};
use crate::registry::MAX_LOGS;
use crate::trace_log::attach::{ArmedHooks, Seen, ARMED};
pub use crate::trace_log::trigger_spec::{Condition, PostWindow, Trigger};
use crate::TraceLog;

/// The marker of a firing: an instant on the firing thread.
pub(crate) static MARKER: Callsite = Callsite::new(crate::CallsiteMeta::new(
    "phosphor",
    "trigger",
    phosphor_format::Phase::Instant,
    ["trigger", "value"],
    file!(),
    line!(),
));

// ---- The slots ----

/// One trigger slot. `word` packs:
///
/// ```text
/// bits  0..32  the trigger's number in its log (from 1)
/// bits 32..37  the log's slot
/// bits 40..42  what it watches: 0 scopes, 1 values, 2 logs
/// bit  63      in use
/// ```
///
/// `threshold`: ticks (scopes) or `f64` bits (values); unused for logs.
struct Slot {
    word: AtomicU64,
    threshold: AtomicU64,
}

const IN_USE: u64 = 1 << 63;
const SCOPES: u64 = 0;
const VALUES: u64 = 1;
const LOGS: u64 = 2;

static SLOTS: [Slot; MAX_TRIGGERS] =
    [const { Slot { word: AtomicU64::new(0), threshold: AtomicU64::new(0) } }; MAX_TRIGGERS];

/// Where the next slot search starts (round-robin, see the module docs).
static NEXT_SLOT: AtomicU32 = AtomicU32::new(0);

/// Takes a free slot for trigger `number` of the log in `log_slot`, stores its threshold, and
/// hands its selector to the registry.
fn take_slot(log: &TraceLog, number: u32, trigger: &Trigger) -> Result<usize, Error> {
    let (kind, threshold) = match trigger.condition() {
        Condition::SlowerThan(d) => (SCOPES, log.duration_to_ticks(d)),
        Condition::Above(v) => (VALUES, v.to_bits()),
        Condition::LogAtLeast(_) => (LOGS, 0),
    };
    let word = IN_USE | (kind << 40) | (u64::from(log.slot()) << 32) | u64::from(number);
    // Relaxed: only which slot we start from; the compare-and-swap decides.
    let start = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) as usize;
    for i in 0..MAX_TRIGGERS {
        let k = (start + i) % MAX_TRIGGERS;
        let slot = &SLOTS[k];
        // Relaxed: the claim only has to be exclusive; the threshold and word are published by
        // the registry (see the module docs).
        if slot.word.compare_exchange(0, IN_USE, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            slot.threshold.store(threshold, Ordering::Relaxed);
            slot.word.store(word, Ordering::Relaxed);
            callsite::set_trigger(k, Some(trigger.selector()));
            return Ok(k);
        }
    }
    Err(Error::new(ErrorKind::Trigger(format!("all {MAX_TRIGGERS} trigger slots of the process are armed"))))
}

fn free_slot(k: usize) {
    callsite::set_trigger(k, None);
    // Relaxed: after the registry no longer points any callsite here (see the module docs).
    SLOTS[k].word.store(0, Ordering::Relaxed);
}

// ---- Per log: the pending window, the rate limit, the figures ----

struct LogState {
    /// The pending window, the wake word the dump thread waits on, the rate limit.
    gate: Gate,
    fired: AtomicU64,
    merged: AtomicU64,
    rate_limited: AtomicU64,
    failed: AtomicU64,
    /// The dumps written, for the status (the dump thread's; never touched by a firing).
    dumps: Mutex<Vec<TriggerDump>>,
}

static LOG_STATES: [LogState; MAX_LOGS] = [const {
    LogState {
        gate: Gate::new(),
        fired: AtomicU64::new(0),
        merged: AtomicU64::new(0),
        rate_limited: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        dumps: Mutex::new(Vec::new()),
    }
}; MAX_LOGS];

fn state(log: &TraceLog) -> &'static LogState {
    &LOG_STATES[log.slot() as usize]
}

static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// Nanoseconds since the first call (a monotonic clock for the rate limit).
fn mono_ns() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Every log's list of dumps, held across a `fork` (see `fork.rs`): a `phosphor-trigger` thread
/// holds one while it adds a dump, and a child forked then would find it held for ever (its
/// first `start` clears the list). A leaf: taken after the control lock (`Armed::new`), and
/// nothing is taken under it (its holders are busy or hold the control lock).
#[cfg(unix)]
struct ForkLocks(#[allow(dead_code)] Vec<std::sync::MutexGuard<'static, Vec<TriggerDump>>>);

#[cfg(unix)]
impl ForkLocks {
    fn take() -> Box<dyn std::any::Any> {
        Box::new(ForkLocks(LOG_STATES.iter().map(|st| lock_for_fork(&st.dumps)).collect()))
    }
}

/// The triggers' part in the fork handlers: the rate limit's clock settled, the dump lists held.
#[cfg(unix)]
static FORK_HOOKS: crate::trace_log::fork::ForkHooks = crate::trace_log::fork::ForkHooks {
    settle: Some(settle_before_fork),
    take: Some(ForkLocks::take),
    in_child_first: None,
};

/// The triggers' checks, for the out-of-line path of an armed callsite.
static ARMED_HOOKS: ArmedHooks = ArmedHooks { on_armed, on_slice };

/// Plugs the triggers' hooks into the core before a trace can arm one (`triggers.rs`'s
/// attacher): the checks of armed callsites, and the fork handlers' part.
pub(crate) fn plug_hooks() {
    ARMED.fill(&ARMED_HOOKS);
    #[cfg(unix)]
    crate::trace_log::fork::participate(&FORK_HOOKS);
}

/// The list of `st`'s dumps, locked. A fork holds every list (`ForkLocks`), so the fork handlers
/// know of them before the first is taken.
fn lock_dumps(st: &'static LogState) -> std::sync::MutexGuard<'static, Vec<TriggerDump>> {
    #[cfg(unix)]
    crate::trace_log::fork::participate(&FORK_HOOKS);
    st.dumps.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(unix)]
fn lock_for_fork(m: &'static Mutex<Vec<TriggerDump>>) -> std::sync::MutexGuard<'static, Vec<TriggerDump>> {
    #[cfg(all(feature = "test-hooks", target_os = "linux"))]
    if let Err(std::sync::TryLockError::WouldBlock) = m.try_lock() {
        use crate::trace_log::test_hooks::{notify, Point};
        notify(Point::ForkWaitsForTriggerList);
    }
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Before a `fork`: makes sure the rate limit's clock is set, so that a child forked while a
/// firing thread was setting it does not wait for that thread for ever (see `fork.rs`).
#[cfg(unix)]
fn settle_before_fork() {
    mono_ns();
}

impl LogState {
    /// Wakes the dump thread after the gate's wake word was bumped.
    fn wake(&self) {
        futex_wake(self.gate.wake_word());
    }
}

#[cfg(target_os = "linux")]
fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a valid, aligned u32 that lives for the program (a static).
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, 1) };
}

#[cfg(windows)]
fn futex_wake(word: &AtomicU32) {
    // SAFETY: any address may be woken; `word` is a valid static u32.
    unsafe { windows_sys::Win32::System::Threading::WakeByAddressSingle(word.as_ptr().cast()) };
}

#[cfg(not(any(target_os = "linux", windows)))]
fn futex_wake(_: &AtomicU32) {}

/// Sleeps until `word` is no longer `seen`, or `timeout` passes (spurious returns are fine: the
/// caller loops).
#[cfg(target_os = "linux")]
fn futex_wait(word: &AtomicU32, seen: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT on a valid static u32, with a valid relative timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            seen,
            &ts as *const libc::timespec,
        )
    };
}

#[cfg(windows)]
fn futex_wait(word: &AtomicU32, seen: u32, timeout: Duration) {
    let ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX - 1);
    // SAFETY: `word` is a valid static u32 and `seen` a u32 of the same size to compare with;
    // a timeout or spurious return is fine (the caller loops).
    unsafe {
        windows_sys::Win32::System::Threading::WaitOnAddress(
            word.as_ptr().cast(),
            (&seen as *const u32).cast(),
            std::mem::size_of::<u32>(),
            ms,
        )
    };
}

#[cfg(not(any(target_os = "linux", windows)))]
fn futex_wait(_: &AtomicU32, _: u32, timeout: Duration) {
    std::thread::sleep(timeout.min(Duration::from_millis(5)));
}

// ---- The check, on the recording thread ----

/// The bits of a slot's word that say whether it is a live trigger of a given kind and log.
const MATCH_BITS: u64 = IN_USE | (3 << 40) | (0x1f << 32);

/// What `MATCH_BITS` of a live trigger of `kind` in `log`'s slot hold.
#[inline(always)]
fn expected(log: &TraceLog, kind: u64) -> u64 {
    IN_USE | (kind << 40) | (u64::from(log.slot()) << 32)
}

/// The trigger check of an armed scope's slice (already written), `ticks` long: a mask load and,
/// per watching slot, a word and a threshold; the firing is out of line again. Out of line itself
/// (and small, so that its call costs little), so that the unarmed path stays one bit test.
#[inline(never)]
fn on_slice(log: &TraceLog, cs: &'static Callsite, ticks: u64) {
    check_slice(log, cs, ticks);
}

#[inline(always)]
fn check_slice(log: &TraceLog, cs: &'static Callsite, ticks: u64) {
    let expect = expected(log, SCOPES);
    let mut mask = cs.trigger_mask();
    while mask != 0 {
        let k = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        // Relaxed: ordered by the Acquire load of the mask (see the module docs).
        let word = SLOTS[k].word.load(Ordering::Relaxed);
        if word & MATCH_BITS == expect && ticks > SLOTS[k].threshold.load(Ordering::Relaxed) {
            return fire_slice(log, word as u32, ticks);
        }
    }
}

#[cold]
#[inline(never)]
fn fire_slice(log: &TraceLog, number: u32, ticks: u64) {
    fire(log, number, log.ticks_to_ns(ticks));
}

/// The trigger check of an armed callsite's other events (already written): a counter's or data
/// point's value, a log, or a slice whose duration the event carries (`trace_complete!`). Out of
/// line, so that the unarmed path stays one bit test.
#[cold]
#[inline(never)]
fn on_armed(log: &TraceLog, cs: &'static Callsite, seen: Seen) {
    let (kind, value) = match seen {
        Seen::Ticks(t) => return check_slice(log, cs, t),
        Seen::Value(ty, w) => match as_f64(ty, w) {
            Some(v) => (VALUES, v),
            None => return,
        },
        Seen::Log => (LOGS, cs.meta().level.map_or(0.0, |l| f64::from(l as u8))),
    };
    let expect = expected(log, kind);
    let mut mask = cs.trigger_mask();
    while mask != 0 {
        let k = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        // Relaxed: ordered by the Acquire load of the mask (see the module docs).
        let word = SLOTS[k].word.load(Ordering::Relaxed);
        if word & MATCH_BITS != expect {
            continue;
        }
        // A log trigger watches only the logs of its level or more severe: no threshold.
        if kind == LOGS || value > f64::from_bits(SLOTS[k].threshold.load(Ordering::Relaxed)) {
            return fire(log, word as u32, value);
        }
    }
}

fn as_f64(ty: ArgType, w: u64) -> Option<f64> {
    match ty {
        ArgType::U64 | ArgType::Bool => Some(w as f64),
        ArgType::I64 => Some(w as i64 as f64),
        ArgType::F64 => Some(f64::from_bits(w)),
        _ => None,
    }
}

/// Trigger `number` fired with `value` (ns for a scope, the value, or the log's level code).
#[cold]
#[inline(never)]
fn fire(log: &TraceLog, number: u32, value: f64) {
    let st = state(log);
    // Relaxed: statistics.
    st.fired.fetch_add(1, Ordering::Relaxed);
    match st.gate.fire(number, mono_ns()) {
        Firing::Opened => {
            mark(log, number, value);
            st.wake();
        }
        Firing::Merged => {
            st.merged.fetch_add(1, Ordering::Relaxed);
            mark(log, number, value);
        }
        Firing::RateLimited => {
            st.rate_limited.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The marker event's single record.
#[derive(Clone, Copy)]
struct MarkerFill {
    id: u32,
    number: u32,
    value: f64,
}

impl Fill for MarkerFill {
    fn fill(self, dst: *mut std::mem::MaybeUninit<Record>, clock: ClockKind) {
        let meta = Meta::new(0, ArgType::U64, ArgType::F64);
        let words = [u64::from(self.number), self.value.to_bits()];
        let ts = crate::record::clock::now(clock);
        // SAFETY: `Tenant::write` hands us one writable, unpublished record slot.
        unsafe { (*dst).write(Record::new(ts, self.id, meta, words)) };
    }

    fn callsite(&self) -> u32 {
        self.id
    }
}

fn mark(log: &TraceLog, number: u32, value: f64) {
    // Registered when the first trigger was armed, so this reads the id without a lock.
    if let Some(id) = callsite::registered_id(MARKER.state()) {
        log.write_event(1, MarkerFill { id, number, value });
    }
}

// ---- Per trace: the armed triggers and the dump thread ----

/// A dump a trigger wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TriggerDump {
    /// The file.
    pub path: PathBuf,
    /// The number of the trigger that opened its window.
    pub trigger: u32,
    /// The events it holds.
    pub events: u64,
}

/// What [`TraceLog::triggers`] reports: the armed triggers and what they did in this trace.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct TriggerStatus {
    /// The armed triggers, by number.
    pub armed: Vec<(u32, Trigger)>,
    /// Firings: events that met an armed trigger's condition.
    pub fired: u64,
    /// Firings that joined a window already open (marked; dumped with it).
    pub merged: u64,
    /// Firings that found the rate limit spent (not marked, no dump).
    pub rate_limited: u64,
    /// Dumps that could not be taken or written (the error went to stderr).
    pub failed: u64,
    /// Whether a window is open now.
    pub pending: bool,
    /// The dumps written, in order.
    pub dumps: Vec<TriggerDump>,
    /// Where dumps go.
    pub dir: Option<PathBuf>,
}

impl TriggerStatus {
    /// Markers written: the firings that opened or joined a window.
    pub fn marked(&self) -> u64 {
        self.fired - self.rate_limited
    }
}

/// The dump settings of a trace (from its `TraceConfig`).
#[derive(Clone, Debug)]
pub(crate) struct DumpSettings {
    pub(crate) dir: Option<PathBuf>,
    pub(crate) window: PostWindow,
    pub(crate) per_minute: u32,
}

/// A running trace's triggers: what is armed, and its dump thread.
pub(crate) struct Armed {
    settings: DumpSettings,
    /// (number, trigger, slot).
    armed: Vec<(u32, Trigger, usize)>,
    next_number: u32,
    thread: Option<DumpThread>,
    /// `stop` has begun: no new dump thread.
    closing: bool,
    /// This trace's stop flag, which its dump thread reads: set by [`finish_thread`].
    stop: Arc<AtomicBool>,
    /// This trace's buffer, which its dump thread counts events in.
    buffer: BufPtr,
}

/// A trace's dump thread and its stop flag (see [`finish_thread`]). The flag is the trace's own,
/// not the log's: a stop that ends this thread never touches another trace's.
pub(crate) struct DumpThread {
    handle: std::thread::JoinHandle<()>,
    stop: Arc<AtomicBool>,
}

/// The running trace's buffer, which its dump thread reads (`live_events`).
#[derive(Clone, Copy)]
struct BufPtr(*const TraceBuffer);

// SAFETY: `TraceBuffer` is Sync; the buffer is the dump thread's own trace's, which `stop` (or a
// failed `start`) frees only after joining the thread (`finish_thread`), and a fork child, which
// frees it without joining, has no dump thread.
unsafe impl Send for BufPtr {}

/// The log the dump thread snapshots.
struct LogPtr(*const TraceLog);

// SAFETY: `TraceLog` is Sync; the pointer is only dereferenced while the thread runs, and `stop`
// (which `TraceLog`'s Drop calls) joins the thread before the log can go away. A `TraceLog` never
// moves: it is a static or inside an `Arc`.
unsafe impl Send for LogPtr {}

impl Armed {
    /// The settings of a new trace of `log` whose buffer is `buffer`, nothing armed yet; resets
    /// the log's figures.
    pub(crate) fn new(log: &TraceLog, settings: DumpSettings, buffer: *const TraceBuffer) -> Armed {
        let st = state(log);
        // Relaxed: reset before any trigger of this trace is armed; the registry's lock orders
        // them before any firing.
        for c in [&st.fired, &st.merged, &st.rate_limited, &st.failed] {
            c.store(0, Ordering::Relaxed);
        }
        st.gate.reset(settings.per_minute);
        lock_dumps(st).clear();
        Armed {
            settings,
            armed: Vec::new(),
            next_number: 1,
            thread: None,
            closing: false,
            stop: Arc::new(AtomicBool::new(false)),
            buffer: BufPtr(buffer),
        }
    }

    /// Arms `trigger` on `log`'s running trace (the caller checked its mode); returns its number.
    /// `dir` is used if the trace has no dump directory yet.
    pub(crate) fn arm(&mut self, log: &TraceLog, trigger: Trigger, dir: Option<&Path>) -> Result<u32, Error> {
        if self.settings.dir.is_none() {
            self.settings.dir = dir.map(Path::to_path_buf);
        }
        let Some(dir) = self.settings.dir.clone() else {
            return Err(Error::new(ErrorKind::Trigger(
                "no directory for the dumps: set TraceConfig::trigger_dir".into(),
            )));
        };
        if self.closing {
            return Err(Error::new(ErrorKind::Trigger("the trace is stopping".into())));
        }
        if !cfg!(target_os = "linux") {
            return Err(Error::new(ErrorKind::Trigger("triggered dumps need Linux".into())));
        }
        std::fs::create_dir_all(&dir).map_err(|e| {
            Error::new(ErrorKind::Trigger(format!("the dump directory {}: {e}", dir.display())))
        })?;
        MARKER.id();
        if self.thread.is_none() {
            let (ptr, window) = (LogPtr(std::ptr::from_ref(log)), self.settings.window);
            let (stop, buffer) = (self.stop.clone(), self.buffer);
            let handle = crate::record::internal_thread::Builder::new()
                .name("phosphor-trigger".into())
                .spawn(move || {
                    let (ptr, buffer) = (ptr, buffer);
                    // SAFETY: see `LogPtr`.
                    dump_thread(unsafe { &*ptr.0 }, &dir, window, &stop, buffer)
                })
                .map_err(|e| Error::new(ErrorKind::Trigger(format!("spawning the dump thread: {e}"))))?;
            self.thread = Some(DumpThread { handle, stop: self.stop.clone() });
        }
        let number = self.next_number;
        let k = take_slot(log, number, &trigger)?;
        self.next_number += 1;
        self.armed.push((number, trigger, k));
        Ok(number)
    }

    /// Disarms trigger `number` (`None`: all); returns how many were.
    pub(crate) fn disarm(&mut self, number: Option<u32>) -> usize {
        let before = self.armed.len();
        self.armed.retain(|(n, _, k)| {
            let keep = number.is_some_and(|x| x != *n);
            if !keep {
                free_slot(*k);
            }
            keep
        });
        before - self.armed.len()
    }

    /// The dump thread, for [`finish_thread`] (after a failed start).
    pub(crate) fn take_thread(&mut self) -> Option<DumpThread> {
        self.thread.take()
    }

    /// `stop` begins: no dump thread may start from now on; the running one, for
    /// [`finish_thread`].
    pub(crate) fn close(&mut self) -> Option<DumpThread> {
        self.closing = true;
        self.thread.take()
    }

    pub(crate) fn status(&self, log: &TraceLog) -> TriggerStatus {
        let mut s = status_of(log);
        s.armed = self.armed.iter().map(|(n, t, _)| (*n, t.clone())).collect();
        s.dir = self.settings.dir.clone();
        s
    }
}

/// Ends a trace's dump thread: it dumps a pending window first. Without the control lock.
pub(crate) fn finish_thread(log: &TraceLog, thread: DumpThread) {
    let st = state(log);
    // Release: pairs with the dump thread's Acquire load (see `dump_thread`); the bump's Release
    // then wakes it.
    thread.stop.store(true, Ordering::Release);
    st.gate.bump();
    st.wake();
    let _ = thread.handle.join();
}

/// The figures of `log`'s triggers (nothing armed: the trace stopped).
pub(crate) fn status_of(log: &TraceLog) -> TriggerStatus {
    let st = state(log);
    // Relaxed: statistics.
    let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
    TriggerStatus {
        armed: Vec::new(),
        fired: l(&st.fired),
        merged: l(&st.merged),
        rate_limited: l(&st.rate_limited),
        failed: l(&st.failed),
        pending: st.gate.is_pending(),
        dumps: lock_dumps(st).clone(),
        dir: None,
    }
}

/// The dump thread of one trace: waits for a window, waits it out, dumps.
fn dump_thread(log: &TraceLog, dir: &Path, window: PostWindow, stop: &AtomicBool, buffer: BufPtr) {
    let st = state(log);
    let mut n = 0u64;
    loop {
        let (seen, pending) = st.gate.observe();
        // Acquire: pairs with `finish_thread`'s Release, so a window opened before `stop` is
        // visible to a `pending` read after this load. The read above may predate it: a stop is
        // acted on only after a second look (loom model 13 found a window lost without it). The
        // stop is read after `seen`, so a stop set later changes the wake word we sleep on.
        let stopping = stop.load(Ordering::Acquire);
        if pending == 0 {
            if stopping {
                if st.gate.observe().1 != 0 {
                    continue;
                }
                return;
            }
            futex_wait(st.gate.wake_word(), seen, Duration::from_secs(1));
            continue;
        }
        wait_window(st, window, stop, buffer);
        // Firings from here on open the next window; theirs may also be in this copy.
        st.gate.close_window();
        n += 1;
        let path = dir.join(format!("trigger-{n}.phos"));
        let saved = log.snapshot().map_err(|e| e.to_string()).and_then(|t| {
            let events = t.stats().recorded;
            save(t, &path).map(|()| events)
        });
        match saved {
            Ok(events) => {
                // Busy while the list is held (it allocates): an event an instrumented allocator
                // records meanwhile is dropped rather than attach, which would take a control lock
                // under the list, the reverse of a fork's `prepare` (see `ForkLocks`).
                let _busy = BusyGuard::enter();
                let mut dumps = lock_dumps(st);
                #[cfg(all(feature = "test-hooks", target_os = "linux"))]
                crate::trace_log::test_hooks::reached(crate::trace_log::test_hooks::Point::TriggerDumpList);
                dumps.push(TriggerDump { path, trigger: pending as u32, events });
            }
            Err(e) => {
                // Relaxed: statistics.
                st.failed.fetch_add(1, Ordering::Relaxed);
                eprintln!("phosphor: the trigger dump {} could not be written: {e}", path.display());
            }
        }
    }
}

#[cfg(target_os = "linux")]
fn save(trace: crate::Trace, path: &Path) -> Result<(), String> {
    crate::recorder::save_atomically(trace, path)
}

#[cfg(not(target_os = "linux"))]
fn save(trace: crate::Trace, path: &Path) -> Result<(), String> {
    trace.save(path).map_err(|e| e.to_string())
}

/// Waits out the post-trigger window, or until the trace stops.
fn wait_window(st: &LogState, window: PostWindow, stop: &AtomicBool, buffer: BufPtr) {
    let begin = Instant::now();
    let base = live_events(buffer);
    loop {
        let (seen, _) = st.gate.observe();
        // Relaxed: the stop only cuts the window short; `dump_thread` reads it again.
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let (done, left) = match window {
            PostWindow::Time(d) => (begin.elapsed() >= d, d.saturating_sub(begin.elapsed())),
            PostWindow::Events(k) => (
                live_events(buffer).saturating_sub(base) >= k || begin.elapsed() >= PostWindow::MAX_WAIT,
                // Polled: the writers tell nobody about their events.
                Duration::from_millis(1),
            ),
        };
        if done {
            return;
        }
        futex_wait(st.gate.wake_word(), seen, left.min(Duration::from_millis(100)));
    }
}

/// The events this dump thread's trace's buffer has taken so far.
fn live_events(buffer: BufPtr) -> u64 {
    // SAFETY: the trace's own buffer (never the log's current pointer, which a later trace may
    // have replaced), alive for as long as this thread runs: see `BufPtr`. The thread was spawned
    // after `start` initialised it, which orders its construction before this read.
    unsafe { &*buffer.0 }.live_events()
}

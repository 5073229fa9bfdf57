//! Test-only pause points (feature `test-hooks`, which only this crate's own tests turn on, through
//! their dev-dependency on it): a test *arms* a point, the runtime thread that reaches it stops
//! there until the test *releases* it, and meanwhile the test does what must be shown safe at that
//! moment (a `fork`, ...). Races become deterministic without a sleep that passes by luck.
//!
//! A point is a futex word: 0 idle, 1 armed, 2 a thread is held there, 3 released. Reaching an
//! armed point is async-signal-safe (atomics and `futex` only), so the crash handler has one too.
//! A process forked while a thread is held inherits the word at 2 but not the thread: a thread of
//! the child that reaches the point later does not stop (only an armed point holds).
//!
//! Nothing here is on the recording path: the points sit in the crash handler and the trigger
//! dump thread, and [`write_calling`] is a separate entry to `Tenant::write`.
//!
//! The second half is per log: a hook set for one log ([`set`]) runs at chosen points ([`Pause`])
//! of its `start`, `stop` and attach, so that a test can hold a call there (a second `stop`, a
//! `start` during a stop) and show the race deterministically.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::record::clock::ClockKind;
use crate::record::tenant::Fill;
use crate::registry::callsite::Callsite;
use crate::TraceLog;

/// Where a thread can be held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Point {
    /// In the fatal-signal handler, on the thread that won the crash dump, before it writes it.
    CrashDump,
    /// On the `phosphor-trigger` thread, holding its log's list of dumps, before it adds one.
    TriggerDumpList,
    /// In a fork's `prepare`, about to wait for a list of dumps that another thread holds. Only
    /// signalled (`notify`): nothing is held there.
    ForkWaitsForTriggerList,
}

const IDLE: u32 = 0;
const ARMED: u32 = 1;
const HELD: u32 = 2;
const RELEASED: u32 = 3;

static WORDS: [AtomicU32; 3] = [AtomicU32::new(IDLE), AtomicU32::new(IDLE), AtomicU32::new(IDLE)];

fn word(p: Point) -> &'static AtomicU32 {
    &WORDS[p as usize]
}

fn futex(w: &AtomicU32, op: libc::c_int, val: u32, timeout: Option<&libc::timespec>) {
    let ts = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: a futex operation on a live static word, with a valid timespec or none.
    unsafe { libc::syscall(libc::SYS_futex, w.as_ptr(), op | libc::FUTEX_PRIVATE_FLAG, val, ts) };
}

/// Arms `p`: the next thread that reaches it is held there.
pub fn arm(p: Point) {
    // SeqCst: plain; a test arms before it sets off the thread that reaches the point.
    word(p).store(ARMED, Ordering::SeqCst);
}

/// Waits (at most `limit`) until a thread is held at `p`; whether one is.
pub fn wait_held(p: Point, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        // SeqCst: pairs with the held thread's store; polling a state, bounded by the deadline.
        let w = word(p).load(Ordering::SeqCst);
        if w == HELD {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        let tick = libc::timespec { tv_sec: 0, tv_nsec: 10_000_000 };
        futex(word(p), libc::FUTEX_WAIT, w, Some(&tick));
    }
}

/// Lets the thread held at `p` (if any) go on, and disarms `p`.
pub fn release(p: Point) {
    // SeqCst: see `arm`.
    word(p).store(RELEASED, Ordering::SeqCst);
    futex(word(p), libc::FUTEX_WAKE, i32::MAX as u32, None);
}

/// At point `p`: if it is armed, the calling thread is held here until [`release`].
/// Async-signal-safe.
pub(crate) fn reached(p: Point) {
    let w = word(p);
    // SeqCst: see `arm`. Only an armed point holds, and only one thread.
    if w.compare_exchange(ARMED, HELD, Ordering::SeqCst, Ordering::SeqCst).is_err() {
        return;
    }
    futex(w, libc::FUTEX_WAKE, i32::MAX as u32, None);
    // SeqCst: see `arm`.
    while w.load(Ordering::SeqCst) == HELD {
        futex(w, libc::FUTEX_WAIT, HELD, None);
    }
}

/// At point `p`: if it is armed, marks it reached (as if held, for [`wait_held`]) and goes on.
pub(crate) fn notify(p: Point) {
    // SeqCst: see `arm`.
    if word(p).compare_exchange(ARMED, HELD, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
        futex(word(p), libc::FUTEX_WAKE, i32::MAX as u32, None);
    }
}

/// The event [`write_calling`] writes.
static HOOKED: Callsite = Callsite::new(crate::CallsiteMeta::new(
    "phosphor-test",
    "hooked",
    phosphor_format::Phase::Instant,
    ["", ""],
    file!(),
    line!(),
));

/// A one-record fill that calls `during` first, inside `Tenant::write`'s critical section.
#[derive(Clone, Copy)]
struct Calling {
    id: u32,
    during: fn(),
}

impl Fill for Calling {
    fn fill(self, dst: *mut std::mem::MaybeUninit<phosphor_format::Record>, clock: ClockKind) {
        (self.during)();
        let meta =
            phosphor_format::Meta::new(0, phosphor_format::ArgType::None, phosphor_format::ArgType::None);
        let ts = crate::record::clock::now(clock);
        // SAFETY: `Tenant::write` hands us one writable, unpublished record slot.
        unsafe { (*dst).write(phosphor_format::Record::new(ts, self.id, meta, [0; 2])) };
    }

    fn callsite(&self) -> u32 {
        self.id
    }
}

/// Records one `phosphor-test`/`hooked` instant into `log` (as the macros would, its check
/// aside), calling `during` while the calling thread is inside `Tenant::write`, holding its
/// tenant's slave lock with the event half written: as a signal handler that interrupted the
/// write would run.
pub fn write_calling(log: &TraceLog, during: fn()) {
    log.write_event(1, Calling { id: HOOKED.id(), during });
}

/// How many running buffers a forked child kept rather than freed because the fork came from
/// inside a write into them (see `fork.rs`), in this process and the parents it was forked from.
pub fn buffers_kept_at_fork() -> u64 {
    crate::trace_log::fork::buffers_kept()
}

// --- Per-log hooks: `start`, `stop` and attach. ---

/// Where a hook runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pause {
    /// `stop` has made itself the trace's stopper and is about to join the trigger dump thread
    /// and the system collector, without the control lock.
    StopJoining,
    /// A `stop` or `start` found another thread's stop in progress and is about to wait for it.
    /// Runs under the control lock, so the waiter is asleep before that stop can end.
    WaitingForStop,
    /// The calling thread is attaching a tenant in the log: it is marked busy, its control lock
    /// not held.
    Attaching,
}

type Hook = Arc<dyn Fn(Pause) + Send + Sync>;

/// The hooks, by the address of their log.
static HOOKS: Mutex<Vec<(usize, Hook)>> = Mutex::new(Vec::new());

/// Runs `hook` at every [`Pause`] of `log` from now on (`None`: no more).
pub fn set(log: &TraceLog, hook: Option<Hook>) {
    let key = std::ptr::from_ref(log) as usize;
    let mut hooks = HOOKS.lock().unwrap_or_else(|p| p.into_inner());
    hooks.retain(|(k, _)| *k != key);
    hooks.extend(hook.map(|h| (key, h)));
}

/// Runs `hook` on every thread that takes the callsite registry's lock, with the lock held
/// (process-wide: the hook tells its own thread apart).
pub fn set_registry_hook(hook: Option<fn()>) {
    *crate::registry::callsite::HELD_HOOK.lock().unwrap_or_else(|p| p.into_inner()) = hook;
}

/// Runs `hook` on every thread that holds the thread-name table's lock in `set_thread_name`, with
/// the lock held (process-wide: the hook tells its own thread apart).
pub fn set_names_hook(hook: Option<fn()>) {
    *crate::record::thread::NAMES_HOOK.lock().unwrap_or_else(|p| p.into_inner()) = hook;
}

/// `log` reached `at`: runs its hook, if it has one (without the hooks' lock).
pub(crate) fn paused(log: &TraceLog, at: Pause) {
    let key = std::ptr::from_ref(log) as usize;
    let hook = HOOKS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, h)| h.clone());
    if let Some(hook) = hook {
        hook(at);
    }
}

//! Per-thread state: the thread id and this thread's tenant in each `TraceLog` slot.
//!
//! The table is a `const`-initialised thread local with no destructor, so reaching it costs only
//! a TLS offset: std checks no lazy-initialisation or destructor state for it. The destructor lives
//! in a second thread local, [`ExitGuard`], which the `#[cold]` attach path touches once per
//! thread; it retires the thread's tenants at exit, handing their chunks back so that a thread that
//! exits mid-trace loses nothing, and marks the table as exiting so later events are counted.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::record::tenant::Tenant;
use crate::registry::MAX_LOGS;
use crate::sync::HookSlot;

/// What a subsystem hears of the busy marker (`ThreadState::enter_busy`, `leave_busy`).
pub(crate) struct BusyHooks {
    /// The thread entered a busy section (the recorder's slow path begins).
    pub(crate) entered: fn(),
    /// It left it.
    pub(crate) left: fn(),
}

/// The allocation counter's (`trace_log/alloc_count.rs` fills it when a trace first starts):
/// what the recorder allocates while busy is its own, not the thread's.
pub(crate) static BUSY: HookSlot<BusyHooks> = HookSlot::empty();

pub(crate) struct ThreadState {
    tid: Cell<u32>,
    /// The exit guard has run: attaching now would leak a tenant, so events are dropped.
    exiting: Cell<bool>,
    /// Set by `register_thread`: use a dedicated tenant even under `ThreadPolicy::Pool`.
    registered: Cell<bool>,
    /// Inside the recorder's own slow paths (attach, registration) or holding a log's control
    /// lock. An event that arrives then (from an allocator or a signal handler) must not take those
    /// locks again: it is dropped and counted, and an exhaustion it finds is deferred.
    busy: Cell<bool>,
    /// Work deferred while the thread was busy, run when it leaves busy (`leave_busy`): the
    /// handling of a Fixed buffer's exhaustion that an event found meanwhile (`trace_log`'s).
    deferred: Cell<Option<fn()>>,
    /// This thread's entry in the name table is its own: set by `set_thread_name`, or synced from
    /// the std name on its first attach (a reused thread id must not keep a dead thread's name).
    named: Cell<bool>,
    /// `Arc::into_raw` of this thread's tenant per slot, or null.
    tenants: [Cell<*const Tenant>; MAX_LOGS],
}

impl ThreadState {
    const fn new() -> ThreadState {
        ThreadState {
            tid: Cell::new(0),
            exiting: Cell::new(false),
            registered: Cell::new(false),
            busy: Cell::new(false),
            deferred: Cell::new(None),
            named: Cell::new(false),
            tenants: [const { Cell::new(std::ptr::null()) }; MAX_LOGS],
        }
    }

    #[inline(always)]
    pub(crate) fn tenant(&self, slot: u32) -> *const Tenant {
        debug_assert!((slot as usize) < MAX_LOGS);
        // SAFETY: slots are handed out below MAX_LOGS (`TraceLog::new` masks them to MAX_LOGS bits
        // and the global log is slot 0), so the index is in bounds.
        unsafe { self.tenants.get_unchecked(slot as usize) }.get()
    }

    /// Replaces the tenant of `slot`, retiring the previous one.
    ///
    /// The previous tenant is not freed here but kept until the thread exits: a signal handler may
    /// be replacing it while the code it interrupted still holds a pointer to it.
    pub(crate) fn set_tenant(&self, slot: u32, t: Arc<Tenant>) -> *const Tenant {
        let p = Arc::into_raw(t);
        let old = self.tenants[slot as usize].replace(p);
        if !old.is_null() {
            // SAFETY: `old` came from `Arc::into_raw` in an earlier call and was owned by this cell.
            let old = unsafe { Arc::from_raw(old) };
            old.retire();
            bury(old);
        }
        p
    }

    /// Forgets the tenant of `slot`, retiring it. As in `set_tenant`, code this call interrupted
    /// (it runs from `register_thread`, which a signal handler could call) may still hold the
    /// pointer, so the tenant is kept in the graveyard until the thread exits; only at the exit
    /// itself, when nothing on this thread can hold it any more, is the reference dropped.
    pub(crate) fn clear_tenant(&self, slot: u32) {
        let old = self.tenants[slot as usize].replace(std::ptr::null());
        if !old.is_null() {
            // SAFETY: `old` came from `Arc::into_raw` and was owned by this cell.
            let old = unsafe { Arc::from_raw(old) };
            old.retire();
            if !self.exiting.get() {
                bury(old);
            }
        }
    }

    #[inline(always)]
    pub(crate) fn tid(&self) -> u32 {
        let t = self.tid.get();
        if t != 0 {
            t
        } else {
            self.init_tid()
        }
    }

    #[cold]
    fn init_tid(&self) -> u32 {
        let t = os_tid();
        self.tid.set(t);
        t
    }

    /// Marks the thread busy (see `busy`); returns false if it already was. [`BUSY`]'s hooks
    /// hear of it (what the recorder allocates meanwhile stays out of the thread's scope counts).
    pub(crate) fn enter_busy(&self) -> bool {
        let entered = !self.busy.replace(true);
        if entered {
            if let Some(hooks) = BUSY.get() {
                (hooks.entered)();
            }
        }
        entered
    }

    /// Clears the busy mark, then runs the work deferred meanwhile (see `deferred`): every busy
    /// section (the control lock, attach, registration, the registry lock, a fork handler) ends
    /// at a point where the thread holds none of the recorder's locks, so that work may take them.
    pub(crate) fn leave_busy(&self) {
        if self.busy.replace(false) {
            if let Some(hooks) = BUSY.get() {
                (hooks.left)();
            }
            if let Some(f) = self.deferred.take() {
                f();
            }
        }
    }

    /// Runs `f` when the thread leaves its busy section (at once if it is not busy).
    pub(crate) fn defer(&self, f: fn()) {
        if self.busy.get() {
            self.deferred.set(Some(f));
        } else {
            f();
        }
    }

    pub(crate) fn is_busy(&self) -> bool {
        self.busy.get()
    }

    pub(crate) fn registered(&self) -> bool {
        self.registered.get()
    }

    pub(crate) fn set_registered(&self) {
        self.registered.set(true);
    }

    /// Makes sure the exit guard will run for this thread. Returns false if the thread is already
    /// exiting (the guard's storage is gone or going).
    pub(crate) fn arm_exit_guard(&self) -> bool {
        !self.exiting.get() && EXIT_GUARD.try_with(|_| ()).is_ok()
    }
}

/// Retires the thread's tenants when the thread exits, and frees the tenants it replaced.
struct ExitGuard {
    graveyard: std::cell::RefCell<Vec<Arc<Tenant>>>,
}

/// Keeps a replaced tenant alive until the thread exits. If the graveyard is busy (a signal
/// handler interrupted this very function) or gone, the tenant is leaked: a bounded cost of a
/// pathological case, rather than a use after free.
fn bury(t: Arc<Tenant>) {
    let mut t = Some(t);
    let _ = EXIT_GUARD.try_with(|g| {
        if let Ok(mut v) = g.graveyard.try_borrow_mut() {
            v.extend(t.take());
        }
    });
    if let Some(t) = t {
        std::mem::forget(t);
    }
}

impl Drop for ExitGuard {
    fn drop(&mut self) {
        let _ = THREAD.try_with(|t| {
            t.exiting.set(true);
            for slot in 0..MAX_LOGS as u32 {
                t.clear_tenant(slot);
            }
        });
    }
}

thread_local! {
    pub(crate) static THREAD: ThreadState = const { ThreadState::new() };
    static EXIT_GUARD: ExitGuard = const { ExitGuard { graveyard: std::cell::RefCell::new(Vec::new()) } };
}

const _: () = assert!(!std::mem::needs_drop::<ThreadState>(), "the hot table must have no destructor");

/// Runs `f` with the calling thread marked busy (see `ThreadState::busy`), for the sections that
/// hold one of the recorder's locks outside a log's control lock (the callsite registry's): an
/// event recorded meanwhile on this thread (an instrumented allocator, a signal handler) then
/// neither registers a callsite nor attaches nor runs a stop callback, each of which could take
/// the lock again. Nested in a busy section, it only runs `f`.
pub(crate) fn busy<R>(f: impl FnOnce() -> R) -> R {
    let _busy = BusyGuard::enter();
    f()
}

/// The kernel's id for the calling thread (`gettid` on Linux, `GetCurrentThreadId` on Windows,
/// `pthread_threadid_np` on Apple's systems, a counter elsewhere).
pub(crate) fn os_tid() -> u32 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid takes no arguments and cannot fail.
        (unsafe { libc::gettid() }) as u32
    }
    #[cfg(windows)]
    {
        // SAFETY: GetCurrentThreadId takes no arguments and cannot fail.
        unsafe { windows_sys::Win32::System::Threading::GetCurrentThreadId() }
    }
    #[cfg(target_vendor = "apple")]
    {
        let mut id = 0u64;
        // SAFETY: a null thread means the calling one; `id` is a valid, writable u64. The id is
        // system-wide and 64-bit (it counts up from boot); its low 32 bits tell this process's
        // threads apart.
        unsafe { libc::pthread_threadid_np(0, &mut id) };
        id as u32
    }
    #[cfg(not(any(target_os = "linux", windows, target_vendor = "apple")))]
    {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(1);
        // Relaxed: only uniqueness matters.
        NEXT.fetch_add(1, Ordering::Relaxed)
    }
}

/// The calling thread's id as recorded in traces.
pub fn current_thread_id() -> u32 {
    THREAD.with(|t| t.tid())
}

static NAMES: Mutex<Option<HashMap<u32, String>>> = Mutex::new(None);

/// Names the calling thread in every trace that includes it. Not for the hot path: it takes a lock
/// and allocates. The thread is marked busy while it holds the table's lock: an event recorded
/// meanwhile (an instrumented allocator) must not attach, which takes a log's control lock, and a
/// fork's `prepare` takes the control locks before this one (`fork.rs`): attaching under it would
/// take them in the other order.
pub fn set_thread_name(name: &str) {
    THREAD.with(|t| {
        let tid = t.tid();
        t.named.set(true);
        let _busy = BusyGuard::enter();
        let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
        #[cfg(all(feature = "test-hooks", target_os = "linux"))]
        if let Some(hook) = *NAMES_HOOK.lock().unwrap_or_else(|p| p.into_inner()) {
            hook();
        }
        names.get_or_insert_with(HashMap::new).insert(tid, name.to_owned());
    });
}

/// Test-only (`test_hooks::set_names_hook`): runs on every thread that holds the name table's
/// lock in `set_thread_name`, with the lock held.
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
pub(crate) static NAMES_HOOK: Mutex<Option<fn()>> = Mutex::new(None);

/// On a thread's first attach, makes its name-table entry its own: the std thread name, or none.
/// An entry left by a dead thread with the same id is replaced.
pub(crate) fn sync_name(t: &ThreadState) {
    if t.named.replace(true) {
        return;
    }
    let tid = t.tid();
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    let names = names.get_or_insert_with(HashMap::new);
    match std::thread::current().name() {
        Some(n) => names.insert(tid, n.to_owned()),
        None => names.remove(&tid),
    };
}

/// The name table's lock, held across a `fork` (see `fork.rs`).
#[cfg(unix)]
pub(crate) struct ForkLock(std::sync::MutexGuard<'static, Option<HashMap<u32, String>>>);

#[cfg(unix)]
impl ForkLock {
    pub(crate) fn take() -> ForkLock {
        ForkLock(NAMES.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Forgets every name: in a child, they are the parent's threads'.
    pub(crate) fn clear(&mut self) {
        *self.0 = None;
    }
}

/// In a child process just forked, on its only thread: its thread id is new (the cached one is
/// the parent thread's), and so is its name-table entry.
#[cfg(unix)]
pub(crate) fn after_fork_in_child() {
    let _ = THREAD.try_with(|t| {
        t.tid.set(0);
        t.named.set(false);
    });
}

/// The calling thread marked busy (see [`ThreadState::enter_busy`]) until dropped, unless it
/// already was: for a lock that a fork's `prepare` takes after the control locks, so that an
/// event recorded under it (an instrumented allocator) is dropped rather than attach, which would
/// take a control lock under it.
pub(crate) struct BusyGuard(bool);

impl BusyGuard {
    pub(crate) fn enter() -> BusyGuard {
        BusyGuard(THREAD.try_with(|t| t.enter_busy()).unwrap_or(false))
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        if self.0 {
            let _ = THREAD.try_with(|t| t.leave_busy());
        }
    }
}

pub(crate) fn thread_names() -> HashMap<u32, String> {
    NAMES.lock().unwrap_or_else(|p| p.into_inner()).clone().unwrap_or_default()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Windows: the recorded id is the system's (`GetCurrentThreadId`), not a counter.
    #[cfg(windows)]
    #[test]
    fn a_thread_is_recorded_under_its_windows_id() {
        let (me, other) = (os_tid(), std::thread::spawn(os_tid).join().unwrap());
        // SAFETY: GetCurrentThreadId takes no arguments and cannot fail.
        assert_eq!(me, unsafe { windows_sys::Win32::System::Threading::GetCurrentThreadId() });
        assert_ne!(me, other);
        assert_eq!(current_thread_id(), me);
    }

    static RAN: AtomicU32 = AtomicU32::new(0);

    fn deferred() {
        // Relaxed: read on this same thread.
        RAN.fetch_add(1, Ordering::Relaxed);
    }

    #[test]
    fn work_deferred_while_busy_runs_when_the_outermost_busy_section_ends() {
        std::thread::spawn(|| {
            THREAD.with(|t| {
                assert!(t.enter_busy());
                t.defer(deferred);
                assert!(!t.enter_busy(), "nested: already busy");
                // A nested section ends without leaving busy (as `ControlGuard` does when it
                // was already busy), so nothing runs yet.
                assert_eq!(RAN.load(Ordering::Relaxed), 0);
                t.leave_busy();
                assert_eq!(RAN.load(Ordering::Relaxed), 1, "ran once the thread left busy");
                t.leave_busy();
                assert_eq!(RAN.load(Ordering::Relaxed), 1, "and only once");
                t.defer(deferred);
                assert_eq!(RAN.load(Ordering::Relaxed), 2, "not busy: runs at once");
            });
            busy(|| THREAD.with(|t| t.defer(deferred)));
            assert_eq!(RAN.load(Ordering::Relaxed), 3, "`busy` leaves busy, and so runs it");
        })
        .join()
        .unwrap();
    }
}

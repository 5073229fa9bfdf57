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

use crate::tenant::Tenant;
use crate::MAX_LOGS;

pub(crate) struct ThreadState {
    tid: Cell<u32>,
    /// The exit guard has run: attaching now would leak a tenant, so events are dropped.
    exiting: Cell<bool>,
    /// Set by `register_thread`: use a dedicated tenant even under `ThreadPolicy::Pool`.
    registered: Cell<bool>,
    /// `Arc::into_raw` of this thread's tenant per slot, or null.
    tenants: [Cell<*const Tenant>; MAX_LOGS],
}

impl ThreadState {
    const fn new() -> ThreadState {
        ThreadState {
            tid: Cell::new(0),
            exiting: Cell::new(false),
            registered: Cell::new(false),
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

    /// Replaces the tenant of `slot`, releasing the previous one.
    pub(crate) fn set_tenant(&self, slot: u32, t: Arc<Tenant>) -> *const Tenant {
        let p = Arc::into_raw(t);
        let old = self.tenants[slot as usize].replace(p);
        if !old.is_null() {
            // SAFETY: `old` came from `Arc::into_raw` in an earlier call and was owned by this cell.
            let old = unsafe { Arc::from_raw(old) };
            old.retire();
        }
        p
    }

    /// Forgets the tenant of `slot`, releasing it.
    pub(crate) fn clear_tenant(&self, slot: u32) {
        let old = self.tenants[slot as usize].replace(std::ptr::null());
        if !old.is_null() {
            // SAFETY: `old` came from `Arc::into_raw` and was owned by this cell.
            unsafe { Arc::from_raw(old) }.retire();
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

/// Retires the thread's tenants when the thread exits.
struct ExitGuard;

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
    static EXIT_GUARD: ExitGuard = const { ExitGuard };
}

const _: () = assert!(!std::mem::needs_drop::<ThreadState>(), "the hot table must have no destructor");

/// The kernel's id for the calling thread.
pub(crate) fn os_tid() -> u32 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid takes no arguments and cannot fail.
        (unsafe { libc::gettid() }) as u32
    }
    #[cfg(not(target_os = "linux"))]
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
/// and allocates.
pub fn set_thread_name(name: &str) {
    let tid = current_thread_id();
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    names.get_or_insert_with(HashMap::new).insert(tid, name.to_owned());
}

/// Records the std thread name of the calling thread unless a name was already set.
pub(crate) fn remember_std_name(tid: u32) {
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    let names = names.get_or_insert_with(HashMap::new);
    if let std::collections::hash_map::Entry::Vacant(e) = names.entry(tid) {
        if let Some(n) = std::thread::current().name() {
            e.insert(n.to_owned());
        }
    }
}

pub(crate) fn thread_names() -> HashMap<u32, String> {
    NAMES.lock().unwrap_or_else(|p| p.into_inner()).clone().unwrap_or_default()
}

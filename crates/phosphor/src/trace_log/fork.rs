//! `fork()` while tracing: the `pthread_atfork` handlers that leave a child's recorder consistent.
//!
//! A child process has one thread, the one that forked, and a copy of everything else: locks that
//! other threads held stay held for ever, a once-cell another thread was setting stays "being
//! set" for ever, a tenant whose thread was in the middle of an event stays slave-locked, the
//! streaming collector's, system collector's and trigger dump's threads are gone (but their sinks'
//! file descriptors and buffered bytes are not), and a file-backed ring is still mapped shared with
//! the parent, which keeps writing it. So:
//!
//! * **prepare** (in the parent, before the fork): first settles the once-cells a child could
//!   need (the membarrier probe of the first attach, the host of a file header, the loaded
//!   objects' ranges of a save, the triggers' rate-limit clock), waiting for a thread that is
//!   setting one; then takes every lock a child could need, in the order the rest of the crate
//!   takes them: the list of live logs, each log's control lock (by slot), the callsite registry,
//!   the thread-name table, then the leaves (the static-string copies, then the subsystems' that
//!   [`participate`]: each log's list of trigger dumps, the control channel's command table), so
//!   no other thread is inside them at the fork
//!   (a leaf's holders are marked busy, so an allocator's event under one never takes the
//!   control locks);
//! * **parent**: releases them;
//! * **child**: forgets the parent's crash-dump owner (`recorder/crash.rs`, a participant; its
//!   owner word also carries the pid, for the children this handler does not run in), releases the locks, and stops every
//!   running trace *in the child* without waiting for anyone: every tenant is unlocked by force
//!   and emptied, the tenants of the threads that did not follow are retired, the forking thread's
//!   tenant is given its new thread id (the system collector watches it by that id), the buffer
//!   (the child's copy) is freed or the ring file unmapped, and the collectors are forgotten
//!   (their threads do not exist; dropping a sink could write the parent's buffered bytes again).
//!   The forking thread's cached thread id is cleared (the child is a new process: its thread id
//!   is its pid). A fork from inside this thread's own `Tenant::write` (a signal handler or an
//!   allocator that forked mid-event) resumes that write when the handler returns: that tenant is
//!   killed rather than emptied, and the buffer its write holds a chunk of is kept (leaked in the
//!   child, counted by [`buffers_kept`]).
//!
//! The child's semantics: tracing is stopped. The parent's trace is the parent's: the child has no
//! trace to take (`take_trace` is `None`), `stop` returns at once, `stats` start afresh, and the
//! child may `start` a trace of its own, which observes only the child. Events are never written
//! into the parent's buffers, ring file or datastreams.
//!
//! A fork from a thread that is inside the recorder itself (holding a log's control lock, which
//! only an instrumented allocator or a signal handler could do) skips all of this but the crash
//! owner: taking the locks would deadlock, so the child is left as the fork made it.

use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

use crate::record::thread::THREAD;

/// What `prepare` took, for `parent` and `child` to release. While it exists the forking thread
/// is marked busy, so an event it records meanwhile (an instrumented allocator) neither attaches
/// nor runs a stop callback, both of which would take a control lock it holds.
struct Held {
    logs: crate::trace_log::ForkLocks,
    registry: crate::registry::callsite::ForkLock,
    names: crate::record::thread::ForkLock,
    #[cfg(target_os = "linux")]
    copies: crate::output::addr::ForkLock,
    /// The subsystems' leaves (see [`participate`]), in their order; dropped first, the newest
    /// first.
    leaves: Vec<Box<dyn Any>>,
}

/// A subsystem's part in the fork handlers (the triggers' dump lists, the crash recorder's dump
/// owner, the control channel's command table), given to [`participate`].
pub(crate) struct ForkHooks {
    /// In `prepare`, before any lock: settles the once-cells of the subsystem a child could need.
    pub(crate) settle: Option<fn()>,
    /// In `prepare`, after the core's locks: takes the subsystem's locks a child could need,
    /// which must be leaves (nothing is taken under them). What it returns holds them until
    /// `parent` or `child` drops it.
    pub(crate) take: Option<fn() -> Box<dyn Any>>,
    /// In the child, first, even when `prepare` took nothing (a fork from inside the recorder):
    /// async-signal-safe.
    pub(crate) in_child_first: Option<fn()>,
}

/// The subsystems that take part in the fork handlers, in the order they first asked: null until
/// filled, each filled once. Atomics rather than a locked list, which a child forked while
/// another thread held it would find held for ever.
static PARTICIPANTS: [AtomicPtr<ForkHooks>; 4] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 4];

/// Has every fork from now on run `hooks` (see [`ForkHooks`]); a second call with the same
/// `hooks` does nothing. A subsystem calls it before it has anything a fork must handle.
pub(crate) fn participate(hooks: &'static ForkHooks) {
    let p = std::ptr::from_ref(hooks).cast_mut();
    for slot in &PARTICIPANTS {
        // Acquire on both outcomes: pairs with the Release of the successful exchange, so the
        // hooks read through a pointer found here are the ones stored.
        match slot.compare_exchange(std::ptr::null_mut(), p, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return,
            Err(q) if q == p => return,
            Err(_) => {}
        }
    }
    panic!("more subsystems take part in the fork handlers than `PARTICIPANTS` has room for");
}

/// The participants so far, in their order.
fn participants() -> impl Iterator<Item = &'static ForkHooks> {
    PARTICIPANTS.iter().map_while(|slot| {
        // Acquire: see `participate`.
        let p = slot.load(Ordering::Acquire);
        // SAFETY: a non-null entry was made by `participate` from a `&'static ForkHooks`, and is
        // never changed again.
        unsafe { p.as_ref() }
    })
}

thread_local! {
    /// Set by `prepare` on the forking thread, taken by `parent` or `child` on the same thread.
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// Buffers a forked child kept rather than freed, because the fork interrupted a write into them
/// on the forking thread (see the module comment); a copy of the parent's count before.
static BUFFERS_KEPT: AtomicU64 = AtomicU64::new(0);

/// How many running buffers this process (and the parents it was forked from) kept at a fork
/// rather than freed, because the fork came from inside a write into them. Read by the tests
/// (`__test_hooks::buffers_kept_at_fork`).
#[cfg_attr(not(feature = "test-hooks"), allow(dead_code))]
pub(crate) fn buffers_kept() -> u64 {
    // Relaxed: a statistic.
    BUFFERS_KEPT.load(Ordering::Relaxed)
}

/// Counts one buffer kept by the child (single-threaded there).
pub(crate) fn count_buffer_kept() {
    // Relaxed: a statistic.
    BUFFERS_KEPT.fetch_add(1, Ordering::Relaxed);
}

/// Installs the handlers, once per process; `TraceLog::start` calls it. Not through a `Once`: a
/// child forked while another thread ran it would wait for that thread in its first `start`.
pub(crate) fn install() {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    // Relaxed: the swap alone picks the one caller that registers; a fork that comes before the
    // registration is done is one the handlers miss, as before any trace started.
    if INSTALLED.swap(true, Ordering::Relaxed) {
        return;
    }
    // SAFETY: the three handlers are `extern "C" fn()` that never unwind (each catches its own
    // panics); registering them has no other precondition.
    let r = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    if r != 0 {
        // ENOMEM: fork stays as it was; say so once rather than fail the trace.
        eprintln!("phosphor: pthread_atfork failed ({r}); a forked child's recorder may hang");
    }
}

/// Sets every once-cell a child could need, waiting for a thread that is setting one: a child
/// forked meanwhile would wait for that thread, which it does not have, for ever. Each is set
/// once per process, so later forks only read them. None takes a lock of ours.
fn settle_once_cells() {
    crate::record::barrier::asymmetric_available();
    crate::output::host::this_host();
    crate::output::addr::collect();
    for settle in participants().filter_map(|p| p.settle) {
        settle();
    }
}

extern "C" fn prepare() {
    let _ = std::panic::catch_unwind(|| {
        let entered = THREAD.try_with(|t| t.enter_busy()).unwrap_or(false);
        if !entered {
            // Inside the recorder: see the module comment. `parent` and `child` find nothing.
            return;
        }
        settle_once_cells();
        // The order the crate always takes these in: control (of each log, by slot) before the
        // registry, the registry before the names; the leaves last.
        let logs = crate::trace_log::ForkLocks::take();
        let registry = crate::registry::callsite::ForkLock::take();
        let names = crate::record::thread::ForkLock::take();
        #[cfg(target_os = "linux")]
        let copies = crate::output::addr::ForkLock::take();
        let leaves = participants().filter_map(|p| p.take).map(|take| take()).collect();
        let held = Held {
            logs,
            registry,
            names,
            #[cfg(target_os = "linux")]
            copies,
            leaves,
        };
        let _ = HELD.try_with(|h| *h.borrow_mut() = Some(held));
    });
}

fn take_held() -> Option<Held> {
    HELD.try_with(|h| h.borrow_mut().take()).ok().flatten()
}

/// Releases the subsystems' leaves, the newest first.
fn drop_leaves(leaves: &mut Vec<Box<dyn Any>>) {
    while let Some(leaf) = leaves.pop() {
        drop(leaf);
    }
}

fn leave_busy() {
    let _ = THREAD.try_with(|t| t.leave_busy());
}

extern "C" fn parent() {
    let _ = std::panic::catch_unwind(|| {
        let Some(mut h) = take_held() else { return };
        drop_leaves(&mut h.leaves);
        #[cfg(target_os = "linux")]
        drop(h.copies);
        drop(h.names);
        drop(h.registry);
        drop(h.logs);
        leave_busy();
    });
}

extern "C" fn child() {
    let _ = std::panic::catch_unwind(|| {
        // Even when `prepare` took nothing (the crash recorder's: one store).
        for first in participants().filter_map(|p| p.in_child_first) {
            first();
        }
        let Some(mut h) = take_held() else { return };
        // The names belong to the parent's threads, which the child does not have.
        h.names.clear();
        crate::record::thread::after_fork_in_child();
        // The logs' reset takes the registry's lock (to clear their callsite bits) under their
        // control locks, as `stop` does: release the registry and the names first.
        drop_leaves(&mut h.leaves);
        #[cfg(target_os = "linux")]
        drop(h.copies);
        drop(h.names);
        drop(h.registry);
        h.logs.reset_in_child();
        leave_busy();
    });
}

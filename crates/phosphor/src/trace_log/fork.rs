//! `fork()` while tracing: the `pthread_atfork` handlers that leave a child's recorder consistent.
//!
//! A child process has one thread, the one that forked, and a copy of everything else: locks that
//! other threads held stay held for ever, a tenant whose thread was in the middle of an event stays
//! slave-locked, the streaming collector's threads are gone (but their sinks' file descriptors and
//! buffered bytes are not), and a file-backed ring is still mapped shared with the parent, which
//! keeps writing it. So:
//!
//! * **prepare** (in the parent, before the fork): takes the locks a child would need (the list of
//!   live logs, each log's control lock, the callsite registry, the thread-name table, in the
//!   order the rest of the crate takes them), so no other thread is inside them at the fork;
//! * **parent**: releases them;
//! * **child**: releases them too, and stops every running trace *in the child* without waiting
//!   for anyone: every tenant is unlocked by force and emptied, the tenants of the threads that
//!   did not follow are retired, the buffer (the child's copy) is freed or the ring file unmapped,
//!   and the collector is forgotten (its threads do not exist; dropping its sinks could write the
//!   parent's buffered bytes again). The forking thread's cached thread id is cleared (the child is
//!   a new process: its thread id is its pid).
//!
//! The child's semantics: tracing is stopped. The parent's trace is the parent's: the child has no
//! trace to take (`take_trace` is `None`), `stop` returns at once, `stats` start afresh, and the
//! child may `start` a trace of its own. Events are never written into the parent's buffers, ring
//! file or datastreams.
//!
//! A fork from a thread that is inside the recorder itself (holding a log's control lock, which
//! only an instrumented allocator or a signal handler could do) skips all of this: taking the
//! locks would deadlock, so the child is left as the fork made it.

use std::cell::RefCell;
use std::sync::Once;

use crate::record::thread::THREAD;

/// What `prepare` took, for `parent` and `child` to release. While it exists the forking thread
/// is marked busy, so an event it records meanwhile (an instrumented allocator) neither attaches
/// nor runs a stop callback, both of which would take a control lock it holds.
struct Held {
    logs: crate::trace_log::ForkLocks,
    registry: crate::registry::callsite::ForkLock,
    names: crate::record::thread::ForkLock,
}

thread_local! {
    /// Set by `prepare` on the forking thread, taken by `parent` or `child` on the same thread.
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// Installs the handlers, once per process; `TraceLog::start` calls it.
pub(crate) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: the three handlers are `extern "C" fn()` that never unwind (each catches its
        // own panics); registering them has no other precondition.
        let r = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
        if r != 0 {
            // ENOMEM: fork stays as it was; say so once rather than fail the trace.
            eprintln!("phosphor: pthread_atfork failed ({r}); a forked child's recorder may hang");
        }
    });
}

extern "C" fn prepare() {
    let _ = std::panic::catch_unwind(|| {
        let entered = THREAD.try_with(|t| t.enter_busy()).unwrap_or(false);
        if !entered {
            // Inside the recorder: see the module comment. `parent` and `child` find nothing.
            return;
        }
        // The order the crate always takes these in: control (of each log, by slot) before the
        // registry, the registry before the names.
        let logs = crate::trace_log::ForkLocks::take();
        let registry = crate::registry::callsite::ForkLock::take();
        let names = crate::record::thread::ForkLock::take();
        let _ = HELD.try_with(|h| *h.borrow_mut() = Some(Held { logs, registry, names }));
    });
}

fn take_held() -> Option<Held> {
    HELD.try_with(|h| h.borrow_mut().take()).ok().flatten()
}

fn leave_busy() {
    let _ = THREAD.try_with(|t| t.leave_busy());
}

extern "C" fn parent() {
    let _ = std::panic::catch_unwind(|| {
        let Some(h) = take_held() else { return };
        drop(h.names);
        drop(h.registry);
        drop(h.logs);
        leave_busy();
    });
}

extern "C" fn child() {
    let _ = std::panic::catch_unwind(|| {
        let Some(mut h) = take_held() else { return };
        // The names belong to the parent's threads, which the child does not have.
        h.names.clear();
        crate::record::thread::after_fork_in_child();
        // The logs' reset takes the registry's lock (to clear their callsite bits) under their
        // control locks, as `stop` does: release the registry and the names first.
        drop(h.names);
        drop(h.registry);
        h.logs.reset_in_child();
        leave_busy();
    });
}

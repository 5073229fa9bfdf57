//! The recorder's own threads: the streaming collector's dispatcher and datastream threads,
//! `phosphor-system`, `phosphor-trigger` and `phosphor-dump` are all spawned by [`Builder`], which
//! starts them with every asynchronous signal blocked and marks them busy for their whole life.
//!
//! These threads take chunks from the pool, release them, hold logs' locks and allocate. A signal
//! handler that records (an instrumented handler, a profiler's) running on one of them in the
//! middle of that could need what the interrupted code holds. So no asynchronous signal runs on
//! them: the spawning thread blocks those signals around the spawn, and the new thread inherits
//! that mask from its first instruction (a thread starts with its creator's mask), with no window
//! before it could block them itself; the spawner then gets its own mask back. A process-directed
//! signal goes to another thread; one sent to this thread alone waits, pending, for ever.
//!
//! The synchronous ones stay deliverable: SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP and SIGSYS are
//! raised by the instruction that faults, and Linux kills the process at once, running no handler,
//! when one of them is blocked (the crash recorder must see them); SIGABRT is what the thread's own
//! `abort` raises (and `abort` unblocks it anyway).
//!
//! Busy for good (`ThreadState::enter_busy`): an event recorded on the thread anyway (instrumented
//! code it runs: a sink's writer, the `log` or `tracing` bridge) never attaches a tenant, so the
//! recorder's threads write nothing into a trace; such an event is dropped and counted as
//! `reentrant` (a callsite's first use there counts as disabled, as in every busy section). The
//! control locks these threads take then never run a deferred stop callback on them (which could
//! call `stop`, which joins them), and what they allocate stays out of scope counts.

use std::thread::JoinHandle;

use crate::record::thread::THREAD;

/// The signals left deliverable on the recorder's threads (see the module).
#[cfg(unix)]
const SYNCHRONOUS: [libc::c_int; 7] =
    [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL, libc::SIGTRAP, libc::SIGSYS, libc::SIGABRT];

/// [`std::thread::Builder`] for the recorder's threads: the same calls, and the thread it spawns
/// runs with the asynchronous signals blocked and is marked busy (see the module).
#[derive(Debug)]
pub(crate) struct Builder {
    inner: std::thread::Builder,
}

impl Builder {
    pub(crate) fn new() -> Builder {
        Builder { inner: std::thread::Builder::new() }
    }

    /// Names the thread.
    pub(crate) fn name(self, name: String) -> Builder {
        Builder { inner: self.inner.name(name) }
    }

    /// Spawns the thread, running `f`.
    pub(crate) fn spawn<F, T>(self, f: F) -> std::io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let run = move || {
            // Never left: see the module. `try_with`: the state has no destructor, so it cannot
            // be gone, but a failure here must not stop the thread.
            let _ = THREAD.try_with(|t| t.enter_busy());
            f()
        };
        #[cfg(unix)]
        let _blocked = AsyncSignalsBlocked::new();
        // The new thread inherits the mask in force now; `_blocked` restores ours when it drops,
        // whether the spawn succeeded or not.
        self.inner.spawn(run)
    }
}

/// The calling thread's asynchronous signals blocked until the value drops, which restores the
/// mask it had.
#[cfg(unix)]
struct AsyncSignalsBlocked {
    old: libc::sigset_t,
}

#[cfg(unix)]
impl AsyncSignalsBlocked {
    fn new() -> AsyncSignalsBlocked {
        // SAFETY: [1] both sets are zeroed and then initialised by `sigfillset`/`pthread_sigmask`
        // before use. [2] The pointers are to live locals. `pthread_sigmask` cannot fail with a
        // valid `how` and set; it leaves glibc's own signals (used for thread cancellation and
        // set*id) unblocked by itself.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut set);
            for s in SYNCHRONOUS {
                libc::sigdelset(&mut set, s);
            }
            let mut old: libc::sigset_t = std::mem::zeroed();
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            debug_assert_eq!(rc, 0);
            AsyncSignalsBlocked { old }
        }
    }
}

#[cfg(unix)]
impl Drop for AsyncSignalsBlocked {
    fn drop(&mut self) {
        // SAFETY: `old` is the mask `pthread_sigmask` read in `new`, a valid set; the value lives
        // in `spawn`'s frame, so this restores the mask of the thread that blocked.
        let rc = unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
        debug_assert_eq!(rc, 0);
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// This thread's signal mask.
    fn mask() -> libc::sigset_t {
        // SAFETY: a null new set only reads the mask into `cur`, a live local.
        unsafe {
            let mut cur: libc::sigset_t = std::mem::zeroed();
            assert_eq!(libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut cur), 0);
            cur
        }
    }

    fn blocked(set: &libc::sigset_t, s: libc::c_int) -> bool {
        // SAFETY: `set` is an initialised set.
        unsafe { libc::sigismember(set, s) == 1 }
    }

    #[test]
    fn a_recorder_thread_starts_with_the_asynchronous_signals_blocked_and_busy_and_the_spawner_keeps_its_mask(
    ) {
        let before = mask();
        let (m, busy) = Builder::new()
            .name("phosphor-test".into())
            .spawn(|| (mask(), THREAD.with(|t| t.is_busy())))
            .unwrap()
            .join()
            .unwrap();
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGUSR1, libc::SIGUSR2, libc::SIGPROF, libc::SIGALRM] {
            assert!(blocked(&m, s), "signal {s} is blocked on the new thread");
        }
        assert!(blocked(&m, libc::SIGRTMIN() + 7), "real-time signals too");
        for s in SYNCHRONOUS {
            assert!(!blocked(&m, s), "signal {s} stays deliverable");
        }
        assert!(busy, "the thread is busy from its start");
        let after = mask();
        for s in 1..libc::SIGRTMAX() {
            assert_eq!(blocked(&before, s), blocked(&after, s), "the spawner's mask is back (signal {s})");
        }
        assert!(!THREAD.with(|t| t.is_busy()), "the spawner is not busy");
    }

    fn event(log: &crate::TraceLog) {
        crate::trace_instant!(log: log, "internal", "event");
    }

    #[test]
    fn an_event_recorded_on_a_recorder_thread_is_dropped_and_counted_as_reentrant() {
        let log = loop {
            match crate::TraceLog::new(Default::default()) {
                Ok(log) => break log,
                // Other tests hold every slot for now.
                Err(_) => std::thread::yield_now(),
            }
        };
        log.start(crate::TraceConfig::new(crate::BufferMode::Fixed, 1 << 16)).unwrap();
        // Registered here (a busy thread's first use of a callsite counts as disabled).
        event(&log);
        let l = log.clone();
        Builder::new().name("phosphor-test".into()).spawn(move || event(&l)).unwrap().join().unwrap();
        log.stop();
        let s = log.stats();
        assert_eq!((s.recorded, s.dropped.reentrant), (1, 1), "{s:?}");
    }
}

//! The flight recorder's triggers (LLVM XRay FDR mode): dumps of a running trace, on a panic and
//! on a signal, as trace files.
//!
//! A dump is [`TraceLog::snapshot`] saved to a file: the most recent events a Ring buffer holds
//! (every event so far in Fixed mode), while tracing goes on. Files are written to `PATH.tmp` and
//! renamed, so a dump is either whole or absent.
//!
//! * [`dump_on_panic`] chains a panic hook that dumps before the previous hook runs, so the
//!   panicking thread's last events are in the file, and the process then behaves as it would
//!   have (the default hook prints the message; an unwinding main thread exits with status 101).
//! * [`dump_on_signal`] dumps each time the process receives a signal (for example `SIGUSR2`; off
//!   unless asked for). The handler only writes a byte to a pipe (async-signal-safe); a thread of
//!   ours does the dump.
//! * [`dump_on_crash`] writes a trace file from an async-signal-safe handler of the fatal signals
//!   (`SIGSEGV`, ...), then lets the signal take its course: the action that was in place before
//!   (stored before ours is installed), or the default one.
//!
//! # What each failure leaves
//!
//! * **Panic**: a dump of everything the buffer held at the panic, the panicking thread's last
//!   event included, unless the panic happened while this log's control lock was held (inside
//!   `start`, `stop` or another dump): the hook never waits for it, and says on stderr that it
//!   skipped the dump. Only the first panic dumps (later ones would overwrite it).
//! * **Signal-triggered dump**: as a snapshot; the file appears some time after the signal.
//! * **Fatal signal**: one dump, written by the first crashing thread while any other crashing
//!   thread waits for it; see [`dump_on_crash`] and docs/FLIGHT_RECORDER.md. `SIGKILL` leaves
//!   nothing here: file-backed rings (`registry/ring_file.rs`) and `phosphor recover` cover it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicI32, AtomicU64};
use std::sync::Arc;

use crate::error::{Error, ErrorKind};
use crate::TraceLog;

#[cfg(target_os = "linux")]
mod crash;
#[cfg(target_os = "linux")]
pub use crash::{dump_on_crash, CRASH_SIGNALS};

/// A log the recorder can keep for the life of the process.
#[derive(Clone, Debug)]
pub enum Recorded {
    /// The global log, or another `'static` one.
    Static(&'static TraceLog),
    /// An independent log.
    Shared(Arc<TraceLog>),
}

impl Recorded {
    fn log(&self) -> &TraceLog {
        match self {
            Recorded::Static(l) => l,
            Recorded::Shared(l) => l,
        }
    }
}

impl From<&'static TraceLog> for Recorded {
    fn from(l: &'static TraceLog) -> Recorded {
        Recorded::Static(l)
    }
}

impl From<Arc<TraceLog>> for Recorded {
    fn from(l: Arc<TraceLog>) -> Recorded {
        Recorded::Shared(l)
    }
}

/// Saves a snapshot to `path` through `path.tmp` and a rename (also the triggered dumps').
pub(crate) fn save_atomically(trace: crate::Trace, path: &Path) -> Result<(), String> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    trace.save(&tmp).map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Dumps `log`'s running trace to `path` when a thread panics, before the previous panic hook
/// runs (see the module docs). Only the first panic of the process dumps.
pub fn dump_on_panic(log: impl Into<Recorded>, path: impl Into<PathBuf>) {
    let (log, path) = (log.into(), path.into());
    static DUMPED: AtomicBool = AtomicBool::new(false);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // Relaxed: `swap` is atomic, so one panic dumps; nothing else is published by it.
        if !DUMPED.swap(true, Ordering::Relaxed) {
            match log.log().try_snapshot() {
                Some(Ok(trace)) => {
                    if let Err(e) = save_atomically(trace, &path) {
                        eprintln!("phosphor: the panic dump could not be written: {e}");
                    }
                }
                Some(Err(e)) => eprintln!("phosphor: no panic dump: {e}"),
                None => eprintln!("phosphor: no panic dump: the panic came while the trace log was locked"),
            }
        }
        previous(info);
    }));
}

/// The write end of the signal pipe, for the handler (-1: none).
#[cfg(target_os = "linux")]
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);
/// The process that set up the dump signal (whose `phosphor-dump` thread reads the pipe).
#[cfg(target_os = "linux")]
static SIGNAL_PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

#[cfg(target_os = "linux")]
extern "C" fn on_signal(_: libc::c_int) {
    // Relaxed: the fd and the pid were stored before the handler was installed (sigaction orders
    // them).
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    // A forked child inherits the handler and the pipe, but not the `phosphor-dump` thread: its
    // byte would wake the parent's thread and dump the parent. The child's tracing is stopped at
    // the fork (see `fork.rs`), so it has nothing to dump: the signal is ignored there.
    // SAFETY: getpid is async-signal-safe and cannot fail.
    let mine = SIGNAL_PID.load(Ordering::Relaxed) == unsafe { libc::getpid() } as u32;
    if fd >= 0 && mine {
        let byte = 1u8;
        // SAFETY: `write` is async-signal-safe; the buffer is a valid one-byte local. A full pipe
        // (non-blocking) drops this request: a dump is pending anyway. errno is saved and restored
        // so the interrupted code does not see it change.
        unsafe {
            let errno = *libc::__errno_location();
            libc::write(fd, (&byte as *const u8).cast(), 1);
            *libc::__errno_location() = errno;
        }
    }
}

/// Dumps `log`'s running trace each time the process receives `signal` (e.g. `libc::SIGUSR2`).
/// `path` may hold `{n}`, replaced by the dump's number (1, 2, ...); without it each dump replaces
/// the last. Dumps are made by a thread named `phosphor-dump`; a signal that arrives while no
/// trace runs is ignored. Only one signal can be set up per process. Linux only: elsewhere
/// [`ErrorKind::Unsupported`].
#[cfg(target_os = "linux")]
pub fn dump_on_signal(
    log: impl Into<Recorded>,
    signal: libc::c_int,
    path: impl Into<PathBuf>,
) -> Result<(), Error> {
    let (log, path) = (log.into(), path.into());
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid two-int array for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::new(ErrorKind::Signal(format!("pipe2: {}", std::io::Error::last_os_error()))));
    }
    // SAFETY: fds[1] is the write end just created; making it non-blocking keeps the handler from
    // ever blocking.
    unsafe { libc::fcntl(fds[1], libc::F_SETFL, libc::O_NONBLOCK) };
    // Relaxed: `compare_exchange` is atomic; sigaction below orders the store before any handler.
    if SIGNAL_PIPE.compare_exchange(-1, fds[1], Ordering::Relaxed, Ordering::Relaxed).is_err() {
        // SAFETY: both fds were created above and are not used elsewhere.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        return Err(Error::new(ErrorKind::Signal("a dump signal is already set up".into())));
    }
    let reader = fds[0];
    // Relaxed: as for the pipe, sigaction below orders it before any handler.
    SIGNAL_PID.store(std::process::id(), Ordering::Relaxed);
    crate::record::internal_thread::Builder::new()
        .name("phosphor-dump".into())
        .spawn(move || {
            static DUMPS: AtomicU64 = AtomicU64::new(0);
            let mut byte = [0u8; 64];
            loop {
                // SAFETY: `reader` is the pipe's read end, owned by this thread; the buffer is valid.
                let n = unsafe { libc::read(reader, byte.as_mut_ptr().cast(), byte.len()) };
                if n == 0 {
                    return;
                }
                if n < 0 {
                    if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                        continue;
                    }
                    return;
                }
                let Ok(trace) = log.log().snapshot() else { continue };
                // Relaxed: a counter of this thread's own dumps.
                let k = DUMPS.fetch_add(1, Ordering::Relaxed) + 1;
                let p = PathBuf::from(path.to_string_lossy().replace("{n}", &k.to_string()));
                if let Err(e) = save_atomically(trace, &p) {
                    eprintln!("phosphor: the signal dump could not be written: {e}");
                }
            }
        })
        .map_err(|e| Error::new(ErrorKind::Signal(format!("spawning the dump thread: {e}"))))?;
    // SAFETY: a zeroed sigaction is valid; we set the handler and flags before installing it.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(signal, &sa, std::ptr::null_mut()) != 0 {
            return Err(Error::new(ErrorKind::Signal(format!(
                "sigaction({signal}): {}",
                std::io::Error::last_os_error()
            ))));
        }
    }
    Ok(())
}

/// Off Linux: no dump signal (see the Linux [`dump_on_signal`]); always
/// [`ErrorKind::Unsupported`], so a program that asks for one builds everywhere and learns why.
#[cfg(not(target_os = "linux"))]
pub fn dump_on_signal(
    _log: impl Into<Recorded>,
    _signal: std::ffi::c_int,
    _path: impl Into<PathBuf>,
) -> Result<(), Error> {
    Err(unsupported("a dump on a signal"))
}

/// The fatal signals [`dump_on_crash`] catches: none off Linux.
#[cfg(not(target_os = "linux"))]
pub const CRASH_SIGNALS: [std::ffi::c_int; 0] = [];

/// Off Linux: no crash handler (see the Linux `dump_on_crash`); always
/// [`ErrorKind::Unsupported`]. [`dump_on_panic`] works everywhere.
#[cfg(not(target_os = "linux"))]
pub fn dump_on_crash(_log: &'static TraceLog, _path: impl Into<PathBuf>) -> Result<(), Error> {
    Err(unsupported("a dump on a crash"))
}

/// The error of a feature this platform lacks.
#[cfg(not(target_os = "linux"))]
pub(crate) fn unsupported(feature: &'static str) -> Error {
    Error::new(ErrorKind::Unsupported { feature, platform: std::env::consts::OS })
}

#[cfg(all(test, not(target_os = "linux")))]
mod tests {
    use super::*;
    use crate::{BufferMode, TraceConfig, TraceLogConfig};

    fn is_unsupported(e: &Error) -> bool {
        matches!(e.kind(), ErrorKind::Unsupported { platform, .. } if *platform == std::env::consts::OS)
    }

    #[test]
    fn the_linux_only_features_are_refused_with_why_and_the_rest_records() {
        let log = TraceLog::new(TraceLogConfig::new()).unwrap();
        let config = || TraceConfig::new(BufferMode::Fixed, 1 << 20);
        for asked in [config().context_switches(true), config().cpu_samples(999)] {
            let e = log.start(asked).unwrap_err();
            assert!(is_unsupported(&e), "{e}");
            assert!(e.to_string().contains("only on Linux"), "{e}");
        }
        assert!(is_unsupported(&dump_on_crash(TraceLog::global(), "crash.phos").unwrap_err()));
        assert!(is_unsupported(&dump_on_signal(TraceLog::global(), 12, "signal.phos").unwrap_err()));
        // Refused before anything started: the same log then records.
        log.start(config().allocations(true)).unwrap();
        crate::trace_instant!(log: &log, "platform", "after_refusals");
        log.stop();
        let trace = log.take_trace().unwrap();
        assert_eq!(trace.stats().recorded, 1);
    }
}

//! Running a command under a watchdog and measuring it: its peak resident memory (the kernel's
//! `ru_maxrss` of that child alone, from `wait4`), its wall time, and its exit.
//!
//! The child gets an address-space cap (`RLIMIT_AS`) so that a reader gone quadratic fails its
//! allocation and dies instead of taking the machine's memory from the builds beside it; the
//! watchdog kills it with `SIGKILL` past its time. Its standard output goes to a consumer on a
//! thread of its own (a pipe must be drained while the child runs); standard error is kept up to
//! 64 KiB.

use std::io::{self, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// What a run may use.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Killed with `SIGKILL` after this long.
    pub watchdog: Duration,
    /// The child's address-space cap, in bytes (`None`: no cap).
    pub address_space: Option<u64>,
}

/// What a run used.
#[derive(Clone, Debug)]
pub struct Measured {
    /// How the child ended.
    pub status: ExitStatus,
    /// Peak resident set, in bytes.
    pub max_rss: u64,
    /// From spawn to exit.
    pub wall: Duration,
    /// Whether the watchdog killed it.
    pub timed_out: bool,
    /// The start of its standard error (64 KiB at most), lossily decoded.
    pub stderr: String,
}

impl Measured {
    /// The exit code, `None` when a signal ended it.
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// A short description of the end: `0`, `2`, `SIGABRT`, `killed after 120 s`.
    pub fn end(&self) -> String {
        if self.timed_out {
            return format!("killed after {:.0} s", self.wall.as_secs_f64());
        }
        match (self.status.code(), self.status.signal()) {
            (Some(c), _) => c.to_string(),
            (None, Some(libc::SIGABRT)) => "SIGABRT".into(),
            (None, Some(libc::SIGKILL)) => "SIGKILL".into(),
            (None, Some(libc::SIGSEGV)) => "SIGSEGV".into(),
            (None, Some(s)) => format!("signal {s}"),
            (None, None) => "?".into(),
        }
    }
}

/// Runs `cmd` under `limits`, handing its standard output to `consume` on another thread.
pub fn run<T: Send + 'static>(
    cmd: &mut Command,
    limits: &Limits,
    consume: impl FnOnce(ChildStdout) -> T + Send + 'static,
) -> io::Result<(Measured, T)> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(cap) = limits.address_space {
        let lim = libc::rlimit { rlim_cur: cap, rlim_max: cap };
        // SAFETY: [1] the closure runs in the forked child before exec and calls only
        // `setrlimit`, which is async-signal-safe; [2] `lim` is a plain value copied into it.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let started = Instant::now();
    let mut child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    let out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let consumer = std::thread::spawn(move || consume(out));
    let errors = std::thread::spawn(move || {
        let mut kept = Vec::new();
        let _ = (&mut err).take(64 << 10).read_to_end(&mut kept);
        // Drain the rest so that the child never blocks on a full pipe.
        let _ = io::copy(&mut err, &mut io::sink());
        String::from_utf8_lossy(&kept).into_owned()
    });
    let mut status = 0;
    // SAFETY: `rusage` is plain old data, for which all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut timed_out = false;
    let mut pause = Duration::from_millis(1);
    loop {
        // SAFETY: [1] `pid` is our child, not yet reaped (only this loop reaps it); [2] `status`
        // and `usage` are valid for writes for the call.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if !timed_out && started.elapsed() > limits.watchdog {
            timed_out = true;
            // SAFETY: `pid` is our unreaped child, so the id cannot have been reused.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
    let wall = started.elapsed();
    // The child is reaped: `Child` must not wait for it again, and its drop does not.
    drop(child);
    let consumed = consumer.join().map_err(|_| io::Error::other("the output consumer panicked"))?;
    let stderr = errors.join().unwrap_or_default();
    let measured = Measured {
        status: ExitStatus::from_raw(status),
        // Linux reports kibibytes.
        max_rss: (usage.ru_maxrss as u64) * 1024,
        wall,
        timed_out,
        stderr,
    };
    Ok((measured, consumed))
}

/// Drains a reader, counting its bytes.
pub fn count_bytes(mut r: impl Read) -> u64 {
    io::copy(&mut r, &mut io::sink()).unwrap_or(0)
}

//! Running a command under a watchdog and measuring it: its peak resident memory (the kernel's
//! `ru_maxrss` of that child alone, from `wait4`), its wall time, and its exit.
//!
//! The child gets an address-space cap (`RLIMIT_AS`, set with `prlimit` right after the spawn) so
//! that a reader gone quadratic fails its allocation and dies instead of taking the machine's
//! memory from the builds beside it; the watchdog kills it with `SIGKILL` past its time. Its standard output goes to a consumer on a
//! thread of its own (a pipe must be drained while the child runs); standard error is kept up to
//! 64 KiB.

use std::io::{self, Read};
use std::os::unix::process::ExitStatusExt;
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
    /// Peak resident set, in bytes: the child's own, or [`Measured::inherited`] if that is more.
    pub max_rss: u64,
    /// The peak resident set of this process when it spawned the child. Linux charges it to the
    /// child (an exec keeps the peak of the memory it replaces), so `max_rss` is exact when it is
    /// above it, and otherwise says only that the child's own peak was at most that.
    pub inherited: u64,
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
    let started = Instant::now();
    // Linux starts a child's `ru_maxrss` at the peak of the memory it execs from: ours.
    let inherited = own_peak_rss();
    // Spawned without a `pre_exec` hook (std then uses `posix_spawn`); the cap is set from here,
    // just after the spawn.
    let mut child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    if let Some(cap) = limits.address_space {
        let lim = libc::rlimit { rlim_cur: cap, rlim_max: cap };
        // SAFETY: [1] `pid` is our child, not yet reaped, so the id is its; [2] `lim` is valid for
        // reads and the old limit's pointer may be null.
        if unsafe { libc::prlimit(pid, libc::RLIMIT_AS, &lim, std::ptr::null_mut()) } != 0 {
            let e = io::Error::last_os_error();
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    }
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
        inherited,
        wall,
        timed_out,
        stderr,
    };
    Ok((measured, consumed))
}

/// This process's peak resident set so far (`VmHWM`), in bytes; 0 if unknown.
pub fn own_peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let hwm = status.lines().find_map(|l| l.strip_prefix("VmHWM:"));
    hwm.and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok()).map_or(0, |kb| kb * 1024)
}

/// Drains a reader, counting its bytes.
pub fn count_bytes(mut r: impl Read) -> u64 {
    io::copy(&mut r, &mut io::sink()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits { watchdog: Duration::from_secs(60), address_space: Some(1 << 30) }
    }

    #[test]
    fn a_child_is_charged_with_at_most_the_peak_of_the_process_that_runs_it() {
        let held = vec![7u8; 256 << 20];
        assert!(held.iter().step_by(4096).all(|&b| b == 7));
        let (m, _) = run(&mut Command::new("true"), &limits(), count_bytes).unwrap();
        assert_eq!(m.code(), Some(0));
        assert!(m.inherited >= 256 << 20, "{m:?}");
        assert!(m.max_rss <= m.inherited + (16 << 20), "{m:?}");
    }

    #[test]
    fn the_watchdog_kills_a_child_past_its_time_and_the_output_is_all_read() {
        let quick = Limits { watchdog: Duration::from_millis(200), address_space: None };
        let (m, _) = run(Command::new("sleep").arg("30"), &quick, count_bytes).unwrap();
        assert!(m.timed_out && m.code().is_none(), "{m:?}");
        assert!(m.wall < Duration::from_secs(10), "{m:?}");
        let (m, out) = run(Command::new("seq").args(["1", "3"]), &limits(), count_bytes).unwrap();
        assert_eq!((m.code(), out), (Some(0), 6));
    }
}

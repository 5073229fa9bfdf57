//! What the harness reads from the operating system: CPU clocks, resident memory, and a
//! description of the machine and its load for the report.

use std::process::Command;

/// CPU time of the whole process (every thread, including those that have exited), in ns.
pub fn process_cpu_ns() -> u64 {
    cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time of the calling thread, in ns.
pub fn thread_cpu_ns() -> u64 {
    cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn cpu_clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: [1] `ts` is a live, writable timespec for the whole call, and clock_gettime writes
    // nothing else. [2] Both clock ids are ones Linux always provides; on failure the function
    // returns -1 without touching `ts`, which the assertion below reports.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime({id}) failed: {}", std::io::Error::last_os_error());
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Resident memory of this process, from `/proc/self/status`, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rss {
    /// `VmRSS`: resident pages, anonymous and file-backed.
    pub rss: u64,
    /// `VmHWM`: the peak of `VmRSS`.
    pub peak: u64,
    /// `RssAnon`: resident anonymous pages (heap, stacks, written statics).
    pub anon: u64,
    /// `RssFile`: resident file-backed pages (code and read-only data of the binary and libraries).
    pub file: u64,
}

impl Rss {
    /// Reads `/proc/self/status`; fields it lacks stay 0.
    pub fn now() -> Rss {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let mut r = Rss::default();
        for line in status.lines() {
            let Some((key, rest)) = line.split_once(':') else { continue };
            let kib = rest.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            match key {
                "VmRSS" => r.rss = kib * 1024,
                "VmHWM" => r.peak = kib * 1024,
                "RssAnon" => r.anon = kib * 1024,
                "RssFile" => r.file = kib * 1024,
                _ => {}
            }
        }
        r
    }
}

/// The 1-, 5- and 15-minute load averages, as `/proc/loadavg` prints them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// One line describing the machine: CPU model (as `lscpu` names it), CPUs, kernel, compiler.
pub fn machine() -> String {
    let model = command_output("lscpu", &[])
        .and_then(|out| out.lines().find_map(|l| l.strip_prefix("Model name:").map(|m| m.trim().to_string())))
        .or_else(|| {
            let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
            info.lines().find_map(|l| {
                l.strip_prefix("model name").map(|m| m.trim_start_matches([' ', '\t', ':']).to_string())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let hypervisor = command_output("lscpu", &[])
        .and_then(|out| {
            out.lines().find_map(|l| l.strip_prefix("Hypervisor vendor:").map(|m| m.trim().to_string()))
        })
        .map(|h| format!(", {h} guest"))
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string());
    let rustc = command_output("rustc", &["--version"]).map(|s| s.trim().to_string());
    format!(
        "{model}, {cpus} CPUs{hypervisor}; Linux {}; {}",
        kernel.unwrap_or_else(|_| "?".into()),
        rustc.unwrap_or_else(|| "rustc ?".into())
    )
}

/// The commit the harness was built from, with `+dirty` when the library or the harness has
/// uncommitted changes.
pub fn commit() -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let Some(head) = command_output("git", &["-C", root, "rev-parse", "--short", "HEAD"]) else {
        return "unknown".into();
    };
    let dirty =
        command_output("git", &["-C", root, "status", "--porcelain", "--", "crates/phosphor", "bench"])
            .is_some_and(|s| !s.trim().is_empty());
    format!("{}{}", head.trim(), if dirty { "+dirty" } else { "" })
}

fn command_output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

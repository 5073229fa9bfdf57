//! Instructions per event, counted by `valgrind --tool=callgrind`, which stays stable on a noisy
//! machine where times do not.
//!
//! Each scenario runs in a child process (`--scenario ID --iters N`) under callgrind twice, with
//! N and 2N events; the difference of the two counts divided by N is the cost of one event with
//! every fixed cost cancelled, as `scripts/callgrind.sh` does for Phosphor alone.
//!
//! What is counted: on the calling thread, only the batch function (`--toggle-collect=*_batch`:
//! every batch function's name ends so, and none calls another), because minstant's and fastant's
//! start-up code calibrates the TSC in a loop that runs for a fixed *time*, which would make the
//! count vary from run to run; and every other thread from its start (`*thread_start*`, std's
//! thread entry), which is where fastrace's collector and tracing-chrome's writer do their work.
//! Callgrind counts each thread apart (`--separate-threads=yes`), so a peer's figure comes as the
//! calling thread's count and the count of all threads. The collector and writer threads' counts
//! vary a little with how callgrind interleaves the threads (a few instructions per event for
//! fastrace, whose collector batches differently from run to run).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// A scenario's instructions per event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Instr {
    /// On the calling thread.
    pub calling: f64,
    /// On all threads.
    pub all: f64,
}

/// Whether valgrind is on the path.
pub fn available() -> bool {
    Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// The events per run for scenario `id`: fewer for the dear ones, so a run stays a few seconds.
pub fn events_for(id: &str, quick: bool) -> u64 {
    let n = match id {
        "fastrace" | "fastrace-burst" => 100_000,
        "puffin-top" | "puffin-nested" => 50_000,
        "chrome-span" | "chrome-event" | "chrome-event-noargs" => 10_000,
        _ => 200_000,
    };
    if quick {
        n / 4
    } else {
        n
    }
}

/// Total instructions of one run: (calling thread, all threads).
fn run_once(exe: &Path, dir: &Path, id: &str, n: u64) -> Result<(u64, u64), String> {
    let base = dir.join(format!("{id}.{n}.out"));
    // Files of an earlier run with more threads would be summed in.
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())?.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&format!("{id}.{n}.out")) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let out = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg("--separate-threads=yes")
        .arg("--toggle-collect=*_batch")
        .arg("--toggle-collect=*thread_start*")
        .arg(format!("--callgrind-out-file={}", base.display()))
        .arg(exe)
        .args(["--scenario", id, "--iters", &n.to_string(), "--batches", "1"])
        .output()
        .map_err(|e| format!("valgrind: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let check = crate::child::parse(&stdout).check;
    if !out.status.success() || !check.as_ref().is_some_and(|c| c.ok()) {
        return Err(format!(
            "`{id}` under callgrind: exit {}, check {}",
            out.status,
            check.map(|c| c.summary()).unwrap_or_else(|| "missing".into())
        ));
    }
    let mut calling = None;
    let mut all = 0;
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(thread) = name.strip_prefix(&format!("{id}.{n}.out-")) else { continue };
        let text = std::fs::read_to_string(entry.path()).map_err(|e| e.to_string())?;
        let total = text
            .lines()
            .find_map(|l| l.strip_prefix("totals:").or_else(|| l.strip_prefix("summary:")))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .ok_or_else(|| format!("no total in {name}"))?;
        all += total;
        if thread.parse::<u32>() == Ok(1) {
            calling = Some(total);
        }
    }
    Ok((calling.ok_or_else(|| format!("no profile of thread 1 for `{id}`"))?, all))
}

/// Measures one scenario: runs with `n` and `2n` events.
pub fn measure_one(exe: &Path, dir: &Path, id: &str, n: u64) -> Result<Instr, String> {
    let (c1, a1) = run_once(exe, dir, id, n)?;
    let (c2, a2) = run_once(exe, dir, id, 2 * n)?;
    let per = |a: u64, b: u64| (b as f64 - a as f64) / n as f64;
    Ok(Instr { calling: per(c1, c2), all: per(a1, a2) })
}

/// Measures every scenario of `ids`, `jobs` at a time. Profiles go to `dir`.
pub fn measure(
    exe: &Path,
    dir: &Path,
    ids: &[&'static str],
    quick: bool,
    jobs: usize,
    progress: impl Fn(&str) + Sync,
) -> Vec<(&'static str, Result<Instr, String>)> {
    if let Err(e) = std::fs::create_dir_all(dir) {
        return ids.iter().map(|&id| (id, Err(format!("{}: {e}", dir.display())))).collect();
    }
    let queue = Mutex::new(ids.to_vec());
    let results = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let Some(id) = queue.lock().unwrap_or_else(|p| p.into_inner()).pop() else { break };
                progress(&format!("callgrind {id}"));
                let r = measure_one(exe, dir, id, events_for(id, quick));
                results.lock().unwrap_or_else(|p| p.into_inner()).push((id, r));
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by_key(|(id, _)| ids.iter().position(|x| x == id));
    results
}

/// Where the profiles go: `callgrind/` beside the harness's executable (under `target/`).
pub fn default_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("phosphor-bench-callgrind")))
        .unwrap_or_else(|| std::env::temp_dir().join("phosphor-bench-callgrind"))
}

//! Resident memory: a program that links Phosphor but does not trace, and a program tracing into
//! a 64 MiB buffer. Both are measured in `phosphor-bench-rss` (`src/bin/`), a separate program
//! that links Phosphor and none of the peers, run once per mode and repetition.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::stats::median;

/// What a program that never traces pays, in bytes (medians over the repetitions).
#[derive(Clone, Debug, Default)]
pub struct Idle {
    /// Growth of `VmRSS` while the main thread ran ten untraced callsites 1,000 times, minus the
    /// same program's growth without the macros.
    pub main_thread: f64,
    /// The same after a second thread (started before the first reading) did the same.
    pub two_threads: f64,
    /// The largest `two_threads` of the repetitions.
    pub two_threads_max: f64,
    /// Repetitions.
    pub reps: usize,
    /// Of `two_threads`: anonymous memory (heap, statics written, thread-local blocks).
    pub anon: f64,
    /// Of `two_threads`: file-backed pages (Phosphor's code and read-only data faulted in).
    pub file: f64,
    /// Each further callsite once registered (the registry entry and, built at run time here, the
    /// callsite itself; a macro's callsite lives in the binary's data instead).
    pub per_callsite: f64,
    /// `size_of::<Callsite>()`.
    pub callsite_size: f64,
}

/// What a trace with a 64 MiB buffer takes, in bytes (medians over the repetitions).
#[derive(Clone, Debug, Default)]
pub struct Tracing {
    /// The configured buffer.
    pub buffer: f64,
    /// Growth of `VmRSS` from before `start` to when four threads had wrapped the Ring twice.
    pub running: f64,
    /// Growth of the peak `VmHWM` over the same span.
    pub peak: f64,
    /// Growth after `stop`, with the finished trace kept in memory.
    pub stopped_kept: f64,
    /// Growth once the trace was dropped.
    pub dropped: f64,
    /// Every event recorded or overwritten, and nothing else dropped, in every repetition.
    pub accounted: bool,
}

/// Both figures, or why they could not be measured.
#[derive(Clone, Debug)]
pub struct Memory {
    /// The program that never traces.
    pub idle: Result<Idle, String>,
    /// The program tracing into 64 MiB.
    pub tracing: Result<Tracing, String>,
}

/// Where `phosphor-bench-rss` is: next to this executable. `cargo run` builds only the binary it
/// runs, so when the program is missing or older than this one and we were started by cargo
/// (`$CARGO` is set), build it with the same profile.
pub fn rss_exe() -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let dir = me.parent().ok_or("no executable directory")?;
    let rss = dir.join("phosphor-bench-rss");
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let stale = match (mtime(&rss), mtime(&me)) {
        (Some(r), Some(m)) => r < m,
        _ => true,
    };
    if stale {
        if let Ok(cargo) = std::env::var("CARGO") {
            let profile = dir.file_name().and_then(|p| p.to_str()).unwrap_or("release");
            let status = Command::new(cargo)
                .args([
                    "build",
                    "--quiet",
                    "-p",
                    "phosphor-bench",
                    "--bin",
                    "phosphor-bench-rss",
                    "--profile",
                ])
                .arg(if profile == "debug" { "dev" } else { profile })
                .status()
                .map_err(|e| format!("cargo build: {e}"))?;
            if !status.success() {
                return Err(format!("cargo build of phosphor-bench-rss failed ({status})"));
            }
        }
    }
    if rss.exists() {
        Ok(rss)
    } else {
        Err(format!(
            "{} not built: run `cargo build --release -p phosphor-bench --bins` first",
            rss.display()
        ))
    }
}

fn run_mode(exe: &Path, args: &[&str]) -> Result<HashMap<String, f64>, String> {
    let out = Command::new(exe).args(args).output().map_err(|e| format!("{}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!(
            "phosphor-bench-rss {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse::<f64>().ok()?))
        })
        .collect())
}

fn get(m: &HashMap<String, f64>, k: &str) -> Result<f64, String> {
    m.get(k).copied().ok_or_else(|| format!("phosphor-bench-rss printed no `{k}`"))
}

fn idle(exe: &Path, reps: usize) -> Result<Idle, String> {
    let (mut main, mut two, mut anon, mut file, mut per) = (vec![], vec![], vec![], vec![], vec![]);
    let mut size = 0.0;
    for _ in 0..reps {
        let i = run_mode(exe, &["idle"])?;
        let b = run_mode(exe, &["baseline"])?;
        let growth = |m: &HashMap<String, f64>, to: &str, what: &str| -> Result<f64, String> {
            Ok(get(m, &format!("{to}.{what}"))? - get(m, &format!("r0.{what}"))?)
        };
        main.push(growth(&i, "r1", "rss")? - growth(&b, "r1", "rss")?);
        two.push(growth(&i, "r2", "rss")? - growth(&b, "r2", "rss")?);
        anon.push(growth(&i, "r2", "anon")? - growth(&b, "r2", "anon")?);
        file.push(growth(&i, "r2", "file")? - growth(&b, "r2", "file")?);
        let c = run_mode(exe, &["callsites", "10000"])?;
        per.push(growth(&c, "r1", "rss")? / get(&c, "callsites")?);
        size = get(&c, "callsite_size")?;
    }
    let two_threads_max = two.iter().copied().fold(f64::MIN, f64::max);
    Ok(Idle {
        main_thread: median(&mut main),
        two_threads: median(&mut two),
        two_threads_max,
        reps,
        anon: median(&mut anon),
        file: median(&mut file),
        per_callsite: median(&mut per),
        callsite_size: size,
    })
}

fn tracing(exe: &Path, reps: usize) -> Result<Tracing, String> {
    let (mut running, mut peak, mut kept, mut dropped) = (vec![], vec![], vec![], vec![]);
    let mut buffer = 0.0;
    let mut accounted = true;
    for _ in 0..reps {
        let t = run_mode(exe, &["tracing"])?;
        let r0 = get(&t, "r0.rss")?;
        running.push(get(&t, "r1.rss")? - r0);
        peak.push(get(&t, "hwm")? - r0);
        kept.push(get(&t, "r2.rss")? - r0);
        dropped.push(get(&t, "r3.rss")? - r0);
        buffer = get(&t, "buffer")?;
        let (e, r, o, d) =
            (get(&t, "emitted")?, get(&t, "recorded")?, get(&t, "overwritten")?, get(&t, "dropped")?);
        accounted &= r + o == e && d == o;
    }
    Ok(Tracing {
        buffer,
        running: median(&mut running),
        peak: median(&mut peak),
        stopped_kept: median(&mut kept),
        dropped: median(&mut dropped),
        accounted,
    })
}

/// Runs every mode `reps` times.
pub fn measure(reps: usize) -> Memory {
    match rss_exe() {
        Ok(exe) => Memory { idle: idle(&exe, reps), tracing: tracing(&exe, reps) },
        Err(e) => Memory { idle: Err(e.clone()), tracing: Err(e) },
    }
}

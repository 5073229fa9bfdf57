//! Running one scenario in a child process: `phosphor-bench --scenario ID --iters N [--batches S]`.
//!
//! Two things need a fresh process: `tracing` with no subscriber must run where no subscriber
//! was ever installed (the harness installs one), and callgrind runs one scenario at a time. The
//! child prints one line per batch and one check line; this module writes and reads them, and
//! [`Spawned`] is a scenario that runs in a child process each round.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::scenario::{Check, Info, Sample, Scenario};

/// The line a child prints for a batch.
pub fn sample_line(s: &Sample) -> String {
    format!("sample {} {} {}", s.events, s.wall_ns, s.cpu_ns)
}

/// The line a child prints for its check.
pub fn check_line(c: &Check) -> String {
    let how = match &c.problem {
        Some(p) => format!("{}; {p}", c.how),
        None => c.how.clone(),
    };
    format!(
        "check {} {} {} {} {} {}",
        c.emitted,
        c.expected,
        c.recorded,
        u8::from(c.not_applicable),
        u8::from(c.problem.is_some()),
        how
    )
}

/// What a child printed.
#[derive(Clone, Debug, Default)]
pub struct Output {
    /// Its batches.
    pub samples: Vec<Sample>,
    /// Its check.
    pub check: Option<Check>,
    /// Every other line (the Phosphor session's accounting, notes).
    pub other: Vec<String>,
}

/// Parses a child's standard output.
pub fn parse(stdout: &str) -> Output {
    let mut out = Output::default();
    for line in stdout.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
        match f.first() {
            Some(&"sample") => {
                if let (Some(events), Some(wall_ns), Some(cpu_ns)) = (num(1), num(2), num(3)) {
                    out.samples.push(Sample { events, wall_ns, cpu_ns });
                }
            }
            Some(&"check") => {
                if let (Some(e), Some(x), Some(r), Some(na), Some(p)) =
                    (num(1), num(2), num(3), num(4), num(5))
                {
                    let how = f.get(6..).map(|w| w.join(" ")).unwrap_or_default();
                    let mut c =
                        if na == 1 { Check::not_applicable(&how) } else { Check::new(e, x, r, how.clone()) };
                    if p == 1 {
                        c = c.with_problem(how);
                    }
                    out.check = Some(c);
                }
            }
            _ => out.other.push(line.to_string()),
        }
    }
    out
}

/// Runs scenario `id` in a child process of `exe` (normally this executable).
pub fn run(exe: &Path, id: &str, iters: u64, batches: usize) -> Result<Output, String> {
    let out = Command::new(exe)
        .args(["--scenario", id, "--iters", &iters.to_string(), "--batches", &batches.to_string()])
        .output()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let parsed = parse(&stdout);
    if parsed.check.is_none() {
        return Err(format!(
            "child `{id}` printed no check (exit {}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(parsed)
}

/// A scenario that runs in a child process of the harness, started once per round; its check adds
/// up the children's.
#[derive(Debug)]
pub struct Spawned {
    info: Info,
    exe: PathBuf,
    granule: u64,
    emitted: u64,
    expected: u64,
    recorded: u64,
    how: String,
    problem: Option<String>,
}

impl Spawned {
    /// Scenario `info.id`, run in child processes of `exe`, in batches that are multiples of
    /// `granule`.
    pub fn new(info: Info, exe: PathBuf, granule: u64) -> Spawned {
        Spawned {
            info,
            exe,
            granule,
            emitted: 0,
            expected: 0,
            recorded: 0,
            how: String::new(),
            problem: None,
        }
    }
}

impl Scenario for Spawned {
    fn info(&self) -> &Info {
        &self.info
    }

    fn granule(&self) -> u64 {
        self.granule
    }

    fn run(&mut self, n: u64) -> Sample {
        self.run_round(n, 1).pop().unwrap_or_default()
    }

    fn run_round(&mut self, n: u64, batches: usize) -> Vec<Sample> {
        match run(&self.exe, self.info.id, n, batches) {
            Ok(out) => {
                let check = out.check.expect("`run` returns a check");
                self.emitted += check.emitted;
                self.expected += check.expected;
                self.recorded += check.recorded;
                self.how = format!("in child processes: {}", check.how);
                if !check.ok() && self.problem.is_none() {
                    self.problem = Some(format!("a child's check failed: {}", check.summary()));
                }
                out.samples
            }
            Err(e) => {
                self.problem.get_or_insert(e);
                Vec::new()
            }
        }
    }

    fn check(&mut self) -> Check {
        let check = Check::new(self.emitted, self.expected, self.recorded, self.how.clone());
        match &self.problem {
            Some(p) => check.with_problem(p.clone()),
            None => check,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_and_check_lines_read_back() {
        let s = Sample { events: 1000, wall_ns: 12345, cpu_ns: 23456 };
        let c = Check::new(1000, 0, 0, "nothing recorded").with_problem("a subscriber was set");
        let out = parse(&format!("{}\nnote\n{}\n", sample_line(&s), check_line(&c)));
        assert_eq!(out.samples, vec![s]);
        let back = out.check.unwrap();
        assert_eq!((back.emitted, back.expected, back.recorded), (1000, 0, 0));
        assert!(!back.ok());
        assert_eq!(out.other, vec!["note"]);
    }
}

//! The cases: each hostile shape at the size the limits test uses (debug binaries, a shared
//! 2-core machine, under a minute in all), at the size the benchmark uses (the sizes of issue 18),
//! and as a fuzzing seed of a few KiB; and the reading commands each one is run with.

use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

use crate::shapes::{Backwards, Shape};

/// Which sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Small enough for the limits test, large enough that a reader past linear shows.
    Test,
    /// The sizes of the benchmark (`scripts/bench-hostile.sh`).
    Bench,
    /// A few KiB each: the fuzz targets' seeds (`fuzz/seeds/`).
    Seed,
}

/// What a case's file is.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// A trace file.
    Trace(Shape),
    /// A ring file of this many full chunks and callsites (for `phosphor recover`).
    Ring { chunks: u32, callsites: u32 },
}

/// A named file of a hostile shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// A short name, also the file's stem.
    pub name: &'static str,
    /// The file.
    pub input: Input,
}

impl Case {
    /// Writes the file into `dir` (as `NAME.phos` or `NAME.ring`); returns its path.
    pub fn write_to(&self, dir: &Path) -> io::Result<PathBuf> {
        let ext = match self.input {
            Input::Trace(_) => "phos",
            Input::Ring { .. } => "ring",
        };
        let path = dir.join(format!("{}.{ext}", self.name));
        let out = BufWriter::with_capacity(1 << 20, std::fs::File::create(&path)?);
        match &self.input {
            Input::Trace(shape) => shape.write(out)?,
            Input::Ring { chunks, callsites } => crate::ring::write_ring(out, *chunks, *callsites)?,
        };
        Ok(path)
    }

    /// The `phosphor` command lines to run on the file at `file` (a `convert --to text` is
    /// included when `text` says the binary has that format). Output goes to stdout, except a
    /// flame graph's (to `/dev/null`) and a recovered file's (to `scratch`).
    pub fn commands(&self, file: &Path, scratch: &Path, text: bool) -> Vec<Vec<String>> {
        let f = file.display().to_string();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        match self.input {
            Input::Ring { .. } => {
                let out = scratch.join(format!("{}.recovered.phos", self.name));
                vec![s(&["recover", &f, "-o", &out.display().to_string()])]
            }
            Input::Trace(_) => {
                let mut c = vec![
                    s(&["info", &f]),
                    s(&["stats", &f]),
                    s(&["stats", &f, "--json"]),
                    s(&["logs", &f]),
                    s(&["logs", &f, "--json"]),
                    s(&["convert", &f, "--to", "chrome"]),
                    s(&["convert", &f, "--to", "perfetto"]),
                    s(&["convert", &f, "--to", "folded"]),
                ];
                if text {
                    c.push(s(&["convert", &f, "--to", "text"]));
                }
                c.push(s(&["flamegraph", &f, "-o", "/dev/null"]));
                // The viewer's index, built beside the file (or in a scratch cache).
                let cache = scratch.join("view-cache").display().to_string();
                c.push(s(&["view", "--index-only", "--cache", &cache, &f]));
                c
            }
        }
    }
}

/// Every case at `scale`.
pub fn catalog(scale: Scale) -> Vec<Case> {
    let seed = scale == Scale::Seed;
    let pick = |test: u32, bench: u32| match scale {
        Scale::Test => test,
        Scale::Bench => bench,
        Scale::Seed => (test / 1_000).clamp(2, 40),
    };
    let mib = |test: usize, bench: usize| match scale {
        Scale::Test => test << 20,
        Scale::Bench => bench << 20,
        Scale::Seed => 2_000,
    };
    let deep = |depth: u32| if seed { 40 } else { depth };
    let trace = |name, shape| Case { name, input: Input::Trace(shape) };
    let mut cases = vec![
        trace(
            "huge-callsite-name",
            Shape::HugeCallsiteName { bytes: mib(16, 60), callsites: pick(32, 1_000), events: 2 },
        ),
        trace(
            "huge-thread-name",
            Shape::HugeThreadName { bytes: mib(16, 60), threads: pick(32, 1_000), events: 2 },
        ),
        trace("unclosed-begins", Shape::UnclosedBegins { depth: deep(10_000) }),
        trace("nested-10k", Shape::NestedScopes { depth: deep(10_000) }),
        trace("nested-deep", Shape::NestedScopes { depth: if seed { 40 } else { pick(30_000, 100_000) } }),
        trace(
            "backward-decreasing",
            Shape::BackwardTimestamps { events: pick(50_000, 1_000_000), order: Backwards::Decreasing },
        ),
        trace(
            "backward-alternating",
            Shape::BackwardTimestamps { events: pick(50_000, 1_000_000), order: Backwards::Alternating },
        ),
    ];
    for (name, ns_per_tick) in [
        ("clock-inf", f64::INFINITY),
        ("clock-nan", f64::NAN),
        ("clock-zero", 0.0),
        ("clock-negative", -2.5),
        ("clock-subnormal", f64::from_bits(1)),
    ] {
        cases.push(trace(name, Shape::ClockRate { ns_per_tick }));
    }
    cases.extend([
        trace("many-callsites", Shape::ManyCallsites { callsites: pick(25_000, 1_000_000) }),
        trace("many-threads", Shape::ManyThreads { threads: pick(20_000, 1_000_000) }),
        trace("tiny-chunks", Shape::TinyChunks { chunks: pick(20_000, 2_000_000) }),
        trace("huge-args", Shape::HugeArgs { events: if seed { 1 } else { pick(500, 20_000) } }),
        trace(
            "log-width",
            Shape::LogWidthBomb {
                repeats: match scale {
                    Scale::Test => 2_048,
                    Scale::Bench => 4_096,
                    Scale::Seed => 8,
                },
                events: pick(1, 4),
            },
        ),
        trace(
            "logs-out-of-order",
            Shape::LogsOutOfOrder { threads: 4, logs: pick(100_000, 1_000_000), params: 2 },
        ),
        trace("asyncs-waiting", Shape::AsyncsWaiting { slices: pick(100_000, 1_000_000) }),
        trace(
            "deep-long-names",
            Shape::DeepLongNames { depth: pick(1_000, 4_000), name_bytes: if seed { 64 } else { 4_096 } },
        ),
        Case {
            name: "ring",
            input: Input::Ring {
                chunks: if seed { 1 } else { pick(2_000, 50_000) },
                callsites: pick(20_000, 500_000),
            },
        },
    ]);
    cases
}

/// Whether `phosphor convert --help` (its text is `help`) lists a `text` format.
pub fn lists_text_format(help: &str) -> bool {
    help.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("- text:") || (l.contains("possible values:") && l.contains(" text"))
    })
}

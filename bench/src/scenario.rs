//! A scenario: one workload shape of one tracer, run in batches of `n` events.
//!
//! A batch reports two costs: the wall time of the calling thread's loop, and the CPU time of the
//! whole process from the loop's start until the tracer has taken in every event (its collector
//! or writer thread drained). For a tracer without threads of its own the two agree; for fastrace
//! and tracing-chrome the second is the honest figure (PEERS.md).
//!
//! After the timed rounds, [`Scenario::check`] says whether what was emitted was recorded. No
//! figure is quoted without it.

use std::time::Instant;

use crate::sys::process_cpu_ns;

/// Where a scenario sits in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// The limit loop, the clocks, the empty loop.
    Reference,
    /// Phosphor.
    Phosphor,
    /// Another tracer.
    Peer,
}

/// How a scenario is named and compared.
#[derive(Clone, Debug)]
pub struct Info {
    /// Short id, for `--scenario` and callgrind.
    pub id: &'static str,
    /// The table's label.
    pub label: &'static str,
    /// Its section of the table.
    pub group: Group,
    /// For a peer: the id of the Phosphor scenario doing the same work, the denominator of its
    /// "× Phosphor" ratios.
    pub vs: Option<&'static str>,
    /// A remark printed under the table.
    pub note: &'static str,
}

/// What one batch cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// Events in the batch.
    pub events: u64,
    /// Wall time of the calling thread's loop, ns.
    pub wall_ns: u64,
    /// CPU time of the process (all threads) from the loop's start until the tracer had taken in
    /// every event of the batch, ns.
    pub cpu_ns: u64,
}

/// Runs `f` (a batch of `n` events) and times it; for tracers without threads of their own.
pub fn timed(n: u64, f: impl FnOnce()) -> Sample {
    let cpu0 = process_cpu_ns();
    let t0 = Instant::now();
    f();
    let wall_ns = t0.elapsed().as_nanos() as u64;
    Sample { events: n, wall_ns, cpu_ns: process_cpu_ns() - cpu0 }
}

/// Bytes per event, where a check could measure them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Footprint {
    /// In the tracer's memory while recording.
    pub memory: Option<f64>,
    /// In the file the tracer writes.
    pub disk: Option<f64>,
}

/// The recorded-count check of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// Events the workload emitted (for a disabled reference, the calls made).
    pub emitted: u64,
    /// Events that should have been recorded: `emitted`, or 0 where nothing should be.
    pub expected: u64,
    /// Events found recorded.
    pub recorded: u64,
    /// How they were counted.
    pub how: String,
    /// The scenario records nothing, so there is nothing to count.
    pub not_applicable: bool,
    /// Bytes per recorded event, if measured.
    pub footprint: Footprint,
    /// Something else the check found wrong (drops, an undecodable record).
    pub problem: Option<String>,
}

impl Check {
    /// A check of `recorded` against `expected`.
    pub fn new(emitted: u64, expected: u64, recorded: u64, how: impl Into<String>) -> Check {
        Check {
            emitted,
            expected,
            recorded,
            how: how.into(),
            not_applicable: false,
            footprint: Footprint::default(),
            problem: None,
        }
    }

    /// No count applies (a clock read, the empty loop).
    pub fn not_applicable(why: &str) -> Check {
        Check {
            emitted: 0,
            expected: 0,
            recorded: 0,
            how: why.into(),
            not_applicable: true,
            footprint: Footprint::default(),
            problem: None,
        }
    }

    /// The same check, with bytes per event.
    pub fn with_footprint(mut self, footprint: Footprint) -> Check {
        self.footprint = footprint;
        self
    }

    /// Whether the recorded count is the expected one.
    pub fn ok(&self) -> bool {
        self.not_applicable || (self.recorded == self.expected && self.problem.is_none())
    }

    /// The same check, failed for `problem`.
    pub fn with_problem(mut self, problem: impl Into<String>) -> Check {
        self.problem = Some(problem.into());
        self
    }

    /// For the table: `✓ 1000/1000 (how)` or `✗ …`.
    pub fn summary(&self) -> String {
        if self.not_applicable {
            return format!("n/a ({})", self.how);
        }
        format!(
            "{} {}/{} ({}{})",
            if self.ok() { "✓" } else { "✗ MISMATCH" },
            self.recorded,
            self.expected,
            self.how,
            self.problem.as_deref().map(|p| format!("; {p}")).unwrap_or_default()
        )
    }
}

/// A workload of one tracer.
pub trait Scenario {
    /// Its name and comparisons.
    fn info(&self) -> &Info;

    /// Batch sizes are multiples of this (fastrace's root and puffin's frame hold 1,000 events).
    fn granule(&self) -> u64 {
        1
    }

    /// The smallest batch that measures the tracer in its steady state (0: any).
    fn min_batch(&self) -> u64 {
        0
    }

    /// Runs one batch of `n` events (a multiple of [`Scenario::granule`]).
    fn run(&mut self, n: u64) -> Sample;

    /// Runs `batches` batches of `n` events; a scenario that runs in a child process overrides
    /// this to start the process once per round.
    fn run_round(&mut self, n: u64, batches: usize) -> Vec<Sample> {
        (0..batches).map(|_| self.run(n)).collect()
    }

    /// The recorded-count check, after the timed rounds.
    fn check(&mut self) -> Check;
}

//! The timed rounds: batch sizes calibrated per scenario, scenarios interleaved, medians taken.
//!
//! Every round runs every scenario once, in an order rotated by one place each round, so that
//! neither machine drift nor a scenario's position (after which cache-hungry neighbour, say)
//! favours any scenario. In a round a scenario runs a few batches of the same size, and the
//! round's figure is their median; the table quotes the median over the rounds. Ratios are taken
//! round by round (a scenario against the limit loop of the same round) and then their median,
//! so slow drift cancels out of them.

use crate::scenario::{Info, Scenario};
use crate::stats::{median, range};

/// How long and how often to measure.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Rounds over all scenarios.
    pub rounds: usize,
    /// Batches of each scenario in a round.
    pub batches: usize,
    /// Target length of one batch, ns.
    pub batch_ns: f64,
}

/// One round's figures of a scenario, per event.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RoundFig {
    /// Calling thread, wall time, ns.
    pub wall: f64,
    /// Process CPU until drained, ns.
    pub cpu: f64,
}

/// A scenario's figures over all rounds.
#[derive(Clone, Debug)]
pub struct Measured {
    /// The scenario.
    pub info: Info,
    /// Events per batch.
    pub batch_events: u64,
    /// One entry per round.
    pub rounds: Vec<RoundFig>,
}

impl Measured {
    /// Median over rounds of the calling thread's ns/event.
    pub fn wall(&self) -> f64 {
        median(&mut self.rounds.iter().map(|r| r.wall).collect::<Vec<_>>())
    }

    /// Median over rounds of the process CPU ns/event.
    pub fn cpu(&self) -> f64 {
        median(&mut self.rounds.iter().map(|r| r.cpu).collect::<Vec<_>>())
    }

    /// Smallest and largest round figure of the calling thread.
    pub fn wall_range(&self) -> (f64, f64) {
        range(&self.rounds.iter().map(|r| r.wall).collect::<Vec<_>>())
    }

    /// Median over rounds of this scenario's wall figure divided by `other`'s of the same round.
    pub fn wall_ratio(&self, other: &Measured) -> f64 {
        ratio(&self.rounds, &other.rounds, |r| r.wall)
    }

    /// The same for process CPU.
    pub fn cpu_ratio(&self, other: &Measured) -> f64 {
        ratio(&self.rounds, &other.rounds, |r| r.cpu)
    }
}

fn ratio(a: &[RoundFig], b: &[RoundFig], f: impl Fn(&RoundFig) -> f64) -> f64 {
    median(&mut a.iter().zip(b).map(|(x, y)| f(x) / f(y)).collect::<Vec<_>>())
}

/// The batch size for `s` that takes about `batch_ns` (but at least its `min_batch`), from pilot
/// batches grown until one takes a millisecond.
pub fn calibrate(s: &mut dyn Scenario, batch_ns: f64) -> u64 {
    let g = s.granule();
    let mut n = 1_000u64.next_multiple_of(g);
    loop {
        let sample = s.run(n);
        if sample.wall_ns >= 1_000_000 || n >= 1 << 26 {
            let per_event = (sample.wall_ns as f64 / n as f64).max(0.05);
            let target = (batch_ns / per_event) as u64;
            return target.max(s.min_batch()).clamp(g, 1 << 28).next_multiple_of(g);
        }
        n *= 4;
    }
}

/// Runs the rounds. `progress` hears about each round.
pub fn measure(
    scenarios: &mut [Box<dyn Scenario>],
    plan: Plan,
    mut progress: impl FnMut(&str),
) -> Vec<Measured> {
    let mut out: Vec<Measured> = Vec::with_capacity(scenarios.len());
    for s in scenarios.iter_mut() {
        progress(&format!("calibrating {}", s.info().id));
        let batch_events = calibrate(s.as_mut(), plan.batch_ns);
        out.push(Measured { info: s.info().clone(), batch_events, rounds: Vec::new() });
    }
    let k = scenarios.len();
    for r in 0..plan.rounds {
        progress(&format!("round {}/{}", r + 1, plan.rounds));
        for j in 0..k {
            let i = (j + r) % k;
            let n = out[i].batch_events;
            let samples = scenarios[i].run_round(n, plan.batches);
            let mut wall: Vec<f64> = samples.iter().map(|s| s.wall_ns as f64 / s.events as f64).collect();
            let mut cpu: Vec<f64> = samples.iter().map(|s| s.cpu_ns as f64 / s.events as f64).collect();
            out[i].rounds.push(RoundFig { wall: median(&mut wall), cpu: median(&mut cpu) });
        }
    }
    out
}

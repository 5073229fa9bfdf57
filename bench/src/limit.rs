//! The references every tracer is measured against: the limit loop (one raw clock read and one
//! 32-byte store, the floor for a timestamped event), two clock reads (`std::time::Instant` and
//! minstant), and the empty loop.
//!
//! Each batch is an `#[inline(never)]` function, so callgrind shows it by name and every scenario
//! gets the same loop around its event (`for i in 0..n`, as in
//! `crates/phosphor/examples/callgrind_instant.rs`).

use std::hint::black_box;

pub use phosphor_limit::{limit_step, limit_stored};

use crate::scenario::{timed, Check, Group, Info, Sample, Scenario};

/// `n` iterations of the limit loop.
#[inline(never)]
pub fn limit_batch(n: u64) {
    for i in 0..n {
        limit_step(i, 7);
    }
}

/// `n` reads of `std::time::Instant::now()` (`clock_gettime(CLOCK_MONOTONIC)` through the vDSO).
#[inline(never)]
pub fn instant_now_batch(n: u64) {
    for _ in 0..n {
        black_box(std::time::Instant::now());
    }
}

/// `n` reads of `minstant::Instant::now()` (the TSC, when minstant finds it usable).
#[inline(never)]
pub fn minstant_batch(n: u64) {
    for _ in 0..n {
        black_box(minstant::Instant::now());
    }
}

/// `n` iterations of an empty loop: what an event compiled out of the program costs.
#[inline(never)]
pub fn empty_batch(n: u64) {
    for i in 0..n {
        black_box(i);
    }
}

/// Which reference a [`Reference`] scenario runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// [`limit_batch`].
    Limit,
    /// [`instant_now_batch`].
    InstantNow,
    /// [`minstant_batch`].
    Minstant,
    /// [`empty_batch`].
    Empty,
}

/// A reference loop as a scenario.
#[derive(Debug)]
pub struct Reference {
    info: Info,
    kind: Kind,
    emitted: u64,
    stored_before: u64,
}

impl Reference {
    /// The scenario for `kind`.
    pub fn new(kind: Kind) -> Reference {
        let (id, label, note) = match kind {
            Kind::Limit => ("limit", "limit loop: `rdtsc` + 32-byte store to a thread-local ring", ""),
            Kind::InstantNow => ("instant-now", "`std::time::Instant::now()`", "clock reference"),
            Kind::Minstant => ("minstant", "`minstant::Instant::now()`", "clock reference"),
            Kind::Empty => (
                "empty",
                "compiled out: the empty loop",
                "what a callsite leaves when Phosphor's `off` feature (or `phosphor-facade` without `enable`) compiles it out: \
                 the loop alone (`crates/phosphor-compile-out` proves the off build)",
            ),
        };
        Reference {
            info: Info { id, label, group: Group::Reference, vs: None, note },
            kind,
            emitted: 0,
            stored_before: limit_stored(),
        }
    }
}

impl Scenario for Reference {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&mut self, n: u64) -> Sample {
        let f = match self.kind {
            Kind::Limit => limit_batch,
            Kind::InstantNow => instant_now_batch,
            Kind::Minstant => minstant_batch,
            Kind::Empty => empty_batch,
        };
        if self.kind == Kind::Limit {
            self.emitted += n;
        }
        timed(n, || f(n))
    }

    fn check(&mut self) -> Check {
        match self.kind {
            Kind::Limit => Check::new(
                self.emitted,
                self.emitted,
                limit_stored() - self.stored_before,
                "stores counted by the ring's cursor",
            ),
            _ => Check::not_applicable("records nothing"),
        }
    }
}

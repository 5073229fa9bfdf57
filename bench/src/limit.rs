//! The references every tracer is measured against: the limit loop (one raw clock read and one
//! 32-byte store, the floor for a timestamped event), two clock reads (`std::time::Instant` and
//! minstant), and the empty loop.
//!
//! Each batch is an `#[inline(never)]` function, so callgrind shows it by name and every scenario
//! gets the same loop around its event (`for i in 0..n`, as in
//! `crates/phosphor/examples/callgrind_instant.rs`).

use std::cell::UnsafeCell;
use std::hint::black_box;

use crate::scenario::{timed, Check, Group, Info, Sample, Scenario};

/// The limit loop's ring: 4096 records of 32 bytes and a cursor, in one thread local.
struct LimitRing {
    pos: UnsafeCell<usize>,
    recs: UnsafeCell<[[u64; 4]; 4096]>,
}

thread_local! {
    static LIMIT: LimitRing =
        const { LimitRing { pos: UnsafeCell::new(0), recs: UnsafeCell::new([[0; 4]; 4096]) } };
}

/// One raw clock read and one 32-byte store into a thread-local ring: the floor for an event.
///
/// Keep in step with `limit_step` in `crates/phosphor/benches/hot_path.rs` and
/// `crates/phosphor/examples/callgrind_instant.rs`: the three copies must measure the same loop.
#[inline(always)]
pub fn limit_step(a: u64, b: u64) {
    // SAFETY: rdtsc has no memory effects and exists on every x86-64 CPU.
    let ts = unsafe { core::arch::x86_64::_rdtsc() };
    LIMIT.with(|r| {
        // SAFETY: [1] the ring is this thread's own, and no reference to it escapes this closure,
        // so nothing else aliases `pos` or `recs` here. [2] The index is masked into bounds.
        unsafe {
            let pos = *r.pos.get();
            (*r.recs.get())[pos & 4095] = [ts, 0x0001_0000_0000_0101, a, b];
            *r.pos.get() = pos.wrapping_add(1);
        }
    });
}

/// Records the limit loop has stored on this thread: its recorded count.
pub fn limit_stored() -> u64 {
    LIMIT.with(|r| {
        // SAFETY: a plain read of this thread's own cursor; no reference into the ring is live.
        unsafe { *r.pos.get() }
    }) as u64
}

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
                "Phosphor has no compile-out feature yet; this is the loop alone",
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

//! In-process aggregate points (DSUI): sums and log-linear histograms.
//!
//! `trace_sum!` and `trace_histogram!` declare a `static` [`Sum`] or [`Histogram`] next to their
//! callsite and add to it while a trace records the callsite; no event is written. The aggregates
//! are never reset: a trace takes a snapshot of each when it starts and again when it stops, and
//! carries the difference ([`delta`]) for the points its categories take, in the
//! [`Trace`](crate::Trace) and its file (format 1.2's aggregates block); `phosphor stats` prints
//! them. So a trace gets what was counted while it ran, whatever other logs start and stop. Counts, sums and buckets
//! subtract exactly; a histogram's minimum and maximum are exact when it was empty at the start,
//! and otherwise the bounds of the lowest and highest buckets that grew.
//!
//! Recording is a few relaxed read-modify-writes on the point's own cache lines: no lock, no
//! allocation. Relaxed is enough because each counter is an independent tally: nothing else is
//! published through them, and the snapshot is taken after `stop` has synchronised with every
//! recording thread (its eviction barrier), so it sees every completed addition.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use phosphor_format::file::{Aggregate, AggregateKind};
use phosphor_format::hist::{bucket_of, bucket_range, BUCKETS};

/// An in-process sum (DSUI's counter).
#[derive(Debug)]
pub struct Sum {
    count: AtomicU64,
    sum: AtomicI64,
}

impl Sum {
    /// A zero sum, usable in a `static`.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Sum {
        Sum { count: AtomicU64::new(0), sum: AtomicI64::new(0) }
    }

    /// Adds `v` (wrapping).
    #[inline(always)]
    pub fn add(&self, v: i64) {
        // Relaxed: independent tallies; see the module docs.
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(v, Ordering::Relaxed);
    }

    /// `(values added, their sum)`.
    pub fn get(&self) -> (u64, i64) {
        // Relaxed: see the module docs.
        (self.count.load(Ordering::Relaxed), self.sum.load(Ordering::Relaxed))
    }
}

/// An in-process log-linear histogram of `u64` values (`phosphor_format::hist`'s buckets:
/// within 6.25% of any value), with their exact count, sum, minimum and maximum. 4 KiB.
#[derive(Debug)]
pub struct Histogram {
    sum: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
}

impl Histogram {
    /// An empty histogram, usable in a `static`.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Histogram {
        Histogram {
            sum: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
            buckets: [const { AtomicU64::new(0) }; BUCKETS],
        }
    }

    /// Records `v`.
    #[inline(always)]
    pub fn record(&self, v: u64) {
        // Relaxed: independent tallies; see the module docs. The sum wraps past 2^64 (a sum of
        // nanoseconds does after 584 years).
        self.buckets[bucket_of(v)].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(v, Ordering::Relaxed);
        self.min.fetch_min(v, Ordering::Relaxed);
        self.max.fetch_max(v, Ordering::Relaxed);
    }

    /// The snapshot as a trace file stores it. The count is the sum of the bucket counts read,
    /// so the two always agree; taken while other threads record, the sum, minimum and maximum
    /// may include values whose bucket increment was not read yet (or the reverse).
    pub fn snapshot(&self) -> AggregateKind {
        let mut buckets = Vec::new();
        let mut count = 0u64;
        for (i, b) in self.buckets.iter().enumerate() {
            // Relaxed: see the module docs.
            let c = b.load(Ordering::Relaxed);
            if c > 0 {
                buckets.push((i as u16, c));
                count += c;
            }
        }
        // Relaxed: see the module docs.
        let min = self.min.load(Ordering::Relaxed);
        AggregateKind::Histogram {
            count,
            sum: self.sum.load(Ordering::Relaxed),
            min: if count == 0 { 0 } else { min },
            max: self.max.load(Ordering::Relaxed),
            buckets,
        }
    }
}

/// The aggregate a callsite adds to. Two are equal when they are the same `static`.
#[derive(Clone, Copy, Debug)]
pub enum AggregateRef {
    /// A `trace_sum!` point.
    Sum(&'static Sum),
    /// A `trace_histogram!` point.
    Histogram(&'static Histogram),
}

impl PartialEq for AggregateRef {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (AggregateRef::Sum(a), AggregateRef::Sum(b)) => std::ptr::eq(*a, *b),
            (AggregateRef::Histogram(a), AggregateRef::Histogram(b)) => std::ptr::eq(*a, *b),
            _ => false,
        }
    }
}

impl Eq for AggregateRef {}

impl AggregateRef {
    /// The snapshot of callsite `id`'s aggregate.
    pub(crate) fn snapshot(self, id: u32) -> Aggregate {
        let kind = match self {
            AggregateRef::Sum(s) => {
                let (count, sum) = s.get();
                AggregateKind::Sum { count, sum }
            }
            AggregateRef::Histogram(h) => h.snapshot(),
        };
        Aggregate { callsite: id, kind }
    }
}

/// What `now` counted since `before` (a snapshot of the same point, taken earlier; `None` if it
/// had counted nothing).
pub(crate) fn delta(now: &Aggregate, before: Option<&Aggregate>) -> Aggregate {
    let kind = match (&now.kind, before.map(|b| &b.kind)) {
        (k, None) => k.clone(),
        (AggregateKind::Sum { count, sum }, Some(AggregateKind::Sum { count: c0, sum: s0 })) => {
            AggregateKind::Sum { count: count.wrapping_sub(*c0), sum: sum.wrapping_sub(*s0) }
        }
        (
            AggregateKind::Histogram { count, sum, min, max, buckets },
            Some(AggregateKind::Histogram { count: c0, sum: s0, buckets: b0, .. }),
        ) => {
            let mut old = b0.iter().copied().peekable();
            let mut grown = Vec::new();
            for &(i, c) in buckets {
                while old.next_if(|(j, _)| *j < i).is_some() {}
                let was = old.next_if(|(j, _)| *j == i).map_or(0, |(_, c)| c);
                if c > was {
                    grown.push((i, c - was));
                }
            }
            let n: u64 = grown.iter().map(|(_, c)| c).sum();
            let (lo, hi) = match (grown.first(), grown.last()) {
                (Some(f), Some(l)) if *c0 > 0 => (
                    (*min).max(bucket_range(usize::from(f.0)).0),
                    (*max).min(bucket_range(usize::from(l.0)).1),
                ),
                _ if n > 0 => (*min, *max),
                _ => (0, 0),
            };
            debug_assert!(count.wrapping_sub(*c0) == n || *count < *c0);
            AggregateKind::Histogram {
                count: n,
                sum: sum.wrapping_sub(*s0),
                min: lo,
                max: hi,
                buckets: grown,
            }
        }
        (k, Some(_)) => k.clone(), // a different kind: cannot happen for one callsite
    };
    Aggregate { callsite: now.callsite, kind }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sum_counts_and_adds_exactly() {
        let s = Sum::new();
        for v in [5, -7, i64::MAX, 1] {
            s.add(v);
        }
        assert_eq!(s.get(), (4, 5i64.wrapping_sub(7).wrapping_add(i64::MAX).wrapping_add(1)));
    }

    #[test]
    fn a_histogram_keeps_count_sum_min_max_and_buckets() {
        let h = Histogram::new();
        assert_eq!(
            h.snapshot(),
            AggregateKind::Histogram { count: 0, sum: 0, min: 0, max: 0, buckets: vec![] }
        );
        for v in [3, 100, 100, 5000] {
            h.record(v);
        }
        let AggregateKind::Histogram { count, sum, min, max, buckets } = h.snapshot() else { panic!() };
        assert_eq!((count, sum, min, max), (4, 5203, 3, 5000));
        assert_eq!(buckets.len(), 3);
        assert_eq!(buckets[1].1, 2);
        for ((i, _), v) in buckets.iter().zip([3u64, 100, 5000]) {
            let (lo, hi) = bucket_range(usize::from(*i));
            assert!(lo <= v && v <= hi);
        }
    }

    #[test]
    fn a_delta_is_what_was_added_between_two_snapshots() {
        static S: Sum = Sum::new();
        static H: Histogram = Histogram::new();
        let (rs, rh) = (AggregateRef::Sum(&S), AggregateRef::Histogram(&H));
        S.add(10);
        H.record(5);
        H.record(1000);
        let (s0, h0) = (rs.snapshot(16), rh.snapshot(17));
        S.add(-3);
        S.add(4);
        for v in [1000, 1001, 70] {
            H.record(v);
        }
        assert_eq!(delta(&rs.snapshot(16), Some(&s0)).kind, AggregateKind::Sum { count: 2, sum: 1 });
        let AggregateKind::Histogram { count, sum, min, max, buckets } =
            delta(&rh.snapshot(17), Some(&h0)).kind
        else {
            panic!()
        };
        assert_eq!((count, sum), (3, 2071));
        assert_eq!(buckets, [(bucket_of(70) as u16, 1), (bucket_of(1000) as u16, 2)]);
        // Not empty at the start: bounds of the lowest and highest grown buckets.
        assert!(min <= 70 && bucket_range(bucket_of(70)).0 <= min, "{min}");
        assert!(max >= 1001 && max <= bucket_range(bucket_of(1000)).1, "{max}");
        // Empty at the start: exact.
        let fresh = Histogram::new();
        fresh.record(9);
        let f = AggregateRef::Histogram(Box::leak(Box::new(fresh))).snapshot(18);
        assert_eq!(delta(&f, None), f);
    }

    #[test]
    fn concurrent_recording_loses_nothing() {
        static S: Sum = Sum::new();
        static H: Histogram = Histogram::new();
        const PER: u64 = 100_000;
        std::thread::scope(|s| {
            for t in 0..4u64 {
                s.spawn(move || {
                    for i in 0..PER {
                        S.add(1);
                        H.record(t * PER + i);
                    }
                });
            }
        });
        assert_eq!(S.get(), (4 * PER, 4 * PER as i64));
        let AggregateKind::Histogram { count, sum, min, max, buckets } = H.snapshot() else { panic!() };
        let n = 4 * PER;
        assert_eq!((count, sum, min, max), (n, n * (n - 1) / 2, 0, n - 1));
        let mut expect = vec![0u64; BUCKETS];
        for v in 0..n {
            expect[bucket_of(v)] += 1;
        }
        for (i, c) in &buckets {
            assert_eq!(*c, expect[usize::from(*i)], "bucket {i}");
        }
        assert_eq!(buckets.len(), expect.iter().filter(|c| **c > 0).count());
    }
}

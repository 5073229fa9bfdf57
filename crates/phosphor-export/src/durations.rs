//! Distributions of durations in bounded memory: exact count, total, min, mean and max; p50 and
//! p99 exact up to [`EXACT_SAMPLES`] durations, then from an [`hdrhistogram`] with
//! [`PERCENTILE_DIGITS`] significant digits.
//!
//! # Error bound
//!
//! A histogram of 3 significant digits keeps 2048 linear sub-buckets per power of two, so every
//! bucket is narrower than 1/1024 of the values in it (values below 2048 ticks are exact). A
//! percentile is read as the highest value of its bucket, clamped to the exact min and max, so it
//! is never below the true (nearest-rank) percentile and exceeds it by less than 0.1%
//! ([`PERCENTILE_ERROR`]), before the conversion of ticks to nanoseconds.
//!
//! # Memory
//!
//! A kind with at most [`EXACT_SAMPLES`] durations keeps them (8 bytes each). A histogram takes
//! 16 KiB, plus 8 KiB per power of two between 2048 ticks and its longest duration: about 190 KiB
//! for durations up to a second at 3 GHz.

use hdrhistogram::Histogram;
use phosphor_format::file::ClockInfo;

/// Up to this many durations, a kind keeps them all and its percentiles are exact.
pub const EXACT_SAMPLES: usize = 256;

/// Significant digits of the percentile histograms.
pub const PERCENTILE_DIGITS: u8 = 3;

/// The bound on the relative error of p50 and p99 (over the true nearest-rank percentile) once a
/// kind has more than [`EXACT_SAMPLES`] durations.
pub const PERCENTILE_ERROR: f64 = 0.001;

/// A distribution of durations, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DurationStats {
    /// Durations measured.
    pub samples: u64,
    /// Their sum.
    pub total_ns: u64,
    /// Shortest.
    pub min_ns: u64,
    /// Mean (the exact total over the count, rounded down).
    pub mean_ns: u64,
    /// Median, nearest rank: the smallest duration with at least half at or below it.
    pub p50_ns: u64,
    /// 99th percentile, nearest rank.
    pub p99_ns: u64,
    /// Longest.
    pub max_ns: u64,
    /// Whether p50 and p99 are exact; if not, they are within [`PERCENTILE_ERROR`] above.
    pub exact_percentiles: bool,
}

/// The accumulator of one distribution, in clock ticks.
#[derive(Clone, Debug, Default)]
pub(crate) struct Durations {
    count: u64,
    total: u128,
    min: u64,
    max: u64,
    store: Store,
}

#[derive(Clone, Debug)]
enum Store {
    /// Every duration, while there are at most [`EXACT_SAMPLES`].
    Exact(Vec<u64>),
    Histogram(Box<Histogram<u64>>),
}

impl Default for Store {
    fn default() -> Store {
        Store::Exact(Vec::new())
    }
}

fn histogram() -> Box<Histogram<u64>> {
    Box::new(Histogram::new(PERCENTILE_DIGITS).expect("3 significant digits are in hdrhistogram's range"))
}

/// Records `ticks`, growing the histogram's range as needed (`saturating_record` would clamp to
/// the current range instead).
fn record(h: &mut Histogram<u64>, ticks: u64) {
    if h.record(ticks).is_err() {
        // Only a range past what the counts array can index; then the top of the range.
        h.saturating_record(ticks);
    }
}

impl Durations {
    /// Adds a duration of `ticks`.
    pub(crate) fn add(&mut self, ticks: u64) {
        if self.count == 0 {
            (self.min, self.max) = (ticks, ticks);
        } else {
            self.min = self.min.min(ticks);
            self.max = self.max.max(ticks);
        }
        self.count += 1;
        self.total += u128::from(ticks);
        match &mut self.store {
            Store::Exact(v) if v.len() < EXACT_SAMPLES => v.push(ticks),
            Store::Exact(v) => {
                let mut h = histogram();
                for &t in v.iter().chain([&ticks]) {
                    record(&mut h, t);
                }
                self.store = Store::Histogram(h);
            }
            Store::Histogram(h) => record(h, ticks),
        }
    }

    /// Adds every duration of `other`.
    pub(crate) fn merge(&mut self, other: &Durations) {
        if other.count == 0 {
            return;
        }
        match &other.store {
            Store::Exact(v) => v.iter().for_each(|&t| self.add(t)),
            Store::Histogram(theirs) => {
                let mut h = match std::mem::take(&mut self.store) {
                    Store::Histogram(h) => h,
                    Store::Exact(v) => {
                        let mut h = histogram();
                        v.iter().for_each(|&t| record(&mut h, t));
                        h
                    }
                };
                // Both histograms have the same precision and auto-resize, so this cannot fail.
                h.add(&**theirs).expect("histograms of the same precision add");
                self.store = Store::Histogram(h);
                if self.count == 0 {
                    (self.min, self.max) = (other.min, other.max);
                } else {
                    self.min = self.min.min(other.min);
                    self.max = self.max.max(other.max);
                }
                self.count += other.count;
                self.total += other.total;
            }
        }
    }

    /// The nearest-rank `p`th percentile (`0 < p ≤ 100`), in ticks.
    fn percentile(&self, p: u32) -> u64 {
        match &self.store {
            Store::Exact(v) => {
                let mut sorted = v.clone();
                sorted.sort_unstable();
                let rank = (v.len() * p as usize).div_ceil(100).clamp(1, v.len());
                sorted[rank - 1]
            }
            Store::Histogram(h) => h.value_at_quantile(f64::from(p) / 100.0).clamp(self.min, self.max),
        }
    }

    /// The distribution in nanoseconds; `None` when no duration was added.
    pub(crate) fn stats(&self, clock: &ClockInfo) -> Option<DurationStats> {
        if self.count == 0 {
            return None;
        }
        let ns = |ticks: u64| clock.ticks_to_ns(ticks);
        let total = u64::try_from(self.total).unwrap_or(u64::MAX);
        Some(DurationStats {
            samples: self.count,
            total_ns: ns(total),
            min_ns: ns(self.min),
            mean_ns: ns((self.total / u128::from(self.count)) as u64),
            p50_ns: ns(self.percentile(50)),
            p99_ns: ns(self.percentile(99)),
            max_ns: ns(self.max),
            exact_percentiles: matches!(self.store, Store::Exact(_)),
        })
    }
}

#[cfg(test)]
mod tests {
    use phosphor_format::file::ClockKind;

    use super::*;

    fn ns_clock(ns_per_tick: f64) -> ClockInfo {
        ClockInfo {
            kind: ClockKind::Tsc,
            ns_per_tick,
            origin_ticks: 0,
            origin_monotonic_ns: 0,
            origin_wall_ns: 0,
            fallback_reason: None,
        }
    }

    fn of(ticks: impl IntoIterator<Item = u64>) -> Durations {
        let mut d = Durations::default();
        ticks.into_iter().for_each(|t| d.add(t));
        d
    }

    #[test]
    fn small_distributions_are_exact_nearest_rank() {
        let d = of([5, 1, 3]).stats(&ns_clock(2.0)).unwrap();
        assert_eq!((d.samples, d.total_ns, d.min_ns, d.mean_ns), (3, 18, 2, 6));
        assert_eq!((d.p50_ns, d.p99_ns, d.max_ns, d.exact_percentiles), (6, 10, 10, true));
        let d = of(1..=100).stats(&ns_clock(1.0)).unwrap();
        assert_eq!((d.p50_ns, d.p99_ns), (50, 99));
        assert_eq!(Durations::default().stats(&ns_clock(1.0)), None);
    }

    #[test]
    fn large_distributions_keep_exact_totals_and_percentiles_within_the_bound() {
        // 1..=1,000,000 µs in ticks of 1 ns, shuffled by a multiplicative step (coprime to n).
        let n: u64 = 1_000_000;
        let d = of((0..n).map(|i| (i * 7_919 % n + 1) * 1_000));
        let s = d.stats(&ns_clock(1.0)).unwrap();
        assert!(!s.exact_percentiles);
        assert_eq!(s.samples, n);
        assert_eq!(s.total_ns, n * (n + 1) / 2 * 1_000);
        assert_eq!((s.min_ns, s.max_ns, s.mean_ns), (1_000, n * 1_000, 500_000_500));
        for (got, exact) in [(s.p50_ns, 500_000_000u64), (s.p99_ns, 990_000_000)] {
            assert!(got >= exact, "{got} < {exact}");
            assert!((got - exact) as f64 <= exact as f64 * PERCENTILE_ERROR, "{got} vs {exact}");
        }
    }

    #[test]
    fn percentiles_never_pass_the_exact_maximum() {
        // Every value in one bucket whose highest equivalent value is above them.
        let d = of(std::iter::repeat_n(1_000_001, 1000));
        let s = d.stats(&ns_clock(1.0)).unwrap();
        assert_eq!((s.p50_ns, s.p99_ns, s.max_ns), (1_000_001, 1_000_001, 1_000_001));
    }

    #[test]
    fn merging_gives_the_distribution_of_both() {
        let clock = ns_clock(1.0);
        for (a, b) in [(10u64, 20u64), (300, 5), (5, 300), (1000, 1000)] {
            let (xs, ys): (Vec<u64>, Vec<u64>) = ((1..=a).collect(), (1..=b).map(|v| v * 3).collect());
            let mut merged = of(xs.clone());
            merged.merge(&of(ys.clone()));
            let whole = of(xs.into_iter().chain(ys));
            let (m, w) = (merged.stats(&clock).unwrap(), whole.stats(&clock).unwrap());
            assert_eq!(
                (m.samples, m.total_ns, m.min_ns, m.max_ns, m.mean_ns),
                (w.samples, w.total_ns, w.min_ns, w.max_ns, w.mean_ns)
            );
            // Values below 2048 sit in exact buckets, so even histograms agree exactly.
            assert_eq!((m.p50_ns, m.p99_ns), (w.p50_ns, w.p99_ns), "{a} + {b}");
        }
    }
}

//! Distributions of durations in bounded memory: exact count, total, min, mean and max; p50 and
//! p99 exact up to [`EXACT_SAMPLES`] durations, then from a histogram of
//! [`PERCENTILE_DIGITS`] significant digits.
//!
//! # Error bound
//!
//! The histogram's bins are HdrHistogram's of 3 significant digits: one per tick below 2048, then
//! 1024 per power of two, so every bin is narrower than 1/1024 of the values in it. A percentile
//! is read as the highest value of its bin, clamped to the exact min and max, so it is never below
//! the true (nearest-rank) percentile and exceeds it by less than 0.1% ([`PERCENTILE_ERROR`]),
//! before the conversion of ticks to nanoseconds.
//!
//! # Memory
//!
//! An accumulator takes 48 bytes. Past two durations, a kind with at most [`EXACT_SAMPLES`] keeps
//! them all (8 bytes each); past that, the histogram keeps the bins that hold a duration (about
//! 20 bytes each), never more than its durations: a file's many kinds cannot take more than its
//! events do. (A dense histogram of the bins takes 8 KiB per power of two its durations span,
//! 256 KiB for 30 of them: 1.3 GB for a 49 MB file of 5,000 kinds of 300 scopes each.)

use phosphor_format::file::ClockInfo;
use rustc_hash::FxHashMap as HashMap;

/// Up to this many durations, a kind keeps them all and its percentiles are exact.
pub const EXACT_SAMPLES: usize = 256;

/// Significant digits of the percentile histograms' bins.
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

/// The accumulator of one distribution, in clock ticks: 48 bytes, and a store past two durations
/// (a kind counted once or twice, as most of a file with many kinds are, allocates nothing).
///
/// `phosphor stats` keeps one per kind; other tools (the viewer's statistics of a range) use it
/// to give the same figures for the same durations.
///
/// ```
/// use phosphor_export::Durations;
/// # let clock = phosphor::format::ClockInfo::monotonic(0, 0);
/// let mut d = Durations::default();
/// for ticks in [30, 10, 20] {
///     d.add(ticks);
/// }
/// let s = d.stats(&clock).unwrap();
/// assert_eq!((s.samples, s.total_ns, s.p50_ns, s.max_ns), (3, 60, 20, 30));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Durations {
    count: u64,
    /// The exact total, a `u128` as its low and high words: 8-byte alignment keeps the
    /// accumulator 16 bytes smaller.
    total: [u64; 2],
    /// The shortest and the longest.
    range: [u64; 2],
    /// Past two durations (`range` holds those two), all of them or their histogram.
    more: Option<Box<Store>>,
}

#[derive(Clone, Debug)]
enum Store {
    /// Every duration, while there are at most [`EXACT_SAMPLES`].
    Exact(Vec<u64>),
    Histogram(Bins),
}

/// Durations counted by bin (see the module's notes), only the bins that hold one.
#[derive(Clone, Debug, Default)]
struct Bins(HashMap<u16, u64>);

/// Bins below 2048: one per tick.
const EXACT_BINS: u64 = 2048;

/// The bin of `ticks`: itself below 2048, else 1024 bins per power of two.
fn bin(ticks: u64) -> u16 {
    if ticks < EXACT_BINS {
        return ticks as u16;
    }
    // The power of two from 11 to 63, the mantissa from 1024 to 2047: at most bin 56,319.
    let power = 63 - u64::from(ticks.leading_zeros());
    let mantissa = ticks >> (power - 10);
    (EXACT_BINS + (power - 11) * 1024 + (mantissa - 1024)) as u16
}

/// The highest value of bin `b`.
fn highest(b: u16) -> u64 {
    let b = u64::from(b);
    if b < EXACT_BINS {
        return b;
    }
    let (power, mantissa) = (11 + (b - EXACT_BINS) / 1024, 1024 + (b - EXACT_BINS) % 1024);
    let end = u128::from(mantissa + 1) << (power - 10);
    u64::try_from(end - 1).unwrap_or(u64::MAX)
}

/// The lowest value of bin `b`.
fn lowest(b: u16) -> u64 {
    match b {
        0 => 0,
        b => highest(b - 1) + 1,
    }
}

impl Bins {
    fn add(&mut self, ticks: u64) {
        *self.0.entry(bin(ticks)).or_default() += 1;
    }

    /// The value at quantile `q` of the `count` durations counted, as HdrHistogram reads it: the
    /// highest value of the bin that holds the ⌈q·count⌉th smallest.
    fn quantile(&self, q: f64, count: u64) -> u64 {
        let rank = ((q * count as f64).ceil() as u64).max(1);
        let mut bins: Vec<(u16, u64)> = self.0.iter().map(|(&b, &n)| (b, n)).collect();
        bins.sort_unstable();
        let mut seen = 0u64;
        for (b, n) in bins {
            seen = seen.saturating_add(n);
            if seen >= rank {
                return highest(b);
            }
        }
        0
    }
}

impl Durations {
    fn total(&self) -> u128 {
        u128::from(self.total[0]) | (u128::from(self.total[1]) << 64)
    }

    fn add_total(&mut self, ticks: u128) {
        let t = self.total().saturating_add(ticks);
        self.total = [t as u64, (t >> 64) as u64];
    }

    /// The durations, while there are at most two.
    fn few(&self) -> &[u64] {
        &self.range[..self.count.min(2) as usize]
    }

    /// Adds a duration of `ticks`.
    pub fn add(&mut self, ticks: u64) {
        let [min, max] = self.range;
        self.range = if self.count == 0 { [ticks, ticks] } else { [min.min(ticks), max.max(ticks)] };
        self.count += 1;
        self.add_total(u128::from(ticks));
        let Some(store) = self.more.as_deref_mut() else {
            if self.count == 3 {
                self.more = Some(Box::new(Store::Exact(vec![min, max, ticks])));
            }
            return;
        };
        match store {
            Store::Exact(v) if v.len() < EXACT_SAMPLES => v.push(ticks),
            Store::Exact(v) => {
                let mut h = Bins::default();
                v.iter().chain([&ticks]).for_each(|&t| h.add(t));
                *store = Store::Histogram(h);
            }
            Store::Histogram(h) => h.add(ticks),
        }
    }

    /// Adds every duration of `other`.
    pub fn merge(&mut self, other: &Durations) {
        match other.more.as_deref() {
            None => other.few().iter().for_each(|&t| self.add(t)),
            Some(Store::Exact(v)) => v.iter().for_each(|&t| self.add(t)),
            Some(Store::Histogram(theirs)) => {
                let mut h = match self.more.take().map(|b| *b) {
                    Some(Store::Histogram(h)) => h,
                    mine => {
                        let mut h = Bins::default();
                        let exact = match &mine {
                            Some(Store::Exact(v)) => v.as_slice(),
                            _ => self.few(),
                        };
                        exact.iter().for_each(|&t| h.add(t));
                        h
                    }
                };
                for (&b, &n) in &theirs.0 {
                    *h.0.entry(b).or_default() += n;
                }
                self.more = Some(Box::new(Store::Histogram(h)));
                let ([a, b], [c, d]) = (self.range, other.range);
                self.range = if self.count == 0 { other.range } else { [a.min(c), b.max(d)] };
                self.count += other.count;
                self.add_total(other.total());
            }
        }
    }

    /// The nearest-rank `p`th percentile (`0 < p ≤ 100`), in ticks.
    fn percentile(&self, p: u32) -> u64 {
        let exact = match self.more.as_deref() {
            Some(Store::Histogram(h)) => {
                return h.quantile(f64::from(p) / 100.0, self.count).clamp(self.range[0], self.range[1]);
            }
            Some(Store::Exact(v)) => v.as_slice(),
            None => self.few(),
        };
        let mut sorted = exact.to_vec();
        sorted.sort_unstable();
        let rank = (exact.len() * p as usize).div_ceil(100).clamp(1, exact.len());
        sorted[rank - 1]
    }

    /// Every duration, in ticks and in increasing order, while they are kept exactly (at most
    /// [`EXACT_SAMPLES`]); `None` once they are counted in bins.
    pub fn exact_ticks(&self) -> Option<Vec<u64>> {
        let mut v = match self.more.as_deref() {
            Some(Store::Histogram(_)) => return None,
            Some(Store::Exact(v)) => v.clone(),
            None => self.few().to_vec(),
        };
        v.sort_unstable();
        Some(v)
    }

    /// The durations counted by bin (see the module's notes), exact ones binned too: `(lowest,
    /// highest, count)` of each bin that holds one, in ticks and in increasing order.
    pub fn bins(&self) -> Vec<(u64, u64, u64)> {
        let mut h = Bins::default();
        let bins = match self.more.as_deref() {
            Some(Store::Histogram(h)) => h,
            Some(Store::Exact(v)) => {
                v.iter().for_each(|&t| h.add(t));
                &h
            }
            None => {
                self.few().iter().for_each(|&t| h.add(t));
                &h
            }
        };
        let mut out: Vec<(u64, u64, u64)> =
            bins.0.iter().map(|(&b, &n)| (lowest(b), highest(b), n)).collect();
        out.sort_unstable();
        out
    }

    /// The distribution in nanoseconds; `None` when no duration was added.
    pub fn stats(&self, clock: &ClockInfo) -> Option<DurationStats> {
        if self.count == 0 {
            return None;
        }
        let ns = |ticks: u64| clock.ticks_to_ns(ticks);
        let total = u64::try_from(self.total()).unwrap_or(u64::MAX);
        Some(DurationStats {
            samples: self.count,
            total_ns: ns(total),
            min_ns: ns(self.range[0]),
            mean_ns: ns((self.total() / u128::from(self.count)) as u64),
            p50_ns: ns(self.percentile(50)),
            p99_ns: ns(self.percentile(99)),
            max_ns: ns(self.range[1]),
            exact_percentiles: !matches!(self.more.as_deref(), Some(Store::Histogram(_))),
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
    fn a_kind_counted_once_or_twice_takes_48_bytes_and_no_store() {
        assert_eq!(std::mem::size_of::<Durations>(), 48);
        let clock = ns_clock(1.0);
        for n in 1..=3u64 {
            let d = of((1..=n).rev().map(|t| t * 10));
            assert_eq!(d.more.is_some(), n == 3, "{n} durations");
            let s = d.stats(&clock).unwrap();
            assert_eq!((s.samples, s.min_ns, s.max_ns, s.total_ns), (n, 10, n * 10, n * (n + 1) * 5));
            // Nearest rank: the median of two is the lower, p99 the higher.
            assert_eq!((s.p50_ns, s.p99_ns), ([10, 10, 20][n as usize - 1], n * 10));
        }
    }

    #[test]
    fn bins_tile_the_durations_each_narrower_than_a_thousandth_of_its_values() {
        assert_eq!((bin(u64::MAX), highest(bin(u64::MAX))), (56_319, u64::MAX));
        for b in 1..=56_319u16 {
            // Each bin starts where the one before it ends.
            assert_eq!(bin(highest(b - 1) + 1), b);
            assert_eq!(bin(highest(b)), b);
        }
        for v in (0..5000).chain((11..64).flat_map(|p| [1u64 << p, (1 << p) + 1, (3 << (p - 1)) - 1])) {
            let h = highest(bin(v));
            assert!(h >= v && (h - v) as f64 <= v as f64 / 1024.0, "{v}: {h}");
            if v < 2048 {
                assert_eq!(h, v);
            }
        }
    }

    #[test]
    fn a_histogram_keeps_only_the_bins_that_hold_a_duration() {
        // 10,000 durations at 30 powers of two: a dense histogram spans 30 × 1024 bins.
        let d = of((0..10_000u64).map(|i| 1 << (11 + i % 30)));
        let Some(Store::Histogram(bins)) = d.more.as_deref() else { panic!("{d:?}") };
        assert_eq!(bins.0.len(), 30);
        let s = d.stats(&ns_clock(1.0)).unwrap();
        assert_eq!((s.p50_ns, s.max_ns), ((1 << 25) + (1 << 15) - 1, 1 << 40));
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
        for (a, b) in [
            (10u64, 20u64),
            (300, 5),
            (5, 300),
            (1000, 1000),
            (1, 2),
            (2, 1),
            (2, 2),
            (0, 2),
            (2, 300),
            (300, 1),
        ] {
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

//! The statistics `phosphor diff` decides with: the Mann-Whitney rank test of two samples of
//! durations, and distribution-free confidence bounds of a quantile.
//!
//! # The rank test
//!
//! Mann and Whitney's U counts the pairs (one duration of each side) in which the new one is the
//! longer (a tie counts half). Under "both sides draw from one distribution" it has mean
//! `n₁n₂/2` and, with ties corrected, variance `n₁n₂/12 · ((N+1) − Σ(t³−t)/(N(N−1)))` over the
//! groups of `t` tied values. Up to [`PERMUTATION_LIMIT`] durations in all, the p-value is exact:
//! the share of the `C(N, n₂)` ways to split the (mid)ranks whose sum is at least as far from its
//! mean as the one seen. Past that it comes from the normal approximation, with a continuity
//! correction. Durations kept exactly on both sides are compared as they are ([`RankMethod::Exact`],
//! or [`RankMethod::Permutation`] when small); otherwise both sides are compared by bin
//! ([`RankMethod::Binned`]: HdrHistogram's bins, narrower than 0.1%, so values in one bin tie).
//!
//! # Quantile bounds
//!
//! The number of durations at or below the true q-quantile of a distribution is binomial
//! `B(n, q)`, so the order statistics of ranks `nq ∓ z·√(nq(1−q))` (one rank wider each way, to
//! cover the normal approximation's error) bound it, each on its own side with confidence 99.9%
//! ([`BOUND_Z`]), whatever the distribution. A rank below 1 has no lower bound (0), a rank past `n`
//! no upper bound: 100 durations cannot bound a p99 from above. From bins, a lower bound is the
//! lowest value of the rank's bin and an upper bound its highest.

/// A change is significant when the rank test's two-sided p-value is below this.
pub const SIGNIFICANCE: f64 = 0.001;

/// The normal quantile of 0.999: each quantile bound holds with confidence 99.9%.
pub const BOUND_Z: f64 = 3.090_232_306_167_813;

/// Up to this many durations on both sides together (each kept exactly), the rank test's p-value
/// is computed exactly over every permutation.
pub const PERMUTATION_LIMIT: u64 = 40;

/// How a row's rank test was done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RankMethod {
    /// On the exact durations, p-value exact over every permutation (small samples).
    Permutation,
    /// On the exact durations, p-value from the normal approximation.
    Exact,
    /// On the durations' histogram bins (a side had more than
    /// [`EXACT_SAMPLES`](crate::EXACT_SAMPLES)), p-value from the normal approximation.
    Binned,
}

impl RankMethod {
    /// `rank-permutation`, `rank-exact` or `rank-binned`.
    pub fn as_str(self) -> &'static str {
        match self {
            RankMethod::Permutation => "rank-permutation",
            RankMethod::Exact => "rank-exact",
            RankMethod::Binned => "rank-binned",
        }
    }
}

/// The outcome of a rank test of the new durations against the base ones.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RankTest {
    /// How it was done.
    pub method: RankMethod,
    /// Mann-Whitney's U of the new side: pairs in which the new duration is the longer, ties half.
    pub u: f64,
    /// `u` over the pairs: the chance that a new duration is longer than a base one (0.5: no
    /// shift), ties counted half.
    pub p_new_longer: f64,
    /// The standardised U (normal approximation, continuity-corrected; 0 when every value ties).
    pub z: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// `p_value` < [`SIGNIFICANCE`].
    pub significant: bool,
}

impl RankTest {
    /// Significant, with the new durations the longer.
    pub fn slower(&self) -> bool {
        self.significant && self.p_new_longer > 0.5
    }

    /// Significant, with the new durations the shorter.
    pub fn faster(&self) -> bool {
        self.significant && self.p_new_longer < 0.5
    }
}

/// Durations in nanoseconds as a diff compares them: groups of equal values (or of one histogram
/// bin: `lo..=hi`) in increasing order.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Sample {
    groups: Vec<Group>,
    n: u64,
    exact: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Group {
    lo: u64,
    hi: u64,
    count: u64,
}

impl Sample {
    /// Exact durations, in increasing order.
    pub(crate) fn exact(sorted: impl IntoIterator<Item = u64>) -> Sample {
        let mut groups: Vec<Group> = Vec::new();
        for v in sorted {
            match groups.last_mut() {
                Some(g) if g.hi == v => g.count += 1,
                _ => groups.push(Group { lo: v, hi: v, count: 1 }),
            }
        }
        Sample { n: groups.iter().map(|g| g.count).sum(), groups, exact: true }
    }

    /// Bins `(lowest, highest, count)`, in increasing order. Bins whose highest values agree
    /// (once converted to nanoseconds) are one group.
    pub(crate) fn binned(bins: impl IntoIterator<Item = (u64, u64, u64)>) -> Sample {
        let mut groups: Vec<Group> = Vec::new();
        for (lo, hi, count) in bins {
            match groups.last_mut() {
                Some(g) if g.hi == hi => g.count += count,
                _ => groups.push(Group { lo, hi, count }),
            }
        }
        Sample { n: groups.iter().map(|g| g.count).sum(), groups, exact: false }
    }

    /// The group holding the duration of rank `rank` (1-based, at most `n`).
    fn at_rank(&self, rank: u64) -> Option<&Group> {
        let mut seen = 0u64;
        self.groups.iter().find(|g| {
            seen += g.count;
            seen >= rank
        })
    }

    /// The nearest-rank `pct`th percentile (as `phosphor stats` reads it: the highest value of
    /// its bin), clamped to `[min, max]`.
    pub(crate) fn percentile(&self, pct: u64, min: u64, max: u64) -> u64 {
        let rank = (u128::from(self.n) * u128::from(pct)).div_ceil(100).max(1) as u64;
        self.at_rank(rank).map_or(0, |g| g.hi).clamp(min, max.max(min))
    }

    /// Bounds of the `pct`th percentile (see the module's notes): the lower (0 if none) and the
    /// upper (`None` if the sample cannot bound it from above), clamped to `[min, max]`.
    pub(crate) fn percentile_bounds(&self, pct: u64, min: u64, max: u64) -> (u64, Option<u64>) {
        let (n, q) = (self.n as f64, pct as f64 / 100.0);
        let spread = BOUND_Z * (n * q * (1.0 - q)).sqrt();
        let lower = (n * q - spread).floor() - 1.0;
        let upper = (n * q + spread).ceil() + 1.0;
        let lo = if lower >= 1.0 {
            self.at_rank(lower as u64).map_or(0, |g| g.lo).clamp(min, max.max(min))
        } else {
            0
        };
        let hi =
            if upper <= n { self.at_rank(upper as u64).map(|g| g.hi.clamp(min, max.max(min))) } else { None };
        (lo, hi)
    }
}

/// Tests whether `new`'s durations differ from `base`'s (see the module's notes). Both must be
/// exact or both binned.
pub(crate) fn rank_test(base: &Sample, new: &Sample) -> RankTest {
    let (n1, n2) = (base.n as f64, new.n as f64);
    let total = n1 + n2;
    // One pass over the merged groups: the new side's rank sum (midranks) and the ties' term.
    let (mut below, mut rank_sum, mut ties) = (0f64, 0f64, 0f64);
    let mut merged = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < base.groups.len() || j < new.groups.len() {
        let (a, b) = (base.groups.get(i), new.groups.get(j));
        let v = match (a, b) {
            (Some(a), Some(b)) => a.hi.min(b.hi),
            (Some(a), None) => a.hi,
            (None, Some(b)) => b.hi,
            (None, None) => break,
        };
        let ca = a.filter(|g| g.hi == v).map_or(0, |g| g.count);
        let cb = b.filter(|g| g.hi == v).map_or(0, |g| g.count);
        i += usize::from(ca > 0);
        j += usize::from(cb > 0);
        let t = (ca + cb) as f64;
        let midrank = below + (t + 1.0) / 2.0;
        rank_sum += cb as f64 * midrank;
        ties += t * t * t - t;
        below += t;
        merged.push((ca, cb));
    }
    let u = rank_sum - n2 * (n2 + 1.0) / 2.0;
    let mean = n1 * n2 / 2.0;
    let variance =
        if total > 1.0 { n1 * n2 / 12.0 * ((total + 1.0) - ties / (total * (total - 1.0))) } else { 0.0 };
    let z = if variance > 0.0 {
        let d = u - mean;
        (d.abs() - 0.5).max(0.0).copysign(d) / variance.sqrt()
    } else {
        0.0
    };
    let exact = base.exact && new.exact;
    let method = match exact {
        true if base.n + new.n <= PERMUTATION_LIMIT => RankMethod::Permutation,
        true => RankMethod::Exact,
        false => RankMethod::Binned,
    };
    let p_value = if variance <= 0.0 {
        // An empty side, or every value tied: nothing tells the sides apart.
        1.0
    } else if method == RankMethod::Permutation {
        permutation_p(&merged, new.n as usize)
    } else {
        erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0)
    };
    let pairs = n1 * n2;
    RankTest {
        method,
        u,
        p_new_longer: if pairs > 0.0 { u / pairs } else { 0.5 },
        z,
        p_value,
        significant: p_value < SIGNIFICANCE,
    }
}

/// The exact two-sided p-value of the new side's rank sum, over every way to choose which `n2`
/// of the durations are new. `groups` are the tied groups in order, `(base count, new count)`.
/// Ranks are doubled (midranks of ties are then whole) and the sums counted by dynamic
/// programming: `ways[k][s]`, the subsets of `k` of the durations seen with doubled rank sum `s`.
fn permutation_p(groups: &[(u64, u64)], n2: usize) -> f64 {
    let n: u64 = groups.iter().map(|(a, b)| a + b).sum();
    let max_sum = (n * (n + 1)) as usize;
    let mut ways = vec![vec![0f64; max_sum + 1]; n2 + 1];
    ways[0][0] = 1.0;
    let (mut below, mut seen, mut observed) = (0u64, 0usize, 0u64);
    for &(a, b) in groups {
        let t = a + b;
        // Doubled midrank of the group: 2·below + t + 1.
        let r = (2 * below + t + 1) as usize;
        observed += b * r as u64;
        for _ in 0..t {
            seen += 1;
            for k in (1..=n2.min(seen)).rev() {
                let (lower, upper) = ways.split_at_mut(k);
                let (from, to) = (&lower[k - 1], &mut upper[0]);
                for s in (r..=max_sum).rev() {
                    to[s] += from[s - r];
                }
            }
        }
        below += t;
    }
    // Doubled mean: n2 · (n + 1).
    let mean = (n2 as u64 * (n + 1)) as f64;
    let far = (observed as f64 - mean).abs();
    let (mut hit, mut all) = (0f64, 0f64);
    for (s, &w) in ways[n2].iter().enumerate() {
        all += w;
        // Half a doubled rank of slack for the float comparison of whole numbers.
        if (s as f64 - mean).abs() >= far - 0.5 {
            hit += w;
        }
    }
    (hit / all).min(1.0)
}

/// The complementary error function, by Abramowitz and Stegun's 7.1.26 (absolute error below
/// 1.5·10⁻⁷, ample for a threshold of 10⁻³), for `x ≥ 0`.
pub(crate) fn erfc(x: f64) -> f64 {
    if x <= 0.0 {
        // No deviation at all (the formula gives 1 − 10⁻⁹ there).
        return 1.0;
    }
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    (poly * (-x * x).exp()).clamp(0.0, 2.0)
}

//! Log-linear histogram buckets, shared by the runtime's histogram points and the tools.
//!
//! Values are `u64`. Values below [`SUB_BUCKETS`] (8) have a bucket each; above, each power of two
//! `[2^e, 2^(e+1))` is split into 8 equal buckets, so a bucket is never wider than 1/8 of its
//! lower bound: any value the tools report from a bucket (its midpoint) is within 6.25% of every
//! value the bucket holds. [`BUCKETS`] (496) buckets cover the whole `u64` range; a histogram is
//! a fixed array of them, so recording never allocates. This is HDR histogram's layout with 3
//! significant bits.

/// Sub-buckets per power of two (and the number of exact small values).
pub const SUB_BUCKETS: usize = 8;
const SUB_BITS: u32 = 3;

/// Buckets needed for every `u64`: 8 exact values, then 8 per power of two from 2^3 to 2^63.
pub const BUCKETS: usize = SUB_BUCKETS + (64 - SUB_BITS as usize) * SUB_BUCKETS;

/// The bucket holding `v`. Branch-light: one leading-zero count, a shift and a mask.
#[inline(always)]
pub const fn bucket_of(v: u64) -> usize {
    if v < SUB_BUCKETS as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // 2^e <= v < 2^(e+1), e >= 3
    let sub = (v >> (e - SUB_BITS)) as usize & (SUB_BUCKETS - 1);
    SUB_BUCKETS + (e - SUB_BITS) as usize * SUB_BUCKETS + sub
}

/// The inclusive range `(low, high)` of bucket `i` (`i < BUCKETS`; larger indices give the last
/// bucket's range).
pub const fn bucket_range(i: usize) -> (u64, u64) {
    let i = if i < BUCKETS { i } else { BUCKETS - 1 };
    if i < SUB_BUCKETS {
        return (i as u64, i as u64);
    }
    let e = ((i - SUB_BUCKETS) / SUB_BUCKETS) as u32 + SUB_BITS;
    let sub = ((i - SUB_BUCKETS) % SUB_BUCKETS) as u64;
    let width = 1u64 << (e - SUB_BITS);
    let low = (1u64 << e) + sub * width;
    (low, low + (width - 1))
}

/// The value reported for bucket `i`: its midpoint.
pub const fn bucket_value(i: usize) -> u64 {
    let (low, high) = bucket_range(i);
    low + (high - low) / 2
}

/// The `q`-quantile (0.0 to 1.0) of a histogram given as sparse `(bucket index, count)` pairs by
/// ascending index, as trace files store them: the midpoint of the bucket holding the sample of
/// rank `ceil(q × count)`, so within 6.25% of the exact quantile (exact below 8). `None` for an
/// empty histogram.
pub fn quantile(buckets: &[(u16, u64)], q: f64) -> Option<u64> {
    let total: u64 = buckets.iter().map(|(_, c)| *c).fold(0, u64::saturating_add);
    if total == 0 {
        return None;
    }
    let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
    let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
    let mut seen = 0u64;
    for &(i, c) in buckets {
        seen = seen.saturating_add(c);
        if seen >= rank {
            return Some(bucket_value(usize::from(i)));
        }
    }
    buckets.last().map(|&(i, _)| bucket_value(usize::from(i)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_falls_in_its_buckets_range() {
        let check = |v: u64| {
            let i = bucket_of(v);
            assert!(i < BUCKETS, "{v}: bucket {i}");
            let (lo, hi) = bucket_range(i);
            assert!(lo <= v && v <= hi, "{v} not in bucket {i} = [{lo}, {hi}]");
        };
        (0..70_000).for_each(check);
        for e in 0..64 {
            let p = 1u64 << e;
            for v in [p - 1, p, p + 1, p | (p >> 1), p.wrapping_mul(3) / 2] {
                check(v);
            }
        }
        check(u64::MAX);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            check(x >> (x % 64));
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn buckets_are_contiguous_ascending_and_at_most_an_eighth_wide() {
        assert_eq!(bucket_range(0), (0, 0));
        for i in 1..BUCKETS {
            let (plo, phi) = bucket_range(i - 1);
            let (lo, hi) = bucket_range(i);
            assert_eq!(lo, phi + 1, "bucket {i} starts where {} ends", i - 1);
            assert!(plo <= phi && lo <= hi);
            assert!(hi - lo <= lo / 8, "bucket {i} [{lo}, {hi}] is too wide");
        }
        assert_eq!(bucket_range(BUCKETS - 1).1, u64::MAX);
    }

    #[test]
    fn quantiles_are_within_the_bucket_error() {
        // 1..=10,000 once each: the exact q-quantile is ceil(q × 10,000).
        let mut counts = vec![0u64; BUCKETS];
        for v in 1..=10_000u64 {
            counts[bucket_of(v)] += 1;
        }
        let sparse: Vec<(u16, u64)> =
            counts.iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, c)| (i as u16, *c)).collect();
        for q in [0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0] {
            let exact = ((q * 10_000f64).ceil() as u64).max(1);
            let got = quantile(&sparse, q).unwrap();
            let err = (got as f64 - exact as f64).abs() / exact as f64;
            assert!(err <= 0.0625, "q={q}: {got} vs {exact}");
        }
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[(5, 3)], 0.5), Some(5), "small values are exact");
        assert_eq!(quantile(&[(2, 1), (6, 1)], f64::NAN), Some(2));
    }
}

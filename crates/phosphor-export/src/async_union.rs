//! How long at least one async slice of a name was open: the union of its pairs' intervals
//! ([`Union`]), beside the sum of their durations, which counts overlapping slices again (38,820
//! overlapping `item` slices of a 67 ms trace add up to 401 s).
//!
//! Pairs complete in file order, not time order: chunks come thread by thread, and a slice's end
//! may be read before its begin. So a pair can land anywhere on the time line, and the union keeps
//! the disjoint intervals found so far in a sorted map, merging each pair into those it overlaps.
//! Exact, that takes an interval per gap between pairs, up to one per pair. To bound it, a name
//! keeps at most [`MAX_INTERVALS`]: past that the smallest gaps are filled until half remain, and
//! their lengths are added up as the most by which the union may be over ([`Union::error`]).
//! Overlapping slices (the common case, and the one the sum misleads on) merge into few intervals
//! and stay exact. A name costs at most about `MAX_INTERVALS` × 40 bytes (40 KiB).

use std::collections::BTreeMap;

/// The most disjoint intervals a name keeps.
pub(crate) const MAX_INTERVALS: usize = 1024;

/// The union of intervals, in ticks: exact, or at most [`Union::error`] over.
#[derive(Debug, Default)]
pub(crate) struct Union {
    /// Start → end of disjoint intervals that do not touch.
    spans: BTreeMap<u64, u64>,
    /// The gaps filled to stay within [`MAX_INTERVALS`], added up.
    error: u64,
}

impl Union {
    /// Adds `[begin, end)`; an empty or reversed interval adds nothing.
    pub(crate) fn add(&mut self, begin: u64, end: u64) {
        if end <= begin {
            return;
        }
        let (mut begin, mut end) = (begin, end);
        // The interval starting at or before `begin` that reaches it.
        if let Some((&s, &e)) = self.spans.range(..=begin).next_back() {
            if e >= begin {
                begin = s;
                end = end.max(e);
                self.spans.remove(&s);
            }
        }
        // Those starting inside the new one.
        while let Some((&s, &e)) = self.spans.range(begin..=end).next() {
            end = end.max(e);
            self.spans.remove(&s);
        }
        self.spans.insert(begin, end);
        if self.spans.len() > MAX_INTERVALS {
            self.compact(MAX_INTERVALS / 2);
        }
    }

    /// Fills the smallest gaps until `keep` intervals remain, counting what they add.
    fn compact(&mut self, keep: usize) {
        let spans: Vec<(u64, u64)> = std::mem::take(&mut self.spans).into_iter().collect();
        // Gap i lies between interval i and interval i + 1.
        let mut gaps: Vec<(u64, usize)> =
            spans.windows(2).enumerate().map(|(i, w)| (w[1].0 - w[0].1, i)).collect();
        let fill = spans.len().saturating_sub(keep);
        gaps.sort_unstable();
        let mut filled = vec![false; spans.len()];
        for &(gap, i) in &gaps[..fill.min(gaps.len())] {
            filled[i] = true;
            self.error = self.error.saturating_add(gap);
        }
        let mut current: Option<(u64, u64)> = None;
        for (i, &(s, e)) in spans.iter().enumerate() {
            current = Some(match current {
                Some((cs, _)) => (cs, e),
                None => (s, e),
            });
            if !filled[i] {
                if let Some((cs, ce)) = current.take() {
                    self.spans.insert(cs, ce);
                }
            }
        }
    }

    /// The union's length.
    pub(crate) fn len(&self) -> u64 {
        self.spans.iter().fold(0u64, |sum, (s, e)| sum.saturating_add(e - s))
    }

    /// The most by which [`Union::len`] may be over the exact union (0: exact).
    pub(crate) fn error(&self) -> u64 {
        self.error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact union of `intervals`, by sorting them all.
    fn exact(intervals: &[(u64, u64)]) -> u64 {
        let mut v: Vec<(u64, u64)> = intervals.iter().copied().filter(|(b, e)| e > b).collect();
        v.sort_unstable();
        let (mut total, mut reach) = (0, 0);
        for (b, e) in v {
            let from = b.max(reach);
            if e > from {
                total += e - from;
            }
            reach = reach.max(e);
        }
        total
    }

    #[test]
    fn overlapping_intervals_in_any_order_count_once() {
        let mut u = Union::default();
        // Nested, overlapping, touching, disjoint, and empty or reversed ones that add nothing.
        let intervals =
            [(50, 60), (0, 100), (10, 20), (100, 150), (300, 310), (305, 400), (200, 200), (9, 3)];
        for (b, e) in intervals {
            u.add(b, e);
        }
        assert_eq!((u.len(), u.error()), (150 + 100, 0));
        assert_eq!(u.len(), exact(&intervals));
        assert_eq!(u.spans.len(), 2);
    }

    #[test]
    fn a_new_interval_swallows_those_it_spans() {
        let mut u = Union::default();
        for i in 0..10 {
            u.add(i * 10, i * 10 + 5);
        }
        u.add(3, 92);
        assert_eq!(u.spans.into_iter().collect::<Vec<_>>(), [(0, 95)]);
    }

    #[test]
    fn pairs_arriving_out_of_time_order_give_the_exact_union() {
        // Two threads' worth of overlapping slices, read thread by thread, ends before begins.
        let mut intervals = Vec::new();
        let mut x = 12345u64;
        for _ in 0..5_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let b = (x >> 33) % 1_000_000;
            intervals.push((b, b + 1 + (x >> 20) % 2_000));
        }
        let mut u = Union::default();
        for &(b, e) in intervals.iter().rev() {
            u.add(b, e);
        }
        assert_eq!((u.len(), u.error()), (exact(&intervals), 0));
    }

    #[test]
    fn many_disjoint_intervals_stay_bounded_and_the_union_is_within_its_stated_error() {
        let mut u = Union::default();
        let mut intervals = Vec::new();
        // 100,000 slices of 10 ticks, gaps of 1 to 90 ticks, read from the last to the first.
        for i in (0..100_000u64).rev() {
            let b = i * 100 + (i * 7919) % 90;
            intervals.push((b, b + 10));
            u.add(b, b + 10);
            assert!(u.spans.len() <= MAX_INTERVALS);
        }
        let truth = exact(&intervals);
        assert!(u.error() > 0);
        assert!(u.len() >= truth && u.len() - u.error() <= truth, "{} - {} vs {truth}", u.len(), u.error());
    }
}

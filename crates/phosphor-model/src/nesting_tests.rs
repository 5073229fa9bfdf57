//! Tests of the nesting engine alone, with labels 1, 2, 3… standing for names.

use std::cmp::Reverse;

use super::*;
use crate::test_rng::Rng;

/// Records what the engine resolves.
#[derive(Default)]
struct Record {
    slices: Vec<Slice>,
    problems: Vec<Problem>,
}

impl Sink for Record {
    fn slice(&mut self, s: &Slice) {
        self.slices.push(*s);
    }

    fn problem(&mut self, p: Problem) {
        self.problems.push(p);
    }
}

/// A resolved slice as the tests compare them: `(tid, path, kind, start, dur, self)`.
type Resolved = (u32, Vec<Label>, SliceKind, u64, u64, u64);

/// Finishes `n` and returns its slices, paths spelled out, sorted; and the problems.
fn finish(mut n: Nesting, mut r: Record) -> (Vec<Resolved>, Vec<Problem>) {
    n.finish(&mut r);
    let mut slices: Vec<Resolved> = r
        .slices
        .iter()
        .map(|s| (s.tid, n.paths().labels(s.path), s.kind, s.start, s.dur, s.self_ticks))
        .collect();
    slices.sort();
    (slices, r.problems)
}

use SliceKind::{Mark, Scope, Unclosed};

#[test]
fn complete_events_adopt_the_slices_recorded_before_them() {
    let (mut n, mut r) = (Nesting::new(1000), Record::default());
    // 1 [0, 100] > 2 [10, 50] > 3 [20, 30]; then 2 [60, 70] under 1. Children first.
    n.complete(7, 3, 20, 10, &mut r);
    n.complete(7, 2, 10, 40, &mut r);
    n.complete(7, 2, 60, 10, &mut r);
    n.complete(7, 1, 0, 100, &mut r);
    let (slices, problems) = finish(n, r);
    assert_eq!(
        slices,
        [
            (7, vec![1], Scope, 0, 100, 50),
            (7, vec![1, 2], Scope, 10, 40, 30),
            (7, vec![1, 2], Scope, 60, 10, 10),
            (7, vec![1, 2, 3], Scope, 20, 10, 10),
        ]
    );
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn begin_end_pairs_prefix_what_they_enclose_and_are_adopted_like_slices() {
    let (mut n, mut r) = (Nesting::new(1000), Record::default());
    // 9 [0, 200] (complete) > 1 begin/end [5, 100] > 2 [10, 20] (complete) and a mark 4 at 30.
    n.begin(1, 1, 5);
    n.complete(1, 2, 10, 10, &mut r);
    n.mark(1, 4, 30, &mut r);
    n.end(1, 1, 100, &mut r);
    n.complete(1, 9, 0, 200, &mut r);
    let (slices, problems) = finish(n, r);
    assert_eq!(
        slices,
        [
            (1, vec![9], Scope, 0, 200, 105),
            (1, vec![9, 1], Scope, 5, 95, 85),
            (1, vec![9, 1, 2], Scope, 10, 10, 10),
            (1, vec![9, 1, 4], Mark, 30, 0, 0),
        ]
    );
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn threads_nest_separately_even_when_their_events_interleave() {
    let (mut n, mut r) = (Nesting::new(1000), Record::default());
    n.complete(1, 2, 10, 5, &mut r);
    n.complete(2, 2, 10, 5, &mut r);
    n.complete(2, 1, 0, 50, &mut r);
    let (slices, _) = finish(n, r);
    assert_eq!(
        slices,
        [(1, vec![2], Scope, 10, 5, 5), (2, vec![1], Scope, 0, 50, 45), (2, vec![1, 2], Scope, 10, 5, 5)]
    );
}

#[test]
fn a_mark_at_the_end_tick_of_an_earlier_slice_is_after_it_but_inside_a_parent_ending_then() {
    let (mut n, mut r) = (Nesting::new(1000), Record::default());
    n.complete(1, 2, 0, 10, &mut r);
    n.mark(1, 4, 10, &mut r);
    n.complete(1, 1, 0, 10, &mut r);
    let (slices, _) = finish(n, r);
    // Equal intervals: the one recorded first is the child.
    assert_eq!(
        slices,
        [(1, vec![1], Scope, 0, 10, 0), (1, vec![1, 2], Scope, 0, 10, 10), (1, vec![1, 4], Mark, 10, 0, 0)]
    );
}

#[test]
fn a_slice_recorded_after_one_that_contains_it_goes_inside_it() {
    let (mut n, mut r) = (Nesting::new(1000), Record::default());
    // Explicit times: the parent 1 [0, 100] first, then 2 [10, 60], then 3 [20, 30].
    n.complete(1, 1, 0, 100, &mut r);
    n.complete(1, 3, 20, 10, &mut r);
    n.complete(1, 2, 10, 50, &mut r);
    let (slices, problems) = finish(n, r);
    assert_eq!(
        slices,
        [
            (1, vec![1], Scope, 0, 100, 50),
            (1, vec![1, 2], Scope, 10, 50, 40),
            (1, vec![1, 2, 3], Scope, 20, 10, 10)
        ]
    );
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn partially_overlapping_siblings_are_interlaced_and_stay_siblings() {
    let (mut n, mut r) = (Nesting::new(1000), Record::default());
    // 1 [0, 50], then 2 [40, 80] starts inside it and ends after it.
    n.complete(3, 1, 0, 50, &mut r);
    n.complete(3, 2, 40, 40, &mut r);
    // 4 [100, 150] pending, then 5 [90, 120] ends inside it: 4 starts inside 5 and ends after it.
    n.complete(3, 4, 100, 50, &mut r);
    n.complete(3, 5, 90, 30, &mut r);
    let (slices, problems) = finish(n, r);
    let paths: Vec<Vec<Label>> = slices.iter().map(|s| s.1.clone()).collect();
    assert_eq!(paths, [vec![1], vec![2], vec![4], vec![5]]);
    assert_eq!(
        problems,
        [
            Problem { tid: 3, ts: 40, kind: ProblemKind::Interlaced { scope: 2, other: 1 } },
            Problem { tid: 3, ts: 100, kind: ProblemKind::Interlaced { scope: 5, other: 4 } },
        ]
    );
}

#[test]
fn a_slice_recorded_inside_an_open_begin_but_started_before_it_is_interlaced_with_it() {
    let (mut n, mut r) = (Nesting::new(1000), Record::default());
    n.begin(1, 1, 50);
    n.complete(1, 2, 40, 20, &mut r); // [40, 60] while 1 is open since 50
    n.end(1, 1, 100, &mut r);
    let (slices, problems) = finish(n, r);
    assert_eq!(problems, [Problem { tid: 1, ts: 50, kind: ProblemKind::Interlaced { scope: 2, other: 1 } }]);
    // It keeps the begin's name, as viewers draw it.
    assert_eq!(slices[1].1, [1, 2]);
}

#[test]
fn ends_that_do_not_match_are_reported_with_thread_and_time() {
    let (mut n, mut r) = (Nesting::new(1000), Record::default());
    n.end(1, 5, 1, &mut r);
    n.begin(1, 1, 10);
    n.begin(1, 2, 20);
    n.end(1, 1, 30, &mut r); // closes 2
    n.end(1, 1, 40, &mut r); // closes 1
    n.begin(1, 3, 50);
    n.complete(1, 4, 55, 5, &mut r);
    let (slices, problems) = finish(n, r);
    assert_eq!(
        problems,
        [
            Problem { tid: 1, ts: 1, kind: ProblemKind::EndWithoutBegin { end: 5 } },
            Problem { tid: 1, ts: 30, kind: ProblemKind::WrongName { open: 2, end: 1 } },
            Problem { tid: 1, ts: 50, kind: ProblemKind::LeftOpen { open: 3 } },
        ]
    );
    assert_eq!(
        slices,
        [
            (1, vec![1], Scope, 10, 30, 20),
            (1, vec![1, 2], Scope, 20, 10, 10),
            (1, vec![3], Unclosed, 50, 0, 0),
            (1, vec![3, 4], Scope, 55, 5, 5),
        ]
    );
}

#[test]
fn a_flat_stream_keeps_at_most_the_limit_pending_and_resolves_the_oldest_first() {
    let (mut n, mut r) = (Nesting::new(64), Record::default());
    let mut most = 0;
    for i in 0..10_000u64 {
        n.complete(1, 1, i * 10, 5, &mut r);
        most = most.max(n.pending());
    }
    assert_eq!(most, 64);
    assert!(n.pending() <= 64);
    // Resolved in start order, all at the top level.
    let starts: Vec<u64> = r.slices.iter().map(|s| s.start).collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(n.resolved_early(), r.slices.len() as u64);
    let (slices, problems) = finish(n, r);
    assert_eq!(slices.len(), 10_000);
    assert!(slices.iter().all(|s| s.1 == [1]));
    assert!(problems.is_empty());
}

#[test]
fn a_parent_arriving_after_its_children_were_resolved_early_is_reported() {
    let (mut n, mut r) = (Nesting::new(8), Record::default());
    for i in 0..20u64 {
        n.complete(1, 2, 10 + i * 10, 5, &mut r);
    }
    n.complete(1, 1, 0, 1000, &mut r);
    let (slices, problems) = finish(n, r);
    assert_eq!(problems, [Problem { tid: 1, ts: 0, kind: ProblemKind::LateParent { scope: 1 } }]);
    // The children resolved early lack the parent's name; the rest have it.
    let top = slices.iter().filter(|s| s.1 == [2]).count();
    let nested = slices.iter().filter(|s| s.1 == [1, 2]).count();
    assert!(top > 0 && nested > 0 && top + nested == 20, "{top} {nested}");
}

#[test]
fn children_resolved_early_inside_an_open_begin_keep_its_name_and_its_self_time() {
    let (mut n, mut r) = (Nesting::new(4), Record::default());
    n.begin(1, 1, 0);
    for i in 0..10u64 {
        n.complete(1, 2, 10 + i * 10, 5, &mut r);
    }
    n.end(1, 1, 200, &mut r);
    let (slices, problems) = finish(n, r);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(slices[0], (1, vec![1], Scope, 0, 200, 150));
    assert_eq!(slices[1..].iter().filter(|s| s.1 == [1, 2]).count(), 10);
}

/// Nested slices `(label, start, end)` filling `[lo, hi)`: disjoint siblings, each with children
/// of its own, none of zero length, no two alike.
fn laminar(rng: &mut Rng, lo: u64, hi: u64, depth: u32, out: &mut Vec<(Label, u64, u64)>) {
    let mut at = lo;
    while depth < 12 && at + 4 <= hi {
        let start = at + rng.below((hi - at) / 4 + 1);
        let end = (start + 2 + rng.below(hi - start - 1)).min(hi);
        if end - start < 2 {
            break;
        }
        out.push((1 + rng.below(4) as Label, start, end));
        // Children strictly inside, so that no interval equals its parent's.
        laminar(rng, start + 1, end - 1, depth + 1, out);
        at = end + rng.below(3);
        if rng.below(3) == 0 {
            break;
        }
    }
}

/// What the slices of a nested family resolve to, worked out by sorting them by start (the longer
/// first) and nesting them with a stack: `(tid 1, path, Scope, start, dur, self)`.
fn reference(slices: &[(Label, u64, u64)]) -> Vec<Resolved> {
    let mut sorted = slices.to_vec();
    sorted.sort_by_key(|&(_, s, e)| (s, Reverse(e)));
    let mut stack: Vec<(Vec<Label>, u64, u64, usize)> = Vec::new(); // path, start, end, index
    let mut out: Vec<Resolved> = Vec::new();
    for &(label, start, end) in &sorted {
        while stack.last().is_some_and(|&(_, _, e, _)| e <= start) {
            stack.pop();
        }
        let mut path = stack.last().map_or(Vec::new(), |(p, ..)| p.clone());
        path.push(label);
        if let Some(&(_, _, _, parent)) = stack.last() {
            out[parent].5 -= end - start;
        }
        stack.push((path.clone(), start, end, out.len()));
        out.push((1, path, Scope, start, end - start, end - start));
    }
    out.sort();
    out
}

#[test]
fn slices_arriving_in_any_order_nest_as_sorting_them_by_start_does() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..200 {
        let mut slices = Vec::new();
        laminar(&mut rng, 0, 10_000, 0, &mut slices);
        // Fisher–Yates: timestamps jump backwards and forwards.
        for i in (1..slices.len()).rev() {
            slices.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let (mut n, mut r) = (Nesting::new(1 << 20), Record::default());
        for &(label, start, end) in &slices {
            n.complete(1, label, start, end - start, &mut r);
        }
        let (got, problems) = finish(n, r);
        assert!(problems.is_empty(), "round {round}: {problems:?}");
        assert_eq!(got, reference(&slices), "round {round}: {slices:?}");
    }
}

#[test]
fn timestamps_going_backwards_cost_a_step_per_slice_not_per_pending_slice() {
    let n_slices = 20_000u64;
    type Start = fn(u64, u64) -> u64;
    let patterns: [(&str, Start); 3] = [
        ("decreasing", |i, n| 2 * (n - i)),
        ("alternating", |i, n| if i % 2 == 0 { i } else { 4 * n - i }),
        ("sawtooth", |i, _| (i % 100) * 1000 + i / 100),
    ];
    for (name, start) in patterns {
        let (mut n, mut r) = (Nesting::new(1 << 20), Record::default());
        let mut starts = Vec::new();
        for i in 0..n_slices {
            let s = start(i, n_slices) * 3;
            starts.push(s);
            n.complete(1, 1, s, 1, &mut r);
        }
        // Every slice is a sibling: placing one takes a lookup, not a move of the others (the
        // sorted list moved half of them).
        assert!(n.steps() <= n_slices, "{name}: {} steps", n.steps());
        let (slices, problems) = finish(n, r);
        assert!(problems.is_empty(), "{name}: {problems:?}");
        starts.sort_unstable();
        let got: Vec<u64> = slices.iter().map(|s| s.3).collect();
        assert_eq!(got, starts, "{name}");
    }
}

#[test]
fn many_marks_at_one_time_are_placed_without_scanning_each_other() {
    let (mut n, mut r) = (Nesting::new(1 << 20), Record::default());
    for _ in 0..20_000 {
        n.mark(1, 4, 5, &mut r);
    }
    n.complete(1, 1, 5, 0, &mut r);
    // The zero-length slice at the same time adopts them all, once.
    assert!(n.steps() <= 20_000, "{} steps", n.steps());
    let (slices, _) = finish(n, r);
    assert_eq!(slices.iter().filter(|s| s.1 == [1, 4]).count(), 20_000);
}

#[test]
fn paths_are_cut_at_the_depth_cap_and_the_slices_below_it_are_counted_by_name() {
    // 10,000 begins never ended: 10,000 paths of up to 10,000 labels without the cap.
    let (mut n, mut r) = (Nesting::new(1000).max_depth(8), Record::default());
    for i in 0..10_000u64 {
        n.begin(1, 1 + (i % 2) as Label, i);
    }
    n.finish(&mut r);
    // The root, 8 levels, one marker and the two names below it.
    assert_eq!(n.paths().len(), 1 + 8 + 1 + 2);
    assert_eq!(n.truncated(), 10_000 - 8);
    assert_eq!(r.slices.len(), 10_000);
    let deepest: Vec<Vec<Label>> =
        r.slices.iter().map(|s| n.paths().labels(s.path)).max().into_iter().collect();
    assert_eq!(deepest[0], [1, 2, 1, 2, 1, 2, 1, 2, DEEPER, 2]);
    assert_eq!(r.problems.len(), 10_000, "each begin left open is reported");
}

#[test]
fn slices_below_the_depth_cap_keep_their_durations_and_the_total_self_time() {
    for outer_first in [false, true] {
        // 2,000 nested slices: innermost first (as scope guards write them) or outermost first
        // (explicit times), where each would go down through all the pending ones.
        let (mut n, mut r) = (Nesting::new(1 << 20).max_depth(16), Record::default());
        let order: Vec<u64> = if outer_first { (0..2000).collect() } else { (0..2000).rev().collect() };
        for &i in &order {
            n.complete(1, 1, 10 * i, 10 * (4000 - 2 * i), &mut r);
        }
        assert!(n.steps() <= 2000 * 18, "outer first {outer_first}: {} steps", n.steps());
        let (slices, problems) = finish(n, r);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(slices.len(), 2000);
        let mut durs: Vec<u64> = slices.iter().map(|s| s.4).collect();
        durs.sort_unstable();
        assert_eq!(durs, (0..2000).rev().map(|i| 10 * (4000 - 2 * i)).collect::<Vec<_>>());
        assert!(slices.iter().all(|s| s.1.len() <= 16 || s.1[16] == DEEPER));
        assert_eq!(slices.iter().map(|s| s.5).sum::<u64>(), 40_000, "outer first {outer_first}");
    }
}

#[test]
fn a_deep_pending_tree_is_dropped_without_recursion() {
    // Nested slices innermost first: a chain 100,000 deep, dropped unresolved (as when a
    // statistics builder is dropped early). Recursive drops overflow the test thread's stack.
    let (mut n, mut r) = (Nesting::new(1 << 20), Record::default());
    for i in (0..100_000u64).rev() {
        n.complete(1, 1, i, 2 * (100_000 - i), &mut r);
    }
    assert_eq!(n.pending(), 100_000);
    drop(n);
}

#[test]
fn a_pending_slice_takes_at_most_72_bytes_its_node_and_its_place_in_a_list() {
    // What DEFAULT_PENDING_LIMIT's bound on memory counts: its node in the arena, and its place
    // in a list if it is in one (a region's, or the children of a slice another went down into;
    // children adopted are chained through their nodes). 80 when the list held the node.
    assert_eq!(std::mem::size_of::<Node<()>>(), 48);
    assert_eq!(std::mem::size_of::<(Key, u32)>(), 24);
}

#[test]
fn a_thread_of_one_pending_slice_takes_no_allocation_of_its_own() {
    // A file of a million threads of one slice each: 144 MB of states and nodes (each thread's
    // node in the arena, one block for all threads), not a million blocks that the allocator
    // keeps once they are freed. (128 before the start and end of the thread's last complete
    // event, which a `phosphor/scope_alloc` after it belongs to.)
    assert_eq!(std::mem::size_of::<Thread<()>>() + std::mem::size_of::<Node<()>>(), 144);
    let (mut n, mut r) = (Nesting::new(DEFAULT_PENDING_LIMIT), Record::default());
    n.complete(7, 1, 10, 5, &mut r);
    assert!(matches!(n.threads[0].top.items, FirstInPlace::One(..)));
    // A second one makes it a list, in order.
    n.complete(7, 1, 0, 5, &mut r);
    assert!(matches!(n.threads[0].top.items, FirstInPlace::Many(..)));
    let starts: Vec<u64> = n.threads[0].top.items.iter().map(|(k, _)| k.0).collect();
    assert_eq!(starts, [0, 10]);
    n.finish(&mut r);
    assert_eq!(n.pending(), 0);
}

//! The walk a [`Sink`] is handed: turned into begins and ends and replayed the way a client that
//! sorts by time with ties in stream order replays them (Perfetto's trace processor), it builds
//! the tree the engine built, however many slices start or end in the same tick.

use super::*;
use crate::test_rng::Rng;

/// A slice of a generated tree: its id (the payload), interval and parent's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Made {
    id: u32,
    start: u64,
    end: u64,
    parent: Option<u32>,
}

/// Makes the children of `[start, end]` (ids from `next`), at most `depth` levels: intervals on a
/// coarse clock, so that they often start with their parent, end with it, touch each other or
/// last no time at all. Appends them in the order scope guards record them: each after its
/// children (post-order).
fn children(
    rng: &mut Rng,
    parent: Option<u32>,
    start: u64,
    end: u64,
    depth: u32,
    next: &mut u32,
    out: &mut Vec<Made>,
) {
    if depth == 0 {
        return;
    }
    let mut at = start;
    for _ in 0..rng.below(4) {
        // Start where the last sibling ended half the time (touching), else a little later.
        let s = (at + rng.below(2) * rng.below(3)).min(end);
        let e = (s + rng.below(4)).min(end);
        let id = *next;
        *next += 1;
        children(rng, Some(id), s, e, depth - 1, next, out);
        out.push(Made { id, start: s, end: e, parent });
        at = e;
    }
}

/// The stream a writer makes of the walk: `(ts, begin, id)`.
#[derive(Default)]
struct Stream(Vec<(u64, bool, u32)>);

impl Sink<u32> for Stream {
    fn enter(&mut self, s: &Slice, id: u32) {
        self.0.push((s.start, true, id));
        self.0.push((s.start + s.dur, false, id));
    }
}

/// The same, with each end written after the slices nested in it ([`Sink::leave`]).
#[derive(Default)]
struct Nested {
    events: Vec<(u64, bool, u32)>,
    open: Vec<u32>,
    /// Each slice's parent in the engine's tree, as the walk tells it.
    parents: Vec<(u32, Option<u32>)>,
}

impl Sink<u32> for Nested {
    fn enter(&mut self, s: &Slice, id: u32) {
        self.events.push((s.start, true, id));
        self.parents.push((id, self.open.last().copied()));
        self.open.push(id);
    }

    fn leave(&mut self, s: &Slice) {
        let id = self.open.pop().expect("a leave follows its enter");
        self.events.push((s.start + s.dur, false, id));
    }
}

/// Each slice's parent as trace processor builds it: events sorted by time (stably: ties in
/// stream order), a begin opening a slice inside the innermost open one, an end closing the
/// innermost open one.
fn replay(mut events: Vec<(u64, bool, u32)>) -> Vec<(u32, Option<u32>)> {
    events.sort_by_key(|e| e.0);
    let (mut open, mut parents) = (Vec::new(), Vec::new());
    for (_, begin, id) in events {
        if begin {
            parents.push((id, open.last().copied()));
            open.push(id);
        } else {
            open.pop();
        }
    }
    parents.sort();
    parents
}

#[test]
fn the_walk_replayed_in_time_order_rebuilds_the_tree_at_every_tie() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut checked = 0;
    for case in 0..2000 {
        let (mut made, mut next) = (Vec::new(), 0);
        // A few top-level slices one after the other, each with a tree under it.
        let mut at = 0;
        for _ in 0..3 {
            let (s, e) = (at, at + rng.below(8));
            let id = next;
            next += 1;
            children(&mut rng, Some(id), s, e, 4, &mut next, &mut made);
            made.push(Made { id, start: s, end: e, parent: None });
            at = e + rng.below(2);
        }
        let mut n = Nesting::<u32>::new(1 << 16);
        let mut walk = Nested::default();
        for m in &made {
            n.complete_with(1, m.id % 5, m.start, m.end - m.start, m.id, &mut walk);
        }
        n.finish(&mut walk);
        // The engine's tree, replayed: the same. (It is not always the tree made: among slices
        // of one interval, or a slice of no length followed by one starting with it, the
        // intervals cannot say which holds which, and the one recorded first goes inside.)
        let mut engine = walk.parents;
        engine.sort();
        assert_eq!(engine.len(), made.len());
        assert_eq!(replay(walk.events), engine, "case {case}: {made:?}");
        // Where the intervals do say, the engine's tree is the one made.
        let unambiguous = made.iter().all(|m| {
            made.iter().all(|o| o.id == m.id || (o.start, o.end) != (m.start, m.end))
                && (m.start < m.end || made.iter().all(|o| o.id == m.id || o.start != m.start))
        });
        if unambiguous {
            let mut want: Vec<_> = made.iter().map(|m| (m.id, m.parent)).collect();
            want.sort();
            assert_eq!(engine, want, "case {case}: {made:?}");
            checked += 1;
        }
    }
    assert!(checked > 30, "only {checked} trees without ambiguous intervals");
}

/// How a generated slice is recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum How {
    /// A complete event, after its children.
    Complete,
    /// A begin before its children and an end after them.
    Pair,
    /// A point (no children).
    Mark,
}

/// What [`mixed`] records, in order: `(id, how, ts, dur)`; a pair's begin is `(id, Pair, ts,
/// None)` and its end `(id, Pair, end, Some(0))`.
type Recorded = Vec<(u32, How, u64, Option<u64>)>;

/// Like [`children`], with begin/end pairs and marks mixed in, recorded as a program records them.
fn mixed(rng: &mut Rng, start: u64, end: u64, depth: u32, next: &mut u32, out: &mut Recorded) {
    if depth == 0 {
        return;
    }
    let mut at = start;
    for _ in 0..rng.below(4) {
        let s = (at + rng.below(2) * rng.below(3)).min(end);
        let e = (s + rng.below(4)).min(end);
        let id = *next;
        *next += 1;
        match rng.below(3) {
            0 => {
                mixed(rng, s, e, depth - 1, next, out);
                out.push((id, How::Complete, s, Some(e - s)));
            }
            1 => {
                out.push((id, How::Pair, s, None));
                mixed(rng, s, e, depth - 1, next, out);
                out.push((id, How::Pair, e, Some(0)));
            }
            _ => out.push((id, How::Mark, s, None)),
        }
        at = e;
    }
}

#[test]
fn begin_end_pairs_and_marks_mixed_in_replay_to_the_engines_tree_too() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for case in 0..2000 {
        let (mut recorded, mut next) = (Vec::new(), 0);
        mixed(&mut rng, 0, 12, 5, &mut next, &mut recorded);
        let mut n = Nesting::<u32>::new(1 << 16);
        let mut walk = Nested::default();
        for &(id, how, ts, dur) in &recorded {
            match (how, dur) {
                (How::Complete, Some(d)) => n.complete_with(1, id % 5, ts, d, id, &mut walk),
                (How::Pair, None) => n.begin_with(1, id % 5, ts, id),
                (How::Pair, Some(_)) => assert!(n.end_with(1, id % 5, ts, &mut walk, |_| {})),
                _ => n.mark_with(1, id % 5, ts, id, &mut walk),
            }
        }
        n.finish(&mut walk);
        let mut engine = walk.parents;
        engine.sort();
        assert_eq!(engine.len(), next as usize, "case {case}");
        assert_eq!(replay(walk.events), engine, "case {case}: {recorded:?}");
    }
}

#[test]
fn ends_written_with_their_begins_would_close_the_wrong_slice_at_a_tie() {
    // Why `leave` exists: parent [0, 5] and child [3, 5] end together; written as enter-time
    // pairs, the parent's end comes first in the stream and closes the child (trace processor's
    // end has no name), so the child's end closes the parent: the same tree, but each slice
    // would get the other's end arguments. Through `leave` the child's end comes first.
    let mut n = Nesting::<u32>::new(100);
    let mut pairs = Stream::default();
    n.complete_with(1, 2, 3, 2, 11, &mut pairs);
    n.complete_with(1, 1, 0, 5, 10, &mut pairs);
    n.finish(&mut pairs);
    let ends: Vec<u32> = pairs.0.iter().filter(|e| !e.1).map(|e| e.2).collect();
    assert_eq!(ends, [10, 11]);

    let mut n = Nesting::<u32>::new(100);
    let mut walk = Nested::default();
    n.complete_with(1, 2, 3, 2, 11, &mut walk);
    n.complete_with(1, 1, 0, 5, 10, &mut walk);
    n.finish(&mut walk);
    let ends: Vec<u32> = walk.events.iter().filter(|e| !e.1).map(|e| e.2).collect();
    assert_eq!(ends, [11, 10]);
}

#[test]
fn a_payload_comes_back_with_its_slice_once() {
    let mut n = Nesting::<u32>::new(4);
    let mut walk = Nested::default();
    // More top-level slices than the limit: some are resolved early, all come back once.
    for i in 0..20u32 {
        n.complete_with(3, 1, u64::from(i) * 10, 5, i + 100, &mut walk);
        n.mark_with(3, 2, u64::from(i) * 10 + 1, i + 200, &mut walk);
    }
    n.begin_with(3, 3, 1000, 300);
    n.end_with(3, 3, 1010, &mut walk, |p| *p += 1);
    n.begin_with(3, 4, 2000, 400);
    n.finish(&mut walk);
    let mut ids: Vec<u32> = walk.events.iter().filter(|e| e.1).map(|e| e.2).collect();
    ids.sort();
    let mut want: Vec<u32> = (100..120).chain(200..220).chain([301, 400]).collect();
    want.sort();
    assert_eq!(ids, want);
}

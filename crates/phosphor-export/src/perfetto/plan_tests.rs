//! Tests of the async lane plan: the colouring alone (valid and minimal, on random intervals), and
//! plans of begins and ends in hostile file orders, replayed as trace processor would draw them.

use super::*;
use crate::test_files::Rng;
use rustc_hash::FxHashMap as HashMap;

/// The most intervals of one class that hold one instant (ends inclusive): the fewest lanes any
/// layout can use for the class.
fn max_overlap(intervals: &[(u32, u64, u64)], class: u32) -> u32 {
    let mine: Vec<_> = intervals.iter().filter(|i| i.0 == class).collect();
    // The most is reached at some interval's start.
    mine.iter().map(|a| mine.iter().filter(|b| b.1 <= a.1 && a.1 <= b.2).count() as u32).max().unwrap_or(0)
}

/// Checks that intervals on one lane are of one class and share no instant.
fn assert_valid(intervals: &[(u32, u64, u64)], lane_of: &[u32]) {
    for (i, a) in intervals.iter().enumerate() {
        for (j, b) in intervals.iter().enumerate().skip(i + 1) {
            if lane_of[i] == lane_of[j] {
                assert_eq!(a.0, b.0, "intervals {a:?} and {b:?} of two classes share lane {}", lane_of[i]);
                assert!(a.2 < b.1 || b.2 < a.1, "{a:?} and {b:?} overlap on lane {}", lane_of[i]);
            }
        }
    }
}

#[test]
fn colouring_uses_the_fewest_lanes_and_reuses_the_one_freed_earliest() {
    // Given out of order: [0, 10], [5, 20], [11, 30], [21, 25] and [40, never] then [50, 60].
    let intervals = [(0, 11, 30), (0, 5, 20), (0, 0, 10), (0, 21, 25), (0, 40, NEVER), (0, 50, 60)];
    let (lanes, count) = colour(&intervals);
    assert_eq!(count, 2, "at most two are open at once");
    assert_valid(&intervals, &lanes);
    // [11, 30] follows [0, 10]; [21, 25] follows [5, 20]; [40, never] takes the lane free since 25
    // and keeps it, so [50, 60] goes on the other one.
    assert_eq!(lanes, [0, 1, 0, 1, 1, 0]);
}

#[test]
fn colouring_never_puts_touching_intervals_or_two_classes_on_one_lane() {
    let intervals = [(0, 0, 10), (0, 10, 20), (1, 21, 30), (0, 20, 20)];
    let (lanes, count) = colour(&intervals);
    assert_valid(&intervals, &lanes);
    // [0, 10] and [10, 20] touch at 10, [10, 20] and [20, 20] at 20: two lanes for class 0.
    assert_eq!(count, 3);
    assert_eq!(lanes[0], lanes[3], "[20, 20] reuses the lane free since 10");
}

#[test]
fn colouring_random_intervals_is_valid_and_minimal_per_class() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..200 {
        let n = 1 + rng.below(60) as usize;
        let intervals: Vec<(u32, u64, u64)> = (0..n)
            .map(|_| {
                let class = rng.below(3) as u32;
                // Few distinct timestamps, so ties are common.
                let start = rng.below(40);
                let end = match rng.below(10) {
                    0 => NEVER,
                    1 => start,
                    _ => start + rng.below(15),
                };
                (class, start, end)
            })
            .collect();
        let (lanes, count) = colour(&intervals);
        assert_valid(&intervals, &lanes);
        let fewest: u32 = (0..3).map(|c| max_overlap(&intervals, c)).sum();
        assert_eq!(count, fewest, "round {round}: {intervals:?}");
        assert!(lanes.iter().all(|&l| l < count));
    }
}

/// One async begin or end: id, begin, timestamp.
type Ev = (u64, bool, u64);

fn plan(events: &[Ev]) -> AsyncPlan {
    let mut b = Builder::default();
    for &(id, begin, ts) in events {
        b.add(0, id, begin, ts);
    }
    b.finish()
}

/// Replays each lane as trace processor draws a track (events sorted by time, ties in file order;
/// a begin opens a slice inside the open ones, an end closes the innermost) and checks that no
/// event meets a slice of another group open on its lane: a pair's end closes only its begin.
/// Groups are the model's pairs and lone halves.
fn assert_drawn_apart(events: &[Ev], plan: &AsyncPlan) {
    assert_eq!(plan.lanes.len(), events.len());
    let mut group_of = vec![usize::MAX; events.len()];
    let mut pairing = Pairing::new(usize::MAX);
    let mut groups = 0;
    let mut group = |_, m: Matched<usize>| {
        match m {
            Matched::Pair { begin, end, .. } => {
                group_of[begin.payload] = groups;
                group_of[end.payload] = groups;
            }
            Matched::Unended(h) | Matched::Unbegun(h) => group_of[h.payload] = groups,
        }
        groups += 1;
    };
    for (i, &(id, begin, ts)) in events.iter().enumerate() {
        pairing.add(AsyncKey { name: 0, id }, begin, ts, i, &mut group);
    }
    pairing.finish(&mut group);
    let mut by_lane: HashMap<u32, Vec<usize>> = HashMap::default();
    for (i, &lane) in plan.lanes.iter().enumerate() {
        by_lane.entry(lane).or_default().push(i);
    }
    for (lane, mut evs) in by_lane {
        evs.sort_by_key(|&i| (events[i].2, i));
        let mut stack: Vec<usize> = Vec::new();
        for i in evs {
            let g = group_of[i];
            if let Some(&top) = stack.last() {
                assert_eq!(
                    group_of[top], g,
                    "lane {lane}: event {i} {:?} meets event {top} {:?} of another slice, open",
                    events[i], events[top]
                );
            }
            if events[i].1 {
                stack.push(i);
            } else {
                stack.pop();
            }
        }
    }
}

#[test]
fn ends_written_before_their_begins_still_share_lanes_as_time_allows() {
    // As the demo writes them: the sink's chunk (every end) before the worker's (every begin).
    // Slice i runs [10 i, 10 i + 15]: two open at once.
    let n = 100;
    let ends = (0..n).map(|i| (i, false, 10 * i + 15));
    let begins = (0..n).map(|i| (i, true, 10 * i));
    let events: Vec<Ev> = ends.chain(begins).collect();
    let p = plan(&events);
    assert_drawn_apart(&events, &p);
    assert_eq!(p.lanes(), 2, "two slices open at once, two lanes");
    assert_eq!(p.lanes[0], p.lanes[n as usize], "a slice's end and begin are on one lane");
}

#[test]
fn unended_unbegun_backwards_and_tied_slices_keep_lanes_of_their_own() {
    let events: Vec<Ev> = vec![
        (1, true, 100),  // never ended: its lane is its own from 100 on
        (2, false, 50),  // never begun: an end alone at 50
        (3, true, 10),   // [10, 20]
        (3, false, 20),  //
        (4, true, 20),   // begins as 3 ends: not on 3's lane
        (4, false, 30),  //
        (5, false, 40),  // ends (40) before it begins (45) in time: open from 45 for ever
        (5, true, 45),   //
        (6, false, 60),  // zero length, its end first in the file: open from 60 for ever
        (6, true, 60),   // (the file's order puts the end first among equal timestamps)
        (7, true, 200),  // after everything: reuses a lane that freed
        (7, false, 210), //
        (3, true, 300),  // id 3 again, long after: a new slice
        (3, false, 310), //
    ];
    let p = plan(&events);
    assert_drawn_apart(&events, &p);
    let lane = |i: usize| p.lanes[i];
    assert_ne!(lane(2), lane(4), "touching at 20: apart");
    assert_eq!(lane(2), lane(3));
    assert_ne!(lane(12), lane(2), "id 3 reused: another group");
    assert!(![lane(0), lane(6), lane(8)].contains(&lane(10)), "slices open for ever are not reused");
    // [10, 20] then 5 from 40 on; [20, 30], the end alone at 50, then 6 from 60 on; 1 from 100 on;
    // [200, 210] then [300, 310].
    assert_eq!(p.lanes(), 4, "{:?}", p.lanes);
}

#[test]
fn an_id_begun_twice_before_its_end_leaves_the_first_begin_open_on_a_lane_of_its_own() {
    let events: Vec<Ev> =
        vec![(1, true, 10), (1, true, 15), (1, false, 20), (1, false, 25), (2, true, 30), (2, false, 40)];
    let p = plan(&events);
    assert_drawn_apart(&events, &p);
    // The model's rule: the second begin gives the first up (never ended), pairs with the first
    // end; the second end is never begun.
    assert_ne!(p.lanes[0], p.lanes[1]);
    assert_eq!(p.lanes[1], p.lanes[2]);
    assert_eq!([p.lanes[3], p.lanes[4], p.lanes[5]], [p.lanes[1]; 3], "after 20, the lane is free");
    assert_eq!(p.lanes(), 2);
}

#[test]
fn random_hostile_orders_never_overlap_and_well_formed_ones_take_the_fewest_lanes() {
    let mut rng = Rng(42);
    for round in 0..300 {
        let hostile = round % 2 == 0;
        let slices = 1 + rng.below(40);
        let mut events: Vec<Ev> = Vec::new();
        let mut truth = Vec::new();
        for s in 0..slices {
            // Ids reused across slices in hostile rounds.
            let id = if hostile { rng.below(8) } else { s };
            let begin = rng.below(100);
            let end = if hostile && rng.below(4) == 0 { rng.below(100) } else { begin + 1 + rng.below(30) };
            let (with_begin, with_end) =
                if hostile { (rng.below(8) != 0, rng.below(8) != 0) } else { (true, true) };
            if with_begin {
                events.push((id, true, begin));
            }
            if with_end {
                events.push((id, false, end));
            }
            truth.push((0, begin, end));
        }
        // Any file order: shuffled (Fisher-Yates).
        for i in (1..events.len()).rev() {
            events.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let p = plan(&events);
        assert_drawn_apart(&events, &p);
        if !hostile {
            // Shuffled begins and ends of distinct ids, every end after its begin: each slice is a
            // group whose interval is exact, so the plan needs only as many lanes as overlap.
            assert_eq!(p.lanes(), max_overlap(&truth, 0), "round {round}: {events:?}");
        }
    }
}

#[test]
fn a_plan_past_its_cap_holds_nothing_and_says_so() {
    let bytes = crate::perfetto::async_tests::async_file(10, 2);
    let mut reader = Reader::new(&bytes[..]).unwrap();
    let clock = reader.header().clock.clone();
    let p = AsyncPlan::build(&mut reader, &clock, 19);
    assert!(p.overflowed());
    assert!(p.lanes.is_empty());
    assert_eq!(p.async_events(), 19);
    let mut reader = Reader::new(&bytes[..]).unwrap();
    let p = AsyncPlan::build(&mut reader, &clock, 20);
    assert!(!p.overflowed());
    assert_eq!((p.async_events(), p.lanes()), (20, 2));
}

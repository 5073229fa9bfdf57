//! The pairing rule and the lanes, on streams of halves.

use super::*;

const A: u32 = 1;
const B: u32 = 2;

fn key(name: u32, id: u64) -> AsyncKey {
    AsyncKey { name, id }
}

/// Feeds `(key, begin, ts)` halves (their payload their place in the stream) and finishes;
/// returns what was handed over, in order.
fn run(max_open: usize, halves: &[(AsyncKey, bool, u64)]) -> (Vec<(AsyncKey, Matched<usize>)>, u64) {
    let mut p = Pairing::new(max_open);
    let mut out = Vec::new();
    let mut sink = |k, m| out.push((k, m));
    for (i, &(k, begin, ts)) in halves.iter().enumerate() {
        p.add(k, begin, ts, i, &mut sink);
    }
    p.finish(&mut sink);
    assert_eq!(p.open(), 0);
    (out, p.overflowed())
}

fn pair(b: (u64, usize), e: (u64, usize), end_first: bool) -> Matched<usize> {
    Matched::Pair { begin: Half { ts: b.0, payload: b.1 }, end: Half { ts: e.0, payload: e.1 }, end_first }
}

#[test]
fn a_begin_pairs_with_its_end_whichever_is_read_first() {
    let (out, _) = run(
        8,
        &[(key(A, 1), true, 10), (key(A, 2), false, 30), (key(A, 1), false, 20), (key(A, 2), true, 15)],
    );
    assert_eq!(out, [(key(A, 1), pair((10, 0), (20, 2), false)), (key(A, 2), pair((15, 3), (30, 1), true))]);
}

#[test]
fn names_and_ids_are_keys_apart() {
    let (out, _) = run(8, &[(key(A, 1), true, 10), (key(B, 1), false, 20), (key(A, 2), false, 30)]);
    assert_eq!(
        out,
        [
            (key(A, 1), Matched::Unended(Half { ts: 10, payload: 0 })),
            (key(A, 2), Matched::Unbegun(Half { ts: 30, payload: 2 })),
            (key(B, 1), Matched::Unbegun(Half { ts: 20, payload: 1 })),
        ]
    );
}

#[test]
fn a_second_begin_gives_up_the_first_which_is_never_ended() {
    let k = key(A, 7);
    let (out, _) = run(8, &[(k, true, 10), (k, true, 20), (k, false, 30)]);
    assert_eq!(out, [(k, Matched::Unended(Half { ts: 10, payload: 0 })), (k, pair((20, 1), (30, 2), false))]);
    // The same with ends: the first end read is never begun.
    let (out, _) = run(8, &[(k, false, 30), (k, false, 40), (k, true, 10)]);
    assert_eq!(out, [(k, Matched::Unbegun(Half { ts: 30, payload: 0 })), (k, pair((10, 2), (40, 1), true))]);
}

#[test]
fn a_reused_id_pairs_each_use_in_file_order() {
    let k = key(A, 3);
    let (out, _) = run(8, &[(k, true, 10), (k, false, 20), (k, true, 30), (k, false, 40)]);
    assert_eq!(out, [(k, pair((10, 0), (20, 1), false)), (k, pair((30, 2), (40, 3), false))]);
}

#[test]
fn a_pair_at_one_instant_or_backwards_in_time_has_no_length() {
    let (out, _) = run(
        8,
        &[(key(A, 1), true, 10), (key(A, 1), false, 10), (key(A, 2), true, 50), (key(A, 2), false, 40)],
    );
    assert_eq!(out, [(key(A, 1), pair((10, 0), (10, 1), false)), (key(A, 2), pair((50, 2), (40, 3), false))]);
    assert_eq!(out.iter().map(|(_, m)| m.length()).collect::<Vec<_>>(), [Some(0), Some(0)]);
    assert_eq!(Matched::Unended(Half { ts: 1, payload: () }).length(), None);
}

#[test]
fn past_the_cap_a_half_is_handed_over_at_once_and_counted() {
    let halves: Vec<_> = (0..5).map(|i| (key(A, i), true, 10 * i)).chain([(key(A, 4), false, 100)]).collect();
    let (out, overflowed) = run(3, &halves);
    assert_eq!(overflowed, 3);
    // The two begins past the cap, at once; the end of the last one finds nothing waiting and no
    // room: at once too; then the three that waited.
    let kinds: Vec<(u64, &str)> = out
        .iter()
        .map(|(k, m)| {
            let kind = match m {
                Matched::Pair { .. } => "pair",
                Matched::Unended(_) => "unended",
                Matched::Unbegun(_) => "unbegun",
            };
            (k.id, kind)
        })
        .collect();
    assert_eq!(
        kinds,
        [(3, "unended"), (4, "unended"), (4, "unbegun"), (0, "unended"), (1, "unended"), (2, "unended")]
    );
}

#[test]
fn memory_stays_at_the_cap_whatever_the_stream() {
    let mut p = Pairing::new(100);
    let mut handed = 0u64;
    let mut count = |_, m: Matched<()>| handed += if matches!(m, Matched::Pair { .. }) { 2 } else { 1 };
    for i in 0..10_000u64 {
        // Ids repeat every 50 halves, begins and ends mixed.
        p.add(key((i % 7) as u32, i % 50), i % 3 == 0, i, (), &mut count);
        assert!(p.open() <= 100);
    }
    p.finish(&mut count);
    // Every half is handed over once: as a pair (two halves) or alone.
    assert_eq!(handed, 10_000);
}

#[test]
fn lanes_are_as_many_as_slices_open_at_one_instant() {
    let mut lanes = Lanes::default();
    // Class 0: [0, 10], [5, 20], [11, 30], [20, 25] (starts as [5, 20] ends: another lane),
    // [31, MAX] (never ends).
    let placed: Vec<u32> = [(0, 10), (5, 20), (11, 30), (20, 25), (31, u64::MAX), (40, 50)]
        .iter()
        .map(|&(s, e)| lanes.place(0, s, e))
        .collect();
    assert_eq!(placed, [0, 1, 0, 2, 1, 2]);
    assert_eq!(lanes.count(), 3);
    // A new class starts from lane 0.
    assert_eq!(lanes.place(1, 0, 5), 0);
    assert_eq!(lanes.count(), 1);
}

//! The summaries (`summary.rs`) change how much a query reads, never what it answers: answers
//! from the index are checked against the same rules applied to the records one by one.

use phosphor_craft::records;
use phosphor_format::{Phase, Record};

use crate::query::{SampleItem, SliceItem, Window};
use crate::summary::SPAN;
use crate::tests::{write_trace, ID};
use crate::{open, BuildOptions};

/// A small deterministic generator.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn a_dense_level_is_taken_in_from_its_summaries_as_its_slices_would_be() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.phos");
    // 20,000 slices of one level: bursts of short slices 1–3 ns apart, and now and then a long
    // one or a long gap, so that some blocks are taken in whole and some are not.
    let mut rng = Rng(0x5eed);
    let (mut t, mut events) = (0u64, Vec::<Vec<Record>>::new());
    let mut slices = Vec::new();
    for _ in 0..20_000 {
        t += 1 + rng.below(3);
        if rng.below(500) == 0 {
            t += 50_000;
        }
        let d = if rng.below(700) == 0 { 20_000 } else { 1 + rng.below(4) };
        events.push(records::complete(t, ID, d).to_vec());
        slices.push((t, t + d));
        t += d;
    }
    write_trace(&path, &[("work", Phase::Complete)], &[(1, events)]);
    let index = open(&path, None, &BuildOptions::default()).unwrap();
    let thread = &index.threads[0];
    assert_eq!(thread.levels, vec![(0, 20_000)]);

    let end = t + 10;
    for (pixels, start, stop) in
        [(100, 0, end), (1600, 0, end), (1000, 1000, end / 3), (7, end / 2, end), (50_000, 0, end)]
    {
        let w = Window::new(start, stop, pixels);
        let items = &index.slices_in(thread, w)[0];
        // Every slice in the window once, in order, nothing else.
        let mut next = slices.iter().position(|&(_, e)| e >= w.start).unwrap() as u64;
        for item in items {
            let (first, count, s, e) = match *item {
                SliceItem::Slice(i, s) => (i, 1, s.start, s.end),
                SliceItem::Merged { first, count, start, end, .. } => (first, count, start, end),
            };
            assert_eq!(first, next, "{w:?}");
            let run = &slices[first as usize..(first + count) as usize];
            assert_eq!((s, e), (run[0].0, run.iter().map(|r| r.1).max().unwrap()), "{w:?}");
            next += count;
        }
        let want = slices.iter().filter(|&&(s, e)| e >= w.start && s <= w.end).count() as u64;
        let from = slices.iter().position(|&(_, e)| e >= w.start).unwrap() as u64;
        assert_eq!(next - from, want, "{w:?}");
        // Merged items are apart by a pixel at least, and so are a lone narrow slice and the next
        // item: a run is never cut where it would be drawn joined.
        for pair in items.windows(2) {
            let (a_end, a_narrow) = match pair[0] {
                SliceItem::Slice(_, s) => (s.end, s.duration() < w.pixel),
                SliceItem::Merged { end, .. } => (end, true),
            };
            let b_start = match pair[1] {
                SliceItem::Slice(_, s) => s.start,
                SliceItem::Merged { start, .. } => start,
            };
            let b_merged = matches!(pair[1], SliceItem::Merged { .. });
            if a_narrow && b_merged {
                assert!(b_start.saturating_sub(a_end) >= w.pixel, "{w:?}: {pair:?}");
            }
        }
        let p = (w.end - w.start) / w.pixel + 1;
        assert!(items.len() as u64 <= 2 * p + 2, "{} items for {p} pixels", items.len());
    }
    // The whole trace in 100 pixels: a handful of items, not one a block.
    let items = &index.slices_in(thread, Window::new(0, end, 100))[0];
    assert!(items.len() < 200, "{}", items.len());
}

#[test]
fn counter_pixels_from_summaries_hold_what_their_samples_hold() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.phos");
    let mut rng = Rng(99);
    let mut samples = Vec::new();
    let mut t = 0u64;
    for _ in 0..(SPAN * 300 + 17) {
        t += 1 + rng.below(20);
        samples.push((t, rng.below(1_000) as f64 - 500.0));
    }
    let events: Vec<Vec<Record>> =
        samples.iter().map(|&(t, v)| records::counter(t, ID, v).to_vec()).collect();
    write_trace(&path, &[("depth", Phase::Counter)], &[(1, events)]);
    let index = open(&path, None, &BuildOptions::default()).unwrap();
    for pixels in [1, 3, 64, 999, 5000] {
        let w = Window::new(0, t, pixels);
        let items = index.samples_in(0, w);
        // By brute force: the samples of each pixel.
        let mut want: Vec<SampleItem> = Vec::new();
        for &(ts, v) in &samples {
            let px = ts / w.pixel;
            match want.last_mut() {
                Some(it) if it.start / w.pixel == px => {
                    it.end = ts;
                    it.count += 1;
                    it.min = it.min.min(v);
                    it.max = it.max.max(v);
                    it.last = v;
                }
                _ => want.push(SampleItem { start: ts, end: ts, count: 1, min: v, max: v, last: v }),
            }
        }
        assert_eq!(items, want, "{pixels} pixels");
    }
}

#[test]
fn a_tally_is_exact_up_to_its_cap_and_keeps_a_heavy_name_past_it() {
    use crate::summary::Tally;
    let mut t = Tally::default();
    for (name, w) in [(1, 5), (2, 3), (1, 1), (3, 7), (2, 2)] {
        t.add(name, w, 4);
    }
    // 1: 6, 2: 5, 3: 7.
    assert_eq!(t.top(), Some((3, 7)));
    // A tie goes to the first added.
    t.add(1, 1, 4);
    assert_eq!(t.top(), Some((1, 7)));
    // 100 names of weight 1 each past a cap of 4, and one of weight 40: it is kept, dominant.
    let mut t = Tally::default();
    for k in 0..100u32 {
        t.add(1000 + k, 1, 4);
        if k % 10 == 0 {
            t.add(7, 4, 4);
        }
    }
    assert_eq!(t.top().map(|x| x.0), Some(7));
}

#[test]
fn a_run_is_named_by_the_name_holding_most_of_its_time() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.phos");
    // 6,400 slices of one level in groups of four: three `short` of 1 tick, one `long` of 7
    // ticks, 1 tick apart: `long` holds most of a group's time (8 of 14 weight: a tick more a
    // slice), `short` most of its slices. Then 64 of `other` alone, far after.
    let (mut t, mut events, mut all) = (0u64, Vec::<Vec<Record>>::new(), Vec::new());
    for k in 0..6_400u64 {
        let (site, d) = if k % 4 == 3 { (ID + 1, 7) } else { (ID, 1) };
        events.push(records::complete(t, site, d).to_vec());
        all.push((t, t + d, site - ID));
        t += d + 1;
    }
    t += 1_000_000;
    for _ in 0..64 {
        events.push(records::complete(t, ID + 2, 1).to_vec());
        all.push((t, t + 1, 2));
        t += 2;
    }
    write_trace(
        &path,
        &[("short", Phase::Complete), ("long", Phase::Complete), ("other", Phase::Complete)],
        &[(1, events)],
    );
    let index = open(&path, None, &BuildOptions::default()).unwrap();
    let thread = &index.threads[0];
    let name_of = |n: u32| index.name(n).to_owned();
    let mut runs = 0;
    // Coarse enough that whole blocks are taken from their summaries, and fine enough that runs
    // are a few slices: the name is the one of most time either way.
    for (pixels, end) in [(3, t), (100, t), (1_000, t), (3_000, t), (8_000, 30_000), (8_000, 60_000)] {
        let w = Window::new(0, end, pixels);
        for item in &index.slices_in(thread, w)[0] {
            if let SliceItem::Merged { first, count, name, .. } = *item {
                let run = &all[first as usize..(first + count) as usize];
                let weight = |k: u32| run.iter().filter(|r| r.2 == k).map(|r| r.1 - r.0 + 1).sum::<u64>();
                // The most weight; in a tie, the name seen first.
                let most = (0..3).map(weight).max().unwrap();
                let want = run.iter().find(|r| weight(r.2) == most).unwrap().2;
                assert_eq!(name_of(name), ["short", "long", "other"][want as usize], "{pixels} px: {item:?}");
                runs += 1;
            }
        }
    }
    assert!(runs > 20, "{runs}");
}

#[test]
fn an_index_of_an_older_version_is_rebuilt_not_misread() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.phos");
    let events: Vec<Vec<Record>> = (0..500u64).map(|k| records::complete(3 * k, ID, 1).to_vec()).collect();
    write_trace(&path, &[("tiny", Phase::Complete)], &[(1, events)]);
    let index = open(&path, None, &BuildOptions::default()).unwrap();
    let w = Window::new(0, 1_500, 10);
    let want = index.slices_in(&index.threads[0], w);
    drop(index);
    // The same file said to be version 7, whose slice summaries were 32 bytes with no names, or
    // version 8, whose records were not in compressed blocks.
    let at = crate::index_path(&path, None);
    for old in [7u32, 8] {
        let mut bytes = std::fs::read(&at).unwrap();
        assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), crate::VERSION);
        bytes[8..12].copy_from_slice(&old.to_le_bytes());
        std::fs::write(&at, &bytes).unwrap();
        assert!(crate::open_existing(&path, None).is_none(), "a version {old} index was opened");
        let index = open(&path, None, &BuildOptions::default()).unwrap();
        assert_eq!(index.slices_in(&index.threads[0], w), want);
        let rebuilt = std::fs::read(&at).unwrap();
        assert_eq!(u32::from_le_bytes(rebuilt[8..12].try_into().unwrap()), crate::VERSION);
    }
    assert!(want[0].iter().any(|i| matches!(i, SliceItem::Merged { .. })), "{want:?}");
}

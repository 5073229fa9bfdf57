use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};

use phosphor_craft::{callsite, monotonic, records, ChunkStream, TraceWriter};
use phosphor_format::file::Trailer;
use phosphor_format::ClockInfo;
use phosphor_format::{Phase, Record};

use crate::records::{point_kinds, slice_flags};
use crate::{open, BuildOptions, IndexFile, SliceItem, Window};

/// The first callsite id.
pub(crate) const ID: u32 = 16;

/// Writes a trace of callsites `sites` (named, of a phase; callsite `ID + k` is `sites[k]`) and
/// each thread's events, in order, to `path`.
pub(crate) fn write_trace(path: &Path, sites: &[(&str, Phase)], threads: &[(u32, Vec<Vec<Record>>)]) {
    // Ticks are nanoseconds since the origin.
    let clock = ClockInfo { origin_ticks: 0, ..monotonic() };
    let mut w = TraceWriter::new(File::create(path).unwrap(), clock, "test").unwrap();
    w.strings(&["test", "", "test.rs"]).unwrap();
    let names: Vec<&str> = sites.iter().map(|s| s.0).collect();
    let first = w.strings(&names).unwrap();
    w.callsites(sites.iter().enumerate().map(|(k, s)| callsite(ID + k as u32, s.1, first + k as u32)))
        .unwrap();
    for (tid, events) in threads {
        let mut s = ChunkStream::new(*tid);
        for e in events {
            s.push(&mut w, e).unwrap();
        }
        s.flush(&mut w).unwrap();
    }
    w.finish(Trailer::default()).unwrap();
}

/// Every window: from well before the first event to well after the last.
fn whole(pixels: u32) -> Window {
    Window::new(0, 1_000_000_000, pixels)
}

/// The slices of each level of `thread`'s first level items, as (name, start, end, flags).
fn levels(index: &IndexFile, thread: usize) -> Vec<Vec<(String, u64, u64, u8)>> {
    let t = &index.threads[thread];
    index
        .slices_in(t, Window { start: 0, end: u64::MAX / 4, pixel: 1 })
        .into_iter()
        .map(|level| {
            level
                .into_iter()
                .map(|item| match item {
                    SliceItem::Slice(_, s) => (index.name(s.name).to_owned(), s.start, s.end, s.flags),
                    SliceItem::Merged { .. } => panic!("a pixel of 1 ns merges nothing here"),
                })
                .collect()
        })
        .collect()
}

fn dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn scopes_and_complete_events_nest_by_level_and_an_end_closes_the_innermost_begin() {
    let d = dir();
    let path = d.path().join("t.phos");
    let sites = [
        ("a", Phase::Begin),
        ("a", Phase::End),
        ("b", Phase::Begin),
        ("b", Phase::End),
        ("c", Phase::Complete),
        ("d", Phase::Complete),
        ("tick", Phase::Instant),
    ];
    let (a, a_end, b, b_end, c, dd, tick) = (ID, ID + 1, ID + 2, ID + 3, ID + 4, ID + 5, ID + 6);
    let events = vec![
        records::begin(0, a).to_vec(),
        records::begin(10, b).to_vec(),
        records::end(20, b_end).to_vec(),
        records::end(30, a_end).to_vec(),
        // A complete event is written at its end: the child first.
        records::complete(42, dd, 2).to_vec(),
        records::complete(40, c, 10).to_vec(),
        records::instant(45, tick).to_vec(),
        // `a`'s end closes the innermost begin, `b` (wrongly named), and `b`'s end closes `a`:
        // the model's one rule, as `phosphor stats` and every output nest them.
        records::begin(100, a).to_vec(),
        records::begin(110, b).to_vec(),
        records::end(120, a_end).to_vec(),
        records::end(130, b_end).to_vec(),
        // Left open: it runs to the thread's last event.
        records::begin(200, b).to_vec(),
        records::instant(300, tick).to_vec(),
    ];
    write_trace(&path, &sites, &[(7, events)]);
    let index = open(&path, None, &BuildOptions::default()).unwrap();
    assert_eq!(index.threads.len(), 1);
    assert_eq!(index.threads[0].tid, 7);
    let s = |n: &str, a: u64, b: u64, f: u8| (n.to_owned(), a, b, f);
    let (scope, complete) = (slice_flags::SCOPE, slice_flags::COMPLETE);
    assert_eq!(
        levels(&index, 0),
        [
            vec![
                s("a", 0, 30, scope),
                s("c", 40, 50, complete),
                s("a", 100, 130, scope | slice_flags::WRONG_END),
                s("b", 200, 300, scope | slice_flags::UNCLOSED)
            ],
            vec![
                s("b", 10, 20, scope),
                s("d", 42, 44, complete),
                s("b", 110, 120, scope | slice_flags::WRONG_END)
            ],
        ]
    );
    let points: Vec<(String, u64, u8)> = index
        .points_in(&index.threads[0], Window { start: 0, end: 1000, pixel: 1 })
        .into_iter()
        .map(|p| match p {
            crate::PointItem::Point(_, p) => (index.name(p.name).to_owned(), p.ts, p.kind),
            crate::PointItem::Merged { .. } => panic!("nothing to merge at 1 ns"),
        })
        .collect();
    assert_eq!(
        points,
        [("tick".to_owned(), 45, point_kinds::INSTANT), ("tick".to_owned(), 300, point_kinds::INSTANT)]
    );
}

#[test]
fn interlaced_slices_go_a_level_down_so_that_a_level_never_overlaps() {
    let d = dir();
    let path = d.path().join("t.phos");
    let sites = [("x", Phase::Complete), ("y", Phase::Complete)];
    // x [0, 10] and y [5, 15] overlap without one holding the other.
    let events = vec![records::complete(0, ID, 10).to_vec(), records::complete(5, ID + 1, 10).to_vec()];
    write_trace(&path, &sites, &[(1, events)]);
    let index = open(&path, None, &BuildOptions::default()).unwrap();
    let got = levels(&index, 0);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!((got[0].len(), got[1].len()), (1, 1));
    assert!(got.iter().flatten().any(|s| s.3 & slice_flags::INTERLACED != 0), "{got:?}");
}

/// A deterministic generator (xorshift64).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Complete events of a random tree of nested slices in `[start, end)`, children first (as a
/// recorder writes them), up to `depth` levels.
pub(crate) fn tree(rng: &mut Rng, start: u64, end: u64, depth: u32, out: &mut Vec<Vec<Record>>) {
    let mut t = start;
    while t < end {
        let len = 1 + rng.below((end - t).min(5_000));
        let gap = rng.below(50);
        let (s, e) = (t + gap, (t + gap + len).min(end));
        if s >= e {
            break;
        }
        if depth > 0 && e - s > 4 {
            tree(rng, s + 1, e - 1, depth - 1, out);
        }
        // A name of three, by chance: paths of every mix.
        let name = ID + rng.below(3) as u32;
        out.push(records::complete(s, name, e - s).to_vec());
        t = e;
    }
}

fn random_trace(path: &Path, seed: u64) {
    let mut rng = Rng(seed);
    let mut events = Vec::new();
    tree(&mut rng, 0, 2_000_000, 4, &mut events);
    let sites = [("p", Phase::Complete), ("q", Phase::Complete), ("r", Phase::Complete)];
    write_trace(path, &sites, &[(1, events)]);
}

#[test]
fn a_window_query_gives_every_slice_in_the_window_once_and_merges_only_those_under_a_pixel() {
    let d = dir();
    let path = d.path().join("t.phos");
    random_trace(&path, 0x9E37_79B9_7F4A_7C15);
    let index = open(&path, None, &BuildOptions::default()).unwrap();
    let t = &index.threads[0];
    let total: u64 = t.levels.iter().map(|l| l.1).sum();
    assert!(total > 2_000 && t.levels.len() >= 4, "{total} slices, {} levels", t.levels.len());
    let mut rng = Rng(7);
    for _ in 0..200 {
        let a = rng.below(2_100_000);
        let b = a + 1 + rng.below(2_000_000);
        let pixels = 1 + rng.below(2_000) as u32;
        let w = Window::new(a, b, pixels);
        for (level, items) in index.slices_in(t, w).iter().enumerate() {
            let (first, n) = t.levels[level];
            let want: BTreeSet<u64> = (first..first + n)
                .filter(|&i| {
                    let s = index.slice(i);
                    s.end >= w.start && s.start <= w.end
                })
                .collect();
            let mut got = BTreeSet::new();
            for item in items {
                let (from, count) = match *item {
                    SliceItem::Slice(i, _) => (i, 1),
                    SliceItem::Merged { first, count, .. } => {
                        assert!(count > 1);
                        // Only slices narrower than a pixel merge: one a pixel wide or more is
                        // drawn as itself.
                        for i in first..first + count {
                            let d = index.slice(i).duration();
                            assert!(d < w.pixel, "slice {i} of {d} ticks merged at {} a pixel", w.pixel);
                        }
                        (first, count)
                    }
                };
                for i in from..from + count {
                    assert!(got.insert(i), "slice {i} given twice");
                }
            }
            assert_eq!(got, want, "window {w:?}, level {level}");
            let p = (w.end - w.start) / w.pixel + 1;
            assert!(items.len() as u64 <= 2 * p + 2, "{} items for {p} pixels", items.len());
        }
    }
}

#[test]
fn an_index_sorted_in_many_small_segments_is_the_same() {
    let d = dir();
    let (a, b) = (d.path().join("a.phos"), d.path().join("b.phos"));
    random_trace(&a, 3);
    random_trace(&b, 3);
    let big = open(&a, None, &BuildOptions::default()).unwrap();
    let small = open(
        &b,
        None,
        &BuildOptions { segment_items: 7, sort_dir: Some(d.path().to_owned()), ..Default::default() },
    )
    .unwrap();
    assert_eq!(big.threads, small.threads);
    assert_eq!(levels(&big, 0), levels(&small, 0));
    let w = whole(800);
    assert_eq!(big.slices_in(&big.threads[0], w), small.slices_in(&small.threads[0], w));
}

#[test]
fn an_index_is_reused_and_built_again_when_its_trace_changes_or_it_is_damaged() {
    let d = dir();
    let path = d.path().join("t.phos");
    random_trace(&path, 5);
    let first = open(&path, None, &BuildOptions::default()).unwrap();
    let at: PathBuf = crate::index_path(&path, None);
    let built = std::fs::metadata(&at).unwrap().modified().unwrap();
    drop(first);
    open(&path, None, &BuildOptions::default()).unwrap();
    assert_eq!(std::fs::metadata(&at).unwrap().modified().unwrap(), built, "the index was reused");

    // A different trace at the same path.
    random_trace(&path, 6);
    let again = open(&path, None, &BuildOptions::default()).unwrap();
    let mut direct = Vec::new();
    tree(&mut Rng(6), 0, 2_000_000, 4, &mut direct);
    assert_eq!(again.threads[0].levels.iter().map(|l| l.1).sum::<u64>(), direct.len() as u64);
    drop(again);

    // Damaged in its footer: built again, and the same.
    let mut bytes = std::fs::read(&at).unwrap();
    let n = bytes.len();
    bytes[n - 3] ^= 0xFF;
    std::fs::write(&at, &bytes).unwrap();
    let e = IndexFile::open(&at, std::fs::metadata(&path).unwrap().len(), 0);
    assert!(e.is_err() || e.unwrap().is_none());
    let rebuilt = open(&path, None, &BuildOptions::default()).unwrap();
    assert_eq!(rebuilt.threads[0].levels.iter().map(|l| l.1).sum::<u64>(), direct.len() as u64);
}

#[test]
fn counters_give_their_min_max_and_last_value_a_pixel() {
    let d = dir();
    let path = d.path().join("t.phos");
    let sites = [("queue", Phase::Counter)];
    let events: Vec<Vec<Record>> =
        (0..1000).map(|k| records::counter(k * 10, ID, (k % 7) as f64).to_vec()).collect();
    write_trace(&path, &sites, &[(1, events)]);
    let index = open(&path, None, &BuildOptions::default()).unwrap();
    assert_eq!(index.counters.len(), 1);
    assert_eq!(index.name(index.counters[0].name), "queue");
    // 100 ns a pixel: 10 samples each.
    let items = index.samples_in(0, Window { start: 0, end: 9_999, pixel: 100 });
    assert_eq!(items.len(), 100);
    assert_eq!(items.iter().map(|i| i.count).sum::<u64>(), 1000);
    assert_eq!((items[0].min, items[0].max, items[0].last), (0.0, 6.0, 2.0));
}

#[test]
fn async_slices_pair_by_name_and_id_and_take_as_few_lanes_as_are_open_at_once() {
    let d = dir();
    let path = d.path().join("t.phos");
    let sites = [("request", Phase::AsyncBegin), ("request", Phase::AsyncEnd)];
    let (begin, end) = (ID, ID + 1);
    let mut events = Vec::new();
    // Request k runs from 10k to 10k + 25: three open at once at most. Ends come on another thread.
    let mut ends = Vec::new();
    for k in 0..100u64 {
        events.push(records::async_edge(10 * k, begin, k).to_vec());
        ends.push(records::async_edge(10 * k + 25, end, k).to_vec());
    }
    // One never ended, and an end with no begin.
    events.push(records::async_edge(2_000, begin, 500).to_vec());
    ends.push(records::async_edge(2_100, end, 999).to_vec());
    // The ends' thread first in the file: an end is met before its begin.
    write_trace(&path, &sites, &[(2, ends), (1, events)]);
    let index = open(&path, None, &BuildOptions::default()).unwrap();
    assert_eq!(index.asyncs.len(), 1);
    let track = &index.asyncs[0];
    assert_eq!(index.name(track.tid), "request");
    assert_eq!(track.levels.len(), 3, "{:?}", track.levels);
    let mut all = Vec::new();
    for (lane, &(first, n)) in track.levels.iter().enumerate() {
        let lane_slices: Vec<_> = (first..first + n).map(|i| index.slice(i)).collect();
        for w in lane_slices.windows(2) {
            assert!(w[0].end <= w[1].start, "lane {lane} overlaps: {w:?}");
        }
        all.extend(lane_slices);
    }
    assert_eq!(all.len(), 101);
    assert!(all.iter().filter(|s| s.flags & slice_flags::UNCLOSED != 0).all(|s| s.start == 2_000));
    assert_eq!(all.iter().filter(|s| s.end - s.start == 25).count(), 100);
    let stray = index.points_in(&index.threads[1], Window { start: 0, end: 10_000, pixel: 1 });
    assert!(matches!(stray[..], [crate::PointItem::Point(_, p)] if p.kind == point_kinds::END_WITHOUT_BEGIN));
}

#[test]
fn chunks_lost_from_a_stream_are_marked_where_it_picks_up_again() {
    let d = dir();
    let path = d.path().join("t.phos");
    let clock = ClockInfo { origin_ticks: 0, ..monotonic() };
    let mut w = TraceWriter::new(File::create(&path).unwrap(), clock, "test").unwrap();
    w.strings(&["test", "", "test.rs", "tick"]).unwrap();
    w.callsites([callsite(ID, Phase::Instant, 3)]).unwrap();
    // Chunks of two ticks: numbers 0 and 1, then 5 (2, 3 and 4 lost), then 6.
    let mut s = ChunkStream::with_capacity(1, 2);
    for ts in [10, 20, 30, 40] {
        s.push(&mut w, &records::instant(ts, ID)).unwrap();
    }
    s.flush(&mut w).unwrap();
    s.skip(3);
    for ts in [100, 110, 120, 130] {
        s.push(&mut w, &records::instant(ts, ID)).unwrap();
    }
    s.flush(&mut w).unwrap();
    w.finish(Trailer::default()).unwrap();
    let index = open(&path, None, &BuildOptions::default()).unwrap();
    // (The mark and the tick at 100 share a nanosecond: read the points one by one.)
    let (first, n) = index.threads[0].points;
    let marks: Vec<(String, u64)> = (first..first + n)
        .map(|i| index.point(i))
        .filter(|p| p.kind == point_kinds::LOST_CHUNKS)
        .map(|p| (index.name(p.name).to_owned(), p.ts))
        .collect();
    assert_eq!(marks, [("3 chunks lost".to_owned(), 100)]);
}

#[test]
fn a_trace_whose_clock_rate_is_not_a_number_is_indexed_and_opened_again() {
    for rate in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0] {
        let d = dir();
        let path = d.path().join("t.phos");
        let clock = ClockInfo { ns_per_tick: rate, origin_ticks: 0, ..monotonic() };
        let mut w = TraceWriter::new(File::create(&path).unwrap(), clock, "test").unwrap();
        w.strings(&["test", "", "test.rs", "work"]).unwrap();
        w.callsites([callsite(ID, Phase::Complete, 3)]).unwrap();
        let mut s = ChunkStream::new(1);
        s.push(&mut w, &records::complete(10, ID, 5)).unwrap();
        s.flush(&mut w).unwrap();
        w.finish(Trailer::default()).unwrap();
        let built = open(&path, None, &BuildOptions::default()).unwrap();
        assert_eq!(built.meta.ns_per_tick.to_bits(), rate.to_bits());
        drop(built);
        // Opened from the file this time, not built.
        let again = open(&path, None, &BuildOptions::default()).unwrap();
        assert_eq!(again.meta.ns_per_tick.to_bits(), rate.to_bits(), "{rate}");
        assert_eq!(again.threads[0].levels, vec![(0, 1)]);
    }
}

use std::io::Write;

use phosphor_craft::records;
use phosphor_format::Phase;

use super::{Ev, Live, LiveModel, LiveOptions, Names};
use crate::query::{SliceItem, Window};
use crate::records::{point_kinds, slice_flags};
use crate::tests::{write_trace, ID};

/// A model and the names its events use.
struct Feed {
    model: LiveModel,
    names: Names,
}

impl Feed {
    fn new(max_records: usize) -> Feed {
        let options = LiveOptions { max_records, ..LiveOptions::default() };
        Feed { model: LiveModel::new(options), names: Names::default() }
    }

    fn name(&mut self, name: &str) -> u32 {
        let n = self.names.number(name);
        self.model.add_names(self.names.take_new());
        n
    }

    fn begin(&mut self, tid: u32, ts: u64, name: &str) {
        let name = self.name(name);
        self.model.take(Ev::Begin { tid, ts, name });
    }

    fn end(&mut self, tid: u32, ts: u64, name: &str) {
        let name = self.name(name);
        self.model.take(Ev::End { tid, ts, name });
    }

    fn complete(&mut self, tid: u32, start: u64, end: u64, name: &str) {
        let name = self.name(name);
        self.model.take(Ev::Slice { tid, start, end, name, flags: slice_flags::COMPLETE });
    }

    /// Thread `tid`'s slices in `w` at a nanosecond a pixel: (name, start, end, flags) by level.
    fn levels(&self, tid: u32, start: u64, end: u64) -> Vec<Vec<(String, u64, u64, u8)>> {
        let w = Window { start, end, pixel: 1 };
        self.model
            .slices_in(tid, w)
            .unwrap()
            .into_iter()
            .map(|level| {
                level
                    .into_iter()
                    .map(|item| match item {
                        SliceItem::Slice(_, s) => {
                            (self.model.name(s.name).to_owned(), s.start, s.end, s.flags)
                        }
                        SliceItem::Merged { .. } => panic!("a pixel of 1 ns merges nothing here"),
                    })
                    .collect()
            })
            .collect()
    }
}

fn names(levels: &[Vec<(String, u64, u64, u8)>]) -> Vec<Vec<&str>> {
    levels.iter().map(|l| l.iter().map(|s| s.0.as_str()).collect()).collect()
}

#[test]
fn begins_and_ends_match_by_a_stack_across_batches_and_open_ones_run_to_the_newest_event() {
    let mut f = Feed::new(1000);
    f.begin(1, 0, "frame");
    f.begin(1, 10, "update");
    // What a query sees between two chunks: both open, running to the newest event (10).
    let open = f.levels(1, 0, 100);
    assert_eq!(names(&open), [["frame"], ["update"]]);
    assert_eq!(open[0][0], ("frame".into(), 0, 10, slice_flags::SCOPE | slice_flags::UNCLOSED));
    f.end(1, 20, "update");
    f.begin(1, 30, "draw");
    f.end(1, 40, "draw");
    f.end(1, 50, "frame");
    let done = f.levels(1, 0, 100);
    assert_eq!(names(&done), [vec!["frame"], vec!["update", "draw"]]);
    assert_eq!(done[0][0], ("frame".into(), 0, 50, slice_flags::SCOPE));
    // An end with no begin is a point.
    f.end(1, 90, "nothing");
    let points = f.model.points_in(1, Window { start: 0, end: 100, pixel: 1 }).unwrap();
    assert!(
        matches!(points[..], [crate::PointItem::Point(_, p)] if p.kind == point_kinds::END_WITHOUT_BEGIN)
    );
}

#[test]
fn an_end_closes_the_innermost_open_begin_whatever_its_name_and_a_wrong_name_is_flagged() {
    // The model's rule (`phosphor_model::nesting`), as the index applies it: not back to the
    // begin of the end's name.
    let mut f = Feed::new(1000);
    f.begin(1, 60, "a");
    f.begin(1, 70, "b");
    f.end(1, 80, "a");
    let unclosed = slice_flags::SCOPE | slice_flags::UNCLOSED;
    let l = f.levels(1, 55, 100);
    assert_eq!(l[0], [("a".into(), 60, 80, unclosed)]);
    assert_eq!(l[1], [("b".into(), 70, 80, slice_flags::WRONG_END)]);
    // The next end closes "a", whose name it does not have either.
    f.end(1, 90, "b");
    assert_eq!(f.levels(1, 55, 100)[0], [("a".into(), 60, 90, slice_flags::WRONG_END)]);
    // An end of a name never begun closes the begin open, and is no stray point.
    f.begin(1, 100, "c");
    f.end(1, 110, "nothing");
    assert_eq!(f.levels(1, 95, 200), [[("c".into(), 100, 110, slice_flags::WRONG_END)]]);
    let points = f.model.points_in(1, Window { start: 0, end: 200, pixel: 1 }).unwrap();
    assert!(points.is_empty(), "{points:?}");
    // A begin past the bound on open begins is not kept, nor is the end that closes it.
    for k in 0..super::MAX_OPEN as u64 + 1 {
        f.begin(2, k, "deep");
    }
    let flags = |f: &Feed| -> Vec<(u64, u8)> {
        let w = Window { start: 0, end: 2_000_000, pixel: 1 };
        let levels = f.model.slices_in(2, w).unwrap();
        let mut all: Vec<(u64, u8)> = levels
            .iter()
            .flatten()
            .map(|i| match i {
                SliceItem::Slice(_, s) => (s.end, s.flags & !slice_flags::INTERLACED),
                SliceItem::Merged { .. } => unreachable!(),
            })
            .collect();
        all.sort_unstable();
        all
    };
    f.end(2, 1_000_000, "deep");
    let open = flags(&f);
    assert_eq!(open.len(), super::MAX_OPEN);
    assert!(open.iter().all(|s| s.1 == slice_flags::SCOPE | slice_flags::UNCLOSED), "{:?}", open.last());
    f.end(2, 1_000_001, "deep");
    let closed = flags(&f);
    assert_eq!(closed.len(), super::MAX_OPEN);
    assert!(closed.contains(&(1_000_001, slice_flags::SCOPE)));
    assert_eq!(closed.iter().filter(|s| s.1 & slice_flags::UNCLOSED == 0).count(), 1);
}

#[test]
fn complete_events_nest_on_the_timeline_and_are_measured_there() {
    // A TSC of 0.385 ns a tick: ticks 1010 and 1011 are both 4 ns after the origin, 1030 and 1031
    // both 12 ns. "inner" (recorded first) and "outer" are one extent on the timeline: the
    // earlier recorded is inside, as `phosphor stats` nests them, though its ticks overlap.
    let mut f = Feed::new(1000);
    f.model.set_clock(&phosphor_craft::tsc(0.385187));
    f.complete(1, 1011, 1031, "inner");
    f.complete(1, 1010, 1030, "outer");
    let l = f.levels(1, 1000, 1100);
    assert_eq!(
        l,
        [
            [("outer".into(), 1010, 1030, slice_flags::COMPLETE)],
            [("inner".into(), 1011, 1031, slice_flags::COMPLETE)]
        ]
    );
    // Durations are the rounded end less the rounded start: 8 ns each, so no self time.
    let SliceItem::Slice(id, s) =
        f.model.slices_in(1, Window { start: 1000, end: 1100, pixel: 1 }).unwrap()[0][0]
    else {
        panic!()
    };
    let (_, _, _, level) = f.model.slice(id).unwrap();
    assert_eq!(f.model.duration_ns(&s), 8);
    let (path, self_ns, children) = f.model.context(1, &s, level);
    assert_eq!((path.len(), self_ns, children), (1, 0, 1));
}

#[test]
fn complete_events_arriving_after_the_slices_they_hold_put_them_a_level_down() {
    let mut f = Feed::new(1000);
    // Recorded at their ends: the innermost first.
    f.complete(1, 10, 20, "step");
    f.complete(1, 22, 28, "step");
    f.complete(1, 5, 30, "update");
    f.complete(1, 0, 40, "frame");
    f.complete(1, 50, 60, "frame");
    let l = f.levels(1, 0, 100);
    assert_eq!(names(&l), [vec!["frame", "frame"], vec!["update"], vec!["step", "step"]]);
    // Its details: the path from the slices that hold it, the self time less its children.
    let update = f.model.slices_in(1, Window { start: 5, end: 30, pixel: 1 }).unwrap()[1][0];
    let SliceItem::Slice(id, s) = update else { panic!("{update:?}") };
    let (found, tid, _, level) = f.model.slice(id).unwrap();
    assert_eq!((found, tid, level), (s, Some(1), 1));
    let (path, self_ticks, children) = f.model.context(1, &s, level);
    let path: Vec<&str> = path.iter().map(|&n| f.model.name(n)).collect();
    assert_eq!((path, self_ticks, children), (vec!["frame", "update"], 25 - 10 - 6, 2));
    // Inside a begin still open, then ended: one level down from it.
    f.begin(1, 100, "run");
    f.complete(1, 110, 120, "work");
    f.end(1, 130, "run");
    assert_eq!(names(&f.levels(1, 100, 200)), [["run"], ["work"]]);
    // Two complete events of the same extent: the later holds the earlier.
    f.complete(1, 200, 210, "inner");
    f.complete(1, 200, 210, "outer");
    assert_eq!(names(&f.levels(1, 200, 300)), [["outer"], ["inner"]]);
}

#[test]
fn overlapping_slices_of_a_level_are_drawn_a_level_down_and_marked() {
    let mut f = Feed::new(1000);
    f.complete(1, 0, 20, "a");
    f.complete(1, 10, 30, "b");
    let l = f.levels(1, 0, 100);
    assert_eq!(names(&l), [["a"], ["b"]]);
    assert_eq!(l[1][0].3 & slice_flags::INTERLACED, slice_flags::INTERLACED);
}

#[test]
fn past_the_limit_the_oldest_records_are_dropped_and_counted() {
    let mut f = Feed::new(1000);
    let name = f.name("tick");
    for k in 0..10_000u64 {
        f.complete(1, k * 10, k * 10 + 5, "s");
        f.model.take(Ev::Point { tid: 1, ts: k * 10, name, kind: point_kinds::INSTANT });
        f.model.take(Ev::Sample { tid: 1, ts: k * 10, name, value: k as f64 });
    }
    let m = &f.model;
    assert!(m.retained() <= 1000, "{}", m.retained());
    assert!(m.retained() >= 1000 * 7 / 8 - 3, "{}", m.retained());
    assert_eq!(m.dropped + m.retained() as u64, 30_000);
    let horizon = m.horizon.unwrap();
    // What is kept is the newest: everything from the horizon on, nothing before.
    let w = Window { start: 0, end: 1_000_000, pixel: 1 };
    let kept: Vec<u64> = m.slices_in(1, w).unwrap()[0]
        .iter()
        .map(|i| match i {
            SliceItem::Slice(_, s) => s.end,
            SliceItem::Merged { .. } => unreachable!(),
        })
        .collect();
    assert!(kept.iter().all(|&e| e >= horizon));
    assert_eq!(*kept.last().unwrap(), 99_995);
    assert_eq!(
        m.threads().map(|t| t.3 + t.4).sum::<usize>() + m.counters().map(|c| c.1).sum::<usize>(),
        m.retained()
    );
}

#[test]
fn a_window_gives_at_most_two_items_a_pixel_and_level_and_covers_every_slice_in_it() {
    let mut f = Feed::new(1 << 20);
    for k in 0..100_000u64 {
        f.complete(1, k * 10, k * 10 + 3, "s");
    }
    // One long slice, ending after them all: windows in the past still find it.
    f.complete(2, 0, 1_000_000, "long");
    f.complete(2, 5, 10, "short");
    for (start, end, px) in [(0u64, 1_000_000u64, 100u32), (123_456, 234_567, 37), (999_000, 2_000_000, 1000)]
    {
        let w = Window::new(start, end, px);
        let levels = f.model.slices_in(1, w).unwrap();
        let mut covered = 0u64;
        for level in &levels {
            assert!(level.len() as u64 <= 2 * u64::from(px) + 2, "{} items in {px} px", level.len());
            let mut last_start = 0;
            for item in level {
                let (s, e, n) = match *item {
                    SliceItem::Slice(_, s) => (s.start, s.end, 1),
                    SliceItem::Merged { start, end, count, .. } => (start, end, count),
                };
                assert!(e >= w.start && s <= w.end && s >= last_start);
                last_start = s;
                covered += n;
            }
        }
        let expected = (0..100_000u64).filter(|k| k * 10 + 3 >= start && k * 10 <= end).count() as u64;
        assert_eq!(covered, expected, "in {start}..{end}");
        let long = f.model.slices_in(2, w).unwrap();
        assert_eq!(long.len(), 2 - usize::from(start > 10), "{long:?}");
    }
}

#[test]
fn async_slices_pair_in_either_order_on_lanes_that_never_overlap() {
    let mut f = Feed::new(1000);
    let item = f.name("item");
    let edge = |tid, ts, id, begin| Ev::Async { tid, ts, name: item, id, begin };
    f.model.take(edge(1, 0, 7, true));
    f.model.take(edge(2, 5, 8, true));
    // An end read before its begin (another thread's chunk came first).
    f.model.take(edge(2, 30, 9, false));
    f.model.take(edge(1, 20, 9, true));
    f.model.take(edge(2, 10, 7, false));
    f.model.take(edge(1, 15, 8, false));
    let lanes = f.model.async_in(0, Window { start: 0, end: 100, pixel: 1 }).unwrap();
    let mut all: Vec<(u64, u64)> = Vec::new();
    for lane in &lanes {
        let spans: Vec<(u64, u64)> = lane
            .iter()
            .map(|i| match i {
                SliceItem::Slice(_, s) => (s.start, s.end),
                SliceItem::Merged { .. } => unreachable!(),
            })
            .collect();
        assert!(spans.windows(2).all(|p| p[0].1 <= p[1].0), "{spans:?}");
        all.extend(spans);
    }
    all.sort_unstable();
    assert_eq!(all, [(0, 10), (5, 15), (20, 30)]);
    assert_eq!(lanes.len(), 2);
}

#[test]
fn a_lock_is_named_as_the_model_names_it() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.phos");
    let sites = [("queue.wait", Phase::LockWait), ("queue.held", Phase::LockHeld), ("pool", Phase::LockHeld)];
    let events = vec![
        records::complete(0, ID, 10).to_vec(),
        records::complete(10, ID + 1, 5).to_vec(),
        records::complete(20, ID + 2, 5).to_vec(),
    ];
    write_trace(&path, &sites, &[(3, events)]);
    let live = Live::new(LiveOptions::default());
    live.end();
    super::follow(&live, &path);
    assert_eq!(live.read_error(), None);
    let m = live.model();
    let items = &m.slices_in(3, Window { start: 0, end: 100, pixel: 1 }).unwrap()[0];
    let named: Vec<(&str, u8)> = items
        .iter()
        .map(|i| match i {
            SliceItem::Slice(_, s) => (m.name(s.name), s.flags),
            SliceItem::Merged { .. } => unreachable!(),
        })
        .collect();
    assert_eq!(
        named,
        [
            ("queue (wait)", slice_flags::LOCK_WAIT),
            ("queue (held)", slice_flags::LOCK_HELD),
            ("pool (held)", slice_flags::LOCK_HELD)
        ]
    );
    // As the index names them.
    let index = crate::open(&path, None, &crate::BuildOptions::default()).unwrap();
    for name in ["queue (wait)", "queue (held)", "pool (held)"] {
        assert!((0..index.name_count()).any(|n| index.name(n) == name), "{name}");
    }
}

/// A trace of two threads of 5,000 frames, each a begin and an end around a complete event, and a
/// counter.
fn frames(path: &std::path::Path) {
    let sites =
        [("frame", Phase::Begin), ("frame", Phase::End), ("step", Phase::Complete), ("n", Phase::Counter)];
    let mut events = Vec::new();
    for k in 0..5000u64 {
        events.push(records::begin(k * 100, ID).to_vec());
        events.push(records::complete(k * 100 + 10, ID + 2, 50).to_vec());
        events.push(records::counter(k * 100 + 70, ID + 3, k as f64).to_vec());
        events.push(records::end(k * 100 + 90, ID + 1).to_vec());
    }
    write_trace(path, &sites, &[(3, events.clone()), (4, events)]);
}

#[test]
fn a_reader_far_behind_the_file_skips_chunks_counting_their_events_and_then_catches_up() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.phos");
    frames(&path);
    let len = std::fs::metadata(&path).unwrap().len();
    // Behind by the whole file from the start: it skips until within a tenth of it.
    let options = LiveOptions { skip_behind: len / 5, resume_behind: len / 10, ..LiveOptions::default() };
    let live = Live::new(options);
    live.end();
    super::follow(&live, &path);
    assert_eq!(live.read_error(), None);
    let m = live.model();
    assert!(m.skipped > 0 && m.events > 0, "{} skipped, {} taken", m.skipped, m.events);
    assert_eq!(m.skipped + m.events, 40_000);
    // What was taken after the skip is drawn.
    assert!(m.retained() > 0);
}

#[test]
fn a_file_read_as_it_is_written_gives_the_slices_its_index_gives() {
    let d = tempfile::tempdir().unwrap();
    let whole = d.path().join("whole.phos");
    frames(&whole);
    let bytes = std::fs::read(&whole).unwrap();
    // The file as the recorder leaves it mid-way: cut inside a block.
    let growing = d.path().join("growing.phos");
    let mut file = std::fs::File::create(&growing).unwrap();
    let half = bytes.len() / 2 + 7;
    file.write_all(&bytes[..half]).unwrap();
    file.flush().unwrap();
    let live = std::sync::Arc::new(Live::new(LiveOptions::default()));
    let reader = {
        let (live, path) = (live.clone(), growing.clone());
        std::thread::spawn(move || super::follow(&live, &path))
    };
    // Part of it arrives while the file is still being written.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while live.model().events == 0 {
        assert!(std::time::Instant::now() < deadline, "nothing read from the first half");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(!live.finished());
    file.write_all(&bytes[half..]).unwrap();
    file.flush().unwrap();
    live.end();
    reader.join().unwrap();
    assert!(live.finished());
    assert_eq!(live.read_error(), None);
    let index = crate::open(&whole, None, &crate::BuildOptions::default()).unwrap();
    let m = live.model();
    let live_threads: Vec<(u32, usize, usize)> = m.threads().map(|t| (t.0, t.2, t.3)).collect();
    let indexed: Vec<(u32, usize, usize)> = index
        .threads
        .iter()
        .map(|t| (t.tid, t.levels.len(), t.levels.iter().map(|l| l.1).sum::<u64>() as usize))
        .collect();
    assert_eq!(live_threads, indexed);
    assert_eq!(m.counters().map(|c| c.1).collect::<Vec<_>>(), [10_000]);
    assert_eq!(m.events, index.meta.events);
}

#[test]
fn statistics_of_a_live_model_give_each_slice_its_path_through_open_begins_and_complete_events() {
    let mut f = Feed::new(1000);
    f.begin(1, 0, "frame");
    // A complete event arrives after the slices it holds.
    f.complete(1, 20, 30, "step");
    f.complete(1, 10, 40, "update");
    f.end(1, 50, "frame");
    // A frame still open holds what is inside it; it is not counted itself.
    f.begin(1, 60, "frame");
    f.complete(1, 70, 80, "update");
    f.complete(2, 5, 9, "update");
    let m = &f.model;
    let t = super::stats::table(0, m, 0, u64::MAX, None);
    let mut rows: Vec<(String, u64, u64)> =
        t.rows.iter().map(|r| (r.2.path.join("/"), r.2.count, r.2.total_ns)).collect();
    rows.sort();
    let want = [("frame", 1, 50), ("frame/update", 2, 40), ("frame/update/step", 1, 10), ("update", 1, 4)];
    let want: Vec<(String, u64, u64)> = want.iter().map(|&(p, c, d)| (p.to_owned(), c, d)).collect();
    assert_eq!(rows, want);
    assert_eq!(t.slices, 5);
    // Of one thread, and of a range (slices starting in it).
    assert_eq!(super::stats::table(0, m, 0, u64::MAX, Some(2)).slices, 1);
    assert_eq!(super::stats::table(0, m, 10, 60, None).slices, 2);
    // One row's durations.
    let want = ["frame".to_owned(), "update".to_owned()];
    let mut found: Vec<u64> =
        super::stats::kind(m, &want, "scope", 0, u64::MAX).iter().map(|k| k.0).collect();
    found.sort_unstable();
    assert_eq!(found, [10, 30]);
    // A search sees every slice and the open begin, at its level.
    let mut seen = Vec::new();
    m.each_record(|r| seen.push((m.name(r.name).to_owned(), r.tid, r.level, r.start, r.end)));
    seen.sort();
    assert_eq!(seen.len(), 6);
    assert!(seen.contains(&("frame".into(), 1, 0, 60, 80)), "{seen:?}");
    assert!(seen.contains(&("step".into(), 1, 2, 20, 30)), "{seen:?}");
}

/// The argument of the event that record `id` of `live` comes from.
fn argument(live: &Live, path: &std::path::Path, id: u64) -> String {
    let v = live.event(path, id).unwrap();
    match &v.args[0].1 {
        crate::events::ArgValue::Text(s) => s.clone(),
        other => panic!("{other:?} in {v:?}"),
    }
}

/// A trace of 3,000 frames in many chunks, each begin and a tick inside it with its number as
/// an argument.
fn frames_with_arguments(path: &std::path::Path) {
    let sites = [("frame", Phase::Begin), ("frame", Phase::End), ("tick", Phase::Instant)];
    let mut events = Vec::new();
    for k in 0..3000u64 {
        events.push(records::with_string(k * 100, ID, &format!("frame-{k}"), None));
        events.push(records::with_string(k * 100 + 50, ID + 2, &format!("tick-{k}"), None));
        events.push(records::end(k * 100 + 90, ID + 1).to_vec());
    }
    write_trace(path, &sites, &[(3, events)]);
}

#[test]
fn past_the_limit_the_chunk_offsets_of_dropped_records_go_and_those_held_still_give_arguments() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.phos");
    frames_with_arguments(&path);
    let live = Live::new(LiveOptions { max_records: 600, ..LiveOptions::default() });
    live.end();
    super::follow(&live, &path);
    assert_eq!(live.read_error(), None);
    let (oldest, newest) = {
        let m = live.model();
        assert!(m.dropped > 0);
        let mut ids = Vec::new();
        m.each_record(|r| ids.push((r.id, r.start, m.name(r.name).to_owned())));
        ids.sort();
        // The first chunk's offset is gone; the oldest held record's chunk is kept.
        assert_eq!(m.chunk_offset(0), None);
        assert!(m.chunk_offset(super::details::unpack(ids[0].0).0).is_some());
        (ids[0].clone(), ids[ids.len() - 1].clone())
    };
    for (id, start, name) in [oldest, newest] {
        let want =
            if name == "frame" { format!("frame-{}", start / 100) } else { format!("tick-{}", start / 100) };
        assert_eq!(argument(&live, &path, id), want);
    }
}

#[test]
fn a_live_records_arguments_are_read_from_the_file_forward_and_back_and_its_numbers_say_where() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.phos");
    // Enough frames for many chunks.
    frames_with_arguments(&path);
    let live = Live::new(LiveOptions::default());
    live.end();
    super::follow(&live, &path);
    assert_eq!(live.read_error(), None);
    let (frames, ticks) = {
        let m = live.model();
        let w = Window { start: 0, end: 300_000, pixel: 1 };
        let frames: Vec<(u64, u64)> = m.slices_in(3, w).unwrap()[0]
            .iter()
            .map(|i| match i {
                SliceItem::Slice(id, s) => (*id, s.start / 100),
                SliceItem::Merged { .. } => unreachable!(),
            })
            .collect();
        let ticks: Vec<(u64, u64)> = m
            .points_in(3, w)
            .unwrap()
            .iter()
            .map(|p| match p {
                crate::query::PointItem::Point(id, p) => (*id, p.ts / 100),
                crate::query::PointItem::Merged { .. } => unreachable!(),
            })
            .collect();
        (frames, ticks)
    };
    assert_eq!(frames.len(), 3000);
    assert!(super::details::unpack(frames[2999].0).0 > 2, "in several chunks");
    // The newest (read forward), an old one (read again by its offset), then forward again.
    for &k in &[2999usize, 10, 2500, 0, 1500] {
        assert_eq!(argument(&live, &path, frames[k].0), format!("frame-{}", frames[k].1));
        assert_eq!(argument(&live, &path, ticks[k].0), format!("tick-{}", ticks[k].1));
    }
    // The numbers stay below 2^53, and a number the model has no chunk for says so.
    assert!(frames.iter().all(|f| f.0 < 1 << 53));
    assert!(live.event(&path, super::details::pack(1 << 30, 0)).is_err());
}

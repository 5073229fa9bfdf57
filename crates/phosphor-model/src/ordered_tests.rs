//! [`Ordered`] on crafted files: what a writer of begins and ends gets.

use phosphor_craft::{callsite, monotonic, records, ChunkStream, TraceWriter};
use phosphor_format::file::{Reader, Trailer};
use phosphor_format::Record;

use super::*;

/// The first callsite id of the files made here.
const ID: u32 = phosphor_format::FIRST_CALLSITE_ID;

/// What the writer was handed: `B name ts`, `E name ts` (with the end event's name when there is
/// one), `I name ts`. It encodes an event as its name and time, but for the marks, whose records
/// it has kept: both ways give back the event as it read.
#[derive(Default)]
struct Log(Vec<String>);

impl Log {
    /// The name and time of a held event.
    fn read(e: HeldEvent<'_>) -> (String, u64) {
        match e {
            HeldEvent::Encoded(bytes) => {
                let text = std::str::from_utf8(bytes).unwrap();
                let (name, ts) = text.split_once(' ').unwrap();
                (name.to_owned(), ts.parse().unwrap())
            }
            HeldEvent::Event(e) => (e.callsite.name.as_str().to_owned(), e.ts),
        }
    }
}

impl SliceWriter for Log {
    fn time(&self, ticks: u64) -> u64 {
        ticks
    }

    fn encode(&mut self, e: &Event<'_>, out: &mut Vec<u8>) -> bool {
        // Written, then refused: what is cut back is not held.
        out.extend_from_slice(format!("{} {}", e.callsite.name.as_str(), e.ts).as_bytes());
        e.callsite.name.as_str() != "mark"
    }

    fn begin(&mut self, s: &Slice, e: HeldEvent<'_>) {
        let kind = if s.kind == SliceKind::Mark { "I" } else { "B" };
        assert_eq!(matches!(e, HeldEvent::Event(_)), s.kind == SliceKind::Mark);
        let (name, ts) = Log::read(e);
        self.0.push(format!("{kind} {name} {ts}"));
    }

    fn end(&mut self, s: &Slice, end: Option<HeldEvent<'_>>) {
        let name = end.map_or("-".to_owned(), |e| Log::read(e).0);
        self.0.push(format!("E {name} {}", s.start + s.dur));
    }
}

/// A file of one thread's `events` (callsites `ID` + 0 `parent` complete, 1 `child`
/// complete, 2 `mark` instant, 3 `open` begin, 4 `close` end), read through [`Ordered`] holding `limit` slices.
fn walk(events: &[Vec<Record>], limit: usize) -> (Vec<String>, Ordered) {
    use phosphor_format::Phase::{Begin, Complete, End, Instant};
    let mut w = TraceWriter::new(Vec::new(), monotonic(), "t").unwrap();
    // Strings 0 to 2 are the category, the empty string and the file, as `callsite` wants.
    w.strings(&["craft", "", "ordered.rs"]).unwrap();
    let names = w.strings(&["parent", "child", "mark", "open", "close"]).unwrap();
    let phases = [Complete, Complete, Instant, Begin, End];
    w.callsites((0..5).map(|i| callsite(i + ID, phases[i as usize], names + i))).unwrap();
    let mut stream = ChunkStream::new(7);
    for e in events {
        stream.push(&mut w, e).unwrap();
    }
    stream.flush(&mut w).unwrap();
    let bytes = w.finish(Trailer::default()).unwrap();
    let mut reader = Reader::new(&bytes[..]).unwrap();
    let (mut ordered, mut log) = (Ordered::new(limit), Log::default());
    while let Some(chunk) = reader.next_chunk().unwrap() {
        for e in chunk.events() {
            assert!(ordered.push(&chunk, &e.unwrap(), &mut log));
        }
    }
    ordered.finish(reader.tables(), &mut log);
    (log.0, ordered)
}

#[test]
fn a_parent_recorded_after_its_child_begins_first_when_both_start_in_one_tick() {
    // child [10, 20], then parent [10, 30] (recorded at its end); an instant at 10 before both.
    let events = [
        records::instant(10, ID + 2).to_vec(),
        records::complete(10, ID + 1, 10).to_vec(),
        records::complete(10, ID, 20).to_vec(),
    ];
    let (log, _) = walk(&events, 100);
    assert_eq!(log, ["B parent 10", "B child 10", "I mark 10", "E - 20", "E - 30"]);
}

#[test]
fn ends_of_one_tick_come_inner_first_and_a_begin_end_pair_carries_its_end_event() {
    // open@0 { child [5, 9], parent [0, 9] } close@9, then a zero-length child at 9.
    let events = [
        records::begin(0, ID + 3).to_vec(),
        records::complete(5, ID + 1, 4).to_vec(),
        records::complete(0, ID, 9).to_vec(),
        records::end(9, ID + 4).to_vec(),
        records::complete(9, ID + 1, 0).to_vec(),
    ];
    let (log, ordered) = walk(&events, 100);
    assert_eq!(
        log,
        ["B open 0", "B parent 0", "B child 5", "E - 9", "E - 9", "E close 9", "B child 9", "E - 9"]
    );
    assert_eq!(ordered.unmatched_ends(), 0);
}

#[test]
fn an_end_with_nothing_open_is_dropped_and_counted_and_a_begin_never_ended_has_no_end() {
    let events = [
        records::end(1, ID + 4).to_vec(),
        records::begin(2, ID + 3).to_vec(),
        records::instant(3, ID + 2).to_vec(),
    ];
    let (log, ordered) = walk(&events, 100);
    assert_eq!(log, ["B open 2", "I mark 3"]);
    assert_eq!(ordered.unmatched_ends(), 1);
}

#[test]
fn past_the_limit_the_oldest_slices_are_written_early_and_every_event_once() {
    let events: Vec<Vec<Record>> = (0..1000).map(|i| records::complete(i * 10, ID + 1, 5).to_vec()).collect();
    let (log, ordered) = walk(&events, 64);
    assert_eq!(log.len(), 2000);
    assert!(ordered.written_early() > 900, "{}", ordered.written_early());
    // In time order: each slice's begin and end before the next one's.
    let want: Vec<String> =
        (0..1000).flat_map(|i| [format!("B child {}", i * 10), format!("E - {}", i * 10 + 5)]).collect();
    assert_eq!(log, want);
}

#[test]
fn a_file_of_many_threads_of_one_slice_each_is_held_at_most_max_held_at_a_time() {
    use phosphor_format::Phase::Complete;
    let threads = MAX_HELD as u32 + MAX_HELD as u32 / 2;
    let mut w = TraceWriter::new(Vec::new(), monotonic(), "t").unwrap();
    w.strings(&["craft", "", "ordered.rs"]).unwrap();
    let name = w.strings(&["s"]).unwrap();
    w.callsites([callsite(ID, Complete, name)]).unwrap();
    for tid in 0..threads {
        let mut stream = ChunkStream::new(tid + 1);
        stream.push(&mut w, &records::complete(u64::from(tid), ID, 5)).unwrap();
        stream.flush(&mut w).unwrap();
    }
    let bytes = w.finish(Trailer::default()).unwrap();
    let mut reader = Reader::new(&bytes[..]).unwrap();
    let (mut ordered, mut log) = (Ordered::default(), Log::default());
    let mut most = 0;
    while let Some(chunk) = reader.next_chunk().unwrap() {
        for e in chunk.events() {
            assert!(ordered.push(&chunk, &e.unwrap(), &mut log));
            most = most.max(ordered.held());
        }
    }
    ordered.finish(reader.tables(), &mut log);
    assert!(most <= MAX_HELD + 1, "{most} held at once");
    assert_eq!(log.0.len(), 2 * threads as usize, "every slice written once, begin and end");
    assert!(ordered.written_early() >= u64::from(threads) - MAX_HELD as u64);
}

#[test]
fn push_at_nests_on_the_times_it_is_given_not_the_ticks() {
    // child [10, 20] then parent [10, 30] in ticks; given as child [5, 40] and parent [10, 30],
    // the child holds the parent.
    let events = [records::complete(10, ID + 1, 10).to_vec(), records::complete(10, ID, 20).to_vec()];
    let mut w = TraceWriter::new(Vec::new(), monotonic(), "t").unwrap();
    w.strings(&["craft", "", "ordered.rs"]).unwrap();
    let names = w.strings(&["parent", "child"]).unwrap();
    w.callsites([
        callsite(ID, phosphor_format::Phase::Complete, names),
        callsite(ID + 1, phosphor_format::Phase::Complete, names + 1),
    ])
    .unwrap();
    let mut stream = ChunkStream::new(7);
    for e in &events {
        stream.push(&mut w, e).unwrap();
    }
    stream.flush(&mut w).unwrap();
    let bytes = w.finish(Trailer::default()).unwrap();
    let mut reader = Reader::new(&bytes[..]).unwrap();
    let (mut ordered, mut log) = (Ordered::default(), Log::default());
    let times = [(5, 40), (10, 30)];
    let mut n = 0;
    while let Some(chunk) = reader.next_chunk().unwrap() {
        for e in chunk.events() {
            let (ts, end) = times[n];
            assert!(ordered.push_at(&chunk, &e.unwrap(), ts, end, &mut log));
            n += 1;
        }
    }
    ordered.finish(reader.tables(), &mut log);
    assert_eq!(log.0, ["B child 10", "B parent 10", "E - 30", "E - 40"]);
}

#[test]
fn begins_nested_deeper_than_max_held_cost_a_step_per_event_not_per_open_begin() {
    // 70,000 begins open at once (more than MAX_HELD), then their ends: every slice is written,
    // nested, and shedding looks at a few levels per event, not at every open begin (it walked
    // them all at each event once the events held passed MAX_HELD: 35 s for a hundred thousand).
    let depth = MAX_HELD as u64 + 4_464;
    let mut events: Vec<Vec<Record>> = (0..depth).map(|i| records::begin(i, ID + 3).to_vec()).collect();
    events.extend((0..depth).map(|i| records::end(depth + i, ID + 4).to_vec()));
    crate::nesting::SHED_LEVELS.with(|n| n.set(0));
    let (log, ordered) = walk(&events, WRITER_PENDING_LIMIT);
    assert_eq!(log.len(), 2 * depth as usize, "a begin and an end for each slice");
    // Each begin once (the innermost are written early, while the outer ones are open), each
    // closed by its own end: the slice begun at i ends at 2 * depth - 1 - i.
    let mut begun: Vec<u64> = log.iter().filter_map(|l| l.strip_prefix("B open ")?.parse().ok()).collect();
    begun.sort_unstable();
    assert_eq!(begun, (0..depth).collect::<Vec<_>>());
    let mut ended: Vec<u64> = log.iter().filter_map(|l| l.strip_prefix("E close ")?.parse().ok()).collect();
    ended.sort_unstable();
    assert_eq!(ended, (depth..2 * depth).collect::<Vec<_>>());
    assert_eq!(ordered.unmatched_ends(), 0);
    let looked = crate::nesting::SHED_LEVELS.with(|n| n.get());
    assert!(looked < 16 * 2 * depth, "{looked} levels looked at for {} events", 2 * depth);
}

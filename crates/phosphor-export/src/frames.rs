//! Frames (`trace_frame!`, Tracy's `FrameMark`): each mark of a frame set ends one frame and starts
//! the next, so a set of `n` marks is `n - 1` frames, measured between consecutive marks in time
//! order. A mark is an instant of category [`FRAME_CATEGORY`] named by its set.

use std::io::Read;

use phosphor_format::file::{self, Reader};
use phosphor_format::{ClockInfo, Phase};
use phosphor_model::timeline::Timeline;
use rustc_hash::FxHashMap as HashMap;

use crate::durations::{DurationStats, Durations};
use crate::error::{read_chunks, Item};

pub use phosphor_format::system::FRAME_CATEGORY;

/// The slowest frames each set lists.
pub const SLOWEST_FRAMES: usize = 10;

/// The marks a set keeps (8 bytes each): past them, marks are counted in
/// [`FrameStats::marks_ignored`] and their frames are not measured.
pub const MAX_MARKS: usize = 1 << 22;

/// The frames of one frame set.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FrameStats {
    /// The set's name (`"frame"` for `trace_frame!()`).
    pub name: String,
    /// Marks read.
    pub marks: u64,
    /// Marks past [`MAX_MARKS`], not measured.
    pub marks_ignored: u64,
    /// The frames' durations (`None` with fewer than two marks).
    pub durations: Option<DurationStats>,
    /// The slowest [`SLOWEST_FRAMES`] frames, slowest first.
    pub slowest: Vec<SlowFrame>,
}

/// One frame: its number in its set (0 for the first), its start (nanoseconds since the trace's
/// clock origin) and its duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlowFrame {
    /// Its number in its set.
    pub number: u64,
    /// Its start, in nanoseconds since the clock's origin.
    pub start_ns: i64,
    /// Its duration in nanoseconds.
    pub dur_ns: u64,
}

/// The marks of every frame set, as read: by file and set name.
#[derive(Debug, Default)]
pub(crate) struct Frames {
    sets: HashMap<(u32, String), Set>,
}

#[derive(Debug, Default)]
struct Set {
    times: Vec<u64>,
    ignored: u64,
}

impl Frames {
    /// A mark of set `name` of file `file` at `time` (on the statistics' timeline).
    pub(crate) fn mark(&mut self, file: u32, name: &str, time: u64) {
        let set = match self.sets.get_mut(&(file, name.to_string())) {
            Some(s) => s,
            None => self.sets.entry((file, name.to_string())).or_default(),
        };
        if set.times.len() < MAX_MARKS {
            set.times.push(time);
        } else {
            set.ignored += 1;
        }
    }

    /// The sets' figures, by name (then file), on `clock` (whose ticks are the timeline's times).
    pub(crate) fn finish(self, clock: &ClockInfo) -> Vec<FrameStats> {
        self.lists(clock, false).into_iter().map(|l| l.stats).collect()
    }

    /// The sets, by name (then file), each with its figures and (`all`) every frame in order.
    fn lists(self, clock: &ClockInfo, all: bool) -> Vec<FrameList> {
        let mut sets: Vec<((u32, String), Set)> = self.sets.into_iter().collect();
        sets.sort_by(|a, b| (&a.0 .1, a.0 .0).cmp(&(&b.0 .1, b.0 .0)));
        sets.into_iter()
            .map(|((_, name), mut set)| {
                // Marks of several threads arrive chunk by chunk: time order is made here.
                set.times.sort_unstable();
                let mut durations = Durations::default();
                let mut frames: Vec<(u64, u64, u64)> = Vec::with_capacity(set.times.len().saturating_sub(1));
                for (number, pair) in set.times.windows(2).enumerate() {
                    let ticks = pair[1] - pair[0];
                    durations.add(ticks);
                    frames.push((ticks, number as u64, pair[0]));
                }
                let frame = |&(ticks, number, start): &(u64, u64, u64)| SlowFrame {
                    number,
                    start_ns: clock.since_origin_ns(start),
                    dur_ns: clock.ticks_to_ns(ticks),
                };
                let every = if all { frames.iter().map(frame).collect() } else { Vec::new() };
                let k = SLOWEST_FRAMES.min(frames.len());
                if k > 0 && k < frames.len() {
                    frames.select_nth_unstable_by(k - 1, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
                }
                frames.truncate(k);
                frames.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
                let stats = FrameStats {
                    name,
                    marks: set.times.len() as u64 + set.ignored,
                    marks_ignored: set.ignored,
                    durations: durations.stats(clock),
                    slowest: frames.iter().map(frame).collect(),
                };
                FrameList { stats, frames: every }
            })
            .collect()
    }
}

/// One frame set with every frame in it: what the viewer's frame track draws.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FrameList {
    /// The set's figures, as `phosphor stats` gives them.
    pub stats: FrameStats,
    /// Every frame in order (`frames[k].number == k`), its start in nanoseconds since the clock's
    /// origin: the frames the figures are made of.
    pub frames: Vec<SlowFrame>,
}

/// Every frame set of the rest of the file `reader` reads, by name, each with every frame: the
/// frames `phosphor stats` measures, measured by the same code. A read error stops it: the frames
/// before it are kept, and the error is given beside them.
pub fn read_frames<R: Read>(mut reader: Reader<R>) -> (Vec<FrameList>, Option<file::Error>) {
    let timeline = Timeline::new(&reader.header().clock);
    let mut marks = Frames::default();
    let failure = read_chunks(&mut reader, |item| -> Result<(), std::convert::Infallible> {
        if let Item::Event(e) = item {
            let cs = &e.callsite;
            if cs.phase == Phase::Instant && cs.category == FRAME_CATEGORY {
                marks.mark(0, cs.name.as_ref(), timeline.time(e.ts));
            }
        }
        Ok(())
    });
    // The callback cannot fail.
    let Ok(failure) = failure;
    (marks.lists(timeline.clock(), true), failure)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns_clock() -> ClockInfo {
        ClockInfo::monotonic(0, 0)
    }

    #[test]
    fn frames_are_the_intervals_between_marks_in_time_order() {
        let mut f = Frames::default();
        // Out of order (two threads' chunks), and a second set and a second file kept apart.
        for t in [0, 16, 50, 33, 66] {
            f.mark(0, "frame", t);
        }
        f.mark(0, "physics", 5);
        f.mark(1, "frame", 1000);
        let sets = f.finish(&ns_clock());
        assert_eq!(sets.len(), 3);
        let main = &sets[0];
        assert_eq!((main.name.as_str(), main.marks), ("frame", 5));
        let d = main.durations.unwrap();
        assert_eq!((d.samples, d.total_ns, d.min_ns, d.max_ns), (4, 66, 16, 17));
        // Frames 0..4 last 16, 17, 17, 16: the slowest first, ties by number.
        let slow: Vec<(u64, i64, u64)> =
            main.slowest.iter().map(|s| (s.number, s.start_ns, s.dur_ns)).collect();
        assert_eq!(slow, vec![(1, 16, 17), (2, 33, 17), (0, 0, 16), (3, 50, 16)]);
        // One mark is no frame.
        assert_eq!(sets[1].marks, 1);
        assert!(sets[1].durations.is_none() && sets[1].slowest.is_empty());
        assert_eq!(sets[2].name, "physics");
    }

    #[test]
    fn only_the_slowest_are_listed() {
        let mut f = Frames::default();
        let mut t = 0;
        for i in 0..100u64 {
            f.mark(0, "frame", t);
            t += 10 + i % 7;
        }
        let s = &f.finish(&ns_clock())[0];
        assert_eq!(s.slowest.len(), SLOWEST_FRAMES);
        assert!(s.slowest.iter().all(|x| x.dur_ns == 16), "{:?}", s.slowest);
        assert!(s.slowest.windows(2).all(|w| w[0].number < w[1].number));
    }
}

//! Window queries: what a time window of a track shows at a resolution, in at most about one
//! item per pixel and level, whatever the number of records in the window.
//!
//! A level's slices never overlap, so they are sorted by end as well as by start: the first one
//! that reaches into the window is found by binary search on ends. From there, a slice at least
//! a pixel wide is given whole, always; a narrower one starts a run that takes the slices
//! starting before the next pixel's edge (found by binary search on starts) up to the first
//! one a pixel wide, given as one merged item with its count; a run less than a pixel after
//! the previous one joins it. So a merged item holds only slices narrower than a pixel, and says
//! its dominant name (the name holding most of its time, [`SliceItem::Merged`]). Each item covers at
//! least a pixel or ends one, so a window of `p` pixels gives at most `2p + 2` items a level, in
//! `O(p log n)` reads of the index.

use crate::file::{IndexFile, ThreadTrack};
use crate::records::{Point, Sample, Slice};
use crate::summary::{weight, Tally, SPAN};

/// One item of a level in a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceItem {
    /// A slice, and its number in the index (for its details).
    Slice(u64, Slice),
    /// `count` slices narrower than a pixel, from `start` to `end`, the first numbered `first`;
    /// `name` is their dominant name: the one holding the most weight (`summary::weight`: its
    /// time, plus a tick a slice) among the run's slices, a block of 64 taken in whole from its
    /// summary counting as its own dominant name's weight, the 16 heaviest names kept
    /// (`summary::Tally`'s rule: exact for a run of at most 16 names).
    Merged { first: u64, count: u64, start: u64, end: u64, name: u32 },
}

/// The names a run's [`Tally`] keeps.
pub(crate) const RUN_NAMES: usize = 16;

/// One item of a thread's points in a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointItem {
    /// A point, and its number in the index.
    Point(u64, Point),
    /// `count` points within a pixel, from `start` to `end`, the first numbered `first`.
    Merged { first: u64, count: u64, start: u64, end: u64 },
}

/// A counter's values within one pixel of a window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleItem {
    /// The first sample's time (ticks).
    pub start: u64,
    /// The last sample's time.
    pub end: u64,
    /// Samples in the pixel.
    pub count: u64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
    /// The last value (what the counter holds at `end`).
    pub last: f64,
}

/// A window: from `start` to `end` clock ticks, `pixel` ticks a pixel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Its first tick.
    pub start: u64,
    /// Its last tick.
    pub end: u64,
    /// Ticks a pixel (at least 1).
    pub pixel: u64,
}

impl Window {
    /// The window from `start` to `end` drawn `pixels` wide.
    pub fn new(start: u64, end: u64, pixels: u32) -> Window {
        let span = end.abs_diff(start);
        Window { start: start.min(end), end: start.max(end), pixel: (span / u64::from(pixels.max(1))).max(1) }
    }

    /// The start of the pixel after the one `t` falls in.
    fn next_edge(&self, t: u64) -> u64 {
        let (t, start, pixel) = (i128::from(t), i128::from(self.start), i128::from(self.pixel));
        let edge = start + ((t - start).div_euclid(pixel) + 1) * pixel;
        u64::try_from(edge.max(0)).unwrap_or(u64::MAX)
    }
}

/// The first index in `lo..hi` for which `before` is false (`before` is true for a prefix).
pub(crate) fn partition(mut lo: u64, mut hi: u64, before: impl Fn(u64) -> bool) -> u64 {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// [`partition`] for an answer likely near `lo`: steps of 1, 2, 4… from it first, so that the
/// records read are near each other (and in blocks read already).
pub(crate) fn partition_near(lo: u64, hi: u64, before: impl Fn(u64) -> bool) -> u64 {
    let mut step = 1u64;
    let mut from = lo;
    while from < hi {
        let probe = from.saturating_add(step - 1).min(hi - 1);
        if !before(probe) {
            return partition(from, probe, before);
        }
        from = probe + 1;
        step = step.saturating_mul(2);
    }
    hi
}

impl IndexFile {
    /// The slices of `thread` in `w`, by level (outermost first).
    pub fn slices_in(&self, thread: &ThreadTrack, w: Window) -> Vec<Vec<SliceItem>> {
        thread.levels.iter().map(|&(first, n)| self.level_in(first, first + n, w)).collect()
    }

    /// The items of the level of slices `first..end` in `w`.
    fn level_in(&self, first: u64, end: u64, w: Window) -> Vec<SliceItem> {
        let mut out = Vec::new();
        // The names of the run that is `out`'s last item, when it is one.
        let mut names = Tally::default();
        let mut i = partition(first, end, |i| self.slice(i).end < w.start);
        while i < end {
            // At a block's first slice after a run: the whole block joins the run if its
            // summary says each of its slices would (`summary.rs`), unread.
            if i % SPAN == 0 && i + SPAN <= end {
                if let Some(SliceItem::Merged { first, count, end: run_end, name, .. }) = out.last_mut() {
                    let b = self.slice_summary(i / SPAN);
                    if *first + *count == i
                        && b.max_duration < w.pixel
                        && b.max_gap < w.pixel
                        && b.first_start.saturating_sub(*run_end) < w.pixel
                        && b.last_end <= w.end
                    {
                        *count += SPAN;
                        *run_end = b.last_end;
                        names.add(b.top_name, b.top_weight, RUN_NAMES);
                        *name = names.top().map_or(b.top_name, |t| t.0);
                        i += SPAN;
                        continue;
                    }
                }
            }
            let s = self.slice(i);
            if s.start > w.end {
                break;
            }
            if s.duration() >= w.pixel {
                out.push(SliceItem::Slice(i, s));
                i += 1;
                continue;
            }
            // Not past the window: a run takes only slices that start in it.
            let edge = w.next_edge(s.start).min(w.end.saturating_add(1));
            // A run stops at the end of a block too, so that the next block may be taken in
            // whole; the two parts join again.
            let block_end = (i / SPAN + 1) * SPAN;
            let j = partition_near(i + 1, end.min(block_end), |k| self.slice(k).start < edge);
            // A run less than a pixel after the previous one (a run, or a lone slice narrower
            // than a pixel) joins it: drawn the same, and a busy level becomes a few items
            // rather than one a pixel.
            let joins = match out.last() {
                Some(&SliceItem::Merged { first, count, start, end, .. }) => {
                    (first + count == i && s.start.saturating_sub(end) < w.pixel).then_some((first, start))
                }
                Some(&SliceItem::Slice(k, t)) => (k + 1 == i
                    && t.duration() < w.pixel
                    && s.start.saturating_sub(t.end) < w.pixel)
                    .then(|| {
                        names.clear();
                        names.add(t.name, weight(&t), RUN_NAMES);
                        (k, t.start)
                    }),
                None => None,
            };
            if joins.is_none() {
                names.clear();
            }
            // The run ends before the first slice a pixel wide or more: never merged, it is
            // drawn as itself, whatever starts in the pixel before it (at most a block's slices
            // read). Sorted by end too: the run's last slice ends last.
            names.add(s.name, weight(&s), RUN_NAMES);
            let (mut j2, mut last_end) = (i + 1, s.end);
            while j2 < j {
                let t = self.slice(j2);
                if t.duration() >= w.pixel {
                    break;
                }
                names.add(t.name, weight(&t), RUN_NAMES);
                last_end = t.end;
                j2 += 1;
            }
            let j = j2;
            let name = names.top().map_or(s.name, |t| t.0);
            match joins {
                Some((from, start)) => {
                    let run = SliceItem::Merged { first: from, count: j - from, start, end: last_end, name };
                    if let Some(last) = out.last_mut() {
                        *last = run;
                    }
                }
                None if j == i + 1 => out.push(SliceItem::Slice(i, s)),
                None => out.push(SliceItem::Merged {
                    first: i,
                    count: j - i,
                    start: s.start,
                    end: last_end,
                    name,
                }),
            }
            i = j;
        }
        out
    }

    /// The points of `thread` in `w`.
    pub fn points_in(&self, thread: &ThreadTrack, w: Window) -> Vec<PointItem> {
        let (first, n) = thread.points;
        let end = first + n;
        let mut out = Vec::new();
        let mut i = partition(first, end, |i| self.point(i).ts < w.start);
        while i < end {
            let p = self.point(i);
            if p.ts > w.end {
                break;
            }
            let edge = w.next_edge(p.ts).min(w.end.saturating_add(1));
            let j = partition_near(i + 1, end, |k| self.point(k).ts < edge);
            if j == i + 1 {
                out.push(PointItem::Point(i, p));
            } else {
                out.push(PointItem::Merged {
                    first: i,
                    count: j - i,
                    start: p.ts,
                    end: self.point(j - 1).ts,
                });
            }
            i = j;
        }
        out
    }

    /// The values of counter `counter` (its place in [`IndexFile::counters`]) in `w`, a pixel
    /// at a time, with the sample before the window (where the line comes from) first.
    pub fn samples_in(&self, counter: usize, w: Window) -> Vec<SampleItem> {
        let Some(c) = self.counters.get(counter) else { return Vec::new() };
        let (first, n) = c.samples;
        let end = first + n;
        let mut out = Vec::new();
        let mut i = partition(first, end, |i| self.sample(i).ts < w.start);
        if i > first {
            i -= 1;
        }
        while i < end {
            let s: Sample = self.sample(i);
            if s.ts > w.end {
                break;
            }
            let edge = w.next_edge(s.ts).min(w.end.saturating_add(1));
            let mut item =
                SampleItem { start: s.ts, end: s.ts, count: 1, min: s.value, max: s.value, last: s.value };
            i += 1;
            while i < end {
                // A block wholly within the pixel: taken in from its summary.
                if i % SPAN == 0 && i + SPAN <= end {
                    let b = self.sample_summary(i / SPAN);
                    if b.last_ts < edge {
                        item.end = b.last_ts;
                        item.count += SPAN;
                        item.min = item.min.min(b.min);
                        item.max = item.max.max(b.max);
                        item.last = b.last;
                        i += SPAN;
                        continue;
                    }
                }
                let s = self.sample(i);
                if s.ts >= edge {
                    break;
                }
                item.end = s.ts;
                item.count += 1;
                item.min = item.min.min(s.value);
                item.max = item.max.max(s.value);
                item.last = s.value;
                i += 1;
            }
            out.push(item);
        }
        out
    }
}

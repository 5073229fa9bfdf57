//! Window queries over a live model: what a window of a live track shows, in at most about two
//! items a pixel and level, as the index's queries (`query.rs`) give them.

use std::collections::VecDeque;

use super::{LSlice, LiveModel, MAX_DEPTH};
use crate::query::{PointItem, SampleItem, SliceItem, Window, RUN_NAMES};
use crate::records::{slice_flags, Point, Slice};
use crate::summary::{weight, Tally};

/// The start of the pixel of `w` after the one `t` falls in.
fn next_edge(w: &Window, t: u64) -> u64 {
    let (t, start, pixel) = (i128::from(t), i128::from(w.start), i128::from(w.pixel));
    let edge = start + ((t - start).div_euclid(pixel) + 1) * pixel;
    u64::try_from(edge.max(0)).unwrap_or(u64::MAX)
}

/// Adds slice `s` (number `id`) to the items of a level whose slices come in start order: a
/// slice a pixel wide or more whole; a narrower one joins the run before it if it starts in that
/// run's first pixel or less than a pixel after its end (as `query.rs` merges), so that a level
/// gives at most `2p + 2` items for `p` pixels. `names` is the tally of the level's last run
/// (its dominant name, as `query.rs` says it).
fn push_item(out: &mut Vec<SliceItem>, names: &mut Tally, id: u64, s: Slice, w: &Window) {
    if s.duration() >= w.pixel {
        out.push(SliceItem::Slice(id, s));
        return;
    }
    match out.last_mut() {
        Some(SliceItem::Merged { count, start, end, name, .. })
            if s.start < next_edge(w, *start) || s.start.saturating_sub(*end) < w.pixel =>
        {
            *count += 1;
            *end = (*end).max(s.end);
            names.add(s.name, weight(&s), RUN_NAMES);
            *name = names.top().map_or(s.name, |t| t.0);
        }
        Some(last @ SliceItem::Slice(..)) => match *last {
            SliceItem::Slice(first, p) if p.duration() < w.pixel && s.start < next_edge(w, p.start) => {
                names.clear();
                names.add(p.name, weight(&p), RUN_NAMES);
                names.add(s.name, weight(&s), RUN_NAMES);
                let name = names.top().map_or(s.name, |t| t.0);
                *last = SliceItem::Merged { first, count: 2, start: p.start, end: p.end.max(s.end), name };
            }
            _ => out.push(SliceItem::Slice(id, s)),
        },
        _ => out.push(SliceItem::Slice(id, s)),
    }
}

/// Levels being filled in end order: a slice that would overlap the previous one of its level
/// goes further down, marked interlaced, so that each level's slices also come in start order.
#[derive(Default)]
struct Levels {
    items: Vec<Vec<SliceItem>>,
    last_end: Vec<u64>,
    names: Vec<Tally>,
}

impl Levels {
    fn place(&mut self, depth: usize, id: u64, mut s: Slice, w: &Window) {
        let mut d = depth;
        while d < usize::from(MAX_DEPTH) && self.last_end.get(d).is_some_and(|&e| s.start < e) {
            s.flags |= slice_flags::INTERLACED;
            d += 1;
        }
        if d >= self.items.len() {
            self.items.resize_with(d + 1, Vec::new);
            self.last_end.resize(d + 1, 0);
            self.names.resize_with(d + 1, Tally::default);
        }
        self.last_end[d] = self.last_end[d].max(s.end);
        push_item(&mut self.items[d], &mut self.names[d], id, s, w);
    }
}

fn slice_of(s: &LSlice) -> Slice {
    Slice { start: s.start, end: s.end, name: s.name, callsite: 0, event: 0, flags: s.flags }
}

impl LiveModel {
    /// The slices of thread `tid` in `w`, by level (outermost first), its open begins included
    /// (running to its newest event, marked unclosed); `None` if there is no such thread. Walks
    /// the thread's slices that end in the window, or after it by no more than its longest
    /// slice lasts.
    pub fn slices_in(&self, tid: u32, w: Window) -> Option<Vec<Vec<SliceItem>>> {
        let t = &self.threads[self.threads.binary_search_by_key(&tid, |t| t.tid).ok()?];
        let mut levels = Levels::default();
        let first = t.slices.partition_point(|s| s.end < w.start);
        // Past this end, a slice starts after the window.
        let last_end = w.end.saturating_add(t.longest);
        for s in t.slices.range(first..).take_while(|s| s.end <= last_end).filter(|s| s.start <= w.end) {
            levels.place(usize::from(s.depth), s.id, slice_of(s), &w);
        }
        // They end last: at the thread's newest event.
        for (depth, o) in t.open.iter().enumerate() {
            let end = t.last.max(o.start);
            if end >= w.start && o.start <= w.end {
                let flags = slice_flags::SCOPE | slice_flags::UNCLOSED;
                let s = Slice { start: o.start, end, name: o.name, callsite: 0, event: 0, flags };
                levels.place(depth, o.id, s, &w);
            }
        }
        Some(levels.items)
    }

    /// The lanes of async track `a` in `w`, as levels.
    pub fn async_in(&self, a: usize, w: Window) -> Option<Vec<Vec<SliceItem>>> {
        let track = self.asyncs.get(a)?;
        Some(
            track
                .lanes
                .iter()
                .map(|lane| {
                    let (mut out, mut names) = (Vec::new(), Tally::default());
                    let first = lane.partition_point(|s| s.end < w.start);
                    for s in lane.range(first..).take_while(|s| s.start <= w.end) {
                        push_item(&mut out, &mut names, s.id, slice_of(s), &w);
                    }
                    out
                })
                .collect(),
        )
    }

    /// The points of thread `tid` in `w`: one alone in its pixel as it is, several merged.
    pub fn points_in(&self, tid: u32, w: Window) -> Option<Vec<PointItem>> {
        let t = &self.threads[self.threads.binary_search_by_key(&tid, |t| t.tid).ok()?];
        let mut out = Vec::new();
        let mut i = t.points.partition_point(|p| p.ts < w.start);
        while i < t.points.len() && t.points[i].ts <= w.end {
            let p = t.points[i];
            let edge = next_edge(&w, p.ts).min(w.end.saturating_add(1));
            let mut j = i + 1;
            while j < t.points.len() && t.points[j].ts < edge {
                j += 1;
            }
            if j == i + 1 {
                let point = Point { ts: p.ts, name: p.name, callsite: 0, event: 0, kind: p.kind };
                out.push(PointItem::Point(p.id, point));
            } else {
                let (count, end) = ((j - i) as u64, t.points[j - 1].ts);
                out.push(PointItem::Merged { first: p.id, count, start: p.ts, end });
            }
            i = j;
        }
        Some(out)
    }

    /// Counter `c`'s values in `w`, a pixel at a time, the sample before the window first.
    pub fn samples_in(&self, c: usize, w: Window) -> Option<Vec<SampleItem>> {
        let samples = &self.counters.get(c)?.samples;
        let mut out = Vec::new();
        let mut i = samples.partition_point(|s| s.0 < w.start).saturating_sub(1);
        while i < samples.len() && samples[i].0 <= w.end {
            let (ts, v) = samples[i];
            let edge = next_edge(&w, ts).min(w.end.saturating_add(1));
            let mut item = SampleItem { start: ts, end: ts, count: 1, min: v, max: v, last: v };
            i += 1;
            while i < samples.len() && samples[i].0 < edge {
                let (ts, v) = samples[i];
                item.end = ts;
                item.count += 1;
                item.min = item.min.min(v);
                item.max = item.max.max(v);
                item.last = v;
                i += 1;
            }
            out.push(item);
        }
        Some(out)
    }

    /// A slice by its number: the slice, its thread (or async track) and its level. A scan of the
    /// retained slices: for a click, not for drawing.
    pub fn slice(&self, id: u64) -> Option<(Slice, Option<u32>, Option<usize>, usize)> {
        for t in &self.threads {
            if let Some(s) = t.slices.iter().find(|s| s.id == id) {
                return Some((slice_of(s), Some(t.tid), None, usize::from(s.depth)));
            }
            if let Some((d, o)) = t.open.iter().enumerate().find(|(_, o)| o.id == id) {
                let flags = slice_flags::SCOPE | slice_flags::UNCLOSED;
                let s = Slice {
                    start: o.start,
                    end: t.last.max(o.start),
                    name: o.name,
                    callsite: 0,
                    event: 0,
                    flags,
                };
                return Some((s, Some(t.tid), None, d));
            }
        }
        for (a, track) in self.asyncs.iter().enumerate() {
            for (lane, l) in track.lanes.iter().enumerate() {
                if let Some(s) = l.iter().find(|s| s.id == id) {
                    return Some((slice_of(s), None, Some(a), lane));
                }
            }
        }
        None
    }

    /// Of slice `s` of thread `tid` at `level`: the names of the slices that hold it, outermost
    /// first, then its own (an older holder dropped from the model is left out); its self time in
    /// nanoseconds (its duration less that of its children, one level down, each measured as
    /// `phosphor stats` measures it: [`LiveModel::duration_ns`]); and its children's number. A walk
    /// of the slices ending within it, and of those that may hold it, on the model's timeline.
    pub fn context(&self, tid: u32, s: &Slice, level: usize) -> (Vec<u32>, u64, u64) {
        let Ok(at) = self.threads.binary_search_by_key(&tid, |t| t.tid) else {
            return (vec![s.name], self.duration_ns(s), 0);
        };
        let t = &self.threads[at];
        let time = |ticks| self.timeline.time(ticks);
        let (ss, se) = (time(s.start), time(s.end));
        let mut holders: Vec<Option<u32>> = vec![None; level.min(usize::from(MAX_DEPTH))];
        for (d, o) in t.open.iter().enumerate().take(holders.len()) {
            holders[d] = Some(o.name);
        }
        // A holder ends at or after it, and starts at or before it: by its start plus the longest.
        let from = t.slices.partition_point(|y| time(y.end) < se);
        let last = s.start.saturating_add(t.longest);
        for y in t.slices.range(from..).take_while(|y| y.end <= last) {
            let d = usize::from(y.depth);
            if d < holders.len() && time(y.start) <= ss && holders[d].is_none() {
                holders[d] = Some(y.name);
            }
        }
        let lo = t.slices.partition_point(|y| time(y.end) < ss);
        let hi = t.slices.partition_point(|y| time(y.end) <= se);
        let (mut inside, mut children) = (0u64, 0u64);
        for y in t.slices.range(lo..hi.max(lo)) {
            if usize::from(y.depth) == level + 1 && time(y.start) >= ss {
                inside = inside.saturating_add(time(y.end) - time(y.start));
                children += 1;
            }
        }
        let mut path: Vec<u32> = holders.into_iter().flatten().collect();
        path.push(s.name);
        (path, (se - ss).saturating_sub(inside), children)
    }

    /// A point by its number, and its thread.
    pub fn point(&self, id: u64) -> Option<(Point, u32)> {
        self.threads.iter().find_map(|t| {
            let p = t.points.iter().find(|p| p.id == id)?;
            Some((Point { ts: p.ts, name: p.name, callsite: 0, event: 0, kind: p.kind }, t.tid))
        })
    }

    /// The threads (tid, name, levels, slices, points), by tid.
    pub fn threads(&self) -> impl Iterator<Item = (u32, Option<&str>, usize, usize, usize)> + '_ {
        self.threads
            .iter()
            .map(|t| (t.tid, t.name.as_deref(), t.levels, t.slices.len() + t.open.len(), t.points.len()))
    }

    /// The counters (name, samples held), by number.
    pub fn counters(&self) -> impl Iterator<Item = (&str, usize)> + '_ {
        self.counters.iter().map(|c| (self.name(c.name), c.samples.len()))
    }

    /// The async tracks (name, lanes, slices held), by number.
    pub fn asyncs(&self) -> impl Iterator<Item = (&str, usize, usize)> + '_ {
        self.asyncs
            .iter()
            .map(|a| (self.name(a.name), a.lanes.len(), a.lanes.iter().map(VecDeque::len).sum()))
    }

    /// The number of counters.
    pub fn counter_count(&self) -> usize {
        self.counters.len()
    }

    /// The number of async tracks.
    pub fn async_count(&self) -> usize {
        self.asyncs.len()
    }
}

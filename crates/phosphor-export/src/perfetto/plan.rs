//! The async lanes, planned in a first pass over the file ([`AsyncPlan`]), so that the export can
//! lay async slices out on the fewest tracks whatever order the file holds them in.
//!
//! # Why a first pass
//!
//! Chunks are written per thread, so an async slice begun on one thread and ended on another can
//! have its end long before its begin in the file, and slices come in no time order. Laid out in
//! one pass (`lanes.rs`), a lane can be reused only by a slice that begins after everything the
//! lane has held, and the demo's 20,000 slices still took over a thousand tracks. With every
//! slice's interval known first, the layout is interval partitioning: the slices of one
//! (category, name) sorted by begin, each put on the lane that freed earliest if that lane is free
//! by then, else on a new lane. That gives as many lanes as the most slices of that name open at
//! one instant, the fewest possible.
//!
//! # What a slice is
//!
//! Begins and ends are grouped as the one-pass layout groups them: per (category, name, id), in
//! file order, from the event that finds the key closed until begins and ends balance again. A
//! group is one slice (or a few nested ones: a begin again before the end). Its interval is where
//! it can be open on its lane once trace processor sorts the events by time (ties in stream order):
//! - every begin before every end in time (ties: no begin after an end in the file): from the
//!   first begin to the last end;
//! - only ends (the begins are missing): from the first end to the last (an end with nothing open
//!   closes nothing, as long as no other slice of the lane is open then);
//! - anything else (unended, an end before its begin in time, hostile timestamps): from its first
//!   event on for ever, so nothing else shares its lane after it.
//!
//! Two slices share a lane only if one ends strictly before the other begins: at equal timestamps
//! the file's order could nest one inside the other.
//!
//! # Memory
//!
//! The plan keeps 4 bytes per async begin or end (its lane), and while it is built 48 bytes per
//! slice (what its interval needs) and a map entry (about 30 to 50 bytes) per slice open in file
//! order. Past
//! [`MAX_PLANNED_ASYNC_EVENTS`] async events it stops and gives up (memory stays bounded): the
//! export then lays every async slice out in one pass, as [`write_perfetto`](super::write_perfetto)
//! does, counts them in its summary instant and flags them in
//! [`ExportSummary::async_unplanned`](crate::ExportSummary::async_unplanned).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Read;

use phosphor_format::file::{Block, ClockInfo, Event, Reader, Value};

use phosphor_format::Phase;
use rustc_hash::FxHashMap as HashMap;

/// The most async begins and ends a plan covers: 524,288 paired slices. At this size a plan being
/// built holds at most about 100 MiB (every event an unpaired begin, all open at once), or about
/// 30 MiB for paired slices; the finished plan, 4 MiB.
pub const MAX_PLANNED_ASYNC_EVENTS: usize = 1 << 20;

/// An interval that never ends.
const NEVER: u64 = u64::MAX;

/// Where each async slice of a trace file goes: a lane per async begin or end, in file order, made
/// by [`AsyncPlan::from_reader`] from a first reading of the file, for
/// [`write_perfetto_planned`](super::write_perfetto_planned) to follow on a second.
#[derive(Clone, Debug, Default)]
pub struct AsyncPlan {
    /// The lane of each async begin and end, in file order.
    lanes: Vec<u32>,
    /// Lanes in all.
    count: u32,
    /// Async begins and ends read.
    events: u64,
    /// More async events than [`MAX_PLANNED_ASYNC_EVENTS`]: `lanes` is empty.
    overflowed: bool,
}

impl AsyncPlan {
    /// Reads the rest of the file and plans its async slices' lanes. A read error ends the plan
    /// there (the export stops at the same place, and reports it).
    pub fn from_reader<R: Read>(mut reader: Reader<R>) -> AsyncPlan {
        let clock = reader.header().clock.clone();
        Self::build(&mut reader, &clock, MAX_PLANNED_ASYNC_EVENTS)
    }

    pub(super) fn build<R: Read>(reader: &mut Reader<R>, clock: &ClockInfo, cap: usize) -> AsyncPlan {
        let origin_ns = origin_ns(clock);
        let mut builder = Builder::default();
        // No event can be async until a callsites block defines an async callsite: until then
        // the blocks are read (taking in the tables) and no event is decoded.
        while !any_async(reader) {
            loop {
                match reader.next_block() {
                    Ok(Some(Block::Callsites { .. })) => break,
                    Ok(Some(_)) => {}
                    // A read error ends the plan there: the export stops at the same place.
                    Ok(None) | Err(_) => return builder.finish(),
                }
            }
        }
        let is_async = |p: Phase| matches!(p, Phase::AsyncBegin | Phase::AsyncEnd);
        // Only the async events are decoded (`next_where`); the rest are stepped over. A read or
        // decode error ends the plan there. The export reads every event, so it may stop earlier,
        // at an error in an event passed over here: the plan then holds lanes it does not use,
        // which changes nothing for the slices before that error.
        while let Ok(Some(chunk)) = reader.next_chunk() {
            let mut events = chunk.events();
            while let Some(e) = events.next_where(is_async) {
                let Ok(e) = e else { return builder.finish() };
                if !is_async(e.callsite.phase) {
                    continue;
                }
                if builder.events.len() >= cap {
                    let events = builder.events.len() as u64;
                    return AsyncPlan { lanes: Vec::new(), count: 0, events, overflowed: true };
                }
                let ts = ns(origin_ns, clock, e.ts);
                builder.add(class_of(&e), e.async_id.unwrap_or(0), e.callsite.phase == Phase::AsyncBegin, ts);
            }
        }
        builder.finish()
    }

    /// Lanes the plan uses, for every name together.
    pub fn lanes(&self) -> u32 {
        self.count
    }

    /// Async begins and ends the plan read (up to the cap, if it overflowed).
    pub fn async_events(&self) -> u64 {
        self.events
    }

    /// Whether the file held more async events than [`MAX_PLANNED_ASYNC_EVENTS`], so that the
    /// plan holds none and the export lays them out in one pass.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }
}

/// Whether the reader knows an async callsite: the plan decodes no chunk while it knows none. A
/// chunk's events are resolved against the callsites defined before it, so before the first async
/// callsite is defined no chunk holds an async event, and a file that defines none is read
/// without decoding a single event. (Skipping each chunk none of whose records carries an async
/// id was tried: on the demo, where most chunks hold an async event, it cost 4% more
/// instructions than it saved.)
fn any_async<R: Read>(reader: &Reader<R>) -> bool {
    reader.callsites().any(|c| matches!(c.phase, Phase::AsyncBegin | Phase::AsyncEnd))
}

/// A (category, name) of async slices, keyed by string-table indices: the category's, and the
/// name's (or, for a callsite whose events carry their name, that name's hash with the top bit
/// set, which no index has). The same in both passes, since they read the same file.
pub(super) fn class_of(e: &Event<'_>) -> (u32, u64) {
    let cs = &e.callsite;
    let name = match e.args[0] {
        Some((_, Value::Str(s))) if cs.dynamic_name => 1 << 63 | phosphor_format::fnv1a64(s.as_bytes()),
        _ => u64::from(cs.name.index()),
    };
    (cs.category.index(), name)
}

/// `CLOCK_MONOTONIC` at the clock's origin, clamped to `i64`.
pub(super) fn origin_ns(clock: &ClockInfo) -> i64 {
    clock.origin_monotonic_ns.min(i64::MAX as u64) as i64
}

/// Absolute `CLOCK_MONOTONIC` nanoseconds of a raw timestamp (never negative): what the export
/// writes, so what the plan must compare.
#[inline]
pub(super) fn ns(origin_ns: i64, clock: &ClockInfo, ticks: u64) -> u64 {
    origin_ns.saturating_add(clock.since_origin_ns(ticks)).max(0) as u64
}

/// A group of begins and ends of one key (see the module docs): what its interval needs.
#[derive(Debug)]
struct Group {
    class: u32,
    min_begin: u64,
    max_begin: u64,
    min_end: u64,
    max_end: u64,
    /// Begins minus ends.
    balance: i64,
    /// A begin came after an end in the file.
    begin_after_end: bool,
}

impl Group {
    /// Where the group can be open on its lane: `(start, end)`, `end` inclusive or [`NEVER`].
    fn interval(&self) -> (u64, u64) {
        let begun = self.min_begin != NEVER;
        let ended = self.min_end != NEVER;
        let first = self.min_begin.min(self.min_end);
        match (begun, ended) {
            (false, _) => (self.min_end, self.max_end),
            (true, true)
                if self.balance == 0
                    && (self.max_begin < self.min_end
                        || self.max_begin == self.min_end && !self.begin_after_end) =>
            {
                (self.min_begin, self.max_end)
            }
            _ => (first, NEVER),
        }
    }
}

/// The first pass's state.
#[derive(Default)]
struct Builder {
    /// The group of each async event, in file order (then its lane).
    events: Vec<u32>,
    groups: Vec<Group>,
    /// The group open (in file order) per class and id.
    open: HashMap<(u32, u64), u32>,
    classes: HashMap<(u32, u64), u32>,
}

impl Builder {
    fn add(&mut self, class: (u32, u64), id: u64, begin: bool, ts: u64) {
        let next = self.classes.len() as u32;
        let class = *self.classes.entry(class).or_insert(next);
        let g = match self.open.get(&(class, id)) {
            Some(&g) => g,
            None => {
                let g = self.groups.len() as u32;
                self.groups.push(Group {
                    class,
                    min_begin: NEVER,
                    max_begin: 0,
                    min_end: NEVER,
                    max_end: 0,
                    balance: 0,
                    begin_after_end: false,
                });
                self.open.insert((class, id), g);
                g
            }
        };
        let group = &mut self.groups[g as usize];
        if begin {
            group.begin_after_end |= group.min_end != NEVER;
            group.min_begin = group.min_begin.min(ts);
            group.max_begin = group.max_begin.max(ts);
            group.balance += 1;
        } else {
            group.min_end = group.min_end.min(ts);
            group.max_end = group.max_end.max(ts);
            group.balance -= 1;
        }
        if group.balance == 0 {
            self.open.remove(&(class, id));
        }
        self.events.push(g);
    }

    /// Colours the groups' intervals per class, and turns each event's group into its lane.
    fn finish(self) -> AsyncPlan {
        let Builder { mut events, groups, open, classes } = self;
        drop((open, classes));
        // In place (the groups' room is reused), so the peak is not one more vector.
        let intervals: Vec<(u32, u64, u64)> = groups
            .into_iter()
            .map(|g| {
                let (start, end) = g.interval();
                (g.class, start, end)
            })
            .collect();
        let (lane_of, count) = colour(&intervals);
        for e in &mut events {
            *e = lane_of[*e as usize];
        }
        AsyncPlan { events: events.len() as u64, lanes: events, count, overflowed: false }
    }
}

/// Interval partitioning: the lane of each `(class, start, end)` interval (`end` inclusive), such
/// that intervals on one lane are of one class and never share an instant, in the fewest lanes
/// (per class, the most intervals that hold one instant). Lanes are numbered from 0 in the order
/// they are first used, by class in order of first appearance and then by start.
pub(super) fn colour(intervals: &[(u32, u64, u64)]) -> (Vec<u32>, u32) {
    let mut order: Vec<u32> = (0..intervals.len() as u32).collect();
    // By class, then start; ties in input order, so the plan is deterministic.
    order.sort_unstable_by_key(|&i| {
        let (class, start, _) = intervals[i as usize];
        (class, start, i)
    });
    let mut lane_of = vec![0; intervals.len()];
    let mut count = 0u32;
    // The lanes of the class being coloured, by the end of the last interval each holds.
    let mut busy: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
    let mut class = None;
    for i in order {
        let (c, start, end) = intervals[i as usize];
        if class != Some(c) {
            class = Some(c);
            busy.clear();
        }
        let lane = match busy.peek() {
            Some(&Reverse((free_after, lane))) if free_after < start => {
                busy.pop();
                lane
            }
            _ => {
                count += 1;
                count - 1
            }
        };
        lane_of[i as usize] = lane;
        busy.push(Reverse((end, lane)));
    }
    (lane_of, count)
}

/// The plan being followed by the export: the next event's lane, and which lanes have their
/// track descriptor written.
#[derive(Debug)]
pub(super) struct Follow {
    plan: AsyncPlan,
    next: usize,
    described: Vec<u64>,
}

impl Follow {
    pub(super) fn new(plan: AsyncPlan) -> Follow {
        let words = (plan.count as usize).div_ceil(64);
        Follow { plan, next: 0, described: vec![0; words] }
    }

    /// The lane of the next async event and whether it is new (its descriptor not yet written);
    /// `None` past the plan (it overflowed, or the file holds more than it did).
    pub(super) fn next_lane(&mut self) -> Option<(u32, bool)> {
        let &lane = self.plan.lanes.get(self.next)?;
        self.next += 1;
        let (word, bit) = (lane as usize / 64, 1u64 << (lane % 64));
        // A lane is below `count`, so its word exists; `get_mut` rather than indexing all the same.
        let w = self.described.get_mut(word)?;
        let new = *w & bit == 0;
        *w |= bit;
        Some((lane, new))
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

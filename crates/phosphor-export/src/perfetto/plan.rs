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
//! Begins and ends are paired by the model's one rule (`phosphor_model::asyncs`: by shown name and
//! id, in file order, a second begin giving the first up), so trace processor draws the pairs the
//! statistics count. Each pair, and each half left alone, is one slice on a lane; its interval is
//! where it can be open on its lane once trace processor sorts the events by time (ties in stream
//! order, which is file order):
//! - a pair whose begin comes first in that order: from its begin to its end;
//! - a pair whose end comes first (earlier in time, or at the same instant and read first): its
//!   end closes nothing, so its begin stays open, from its first event on for ever (nothing else
//!   shares its lane after it);
//! - a begin never ended: from it on for ever; an end never begun: its instant (it closes
//!   nothing, as long as no other slice of its lane is open then).
//!
//! Two slices share a lane only if one ends strictly before the other begins
//! (`phosphor_model::asyncs::Lanes`): at equal timestamps the file's order could nest one inside
//! the other.
//!
//! # Memory
//!
//! The plan keeps 4 bytes per async begin or end (its lane), and while it is built 24 bytes per
//! slice (its name's number and interval), each name once, and the model's entry (about 40 bytes)
//! per half waiting for its other half, up to its cap. Past
//! [`MAX_PLANNED_ASYNC_EVENTS`] async events it stops and gives up (memory stays bounded): the
//! export then lays every async slice out in one pass, as [`write_perfetto`](super::write_perfetto)
//! does, counts them in its summary instant and flags them in
//! [`ExportSummary::async_unplanned`](crate::ExportSummary::async_unplanned).

use std::io::Read;

use phosphor_format::file::{Block, ClockInfo, Event, Reader};
use phosphor_format::Phase;
use phosphor_model::asyncs::{async_name, AsyncKey, Lanes, Matched, Pairing};
use phosphor_model::names::NameSet;

/// The most async begins and ends a plan covers: 524,288 paired slices. At this size a plan being
/// built holds at most about 50 MiB (every event an unpaired begin, the model's cap of them
/// waiting), or about 20 MiB for paired slices; the finished plan, 4 MiB.
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
                let name = builder.names.number(async_name(&e));
                builder.add(name, e.async_id.unwrap_or(0), e.callsite.phase == Phase::AsyncBegin, ts);
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

/// The class of an async event for the one-pass layout (`lanes.rs`): its name as shown (the
/// model's key, not the category), as a hash. The same in both passes, since they read the same
/// file.
pub(super) fn class_of(e: &Event<'_>) -> (u32, u64) {
    (0, phosphor_format::fnv1a64(async_name(e).as_bytes()))
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

/// The first pass's state.
#[derive(Default)]
struct Builder {
    /// The slice of each async event, in file order (then its lane).
    events: Vec<u32>,
    /// Each slice's name and interval: `(name, start, end)`, `end` inclusive or [`NEVER`].
    slices: Vec<(u32, u64, u64)>,
    names: NameSet,
    /// The model's pairing; a half's payload is its event's place in `events`.
    pairing: Pairing<u32>,
}

/// Records in `slices` the slice `m` makes, and in `events` which slice each of its events is.
fn slice_of(events: &mut [u32], slices: &mut Vec<(u32, u64, u64)>, key: AsyncKey, m: Matched<u32>) {
    let s = slices.len() as u32;
    let (at, interval) = match m {
        Matched::Pair { begin, end, end_first } => {
            events[end.payload as usize] = s;
            let drawn = end.ts > begin.ts || end.ts == begin.ts && !end_first;
            let interval = if drawn { (begin.ts, end.ts) } else { (end.ts.min(begin.ts), NEVER) };
            (begin.payload, interval)
        }
        Matched::Unended(h) => (h.payload, (h.ts, NEVER)),
        Matched::Unbegun(h) => (h.payload, (h.ts, h.ts)),
    };
    events[at as usize] = s;
    slices.push((key.name, interval.0, interval.1));
}

impl Builder {
    fn add(&mut self, name: u32, id: u64, begin: bool, ts: u64) {
        let Builder { events, slices, pairing, .. } = self;
        let at = events.len() as u32;
        events.push(u32::MAX);
        pairing.add(AsyncKey { name, id }, begin, ts, at, &mut |k, m| slice_of(events, slices, k, m));
    }

    /// Lays the slices out per name, and turns each event's slice into its lane.
    fn finish(self) -> AsyncPlan {
        let Builder { mut events, mut slices, names, mut pairing } = self;
        drop(names);
        pairing.finish(&mut |k, m| slice_of(&mut events, &mut slices, k, m));
        drop(pairing);
        let (lane_of, count) = colour(&slices);
        drop(slices);
        for e in &mut events {
            *e = lane_of[*e as usize];
        }
        AsyncPlan { events: events.len() as u64, lanes: events, count, overflowed: false }
    }
}

/// Interval partitioning (`phosphor_model::asyncs::Lanes`): the lane of each `(class, start,
/// end)` interval (`end` inclusive), such that intervals on one lane are of one class and never
/// share an instant, in the fewest lanes (per class, the most intervals that hold one instant).
/// Lanes are numbered from 0 in the order they are first used, by class in order of first
/// appearance and then by start.
pub(super) fn colour(intervals: &[(u32, u64, u64)]) -> (Vec<u32>, u32) {
    let mut order: Vec<u32> = (0..intervals.len() as u32).collect();
    // By class, then start; ties in input order, so the plan is deterministic.
    order.sort_unstable_by_key(|&i| {
        let (class, start, _) = intervals[i as usize];
        (class, start, i)
    });
    let mut lane_of = vec![0; intervals.len()];
    let (mut count, mut base) = (0u32, 0u32);
    let mut lanes = Lanes::default();
    let mut class = None;
    for i in order {
        let (c, start, end) = intervals[i as usize];
        if class != Some(c) {
            class = Some(c);
            base = count;
        }
        let lane = base + lanes.place(c, start, end);
        count = count.max(lane + 1);
        lane_of[i as usize] = lane;
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

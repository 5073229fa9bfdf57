//! Thread slices in the order their clients rebuild them: the adaptor the Perfetto and Chrome
//! writers (and any writer of begins and ends) put between the file and their output.
//!
//! A file holds each thread's events in the order the thread recorded them, and a complete event
//! (a scope guard's, a lock's) is recorded at its end, after the slices nested in it. A writer
//! that turns each event into a begin and an end as it reads it writes a child's begin before its
//! parent's; a client that sorts by time (Perfetto's trace processor: ties in stream order) or
//! reads the file in order (Chrome's viewer, speedscope for equal intervals) then nests the parent
//! inside the child whenever both start in the same clock tick, which a coarse clock makes
//! common; and on the client's time: two clock ticks written as one nanosecond are a tie there.
//! [`Ordered`] keeps each thread's slices aside ([`HeldEvents`]) until [`Nesting`] knows
//! their tree, then hands them to the writer as a walk in time order ([`SliceWriter`]): a slice's
//! begin before the slices nested in it, its end after them, nested on the times the writer
//! writes ([`SliceWriter::time`]). The tree is the one `phosphor stats` builds from the same
//! events on the same times, so what the client rebuilds is what the statistics count.
//!
//! Memory is what [`Nesting`] keeps, [`WRITER_PENDING_LIMIT`] slices per thread and [`MAX_HELD`]
//! in all, past which the oldest are written early (counted in [`Ordered::written_early`]), plus
//! those slices' records.
//! Written early, a slice still nests as the statistics say unless a slice that encloses it, recorded
//! later, begins in the very nanosecond it does: the client orders the rest by time.

use phosphor_format::file::{Chunk, Error, Event, HeldEvents, TableSet};
use phosphor_format::Phase;

use crate::nesting::{Nesting, Problem, Sink, Slice, SliceKind};

/// The slices a thread holds by default before the oldest are written early: fewer than the
/// statistics keep ([`DEFAULT_PENDING_LIMIT`](crate::nesting::DEFAULT_PENDING_LIMIT)), since a
/// slice written early only matters at a tie, and a smaller working set is a faster one (the
/// demo's 11.6 M events: 5.6 s of CPU and 38 MB at this limit, 7.8 s and 117 MB at 65,536).
pub const WRITER_PENDING_LIMIT: usize = 1 << 12;

/// The most slices all threads hold together: past it every thread's are written early. A
/// file of a million threads of one slice each would otherwise hold them all to its end.
pub const MAX_HELD: usize = 1 << 16;

/// What a thread slice is kept as: its events' slots in [`HeldEvents`] (`NONE`: none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    /// The begin, complete or lock event, or the mark.
    first: u32,
    /// A begin's end event.
    end: u32,
}

const NONE: u32 = u32::MAX;

impl Default for Held {
    fn default() -> Held {
        Held { first: NONE, end: NONE }
    }
}

/// Where a thread's slices go, in time order (see the [module docs](self)).
pub trait SliceWriter {
    /// The timestamp the writer writes for raw clock value `ticks`. Slices are nested on these
    /// times, not on the ticks: two ticks written as one time are a tie for the client, and
    /// [`Slice::start`] and [`Slice::dur`] are in these units. It must not decrease as `ticks`
    /// grows.
    fn time(&self, ticks: u64) -> u64;
    /// Slice `slice` begins: `event` is its begin, complete or lock event, or the instant or log
    /// it is (a mark, which gets no [`SliceWriter::end`]). Every slice nested in it comes after.
    fn begin(&mut self, slice: &Slice, event: &Event<'_>);
    /// Slice `slice` ends, after every slice nested in it, at `slice.start + slice.dur` (in the
    /// writer's [`SliceWriter::time`]); `end` is the end event of a begin/end pair. Not called for marks, or for a
    /// begin never ended (`slice.kind` [`SliceKind::Unclosed`]).
    fn end(&mut self, slice: &Slice, end: Option<&Event<'_>>);
    /// A held event could not be decoded again: never for a file that read without error,
    /// counted by the writer.
    fn failed(&mut self, _error: Error) {}
}

/// Which phases go through [`Ordered`]: the events that are slices of their thread's track.
pub fn is_thread_slice(phase: Phase) -> bool {
    matches!(
        phase,
        Phase::Begin
            | Phase::End
            | Phase::Complete
            | Phase::LockWait
            | Phase::LockHeld
            | Phase::Instant
            | Phase::Log
    )
}

/// Each thread's slices, held until their tree is known (see the [module docs](self)).
#[derive(Debug)]
pub struct Ordered {
    nesting: Nesting<Held>,
    held: HeldEvents,
    /// The walk's open slices: a begin's end event, until it is left.
    open: Vec<u32>,
    /// Ends taken with no begin open on their thread.
    unmatched_ends: u64,
}

impl Default for Ordered {
    fn default() -> Ordered {
        Ordered::new(WRITER_PENDING_LIMIT)
    }
}

/// The [`Sink`] of a walk: decodes each held event again and hands it to the writer.
struct Walk<'a, 't, W> {
    held: &'a mut HeldEvents,
    open: &'a mut Vec<u32>,
    tables: TableSet<'t>,
    writer: &'a mut W,
}

impl<W: SliceWriter> Sink<Held> for Walk<'_, '_, W> {
    fn enter(&mut self, slice: &Slice, held: Held) {
        if held.first != NONE {
            match self.held.get(held.first, self.tables) {
                Ok(e) => self.writer.begin(slice, &e),
                Err(e) => self.writer.failed(e),
            }
            self.held.release(held.first);
        }
        if slice.kind == SliceKind::Scope {
            self.open.push(held.end);
        }
    }

    fn leave(&mut self, slice: &Slice) {
        if slice.kind != SliceKind::Scope {
            return;
        }
        let end = self.open.pop().unwrap_or(NONE);
        if end == NONE {
            self.writer.end(slice, None);
            return;
        }
        match self.held.get(end, self.tables) {
            Ok(e) => self.writer.end(slice, Some(&e)),
            Err(e) => {
                self.writer.failed(e);
                self.writer.end(slice, None);
            }
        }
        self.held.release(end);
    }

    fn problem(&mut self, _problem: Problem) {}
}

impl Ordered {
    /// Holds at most `limit` slices per thread before writing the oldest early.
    pub fn new(limit: usize) -> Ordered {
        Ordered {
            nesting: Nesting::new(limit),
            held: HeldEvents::default(),
            open: Vec::new(),
            unmatched_ends: 0,
        }
    }

    /// Takes `event` of `chunk`, a thread slice ([`is_thread_slice`]); what it completes goes to
    /// `writer`. Returns false, taking nothing, for an event of another phase. An end with no
    /// begin open on its thread closes nothing: it is dropped, as a client drops it, and counted
    /// ([`Ordered::unmatched_ends`]).
    pub fn push(&mut self, chunk: &Chunk<'_>, event: &Event<'_>, writer: &mut impl SliceWriter) -> bool {
        let phase = event.callsite.phase;
        if !is_thread_slice(phase) {
            return false;
        }
        let (tid, ts) = (event.tid, writer.time(event.ts));
        let end = match event.duration {
            Some(d) if phase.has_duration() => writer.time(event.ts.saturating_add(d)).max(ts),
            _ => ts,
        };
        let mut walk = Walk { held: &mut self.held, open: &mut self.open, tables: chunk.tables(), writer };
        match phase {
            Phase::Begin => {
                let first = walk.held.hold(chunk, event);
                self.nesting.begin_with(tid, 0, ts, Held { first, end: NONE });
            }
            Phase::End => {
                if !self.nesting.has_open(tid) {
                    self.unmatched_ends += 1;
                    return true;
                }
                let end = walk.held.hold(chunk, event);
                self.nesting.end_with(tid, 0, ts, &mut walk, |h| h.end = end);
            }
            Phase::Complete | Phase::LockWait | Phase::LockHeld => {
                let first = walk.held.hold(chunk, event);
                self.nesting.complete_with(tid, 0, ts, end - ts, Held { first, end: NONE }, &mut walk);
            }
            _ => {
                let first = walk.held.hold(chunk, event);
                self.nesting.mark_with(tid, 0, ts, Held { first, end: NONE }, &mut walk);
            }
        }
        if walk.held.len() > MAX_HELD {
            self.nesting.shed_all(&mut walk);
        }
        true
    }

    /// Slices held now, all threads together (at most [`MAX_HELD`] between two calls).
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Writes every slice still held (a begin never ended gets no end), against the tables
    /// `tables` (the reader's, at the end of the file).
    pub fn finish(&mut self, tables: TableSet<'_>, writer: &mut impl SliceWriter) {
        let mut walk = Walk { held: &mut self.held, open: &mut self.open, tables, writer };
        self.nesting.finish(&mut walk);
    }

    /// Slices written before the end of the file because their thread held the most it may.
    pub fn written_early(&self) -> u64 {
        self.nesting.resolved_early()
    }

    /// Ends dropped because no begin was open on their thread.
    pub fn unmatched_ends(&self) -> u64 {
        self.unmatched_ends
    }

    /// Bytes of the events held now.
    pub fn held_bytes(&self) -> usize {
        self.held.bytes()
    }
}

#[cfg(test)]
#[path = "ordered_tests.rs"]
mod tests;

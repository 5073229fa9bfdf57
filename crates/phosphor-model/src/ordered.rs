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
//! [`Ordered`] keeps each thread's slices aside until [`Nesting`] knows their tree, then hands
//! them to the writer as a walk in time order ([`SliceWriter`]): a slice's
//! begin before the slices nested in it, its end after them, nested on the times the writer
//! writes ([`SliceWriter::time`]). The tree is the one `phosphor stats` builds from the same
//! events on the same times, so what the client rebuilds is what the statistics count.
//!
//! A held event is kept as what the writer encoded for it when it was read
//! ([`SliceWriter::encode`]: the part of its output that does not depend on where it lands, a few
//! bytes), so it is neither copied as records nor decoded twice; an event the writer does not
//! encode (its output would be long: a long string) is kept as its records ([`HeldEvents`]) and
//! decoded again when it is written.
//!
//! Memory is what [`Nesting`] keeps, [`WRITER_PENDING_LIMIT`] slices per thread and [`MAX_HELD`]
//! in all, past which the oldest are written early (counted in [`Ordered::written_early`]), plus
//! what is held of those slices' events.
//! Written early, a slice still nests as the statistics say unless a slice that encloses it, recorded
//! later, begins in the very nanosecond it does: the client orders the rest by time.

use phosphor_format::file::{Chunk, Error, Event, HeldEvents, TableSet};
use phosphor_format::Phase;

use crate::nesting::{Nesting, Problem, Sink, Slice, SliceKind};

#[path = "ordered_store.rs"]
mod store;
use store::Store;

/// The slices a thread holds by default before the oldest are written early: fewer than the
/// statistics keep ([`DEFAULT_PENDING_LIMIT`](crate::nesting::DEFAULT_PENDING_LIMIT)), since a
/// slice written early only matters at a tie, and a smaller working set is a faster one (the
/// demo's 11.6 M events: 5.6 s of CPU and 38 MB at this limit, 7.8 s and 117 MB at 65,536).
pub const WRITER_PENDING_LIMIT: usize = 1 << 12;

/// The most slices all threads hold pending together (finished, waiting for a parent; begins
/// still open are held too, but not counted: nothing can write them yet): past it every
/// thread's are written early. A file of a million threads of one slice each would otherwise
/// hold them all to its end.
pub const MAX_HELD: usize = 1 << 16;

/// What a thread slice is kept as: its events' slots (`NONE`: none), in the [`Store`] of what
/// the writer encoded, or with [`RAW`] set, in the [`HeldEvents`] of records kept as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    /// The begin, complete or lock event, or the mark.
    first: u32,
    /// A begin's end event.
    end: u32,
}

const NONE: u32 = u32::MAX;
/// The bit of a slot number that says its event's records were kept (the writer did not encode
/// it); slot numbers stay below it.
const RAW: u32 = 1 << 31;

impl Default for Held {
    fn default() -> Held {
        Held { first: NONE, end: NONE }
    }
}

/// A held event, as the walk hands it back to the writer.
#[derive(Clone, Copy, Debug)]
pub enum HeldEvent<'a> {
    /// What [`SliceWriter::encode`] wrote for it.
    Encoded(&'a [u8]),
    /// The event decoded again from its records: the writer did not encode it.
    Event(&'a Event<'a>),
}

/// Where a thread's slices go, in time order (see the [module docs](self)).
pub trait SliceWriter {
    /// The timestamp the writer writes for raw clock value `ticks`. Slices are nested on these
    /// times, not on the ticks: two ticks written as one time are a tie for the client, and
    /// [`Slice::start`] and [`Slice::dur`] are in these units. It must not decrease as `ticks`
    /// grows.
    fn time(&self, ticks: u64) -> u64;
    /// Appends to `out` what writing `event` later takes, as the event is taken (its chunk is
    /// at hand, and the writer may resolve names now); the walk hands it back
    /// ([`HeldEvent::Encoded`]). Returning false, with `out` as it was or longer (it is cut
    /// back), keeps the event's records instead, decoded again when it is written
    /// ([`HeldEvent::Event`]): for an event whose encoding would be long (a long string), so that
    /// what is held stays about as small as the file's records.
    fn encode(&mut self, event: &Event<'_>, out: &mut Vec<u8>) -> bool;
    /// Slice `slice` begins: `event` is its begin, complete or lock event, or the instant or log
    /// it is (a mark, which gets no [`SliceWriter::end`]). Every slice nested in it comes after.
    fn begin(&mut self, slice: &Slice, event: HeldEvent<'_>);
    /// Slice `slice` ends, after every slice nested in it, at `slice.start + slice.dur` (in the
    /// writer's [`SliceWriter::time`]); `end` is the end event of a begin/end pair. Not called for marks, or for a
    /// begin never ended (`slice.kind` [`SliceKind::Unclosed`]).
    fn end(&mut self, slice: &Slice, end: Option<HeldEvent<'_>>);
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
    /// Held events, as the writer encoded them.
    store: Store,
    /// Held events the writer did not encode, as their records.
    raw: HeldEvents,
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

/// The held events.
struct Events<'a> {
    store: &'a mut Store,
    raw: &'a mut HeldEvents,
}

impl Events<'_> {
    /// Holds `event` of `chunk`: encoded by `writer`, or as its records.
    #[inline]
    fn hold(&mut self, chunk: &Chunk<'_>, event: &Event<'_>, writer: &mut impl SliceWriter) -> u32 {
        match self.store.hold(RAW, |out| writer.encode(event, out)) {
            Some(n) => n,
            None => {
                let n = self.raw.hold(chunk, event);
                assert!(n < RAW, "more than 2^31 events held");
                n | RAW
            }
        }
    }

    /// Hands held event `n` to `f` (or its error to the writer), and frees it.
    #[inline]
    fn take<W: SliceWriter>(
        &mut self,
        n: u32,
        tables: TableSet<'_>,
        writer: &mut W,
        f: impl FnOnce(&mut W, Option<HeldEvent<'_>>),
    ) {
        if n & RAW == 0 {
            f(writer, Some(HeldEvent::Encoded(self.store.get(n))));
            self.store.release(n);
            return;
        }
        let n = n & !RAW;
        match self.raw.get(n, tables) {
            Ok(e) => f(writer, Some(HeldEvent::Event(&e))),
            Err(e) => {
                writer.failed(e);
                f(writer, None);
            }
        }
        self.raw.release(n);
    }
}

/// The [`Sink`] of a walk: hands each held event back to the writer.
struct Walk<'a, 't, W> {
    events: Events<'a>,
    open: &'a mut Vec<u32>,
    tables: TableSet<'t>,
    writer: &'a mut W,
}

impl<W: SliceWriter> Sink<Held> for Walk<'_, '_, W> {
    #[inline]
    fn enter(&mut self, slice: &Slice, held: Held) {
        if held.first != NONE {
            self.events.take(held.first, self.tables, self.writer, |w, e| {
                if let Some(e) = e {
                    w.begin(slice, e);
                }
            });
        }
        if slice.kind == SliceKind::Scope {
            self.open.push(held.end);
        }
    }

    #[inline]
    fn leave(&mut self, slice: &Slice) {
        if slice.kind != SliceKind::Scope {
            return;
        }
        let end = self.open.pop().unwrap_or(NONE);
        if end == NONE {
            self.writer.end(slice, None);
            return;
        }
        self.events.take(end, self.tables, self.writer, |w, e| w.end(slice, e));
    }

    fn problem(&mut self, _problem: Problem) {}
}

impl Ordered {
    /// Holds at most `limit` slices per thread before writing the oldest early.
    pub fn new(limit: usize) -> Ordered {
        Ordered {
            nesting: Nesting::new(limit),
            store: Store::default(),
            raw: HeldEvents::default(),
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
        let ts = writer.time(event.ts);
        let end = match event.duration {
            Some(d) if phase.has_duration() => writer.time(event.ts.saturating_add(d)),
            _ => ts,
        };
        self.push_at(chunk, event, ts, end, writer)
    }

    /// [`Ordered::push`] for a writer that has converted the event's times already: `ts` is
    /// [`SliceWriter::time`] of its timestamp, `end` of its timestamp plus its duration (for a
    /// complete or lock event; else ignored). Each conversion is a floating-point multiply and
    /// a rounding on a clock that does not count nanoseconds: a writer that needs the times
    /// itself spares doing it twice.
    pub fn push_at(
        &mut self,
        chunk: &Chunk<'_>,
        event: &Event<'_>,
        ts: u64,
        end: u64,
        writer: &mut impl SliceWriter,
    ) -> bool {
        let phase = event.callsite.phase;
        if !is_thread_slice(phase) {
            return false;
        }
        let tid = event.tid;
        let end = if phase.has_duration() { end.max(ts) } else { ts };
        let events = Events { store: &mut self.store, raw: &mut self.raw };
        let mut walk = Walk { events, open: &mut self.open, tables: chunk.tables(), writer };
        match phase {
            Phase::Begin => {
                let first = walk.events.hold(chunk, event, &mut *walk.writer);
                self.nesting.begin_with(tid, 0, ts, Held { first, end: NONE });
            }
            Phase::End => {
                if !self.nesting.has_open(tid) {
                    self.unmatched_ends += 1;
                    return true;
                }
                let end = walk.events.hold(chunk, event, &mut *walk.writer);
                self.nesting.end_with(tid, 0, ts, &mut walk, |h| h.end = end);
            }
            Phase::Complete | Phase::LockWait | Phase::LockHeld => {
                let first = walk.events.hold(chunk, event, &mut *walk.writer);
                self.nesting.complete_with(tid, 0, ts, end - ts, Held { first, end: NONE }, &mut walk);
            }
            _ => {
                let first = walk.events.hold(chunk, event, &mut *walk.writer);
                self.nesting.mark_with(tid, 0, ts, Held { first, end: NONE }, &mut walk);
            }
        }
        // Pending slices, not every event held: a begin still open cannot be written yet, and
        // shedding on its account would walk every thread's open begins at each event (a file
        // of a hundred thousand nested begins: 35 s, not 0.05).
        if self.nesting.pending() > MAX_HELD {
            self.nesting.shed_all(&mut walk);
        }
        true
    }

    /// Slices held now, all threads together: at most [`MAX_HELD`] pending between two calls, plus
    /// the begins still open and what they enclose.
    pub fn held(&self) -> usize {
        self.store.len() + self.raw.len()
    }

    /// Writes every slice still held (a begin never ended gets no end), against the tables
    /// `tables` (the reader's, at the end of the file).
    pub fn finish(&mut self, tables: TableSet<'_>, writer: &mut impl SliceWriter) {
        let events = Events { store: &mut self.store, raw: &mut self.raw };
        let mut walk = Walk { events, open: &mut self.open, tables, writer };
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

    /// Bytes of the events held now, spare room included.
    pub fn held_bytes(&self) -> usize {
        self.store.bytes() + self.raw.bytes()
    }
}

#[cfg(test)]
#[path = "ordered_tests.rs"]
mod tests;

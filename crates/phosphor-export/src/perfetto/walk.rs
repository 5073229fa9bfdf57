//! The thread slices, written as [`Ordered`](phosphor_model::ordered::Ordered) walks each
//! thread's tree: a slice's `TYPE_SLICE_BEGIN` (or a mark's `TYPE_INSTANT`) before the slices
//! nested in it, its `TYPE_SLICE_END` after them. Trace processor sorts each track's events by
//! time, ties in stream order, and an end closes the innermost open slice: so at equal
//! timestamps begins must come outer-first and ends inner-first, which the walk gives, and the
//! slices it builds are those `phosphor stats` counts.

use std::io;

use phosphor_format::file::Event;
use phosphor_format::Phase;
use phosphor_model::nesting::Slice;
use phosphor_model::ordered::SliceWriter;

use super::packets;
use super::proto::*;
use super::{flow_id, Exporter, INTERNED_DEBUG_ANNOTATION_NAMES};
use phosphor_format::file::Value;
use std::io::Write;

impl<W: Write> SliceWriter for Exporter<W> {
    /// Absolute `CLOCK_MONOTONIC` nanoseconds, as written.
    fn time(&self, ticks: u64) -> u64 {
        self.ns(ticks)
    }

    fn begin(&mut self, _slice: &Slice, e: &Event<'_>) {
        if self.walk_error.is_none() {
            self.walk_error = self.write_begin(e).err();
        }
    }

    fn end(&mut self, slice: &Slice, end: Option<&Event<'_>>) {
        if self.walk_error.is_none() {
            self.walk_error = self.write_end(slice, end).err();
        }
    }
}

impl<W: Write> Exporter<W> {
    /// A slice's begin, complete or lock event (as a `TYPE_SLICE_BEGIN`), or a mark's instant.
    fn write_begin(&mut self, e: &Event<'_>) -> io::Result<()> {
        let cs = &e.callsite;
        let ts = self.ns(e.ts);
        let thread = self.thread_track_by_id(e.tid, ts)?;
        self.clocks.thread(thread);
        let mut r = self.callsites.get(cs.id);
        let before = r.counters;
        let ty = match cs.phase {
            Phase::Instant | Phase::Log => TYPE_INSTANT,
            _ => TYPE_SLICE_BEGIN,
        };
        if cs.flow && cs.phase.has_duration() {
            if let Some((_, Value::U64(id))) = e.args[0] {
                self.flow = Some(flow_id(cs, id));
            }
        }
        self.slice(ty, ts, thread, &mut r, e, None)?;
        if r.counters != before {
            self.callsites.set(cs.id, r.counters);
        }
        Ok(())
    }

    /// A slice's `TYPE_SLICE_END`, at its end (never before its begin): with the end event's
    /// arguments for a begin/end pair, with its allocation counts for a complete event that has
    /// them.
    fn write_end(&mut self, slice: &Slice, end: Option<&Event<'_>>) -> io::Result<()> {
        let ts = slice.start.saturating_add(slice.dur);
        let thread = self.thread_track_by_id(slice.tid, ts)?;
        self.clocks.thread(thread);
        if let Some(e) = end {
            let mut r = self.callsites.get(e.callsite.id);
            let before = r.counters;
            self.slice(TYPE_SLICE_END, ts, thread, &mut r, e, None)?;
            if r.counters != before {
                self.callsites.set(e.callsite.id, r.counters);
            }
            return Ok(());
        }
        let counts =
            if self.allocs.is_empty() { None } else { self.allocs.remove(&(slice.tid, slice.start, ts)) };
        let names = counts.map(|c| {
            c.map(|a| a.map(|(n, v)| (self.interner.intern(INTERNED_DEBUG_ANNOTATION_NAMES, n), v)))
        });
        self.start_packet(Some(ts), 0);
        let p = &mut self.buf;
        let te = p.begin(PACKET_TRACK_EVENT);
        p.uint(EVENT_TYPE, TYPE_SLICE_END);
        self.clocks.event_track(p, thread);
        for (iid, v) in names.into_iter().flatten().flatten() {
            packets::annotation(p, iid, Value::U64(v));
        }
        p.end(te);
        self.finish_packet(true)?;
        self.saw(ts);
        Ok(())
    }
}

//! The thread slices, written as [`Ordered`](phosphor_model::ordered::Ordered) walks each
//! thread's tree: a slice's `TYPE_SLICE_BEGIN` (or a mark's `TYPE_INSTANT`) before the slices
//! nested in it, its `TYPE_SLICE_END` after them. Trace processor sorts each track's events by
//! time, ties in stream order, and an end closes the innermost open slice: so at equal
//! timestamps begins must come outer-first and ends inner-first, which the walk gives, and the
//! slices it builds are those `phosphor stats` counts.
//!
//! A slice is held as the part of its `TrackEvent` that does not depend on where it lands in the
//! stream, encoded as the event is read ([`SliceWriter::encode`]): its category and name iids (or
//! its name), its arguments and its flow. When the walk writes it, the packet around it gets its
//! timestamp (a delta on the thread's clock, known only then), its type and, if the defaults do
//! not say it, its track. Names are interned as the event is read, so a name's `InternedData`
//! entry goes into the next event packet written, which is the slice's own or an earlier one: an
//! iid is always defined before it is used. An event whose fields would be long (a long string
//! argument or name) is held as its records instead ([`MAX_ENCODED`]), and encoded when written.

use std::io;

use phosphor_format::file::{Event, Value};
use phosphor_format::Phase;
use phosphor_model::nesting::{Slice, SliceKind};
use phosphor_model::ordered::{HeldEvent, SliceWriter};

use super::intern::Resolved;
use super::packets::{self, KEEP_PENDING};
use super::pb::{self, Enc};
use super::proto::*;
use super::tracks::UUID_THREAD;
use super::{flow_id, Exporter, INTERNED_DEBUG_ANNOTATION_NAMES};
use std::io::Write;

/// The most bytes of a held slice's encoded fields: an event whose fields take more (a string
/// argument or a log's message of kilobytes) is held as its records, which the file had to store
/// anyway, so that what the writer holds stays about the size of what it read.
pub(super) const MAX_ENCODED: usize = 512;

impl<W: Write> SliceWriter for Exporter<W> {
    /// Absolute `CLOCK_MONOTONIC` nanoseconds, as written.
    fn time(&self, ticks: u64) -> u64 {
        self.ns(ticks)
    }

    fn encode(&mut self, e: &Event<'_>, out: &mut Vec<u8>) -> bool {
        if long_strings(e) {
            return false;
        }
        let mut p = std::mem::take(&mut self.held);
        p.clear();
        self.fields(&mut p, e);
        let fits = p.len() <= MAX_ENCODED;
        if fits {
            out.extend_from_slice(p.as_slice());
        }
        p.clear_shrinking(KEEP_PENDING);
        self.held = p;
        fits
    }

    fn begin(&mut self, slice: &Slice, e: HeldEvent<'_>) {
        if self.walk_error.is_none() {
            let ty = if slice.kind == SliceKind::Mark { TYPE_INSTANT } else { TYPE_SLICE_BEGIN };
            self.walk_error = self.write_held(ty, slice.tid, slice.start, e).err();
        }
    }

    fn end(&mut self, slice: &Slice, end: Option<HeldEvent<'_>>) {
        if self.walk_error.is_none() {
            let ts = slice.start.saturating_add(slice.dur);
            self.walk_error = match end {
                Some(e) => self.write_held(TYPE_SLICE_END, slice.tid, ts, e),
                None => self.write_end(slice, ts),
            }
            .err();
        }
    }
}

/// Whether a string of `e` (an argument, a log's parameter or format, a `dyn` name) is too long
/// for its fields to be held encoded: checked before encoding, so that a long string is not
/// copied once more for nothing.
fn long_strings(e: &Event<'_>) -> bool {
    let long = |v: &Value<'_>| matches!(v, Value::Str(s) if s.len() > MAX_ENCODED);
    e.args.iter().flatten().any(|(_, v)| long(v))
        || (e.callsite.level.is_some()
            && (e.callsite.name.len() > MAX_ENCODED || e.params.iter().any(|v| long(&v))))
}

impl<W: Write> Exporter<W> {
    /// The fields of `e`'s `TrackEvent` after its type and track, into `p`: for an end, its
    /// arguments; otherwise its category, its name, its arguments and its flow.
    fn fields(&mut self, p: &mut Enc, e: &Event<'_>) {
        let cs = &e.callsite;
        // Thread slices use no counter track: only the iids, found again by string index.
        let mut r = Resolved::default();
        if cs.phase == Phase::End {
            packets::arguments(p, &mut self.interner, &mut self.truncated_iid, &mut r, e, 0);
            return;
        }
        let first = if cs.level.is_some() || cs.dynamic_name {
            self.prepare_named(&mut r, e);
            packets::named_fields(p, &self.message, self.level_iid, &self.param_iids, &r, e)
        } else {
            self.resolve_name(&mut r, cs);
            p.uint(EVENT_CATEGORY_IIDS, r.category);
            p.uint(EVENT_NAME_IID, r.name);
            0
        };
        packets::arguments(p, &mut self.interner, &mut self.truncated_iid, &mut r, e, first);
        if cs.flow && cs.phase.has_duration() {
            if let Some((_, Value::U64(id))) = e.args[0] {
                p.tag(EVENT_FLOW_IDS, pb::I64);
                p.put(&flow_id(cs, id).to_le_bytes());
            }
        }
    }

    /// The track of thread `tid`, which has one: its events were read before the walk writes
    /// them, and reading one describes its thread.
    #[inline]
    fn thread_uuid(&self, tid: u32) -> u64 {
        debug_assert!(self.threads.contains_key(&tid), "thread {tid} has no track");
        self.uuid_base | u64::from(tid) << 4 | UUID_THREAD
    }

    /// A `TrackEvent` of type `ty` at `ts` on thread `tid`'s track, with the fields held for it.
    fn write_held(&mut self, ty: u64, tid: u32, ts: u64, e: HeldEvent<'_>) -> io::Result<()> {
        // An event held as its records is encoded now, into the scratch put back after.
        let mut scratch = None;
        let fields = match e {
            HeldEvent::Encoded(bytes) => bytes,
            HeldEvent::Event(e) => {
                let mut p = std::mem::take(&mut self.held);
                p.clear();
                self.fields(&mut p, e);
                scratch.insert(p).as_slice()
            }
        };
        let thread = self.thread_uuid(tid);
        self.clocks.thread(thread);
        self.start_packet(Some(ts), 0);
        let p = &mut self.buf;
        let te = p.begin(PACKET_TRACK_EVENT);
        p.uint(EVENT_TYPE, ty);
        self.clocks.event_track(p, thread);
        p.put_short(fields);
        p.end(te);
        if let Some(mut p) = scratch {
            p.clear_shrinking(KEEP_PENDING);
            self.held = p;
        }
        self.finish_packet(true)?;
        self.saw(ts);
        Ok(())
    }

    /// The `TYPE_SLICE_END` of a slice with no end event, at `ts` (never before its begin): with
    /// its allocation counts for a complete event that has them.
    fn write_end(&mut self, slice: &Slice, ts: u64) -> io::Result<()> {
        let thread = self.thread_uuid(slice.tid);
        self.clocks.thread(thread);
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

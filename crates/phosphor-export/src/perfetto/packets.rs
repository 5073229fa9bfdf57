//! The packet writer: the sequence's first packets (clock snapshot, process track), a
//! `TrackEvent` packet per slice or instant with its interned names and debug annotations, and
//! the packet framing and flushing every other part of the exporter writes through.

use std::io::{self, Write};

use phosphor_format::file::{Callsite, Event, Value};

use super::clock::{CLOCKS, FIRST_CLOCK};
use super::intern::{Interner, Resolved, Suffix};
use super::pb::{self, Enc};
use super::proto::*;
use super::Exporter;

/// The packet sequence of a single file (the first of a merged export; the others follow it).
pub(super) const SEQUENCE_ID: u64 = 1;

/// `trusted_packet_sequence_id = SEQUENCE_ID`, encoded: the field key and the value fit in one
/// byte each (checked at compile time).
pub(super) const EVENT_PACKET_PREFIX: [u8; 2] = {
    const fn byte(v: u64) -> u8 {
        assert!(v < 0x80, "a one-byte varint");
        v as u8
    }
    [byte((PACKET_TRUSTED_SEQUENCE_ID as u64) << 3), byte(SEQUENCE_ID)]
};

/// Encoded packets are written out once they fill this many bytes.
pub(super) const FLUSH_AT: usize = 1 << 16;
/// The packet buffer and the pending interned entries give their room back once written if a long
/// name made them grow past these.
pub(super) const KEEP_BUF: usize = 1 << 20;
pub(super) const KEEP_PENDING: usize = 1 << 16;
/// Interned entries past this many bytes are written out beside their packet, not copied into it.
pub(super) const STREAM_INTERNED_AT: usize = 1 << 20;

impl<W: Write> Exporter<W> {
    /// The clock snapshot (which also starts the sequence and sets its defaults) and the process
    /// track. Every sequence's snapshot defines its incremental clock (`perfetto/clock.rs`) at the
    /// file's origin; only the first also gives the wall clock and the primary trace clock: one
    /// holds for the whole trace, since a merged export's later files have their times on the
    /// first file's `CLOCK_MONOTONIC`.
    pub(super) fn preamble(&mut self, process_name: &str) -> io::Result<()> {
        self.start_packet(None, SEQ_INCREMENTAL_STATE_CLEARED);
        let p = &mut self.buf;
        self.clocks.write_defaults(p);
        let snapshot = p.begin(PACKET_CLOCK_SNAPSHOT);
        let first = self.sequence == SEQUENCE_ID;
        let builtin = [
            (BUILTIN_CLOCK_MONOTONIC, self.snapshot_monotonic_ns),
            (BUILTIN_CLOCK_REALTIME, self.clock.origin_wall_ns),
        ];
        for (id, ts) in builtin.into_iter().take(if first { 2 } else { 1 }) {
            let clock = p.begin(SNAPSHOT_CLOCKS);
            p.uint(CLOCK_ID, id);
            p.uint(CLOCK_TIMESTAMP, ts);
            p.end(clock);
        }
        for id in FIRST_CLOCK..FIRST_CLOCK + CLOCKS as u64 {
            let clock = p.begin(SNAPSHOT_CLOCKS);
            p.uint(CLOCK_ID, id);
            p.uint(CLOCK_TIMESTAMP, self.snapshot_monotonic_ns);
            p.boolean(CLOCK_IS_INCREMENTAL, true);
            p.end(clock);
        }
        if first {
            p.uint(SNAPSHOT_PRIMARY_TRACE_CLOCK, BUILTIN_CLOCK_MONOTONIC);
        }
        p.end(snapshot);
        self.finish_packet(false)?;

        self.start_packet(None, 0);
        let p = &mut self.buf;
        let track = p.begin(PACKET_TRACK_DESCRIPTOR);
        p.uint(TRACK_UUID, self.process_uuid);
        let process = p.begin(TRACK_PROCESS);
        p.int(PROCESS_PID, i64::from(self.pid as i32));
        if !process_name.is_empty() {
            p.bytes(PROCESS_NAME, process_name.as_bytes());
        }
        p.end(process);
        p.end(track);
        self.finish_packet(false)
    }

    /// A `TrackEvent` with the callsite's name and category (but for an end), the event's
    /// arguments, and `async_id` if given.
    pub(super) fn slice(
        &mut self,
        ty: u64,
        ts: u64,
        track: u64,
        r: &mut Resolved,
        e: &Event<'_>,
        async_id: Option<u64>,
    ) -> io::Result<()> {
        if ty != TYPE_SLICE_END && (e.callsite.level.is_some() || e.callsite.dynamic_name) {
            return self.slice_named(ty, ts, track, r, e, async_id);
        }
        if ty != TYPE_SLICE_END {
            self.resolve_name(r, &e.callsite);
        }
        self.start_packet(Some(ts), 0);
        let p = &mut self.buf;
        let te = p.begin(PACKET_TRACK_EVENT);
        p.uint(EVENT_TYPE, ty);
        self.clocks.event_track(p, track);
        if ty != TYPE_SLICE_END {
            p.uint(EVENT_CATEGORY_IIDS, r.category);
            p.uint(EVENT_NAME_IID, r.name);
        }
        self.event_tail(te, ts, r, e, async_id, 0)
    }

    /// [`slice`](Self::slice) for a log (named by its formatted message, with its level and
    /// parameters) or an event named at run time (argument 0): names written as strings, not
    /// interned, since they differ per event. Out of line, to keep the common path lean.
    #[inline(never)]
    pub(super) fn slice_named(
        &mut self,
        ty: u64,
        ts: u64,
        track: u64,
        r: &mut Resolved,
        e: &Event<'_>,
        async_id: Option<u64>,
    ) -> io::Result<()> {
        debug_assert!(ty != TYPE_SLICE_END, "an end has no name");
        self.prepare_named(r, e);
        self.start_packet(Some(ts), 0);
        let p = &mut self.buf;
        let te = p.begin(PACKET_TRACK_EVENT);
        p.uint(EVENT_TYPE, ty);
        self.clocks.event_track(p, track);
        let first = named_fields(p, &self.message, self.level_iid, &self.param_iids, r, e);
        self.event_tail(te, ts, r, e, async_id, first)
    }

    /// Interns what the name fields of a log or an event named at run time take, and formats
    /// its name into `self.message` (for [`named_fields`]).
    pub(super) fn prepare_named(&mut self, r: &mut Resolved, e: &Event<'_>) {
        let cs = &e.callsite;
        // A log's name is its formatted message, and a `dyn` name is argument 0: both differ per
        // event, so they are written as strings, not interned. The callsite's own name (a `dyn`
        // callsite's is the source text of its expression) is not interned: no event uses it.
        self.resolve_category(r, cs);
        crate::logs::write_event_name(&mut self.message, e);
        self.message.push_str(Suffix::of(cs.phase).as_str());
        if cs.level.is_some() {
            if self.level_iid == 0 {
                self.level_iid = self.interner.intern(INTERNED_DEBUG_ANNOTATION_NAMES, "level");
            }
            for i in 0..e.params.len().min(self.param_iids.len()) {
                if self.param_iids[i] == 0 {
                    self.param_iids[i] =
                        self.interner.intern(INTERNED_DEBUG_ANNOTATION_NAMES, &format!("p{i}"));
                }
            }
        }
    }

    /// The end of a `TrackEvent` that [`slice`](Self::slice) or
    /// [`slice_named`](Self::slice_named) began as `te`: its arguments from `first_arg` on, the
    /// truncated flag and the async id as debug annotations; then the packet is finished.
    #[inline(always)]
    pub(super) fn event_tail(
        &mut self,
        te: usize,
        ts: u64,
        r: &mut Resolved,
        e: &Event<'_>,
        async_id: Option<u64>,
        first_arg: usize,
    ) -> io::Result<()> {
        let p = &mut self.buf;
        arguments(p, &mut self.interner, &mut self.truncated_iid, r, e, first_arg);
        if let Some(flow) = self.flow.take() {
            p.tag(EVENT_FLOW_IDS, pb::I64);
            p.put(&flow.to_le_bytes());
        }
        if let Some(flow) = self.terminating_flow.take() {
            p.tag(EVENT_TERMINATING_FLOW_IDS, pb::I64);
            p.put(&flow.to_le_bytes());
        }
        if let Some(id) = async_id {
            if self.async_id_iid == 0 {
                self.async_id_iid = self.interner.intern(INTERNED_DEBUG_ANNOTATION_NAMES, "async_id");
            }
            annotation(p, self.async_id_iid, Value::U64(id));
        }
        p.end(te);
        self.finish_packet(true)?;
        self.saw(ts);
        Ok(())
    }

    /// Interns the callsite's name (with the lock suffix) and category.
    #[inline]
    pub(super) fn resolve_name(&mut self, r: &mut Resolved, cs: &Callsite<'_>) {
        if r.name != 0 {
            return;
        }
        r.name = self.interner.intern_str(INTERNED_EVENT_NAMES, cs.name, Suffix::of(cs.phase));
        self.resolve_category(r, cs);
    }

    /// Interns the callsite's category.
    #[inline]
    pub(super) fn resolve_category(&mut self, r: &mut Resolved, cs: &Callsite<'_>) {
        if r.category == 0 {
            r.category = self.interner.intern_str(INTERNED_EVENT_CATEGORIES, cs.category, Suffix::None);
        }
    }

    /// Starts a packet (a `Trace.packet` field) on the sequence: new defaults if the thread changed,
    /// the timestamp (a delta on an incremental clock, `perfetto/clock.rs`) and the flags. A `TrackEvent` packet sets none:
    /// `SEQ_NEEDS_INCREMENTAL_STATE` only tells trace processor to skip the packet if the sequence
    /// lost its state, and a file's sequence never does.
    #[inline]
    pub(super) fn start_packet(&mut self, ts: Option<u64>, flags: u64) {
        self.packet = self.buf.begin(TRACE_PACKET);
        self.clocks.start(&mut self.buf, ts);
        if flags == 0 && self.sequence == SEQUENCE_ID {
            self.buf.put(&EVENT_PACKET_PREFIX);
        } else {
            self.buf.uint(PACKET_TRUSTED_SEQUENCE_ID, self.sequence);
            if flags != 0 {
                self.buf.uint(PACKET_SEQUENCE_FLAGS, flags);
            }
        }
    }

    /// Adds the pending interned entries (if `interned`: only event packets use them), closes the
    /// packet, and writes out the packets encoded so far once they are many.
    #[inline]
    pub(super) fn finish_packet(&mut self, interned: bool) -> io::Result<()> {
        if interned && self.interner.pending.len() > STREAM_INTERNED_AT {
            return self.finish_packet_streamed();
        }
        if interned && !self.interner.pending.is_empty() {
            self.buf.bytes(PACKET_INTERNED_DATA, self.interner.pending.as_slice());
            self.interner.pending.clear_shrinking(KEEP_PENDING);
        }
        self.buf.end(self.packet);
        if self.buf.len() >= FLUSH_AT {
            self.out.write_all(self.buf.as_slice())?;
            self.buf.clear_shrinking(KEEP_BUF);
        }
        Ok(())
    }
}

/// The category, name (`message`, formatted by [`Exporter::prepare_named`]), level and
/// parameters of a log or an event named at run time, as fields of a `TrackEvent` in `p`; returns
/// the first argument still to write (argument 0 of a `dyn` event is its name).
pub(super) fn named_fields(
    p: &mut Enc,
    message: &str,
    level_iid: u64,
    param_iids: &[u64],
    r: &Resolved,
    e: &Event<'_>,
) -> usize {
    let cs = &e.callsite;
    p.uint(EVENT_CATEGORY_IIDS, r.category);
    p.bytes(EVENT_NAME, message.as_bytes());
    if let Some(level) = cs.level {
        annotation(p, level_iid, Value::Str(level.as_str()));
        for (i, v) in e.params.iter().enumerate().take(param_iids.len()) {
            annotation(p, param_iids[i], v);
        }
    }
    if crate::logs::shows_arg(e, 0) {
        0
    } else {
        1
    }
}

/// An event's arguments from `first_arg` on, and the truncated flag, as debug annotations of a
/// `TrackEvent` in `p`: their names interned by `interner` (the truncated flag's iid kept in
/// `truncated_iid`, 0 until first used).
#[inline(always)]
pub(super) fn arguments(
    p: &mut Enc,
    interner: &mut Interner,
    truncated_iid: &mut u64,
    r: &mut Resolved,
    e: &Event<'_>,
    first_arg: usize,
) {
    for (i, arg) in e.args.iter().enumerate().skip(first_arg) {
        let Some((name, value)) = *arg else { continue };
        if r.args[i] == 0 {
            r.args[i] = if name.is_empty() {
                interner.intern(INTERNED_DEBUG_ANNOTATION_NAMES, if i == 0 { "arg0" } else { "arg1" })
            } else {
                let name = e.callsite.arg_names[i];
                interner.intern_str(INTERNED_DEBUG_ANNOTATION_NAMES, name, Suffix::None)
            };
        }
        annotation(p, r.args[i], value);
    }
    if e.truncated {
        if *truncated_iid == 0 {
            *truncated_iid = interner.intern(INTERNED_DEBUG_ANNOTATION_NAMES, "truncated");
        }
        annotation(p, *truncated_iid, Value::Bool(true));
    }
}

/// A `DebugAnnotation` of `TrackEvent`.
#[inline]
pub(super) fn annotation(p: &mut Enc, name_iid: u64, value: Value<'_>) {
    let a = p.begin(EVENT_DEBUG_ANNOTATIONS);
    p.uint(ANNOTATION_NAME_IID, name_iid);
    match value {
        Value::I64(v) => p.int(ANNOTATION_INT, v),
        Value::U64(v) => p.uint(ANNOTATION_UINT, v),
        Value::F64(v) => p.double(ANNOTATION_DOUBLE, v),
        Value::Bool(v) => p.boolean(ANNOTATION_BOOL, v),
        Value::Str(s) => p.bytes(ANNOTATION_STRING, s.as_bytes()),
        Value::Pointer(v) => p.uint(ANNOTATION_POINTER, v),
    }
    p.end(a);
}

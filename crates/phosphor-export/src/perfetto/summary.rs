//! The closing instant, `trace summary`: what the trailer says was lost, where reading stopped,
//! the chunks lost to sequence gaps, and the async events laid out without the plan.

use std::io::{self, Write};

use phosphor_format::file::{Trailer, Value};

use super::packets::annotation;
use super::proto::*;
use super::Exporter;

impl<W: Write> Exporter<W> {
    /// The closing instant on the process track: drops from the trailer, or where reading stopped,
    /// and the chunks lost to sequence gaps.
    pub(super) fn trace_summary(
        &mut self,
        trailer: Option<&Trailer>,
        stopped_at: Option<u64>,
    ) -> io::Result<()> {
        let ts = self.last_ns.unwrap_or_else(|| self.ns(self.clock.origin_ticks));
        let mut annotations: Vec<(String, Value<'_>)> = Vec::new();
        if let Some(t) = trailer {
            annotations.push(("events_recorded".into(), Value::U64(t.recorded)));
            annotations.push(("events_dropped".into(), Value::U64(t.dropped.total())));
            for (reason, n) in t.dropped.by_reason() {
                if n > 0 {
                    annotations.push((format!("dropped.{reason}"), Value::U64(n)));
                }
            }
            if t.chunks_overwritten > 0 {
                annotations.push(("chunks_overwritten".into(), Value::U64(t.chunks_overwritten)));
            }
            if t.buffer_exhausted {
                annotations.push(("buffer_exhausted".into(), Value::Bool(true)));
            }
        } else {
            annotations.push(("incomplete".into(), Value::Bool(true)));
        }
        // Chunks missing from a writer stream's sequence (a ring buffer overwrote them): the time
        // they covered shows no events, and this says why.
        let lost = self.losses.total();
        if lost > 0 {
            annotations.push(("chunks_lost".into(), Value::U64(lost)));
        }
        // Async events laid out in file order, on lanes of their own, although a plan was given
        // (it overflowed, or the file grew); and slices not remembered open (past the limit).
        if self.unplanned > 0 {
            annotations.push(("async_events_unplanned".into(), Value::U64(self.unplanned)));
        }
        if self.lanes.untracked > 0 {
            annotations.push(("async_slices_untracked".into(), Value::U64(self.lanes.untracked)));
        }
        if self.allocs_unattached > 0 {
            annotations.push(("scope_allocs_unattached".into(), Value::U64(self.allocs_unattached)));
        }
        // Thread slices written before their tree was known (a thread held the most it may):
        // one that encloses them, recorded later, may not nest them at an equal timestamp.
        if self.slices_written_early > 0 {
            annotations.push(("slices_written_early".into(), Value::U64(self.slices_written_early)));
        }
        // Ends with no begin open on their thread: they close nothing, and are not written.
        if self.unmatched_ends > 0 {
            annotations.push(("unmatched_ends".into(), Value::U64(self.unmatched_ends)));
        }
        let warnings: Vec<String> = self.system.symbol_warnings().to_vec();
        for (i, w) in warnings.iter().enumerate() {
            annotations.push((format!("symbols.{i}"), Value::Str(w)));
        }
        if let Some(offset) = stopped_at {
            annotations.push(("read_error_offset".into(), Value::U64(offset)));
        }
        let name = self.interner.intern(INTERNED_EVENT_NAMES, "trace summary");
        let category = self.interner.intern(INTERNED_EVENT_CATEGORIES, "phosphor");
        let iids: Vec<u64> = annotations
            .iter()
            .map(|(n, _)| self.interner.intern(INTERNED_DEBUG_ANNOTATION_NAMES, n))
            .collect();
        self.start_packet(Some(ts), 0);
        let p = &mut self.buf;
        let te = p.begin(PACKET_TRACK_EVENT);
        p.uint(EVENT_TYPE, TYPE_INSTANT);
        p.uint(EVENT_TRACK_UUID, self.process_uuid);
        p.uint(EVENT_CATEGORY_IIDS, category);
        p.uint(EVENT_NAME_IID, name);
        for ((_, value), iid) in annotations.iter().zip(iids) {
            annotation(p, iid, *value);
        }
        p.end(te);
        self.finish_packet(true)
    }
}

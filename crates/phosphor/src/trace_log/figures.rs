//! What a log reports: its statistics, and snapshots of the running trace.

use std::sync::atomic::Ordering;

use super::{Control, TraceLog};
use crate::error::{Error, ErrorKind};
use crate::output::trace::Trace;
use crate::record::buffer::TraceBuffer;
use crate::record::thread;
use crate::registry::callsite;
use crate::stats::{Drops, Stats};

impl crate::record::log_core::DropCounters {
    /// The counters now (no allocation, no lock: the crash dump reads them too).
    pub(crate) fn load(&self) -> Drops {
        // Relaxed: statistics.
        let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        Drops {
            buffer_full: l(&self.buffer_full),
            no_chunk: l(&self.no_chunk),
            contended: l(&self.contended),
            stopping: l(&self.stopping),
            reentrant: l(&self.reentrant),
            thread_exited: l(&self.thread_exited),
            unwound: l(&self.unwound),
            overwritten: 0,
            other: 0,
        }
    }
}

impl TraceLog {
    /// Whether a trace is running and accepting events (false once a Fixed buffer is full).
    pub fn is_enabled(&self) -> bool {
        // Relaxed: a status flag.
        self.enabled.load(Ordering::Relaxed)
    }

    /// Statistics of the running trace, or of the last one. While running, `recorded` lags by the
    /// chunks that threads still hold. After `stop`, drops of events that raced with it are added
    /// here as they are counted (and reported again in the next trace's figures).
    pub fn stats(&self) -> Stats {
        let c = self.control();
        self.stats_locked(&c)
    }

    pub(super) fn stats_locked(&self, c: &Control) -> Stats {
        let late = self.load_drops().since(&c.drops_baseline);
        match &c.running {
            // SAFETY: the buffer stays alive while `running` holds it and we hold the control lock.
            Some(r) => self.stats_of(unsafe { &*r.buffer.0 }, true, &late),
            None => {
                let mut s = c.last_stats.clone();
                s.dropped = s.dropped.plus(&late);
                // Process-wide, so read now (see the field).
                s.registrations_refused = callsite::registrations_refused();
                s
            }
        }
    }

    pub(super) fn load_drops(&self) -> Drops {
        self.core.drops.load()
    }

    /// A buffer's figures, with `drops` (the log's drops since the baseline) added.
    pub(super) fn stats_of(&self, buf: &TraceBuffer, running: bool, drops: &Drops) -> Stats {
        let mut dropped = drops.clone();
        let k = &buf.counters;
        // Relaxed: statistics.
        dropped.overwritten = k.events_overwritten.load(Ordering::Relaxed);
        Stats {
            running,
            recorded: buf.recorded_events(),
            saturation_markers: k.markers.load(Ordering::Relaxed),
            dropped,
            chunks_loaned: k.chunks_loaned.load(Ordering::Relaxed),
            chunks_overwritten: k.chunks_overwritten.load(Ordering::Relaxed),
            chunks_total: buf.chunk_count() as u64,
            buffer_exhausted: buf.is_exhausted(),
            registrations_refused: callsite::registrations_refused(),
        }
    }

    /// A copy of what the running trace holds now, without stopping it: the flight recorder's dump
    /// on demand (`log.snapshot()?.save("dump.phos")?`). Every chunk in use, the ones threads are
    /// writing into included, is pinned in turn while its committed events are copied. Recording
    /// threads never wait for a dump and never drop an event because of one: a thread keeps its
    /// chunk and goes on writing past what was copied (those events are in the next dump), and a
    /// Ring loan passes over a chunk while it is pinned. A dump costs the writers nothing but the
    /// memory bandwidth of the copy (one pass over the buffer).
    ///
    /// The snapshot's `Stats` count the events it holds as recorded, and the drops (overwrites
    /// included) of the running trace so far.
    pub fn snapshot(&self) -> Result<Trace, Error> {
        self.snapshot_of(&self.control())
    }

    /// [`snapshot`](Self::snapshot), unless another thread holds this log's control lock (it is
    /// starting, stopping or dumping it): then `None` at once. For panic hooks, which must not
    /// wait for a lock the panicking code may hold.
    pub fn try_snapshot(&self) -> Option<Result<Trace, Error>> {
        let c = self.try_control()?;
        Some(self.snapshot_of(&c))
    }

    pub(super) fn snapshot_of(&self, c: &Control) -> Result<Trace, Error> {
        let Some(running) = c.running.as_ref() else {
            return Err(Error::new(ErrorKind::NotRunning));
        };
        for a in &running.attached.0 {
            a.check_snapshot()?;
        }
        // SAFETY: the buffer stays alive while `running` holds it and we hold the control lock
        // (only `stop`, under the same lock, frees it).
        let buf = unsafe { &*running.buffer.0 };
        let copy = buf.snapshot().map_err(|e| Error::new(ErrorKind::BufferAlloc { bytes: e.bytes }))?;
        let drops = self.load_drops().since(&c.drops_baseline);
        let live = self.stats_of(buf, true, &drops);
        let mut stats = self.stats_of(&copy, true, &drops);
        stats.dropped.overwritten = live.dropped.overwritten;
        stats.chunks_overwritten = live.chunks_overwritten;
        stats.chunks_total = live.chunks_total;
        stats.buffer_exhausted = live.buffer_exhausted;
        let aggregates = running.aggregates_so_far();
        let clock = c.clock.clone().expect("calibrated in start");
        let trace = Trace::new(copy, callsite::snapshot(), thread::thread_names(), clock, stats, aggregates);
        let trace = running.attached.0.iter().fold(trace, |t, a| a.add_to_snapshot(t));
        Ok(trace.with_compression(running.config.compression))
    }
}

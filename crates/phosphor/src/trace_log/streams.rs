//! A log's datastreams (Stream mode): opening, closing and their figures, the chunks its
//! tenants hold, for the collector's flush of quiet threads, and the Stream mode's words of the
//! write path (the saturation marker's id and each log's `Block` wait), which the core reads
//! through `record::log_core::STREAM`.

use std::any::Any;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use super::attach::{Attacher, Attachment, Starting, When};
use super::config::TraceConfig;
use super::{Control, TraceLog};
use crate::error::{Error, ErrorKind};
use crate::record::log_core::{StreamHooks, STREAM};
use crate::registry::MAX_LOGS;
use crate::stats::Stats;

/// Per log slot: how long the log's writers wait for a free chunk before they drop their event
/// (ns; 0: they do not wait). Set while a `Block` datastream is open, cleared when a trace starts.
static BLOCK_NS: [AtomicU64; MAX_LOGS] = [const { AtomicU64::new(0) }; MAX_LOGS];

/// The saturation marker's callsite id (0 until a streaming trace first registers it).
static SATURATION_ID: AtomicU32 = AtomicU32::new(0);

/// What the write path reads of the above ([`STREAM`]).
static HOOKS: StreamHooks = StreamHooks { saturation_id, block_ns };

fn saturation_id() -> u32 {
    // Relaxed: stored before the first streaming trace's buffer is published, and tenants read
    // it only after they acquire that buffer (the id never changes once registered).
    SATURATION_ID.load(Ordering::Relaxed)
}

fn block_ns(slot: u32) -> u64 {
    // Relaxed: a setting; a change takes effect at some later wait.
    BLOCK_NS[slot as usize].load(Ordering::Relaxed)
}

impl TraceLog {
    /// Opens a datastream on the running streaming trace ([`BufferMode::Stream`](crate::BufferMode::Stream)):
    /// from now on, every chunk the collector takes is also written to `config`'s sink, with the
    /// events of its categories. At most [`MAX_STREAMS`](crate::stream::MAX_STREAMS) at once.
    pub fn open_stream(&self, config: crate::stream::StreamConfig) -> Result<crate::stream::StreamId, Error> {
        let c = self.control();
        let col = Self::collector(&c)?;
        let id = col.open(config)?;
        self.set_block_timeout(col);
        Ok(id)
    }

    /// Closes a datastream: it is finished with every event recorded before the call (the chunks
    /// given back, and the committed part of those the threads still hold), and its trailer (the
    /// trace's figures so far). Returns what it wrote and lost.
    pub fn close_stream(&self, id: crate::stream::StreamId) -> Result<crate::stream::StreamStats, Error> {
        let c = self.control();
        let col = Self::collector(&c)?;
        let stats = self.stats_locked(&c);
        let held: Vec<_> = Self::tenants_chunks(&c).map(|(_, chunk)| chunk).collect();
        let s = col.close(id, &stats, &held)?;
        self.set_block_timeout(col);
        Ok(s)
    }

    /// A datastream's figures: of an open one, or, once the trace has stopped, of the streams that
    /// were open then.
    pub fn stream_stats(&self, id: crate::stream::StreamId) -> Result<crate::stream::StreamStats, Error> {
        let c = self.control();
        match c.running.as_ref().and_then(|r| r.attached.find::<crate::stream::Collector>()) {
            Some(col) => col.stats(id),
            None => c
                .kept
                .find::<LastStreams>()
                .map_or(&[][..], |l| &l.0)
                .iter()
                .find(|(i, _)| *i == id)
                .map(|(_, s)| s.clone())
                .ok_or_else(|| Error::new(ErrorKind::NoSuchStream)),
        }
    }

    fn collector(c: &Control) -> Result<&crate::stream::Collector, Error> {
        c.running.as_ref().and_then(|r| r.attached.find::<crate::stream::Collector>()).ok_or_else(|| {
            Error::new(ErrorKind::WrongMode("datastreams need a running trace in BufferMode::Stream"))
        })
    }

    fn set_block_timeout(&self, col: &crate::stream::Collector) {
        let ns = u64::try_from(col.block_timeout().as_nanos()).unwrap_or(u64::MAX);
        // Relaxed: a setting that writers read when they find no free chunk.
        BLOCK_NS[self.slot() as usize].store(ns, Ordering::Relaxed);
    }

    /// The chunks the running trace's tenants hold now (hints: each may be given back at any
    /// moment), for the streaming collector's periodic flush of quiet threads, which pins each
    /// before it reads it. Appends to `out`; nothing if the control lock is busy (a `stop` in
    /// progress waits for the collector, so the collector must not wait here).
    pub(crate) fn held_chunks(&self, out: &mut Vec<(usize, usize)>) {
        let Some(c) = self.try_control() else { return };
        if c.running.is_none() {
            return;
        }
        out.extend(Self::tenants_chunks(&c).map(|(t, chunk)| (t, chunk as usize)));
    }

    /// Each tenant's (address) current chunk, where it has one.
    fn tenants_chunks(
        c: &Control,
    ) -> impl Iterator<Item = (usize, *const crate::record::buffer::TraceChunk)> + '_ {
        c.tenants.iter().chain(c.pool.iter()).filter_map(|t| {
            let chunk = t.current_chunk();
            (!chunk.is_null()).then_some((Arc::as_ptr(t) as usize, chunk))
        })
    }
}

/// Starts a streaming trace's collector before its buffer is published.
pub(super) const ATTACHER: Attacher =
    Attacher { when: When::BeforePublish, check: no_check, start: start_collector };

fn no_check(_: &TraceConfig) -> Result<(), Error> {
    Ok(())
}

/// A streaming trace's collector (`None` in the other modes), started on the unpublished buffer;
/// sets the write path's Stream-mode words (the saturation marker's id, no blocking) and plugs
/// them into [`STREAM`].
fn start_collector(log: &TraceLog, s: &Starting<'_>) -> Result<Option<Box<dyn Attachment>>, Error> {
    // No blocking until a `Block` datastream opens; a trace of another mode clears what a
    // streaming trace of this log (or of a dropped log that had its slot) left, though only
    // Stream-mode writers read it. Relaxed: read by tenants only after they acquire the buffer
    // `start` publishes.
    BLOCK_NS[log.slot() as usize].store(0, Ordering::Relaxed);
    if s.config.mode != crate::BufferMode::Stream {
        return Ok(None);
    }
    let state = crate::registry::callsite::register(&crate::stream::SATURATION);
    // Relaxed: as above.
    SATURATION_ID.store(crate::registry::callsite::id_of(state), Ordering::Relaxed);
    STREAM.fill(&HOOKS);
    let header = crate::output::trace_file::process_header(s.clock.clone());
    match crate::stream::Collector::start(log, s.buffer, header) {
        Ok(c) => Ok(Some(Box::new(c))),
        Err(e) => Err(Error::new(ErrorKind::Collector(e.to_string()))),
    }
}

/// The figures of the datastreams that were open when the last streaming trace stopped.
struct LastStreams(Vec<(crate::stream::StreamId, crate::stream::StreamStats)>);

impl Attachment for crate::stream::Collector {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    /// No stream is open yet: this only joins the dispatcher.
    fn abort(self: Box<Self>, _log: &TraceLog) {
        self.finish(Stats::ZERO);
    }

    fn check_snapshot(&self) -> Result<(), Error> {
        Err(Error::new(ErrorKind::WrongMode(
            "a streaming trace has no snapshot: its datastreams already hold its events",
        )))
    }

    /// The collector writes every chunk given back (all of them, now), finishes the datastreams
    /// with the final figures, and exits; its threads read the buffer until then.
    fn stopped(self: Box<Self>, stats: &Stats) -> Option<Box<dyn Any + Send>> {
        Some(Box::new(LastStreams(self.finish(stats.clone()))))
    }

    #[cfg(unix)]
    fn forget_in_child(self: Box<Self>) {
        std::mem::forget(*self);
    }
}

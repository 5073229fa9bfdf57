//! A log's datastreams (Stream mode): opening, closing and their figures, and the chunks its
//! tenants hold, for the collector's flush of quiet threads.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{Control, TraceLog};
use crate::error::{Error, ErrorKind};

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
        match c.running.as_ref().and_then(|r| r.collector.as_ref()) {
            Some(col) => col.stats(id),
            None => c
                .last_streams
                .iter()
                .find(|(i, _)| *i == id)
                .map(|(_, s)| s.clone())
                .ok_or_else(|| Error::new(ErrorKind::NoSuchStream)),
        }
    }

    fn collector(c: &Control) -> Result<&crate::stream::Collector, Error> {
        c.running.as_ref().and_then(|r| r.collector.as_ref()).ok_or_else(|| {
            Error::new(ErrorKind::WrongMode("datastreams need a running trace in BufferMode::Stream"))
        })
    }

    fn set_block_timeout(&self, col: &crate::stream::Collector) {
        let ns = u64::try_from(col.block_timeout().as_nanos()).unwrap_or(u64::MAX);
        // Relaxed: a setting that writers read when they find no free chunk.
        self.core.block_ns.store(ns, Ordering::Relaxed);
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

//! One datastream's state and its writes: the sink (opened, reconnected with backoff), the trace
//! file written to it through a `phosphor_format` `Writer` (the callsites and thread names each
//! chunk needs, sent first), the category filter, and a TCP sink's acknowledgements.
//!
//! A compressing writer gathers blocks into a group (`phosphor_format`'s `compress.rs`) and writes
//! the group when it is full or at a flush, so a chunk reaches the sink only when its group does.
//! A chunk's end offset in the stream, which a TCP sink's acknowledgements are compared with, is
//! therefore taken when the writer's offset next moves after the call that wrote it: a group
//! written then holds every block gathered before that call (a chunk is `unplaced` until then;
//! at the latest, the flush places it). A sink that fails meanwhile loses it, counted as dropped.
//! A plain writer writes each chunk in its call, so its offset is exact at once.

use std::collections::{HashMap, HashSet};
use std::io::{BufWriter, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use phosphor_format::file::ack::{Ack, AckReader};
use phosphor_format::file::{Compression, Header, Trailer, Writer};
use phosphor_format::system::{Mapping, SystemBatch};
use phosphor_format::{count_events, Record, FIRST_CALLSITE_ID, ID_THREAD_SWITCH};

use super::{Backpressure, MemorySink, Sink, StreamConfig, StreamStats};
use crate::output::trace::static_str;
use crate::registry::callsite::{self, Callsite};
use crate::registry::category::CategoryFilter;

/// The longest wait between two attempts to reopen a failed sink.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Counts the bytes that reach the sink.
struct Counted {
    inner: Box<dyn Write + Send>,
    bytes: Arc<std::sync::atomic::AtomicU64>,
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        // Relaxed: a statistic.
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

type StreamWriter = Writer<BufWriter<Counted>>;

/// One open datastream, owned by the collector.
pub(super) struct Stream {
    id: u32,
    /// How to (re)open the sink; `None` once a one-shot sink (a writer) has been used.
    sink: Option<Sink>,
    categories: CategoryFilter,
    backpressure: Backpressure,
    compression: Compression,
    writer: Option<StreamWriter>,
    /// Callsite ids (from `FIRST_CALLSITE_ID`) already defined in this stream's file.
    sent: Vec<bool>,
    threads: HashSet<u32>,
    connected_once: bool,
    retry_at: Instant,
    backoff: Duration,
    bytes: Arc<std::sync::atomic::AtomicU64>,
    stats: StreamStats,
    /// The filtered copy of a chunk, reused.
    scratch: Vec<Record>,
    /// TCP: the read side of the connection, where the server acknowledges the bytes its file
    /// holds.
    acks: Option<TcpStream>,
    /// TCP: the stream offset after each flushed group of chunks not yet acknowledged, with its
    /// events.
    inflight: std::collections::VecDeque<(u64, u64)>,
    /// Events of the chunks written to the writer since its last flush: a compressing writer may
    /// still hold them (see the module's documentation).
    unplaced: u64,
    /// TCP: the bytes the server has acknowledged on this connection.
    acked: u64,
    /// TCP: the server's messages, as their bytes arrive.
    ack_reader: AckReader,
    /// The trailer is written: the server closing the connection is expected now.
    finishing: bool,
    /// Every executable mapping the system context reported, to send again on a new connection
    /// (each file must describe the addresses of its own samples).
    mappings: Vec<Mapping>,
    /// The current connection has been sent `mappings`.
    mappings_sent: bool,
    /// OTLP: the forwarder's and the exporter's figures.
    #[cfg(feature = "otlp")]
    otlp: Option<super::otlp::OtlpProbe>,
}

impl Stream {
    pub(super) fn new(id: u32, config: StreamConfig) -> Stream {
        Stream {
            id,
            sink: Some(config.sink),
            categories: config.categories,
            backpressure: config.backpressure,
            compression: config.compression,
            writer: None,
            sent: Vec::new(),
            threads: HashSet::new(),
            connected_once: false,
            retry_at: Instant::now(),
            backoff: Duration::from_millis(50),
            bytes: Arc::new(std::sync::atomic::AtomicU64::new(0)),
            stats: StreamStats::default(),
            scratch: Vec::new(),
            acks: None,
            inflight: Default::default(),
            unplaced: 0,
            acked: 0,
            ack_reader: AckReader::default(),
            finishing: false,
            mappings: Vec::new(),
            mappings_sent: false,
            #[cfg(feature = "otlp")]
            otlp: None,
        }
    }

    fn describe(&self) -> String {
        match &self.sink {
            Some(s) => format!("datastream {} ({s:?})", self.id),
            None => format!("datastream {}", self.id),
        }
    }

    /// Opens the sink and writes the header, when the stream has no writer and it is time to try.
    fn connect(&mut self, header: &Header) -> bool {
        if self.writer.is_some() {
            return true;
        }
        if Instant::now() < self.retry_at {
            return false;
        }
        #[cfg(feature = "otlp")]
        let name = format!("datastream {}", self.id);
        let out: std::io::Result<Box<dyn Write + Send>> = match &mut self.sink {
            #[cfg(feature = "otlp")]
            Some(Sink::Otlp(o)) if !self.connected_once => o.start(name).map(|(w, probe)| {
                self.otlp = Some(probe);
                w
            }),
            Some(Sink::File(p)) if !self.connected_once => {
                std::fs::File::create(&*p).map(|f| Box::new(f) as Box<dyn Write + Send>)
            }
            Some(Sink::Tcp(a)) => TcpStream::connect_timeout(a, Duration::from_secs(1)).and_then(|s| {
                let _ = s.set_nodelay(true);
                s.set_write_timeout(Some(Duration::from_secs(5)))?;
                let acks = s.try_clone()?;
                // Reads of acknowledgements must not wait. Not `set_nonblocking`: that is the
                // socket's (both clones') flag, and would make the writes fail when the send
                // buffer is full. A read timeout affects reads only.
                acks.set_read_timeout(Some(Duration::from_micros(1)))?;
                self.acks = Some(acks);
                self.inflight.clear();
                self.acked = 0;
                self.ack_reader = AckReader::default();
                Ok(Box::new(s) as Box<dyn Write + Send>)
            }),
            Some(Sink::Memory(m)) if !self.connected_once => Ok(Box::new(m.clone())),
            _ => match self.sink.take() {
                Some(Sink::Writer(w)) if !self.connected_once => Ok(w),
                other => {
                    self.sink = other;
                    // A file, memory or writer sink that failed once stays failed.
                    return false;
                }
            },
        };
        // An OTLP sink that could not start (a bad endpoint) stays failed, as a file does.
        #[cfg(feature = "otlp")]
        if out.is_err() && matches!(self.sink, Some(Sink::Otlp(_))) {
            self.connected_once = true;
        }
        let opened = out.map_err(|e| e.to_string()).and_then(|out| {
            let counted = Counted { inner: out, bytes: self.bytes.clone() };
            Writer::with_compression(BufWriter::with_capacity(256 << 10, counted), header, self.compression)
                .map_err(|e| e.to_string())
        });
        match opened {
            Ok(w) => {
                if self.connected_once {
                    self.stats.reconnects += 1;
                }
                self.connected_once = true;
                self.writer = Some(w);
                self.sent.clear();
                self.threads.clear();
                self.mappings_sent = false;
                self.backoff = Duration::from_millis(50);
                true
            }
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    /// The sink failed: the error is reported once, the writer dropped, and a retry scheduled
    /// (with doubling backoff, up to 2 s) for the sinks that can be reopened.
    fn fail(&mut self, e: String) {
        // The acknowledgements that arrived before the end count; what the server had not
        // acknowledged went down with the connection.
        let _ = self.take_acks();
        let lost = self.inflight.drain(..).map(|(_, events)| events).sum::<u64>()
            + std::mem::take(&mut self.unplaced);
        self.stats.events_written -= lost;
        self.stats.events_dropped += lost;
        self.acks = None;
        if self.stats.first_error.is_none() {
            eprintln!(
                "phosphor: {} failed: {e}; its chunks are dropped and counted until it recovers",
                self.describe()
            );
            self.stats.first_error = Some(e);
        }
        self.writer = None;
        self.retry_at = Instant::now() + self.backoff;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    /// Counts `n` system batches that were not queued for this stream.
    pub(super) fn count_system_dropped(&mut self, n: u64) {
        self.stats.system_batches_dropped += n;
    }

    /// Writes one period's system context (`Writer::write_system`); on a new connection with
    /// every mapping reported so far. Never waits for a sink that is down: the batch is counted
    /// as dropped (the trace's own copy keeps it).
    pub(super) fn write_system(&mut self, header: &Header, batch: &SystemBatch) {
        self.mappings.extend(batch.mappings.iter().cloned());
        if !self.connect(header) {
            self.stats.system_batches_dropped += 1;
            return;
        }
        let Some(w) = self.writer.as_mut() else { return };
        let written = if self.mappings_sent {
            w.write_system(batch)
        } else {
            self.mappings_sent = true;
            w.write_system(&SystemBatch { mappings: self.mappings.clone(), ..batch.clone() })
        };
        if let Err(e) = written {
            self.stats.system_batches_dropped += 1;
            self.fail(e.to_string());
        }
    }

    /// Counts `events` the stream could not be given.
    pub(super) fn count_dropped(&mut self, events: u64) {
        self.stats.events_dropped += events;
    }

    /// Writes one chunk: the callsites and thread names it needs first.
    pub(super) fn write_chunk(
        &mut self,
        header: &Header,
        table: &mut CallsiteTable,
        names: &mut ThreadNames,
        tid: u32,
        seq: u64,
        records: &[Record],
    ) {
        if !self.connect(header) {
            if let Backpressure::Block { timeout } = self.backpressure {
                // Keep trying for a while before this chunk is given up.
                let deadline = Instant::now() + timeout;
                while Instant::now() < deadline && !self.connect(header) {
                    std::thread::sleep(Duration::from_millis(10).min(self.backoff));
                    self.retry_at = Instant::now();
                }
            }
            if self.writer.is_none() {
                self.stats.events_dropped += count_events(records);
                return;
            }
        }
        let (selected, filtered): (&[Record], u64) = if self.categories.is_all() {
            (records, 0)
        } else {
            filter_records(records, &self.categories, table, &mut self.scratch);
            (&self.scratch, count_events(records) - count_events(&self.scratch))
        };
        self.stats.events_filtered += filtered;
        // What this chunk uses that the stream has not defined yet.
        let mut new_callsites = Vec::new();
        let mut new_threads = Vec::new();
        if self.threads.insert(tid) {
            new_threads.push(tid);
        }
        // One walk over the events finds what is new and counts them (as `count_events` does).
        let (mut i, mut kept) = (0, 0);
        while let Some(r) = selected.get(i) {
            if r.id == ID_THREAD_SWITCH {
                let t = r.slots[0] as u32;
                if self.threads.insert(t) {
                    new_threads.push(t);
                }
            } else if r.id >= FIRST_CALLSITE_ID {
                kept += 1;
                let k = (r.id - FIRST_CALLSITE_ID) as usize;
                if self.sent.len() <= k {
                    self.sent.resize(k + 1, false);
                }
                if !self.sent[k] {
                    self.sent[k] = true;
                    if let Some(cs) = table.get(r.id) {
                        new_callsites.push(crate::output::trace_file::callsite_info(r.id, cs.meta()));
                    }
                }
            }
            i += 1 + r.meta.continuation();
        }
        let w = self.writer.as_mut().expect("connected above");
        let (before, earlier) = (w.offset(), self.unplaced);
        let mut result = w.write_callsites(&new_callsites);
        if result.is_ok() && !new_threads.is_empty() {
            let named: Vec<(u32, String)> =
                new_threads.iter().filter_map(|&t| Some((t, names.get(t)?.to_owned()))).collect();
            result = w.write_thread_names(named.iter().map(|(t, n)| (*t, n.as_str())));
        }
        if result.is_ok() {
            result = w.write_chunk(tid, seq, selected, static_str);
        }
        match result {
            Ok(()) => {
                self.stats.chunks_written += 1;
                self.stats.events_written += kept;
                self.unplaced += kept;
                let end = w.offset();
                if self.compression == Compression::None {
                    self.placed(end, self.unplaced);
                } else if end > before {
                    // A group went out: the chunks of earlier calls are in it, or before it.
                    self.placed(end, earlier);
                }
            }
            Err(e) => {
                self.stats.events_dropped += kept;
                self.fail(e.to_string());
            }
        }
    }

    /// Flushes what was written (the writer's group of compressed blocks included), so the sink
    /// holds a valid trace file.
    pub(super) fn flush(&mut self) {
        self.place();
        self.read_acks();
    }

    /// Flushes the writer; every chunk written is then in the stream, before its offset. A
    /// failure loses the unplaced ones.
    fn place(&mut self) {
        let Some(w) = &mut self.writer else { return };
        match w.flush() {
            Ok(()) => {
                let end = w.offset();
                self.placed(end, self.unplaced);
            }
            Err(e) => self.fail(e.to_string()),
        }
    }

    /// `events` of the unplaced chunks are in the stream before offset `end` (TCP: acknowledged
    /// once the server holds that many bytes).
    fn placed(&mut self, end: u64, events: u64) {
        self.unplaced -= events;
        if self.acks.is_some() && events > 0 {
            self.inflight.push_back((end, events));
        }
    }

    /// TCP: takes in the server's acknowledgements so far (without waiting); a closed or broken
    /// connection fails the stream.
    fn read_acks(&mut self) {
        match self.take_acks() {
            // The server closes the connection once it has the trailer.
            Some(_) if self.finishing && self.inflight.is_empty() => self.acks = None,
            Some(e) => self.fail(e),
            None => {}
        }
    }

    /// Applies the acknowledgements that have arrived; returns why the connection is over, if it
    /// is.
    fn take_acks(&mut self) -> Option<String> {
        let a = self.acks.as_mut()?;
        let mut buf = [0u8; 256];
        let broken = loop {
            match std::io::Read::read(a, &mut buf) {
                Ok(0) => break Some("the server closed the connection".to_owned()),
                Ok(n) => self.ack_reader.push(&buf[..n]),
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
                {
                    break None
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Some(e.to_string()),
            }
        };
        let mut ended = None;
        while let Some(ack) = self.ack_reader.next_ack() {
            match ack {
                Ack::Bytes(n) => self.acked = self.acked.max(n),
                Ack::End(reason) => ended = Some(reason),
            }
        }
        let ended = ended.or_else(|| broken.as_ref().and(self.ack_reader.cut_end()));
        while self.inflight.front().is_some_and(|&(end, _)| end <= self.acked) {
            self.inflight.pop_front();
        }
        match ended {
            Some(reason) => {
                // Refused or ended on purpose: retrying at once would only be refused again.
                self.stats.server_ends += 1;
                self.backoff = MAX_BACKOFF;
                Some(format!("the server ended the connection: {reason}"))
            }
            None => broken,
        }
    }

    /// Writes the trailer and closes the sink; returns the stream's figures.
    pub(super) fn finish(mut self, trailer: &Trailer) -> StreamStats {
        // The last group first, so that `end` is past every chunk written.
        self.place();
        if let Some(w) = self.writer.take() {
            let end = w.offset();
            match w.finish(trailer) {
                Ok(out) => {
                    match out.into_inner().map_err(|e| e.into_error()).and_then(|mut c| c.flush().map(|_| c))
                    {
                        Ok(c) => {
                            // TCP: wait (a little) for the server to acknowledge the whole stream.
                            drop(c);
                            self.finishing = true;
                            let deadline = Instant::now() + Duration::from_secs(2);
                            while self.acks.is_some() && self.acked < end && Instant::now() < deadline {
                                self.read_acks();
                                std::thread::sleep(Duration::from_millis(2));
                            }
                            if self.acks.is_some() && !self.inflight.is_empty() {
                                self.fail("the server did not acknowledge the end of the stream".into());
                            }
                        }
                        Err(e) => self.fail(e.to_string()),
                    }
                }
                Err(e) => self.fail(e.to_string()),
            }
        }
        // Relaxed: a statistic, read by the thread that wrote it.
        self.stats.bytes_written = self.bytes.load(Ordering::Relaxed);
        // The writer is gone: an OTLP stream has flushed its spans and counted what became of them.
        #[cfg(feature = "otlp")]
        if let Some(p) = &self.otlp {
            self.stats.otlp = Some(p.stats());
        }
        self.stats
    }

    /// A placeholder while a stream is being finished.
    pub(super) fn closed(id: u32) -> Stream {
        let mut s = Stream::new(id, StreamConfig::new(Sink::Memory(MemorySink::new())));
        s.sink = None;
        s
    }

    /// A finished stream, kept for its figures.
    pub(super) fn finished(stats: StreamStats) -> Stream {
        let mut s = Stream::closed(0);
        // Relaxed: a statistic.
        s.bytes.store(stats.bytes_written, Ordering::Relaxed);
        s.stats = stats;
        s
    }

    pub(super) fn current_stats(&self) -> StreamStats {
        let mut s = self.stats.clone();
        // Relaxed: a statistic.
        s.bytes_written = self.bytes.load(Ordering::Relaxed);
        #[cfg(feature = "otlp")]
        if let Some(p) = &self.otlp {
            s.otlp = Some(p.stats());
        }
        s
    }
}

/// The events of `records` whose callsite `filter` takes (thread switches kept), into `out`.
fn filter_records(
    records: &[Record],
    filter: &CategoryFilter,
    table: &mut CallsiteTable,
    out: &mut Vec<Record>,
) {
    out.clear();
    let mut i = 0;
    while let Some(r) = records.get(i) {
        let len = 1 + r.meta.continuation();
        let keep = r.id == ID_THREAD_SWITCH
            || (r.id >= FIRST_CALLSITE_ID
                && table.get(r.id).is_some_and(|cs| filter.matches(cs.meta().category)));
        if keep {
            out.extend_from_slice(&records[i..(i + len).min(records.len())]);
        }
        i += len;
    }
}

/// The registry's callsites by id, refreshed when a chunk names one it does not know yet.
#[derive(Default)]
pub(super) struct CallsiteTable(Vec<&'static Callsite>);

impl CallsiteTable {
    fn get(&mut self, id: u32) -> Option<&'static Callsite> {
        let k = id.checked_sub(FIRST_CALLSITE_ID)? as usize;
        if k >= self.0.len() {
            self.0 = callsite::snapshot();
        }
        self.0.get(k).copied()
    }
}

/// Thread names, refreshed when a thread without one shows up.
#[derive(Default)]
pub(super) struct ThreadNames(HashMap<u32, String>);

impl ThreadNames {
    fn get(&mut self, tid: u32) -> Option<&str> {
        if !self.0.contains_key(&tid) {
            self.0 = crate::record::thread::thread_names();
        }
        self.0.get(&tid).map(String::as_str)
    }
}

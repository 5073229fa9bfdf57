//! Continuous tracing: the collector thread and its datastreams (DSUI's datastreams, Palanteer's
//! transmission thread).
//!
//! A trace in [`BufferMode::Stream`](crate::BufferMode::Stream) hands each full chunk to the
//! buffer's queue. The trace's dispatcher thread (`phosphor-collector`) pops them and queues each
//! for every open datastream (a [`Sink`] with its own category filter), each of which has a thread
//! of its own (`phosphor-sink-N`; DSUI puts each sink under exactly one logging thread), so a slow
//! sink's writes do not wait for the others'. The last stream done with a chunk releases it to the
//! pool, so a sink that cannot keep up fills the pool, and then the writers drop (and count) their
//! events as with any saturation. Every [`FLUSH_PERIOD`] (5 ms, as Palanteer) the dispatcher also
//! sends on the events that have waited a whole period in a chunk a thread is still writing: it
//! pins the chunk (`TraceChunk::pin`: no loan can take it meanwhile), queues its committed prefix
//! for the datastreams as a *piece* of the chunk, and the last stream done with the piece unpins
//! it; when the chunk is given back, each stream writes the rest. The writer keeps its chunk and
//! goes on writing past the prefix: it never waits for the collector and never drops an event
//! because of it, so a quiet thread's events arrive within about two periods at no cost to the
//! busy ones. A chunk written in pieces is several chunk blocks with the same thread stream and
//! sequence number, in order (`docs/FORMAT.md`).
//!
//! Each datastream is a trace file as a byte stream (`docs/FORMAT.md`): a header, then for each
//! chunk the callsites and thread names it uses that this stream has not had yet, then the chunk.
//! It is flushed after every batch, so a file is readable while it is written and valid at every
//! flush; the trailer comes when the stream is closed or the trace stops. A stream whose category
//! filter is not `*` gets each chunk with the other categories' events removed (an empty chunk
//! keeps the writer's sequence numbers contiguous, so a reader tells removed from lost).
//!
//! Nothing is lost without being counted:
//! * a writer that finds no free chunk drops its event, counted as `no_chunk` (or, while a
//!   [`Backpressure::Block`] stream is open, first waits up to its timeout), and its next chunk
//!   starts with a saturation marker (`phosphor`/`saturation`, argument `dropped`);
//! * a stream whose sink fails counts the events of every chunk it could not write
//!   ([`StreamStats::events_dropped`]) and reports the first error once. A TCP sink reconnects
//!   with backoff (a new connection is a new trace file: header, callsites and threads again).
//!   The recording server acknowledges the bytes its file holds, so a chunk sent to a server that
//!   died before acknowledging it is counted as dropped too. (One that the server wrote to its
//!   file just before dying, without acknowledging it, is then both in the file and counted: the
//!   count is an upper bound by at most one acknowledgement's worth.)

use std::collections::{HashMap, HashSet};
use std::io::{BufWriter, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use phosphor_format::file::{Header, Trailer, Writer};
use phosphor_format::{count_events, Record, FIRST_CALLSITE_ID, ID_THREAD_SWITCH};

use crate::buffer::TraceBuffer;
use crate::callsite::{self, Callsite};
use crate::category::CategoryFilter;
use crate::error::{Error, ErrorKind};
use crate::trace::static_str;
use crate::{Stats, TraceLog};

/// The saturation marker: the first event of a writer's chunk after it dropped events for want of
/// a free chunk; its argument is how many.
pub(crate) static SATURATION: Callsite = Callsite::new(crate::CallsiteMeta::new(
    "phosphor",
    "saturation",
    phosphor_format::Phase::Instant,
    ["dropped", ""],
    file!(),
    line!(),
));

/// The most datastreams open at once on one trace.
pub const MAX_STREAMS: usize = 8;

/// How often the collector takes back the partly filled chunks of quiet threads.
pub const FLUSH_PERIOD: Duration = Duration::from_millis(5);

/// Where a datastream's bytes go.
pub enum Sink {
    /// A trace file, created or truncated.
    File(PathBuf),
    /// A TCP connection to a recording server (`phosphor record --listen`), reconnected with
    /// backoff when it breaks.
    Tcp(SocketAddr),
    /// Memory, readable through the [`MemorySink`] handle.
    Memory(MemorySink),
    /// Any writer (tests use failing ones).
    Writer(Box<dyn Write + Send>),
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sink::File(p) => write!(f, "File({})", p.display()),
            Sink::Tcp(a) => write!(f, "Tcp({a})"),
            Sink::Memory(_) => f.write_str("Memory"),
            Sink::Writer(_) => f.write_str("Writer"),
        }
    }
}

/// A memory sink's bytes, shared with the collector.
#[derive(Clone, Debug, Default)]
pub struct MemorySink(Arc<Mutex<Vec<u8>>>);

impl MemorySink {
    /// An empty memory sink.
    pub fn new() -> MemorySink {
        MemorySink::default()
    }

    /// A copy of what was written so far (a valid trace file up to its last flush).
    pub fn bytes(&self) -> Vec<u8> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Write for MemorySink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a datastream does when it cannot keep up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Backpressure {
    /// Writers never wait: an event that finds no free chunk is dropped and counted; a chunk the
    /// sink cannot take is dropped and counted.
    #[default]
    Drop,
    /// Writers that find no free chunk wait for one up to `timeout` before dropping (LTTng's
    /// blocking mode), and a broken TCP sink is retried for up to `timeout` before a chunk is
    /// dropped.
    Block {
        /// The longest wait.
        timeout: Duration,
    },
}

/// A datastream to open on a streaming trace ([`TraceLog::open_stream`]).
#[derive(Debug)]
pub struct StreamConfig {
    pub(crate) sink: Sink,
    pub(crate) categories: CategoryFilter,
    pub(crate) backpressure: Backpressure,
}

impl StreamConfig {
    /// Every category to `sink`, dropping (and counting) what does not fit.
    pub fn new(sink: Sink) -> StreamConfig {
        StreamConfig { sink, categories: CategoryFilter::default(), backpressure: Backpressure::Drop }
    }

    /// Only the categories `spec` takes (the trace's own filter syntax).
    pub fn categories(mut self, spec: &str) -> Result<StreamConfig, Error> {
        self.categories = CategoryFilter::parse(spec)?;
        Ok(self)
    }

    /// What to do when the stream cannot keep up.
    pub fn backpressure(mut self, b: Backpressure) -> StreamConfig {
        self.backpressure = b;
        self
    }
}

/// A datastream's id, from [`TraceLog::open_stream`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamId(pub(crate) u32);

/// What a datastream has written and lost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// Chunks written (possibly emptied by the category filter).
    pub chunks_written: u64,
    /// Events written.
    pub events_written: u64,
    /// Events of chunks the sink could not take.
    pub events_dropped: u64,
    /// Events the category filter removed.
    pub events_filtered: u64,
    /// Bytes written, over every connection.
    pub bytes_written: u64,
    /// Connections made after the first (TCP).
    pub reconnects: u64,
    /// The first error, if any (it is reported once, on standard error, when it happens).
    pub first_error: Option<String>,
}

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
struct Stream {
    id: u32,
    /// How to (re)open the sink; `None` once a one-shot sink (a writer) has been used.
    sink: Option<Sink>,
    categories: CategoryFilter,
    backpressure: Backpressure,
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
    /// TCP: the stream offset after each chunk written and not yet acknowledged, with its events.
    inflight: std::collections::VecDeque<(u64, u64)>,
    /// TCP: the bytes the server has acknowledged on this connection.
    acked: u64,
    ack_buf: Vec<u8>,
    /// The trailer is written: the server closing the connection is expected now.
    finishing: bool,
}

impl Stream {
    fn new(id: u32, config: StreamConfig) -> Stream {
        Stream {
            id,
            sink: Some(config.sink),
            categories: config.categories,
            backpressure: config.backpressure,
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
            acked: 0,
            ack_buf: Vec::new(),
            finishing: false,
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
        let out: std::io::Result<Box<dyn Write + Send>> = match &mut self.sink {
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
                self.ack_buf.clear();
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
        let opened = out.map_err(|e| e.to_string()).and_then(|out| {
            let counted = Counted { inner: out, bytes: self.bytes.clone() };
            Writer::new(BufWriter::with_capacity(256 << 10, counted), header).map_err(|e| e.to_string())
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
        let lost: u64 = self.inflight.drain(..).map(|(_, events)| events).sum();
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
        self.backoff = (self.backoff * 2).min(Duration::from_secs(2));
    }

    /// Writes one chunk: the callsites and thread names it needs first.
    fn write_chunk(
        &mut self,
        header: &Header,
        table: &mut CallsiteTable,
        names: &mut ThreadNames,
        tid: u32,
        seq: u64,
        records: &[Record],
    ) {
        let events = count_events(records);
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
                self.stats.events_dropped += events;
                return;
            }
        }
        let (selected, kept): (&[Record], u64) = if self.categories.is_all() {
            (records, events)
        } else {
            filter_records(records, &self.categories, table, &mut self.scratch);
            (&self.scratch, count_events(&self.scratch))
        };
        self.stats.events_filtered += events - kept;
        // What this chunk uses that the stream has not defined yet.
        let mut new_callsites = Vec::new();
        let mut new_threads = Vec::new();
        if self.threads.insert(tid) {
            new_threads.push(tid);
        }
        let mut i = 0;
        while let Some(r) = selected.get(i) {
            if r.id == ID_THREAD_SWITCH {
                let t = r.slots[0] as u32;
                if self.threads.insert(t) {
                    new_threads.push(t);
                }
            } else if r.id >= FIRST_CALLSITE_ID {
                let k = (r.id - FIRST_CALLSITE_ID) as usize;
                if self.sent.len() <= k {
                    self.sent.resize(k + 1, false);
                }
                if !self.sent[k] {
                    self.sent[k] = true;
                    if let Some(cs) = table.get(r.id) {
                        new_callsites.push(crate::trace_file::callsite_info(r.id, cs.meta()));
                    }
                }
            }
            i += 1 + r.meta.continuation();
        }
        let w = self.writer.as_mut().expect("connected above");
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
                if self.acks.is_some() {
                    self.inflight.push_back((w.offset(), kept));
                }
            }
            Err(e) => {
                self.stats.events_dropped += kept;
                self.fail(e.to_string());
            }
        }
    }

    /// Flushes what was written, so the sink holds a valid trace file.
    fn flush(&mut self) {
        if let Some(w) = &mut self.writer {
            if let Err(e) = w.flush() {
                self.fail(e.to_string());
            }
        }
        self.read_acks();
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
                Ok(n) => self.ack_buf.extend_from_slice(&buf[..n]),
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
                {
                    break None
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Some(e.to_string()),
            }
        };
        let whole = self.ack_buf.len() / 8 * 8;
        for v in self.ack_buf[..whole].chunks_exact(8) {
            self.acked = self.acked.max(u64::from_le_bytes(v.try_into().expect("8 bytes")));
        }
        self.ack_buf.drain(..whole);
        while self.inflight.front().is_some_and(|&(end, _)| end <= self.acked) {
            self.inflight.pop_front();
        }
        broken
    }

    /// Writes the trailer and closes the sink; returns the stream's figures.
    fn finish(mut self, trailer: &Trailer) -> StreamStats {
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
        self.stats
    }

    /// A placeholder while a stream is being finished.
    fn closed(id: u32) -> Stream {
        let mut s = Stream::new(id, StreamConfig::new(Sink::Memory(MemorySink::new())));
        s.sink = None;
        s
    }

    /// A finished stream, kept for its figures.
    fn finished(stats: StreamStats) -> Stream {
        let mut s = Stream::closed(0);
        // Relaxed: a statistic.
        s.bytes.store(stats.bytes_written, Ordering::Relaxed);
        s.stats = stats;
        s
    }

    fn current_stats(&self) -> StreamStats {
        let mut s = self.stats.clone();
        // Relaxed: a statistic.
        s.bytes_written = self.bytes.load(Ordering::Relaxed);
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
struct CallsiteTable(Vec<&'static Callsite>);

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
struct ThreadNames(HashMap<u32, String>);

impl ThreadNames {
    fn get(&mut self, tid: u32) -> Option<&str> {
        if !self.0.contains_key(&tid) {
            self.0 = crate::thread::thread_names();
        }
        self.0.get(&tid).map(String::as_str)
    }
}

/// A datastream's thread: it writes the chunks the dispatcher queues for it, in order, and
/// releases each chunk once every stream that was given it is done with it.
struct Worker {
    id: u32,
    backpressure: Backpressure,
    /// Jobs ([`Job`]) to write: whole chunks given back, and pieces of chunks still held.
    queue: crossbeam_queue::ArrayQueue<u64>,
    stream: Mutex<Stream>,
    /// Set when the stream is being closed: finish once the queue is empty, with this trailer.
    closing: Mutex<Option<Trailer>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// What the trace, its dispatcher and its datastream threads share.
pub(crate) struct Shared {
    workers: Mutex<Vec<Arc<Worker>>>,
    next_id: std::sync::atomic::AtomicU32,
    stop: AtomicBool,
    header: Header,
    /// Per chunk: the streams that still have to write it; the last one releases it.
    refs: Box<[std::sync::atomic::AtomicU32]>,
    /// Per chunk: the streams that still have to write the piece queued for them (at most one
    /// piece per chunk is outstanding); the last one unpins the chunk.
    piece_refs: Box<[std::sync::atomic::AtomicU32]>,
    buf: BufferPtr,
}

/// A streaming trace's dispatcher thread (it pops full chunks and queues them for each datastream's
/// thread, and runs the periodic flush).
pub(crate) struct Collector {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The buffer pointer, shared with the collector's threads. It stays valid until `stop` has joined
/// them.
#[derive(Clone, Copy)]
struct BufferPtr(*const TraceBuffer);
// SAFETY: a `TraceBuffer` is `Sync`; the pointer is dereferenced only while `stop` keeps the buffer
// alive (it joins every collector thread before freeing it).
unsafe impl Send for BufferPtr {}
// SAFETY: as above.
unsafe impl Sync for BufferPtr {}

impl BufferPtr {
    fn get(&self) -> &TraceBuffer {
        // SAFETY: see the type.
        unsafe { &*self.0 }
    }
}

/// The log, sent to the dispatcher; alive until `stop` has joined it.
struct LogPtr(*const TraceLog);
// SAFETY: `TraceLog` is `Sync`; `stop` (also run by `Drop`) joins the dispatcher before the log can go.
unsafe impl Send for LogPtr {}

impl Collector {
    /// Starts the dispatcher of `buf`, the buffer of `log`'s streaming trace.
    pub(crate) fn start(
        log: &TraceLog,
        buf: *const TraceBuffer,
        header: Header,
    ) -> std::io::Result<Collector> {
        let buf = BufferPtr(buf);
        let chunks = buf.get().chunk_count();
        let shared = Arc::new(Shared {
            workers: Mutex::new(Vec::new()),
            next_id: std::sync::atomic::AtomicU32::new(1),
            stop: AtomicBool::new(false),
            header,
            refs: (0..chunks).map(|_| std::sync::atomic::AtomicU32::new(0)).collect(),
            piece_refs: (0..chunks).map(|_| std::sync::atomic::AtomicU32::new(0)).collect(),
            buf,
        });
        let (s, l) = (shared.clone(), LogPtr(log));
        let thread = std::thread::Builder::new().name("phosphor-collector".into()).spawn(move || {
            let l = l;
            // SAFETY: see `LogPtr`.
            dispatch(&s, unsafe { &*l.0 })
        })?;
        Ok(Collector { shared, thread: Some(thread) })
    }

    /// Opens a datastream: a thread of its own.
    pub(crate) fn open(&self, config: StreamConfig) -> Result<StreamId, Error> {
        let mut workers = self.shared.workers.lock().unwrap_or_else(|p| p.into_inner());
        if workers.len() >= MAX_STREAMS {
            return Err(Error::new(ErrorKind::TooManyStreams { max: MAX_STREAMS }));
        }
        // Relaxed: only distinctness matters.
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let w = Arc::new(Worker {
            id,
            backpressure: config.backpressure,
            // At most one whole chunk and one piece of each chunk are queued at once.
            queue: crossbeam_queue::ArrayQueue::new(2 * self.shared.refs.len()),
            stream: Mutex::new(Stream::new(id, config)),
            closing: Mutex::new(None),
            thread: Mutex::new(None),
        });
        let (ww, shared) = (w.clone(), self.shared.clone());
        let t = std::thread::Builder::new()
            .name(format!("phosphor-sink-{id}"))
            .spawn(move || write_stream(&shared, &ww))
            .map_err(|e| Error::new(ErrorKind::Collector(e.to_string())))?;
        *w.thread.lock().unwrap_or_else(|p| p.into_inner()) = Some(t);
        workers.push(w);
        Ok(StreamId(id))
    }

    /// The longest `Block` timeout among the open streams (zero: none blocks).
    pub(crate) fn block_timeout(&self) -> Duration {
        let workers = self.shared.workers.lock().unwrap_or_else(|p| p.into_inner());
        workers
            .iter()
            .filter_map(|w| match w.backpressure {
                Backpressure::Block { timeout } => Some(timeout),
                Backpressure::Drop => None,
            })
            .max()
            .unwrap_or_default()
    }

    /// Closes a datastream: it writes the chunks already queued for it, then its trailer (with
    /// `stats`). Returns what it wrote and lost.
    pub(crate) fn close(&self, id: StreamId, stats: &Stats) -> Result<StreamStats, Error> {
        let w = {
            let mut workers = self.shared.workers.lock().unwrap_or_else(|p| p.into_inner());
            let k = workers
                .iter()
                .position(|w| w.id == id.0)
                .ok_or_else(|| Error::new(ErrorKind::NoSuchStream))?;
            workers.remove(k)
        };
        Ok(finish_worker(&w, trailer(stats)))
    }

    /// A datastream's figures so far.
    pub(crate) fn stats(&self, id: StreamId) -> Result<StreamStats, Error> {
        let workers = self.shared.workers.lock().unwrap_or_else(|p| p.into_inner());
        let w = workers.iter().find(|w| w.id == id.0).ok_or_else(|| Error::new(ErrorKind::NoSuchStream))?;
        let s = w.stream.lock().unwrap_or_else(|p| p.into_inner()).current_stats();
        Ok(s)
    }

    /// Lets the dispatcher queue every chunk given back, then finishes every stream with `stats`;
    /// returns each stream's figures. The caller has already taken every chunk back from the
    /// threads.
    pub(crate) fn finish(mut self, stats: Stats) -> Vec<(StreamId, StreamStats)> {
        // Release: the dispatcher's Acquire load then sees every chunk queued before.
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        let workers = std::mem::take(&mut *self.shared.workers.lock().unwrap_or_else(|p| p.into_inner()));
        let t = trailer(&stats);
        workers.iter().map(|w| (StreamId(w.id), finish_worker(w, t.clone()))).collect()
    }
}

/// Tells a stream's thread to finish after its queue, with `trailer`, and joins it.
fn finish_worker(w: &Worker, trailer: Trailer) -> StreamStats {
    *w.closing.lock().unwrap_or_else(|p| p.into_inner()) = Some(trailer);
    let t = w.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(t) = t {
        t.thread().unpark();
        let _ = t.join();
    }
    let s = w.stream.lock().unwrap_or_else(|p| p.into_inner()).current_stats();
    s
}

fn trailer(s: &Stats) -> Trailer {
    crate::trace_file::trailer_of(s)
}

/// What a datastream's thread is given to write: chunk `index`, whole (`upto` 0: given back, every
/// committed record not written yet), or a piece of it up to record `upto` (pinned meanwhile).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Job {
    index: u32,
    upto: u32,
}

impl Job {
    fn pack(self) -> u64 {
        u64::from(self.index) | (u64::from(self.upto) << 32)
    }
    fn unpack(v: u64) -> Job {
        Job { index: v as u32, upto: (v >> 32) as u32 }
    }
}

/// The stream of chunk `i`'s piece is done with it: the last one unpins the chunk.
fn unref_piece(shared: &Shared, i: u32) {
    // AcqRel: the last decrement sees every other stream's reads (Acquire), and `unpin`'s Release
    // orders them all before a later loan.
    if shared.piece_refs[i as usize].fetch_sub(1, Ordering::AcqRel) == 1 {
        shared.buf.get().chunk(i as usize).unpin();
    }
}

/// The stream of chunk `i` is done with it: the last one releases it to the pool.
fn unref(shared: &Shared, i: u32) {
    // AcqRel: the last decrement sees every other stream's reads of the chunk (Acquire), and
    // `release`'s Release store then orders them all before the next writer.
    if shared.refs[i as usize].fetch_sub(1, Ordering::AcqRel) == 1 {
        let buf = shared.buf.get();
        buf.release(buf.chunk(i as usize));
    }
}

/// The dispatcher's loop.
fn dispatch(shared: &Shared, log: &TraceLog) {
    let buf = shared.buf.get();
    let mut last_flush = Instant::now();
    let mut pieces = Pieces::default();
    loop {
        // Acquire: pairs with `finish`'s Release.
        let stopping = shared.stop.load(Ordering::Acquire);
        let mut moved = 0;
        {
            let workers = shared.workers.lock().unwrap_or_else(|p| p.into_inner());
            while let Some(i) = buf.pop_full_index() {
                moved += 1;
                if workers.is_empty() {
                    buf.release(buf.chunk(i as usize));
                    continue;
                }
                // Relaxed: the queues' push and pop order it for the stream threads.
                shared.refs[i as usize].store(workers.len() as u32, Ordering::Relaxed);
                pieces.sent.remove(&i);
                for w in workers.iter() {
                    // The queue holds at most one whole chunk and one piece per chunk: never full.
                    let pushed = w.queue.push(Job { index: i, upto: 0 }.pack());
                    debug_assert!(pushed.is_ok());
                }
                if moved % 256 == 0 {
                    break;
                }
            }
            if moved > 0 {
                for w in workers.iter() {
                    if let Some(t) = w.thread.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                        t.thread().unpark();
                    }
                }
            }
        }
        if stopping && moved == 0 {
            return;
        }
        if !stopping && last_flush.elapsed() >= FLUSH_PERIOD {
            pieces.flush(shared, log);
            last_flush = Instant::now();
        }
        if moved == 0 && !stopping {
            std::thread::park_timeout(Duration::from_millis(1));
        }
    }
}

/// The dispatcher's record of the pieces it sent, and of what each tenant held a period ago.
#[derive(Default)]
struct Pieces {
    /// Per chunk index: the loan stamp and the records up to which pieces were queued.
    sent: HashMap<u32, (u64, u32)>,
    /// Per tenant (address): its chunk (address) and committed count at the last flush.
    last: HashMap<usize, (usize, u32)>,
    held: Vec<(usize, usize)>,
}

impl Pieces {
    /// Queues, for every datastream, the events that have waited a whole period in a chunk that a
    /// thread still holds. The chunk is pinned until the last stream has written the piece. Takes
    /// no tenant lock: the writers never notice.
    fn flush(&mut self, shared: &Shared, log: &TraceLog) {
        let buf = shared.buf.get();
        self.held.clear();
        log.held_chunks(&mut self.held);
        let workers = shared.workers.lock().unwrap_or_else(|p| p.into_inner());
        let mut now = HashMap::with_capacity(self.held.len());
        for &(tenant, chunk) in &self.held {
            // SAFETY: a tenant's current chunk belongs to the running trace's buffer, which
            // outlives this thread; reading its committed count is an atomic load.
            let c = unsafe { &*(chunk as *const crate::buffer::TraceChunk) };
            let i = buf.index_of(c);
            let committed = c.committed();
            now.insert(tenant, (chunk, committed));
            let Some(&(then_chunk, then)) = self.last.get(&tenant) else { continue };
            // Relaxed: the piece counter is only ever changed by this thread upwards (from 0) and
            // by the streams downwards; a stale non-zero only delays the next piece by a period.
            let outstanding = shared.piece_refs[i as usize].load(Ordering::Relaxed) != 0;
            if then_chunk != chunk || then == 0 || workers.is_empty() || outstanding {
                continue;
            }
            let Some(p) = c.pin_committed() else { continue };
            let done = match self.sent.get(&i) {
                Some(&(loan, upto)) if loan == p.loan => upto as usize,
                _ => 0,
            };
            // Only what was committed a period ago has waited long enough; a chunk given back
            // meanwhile is on its way whole.
            if p.full || p.records <= done || (then as usize) <= done {
                c.unpin();
                continue;
            }
            self.sent.insert(i, (p.loan, p.records as u32));
            // Relaxed: the queues' push and pop order it for the stream threads.
            shared.piece_refs[i as usize].store(workers.len() as u32, Ordering::Relaxed);
            for w in workers.iter() {
                let pushed = w.queue.push(Job { index: i, upto: p.records as u32 }.pack());
                debug_assert!(pushed.is_ok());
                if let Some(t) = w.thread.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                    t.thread().unpark();
                }
            }
        }
        self.last = now;
    }
}

/// What a datastream's thread has written of a chunk that it was given in pieces: the loan, the
/// records written, and the thread whose events come next (a pool tenant switches writers).
#[derive(Clone, Copy)]
struct Written {
    loan: u64,
    upto: usize,
    tid: u32,
}

/// Writes one job for a datastream: records `from..to` of chunk `i` (the rest of it, for a whole
/// chunk), under the thread that wrote them.
fn write_job(
    shared: &Shared,
    w: &Worker,
    job: Job,
    table: &mut CallsiteTable,
    names: &mut ThreadNames,
    written: &mut HashMap<u32, Written>,
) {
    let chunk = shared.buf.get().chunk(job.index as usize);
    let loan = chunk.loan_stamp();
    let prior = written.get(&job.index).filter(|p| p.loan == loan).copied();
    let (from, tid) = prior.map_or((0, chunk.tid()), |p| (p.upto, p.tid));
    // SAFETY: a whole chunk is FULL and referenced by this stream (no loan takes it until every
    // stream given it has unreferenced it); a piece's chunk is pinned until every stream given it
    // is done, and `upto` is a count the dispatcher acquired before it queued the job (the queue's
    // push and pop order that for us). Either way no one writes the records read here.
    let records = unsafe {
        if job.upto == 0 {
            chunk.records()
        } else {
            chunk.prefix(job.upto as usize)
        }
    };
    let part = &records[from.min(records.len())..];
    if job.upto == 0 {
        written.remove(&job.index);
    } else {
        // The writer at the end of this piece: the last thread switch in it, or the same one.
        let mut next = tid;
        let mut k = 0;
        while let Some(r) = part.get(k) {
            if r.id == ID_THREAD_SWITCH {
                next = r.slots[0] as u32;
            }
            k += 1 + r.meta.continuation();
        }
        written.insert(job.index, Written { loan, upto: records.len(), tid: next });
    }
    if !part.is_empty() {
        let mut s = w.stream.lock().unwrap_or_else(|p| p.into_inner());
        s.write_chunk(&shared.header, table, names, tid, chunk.seq(), part);
    }
}

/// A datastream's thread: writes what is queued for it, flushes when the queue is empty, and
/// finishes when it is closed.
fn write_stream(shared: &Shared, w: &Worker) {
    let mut table = CallsiteTable::default();
    let mut names = ThreadNames::default();
    let mut written = HashMap::new();
    loop {
        let mut wrote = 0;
        while let Some(v) = w.queue.pop() {
            let job = Job::unpack(v);
            write_job(shared, w, job, &mut table, &mut names, &mut written);
            if job.upto == 0 {
                unref(shared, job.index);
            } else {
                unref_piece(shared, job.index);
            }
            wrote += 1;
            if wrote % 64 == 0 {
                w.stream.lock().unwrap_or_else(|p| p.into_inner()).flush();
            }
        }
        if wrote > 0 {
            w.stream.lock().unwrap_or_else(|p| p.into_inner()).flush();
        }
        let closing = w.closing.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(t) = closing {
            if w.queue.is_empty() {
                let mut s = w.stream.lock().unwrap_or_else(|p| p.into_inner());
                let stream = std::mem::replace(&mut *s, Stream::closed(w.id));
                *s = Stream::finished(stream.finish(&t));
                return;
            }
            // More came meanwhile: write it first.
            *w.closing.lock().unwrap_or_else(|p| p.into_inner()) = Some(t);
            continue;
        }
        if wrote == 0 {
            std::thread::park_timeout(Duration::from_millis(1));
        } else {
            // Let the dispatcher catch up on the periodic flush's chunks.
            std::thread::yield_now();
        }
    }
}

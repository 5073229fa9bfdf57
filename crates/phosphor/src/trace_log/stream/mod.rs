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
//! flush; the trailer comes when the stream is closed or the trace stops. A stream closed while the
//! trace runs gets first every event committed before the close: the chunks given back and not yet
//! dispatched, and the committed part of each chunk a thread still holds (pinned for it alone). A stream whose category
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
//!   count is an upper bound by at most one acknowledgement's worth, or by the chunks written
//!   since the stream's last flush when the stream compresses: see below.)
//!
//! Each stream compresses its blocks as its [`StreamConfig::compression`] says (default
//! [`DEFAULT_COMPRESSION`]), on its own thread. The writer groups the chunks written between two
//! flushes into compressed blocks and writes the group at the flush (or when it is full), so each
//! flush still leaves a readable file, and the bytes a recording server acknowledges still fall on
//! block boundaries. A chunk counts as acknowledged once the server holds the stream up to the
//! offset of the flush after it.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use phosphor_format::file::Compression;

use crate::error::Error;
use crate::registry::callsite::Callsite;
use crate::registry::category::CategoryFilter;

mod collector;
mod datastream;
#[cfg(feature = "otlp")]
mod otlp;

#[cfg(feature = "otlp")]
pub use otlp::OtlpSink;
/// The OTLP sink's options and selection rules (feature `otlp`).
#[cfg(feature = "otlp")]
pub use phosphor_otlp::{
    export::{Compression as OtlpCompression, Encoding as OtlpEncoding, ExportOptions, OtelEnv},
    forward::ForwardOptions,
    select::Selection,
};

pub(crate) use collector::Collector;

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

/// How a datastream compresses its blocks unless told otherwise ([`StreamConfig::compression`]).
/// Chosen for continuous tracing at 20 M events/s on 2 cores (BENCHMARKS.md, "Compression in
/// streams"): the stream's thread must compress as fast as the producers record.
pub const DEFAULT_COMPRESSION: Compression = Compression::Lz4;

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
    /// Spans posted to an OpenTelemetry collector over OTLP/HTTP (feature `otlp`); the figures
    /// are in [`StreamStats::otlp`].
    #[cfg(feature = "otlp")]
    Otlp(OtlpSink),
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sink::File(p) => write!(f, "File({})", p.display()),
            Sink::Tcp(a) => write!(f, "Tcp({a})"),
            Sink::Memory(_) => f.write_str("Memory"),
            Sink::Writer(_) => f.write_str("Writer"),
            #[cfg(feature = "otlp")]
            Sink::Otlp(o) => write!(f, "Otlp({})", o.export.endpoint),
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

/// A datastream to open on a streaming trace ([`TraceLog::open_stream`](crate::TraceLog::open_stream)).
#[derive(Debug)]
pub struct StreamConfig {
    pub(crate) sink: Sink,
    pub(crate) categories: CategoryFilter,
    pub(crate) backpressure: Backpressure,
    pub(crate) compression: Compression,
}

impl StreamConfig {
    /// Every category to `sink`, dropping (and counting) what does not fit, compressed with
    /// [`DEFAULT_COMPRESSION`].
    pub fn new(sink: Sink) -> StreamConfig {
        StreamConfig {
            sink,
            categories: CategoryFilter::default(),
            backpressure: Backpressure::Drop,
            compression: DEFAULT_COMPRESSION,
        }
    }

    /// How the stream's blocks are compressed (default [`DEFAULT_COMPRESSION`]). The stream's
    /// thread compresses, never a recording thread; a codec too slow for the event rate makes the
    /// stream fall behind, and the writers then drop (and count) events. Blocks are grouped
    /// between flushes, so every flush still leaves a readable file.
    /// [`Compression::None`] writes plain blocks, which readers of format 1.6 and older read.
    pub fn compression(mut self, compression: Compression) -> StreamConfig {
        self.compression = compression;
        self
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

/// A datastream's id, from [`TraceLog::open_stream`](crate::TraceLog::open_stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamId(pub(crate) u32);

/// What a datastream has written and lost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
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
    /// Connections the recording server refused or ended on purpose, saying why (TCP): too many
    /// connections, a limit passed, a stream idle too long. The reason is an error of the stream
    /// (`first_error` if it came first), and the stream waits the longest backoff before it
    /// connects again.
    pub server_ends: u64,
    /// The first error, if any (it is reported once, on standard error, when it happens).
    pub first_error: Option<String>,
    /// System context batches (one per collection period, see `TraceConfig::context_switches`)
    /// not written: the sink was down, or the stream was more than
    /// [`MAX_PENDING_SYSTEM`] batches behind.
    pub system_batches_dropped: u64,
    /// An OTLP stream's spans (`Sink::Otlp`, feature `otlp`); `None` for the other sinks.
    pub otlp: Option<OtlpStats>,
}

/// What an OTLP datastream made of its events and what became of the spans. Once the stream is
/// closed, every span sent ends in exactly one of `spans_exported`, `spans_dropped`,
/// `spans_rejected` and `spans_failed`. Events the stream itself lost are in [`StreamStats`] and
/// in the writers' counts, as for any sink.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OtlpStats {
    /// Spans made of the stream's events (before selection).
    pub spans_made: u64,
    /// Spans the selection rules left out.
    pub spans_unselected: u64,
    /// Spans left out by head sampling (the ratio, or an unsampled caller).
    pub spans_sampled_out: u64,
    /// Spans left out by the tail rules.
    pub spans_tail_dropped: u64,
    /// Spans handed to the exporter.
    pub spans_sent: u64,
    /// Spans the collector accepted.
    pub spans_exported: u64,
    /// Spans not queued for sending: the exporter's queue was full.
    pub spans_dropped: u64,
    /// Spans the collector refused (a final error status, or a partial success's rejected spans).
    pub spans_rejected: u64,
    /// Spans given up on: failing after every retry, or unsent at the shutdown deadline.
    pub spans_failed: u64,
    /// Requests posted, retries included.
    pub requests: u64,
    /// Requests that failed (connection errors and error statuses).
    pub requests_failed: u64,
    /// Requests posted again after a retryable failure.
    pub retries: u64,
    /// Of `spans_rejected`: spans too large for a request even trimmed.
    pub spans_too_large: u64,
    /// Spans whose long strings were cut to fit a request (`phosphor.trimmed_bytes`).
    pub spans_trimmed: u64,
    /// Requests split in two after a 413 (or a reset while sending a large body).
    pub requests_split: u64,
    /// Request bodies' bytes as on the wire (gzipped by default).
    pub bytes_sent: u64,
    /// Stream bytes not parsed: the stream was malformed (see `stream_error`).
    pub bytes_discarded: u64,
    /// The exporter's last error, naming the URL.
    pub last_error: Option<String>,
    /// Why the stream's parsing stopped early, with the byte offset.
    pub stream_error: Option<String>,
}

/// The most system context batches queued for one datastream (64 periods: 640 ms).
pub const MAX_PENDING_SYSTEM: usize = 64;

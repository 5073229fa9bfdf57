//! Live forwarding: a Phosphor trace file arriving as a byte stream in, batches of OTLP spans out.
//!
//! A [`Forwarder`] is a `Write + Send`: it takes a trace file's bytes as a datastream writes them
//! (or as `phosphor record` receives them on one connection), compressed groups included. Its
//! thread (`phosphor-otlp-parse`) reads them through a bounded pipe with `phosphor_format`'s
//! [`Reader`], pushes the events into an [`Assembler`] whose [`AssembleOptions::hold_ns`] is set,
//! and every [`ForwardOptions::drain_period`] moves the spans that are final into batches of at
//! most [`ForwardOptions::max_batch_spans`], each sent as one request to an
//! [`ExportHandle`] once full or [`ForwardOptions::max_delay`] old.
//! Neither the writer nor the parser waits on the network: the exporter's queue is bounded and
//! drops (and counts) what does not fit.
//!
//! A malformed stream stops the parsing of that stream: the error (naming the stream and the byte
//! offset) is kept in [`ForwardStats::error`], the spans made so far are still sent, and later
//! bytes are counted and thrown away. Memory is bounded by the pipe, the reader's own limits and
//! the assembler's open spans.
//!
//! Tail sampling ([`Selection::tail`](crate::select::TailRules)) needs whole trees, which the
//! assembler has anyway: a thread's tree is final once the thread is quiet for [`ForwardOptions::hold`].
//! The "slow or failing" rules then decide at once. "The slowest N per root name and minute"
//! holds at most N trees per root name (at most [`MAX_RANKED_NAMES`](crate::assemble::MAX_RANKED_NAMES)
//! names) per window, and a window's trees go on once trees starting a hold after its end have
//! come: memory is N × names × about two windows of trees, and the spans leave at most a minute
//! and a hold after they end.

use std::io::{BufReader, Write};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::resource::v1::Resource;
use phosphor_format::file::Reader;

use crate::assemble::{AssembleOptions, Assembler};
use crate::export::ExportHandle;
use crate::ids::GroupRoots;
use crate::pipe::{pipe, PipeWriter};
use crate::select::Selection;
use crate::Span;

/// How a [`Forwarder`] makes and batches spans.
#[derive(Clone, Debug)]
pub struct ForwardOptions {
    /// Which spans are sent (selection, head and tail sampling: the rules a conversion applies).
    pub selection: Selection,
    /// Which roots share a trace.
    pub group_roots: GroupRoots,
    /// How long (trace time) a finished span waits for its parent before it is sent as a root.
    pub hold: Duration,
    /// `service.name` of the resource (default: the traced process's name).
    pub service_name: Option<String>,
    /// The most spans in one request.
    pub max_batch_spans: usize,
    /// The longest a span waits for its batch to fill.
    pub max_delay: Duration,
    /// How often final spans are taken from the assembler.
    pub drain_period: Duration,
    /// The bytes written but not yet parsed, at most (the writer waits past it).
    pub pipe_bytes: usize,
}

impl Default for ForwardOptions {
    /// Every span, held 2 s, batches of 512 spans sent within 1 s, drained every 200 ms, a 4 MiB
    /// pipe.
    fn default() -> ForwardOptions {
        ForwardOptions {
            selection: Selection::default(),
            group_roots: GroupRoots::None,
            hold: Duration::from_secs(2),
            service_name: None,
            max_batch_spans: 512,
            max_delay: Duration::from_secs(1),
            drain_period: Duration::from_millis(200),
            pipe_bytes: 4 << 20,
        }
    }
}

/// What a [`Forwarder`] has done.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ForwardStats {
    /// Bytes written to the forwarder.
    pub bytes_in: u64,
    /// Bytes thrown away after the parsing stopped.
    pub bytes_discarded: u64,
    /// Events read.
    pub events: u64,
    /// Spans made (before selection).
    pub spans_made: u64,
    /// Spans the selection left out.
    pub spans_unselected: u64,
    /// Spans left out by head sampling.
    pub spans_sampled_out: u64,
    /// Spans left out by the tail rules.
    pub spans_tail_dropped: u64,
    /// Spans handed to the exporter (which counts what becomes of them).
    pub spans_sent: u64,
    /// Why the parsing stopped early, naming the stream and the byte offset.
    pub error: Option<String>,
}

#[derive(Default)]
struct Figures {
    stats: ForwardStats,
}

/// The assembler and the batch being filled, shared by the parsing loop and the pipe's tick (both
/// on the parsing thread: the lock is never contended except by [`Forwarder::stats`]).
struct Batcher {
    assembler: Assembler,
    resource: Resource,
    pending: Vec<Span>,
    pending_since: Option<Instant>,
    /// When the last tick ran: the wall time since goes to the assembler as idle time.
    last_tick: Instant,
    options: ForwardOptions,
    export: ExportHandle,
    figures: Arc<Mutex<Figures>>,
}

impl Batcher {
    /// Takes the final spans; sends full batches, and the rest once it is `max_delay` old.
    fn tick(&mut self) {
        // A program that stops recording must not keep its last spans held: trace time goes on
        // with wall time while no event comes (the assembler forgets it at the next event).
        let now = Instant::now();
        let idle = now.duration_since(self.last_tick);
        self.last_tick = now;
        self.assembler.idle(u64::try_from(idle.as_nanos()).unwrap_or(u64::MAX));
        let before = self.pending.len();
        self.assembler.drain(&mut self.pending);
        if self.pending.len() > before && self.pending_since.is_none() {
            self.pending_since = Some(Instant::now());
        }
        self.send_batches(false);
        self.update_figures();
    }

    fn finish(&mut self) {
        self.assembler.finish(&mut self.pending);
        self.send_batches(true);
        self.update_figures();
    }

    fn send_batches(&mut self, all: bool) {
        let max = self.options.max_batch_spans.max(1);
        while self.pending.len() >= max {
            let rest = self.pending.split_off(max);
            let batch = std::mem::replace(&mut self.pending, rest);
            self.send(batch);
        }
        let due = self.pending_since.is_some_and(|t| t.elapsed() >= self.options.max_delay);
        if !self.pending.is_empty() && (all || due) {
            let batch = std::mem::take(&mut self.pending);
            self.send(batch);
        }
        if self.pending.is_empty() {
            self.pending_since = None;
        }
    }

    fn send(&mut self, spans: Vec<Span>) {
        let n = spans.len() as u64;
        let mut request = crate::request::request(self.resource.clone(), spans);
        self.export.send(&request, n);
        // Encoded: the spans' strings and vectors serve the next ones.
        for r in &mut request.resource_spans {
            for s in &mut r.scope_spans {
                self.assembler.recycle(&mut s.spans);
            }
        }
        lock(&self.figures).stats.spans_sent += n;
    }

    fn update_figures(&self) {
        let a = self.assembler.stats();
        let mut f = lock(&self.figures);
        f.stats.spans_made = a.spans;
        f.stats.spans_unselected = a.spans_unselected;
        f.stats.spans_sampled_out = a.spans_sampled_out;
        f.stats.spans_tail_dropped = a.spans_tail_dropped;
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Takes a trace file as a byte stream and forwards its spans (see the module's documentation).
/// Dropping it is [`Forwarder::finish`].
pub struct Forwarder {
    pipe: PipeWriter,
    thread: Option<JoinHandle<()>>,
    figures: Arc<Mutex<Figures>>,
}

/// Reads a [`Forwarder`]'s figures from elsewhere (while another thread owns it as its writer).
#[derive(Clone)]
pub struct ForwardStatsHandle {
    pipe: PipeWriter,
    figures: Arc<Mutex<Figures>>,
}

impl std::fmt::Debug for ForwardStatsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ForwardStatsHandle")
    }
}

impl ForwardStatsHandle {
    /// The figures so far.
    pub fn stats(&self) -> ForwardStats {
        let mut s = lock(&self.figures).stats.clone();
        s.bytes_discarded = self.pipe.discarded();
        s
    }
}

impl std::fmt::Debug for Forwarder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Forwarder")
    }
}

impl Forwarder {
    /// A forwarder of the stream called `name` (in errors: a peer address, a datastream), sending
    /// its spans to `export`.
    pub fn new(
        name: impl Into<String>,
        options: ForwardOptions,
        export: ExportHandle,
    ) -> std::io::Result<Forwarder> {
        let name = name.into();
        let figures = Arc::new(Mutex::new(Figures::default()));
        // Empty until the header is read; the tick does nothing meanwhile.
        let batcher: Arc<Mutex<Option<Batcher>>> = Arc::new(Mutex::new(None));
        let tick_batcher = batcher.clone();
        let tick = Box::new(move || {
            if let Some(b) = lock(&tick_batcher).as_mut() {
                b.tick();
            }
        });
        let (writer, reader) = pipe(options.pipe_bytes, options.drain_period, tick);
        let thread_figures = figures.clone();
        let thread = std::thread::Builder::new().name("phosphor-otlp-parse".into()).spawn(move || {
            let mut reader = match Reader::new(BufReader::with_capacity(64 << 10, reader)) {
                Ok(r) => r,
                Err(e) => {
                    lock(&thread_figures).stats.error = Some(format!("{name}: {e}"));
                    return;
                }
            };
            let header = reader.header().clone();
            let assemble = AssembleOptions {
                selection: options.selection.clone(),
                hold_ns: Some(u64::try_from(options.hold.as_nanos()).unwrap_or(u64::MAX)),
                group_roots: options.group_roots,
            };
            *lock(&batcher) = Some(Batcher {
                assembler: Assembler::new(&header, assemble),
                resource: crate::request::resource(&header, options.service_name.as_deref()),
                pending: Vec::new(),
                pending_since: None,
                last_tick: Instant::now(),
                options,
                export,
                figures: thread_figures.clone(),
            });
            let mut events = 0u64;
            let read = reader.for_each_event(|e| {
                events += 1;
                if let Some(b) = lock(&batcher).as_mut() {
                    b.assembler.push(e);
                }
            });
            lock(&thread_figures).stats.events = events;
            if let Err(e) = read {
                lock(&thread_figures).stats.error = Some(format!("{name}: {e}"));
            }
            // The spans made so far are good, whether the stream ended well or not.
            if let Some(b) = lock(&batcher).as_mut() {
                b.finish();
            }
        })?;
        Ok(Forwarder { pipe: writer, thread: Some(thread), figures })
    }

    /// The figures so far.
    pub fn stats(&self) -> ForwardStats {
        self.stats_handle().stats()
    }

    /// A handle to read the figures with, from any thread.
    pub fn stats_handle(&self) -> ForwardStatsHandle {
        ForwardStatsHandle { pipe: self.pipe.clone(), figures: self.figures.clone() }
    }

    /// The end of the stream: waits for the bytes written to be parsed and every span made to
    /// be handed to the exporter, and returns the figures.
    pub fn finish(mut self) -> ForwardStats {
        self.end();
        self.stats()
    }

    fn end(&mut self) {
        self.pipe.close();
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                let mut f = lock(&self.figures);
                if f.stats.error.is_none() {
                    f.stats.error = Some("the parsing thread panicked".into());
                }
            }
        }
    }
}

impl Write for Forwarder {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let n = self.pipe.write(data)?;
        lock(&self.figures).stats.bytes_in += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.end();
    }
}

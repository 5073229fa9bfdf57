//! The OTLP/HTTP exporter: batches of spans posted to `{endpoint}/v1/traces` from a thread of its
//! own.
//!
//! [`Exporter::start`] starts the sender thread (`phosphor-otlp-export`); [`ExportHandle::send`]
//! queues one request and never waits: the queue holds at most
//! [`ExportOptions::queue_batches`] requests, and a request that finds it full is dropped and its
//! spans counted ([`ExportStats::spans_dropped`]). A request whose encoding passes
//! [`ExportOptions::max_request_bytes`] is queued as pieces that fit, a span too large alone
//! trimmed ([`crate::bound`]). The thread posts each request as protobuf
//! (`Content-Type: application/x-protobuf`, the OTLP/HTTP binary encoding; or OTLP JSON), gzipped
//! by default (`Content-Encoding: gzip`), and retries, with exponential backoff and jitter, on
//! connection errors and on 429, 502, 503 and 504 (waiting as long as `Retry-After` says when the
//! server says it), as the OTLP specification asks. A 413, or a connection reset while a large
//! body is sent (what a collector that refuses a body without reading it causes), splits the
//! request in halves, down to one span, which is trimmed and then rejected as too large. Another
//! 4xx or 5xx is final: the spans are counted as rejected, as are the `rejected_spans` of a
//! partial success. A request still failing after [`ExportOptions::max_retries`] retries, or
//! still queued when the shutdown deadline passes, is counted as failed. So every span handed to
//! the exporter ends in exactly one of exported, dropped, rejected and failed.
//!
//! **Shutdown.** [`Exporter::shutdown`] (or drop) gives the thread
//! [`ExportOptions::shutdown_deadline`]: each request's timeout is cut to what is left of it; a
//! request in backoff (even a `Retry-After`) waits no later than the *last call*, the final
//! quarter of the deadline (at most 1 s), after which every request still queued gets exactly one
//! more attempt. A collector that does not answer at all costs at most the deadline and
//! [`SHUTDOWN_MARGIN`]: past it, the thread is left behind and what it holds counted as failed.

mod env;
mod http;
mod sender;

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};

use crate::ExportTraceServiceRequest;
pub use env::{parse_header_lines, parse_pairs, EnvError, OtelEnv, DEFAULT_ENDPOINT};

/// How long [`Exporter::shutdown`] waits past the deadline for the thread before it leaves it.
pub const SHUTDOWN_MARGIN: Duration = Duration::from_secs(1);

/// The default bound of one request's encoding ([`ExportOptions::max_request_bytes`]).
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1 << 20;

/// How a request's body is encoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    /// `application/x-protobuf`: OTLP/HTTP's binary encoding.
    #[default]
    Protobuf,
    /// `application/json`: OTLP's JSON mapping (ids as hex strings, enums as integers, 64-bit
    /// integers as decimal strings).
    Json,
}

/// How a request's body is compressed on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed.
    None,
    /// `Content-Encoding: gzip` (the OTLP/HTTP standard encoding), at level 1.
    #[default]
    Gzip,
}

/// Where and how an [`Exporter`] posts its requests.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// The collector's base URL (`http://host:4318`); `/v1/traces` is added unless the URL ends
    /// with it already or `signal_path` is false. Plain HTTP only: put a collector next to the
    /// program for TLS.
    pub endpoint: String,
    /// Whether `/v1/traces` is added to `endpoint` (false: the URL is used as it is, as
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is).
    pub signal_path: bool,
    /// Headers added to every request (authentication, tenant).
    pub headers: Vec<(String, String)>,
    /// Attributes added to every request's resources (`OTEL_RESOURCE_ATTRIBUTES`), replacing one
    /// of the same key. Empty by default; when not, each request is copied to add them.
    pub resource_attributes: Vec<(String, String)>,
    /// The most requests waiting to be sent.
    pub queue_batches: usize,
    /// Requests posted at once, each by a thread of its own (a collector takes concurrent
    /// requests; one sender alone waits while the collector decodes).
    pub senders: usize,
    /// How long one request may take in all (connection included).
    pub timeout: Duration,
    /// How long the connection may take.
    pub connect_timeout: Duration,
    /// Retries of one request before its spans count as failed.
    pub max_retries: u32,
    /// The first backoff; each retry doubles it, up to `backoff_max`.
    pub backoff_initial: Duration,
    /// The longest backoff, and the longest `Retry-After` honoured.
    pub backoff_max: Duration,
    /// How long [`Exporter::shutdown`] goes on sending what is queued.
    pub shutdown_deadline: Duration,
    /// The largest request body before compression, in bytes: larger requests are split, a
    /// larger span trimmed.
    pub max_request_bytes: usize,
    /// Protobuf (default) or JSON.
    pub encoding: Encoding,
    /// Gzip (default) or none.
    pub compression: Compression,
}

impl ExportOptions {
    /// The defaults for `endpoint`: 64 queued requests, 2 senders, 10 s per request (5 s to connect), 8
    /// retries from 100 ms to 10 s, 5 s to flush at shutdown, requests of at most 1 MiB
    /// (before compression), protobuf, gzip.
    pub fn new(endpoint: impl Into<String>) -> ExportOptions {
        ExportOptions {
            endpoint: endpoint.into(),
            signal_path: true,
            headers: Vec::new(),
            resource_attributes: Vec::new(),
            queue_batches: 64,
            senders: 2,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            max_retries: 8,
            backoff_initial: Duration::from_millis(100),
            backoff_max: Duration::from_secs(10),
            shutdown_deadline: Duration::from_secs(5),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            encoding: Encoding::Protobuf,
            compression: Compression::Gzip,
        }
    }

    /// The URL requests are posted to.
    pub fn traces_url(&self) -> String {
        let base = self.endpoint.trim_end_matches('/');
        if !self.signal_path || base.ends_with("/v1/traces") {
            base.to_string()
        } else {
            format!("{base}/v1/traces")
        }
    }
}

/// What an exporter has done. Every span sent to it ends in exactly one of `spans_exported`,
/// `spans_dropped`, `spans_rejected` and `spans_failed` (or is still queued).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Spans the collector accepted.
    pub spans_exported: u64,
    /// Spans not queued: the queue was full.
    pub spans_dropped: u64,
    /// Spans the collector refused: a final error status, or a partial success's
    /// `rejected_spans`; and spans too large even trimmed (`spans_too_large`).
    pub spans_rejected: u64,
    /// Spans given up on: still failing after every retry, or still queued at the shutdown
    /// deadline.
    pub spans_failed: u64,
    /// Of `spans_rejected`: spans too large to send even trimmed.
    pub spans_too_large: u64,
    /// Spans whose strings (or last span events) were cut to fit a request; counted again if
    /// cut again after a 413.
    pub spans_trimmed: u64,
    /// Bytes cut from them.
    pub bytes_trimmed: u64,
    /// Requests posted (each retry is one more).
    pub requests: u64,
    /// Requests that did not succeed (connection errors and error statuses).
    pub requests_failed: u64,
    /// Requests posted again after a retryable failure.
    pub retries: u64,
    /// Requests split in two after a 413 or a connection reset while sending a large body.
    pub requests_split: u64,
    /// Bytes of request bodies posted, as on the wire (compressed).
    pub bytes_sent: u64,
    /// The same bodies before compression.
    pub bytes_encoded: u64,
    /// The last error, naming the URL.
    pub last_error: Option<String>,
}

/// What became of the spans one [`ExportHandle`] (made by [`ExportHandle::tallied`]) sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Accepted by the collector (delivered).
    pub exported: u64,
    /// Not queued: the queue was full.
    pub dropped: u64,
    /// Refused by the collector, or too large.
    pub rejected: u64,
    /// Given up on.
    pub failed: u64,
    /// Sent to the handle in all (the rest are still queued or being sent).
    pub sent: u64,
}

/// A bad [`ExportOptions`].
#[derive(Debug, thiserror::Error)]
#[error("OTLP endpoint {endpoint:?}: {why}")]
pub struct ExportError {
    endpoint: String,
    why: &'static str,
}

type TallyCell = Arc<Mutex<Tally>>;

struct Batch {
    /// Encoded, not compressed.
    body: Vec<u8>,
    spans: u64,
    tally: Option<TallyCell>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Batch>,
    /// Set by shutdown: send what is queued until then, then stop.
    deadline: Option<Instant>,
    stats: ExportStats,
    /// The spans of the batch each sender thread is sending, and whose they are.
    in_flight: Vec<Option<(u64, Option<TallyCell>)>>,
    /// Sender threads not yet returned.
    running: usize,
    /// Shutdown stopped waiting for the thread: it counts nothing more.
    abandoned: bool,
}

impl State {
    /// Counts what became of `spans` spans of one batch (none once the thread is abandoned).
    fn settle(&mut self, tally: Option<&TallyCell>, exported: u64, rejected: u64, failed: u64) {
        if self.abandoned {
            return;
        }
        self.stats.spans_exported += exported;
        self.stats.spans_rejected += rejected;
        self.stats.spans_failed += failed;
        if let Some(t) = tally {
            let mut t = lock(t);
            t.exported += exported;
            t.rejected += rejected;
            t.failed += failed;
        }
    }
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when a batch is queued, the shutdown begins or the thread returns.
    wake: Condvar,
    capacity: usize,
    encoding: Encoding,
    max_bytes: usize,
    resource_attributes: Vec<KeyValue>,
    /// The URL posted to, for errors.
    url: String,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A cheap handle that queues requests for an [`Exporter`]'s thread.
#[derive(Clone)]
pub struct ExportHandle {
    shared: Arc<Shared>,
    tally: Option<TallyCell>,
}

impl std::fmt::Debug for ExportHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExportHandle")
    }
}

impl ExportHandle {
    /// Queues `request` (which holds `spans` spans) without waiting. `false`: the queue was full
    /// or the exporter is shutting down, and the spans are counted as dropped. A request larger
    /// than [`ExportOptions::max_request_bytes`] is queued as pieces (all of them, even past the
    /// queue's bound: the bound counts requests as they were sent).
    pub fn send(&self, request: &ExportTraceServiceRequest, spans: u64) -> bool {
        if spans == 0 {
            return true;
        }
        let sh = &self.shared;
        if let Some(t) = &self.tally {
            lock(t).sent += spans;
        }
        let full = |s: &State| s.queue.len() >= sh.capacity || s.deadline.is_some();
        if full(&sh.lock()) {
            // Not encoded for nothing.
            return self.drop_spans(spans);
        }
        let with_attributes;
        let request = if sh.resource_attributes.is_empty() {
            request
        } else {
            with_attributes = add_attributes(request, &sh.resource_attributes);
            &with_attributes
        };
        let body = crate::bound::encode(request, sh.encoding);
        let bounded = crate::bound::split(request, body, spans, sh.max_bytes, sh.encoding);
        let mut s = sh.lock();
        s.stats.spans_trimmed += bounded.spans_trimmed;
        s.stats.bytes_trimmed += bounded.bytes_trimmed;
        if bounded.too_large > 0 {
            s.stats.spans_too_large += bounded.too_large;
            s.settle(self.tally.as_ref(), 0, bounded.too_large, 0);
            s.stats.last_error = Some(format!(
                "a span of {} bytes is too large for a request of at most {} bytes even trimmed: rejected",
                bounded.too_large_bytes, sh.max_bytes
            ));
        }
        if full(&s) {
            drop(s);
            return self.drop_spans(spans - bounded.too_large);
        }
        for (body, spans) in bounded.pieces {
            s.queue.push_back(Batch { body, spans, tally: self.tally.clone() });
        }
        drop(s);
        sh.wake.notify_all();
        true
    }

    fn drop_spans(&self, spans: u64) -> bool {
        let mut s = self.shared.lock();
        s.stats.spans_dropped += spans;
        if let Some(t) = &self.tally {
            lock(t).dropped += spans;
        }
        false
    }

    /// A handle to the same exporter that also counts what becomes of the spans sent through
    /// it (and its clones): a connection's share.
    pub fn tallied(&self) -> ExportHandle {
        ExportHandle { shared: self.shared.clone(), tally: Some(Arc::default()) }
    }

    /// What became of the spans sent through this handle (zero for a handle not
    /// [`tallied`](Self::tallied)).
    pub fn tally(&self) -> Tally {
        self.tally.as_ref().map(|t| lock(t).clone()).unwrap_or_default()
    }

    /// The figures so far.
    pub fn stats(&self) -> ExportStats {
        self.shared.lock().stats.clone()
    }
}

/// `request` with `attributes` added to each resource (replacing those of the same key).
fn add_attributes(request: &ExportTraceServiceRequest, attributes: &[KeyValue]) -> ExportTraceServiceRequest {
    let mut r = request.clone();
    for rs in &mut r.resource_spans {
        let resource = rs.resource.get_or_insert_with(Default::default);
        resource.attributes.retain(|kv| !attributes.iter().any(|a| a.key == kv.key));
        resource.attributes.extend(attributes.iter().cloned());
    }
    r
}

/// The sender thread and its queue; [`Exporter::shutdown`] (or drop) flushes with a deadline.
pub struct Exporter {
    handle: ExportHandle,
    threads: Vec<JoinHandle<()>>,
    shutdown_deadline: Duration,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Exporter")
    }
}

impl Exporter {
    /// Starts the sender thread.
    pub fn start(options: ExportOptions) -> Result<Exporter, ExportError> {
        let bad = |why| ExportError { endpoint: options.endpoint.clone(), why };
        if options.endpoint.starts_with("https://") {
            return Err(bad("https is not built in: post to a local collector over http"));
        }
        if !options.endpoint.starts_with("http://") || options.endpoint.len() <= "http://".len() {
            return Err(bad("not an http:// URL"));
        }
        if options.queue_batches == 0 {
            return Err(bad("the queue must hold at least one request"));
        }
        if options.senders == 0 {
            return Err(bad("at least one sender"));
        }
        if options.max_request_bytes < 1024 {
            return Err(bad("a request must be allowed at least 1024 bytes"));
        }
        let text = |k: &String, v: &String| KeyValue {
            key: k.clone(),
            value: Some(AnyValue { value: Some(any_value::Value::StringValue(v.clone())) }),
            ..KeyValue::default()
        };
        let state =
            State { in_flight: vec![None; options.senders], running: options.senders, ..State::default() };
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            wake: Condvar::new(),
            capacity: options.queue_batches,
            encoding: options.encoding,
            max_bytes: options.max_request_bytes,
            resource_attributes: options.resource_attributes.iter().map(|(k, v)| text(k, v)).collect(),
            url: options.traces_url(),
        });
        let handle = ExportHandle { shared: shared.clone(), tally: None };
        let shutdown_deadline = options.shutdown_deadline;
        let mut threads = Vec::new();
        let senders = options.senders;
        for id in 0..senders {
            let (options, shared) = (options.clone(), shared.clone());
            let thread = std::thread::Builder::new()
                .name("phosphor-otlp-export".into())
                .spawn(move || sender::Sender::new(id, options, shared).run());
            match thread {
                Ok(t) => threads.push(t),
                Err(_) => {
                    // The threads started see the shutdown and return.
                    let mut e = Exporter { handle, threads, shutdown_deadline };
                    e.handle.shared.lock().running -= senders - id;
                    e.stop();
                    return Err(ExportError { endpoint: String::new(), why: "could not start its threads" });
                }
            }
        }
        Ok(Exporter { handle, threads, shutdown_deadline })
    }

    /// A handle to queue requests with.
    pub fn handle(&self) -> ExportHandle {
        self.handle.clone()
    }

    /// The figures so far.
    pub fn stats(&self) -> ExportStats {
        self.handle.stats()
    }

    /// Sends what is queued for up to the shutdown deadline, counts the rest as failed, stops
    /// the thread (or leaves it, [`SHUTDOWN_MARGIN`] past the deadline) and returns the figures.
    pub fn shutdown(mut self) -> ExportStats {
        self.stop();
        self.stats()
    }

    fn stop(&mut self) {
        if self.threads.is_empty() {
            return;
        }
        let threads = std::mem::take(&mut self.threads);
        let sh = &self.handle.shared;
        let give_up = Instant::now() + self.shutdown_deadline + SHUTDOWN_MARGIN;
        let mut s = sh.lock();
        s.deadline = Some(Instant::now() + self.shutdown_deadline);
        sh.wake.notify_all();
        while s.running > 0 {
            let left = give_up.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            s = sh.wake.wait_timeout(s, left).unwrap_or_else(|p| p.into_inner()).0;
        }
        if s.running == 0 {
            drop(s);
            for t in threads {
                let _ = t.join();
            }
            return;
        }
        // A request the collector never answers (or a resolver that hangs): leave the thread,
        // which counts nothing more, and count what it holds as failed.
        let queued: Vec<(u64, Option<TallyCell>)> = s.queue.drain(..).map(|b| (b.spans, b.tally)).collect();
        let in_flight: Vec<_> = s.in_flight.iter_mut().filter_map(Option::take).collect();
        for (spans, tally) in queued.into_iter().chain(in_flight) {
            s.settle(tally.as_ref(), 0, 0, spans);
        }
        s.abandoned = true;
        s.stats.last_error = Some(format!(
            "{}: no answer within the shutdown deadline ({:?}): what was unsent counted as failed",
            sh.url, self.shutdown_deadline
        ));
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop();
    }
}

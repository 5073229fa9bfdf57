//! The OTLP/HTTP exporter: batches of spans posted to `{endpoint}/v1/traces` from a thread of its
//! own.
//!
//! [`Exporter::start`] starts the sender thread (`phosphor-otlp-export`); [`ExportHandle::send`]
//! queues one request and never waits: the queue holds at most
//! [`ExportOptions::queue_batches`] requests, and a request that finds it full is dropped and its
//! spans counted ([`ExportStats::spans_dropped`]). The thread posts each request as protobuf
//! (`Content-Type: application/x-protobuf`, the OTLP/HTTP binary encoding) and retries, with
//! exponential backoff and jitter, on connection errors and on 429, 502, 503 and 504 (waiting as
//! long as `Retry-After` says when the server says it), as the OTLP specification asks. Another
//! 4xx or 5xx is final: the spans are counted as rejected, as are the `rejected_spans` of a
//! partial success. A request still failing after [`ExportOptions::max_retries`] retries, or
//! still queued when the shutdown deadline passes, is counted as failed. So every span handed to
//! the exporter ends in exactly one of exported, dropped, rejected and failed.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use prost::Message;

use crate::ExportTraceServiceRequest;

/// Where and how an [`Exporter`] posts its requests.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// The collector's base URL (`http://host:4318`); `/v1/traces` is added unless the URL ends
    /// with it already. Plain HTTP only: put a collector next to the program for TLS.
    pub endpoint: String,
    /// Headers added to every request (authentication, tenant).
    pub headers: Vec<(String, String)>,
    /// The most requests waiting to be sent.
    pub queue_batches: usize,
    /// How long one request may take (connection included).
    pub timeout: Duration,
    /// Retries of one request before its spans count as failed.
    pub max_retries: u32,
    /// The first backoff; each retry doubles it, up to `backoff_max`.
    pub backoff_initial: Duration,
    /// The longest backoff, and the longest `Retry-After` honoured.
    pub backoff_max: Duration,
    /// How long [`Exporter::shutdown`] goes on sending what is queued.
    pub shutdown_deadline: Duration,
}

impl ExportOptions {
    /// The defaults for `endpoint`: 64 queued requests, 10 s per request, 8 retries from 100 ms
    /// to 10 s, 5 s to flush at shutdown.
    pub fn new(endpoint: impl Into<String>) -> ExportOptions {
        ExportOptions {
            endpoint: endpoint.into(),
            headers: Vec::new(),
            queue_batches: 64,
            timeout: Duration::from_secs(10),
            max_retries: 8,
            backoff_initial: Duration::from_millis(100),
            backoff_max: Duration::from_secs(10),
            shutdown_deadline: Duration::from_secs(5),
        }
    }

    /// The URL requests are posted to.
    pub fn traces_url(&self) -> String {
        let base = self.endpoint.trim_end_matches('/');
        if base.ends_with("/v1/traces") {
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
    /// `rejected_spans`.
    pub spans_rejected: u64,
    /// Spans given up on: still failing after every retry, or still queued at the shutdown
    /// deadline.
    pub spans_failed: u64,
    /// Requests posted (each retry is one more).
    pub requests: u64,
    /// Requests that did not succeed (connection errors and error statuses).
    pub requests_failed: u64,
    /// Requests posted again after a retryable failure.
    pub retries: u64,
    /// The last error, naming the URL.
    pub last_error: Option<String>,
}

/// A bad [`ExportOptions`].
#[derive(Debug, thiserror::Error)]
#[error("OTLP endpoint {endpoint:?}: {why}")]
pub struct ExportError {
    endpoint: String,
    why: &'static str,
}

struct Batch {
    body: Vec<u8>,
    spans: u64,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Batch>,
    /// Set by shutdown: send what is queued until then, then stop.
    deadline: Option<Instant>,
    stats: ExportStats,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when a batch is queued or the shutdown begins.
    wake: Condvar,
    capacity: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A cheap handle that queues requests for an [`Exporter`]'s thread.
#[derive(Clone)]
pub struct ExportHandle(Arc<Shared>);

impl std::fmt::Debug for ExportHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExportHandle")
    }
}

impl ExportHandle {
    /// Queues `request` (which holds `spans` spans) without waiting. `false`: the queue was full
    /// or the exporter is shutting down, and the spans are counted as dropped.
    pub fn send(&self, request: &ExportTraceServiceRequest, spans: u64) -> bool {
        if spans == 0 {
            return true;
        }
        let mut s = self.0.lock();
        if s.queue.len() >= self.0.capacity || s.deadline.is_some() {
            s.stats.spans_dropped += spans;
            return false;
        }
        s.queue.push_back(Batch { body: request.encode_to_vec(), spans });
        drop(s);
        self.0.wake.notify_all();
        true
    }

    /// The figures so far.
    pub fn stats(&self) -> ExportStats {
        self.0.lock().stats.clone()
    }
}

/// The sender thread and its queue; [`Exporter::shutdown`] (or drop) flushes with a deadline.
pub struct Exporter {
    handle: ExportHandle,
    thread: Option<JoinHandle<()>>,
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
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            capacity: options.queue_batches,
        });
        let handle = ExportHandle(shared.clone());
        let shutdown_deadline = options.shutdown_deadline;
        let thread = std::thread::Builder::new()
            .name("phosphor-otlp-export".into())
            .spawn(move || Sender::new(options, shared).run())
            .map_err(|_| ExportError { endpoint: String::new(), why: "could not start its thread" })?;
        Ok(Exporter { handle, thread: Some(thread), shutdown_deadline })
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
    /// the thread and returns the figures.
    pub fn shutdown(mut self) -> ExportStats {
        self.stop();
        self.stats()
    }

    fn stop(&mut self) {
        let Some(thread) = self.thread.take() else { return };
        self.handle.0.lock().deadline = Some(Instant::now() + self.shutdown_deadline);
        self.handle.0.wake.notify_all();
        let _ = thread.join();
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How one post ended.
enum Outcome {
    /// Accepted; this many spans rejected by a partial success.
    Done { rejected: u64 },
    /// Worth another try, after at least this long when the server said so.
    Retry { after: Option<Duration>, error: String },
    /// Final.
    Rejected(String),
}

struct Sender {
    options: ExportOptions,
    url: String,
    agent: ureq::Agent,
    shared: Arc<Shared>,
    rng: u64,
}

impl Sender {
    fn new(options: ExportOptions, shared: Arc<Shared>) -> Sender {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(options.timeout))
            .build()
            .into();
        // Jitter only: any seed that differs between processes will do.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id()).rotate_left(32);
        Sender { url: options.traces_url(), options, agent, shared, rng: seed | 1 }
    }

    fn run(mut self) {
        loop {
            let batch = {
                let mut s = self.shared.lock();
                loop {
                    if let Some(b) = s.queue.pop_front() {
                        break b;
                    }
                    if s.deadline.is_some() {
                        return;
                    }
                    s = self.shared.wake.wait(s).unwrap_or_else(|p| p.into_inner());
                }
            };
            self.deliver(batch);
        }
    }

    /// Posts one batch until it succeeds, is refused, runs out of retries or of time.
    fn deliver(&mut self, batch: Batch) {
        let mut attempt = 0u32;
        loop {
            if self.past_deadline() {
                let mut s = self.shared.lock();
                s.stats.spans_failed += batch.spans;
                if s.stats.last_error.is_none() {
                    s.stats.last_error = Some(format!("{}: the shutdown deadline passed", self.url));
                }
                return;
            }
            let outcome = self.post(&batch.body);
            let mut s = self.shared.lock();
            s.stats.requests += 1;
            match outcome {
                Outcome::Done { rejected } => {
                    let rejected = rejected.min(batch.spans);
                    s.stats.spans_rejected += rejected;
                    s.stats.spans_exported += batch.spans - rejected;
                    return;
                }
                Outcome::Rejected(e) => {
                    s.stats.requests_failed += 1;
                    s.stats.spans_rejected += batch.spans;
                    s.stats.last_error = Some(format!("{}: {e}", self.url));
                    return;
                }
                Outcome::Retry { after, error } => {
                    s.stats.requests_failed += 1;
                    s.stats.last_error = Some(format!("{}: {error}", self.url));
                    if attempt >= self.options.max_retries {
                        s.stats.spans_failed += batch.spans;
                        return;
                    }
                    s.stats.retries += 1;
                    drop(s);
                    let wait = self.backoff(attempt, after);
                    self.sleep(wait);
                    attempt += 1;
                }
            }
        }
    }

    fn past_deadline(&self) -> bool {
        self.shared.lock().deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Waits `d`, or less when the shutdown deadline comes first.
    fn sleep(&self, d: Duration) {
        let until = Instant::now() + d;
        let mut s = self.shared.lock();
        loop {
            let end = s.deadline.map_or(until, |dl| dl.min(until));
            let now = Instant::now();
            if now >= end {
                return;
            }
            s = self.shared.wake.wait_timeout(s, end - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// The backoff before retry `attempt` (0 first): the server's `Retry-After` when given, else
    /// the exponential delay with "equal jitter" (between half and all of it).
    fn backoff(&mut self, attempt: u32, after: Option<Duration>) -> Duration {
        if let Some(a) = after {
            return a.min(self.options.backoff_max);
        }
        let base = self
            .options
            .backoff_initial
            .saturating_mul(1u32 << attempt.min(20))
            .min(self.options.backoff_max);
        // xorshift64: jitter needs no more.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let half = base / 2;
        let nanos = half.as_nanos().max(1) as u64;
        half + Duration::from_nanos(self.rng % nanos)
    }

    fn post(&self, body: &[u8]) -> Outcome {
        let mut req = self.agent.post(&self.url).header("Content-Type", "application/x-protobuf");
        for (k, v) in &self.options.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let mut resp = match req.send(body) {
            Ok(r) => r,
            Err(e) => return Outcome::Retry { after: None, error: e.to_string() },
        };
        let status = resp.status().as_u16();
        match status {
            200..=299 => {
                // A bounded read: a hostile server cannot make us hold more than this.
                let bytes = resp.body_mut().with_config().limit(1 << 20).read_to_vec().unwrap_or_default();
                let rejected = ExportTraceServiceResponse::decode(&bytes[..])
                    .ok()
                    .and_then(|r| r.partial_success)
                    .map_or(0, |p| p.rejected_spans.max(0) as u64);
                Outcome::Done { rejected }
            }
            429 | 502 | 503 | 504 => {
                let after = resp
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                Outcome::Retry { after, error: format!("HTTP {status}") }
            }
            _ => Outcome::Rejected(format!("HTTP {status}, not retried")),
        }
    }
}

//! The exporter's thread: takes each queued request in turn and posts it until it is accepted,
//! refused, split (413), or given up on (retries spent, or the shutdown deadline).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::http::{self, Outcome};
use super::{Batch, ExportOptions, Shared};
use crate::bound;

/// A body at least this large whose connection is reset while it is sent is taken as refused
/// for its size (a collector answering 413 and closing without reading it) and split.
const RESET_SPLIT_BYTES: usize = 64 << 10;

/// A single span answered 413 is trimmed to half its size while it is at least this large; a
/// smaller one is rejected as too large.
const MIN_TRIM_BYTES: usize = 4096;

/// The longest *last call*: the end of the shutdown deadline in which each request left gets one
/// more attempt rather than waiting on a backoff.
const LAST_CALL_MAX: Duration = Duration::from_secs(1);

pub(super) struct Sender {
    /// Its place in `State::in_flight`.
    id: usize,
    options: ExportOptions,
    url: String,
    agent: ureq::Agent,
    shared: Arc<Shared>,
    rng: u64,
}

/// Tells shutdown that the thread has returned, however it returns.
struct Finished<'a>(&'a Shared);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.lock().running -= 1;
        self.0.wake.notify_all();
    }
}

impl Sender {
    pub(super) fn new(id: usize, options: ExportOptions, shared: Arc<Shared>) -> Sender {
        // Jitter only: any seed that differs between processes will do.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id()).rotate_left(32)
            ^ (id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Sender { id, url: options.traces_url(), agent: http::agent(&options), options, shared, rng: seed | 1 }
    }

    pub(super) fn run(mut self) {
        let shared = self.shared.clone();
        let _finished = Finished(&shared);
        loop {
            let batch = {
                let mut s = self.shared.lock();
                loop {
                    if s.abandoned {
                        return;
                    }
                    if let Some(b) = s.queue.pop_front() {
                        s.in_flight[self.id] = Some((b.spans, b.tally.clone()));
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

    /// The shutdown deadline, and the start of its last call.
    fn deadline(&self) -> Option<(Instant, Instant)> {
        let d = self.shared.lock().deadline?;
        let last_call = (self.options.shutdown_deadline / 4).min(LAST_CALL_MAX);
        Some((d, d.checked_sub(last_call).unwrap_or(d)))
    }

    /// Counts the batch's spans and clears the batch in flight.
    fn settle(&self, batch: &Batch, exported: u64, rejected: u64, failed: u64, error: Option<String>) {
        let mut s = self.shared.lock();
        s.in_flight[self.id] = None;
        s.settle(batch.tally.as_ref(), exported, rejected, failed);
        if let Some(e) = error {
            s.stats.last_error = Some(format!("{}: {e}", self.url));
        }
    }

    /// Posts one batch until it succeeds, is refused or split, runs out of retries or of time.
    fn deliver(&mut self, batch: Batch) {
        let wire = http::compress(&batch.body, self.options.compression);
        let mut attempt = 0u32;
        let mut last_call = false;
        loop {
            let mut timeout = self.options.timeout;
            if let Some((deadline, call)) = self.deadline() {
                let now = Instant::now();
                if now >= deadline || last_call {
                    let why = if last_call {
                        "still failing at the shutdown deadline"
                    } else {
                        "the shutdown deadline passed"
                    };
                    return self.settle(&batch, 0, 0, batch.spans, Some(why.into()));
                }
                last_call = now >= call;
                timeout = timeout.min(deadline - now);
            }
            let outcome = http::post(&self.agent, &self.url, &self.options, &wire, timeout);
            {
                let mut s = self.shared.lock();
                s.stats.requests += 1;
                s.stats.bytes_sent += wire.len() as u64;
                s.stats.bytes_encoded += batch.body.len() as u64;
                if !matches!(outcome, Outcome::Done { .. }) {
                    s.stats.requests_failed += 1;
                }
            }
            match outcome {
                Outcome::Done { rejected } => {
                    let rejected = rejected.min(batch.spans);
                    return self.settle(&batch, batch.spans - rejected, rejected, 0, None);
                }
                Outcome::Rejected(e) => return self.settle(&batch, 0, batch.spans, 0, Some(e)),
                Outcome::TooLarge(e) => return self.too_large(batch, e),
                Outcome::Retry { reset: true, error, .. } if batch.body.len() >= RESET_SPLIT_BYTES => {
                    let why = format!(
                        "{error} while sending a body of {} bytes (a collector's size limit?)",
                        wire.len()
                    );
                    return self.too_large(batch, why);
                }
                Outcome::Retry { after, error, .. } => {
                    if attempt >= self.options.max_retries {
                        return self.settle(&batch, 0, 0, batch.spans, Some(error));
                    }
                    {
                        let mut s = self.shared.lock();
                        s.stats.retries += 1;
                        s.stats.last_error = Some(format!("{}: {error}", self.url));
                    }
                    let wait = self.backoff(attempt, after);
                    self.sleep(wait);
                    attempt += 1;
                }
            }
        }
    }

    /// A body the collector found too large: the batch in two at the front of the queue, or
    /// its one span trimmed, or rejected as too large.
    fn too_large(&mut self, batch: Batch, why: String) {
        let encoding = self.options.encoding;
        let Some(request) = bound::decode(&batch.body, encoding) else {
            return self.settle(&batch, 0, batch.spans, 0, Some(format!("{why}; not decodable to split")));
        };
        let mut s = self.shared.lock();
        if s.abandoned {
            return;
        }
        let n: usize =
            request.resource_spans.iter().flat_map(|r| &r.scope_spans).map(|s| s.spans.len()).sum();
        if n >= 2 {
            if let Some([(a, na), (b, nb)]) = bound::halve(request) {
                s.stats.requests_split += 1;
                s.stats.last_error = Some(format!("{}: {why}: split in two", self.url));
                s.in_flight[self.id] = None;
                let tally = batch.tally;
                s.queue.push_front(Batch {
                    body: bound::encode(&b, encoding),
                    spans: nb,
                    tally: tally.clone(),
                });
                s.queue.push_front(Batch { body: bound::encode(&a, encoding), spans: na, tally });
            }
            return;
        }
        let half = batch.body.len() / 2;
        drop(s);
        let trimmed = (batch.body.len() >= MIN_TRIM_BYTES)
            .then(|| bound::trim_request(request, half, encoding))
            .flatten();
        let mut s = self.shared.lock();
        match trimmed {
            Some((body, cut)) if !s.abandoned && body.len() < batch.body.len() => {
                s.stats.spans_trimmed += 1;
                s.stats.bytes_trimmed += cut;
                s.stats.last_error = Some(format!("{}: {why}: its one span trimmed", self.url));
                s.in_flight[self.id] = None;
                s.queue.push_front(Batch { body, spans: batch.spans, tally: batch.tally });
            }
            _ => {
                s.stats.spans_too_large += batch.spans;
                drop(s);
                let e = format!("{why}: a single span too large, rejected");
                self.settle(&batch, 0, batch.spans, 0, Some(e));
            }
        }
    }

    /// Waits `d`, or less: at shutdown, no later than the last call.
    fn sleep(&self, d: Duration) {
        let until = Instant::now() + d;
        let mut s = self.shared.lock();
        loop {
            let end = match s.deadline {
                Some(dl) => {
                    let last_call = (self.options.shutdown_deadline / 4).min(LAST_CALL_MAX);
                    until.min(dl.checked_sub(last_call).unwrap_or(dl))
                }
                None => until,
            };
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
}

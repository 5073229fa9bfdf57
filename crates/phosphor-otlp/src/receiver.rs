//! A local OTLP/HTTP receiver for tests and benchmarks (feature `receiver`): a small blocking
//! HTTP server (tiny_http) that decodes every `POST /v1/traces` with the official messages, as a
//! Collector would (protobuf or OTLP JSON, gzipped or not, counting the bytes on the wire), keeps
//! what it got, and answers as it is told: a status (429 and 503 with `Retry-After: 0`, or a 503
//! with a longer one), a partial success, a request held until the test lets it go, or, for a
//! [`Receiver::limited`] one, a 413 to a body over its limit.
//!
//! ```no_run
//! use phosphor_otlp::receiver::{Answer, Receiver};
//! let rx = Receiver::start(vec![Answer::Status(503)]); // one 503, then 200s
//! // ... export to rx.url() ...
//! assert!(rx.wait_until(std::time::Duration::from_secs(60), |got| got.spans.len() >= 10));
//! ```

use std::collections::VecDeque;
use std::io::Read as _;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message as _;

use crate::{ExportTraceServiceRequest, Span};

/// What the receiver answers to one request (in order; 200 once none is left).
#[derive(Clone, Debug)]
pub enum Answer {
    /// This status, and the spans are not kept unless it is 200. 429 and 503 carry
    /// `Retry-After: 0`.
    Status(u16),
    /// 200 with a partial success rejecting this many spans (the spans are kept).
    Partial(i64),
    /// Waits until the gate opens, then 200.
    Hold(Gate),
    /// 503 with `Retry-After` of this many seconds.
    Busy(u64),
}

/// A gate a held request waits at.
#[derive(Clone, Debug, Default)]
pub struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    /// A closed gate.
    pub fn new() -> Gate {
        Gate::default()
    }

    /// Opens it: held requests go on.
    pub fn open(&self) {
        *lock(&self.0 .0) = true;
        self.0 .1.notify_all();
    }

    fn wait(&self) {
        let mut open = lock(&self.0 .0);
        while !*open {
            open = self.0 .1.wait(open).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// What a receiver got.
#[derive(Debug, Default)]
pub struct Got {
    /// Requests received (answered or not yet).
    pub requests: u64,
    /// The spans of the requests answered 200 (or with a partial success), in arrival order
    /// (none kept by a counting receiver).
    pub spans: Vec<Span>,
    /// How many spans those requests held.
    pub span_count: u64,
    /// What was wrong: a request to another path or of another content type, or one that did
    /// not decode (answered 400).
    pub bad: Vec<String>,
    /// The headers of the last request (name, value).
    pub headers: Vec<(String, String)>,
    /// The resource of the last request's first `ResourceSpans`.
    pub resource: Option<Resource>,
    /// Bytes of request bodies received, as on the wire (compressed or not).
    pub bytes: u64,
    /// The same bodies decompressed.
    pub bytes_decoded: u64,
    /// Requests that came gzipped (`Content-Encoding: gzip`).
    pub gzipped: u64,
    /// Requests that came as OTLP JSON (`Content-Type: application/json`).
    pub json: u64,
    /// Requests answered 413 for a body over the receiver's limit.
    pub too_large: u64,
    /// The largest body decompressed.
    pub largest_decoded: u64,
}

/// The receiver; it stops when dropped.
pub struct Receiver {
    server: Arc<tiny_http::Server>,
    keep: bool,
    got: Arc<(Mutex<Got>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

/// How a receiver serves: whether it keeps spans, and the largest body it takes.
#[derive(Clone, Copy)]
struct Serving {
    keep: bool,
    /// A larger body (its `Content-Length`, as on the wire) is answered 413 unread.
    max_body: Option<u64>,
}

impl Receiver {
    /// A receiver on a free port of 127.0.0.1.
    pub fn start(answers: Vec<Answer>) -> Receiver {
        Receiver::start_at("127.0.0.1:0", answers)
    }

    /// A receiver on `addr` (e.g. the address of one that was down).
    ///
    /// # Panics
    ///
    /// If it cannot listen there.
    pub fn start_at(addr: &str, answers: Vec<Answer>) -> Receiver {
        Receiver::listen(addr, answers, true)
    }

    /// A receiver on a free port of 127.0.0.1 that counts spans without keeping them (a
    /// benchmark's millions).
    pub fn counting() -> Receiver {
        Receiver::listen("127.0.0.1:0", Vec::new(), false)
    }

    /// A receiver on a free port of 127.0.0.1 that answers 413, without reading it, a request
    /// whose body (as on the wire) is larger than `max_body` bytes, as a collector's
    /// `max_request_body_size` does.
    pub fn limited(max_body: u64) -> Receiver {
        Receiver::serve_with("127.0.0.1:0", Vec::new(), Serving { keep: true, max_body: Some(max_body) })
    }

    fn listen(addr: &str, answers: Vec<Answer>, keep: bool) -> Receiver {
        Receiver::serve_with(addr, answers, Serving { keep, max_body: None })
    }

    fn serve_with(addr: &str, answers: Vec<Answer>, serving: Serving) -> Receiver {
        let keep = serving.keep;
        let server = Arc::new(tiny_http::Server::http(addr).expect("the receiver listens"));
        let got = Arc::new((Mutex::new(Got::default()), Condvar::new()));
        let answers = Mutex::new(VecDeque::from(answers));
        let (s, g) = (server.clone(), got.clone());
        let thread = std::thread::Builder::new()
            .name("otlp-receiver".into())
            .spawn(move || {
                for req in s.incoming_requests() {
                    let answer = lock(&answers).pop_front();
                    serve(req, answer, &g, serving);
                }
            })
            .expect("the receiver's thread starts");
        Receiver { server, keep, got, thread: Some(thread) }
    }

    /// Its base URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr())
    }

    /// Its address.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.server.server_addr().to_ip().expect("an IP listener")
    }

    /// What it got so far.
    pub fn got(&self) -> MutexGuard<'_, Got> {
        lock(&self.got.0)
    }

    /// Waits until `until` holds of what it got, at most `deadline`; whether it held.
    pub fn wait_until(&self, deadline: Duration, until: impl Fn(&Got) -> bool) -> bool {
        let end = Instant::now() + deadline;
        let mut got = self.got();
        while !until(&got) {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            got = self.got.1.wait_timeout(got, left).unwrap_or_else(|p| p.into_inner()).0;
        }
        true
    }
}

impl std::fmt::Debug for Receiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver")
            .field("addr", &self.addr())
            .field("keep", &self.keep)
            .finish_non_exhaustive()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(mut req: tiny_http::Request, answer: Option<Answer>, got: &(Mutex<Got>, Condvar), serving: Serving) {
    let headers: Vec<(String, String)> =
        req.headers().iter().map(|h| (h.field.as_str().to_string(), h.value.as_str().to_owned())).collect();
    let header =
        |name: &str| headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
    let content_type = header("content-type").unwrap_or_default().to_owned();
    let json = content_type == "application/json";
    let gzipped = header("content-encoding") == Some("gzip");
    if let (Some(max), Some(len)) = (serving.max_body, req.body_length()) {
        if len as u64 > max {
            {
                let mut g = lock(&got.0);
                g.requests += 1;
                g.too_large += 1;
            }
            got.1.notify_all();
            // Unread, as a collector refusing a body by its length does.
            let _ = req.respond(tiny_http::Response::empty(413));
            return;
        }
    }
    let mut wire = Vec::new();
    let _ = req.as_reader().read_to_end(&mut wire);
    let body = if gzipped {
        let mut out = Vec::new();
        match flate2::read::GzDecoder::new(&wire[..]).read_to_end(&mut out) {
            Ok(_) => out,
            Err(e) => {
                lock(&got.0).bad.push(format!("not gzip: {e}"));
                Vec::new()
            }
        }
    } else {
        wire.clone()
    };
    {
        let mut g = lock(&got.0);
        g.requests += 1;
        g.bytes += wire.len() as u64;
        g.bytes_decoded += body.len() as u64;
        g.largest_decoded = g.largest_decoded.max(body.len() as u64);
        g.gzipped += u64::from(gzipped);
        g.json += u64::from(json);
        if req.url() != "/v1/traces" || !(json || content_type == "application/x-protobuf") {
            g.bad.push(format!("{} {headers:?}", req.url()));
        }
        g.headers = headers.clone();
    }
    got.1.notify_all();
    let (mut status, mut reply) = (200, Vec::new());
    let mut retry_after = 0;
    match answer {
        Some(Answer::Busy(secs)) => {
            status = 503;
            retry_after = secs;
        }
        Some(Answer::Status(s)) => status = s,
        Some(Answer::Partial(n)) => {
            let partial = ExportTracePartialSuccess { rejected_spans: n, error_message: "rejected".into() };
            reply = ExportTraceServiceResponse { partial_success: Some(partial) }.encode_to_vec();
        }
        Some(Answer::Hold(gate)) => gate.wait(),
        None => {}
    }
    let decoded = if json {
        serde_json::from_slice::<ExportTraceServiceRequest>(&body).map_err(|e| e.to_string())
    } else {
        ExportTraceServiceRequest::decode(&body[..]).map_err(|e| e.to_string())
    };
    match decoded {
        Ok(r) if status == 200 => {
            let resource = r.resource_spans.first().and_then(|r| r.resource.clone());
            let spans = r.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans);
            let mut g = lock(&got.0);
            g.resource = resource.or(g.resource.take());
            for span in spans {
                g.span_count += 1;
                if serving.keep {
                    g.spans.push(span);
                }
            }
        }
        Ok(_) => {}
        Err(e) => {
            lock(&got.0).bad.push(format!("undecodable: {e}"));
            status = 400;
        }
    }
    got.1.notify_all();
    if json && !reply.is_empty() {
        let partial = ExportTraceServiceResponse::decode(&reply[..]).unwrap_or_default();
        reply = serde_json::to_vec(&partial).unwrap_or_default();
    }
    let mut resp = tiny_http::Response::from_data(reply).with_status_code(status);
    if status == 429 || status == 503 {
        let after = retry_after.to_string();
        resp.add_header(tiny_http::Header::from_bytes("Retry-After", after).expect("a valid header"));
    }
    let _ = req.respond(resp);
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

//! One OTLP/HTTP post and what its answer means: accepted (with a partial success's rejected
//! spans), worth another try (with the server's `Retry-After`), too large, or final.

use std::io::Write as _;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use prost::Message as _;

use super::{Compression, Encoding, ExportOptions};

/// How one post ended.
pub(super) enum Outcome {
    /// Accepted; this many spans rejected by a partial success.
    Done { rejected: u64 },
    /// Worth another try, after at least this long when the server said so. `reset`: the
    /// connection was reset or broken while the body was sent.
    Retry { after: Option<Duration>, error: String, reset: bool },
    /// 413: the body is too large for the collector.
    TooLarge(String),
    /// Final.
    Rejected(String),
}

/// The agent every post goes through: `phosphor/<version>` as the User-Agent, the connect
/// timeout; the total timeout is set per request.
pub(super) fn agent(options: &ExportOptions) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .user_agent(concat!("phosphor/", env!("CARGO_PKG_VERSION")))
        .timeout_connect(Some(options.connect_timeout))
        .timeout_global(Some(options.timeout))
        .build()
        .into()
}

/// `body` as it goes on the wire.
pub(super) fn compress(body: &[u8], compression: Compression) -> Vec<u8> {
    match compression {
        Compression::None => body.to_vec(),
        Compression::Gzip => {
            // Level 1: the exporter's one thread must keep up with hundreds of thousands of spans
            // a second; protobuf's repeated keys and ids compress well even so.
            let mut gz = flate2::write::GzEncoder::new(
                Vec::with_capacity(body.len() / 4),
                flate2::Compression::fast(),
            );
            // Writing to a Vec cannot fail.
            let _ = gz.write_all(body);
            gz.finish().unwrap_or_default()
        }
    }
}

/// Posts `wire` (the body as compressed) to `url` within `timeout`.
pub(super) fn post(
    agent: &ureq::Agent,
    url: &str,
    options: &ExportOptions,
    wire: &[u8],
    timeout: Duration,
) -> Outcome {
    let content_type = match options.encoding {
        Encoding::Protobuf => "application/x-protobuf",
        Encoding::Json => "application/json",
    };
    let mut req = agent.post(url).header("Content-Type", content_type);
    if options.compression == Compression::Gzip {
        req = req.header("Content-Encoding", "gzip");
    }
    for (k, v) in &options.headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let req = req.config().timeout_global(Some(timeout)).build();
    let mut resp = match req.send(wire) {
        Ok(r) => r,
        Err(e) => {
            let reset = matches!(&e, ureq::Error::Io(io) if matches!(io.kind(),
                std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted));
            return Outcome::Retry { after: None, error: e.to_string(), reset };
        }
    };
    let status = resp.status().as_u16();
    match status {
        200..=299 => {
            // A bounded read: a hostile server cannot make us hold more than this.
            let bytes = resp.body_mut().with_config().limit(1 << 20).read_to_vec().unwrap_or_default();
            let response = match options.encoding {
                Encoding::Protobuf => ExportTraceServiceResponse::decode(&bytes[..]).ok(),
                Encoding::Json => serde_json::from_slice::<ExportTraceServiceResponse>(&bytes).ok(),
            };
            let rejected =
                response.and_then(|r| r.partial_success).map_or(0, |p| p.rejected_spans.max(0) as u64);
            Outcome::Done { rejected }
        }
        413 => Outcome::TooLarge(format!("HTTP 413 for a body of {} bytes", wire.len())),
        429 | 502 | 503 | 504 => {
            let after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            Outcome::Retry { after, error: format!("HTTP {status}"), reset: false }
        }
        _ => Outcome::Rejected(format!("HTTP {status}, not retried")),
    }
}

//! Requests bounded by bytes: a request whose encoding passes [`ExportOptions::max_request_bytes`]
//! is cut into pieces that fit, and a span too large to fit even alone is trimmed.
//!
//! [`split`] packs the spans greedily, in order, under the limit (each span's encoded size is
//! known from prost, or from serde for JSON), each piece keeping its spans' resource and scope.
//! [`trim`] cuts a span's long strings (its name, string attributes, span event names and their
//! attributes: where log messages and event bodies are) to a shrinking cap until the span fits,
//! each cut string ending with a marker, and the span carrying `phosphor.trimmed_bytes`; past the
//! smallest cap, span events are dropped from the end (`dropped_events_count`). [`halve`] is what
//! the sender does when the collector says 413 (or resets the connection on a large body): the
//! spans in two requests.
//!
//! [`ExportOptions::max_request_bytes`]: crate::export::ExportOptions::max_request_bytes

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};
use prost::Message as _;

use crate::export::Encoding;
use crate::{ExportTraceServiceRequest, Span};

/// The attribute a trimmed span carries: how many bytes of its strings were cut.
pub const TRIMMED_ATTRIBUTE: &str = "phosphor.trimmed_bytes";

/// The smallest cap a string is cut to before span events are dropped instead.
const MIN_CAP: usize = 64;

/// What bounding a request did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Bounded {
    /// The pieces, encoded, and how many spans each holds.
    pub pieces: Vec<(Vec<u8>, u64)>,
    /// Spans trimmed to fit.
    pub spans_trimmed: u64,
    /// Bytes cut from their strings.
    pub bytes_trimmed: u64,
    /// Spans that could not be made to fit (their size in bytes, the first one's).
    pub too_large: u64,
    /// The size of the first span too large.
    pub too_large_bytes: usize,
}

/// The request encoded.
pub fn encode(request: &ExportTraceServiceRequest, encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::Protobuf => request.encode_to_vec(),
        // Serialising these messages cannot fail: no maps with non-string keys, no I/O.
        Encoding::Json => serde_json::to_vec(request).unwrap_or_default(),
    }
}

/// A body decoded again (for a split after a 413).
pub fn decode(body: &[u8], encoding: Encoding) -> Option<ExportTraceServiceRequest> {
    match encoding {
        Encoding::Protobuf => ExportTraceServiceRequest::decode(body).ok(),
        Encoding::Json => serde_json::from_slice(body).ok(),
    }
}

fn span_size(span: &Span, encoding: Encoding) -> usize {
    match encoding {
        // The span's bytes, its field tag and length prefix.
        Encoding::Protobuf => {
            let n = span.encoded_len();
            n + 1 + prost::encoding::encoded_len_varint(n as u64)
        }
        Encoding::Json => serde_json::to_vec(span).map_or(0, |v| v.len() + 1),
    }
}

/// The bytes a resource and scope cost a piece, with room for the framing.
fn header_size(r: &ResourceSpans, s: &ScopeSpans, encoding: Encoding) -> usize {
    let shell = ExportTraceServiceRequest { resource_spans: vec![shell_of(r, s)] };
    encode(&shell, encoding).len() + 16
}

fn shell_of(r: &ResourceSpans, s: &ScopeSpans) -> ResourceSpans {
    ResourceSpans {
        resource: r.resource.clone(),
        scope_spans: vec![ScopeSpans {
            scope: s.scope.clone(),
            spans: Vec::new(),
            schema_url: s.schema_url.clone(),
        }],
        schema_url: r.schema_url.clone(),
    }
}

/// Every span of `request` with the indices of its resource and scope.
fn flatten(request: ExportTraceServiceRequest) -> (Vec<ResourceSpans>, Vec<(usize, usize, Span)>) {
    let mut shells = Vec::new();
    let mut spans = Vec::new();
    for (ri, mut r) in request.resource_spans.into_iter().enumerate() {
        for (si, s) in r.scope_spans.iter_mut().enumerate() {
            spans.extend(std::mem::take(&mut s.spans).into_iter().map(|span| (ri, si, span)));
        }
        shells.push(r);
    }
    (shells, spans)
}

/// One request of `spans` (in order), under their resources and scopes.
fn assemble(shells: &[ResourceSpans], spans: Vec<(usize, usize, Span)>) -> ExportTraceServiceRequest {
    let mut out: Vec<ResourceSpans> = Vec::new();
    let mut last = None;
    for (ri, si, span) in spans {
        if last != Some((ri, si)) {
            out.push(shell_of(&shells[ri], &shells[ri].scope_spans[si]));
            last = Some((ri, si));
        }
        out.last_mut().expect("pushed").scope_spans[0].spans.push(span);
    }
    ExportTraceServiceRequest { resource_spans: out }
}

/// `request` (already encoded as `body`, of `spans` spans) as pieces of at most `max` bytes each.
pub fn split(
    request: &ExportTraceServiceRequest,
    body: Vec<u8>,
    spans: u64,
    max: usize,
    encoding: Encoding,
) -> Bounded {
    let mut b = Bounded::default();
    if body.len() <= max {
        b.pieces.push((body, spans));
        return b;
    }
    drop(body);
    let (shells, all) = flatten(request.clone());
    let mut piece: Vec<(usize, usize, Span)> = Vec::new();
    let mut size = 0;
    let mut last = None;
    let flush = |piece: &mut Vec<(usize, usize, Span)>, b: &mut Bounded| {
        if !piece.is_empty() {
            let n = piece.len() as u64;
            let req = assemble(&shells, std::mem::take(piece));
            pieces_within(req, n, max, encoding, &mut b.pieces);
        }
    };
    for (ri, si, mut span) in all {
        let header = header_size(&shells[ri], &shells[ri].scope_spans[si], encoding);
        let mut n = span_size(&span, encoding);
        if header + n > max {
            let cut = trim(&mut span, max.saturating_sub(header), encoding);
            n = span_size(&span, encoding);
            if header + n > max {
                if b.too_large == 0 {
                    b.too_large_bytes = n;
                }
                b.too_large += 1;
                continue;
            }
            b.spans_trimmed += 1;
            b.bytes_trimmed += cut;
        }
        let extra = if last == Some((ri, si)) { n } else { header + n };
        if !piece.is_empty() && size + extra > max {
            flush(&mut piece, &mut b);
            size = 0;
            last = None;
        }
        size += if last == Some((ri, si)) { n } else { header + n };
        last = Some((ri, si));
        piece.push((ri, si, span));
    }
    flush(&mut piece, &mut b);
    b
}

/// Encodes `req`; halves it again should the estimate have been short (JSON's escapes).
fn pieces_within(
    req: ExportTraceServiceRequest,
    spans: u64,
    max: usize,
    encoding: Encoding,
    out: &mut Vec<(Vec<u8>, u64)>,
) {
    let body = encode(&req, encoding);
    if body.len() <= max || spans < 2 {
        out.push((body, spans));
        return;
    }
    if let Some([(a, na), (b, nb)]) = halve(req) {
        pieces_within(a, na, max, encoding, out);
        pieces_within(b, nb, max, encoding, out);
    }
}

/// The spans of a request in two requests (the first half, the second), with their counts;
/// `None` for fewer than two spans.
pub fn halve(request: ExportTraceServiceRequest) -> Option<[(ExportTraceServiceRequest, u64); 2]> {
    let (shells, mut all) = flatten(request);
    if all.len() < 2 {
        return None;
    }
    let rest = all.split_off(all.len() / 2);
    let (a, b) = (all.len() as u64, rest.len() as u64);
    Some([(assemble(&shells, all), a), (assemble(&shells, rest), b)])
}

/// The only span of a one-span request, trimmed to at most `max` bytes: the request re-encoded
/// and the bytes cut, or `None` when nothing could be cut.
pub fn trim_request(
    request: ExportTraceServiceRequest,
    max: usize,
    encoding: Encoding,
) -> Option<(Vec<u8>, u64)> {
    let (shells, mut all) = flatten(request);
    let (_, _, span) = all.first_mut()?;
    let cut = trim(span, max, encoding);
    (cut > 0).then(|| (encode(&assemble(&shells, all), encoding), cut))
}

/// Cuts `span`'s long strings (then its last span events) until its encoding is at most
/// `budget` bytes or nothing more can go; the bytes cut.
pub fn trim(span: &mut Span, budget: usize, encoding: Encoding) -> u64 {
    let mut cut = 0u64;
    let mut cap = longest_string(span) / 2;
    while span_size(span, encoding) > budget && cap >= MIN_CAP {
        cut += cut_strings(span, cap);
        cap /= 2;
    }
    while span_size(span, encoding) > budget && !span.events.is_empty() {
        let e = span.events.pop().expect("not empty");
        cut += e.encoded_len() as u64;
        span.dropped_events_count += 1;
    }
    if cut > 0 {
        span.attributes.retain(|kv| kv.key != TRIMMED_ATTRIBUTE);
        span.attributes.push(KeyValue {
            key: TRIMMED_ATTRIBUTE.to_owned(),
            value: Some(AnyValue { value: Some(any_value::Value::IntValue(cut as i64)) }),
            ..KeyValue::default()
        });
    }
    cut
}

fn strings(kvs: &[KeyValue]) -> impl Iterator<Item = usize> + '_ {
    kvs.iter().filter_map(|kv| match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => Some(s.len()),
        Some(any_value::Value::BytesValue(b)) => Some(b.len()),
        _ => None,
    })
}

fn longest_string(span: &Span) -> usize {
    let events = span.events.iter().flat_map(|e| strings(&e.attributes).chain([e.name.len()]));
    strings(&span.attributes).chain(events).chain([span.name.len()]).max().unwrap_or(0)
}

fn cut_strings(span: &mut Span, cap: usize) -> u64 {
    let mut cut = cut_text(&mut span.name, cap) + cut_values(&mut span.attributes, cap);
    for e in &mut span.events {
        cut += cut_text(&mut e.name, cap) + cut_values(&mut e.attributes, cap);
    }
    cut
}

fn cut_values(kvs: &mut [KeyValue], cap: usize) -> u64 {
    let mut cut = 0;
    for kv in kvs {
        match kv.value.as_mut().and_then(|v| v.value.as_mut()) {
            Some(any_value::Value::StringValue(s)) => cut += cut_text(s, cap),
            Some(any_value::Value::BytesValue(b)) if b.len() > cap => {
                cut += (b.len() - cap) as u64;
                b.truncate(cap);
            }
            _ => {}
        }
    }
    cut
}

/// Cuts `s` to about `cap` bytes (on a character boundary) and says so at its end.
fn cut_text(s: &mut String, cap: usize) -> u64 {
    if s.len() <= cap {
        return 0;
    }
    let mut at = cap;
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    let cut = s.len() - at;
    s.truncate(at);
    s.push_str(&format!("…[{cut} bytes cut]"));
    cut as u64
}

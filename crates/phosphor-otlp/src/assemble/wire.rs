//! Spans written straight to OTLP protobuf, without `Span` messages in between: what a file's
//! protobuf conversion does with each final span (the JSON conversion and live forwarding use the
//! messages). The bytes decode, with the official messages, to what `prost` would encode for the
//! same spans: the fields in order of number, proto3 defaults left out, a oneof always written.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::encoding::{encode_varint, encoded_len_varint};
use prost::Message as _;

use super::emit::Ids3;
use super::tree::{Rec, Strings, Val};

/// A request's framing and the batch being filled.
#[derive(Debug)]
pub(super) struct Wire {
    /// `ResourceSpans.resource` (field 1), encoded.
    resource: Vec<u8>,
    /// `ScopeSpans.scope` (field 1), encoded.
    scope: Vec<u8>,
    /// The spans of the batch being filled, each as `ScopeSpans.spans` (field 2).
    spans: Vec<u8>,
    n: usize,
    max: usize,
    /// The most bytes in one request (one span larger on its own is a request alone).
    max_bytes: usize,
    body: Vec<u8>,
    /// Whole requests, ready to be written.
    pub out: Encoded,
    /// Spans and requests put in `out` so far.
    pub spans_out: u64,
    pub batches_out: u64,
}

/// A field's key.
fn key(out: &mut Vec<u8>, field: u32, wire_type: u8) {
    encode_varint(u64::from(field << 3) | u64::from(wire_type), out);
}

fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, 2);
    encode_varint(b.len() as u64, out);
    out.extend_from_slice(b);
}

/// A proto3 string or bytes field: left out when empty.
fn bytes_if_any(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    if !b.is_empty() {
        bytes(out, field, b);
    }
}

fn fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
    key(out, field, 1);
    out.extend_from_slice(&v.to_le_bytes());
}

/// A `KeyValue` with its `AnyValue` as field `field`.
fn key_value(out: &mut Vec<u8>, field: u32, k: &str, v: &Val) {
    let value_len = match v {
        Val::Str(s) => 1 + encoded_len_varint(s.len() as u64) + s.len(),
        Val::Bool(_) => 2,
        Val::Int(i) => 1 + encoded_len_varint(*i as u64),
        Val::Double(_) => 9,
    };
    let key_len = if k.is_empty() { 0 } else { 1 + encoded_len_varint(k.len() as u64) + k.len() };
    let len = key_len + 1 + encoded_len_varint(value_len as u64) + value_len;
    key(out, field, 2);
    encode_varint(len as u64, out);
    bytes_if_any(out, 1, k.as_bytes());
    key(out, 2, 2);
    encode_varint(value_len as u64, out);
    match v {
        Val::Str(s) => bytes(out, 1, s.as_bytes()),
        Val::Bool(b) => {
            key(out, 2, 0);
            out.push(u8::from(*b));
        }
        Val::Int(i) => {
            key(out, 3, 0);
            encode_varint(*i as u64, out);
        }
        Val::Double(d) => fixed64(out, 4, d.to_bits()),
    }
}

/// Whole encoded requests, one after the other, and where each ends.
#[derive(Debug, Default)]
pub struct Encoded {
    /// The requests' bytes, concatenated.
    pub bytes: Vec<u8>,
    /// Each request's end in `bytes` and its number of spans, in order.
    pub requests: Vec<(usize, u64)>,
}

impl Encoded {
    /// Whether no request is held.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Each request's bytes and number of spans.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> {
        let mut from = 0;
        self.requests.iter().map(move |&(end, spans)| {
            let r = (&self.bytes[from..end], spans);
            from = end;
            r
        })
    }

    /// Forgets every request.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.requests.clear();
    }
}

impl Wire {
    /// Requests framed as `template`'s (its resource and scope; its spans are ignored), of at
    /// most `max` spans and `max_bytes` bytes each.
    pub fn new(template: &ExportTraceServiceRequest, max: usize, max_bytes: usize) -> Wire {
        let (mut resource, mut scope) = (Vec::new(), Vec::new());
        if let Some(rs) = template.resource_spans.first() {
            if let Some(r) = &rs.resource {
                prost::encoding::message::encode(1, r, &mut resource);
            }
            if let Some(s) = rs.scope_spans.first().and_then(|ss| ss.scope.as_ref()) {
                prost::encoding::message::encode(1, s, &mut scope);
            }
        }
        Wire {
            resource,
            scope,
            spans: Vec::new(),
            n: 0,
            max: max.max(1),
            max_bytes,
            body: Vec::new(),
            out: Encoded::default(),
            spans_out: 0,
            batches_out: 0,
        }
    }

    /// Adds a span: `rec` with its ids; `tid_key` names the thread id attribute.
    pub fn span(&mut self, rec: &Rec, strings: &Strings, tid_key: u32, ids: &Ids3<'_>) {
        let b = &mut self.body;
        b.clear();
        bytes(b, 1, ids.trace);
        bytes(b, 2, ids.span);
        bytes_if_any(b, 3, ids.state.as_bytes());
        if let Some(p) = ids.parent {
            bytes(b, 4, &p);
        }
        bytes_if_any(b, 5, strings.text(&rec.name).as_bytes());
        // SPAN_KIND_INTERNAL.
        key(b, 6, 0);
        b.push(1);
        if rec.start != 0 {
            fixed64(b, 7, rec.start);
        }
        if rec.end != 0 {
            fixed64(b, 8, rec.end);
        }
        for a in &rec.attrs {
            key_value(b, 9, strings.get(a.key), &a.value);
        }
        if let Some(tid) = rec.tid {
            key_value(b, 9, strings.get(tid_key), &Val::Int(i64::from(tid)));
        }
        for e in &rec.events {
            key(b, 11, 2);
            encode_varint(e.encoded_len() as u64, b);
            // Encoding into a Vec cannot fail.
            let _ = e.encode(b);
        }
        if ids.flags != 0 {
            // Span.flags: fixed32.
            key(b, 16, 5);
            b.extend_from_slice(&ids.flags.to_le_bytes());
        }
        let field = 1 + encoded_len_varint(self.body.len() as u64) + self.body.len();
        if self.n > 0 && self.request_len(self.spans.len() + field) > self.max_bytes {
            self.close();
        }
        bytes(&mut self.spans, 2, &self.body);
        self.n += 1;
        if self.n >= self.max {
            self.close();
        }
    }

    /// The length of a request whose spans' fields take `spans` bytes.
    fn request_len(&self, spans: usize) -> usize {
        let scope_spans = self.scope.len() + spans;
        let resource_spans = self.resource.len() + 1 + encoded_len_varint(scope_spans as u64) + scope_spans;
        1 + encoded_len_varint(resource_spans as u64) + resource_spans
    }

    /// Puts the batch being filled, if it holds a span, into [`Wire::out`] as a request.
    pub fn close(&mut self) {
        if self.n == 0 {
            return;
        }
        let scope_spans = self.scope.len() + self.spans.len();
        let resource_spans = self.resource.len() + 1 + encoded_len_varint(scope_spans as u64) + scope_spans;
        let out = &mut self.out.bytes;
        key(out, 1, 2);
        encode_varint(resource_spans as u64, out);
        out.extend_from_slice(&self.resource);
        key(out, 2, 2);
        encode_varint(scope_spans as u64, out);
        out.extend_from_slice(&self.scope);
        out.extend_from_slice(&self.spans);
        self.spans.clear();
        self.out.requests.push((out.len(), self.n as u64));
        self.spans_out += self.n as u64;
        self.batches_out += 1;
        self.n = 0;
    }
}

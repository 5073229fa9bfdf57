//! W3C trace context. INTERFACE (session 34 lead): owner helper C.

/// A W3C trace context: what a `traceparent` header carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceContext {
    /// The trace id (16 bytes, not all zero).
    pub trace_id: [u8; 16],
    /// The parent span id (8 bytes, not all zero).
    pub parent_span_id: [u8; 8],
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
}

//! W3C trace context: the `traceparent` header and the reserved event that carries it in a trace.
//!
//! A program that serves a request from another traced service receives its
//! [`traceparent`](https://www.w3.org/TR/trace-context/#traceparent-header) header: a trace id, the
//! caller's span id and flags. The runtime's `trace_context!` records it as an ordinary instant of
//! category [`CATEGORY`] and name [`NAME`] on the calling thread; its argument [`ARG_TRACEPARENT`] is
//! the header text (version 00, as [`TraceContext`]'s `Display` writes it) and, for an async slice,
//! its argument [`ARG_ASYNC_ID`] is the slice's id (`u64`). The OTLP export gives the scope open on
//! that thread at the event's time (or the async slice with that id) the trace id, and the caller's
//! span as its parent.
//!
//! Why the text and not four integers: an event carries two arguments ([`MAX_ARGS`](crate::MAX_ARGS))
//! and the context is 25 bytes, plus the async id. The 55-byte text costs two continuation records,
//! reads as itself in every viewer, and is parsed back by the same [`TraceContext::parse`]. The
//! format version does not change: old readers see an instant with a string argument.

use std::fmt;

/// The category of the trace-context event (the runtime's own category).
pub const CATEGORY: &str = crate::system::PHOSPHOR_CATEGORY;

/// The name of the trace-context event.
pub const NAME: &str = "trace_context";

/// Argument 0 of the trace-context event: the `traceparent` header text.
pub const ARG_TRACEPARENT: &str = "traceparent";

/// Argument 1 of the trace-context event of an async slice: the slice's id (`u64`).
pub const ARG_ASYNC_ID: &str = "async_id";

/// The name of the trace-state event, which `trace_context!(header, tracestate: ts)` records right
/// after the trace-context event: argument 0 [`ARG_TRACESTATE`] (the caller's `tracestate` header,
/// a dynamic string), argument 1 as the trace-context event's ([`ARG_ASYNC_ID`] or absent). It
/// belongs to the same scope or async slice as the context.
pub const STATE_NAME: &str = "trace_state";

/// Argument 0 of the trace-state event: the `tracestate` header text.
pub const ARG_TRACESTATE: &str = "tracestate";

/// The longest `tracestate` recorded: the W3C limit a vendor must propagate (512 bytes); a longer
/// one is not recorded (the context still is).
pub const MAX_TRACESTATE_LEN: usize = 512;

/// The length of a version-00 `traceparent` header.
pub const HEADER_LEN: usize = 55;

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

/// Why a `traceparent` header was rejected, and at which byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseTraceContextError {
    kind: ParseErrorKind,
    offset: usize,
}

/// What was wrong with a `traceparent` header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// Shorter than 55 bytes, or (version 00) longer.
    Length(usize),
    /// Not a lowercase hex digit.
    NotHex,
    /// A `-` was expected.
    MissingDash,
    /// Version `ff`, which the specification forbids.
    ForbiddenVersion,
    /// The trace id is all zero.
    ZeroTraceId,
    /// The parent span id is all zero.
    ZeroParentId,
}

impl ParseTraceContextError {
    /// What was wrong.
    pub fn kind(&self) -> ParseErrorKind {
        self.kind
    }

    /// The byte offset in the header where it was found.
    pub fn offset(&self) -> usize {
        self.offset
    }
}

impl fmt::Display for ParseTraceContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ParseErrorKind::Length(n) => {
                return write!(f, "invalid traceparent: {n} bytes (version 00 has 55)")
            }
            ParseErrorKind::NotHex => "not a lowercase hex digit",
            ParseErrorKind::MissingDash => "expected '-'",
            ParseErrorKind::ForbiddenVersion => "version ff is forbidden",
            ParseErrorKind::ZeroTraceId => "the trace id is all zero",
            ParseErrorKind::ZeroParentId => "the parent span id is all zero",
        };
        write!(f, "invalid traceparent at byte {}: {what}", self.offset)
    }
}

impl std::error::Error for ParseTraceContextError {}

fn fail<T>(kind: ParseErrorKind, offset: usize) -> Result<T, ParseTraceContextError> {
    Err(ParseTraceContextError { kind, offset })
}

/// Decodes `out.len()` bytes from lowercase hex at `s[at..]` (the caller checked the length).
fn hex(s: &[u8], at: usize, out: &mut [u8]) -> Result<(), ParseTraceContextError> {
    fn digit(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    for (i, o) in out.iter_mut().enumerate() {
        let p = at + 2 * i;
        let Some(hi) = digit(s[p]) else { return fail(ParseErrorKind::NotHex, p) };
        let Some(lo) = digit(s[p + 1]) else { return fail(ParseErrorKind::NotHex, p + 1) };
        *o = hi << 4 | lo;
    }
    Ok(())
}

fn dash(s: &[u8], at: usize) -> Result<(), ParseTraceContextError> {
    if s[at] == b'-' {
        Ok(())
    } else {
        fail(ParseErrorKind::MissingDash, at)
    }
}

impl TraceContext {
    /// Parses a `traceparent` header value as the W3C specification says: version 00 is exactly
    /// `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`, lowercase; version `ff` is
    /// invalid; a later version is read the same way for its first 55 bytes, which must then end
    /// or go on with `-` (its further fields are ignored). All-zero ids are invalid. Surrounding
    /// whitespace is not trimmed. Allocates nothing.
    pub fn parse(header: &str) -> Result<TraceContext, ParseTraceContextError> {
        let s = header.as_bytes();
        if s.len() < HEADER_LEN {
            return fail(ParseErrorKind::Length(s.len()), s.len());
        }
        let mut version = [0u8; 1];
        hex(s, 0, &mut version)?;
        match version[0] {
            0xff => return fail(ParseErrorKind::ForbiddenVersion, 0),
            0 if s.len() > HEADER_LEN => return fail(ParseErrorKind::Length(s.len()), HEADER_LEN),
            0 => {}
            _ if s.len() > HEADER_LEN && s[HEADER_LEN] != b'-' => {
                return fail(ParseErrorKind::MissingDash, HEADER_LEN)
            }
            _ => {}
        }
        dash(s, 2)?;
        let mut trace_id = [0u8; 16];
        hex(s, 3, &mut trace_id)?;
        dash(s, 35)?;
        let mut parent_span_id = [0u8; 8];
        hex(s, 36, &mut parent_span_id)?;
        dash(s, 52)?;
        let mut flags = [0u8; 1];
        hex(s, 53, &mut flags)?;
        if trace_id == [0; 16] {
            return fail(ParseErrorKind::ZeroTraceId, 3);
        }
        if parent_span_id == [0; 8] {
            return fail(ParseErrorKind::ZeroParentId, 36);
        }
        Ok(TraceContext { trace_id, parent_span_id, flags: flags[0] })
    }

    /// Whether the caller sampled the trace (flag bit 0).
    pub fn sampled(&self) -> bool {
        self.flags & 1 != 0
    }

    /// The version-00 header text, built on the stack (what `Display` writes).
    pub fn header(&self) -> Header {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut b = [b'-'; HEADER_LEN];
        let mut put = |at: usize, bytes: &[u8]| {
            for (i, v) in bytes.iter().enumerate() {
                b[at + 2 * i] = DIGITS[usize::from(v >> 4)];
                b[at + 2 * i + 1] = DIGITS[usize::from(v & 15)];
            }
        };
        put(0, &[0]);
        put(3, &self.trace_id);
        put(36, &self.parent_span_id);
        put(53, &[self.flags]);
        Header(b)
    }
}

impl std::str::FromStr for TraceContext {
    type Err = ParseTraceContextError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TraceContext::parse(s)
    }
}

impl fmt::Display for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.header().as_str())
    }
}

/// A version-00 `traceparent` header's text, on the stack.
#[derive(Clone, Copy)]
pub struct Header([u8; HEADER_LEN]);

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Header {
    /// The text.
    pub fn as_str(&self) -> &str {
        // Only ASCII hex digits and dashes are ever written.
        std::str::from_utf8(&self.0).unwrap_or("")
    }
}

/// What `trace_context!` accepts: a header (`&str`, `&String`) or a parsed [`TraceContext`].
pub trait IntoTraceContext {
    /// The context, or why the header is invalid.
    fn into_trace_context(self) -> Result<TraceContext, ParseTraceContextError>;
}

impl IntoTraceContext for &str {
    fn into_trace_context(self) -> Result<TraceContext, ParseTraceContextError> {
        TraceContext::parse(self)
    }
}

impl IntoTraceContext for &String {
    fn into_trace_context(self) -> Result<TraceContext, ParseTraceContextError> {
        TraceContext::parse(self)
    }
}

impl IntoTraceContext for TraceContext {
    fn into_trace_context(self) -> Result<TraceContext, ParseTraceContextError> {
        Ok(self)
    }
}

impl IntoTraceContext for &TraceContext {
    fn into_trace_context(self) -> Result<TraceContext, ParseTraceContextError> {
        Ok(*self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn kind(h: &str) -> (ParseErrorKind, usize) {
        let e = TraceContext::parse(h).unwrap_err();
        (e.kind(), e.offset())
    }

    #[test]
    fn the_specification_example_parses_and_prints_back() {
        let c = TraceContext::parse(GOOD).unwrap();
        assert_eq!(c.trace_id[..4], [0x4b, 0xf9, 0x2f, 0x35]);
        assert_eq!(c.trace_id[15], 0x36);
        assert_eq!(c.parent_span_id, [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
        assert!(c.sampled());
        assert_eq!(c.to_string(), GOOD);
        assert_eq!(GOOD.parse::<TraceContext>(), Ok(c));
    }

    #[test]
    fn unknown_flag_bits_are_kept_and_unsampled_is_read() {
        let c = TraceContext::parse(&GOOD.replace("-01", "-fe")).unwrap();
        assert_eq!(c.flags, 0xfe);
        assert!(!c.sampled());
    }

    #[test]
    fn wrong_lengths_are_rejected() {
        assert_eq!(kind(""), (ParseErrorKind::Length(0), 0));
        assert_eq!(kind(&GOOD[..54]), (ParseErrorKind::Length(54), 54));
        assert_eq!(kind(&format!("{GOOD}-")), (ParseErrorKind::Length(56), 55));
        assert_eq!(kind(&format!("{GOOD} ")), (ParseErrorKind::Length(56), 55));
        // A short field shifts the dashes.
        assert_eq!(kind("00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01x").0, ParseErrorKind::NotHex);
    }

    #[test]
    fn bad_hex_and_uppercase_are_rejected_at_their_byte() {
        assert_eq!(kind(&GOOD.replace("4bf9", "4bg9")), (ParseErrorKind::NotHex, 5));
        assert_eq!(kind(&GOOD.replace("4bf9", "4BF9")), (ParseErrorKind::NotHex, 4));
        assert_eq!(kind(&GOOD.replace("-01", "-0x")), (ParseErrorKind::NotHex, 54));
        assert_eq!(kind(&GOOD.replacen("00", "0g", 1)), (ParseErrorKind::NotHex, 1));
        assert_eq!(kind(&GOOD.replacen('-', "_", 1)), (ParseErrorKind::MissingDash, 2));
    }

    #[test]
    fn zero_ids_and_version_ff_are_rejected() {
        let zero_trace = format!("00-{}-00f067aa0ba902b7-01", "0".repeat(32));
        assert_eq!(kind(&zero_trace), (ParseErrorKind::ZeroTraceId, 3));
        let zero_parent = format!("00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01", "0".repeat(16));
        assert_eq!(kind(&zero_parent), (ParseErrorKind::ZeroParentId, 36));
        assert_eq!(kind(&GOOD.replacen("00", "ff", 1)), (ParseErrorKind::ForbiddenVersion, 0));
    }

    #[test]
    fn a_later_version_is_read_for_its_first_fields_and_printed_as_00() {
        let v1 = GOOD.replacen("00", "01", 1);
        assert_eq!(TraceContext::parse(&v1), TraceContext::parse(GOOD));
        let longer = format!("{v1}-what-comes-next");
        let c = TraceContext::parse(&longer).unwrap();
        assert_eq!(c.to_string(), GOOD);
        assert_eq!(kind(&format!("{v1}x")), (ParseErrorKind::MissingDash, 55));
    }

    #[test]
    fn errors_name_the_byte() {
        let e = TraceContext::parse(&GOOD.replace("4bf9", "4bg9")).unwrap_err();
        assert_eq!(e.to_string(), "invalid traceparent at byte 5: not a lowercase hex digit");
    }
}

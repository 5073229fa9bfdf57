//! W3C trace context in a trace file: recognising the reserved `phosphor`/`trace_context` event
//! that the runtime's `trace_context!` records (see [`phosphor_format::trace_context`]).
//!
//! The assembler calls [`trace_context_of`] on every event: the scope open on the event's thread
//! at its time (or, when it names one, the async slice with that id) takes the context's trace id,
//! and the caller's span id as its parent; its subtree inherits the trace id. A trace file is
//! input from anywhere, so an event that looks like the reserved one but is not well formed
//! (another phase, arguments of the wrong names or types, a header that does not parse) is not a
//! context: it stays an ordinary instant.

use phosphor_format::file::{Event, Value};
use phosphor_format::trace_context::{ARG_ASYNC_ID, ARG_TRACEPARENT, CATEGORY, NAME};
use phosphor_format::Phase;

pub use phosphor_format::trace_context::{ParseTraceContextError, TraceContext};

/// The trace context an event carries, with the async slice's id when it names one; `None` for
/// every other event, including a malformed context event.
pub fn trace_context_of(event: &Event<'_>) -> Option<(TraceContext, Option<u64>)> {
    let cs = &event.callsite;
    if cs.phase != Phase::Instant || cs.dynamic_name || cs.category != CATEGORY || cs.name != NAME {
        return None;
    }
    let [a0, a1] = event.args;
    let (ARG_TRACEPARENT, Value::Str(header)) = a0? else { return None };
    if event.truncated {
        return None;
    }
    let context = TraceContext::parse(header).ok()?;
    let async_id = match a1 {
        None => None,
        Some((ARG_ASYNC_ID, Value::U64(id))) => Some(id),
        Some(_) => return None,
    };
    Some((context, async_id))
}

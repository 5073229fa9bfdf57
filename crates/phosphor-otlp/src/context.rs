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
use phosphor_format::trace_context::{
    ARG_ASYNC_ID, ARG_TRACEPARENT, ARG_TRACESTATE, CATEGORY, MAX_TRACESTATE_LEN, NAME, STATE_NAME,
};
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

/// The caller's `tracestate` an event carries (the reserved `phosphor`/`trace_state` instant that
/// `trace_context!(header, tracestate: ts)` records after the context), with the async slice's id
/// when it names one; `None` for every other event, a malformed one included (one past
/// [`MAX_TRACESTATE_LEN`] bytes too).
pub fn trace_state_of<'e>(event: &Event<'e>) -> Option<(&'e str, Option<u64>)> {
    let cs = &event.callsite;
    if cs.phase != Phase::Instant || cs.dynamic_name || cs.category != CATEGORY || cs.name != STATE_NAME {
        return None;
    }
    let [a0, a1] = event.args;
    let (ARG_TRACESTATE, Value::Str(state)) = a0? else { return None };
    if event.truncated || state.is_empty() || state.len() > MAX_TRACESTATE_LEN {
        return None;
    }
    let async_id = match a1 {
        None => None,
        Some((ARG_ASYNC_ID, Value::U64(id))) => Some(id),
        Some(_) => return None,
    };
    Some((state, async_id))
}

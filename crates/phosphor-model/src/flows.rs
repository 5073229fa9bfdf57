//! Flows: an instrumented future's async slice (`trace_future!`) linked to the slices that work
//! for it, its polls (format 1.3's *flow* flag, `docs/FORMAT.md`).
//!
//! The three callsites of a future share its category and name and are flagged: the async begin
//! and end carry the task's id as their async id, each poll (a slice on the thread that ran it)
//! as its argument 0. [`member`] says which an event is; [`flow_id`] is the flow's id, the same
//! for the three, which the Perfetto and Chrome JSON writers write (Perfetto's `flow_ids` and
//! `terminating_flow_ids`, Chrome's `bind_id`) and the SQL `flows` table links by. The begin
//! starts the flow and the end ends it, so a flow has two ends even with no poll.

use phosphor_format::file::{Event, Value};
use phosphor_format::Phase;

/// What an event is in its flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Member {
    /// The async slice's begin: starts the flow.
    Begin,
    /// A slice that works for it (a poll): continues the flow.
    Step,
    /// The async slice's end: ends the flow.
    End,
}

/// The event's place in a flow, and the async id of the slice the flow belongs to; `None` for an
/// event in no flow (its callsite is not flagged; a flagged slice whose argument 0 is no `u64`).
pub fn member(e: &Event<'_>) -> Option<(Member, u64)> {
    let cs = &e.callsite;
    if !cs.flow {
        return None;
    }
    match cs.phase {
        Phase::AsyncBegin => Some((Member::Begin, e.async_id.unwrap_or(0))),
        Phase::AsyncEnd => Some((Member::End, e.async_id.unwrap_or(0))),
        p if p.has_duration() => match e.args[0] {
            Some((_, Value::U64(id))) => Some((Member::Step, id)),
            _ => None,
        },
        _ => None,
    }
}

/// The flow that links async slice `id` of category `category` and callsite name `name` to the
/// slices that work for it: a hash of the three, the same in every chunk of a file and every
/// output; never 0 (not a valid flow id in Perfetto).
pub fn flow_id(category: &str, name: &str, id: u64) -> u64 {
    let h = phosphor_format::fnv1a64(category.as_bytes())
        ^ phosphor_format::fnv1a64(name.as_bytes()).rotate_left(21);
    // A final multiply-xorshift mixes the id into every bit.
    let x = (h ^ id).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (x ^ x >> 29).max(1)
}

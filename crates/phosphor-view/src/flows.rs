//! Flows: an instrumented future's async slice and its polls, linked (`trace_future!`).
//!
//! Its three callsites share the future's name and flag the flow: the async begin and end carry
//! the task's id as their async id, each poll (a complete slice on the thread that ran it) as its
//! argument 0. The index keeps every flagged event as a [`FlowMember`], sorted by (name, id,
//! time), so that a flow is a run of members; `GET /api/flow` gives the run of a slice's flow
//! with each member's track and slice, for the page to draw arrows from one to the next (the
//! begin, each poll in time order, the end), as Perfetto draws a flow.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};

use crate::file::{IndexFile, ThreadTrack};
use crate::query::partition;
use crate::records::{u32_at, u64_at};
use crate::server::{Failure, Shared};

/// Bytes of a [`FlowMember`] in the index.
pub const FLOW_BYTES: usize = 32;
/// The most members an answer gives.
pub const MAX_MEMBERS: usize = 2000;
/// The most slices of one start looked at on a level for a member's.
const MAX_SAME_START: u64 = 4096;

/// What a member of a flow is.
pub mod member_kinds {
    /// The async slice's begin (the member is the async slice).
    pub const BEGIN: u8 = 0;
    /// A poll: a complete slice on a thread.
    pub const POLL: u8 = 1;
    /// The async slice's end (the member is the async slice too).
    pub const END: u8 = 2;
}

/// One flagged event of a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowMember {
    /// The flow's name's number.
    pub name: u32,
    /// The task's id.
    pub id: u64,
    /// The event's time (a poll's start).
    pub ts: u64,
    /// The thread that recorded it.
    pub tid: u32,
    /// File offset of its main record (the slice's `event`); at most 2^56 − 1.
    pub event: u64,
    /// [`member_kinds`].
    pub kind: u8,
}

impl FlowMember {
    pub(crate) fn encode(&self) -> [u8; FLOW_BYTES] {
        let mut b = [0u8; FLOW_BYTES];
        b[0..8].copy_from_slice(&self.id.to_le_bytes());
        b[8..16].copy_from_slice(&self.ts.to_le_bytes());
        let packed = crate::records::pack_offset(self.event).unwrap_or(self.event & ((1 << 56) - 1))
            | u64::from(self.kind) << 56;
        b[16..24].copy_from_slice(&packed.to_le_bytes());
        b[24..28].copy_from_slice(&self.name.to_le_bytes());
        b[28..32].copy_from_slice(&self.tid.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8; FLOW_BYTES]) -> FlowMember {
        let packed = u64_at(b, 16);
        FlowMember {
            id: u64_at(b, 0),
            ts: u64_at(b, 8),
            event: crate::records::unpack_offset(packed),
            kind: (packed >> 56) as u8,
            name: u32_at(b, 24),
            tid: u32_at(b, 28),
        }
    }

    /// The order of the index's flow section.
    pub(crate) fn key(&self) -> (u32, u64, u64, u8) {
        (self.name, self.id, self.ts, self.kind)
    }
}

/// The level and number of the slice of `track` that starts at `start` and was recorded at
/// `event`.
fn find(index: &IndexFile, track: &ThreadTrack, start: u64, event: u64) -> Option<(usize, u64)> {
    track.levels.iter().enumerate().find_map(|(level, &(first, n))| {
        let end = first + n;
        let from = partition(first, end, |k| index.slice(k).start < start);
        // Slices of one start share a level only when empty: look at each (at most
        // `MAX_SAME_START`, so that a hostile trace of a million empty slices costs little).
        let mut i = from;
        while i < end.min(from + MAX_SAME_START) && index.slice(i).start == start {
            if index.slice(i).event == event {
                return Some((level, i));
            }
            i += 1;
        }
        None
    })
}

/// Where a member's slice is: its track (a thread; or an async track, by its place), its level,
/// and its number. An end's slice is its begin's (`begin`, when the flow has one).
fn locate(
    index: &IndexFile,
    m: &FlowMember,
    begin: Option<(Option<usize>, u32, usize, u64)>,
) -> Option<(Option<usize>, u32, usize, u64)> {
    match m.kind {
        member_kinds::POLL => {
            let at = index.threads.binary_search_by_key(&m.tid, |t| t.tid).ok()?;
            let (level, i) = find(index, &index.threads[at], m.ts, m.event)?;
            Some((None, m.tid, level, i))
        }
        member_kinds::BEGIN => {
            let a = index.asyncs.iter().position(|t| t.tid == m.name)?;
            let (level, i) = find(index, &index.asyncs[a], m.ts, m.event)?;
            Some((Some(a), m.name, level, i))
        }
        _ => begin,
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct FlowQuery {
    trace: usize,
    /// A slice of the flow.
    index: u64,
}

/// `GET /api/flow`: the flow slice `index` belongs to, if any: its members in time order, each
/// with its track and slice.
pub(crate) async fn flow(
    State(traces): State<Shared>,
    Query(q): Query<FlowQuery>,
) -> Result<Json<FlowAnswer>, Failure> {
    crate::stats::blocking(move || flow_of(&traces, q)).await
}

/// `/api/flow`'s answer; only `members`, empty, for a slice in no flow.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct FlowAnswer {
    /// The flow's name (the future's); absent for a slice in no flow.
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// The task's id; absent for a slice in no flow.
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    /// The members in time order: the begin, the polls, the end; at most 2,000.
    members: Vec<FlowEntry>,
    /// Whether there were more members than given; absent for a slice in no flow.
    #[serde(skip_serializing_if = "Option::is_none")]
    more: Option<bool>,
}

/// A member of a flow, with its slice: on a thread (`tid`) or an async track (`async`).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct FlowEntry {
    /// `begin`, `poll` or `end`.
    kind: &'static str,
    /// Its time (a poll's start), on the shared timeline.
    ts_ns: i64,
    /// The thread of its slice; null for the async slice.
    tid: Option<u32>,
    /// The async track of its slice; null for a poll.
    #[serde(rename = "async")]
    async_track: Option<usize>,
    /// Its slice's level.
    level: usize,
    /// Its slice's number.
    index: u64,
    /// Its slice's start.
    start_ns: i64,
    /// Its slice's end.
    end_ns: i64,
}

fn flow_of(traces: &Shared, q: FlowQuery) -> Result<Json<FlowAnswer>, Failure> {
    let t = crate::server::trace(traces, q.trace)?;
    let index = &t.index;
    let s = index
        .get_slice(q.index)
        .ok_or_else(|| Failure(StatusCode::NOT_FOUND, format!("no slice {}", q.index)))?;
    // The slice's member, by its event (a poll's, or the async begin's).
    let Some(member) = index.flow_by_event(s.event).filter(|m| m.name == s.name) else {
        return Ok(Json(FlowAnswer::default()));
    };
    let n = index.flow_count();
    let from = partition(0, n, |i| (index.flow(i).name, index.flow(i).id) < (member.name, member.id));
    let to = partition(from, n, |i| (index.flow(i).name, index.flow(i).id) <= (member.name, member.id));
    let mut begin = None;
    let members: Vec<FlowEntry> = (from..to.min(from + MAX_MEMBERS as u64))
        .filter_map(|i| {
            let m = index.flow(i);
            let (async_track, tid, level, k) = locate(index, &m, begin)?;
            if m.kind == member_kinds::BEGIN {
                begin = Some((async_track, tid, level, k));
            }
            let sl = index.slice(k);
            let kind = ["begin", "poll", "end"].get(m.kind as usize).copied().unwrap_or("?");
            Some(FlowEntry {
                kind,
                ts_ns: t.ns(m.ts),
                tid: async_track.is_none().then_some(tid),
                async_track,
                level,
                index: k,
                start_ns: t.ns(sl.start),
                end_ns: t.ns(sl.end),
            })
        })
        .collect();
    Ok(Json(FlowAnswer {
        name: Some(index.name(member.name).to_owned()),
        id: Some(member.id),
        members,
        more: Some(to - from > MAX_MEMBERS as u64),
    }))
}

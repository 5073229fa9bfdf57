//! `GET /api/search`: the slices and points whose name matches a pattern, counted, and the first
//! of them from a time on, for the page's results list and its next/previous.
//!
//! A search reads every record of every served trace once (32 or 24 bytes each, mapped): about
//! 4 million a second on one core. What it keeps is bounded: a count per matching name and the
//! `limit` earliest hits.

use std::collections::BinaryHeap;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::server::{Failure, Shared, Trace};

/// The most hits one answer lists.
pub const MAX_HITS: usize = 1000;

#[derive(Debug, Deserialize)]
pub(crate) struct SearchQuery {
    /// A glob (`*`, `?`) matched against whole names, or else a substring, either case.
    q: String,
    /// List hits starting at or after this time (ns on the shared timeline).
    after: Option<i64>,
    /// How many hits to list (default 100).
    limit: Option<usize>,
}

/// Whether a name matches `q`: a glob (with `*` or `?`) matches the whole name; other text is a
/// substring, either case.
fn matcher(q: &str) -> impl Fn(&str) -> bool + '_ {
    let glob = q.contains(['*', '?']);
    let lower = q.to_lowercase();
    move |name: &str| {
        if glob {
            phosphor_format::glob_match(q, name)
        } else {
            name.to_lowercase().contains(&lower)
        }
    }
}

/// A hit: its time on the shared timeline, and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Hit {
    start: i64,
    trace: usize,
    /// 0 for a slice, 1 for a point.
    point: u8,
    index: u64,
    end: i64,
    tid: u32,
    level: u32,
    name: u32,
}

pub(crate) async fn search(
    State(traces): State<Shared>,
    Query(q): Query<SearchQuery>,
) -> Result<Json<Value>, Failure> {
    // Reads a whole trace at worst: on a blocking thread, not an async worker.
    crate::stats::blocking(move || search_of(&traces, q)).await
}

fn search_of(traces: &Shared, q: SearchQuery) -> Result<Json<Value>, Failure> {
    if q.q.is_empty() || q.q.len() > 1024 {
        return Err(Failure(StatusCode::BAD_REQUEST, "q must be 1 to 1024 bytes".into()));
    }
    let limit = q.limit.unwrap_or(100).clamp(1, MAX_HITS);
    let after = q.after.unwrap_or(i64::MIN);
    let matches = matcher(&q.q);
    // The `limit` earliest hits at or after `after`: the latest of them on top.
    let mut first: BinaryHeap<Hit> = BinaryHeap::new();
    let mut total = 0u64;
    let mut next_after: Option<i64> = None;
    let mut names: Vec<Value> = Vec::new();
    for (n, t) in traces.ready_traces() {
        let index = &t.index;
        let wanted: Vec<bool> = (0..index.name_count()).map(|i| matches(index.name(i))).collect();
        if !wanted.contains(&true) {
            continue;
        }
        let mut counts = vec![0u64; wanted.len()];
        let mut keep = |hit: Hit, first: &mut BinaryHeap<Hit>| {
            if hit.start < after {
                return;
            }
            first.push(hit);
            if first.len() > limit {
                let dropped = first.pop().map(|h| h.start);
                next_after = match (next_after, dropped) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
        };
        for th in index.threads.iter().chain(&index.asyncs) {
            for (level, &(from, count)) in th.levels.iter().enumerate() {
                index.scan_slices(from, from + count, |i, s| {
                    if !wanted.get(s.name as usize).copied().unwrap_or(false) {
                        return;
                    }
                    counts[s.name as usize] += 1;
                    let hit = Hit {
                        start: t.ns(s.start),
                        trace: n,
                        point: 0,
                        index: i,
                        end: t.ns(s.end),
                        tid: th.tid,
                        level: level as u32,
                        name: s.name,
                    };
                    keep(hit, &mut first);
                });
            }
            let (from, count) = th.points;
            index.scan_points(from, from + count, |i, p| {
                if !wanted.get(p.name as usize).copied().unwrap_or(false) {
                    return;
                }
                counts[p.name as usize] += 1;
                let at = t.ns(p.ts);
                let hit = Hit {
                    start: at,
                    trace: n,
                    point: 1,
                    index: i,
                    end: at,
                    tid: th.tid,
                    level: 0,
                    name: p.name,
                };
                keep(hit, &mut first);
            });
        }
        for (name, &c) in counts.iter().enumerate() {
            if c > 0 {
                total += c;
                names.push(json!({ "trace": n, "name": index.name(name as u32), "count": c }));
            }
        }
    }
    let hits: Vec<Value> = first
        .into_sorted_vec()
        .into_iter()
        .map(|h| {
            let name = traces.get(h.trace).map_or("", |t: &Trace| t.index.name(h.name));
            let kind = if h.point == 1 { "point" } else { "slice" };
            json!({ "trace": h.trace, "kind": kind, "index": h.index, "tid": h.tid, "level": h.level,
                    "start_ns": h.start, "end_ns": h.end, "name": name })
        })
        .collect();
    Ok(Json(json!({ "total": total, "names": names, "hits": hits, "next_after": next_after })))
}

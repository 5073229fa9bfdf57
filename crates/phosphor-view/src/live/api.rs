//! The API's answers for a live trace: the same shapes as the index's (`server.rs`), from the
//! live model. Each takes the model's lock, answers, and lets it go.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::Live;
use crate::query::{PointItem, SliceItem, Window};
use crate::server::{Failure, Shared};
use crate::traces::Slot;

/// The names an answer refers to, by number.
#[derive(Default)]
struct Names(BTreeMap<u32, String>);

impl Names {
    fn add(&mut self, m: &super::LiveModel, n: u32) -> u32 {
        self.0.entry(n).or_insert_with(|| m.name(n).to_owned());
        n
    }
}

/// What `/api/traces` says of a live trace besides what every trace has.
pub(crate) fn describe(slot: &Slot, live: &Live, v: &mut Value) {
    let m = live.model();
    let p = slot.place();
    // None until its first event is read.
    if let Some((start, end)) = m.span() {
        v["start_ns"] = json!(p.ns(start));
        v["end_ns"] = json!(p.ns(end));
    }
    v["events"] = json!(m.events);
    v["read_error"] = json!(live.read_error());
    v["threads"] = m
        .threads()
        .map(|(tid, name, levels, slices, points)| {
            json!({ "tid": tid, "name": name, "levels": levels, "slices": slices, "points": points })
        })
        .collect();
    v["counters"] = m
        .counters()
        .enumerate()
        .map(|(c, (name, samples))| json!({ "counter": c, "name": name, "samples": samples }))
        .collect();
    v["asyncs"] = m
        .asyncs()
        .enumerate()
        .map(|(a, (name, lanes, slices))| json!({ "async": a, "name": name, "lanes": lanes, "slices": slices }))
        .collect();
    v["live"] = json!({
        "connected": live.connected(),
        "finished": live.finished(),
        "retained": m.retained(),
        "limit": m.limit(),
        "dropped": m.dropped,
        "skipped": m.skipped,
        "refused": m.refused,
        "horizon_ns": m.horizon.map(|h| p.ns(h)),
    });
}

/// `/api/slices` of a thread (`tid`) or an async track of a live trace.
pub(crate) fn slices(
    slot: &Slot,
    live: &Live,
    tid: Option<u32>,
    async_track: Option<usize>,
    w: Window,
    from: usize,
    max_levels: usize,
) -> Option<Value> {
    let m = live.model();
    let levels = match (async_track, tid) {
        (Some(a), _) => m.async_in(a, w)?,
        (None, Some(tid)) => m.slices_in(tid, w)?,
        (None, None) => return None,
    };
    let p = slot.place();
    let mut names = Names::default();
    let more = levels.len() > from.saturating_add(max_levels);
    let levels: Vec<Value> = levels
        .into_iter()
        .skip(from)
        .take(max_levels)
        .map(|items| {
            items
                .into_iter()
                .map(|item| match item {
                    SliceItem::Slice(i, s) => {
                        json!([p.ns(s.start), p.ns(s.end), names.add(&m, s.name), i, s.flags])
                    }
                    SliceItem::Merged { first, count, start, end, name } => {
                        json!([p.ns(start), p.ns(end), -(count as i64), first, names.add(&m, name)])
                    }
                })
                .collect()
        })
        .collect();
    Some(json!({ "from": from, "levels": levels, "more_levels": more, "names": names.0 }))
}

/// `/api/points` of a thread of a live trace.
pub(crate) fn points(slot: &Slot, live: &Live, tid: u32, w: Window) -> Option<Value> {
    let m = live.model();
    let p = slot.place();
    let mut names = Names::default();
    let items: Vec<Value> = m
        .points_in(tid, w)?
        .into_iter()
        .map(|item| match item {
            PointItem::Point(i, pt) => json!([p.ns(pt.ts), names.add(&m, pt.name), i, pt.kind]),
            PointItem::Merged { first, count, start, end } => {
                json!([p.ns(start), p.ns(end), -(count as i64), first])
            }
        })
        .collect();
    Some(json!({ "points": items, "names": names.0 }))
}

/// `/api/samples` of a counter of a live trace.
pub(crate) fn samples(slot: &Slot, live: &Live, c: usize, w: Window) -> Option<Value> {
    let m = live.model();
    let p = slot.place();
    let items: Vec<Value> = m
        .samples_in(c, w)?
        .into_iter()
        .map(|s| json!([p.ns(s.start), p.ns(s.end), s.count, finite(s.min), finite(s.max), finite(s.last)]))
        .collect();
    Some(json!({ "samples": items }))
}

fn finite(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        json!(v.to_string())
    }
}

/// `/api/slice` or `/api/point` (`point`) of number `id` of live trace `n`: what the model holds
/// of it, and its event's details read again from the file, on a blocking thread. 404 if there
/// is none, or the trace has been indexed meanwhile (its numbers are the index's then).
pub(crate) async fn details(traces: Shared, n: usize, id: u64, point: bool) -> Result<Json<Value>, Failure> {
    crate::stats::blocking(move || {
        let gone = |why: String| Failure(StatusCode::NOT_FOUND, why);
        let slot = traces.slot(n).ok_or_else(|| gone(format!("no trace {n}")))?;
        let live = slot
            .live()
            .ok_or_else(|| gone(format!("trace {n} is indexed now: its numbers are the index's")))?;
        let answer = if point { self::point(slot, live, id) } else { slice(slot, live, id) };
        let what = if point { "point" } else { "slice" };
        let mut v = answer.ok_or_else(|| gone(format!("no live {what} {id}")))?;
        v["event"] = live.event(&slot.path, id).unwrap_or_else(|why| json!({ "error": why }));
        Ok(Json(v))
    })
    .await
}

/// `/api/slice` of a live slice: what the model holds of it, its path and self time from the
/// slices the model holds (its event's details are read by `details`).
pub(crate) fn slice(slot: &Slot, live: &Live, id: u64) -> Option<Value> {
    let m = live.model();
    let (s, tid, async_track, level) = m.slice(id)?;
    let p = slot.place();
    // An async slice's lanes do not nest: its path is its name.
    let (path, self_ns, children) = match tid {
        Some(tid) => m.context(tid, &s, level),
        None => (vec![s.name], m.duration_ns(&s), 0),
    };
    let path: Vec<&str> = path.into_iter().map(|n| m.name(n)).collect();
    Some(json!({
        "index": id,
        "name": m.name(s.name),
        "start_ns": p.ns(s.start),
        "end_ns": p.ns(s.end),
        // As `phosphor stats` measures it: its end less its start, each rounded to the nanosecond.
        "duration_ns": m.duration_ns(&s),
        "self_ns": self_ns,
        "children": children,
        "path": path,
        "tid": tid,
        "async": async_track,
        "level": level,
        "callsite": null,
        "flags": s.flags,
        "event_offset": null,
        "live": true,
    }))
}

/// `/api/point` of a live point.
pub(crate) fn point(slot: &Slot, live: &Live, id: u64) -> Option<Value> {
    let m = live.model();
    let (pt, tid) = m.point(id)?;
    Some(json!({
        "index": id,
        "name": m.name(pt.name),
        "kind": pt.kind,
        "ts_ns": slot.place().ns(pt.ts),
        "tid": tid,
        "live": true,
    }))
}

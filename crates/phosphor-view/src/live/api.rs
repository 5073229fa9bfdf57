//! The API's answers for a live trace: the types of the index's answers (`api.rs`), from the
//! live model. Each takes the model's lock, answers, and lets it go.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::Live;
use crate::api::{self, Finite, PointEntry, TraceBody};
use crate::events::EventAnswer;
use crate::query::{PointItem, Window};
use crate::server::{Failure, Shared};
use crate::traces::Slot;

/// What `/api/traces` says of a live trace besides what every trace has.
pub(crate) fn describe(slot: &Slot, live: &Live) -> TraceBody {
    let m = live.model();
    let p = slot.place();
    // None until its first event is read.
    let span = m.span();
    let threads = m
        .threads()
        .map(|(tid, name, levels, slices, points)| api::ThreadEntry {
            tid,
            name: name.map(str::to_owned),
            levels,
            slices: slices as u64,
            points: points as u64,
        })
        .collect();
    let counters = m
        .counters()
        .enumerate()
        .map(|(c, (name, samples))| api::CounterEntry {
            counter: c,
            name: name.to_owned(),
            samples: samples as u64,
        })
        .collect();
    let asyncs = m
        .asyncs()
        .enumerate()
        .map(|(a, (name, lanes, slices))| api::AsyncEntry {
            async_track: a,
            name: name.to_owned(),
            lanes,
            slices: slices as u64,
        })
        .collect();
    TraceBody::Live {
        start_ns: span.map(|s| p.ns(s.0)),
        end_ns: span.map(|s| p.ns(s.1)),
        events: m.events,
        read_error: live.read_error().map(str::to_owned),
        threads,
        counters,
        asyncs,
        live: api::LiveState {
            connected: live.connected(),
            finished: live.finished(),
            retained: m.retained(),
            limit: m.limit(),
            dropped: m.dropped,
            skipped: m.skipped,
            refused: m.refused,
            horizon_ns: m.horizon.map(|h| p.ns(h)),
        },
    }
}

/// `/api/slices` of a thread (`tid`) or an async track of a live trace, as JSON
/// (`api::slices_json`, as for an index).
pub(crate) fn slices(
    slot: &Slot,
    live: &Live,
    tid: Option<u32>,
    async_track: Option<usize>,
    w: Window,
    from: usize,
    max_levels: usize,
) -> Option<Result<Vec<u8>, serde_json::Error>> {
    let m = live.model();
    let levels = match (async_track, tid) {
        (Some(a), _) => m.async_in(a, w)?,
        (None, Some(tid)) => m.slices_in(tid, w)?,
        (None, None) => return None,
    };
    let p = slot.place();
    let more = levels.len() > from.saturating_add(max_levels);
    let levels = levels.into_iter().skip(from).take(max_levels);
    Some(api::slices_json(from, levels, more, |ticks| p.ns(ticks), |n| m.name(n).to_owned()))
}

/// `/api/points` of a thread of a live trace.
pub(crate) fn points(slot: &Slot, live: &Live, tid: u32, w: Window) -> Option<api::PointsAnswer> {
    let m = live.model();
    let p = slot.place();
    let mut names = BTreeMap::new();
    let mut named = |n: u32| {
        names.entry(n).or_insert_with(|| m.name(n).to_owned());
        n
    };
    let points = m
        .points_in(tid, w)?
        .into_iter()
        .map(|item| match item {
            PointItem::Point(i, pt) => PointEntry::Point(p.ns(pt.ts), named(pt.name), i, pt.kind),
            PointItem::Merged { first, count, start, end } => {
                PointEntry::Merged(p.ns(start), p.ns(end), -(count as i64), first)
            }
        })
        .collect();
    Some(api::PointsAnswer { points, names })
}

/// `/api/samples` of a counter of a live trace.
pub(crate) fn samples(
    slot: &Slot,
    live: &Live,
    c: usize,
    w: Window,
) -> Option<api::Samples<api::SamplePixel>> {
    let m = live.model();
    let p = slot.place();
    let samples = m
        .samples_in(c, w)?
        .into_iter()
        .map(|s| (p.ns(s.start), p.ns(s.end), s.count, Finite(s.min), Finite(s.max), Finite(s.last)))
        .collect();
    Some(api::Samples { samples })
}

/// `/api/slice` or `/api/point` (`point`) of number `id` of live trace `n`: what the model holds
/// of it, and its event's details read again from the file, on a blocking thread. 404 if there
/// is none, or the trace has been indexed meanwhile (its numbers are the index's then).
pub(crate) async fn details(traces: Shared, n: usize, id: u64, point: bool) -> Result<Response, Failure> {
    let read = tokio::task::spawn_blocking(move || {
        let gone = |why: String| Failure(StatusCode::NOT_FOUND, why);
        let slot = traces.slot(n).ok_or_else(|| gone(format!("no trace {n}")))?;
        let live = slot
            .live()
            .ok_or_else(|| gone(format!("trace {n} is indexed now: its numbers are the index's")))?;
        let what = if point { "point" } else { "slice" };
        let missing = || gone(format!("no live {what} {id}"));
        let event = || match live.event(&slot.path, id) {
            Ok(details) => EventAnswer::Details(details),
            Err(error) => EventAnswer::Failed(api::ErrorAnswer { error }),
        };
        Ok(if point {
            let mut answer = self::point(slot, live, id).ok_or_else(missing)?;
            answer.event = Some(event());
            Json(answer).into_response()
        } else {
            let mut answer = slice(slot, live, id).ok_or_else(missing)?;
            answer.event = event();
            Json(answer).into_response()
        })
    });
    read.await.unwrap_or_else(|e| Err(Failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())))
}

/// `/api/slice` of a live slice: what the model holds of it, its path and self time from the
/// slices the model holds (its event's details are read by `details`).
pub(crate) fn slice(slot: &Slot, live: &Live, id: u64) -> Option<api::SliceAnswer> {
    let m = live.model();
    let (s, tid, async_track, level) = m.slice(id)?;
    let p = slot.place();
    // An async slice's lanes do not nest: its path is its name.
    let (path, self_ns, children) = match tid {
        Some(tid) => m.context(tid, &s, level),
        None => (vec![s.name], m.duration_ns(&s), 0),
    };
    Some(api::SliceAnswer {
        index: id,
        name: m.name(s.name).to_owned(),
        start_ns: p.ns(s.start),
        end_ns: p.ns(s.end),
        // As `phosphor stats` measures it: its end less its start, each rounded to the nanosecond.
        duration_ns: m.duration_ns(&s),
        self_ns,
        children,
        path: path.into_iter().map(|n| m.name(n).to_owned()).collect(),
        tid,
        async_track,
        level,
        callsite: None,
        flags: s.flags,
        event_offset: None,
        // Set by `details`, which reads the file once the model's lock is let go.
        event: EventAnswer::Failed(api::ErrorAnswer { error: "not read yet".into() }),
        system: None,
        live: true,
    })
}

/// `/api/point` of a live point (its event's details are read by `details`).
pub(crate) fn point(slot: &Slot, live: &Live, id: u64) -> Option<api::PointAnswer> {
    let m = live.model();
    let (pt, tid) = m.point(id)?;
    Some(api::PointAnswer {
        index: id,
        name: m.name(pt.name).to_owned(),
        kind: pt.kind,
        ts_ns: slot.place().ns(pt.ts),
        tid,
        // Set by `details`.
        event: None,
        live: true,
    })
}

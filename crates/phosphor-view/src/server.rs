//! The viewer's HTTP server: a JSON API over the indexes of the traces it was given
//! (`docs/VIEW-API.md`), on axum.
//!
//! Only the traces given at start are read: requests name a trace by its number and a thread by
//! its id, never a path. Each answer is bounded: a window gives at most about two items a pixel
//! and level, at most [`MAX_PIXELS`] pixels and [`MAX_LEVELS`] levels.

use std::collections::BTreeMap;
use std::io;
use std::net::TcpListener;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;

use crate::api::{self, Finite};
use crate::events::EventAnswer;
use crate::file::IndexFile;
use crate::live::Live;
use crate::query::{PointItem, Window};
use crate::traces::Place;
pub use crate::traces::{Slot, Trace, Traces};

/// The widest window an answer is made for, in pixels.
pub const MAX_PIXELS: u32 = 8192;
/// The most levels of a thread one answer gives (the deeper ones are asked for by `from`).
pub const MAX_LEVELS: usize = 256;

pub(crate) type Shared = Arc<Traces>;

/// An answer of status 400 or 404 with a message.
pub(crate) struct Failure(pub(crate) StatusCode, pub(crate) String);

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        (self.0, Json(crate::api::ErrorAnswer { error: self.1 })).into_response()
    }
}

fn not_found(what: String) -> Failure {
    Failure(StatusCode::NOT_FOUND, what)
}

fn no_track() -> Failure {
    not_found("no such thread, async track or counter".into())
}

/// The routes of the API.
pub fn router(traces: Arc<Traces>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/view.js", get(script))
        .route("/panels.js", get(panels_script))
        .route("/system.js", get(system_script))
        .route("/draw.js", get(|| module(DRAW_JS)))
        .route("/input.js", get(|| module(INPUT_JS)))
        .route("/format.js", get(|| module(FORMAT_JS)))
        .route("/url.js", get(|| module(URL_JS)))
        .route("/table.js", get(|| module(TABLE_JS)))
        .route("/flame.js", get(|| module(FLAME_JS)))
        .route("/compare.js", get(|| module(crate::compare::COMPARE_JS)))
        .route("/live.js", get(|| module(LIVE_JS)))
        .route("/bands.js", get(|| module(BANDS_JS)))
        .route("/frames.js", get(|| module(FRAMES_JS)))
        .route("/view.css", get(style))
        .route("/api/traces", get(traces_list))
        .route("/api/overview", get(overview))
        .route("/api/slices", get(slices))
        .route("/api/points", get(points))
        .route("/api/samples", get(samples))
        .route("/api/slice", get(slice_details))
        .route("/api/flow", get(crate::flows::flow))
        .route("/api/point", get(point_details))
        .route("/api/search", get(crate::search::search))
        .route("/api/stats", get(crate::stats::stats))
        .route("/api/kind", get(crate::stats::kind))
        .route("/api/compare", get(crate::compare::compare))
        .route("/api/system", get(crate::system_api::system))
        .route("/api/context", get(crate::system_api::context))
        .route("/api/heap", get(crate::system_api::heap))
        .route("/api/stack", get(crate::system_api::stack))
        .route("/api/stacks", get(crate::system_api::stacks))
        .route("/api/frames", get(crate::frame_track::frames))
        .route("/frametrack.js", get(|| module(FRAMETRACK_JS)))
        .route("/api/tasks", get(crate::task_table::tasks))
        .route("/tasks.js", get(|| module(TASKS_JS)))
        .route("/stacks.js", get(|| module(STACKS_JS)))
        .with_state(traces)
}

/// Serves `traces` on `listener` until the process ends; a trace not yet indexed
/// ([`Traces::index_all`]) shows its overview, then its tracks once indexed.
pub fn serve(traces: Arc<Traces>, listener: TcpListener) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_io().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        axum::serve(listener, router(traces)).await
    })
}

/// Trace `n`: 404 if there is none, 503 while it is being indexed, 500 if that failed.
pub(crate) fn trace(traces: &Shared, n: usize) -> Result<&Trace, Failure> {
    match source(traces, n)? {
        Source::Index(t) => Ok(t),
        Source::Live(..) => Err(Failure(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("trace {n} is live: it is indexed once its recording has ended"),
        )),
    }
}

/// Where a trace's answers come from: its index, or its live model until then.
pub(crate) enum Source<'a> {
    Index(&'a Trace),
    Live(&'a Slot, &'a Live),
}

/// Trace `n`'s source: 404 if there is none, 503 while it is being indexed, 500 if that failed.
pub(crate) fn source(traces: &Shared, n: usize) -> Result<Source<'_>, Failure> {
    let slot =
        traces.slot(n).ok_or_else(|| not_found(format!("no trace {n} (there are {})", traces.len())))?;
    if let Some(t) = slot.trace() {
        return Ok(Source::Index(t));
    }
    if let Some(live) = slot.live() {
        return Ok(Source::Live(slot, live));
    }
    Err(match slot.failure() {
        Some(why) => Failure(StatusCode::INTERNAL_SERVER_ERROR, why.to_owned()),
        None => Failure(StatusCode::SERVICE_UNAVAILABLE, format!("trace {n} is still being indexed")),
    })
}

/// `GET /api/traces`: every trace, and how far its indexing has come; once indexed, its threads,
/// counters and async tracks; before, the threads of its overview.
async fn traces_list(State(traces): State<Shared>) -> Json<api::TracesAnswer> {
    let list = traces.slots().enumerate().map(|(n, slot)| trace_entry(n, slot)).collect();
    let (done, live, listening) =
        (traces.all_done(), traces.is_live(), traces.listening().map(str::to_owned));
    Json(api::TracesAnswer { traces: list, done, live, listening })
}

/// The most tracks of each kind (threads, counters, async tracks) a trace lists: its busiest.
/// A hostile trace may have millions; a page cannot show them, and the list must stay bounded.
pub const MAX_TRACKS: usize = 1024;

/// The places of the `MAX_TRACKS` items of `weights` that weigh most, in their order.
fn busiest(weights: impl ExactSizeIterator<Item = u64>) -> Vec<usize> {
    let n = weights.len();
    let mut all: Vec<(u64, usize)> = weights.enumerate().map(|(i, w)| (w, i)).collect();
    if n > MAX_TRACKS {
        all.select_nth_unstable_by_key(MAX_TRACKS - 1, |&(w, i)| (std::cmp::Reverse(w), i));
        all.truncate(MAX_TRACKS);
    }
    let mut places: Vec<usize> = all.into_iter().map(|(_, i)| i).collect();
    places.sort_unstable();
    places
}

/// The places of the threads of `index` that `/api/traces` lists: the busiest [`MAX_TRACKS`].
pub(crate) fn listed_threads(index: &IndexFile) -> Vec<usize> {
    let slices = |th: &crate::file::ThreadTrack| th.levels.iter().map(|l| l.1).sum::<u64>();
    busiest(index.threads.iter().map(|th| slices(th) + th.points.1))
}

fn trace_entry(n: usize, slot: &Slot) -> api::TraceEntry {
    let (stage, read) = slot.stage();
    let mut entry = api::TraceEntry {
        trace: n,
        file: slot.path.file_name().map(|f| f.to_string_lossy().into_owned()),
        process: slot.process.clone(),
        pid: slot.pid,
        clock: slot.clock.clone(),
        offset_ns: slot.place().offset_ns(),
        placed: slot.placed_by().to_string(),
        state: match (slot.trace(), slot.failure(), stage) {
            (Some(_), _, _) => "ready",
            _ if slot.live().is_some() => "live",
            (_, Some(_), _) => "failed",
            (_, _, crate::traces::stages::SCANNING) => "scanning",
            _ => "indexing",
        },
        bytes: slot.len,
        read,
        error: slot.failure().map(str::to_owned),
        body: None,
    };
    entry.body = match slot.live() {
        Some(live) => Some(crate::live::api::describe(slot, live)),
        None => body(slot, slot.trace()),
    };
    entry
}

/// What `/api/traces` says of the tracks of a trace not live: its index's, else its scan's.
fn body(slot: &Slot, t: Option<&Trace>) -> Option<api::TraceBody> {
    match t {
        Some(t) => Some(ready_body(t)),
        None => slot.overview().map(|o| {
            let listed = busiest(o.threads.iter().map(|th| th.events));
            api::TraceBody::Scanned {
                start_ns: slot.place().ns(o.start_ticks),
                end_ns: slot.place().ns(o.end_ticks),
                read_error: o.read_error.clone(),
                threads_total: o.threads.len(),
                threads: listed
                    .into_iter()
                    .map(|k| &o.threads[k])
                    .map(|th| api::ScannedThread { tid: th.tid, name: th.name.clone(), events: th.events })
                    .collect(),
            }
        }),
    }
}

/// An indexed trace's tracks for `/api/traces`: the busiest [`MAX_TRACKS`] of each kind.
fn ready_body(t: &Trace) -> api::TraceBody {
    let i = &t.index;
    let slices = |th: &crate::file::ThreadTrack| th.levels.iter().map(|l| l.1).sum::<u64>();
    let threads = listed_threads(i)
        .into_iter()
        .map(|k| &i.threads[k])
        .map(|th| api::ThreadEntry {
            tid: th.tid,
            name: th.name.map(|n| i.name(n).to_owned()),
            levels: th.levels.len(),
            slices: slices(th),
            points: th.points.1,
        })
        .collect();
    let counters = busiest(i.counters.iter().map(|ct| ct.samples.1))
        .into_iter()
        .map(|c| api::CounterEntry {
            counter: c,
            name: i.name(i.counters[c].name).to_owned(),
            samples: i.counters[c].samples.1,
        })
        .collect();
    let asyncs = busiest(i.asyncs.iter().map(slices))
        .into_iter()
        .map(|a| (a, &i.asyncs[a]))
        .map(|(a, track)| api::AsyncEntry {
            async_track: a,
            name: i.name(track.tid).to_owned(),
            lanes: track.levels.len(),
            slices: slices(track),
        })
        .collect();
    api::TraceBody::Ready {
        start_ns: t.ns(i.meta.start_ticks),
        end_ns: t.ns(i.meta.end_ticks),
        events: i.meta.events,
        read_error: i.meta.read_error.clone(),
        threads,
        counters,
        asyncs,
        threads_total: i.threads.len(),
        counters_total: i.counters.len(),
        asyncs_total: i.asyncs.len(),
    }
}

/// `GET /api/overview`: while a trace is indexed, how many events each of its threads has in
/// each pixel of a window (a chunk's events spread over its span): `{"threads": [{"tid",
/// "events": [..]}]}`.
async fn overview(
    State(traces): State<Shared>,
    Query(q): Query<OverviewQuery>,
) -> Result<Json<api::OverviewAnswer>, Failure> {
    let slot = traces.slot(q.trace).ok_or_else(|| not_found(format!("no trace {}", q.trace)))?;
    let o = slot
        .overview()
        .ok_or_else(|| Failure(StatusCode::SERVICE_UNAVAILABLE, "the overview is not ready".into()))?;
    if q.px == 0 || q.px > MAX_PIXELS || q.end < q.start {
        let why = format!("px must be 1 to {MAX_PIXELS} and end at least start");
        return Err(Failure(StatusCode::BAD_REQUEST, why));
    }
    let p = slot.place();
    let w = Window::new(p.ticks(q.start, false), p.ticks(q.end, true), q.px);
    // The threads `/api/traces` lists, in one pass over the chunks.
    let listed = busiest(o.threads.iter().map(|th| th.events));
    let threads = o
        .densities(&listed, w)
        .into_iter()
        .zip(&listed)
        .map(|(d, &k)| {
            let events: Vec<f64> = d.iter().map(|e| (e * 10.0).round() / 10.0).collect();
            api::OverviewRow { tid: o.threads[k].tid, events }
        })
        .collect();
    Ok(Json(api::OverviewAnswer { threads }))
}

#[derive(Debug, Deserialize)]
struct OverviewQuery {
    trace: usize,
    start: i64,
    end: i64,
    px: u32,
}

/// The page and its assets, in the binary: no network at run time.
const INDEX_HTML: &str = include_str!("../assets/index.html");
const VIEW_JS: &str = include_str!("../assets/view.js");
const PANELS_JS: &str = include_str!("../assets/panels.js");
const SYSTEM_JS: &str = include_str!("../assets/system.js");
const DRAW_JS: &str = include_str!("../assets/draw.js");
const INPUT_JS: &str = include_str!("../assets/input.js");
const FORMAT_JS: &str = include_str!("../assets/format.js");
const URL_JS: &str = include_str!("../assets/url.js");
const TABLE_JS: &str = include_str!("../assets/table.js");
const FLAME_JS: &str = include_str!("../assets/flame.js");
const LIVE_JS: &str = include_str!("../assets/live.js");
const BANDS_JS: &str = include_str!("../assets/bands.js");
const FRAMES_JS: &str = include_str!("../assets/frames.js");
const FRAMETRACK_JS: &str = include_str!("../assets/frametrack.js");
const TASKS_JS: &str = include_str!("../assets/tasks.js");
const STACKS_JS: &str = include_str!("../assets/stacks.js");
const VIEW_CSS: &str = include_str!("../assets/view.css");

async fn page() -> Html<&'static str> {
    Html(INDEX_HTML)
}

async fn script() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], VIEW_JS)
}

async fn panels_script() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], PANELS_JS)
}

async fn system_script() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], SYSTEM_JS)
}

/// A script of the page's (an ES module).
async fn module(text: &'static str) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], text)
}

async fn style() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], VIEW_CSS)
}

/// A window of a track: `start` and `end` on the shared timeline, `px` pixels wide.
#[derive(Debug, Deserialize)]
struct WindowQuery {
    trace: usize,
    tid: Option<u32>,
    /// An async track (its place in the trace's `asyncs`) instead of a thread.
    #[serde(rename = "async")]
    async_track: Option<usize>,
    counter: Option<usize>,
    start: i64,
    end: i64,
    px: u32,
    /// The first level to give (slices).
    #[serde(default)]
    from: usize,
}

impl WindowQuery {
    /// The window in the trace's own time.
    fn window(&self, t: &Trace) -> Result<Window, Failure> {
        self.window_at(t.place())
    }

    /// The window in the time of a trace placed at `p`.
    fn window_at(&self, p: &Place) -> Result<Window, Failure> {
        if self.px == 0 || self.px > MAX_PIXELS || self.end < self.start {
            let why = format!("px must be 1 to {MAX_PIXELS} and end at least start");
            return Err(Failure(StatusCode::BAD_REQUEST, why));
        }
        let mut w = Window::new(p.ticks(self.start, false), p.ticks(self.end, true), self.px);
        // A slice a pixel wide in nanoseconds is one in ticks too, so never merged: through a
        // clock of other than 1 ns a tick (the TSC), each end is rounded to the nanosecond, and
        // a duration in nanoseconds is within 1 ns of its ticks' (issue 39).
        let rate = p.clock().ns_per_tick;
        if rate != 1.0 && rate.is_finite() && rate > 0.0 {
            let pixel_ns = (i128::from(self.end) - i128::from(self.start)) as f64 / f64::from(self.px);
            w.pixel = w.pixel.min(((pixel_ns - 1.0) / rate).floor().max(1.0) as u64);
        }
        Ok(w)
    }

    /// The answer for a live trace, from its model.
    fn live(&self, slot: &Slot, live: &Live, what: &str) -> Result<Response, Failure> {
        let w = self.window_at(slot.place())?;
        let answer = match what {
            "slices" => {
                if self.tid.is_none() && self.async_track.is_none() {
                    return Err(Failure(StatusCode::BAD_REQUEST, "tid or async is required".into()));
                }
                let answer = crate::live::api::slices(
                    slot,
                    live,
                    self.tid,
                    self.async_track,
                    w,
                    self.from,
                    MAX_LEVELS,
                );
                return answer.map(json_bytes).unwrap_or_else(|| Err(no_track()));
            }
            "points" => {
                let tid =
                    self.tid.ok_or_else(|| Failure(StatusCode::BAD_REQUEST, "tid is required".into()))?;
                crate::live::api::points(slot, live, tid, w).map(|a| Json(a).into_response())
            }
            _ => {
                let c = self
                    .counter
                    .ok_or_else(|| Failure(StatusCode::BAD_REQUEST, "counter is required".into()))?;
                crate::live::api::samples(slot, live, c, w).map(|a| Json(a).into_response())
            }
        };
        answer.ok_or_else(no_track)
    }

    fn thread<'t>(&self, t: &'t Trace) -> Result<&'t crate::file::ThreadTrack, Failure> {
        if let Some(a) = self.async_track {
            return t.index.asyncs.get(a).ok_or_else(|| not_found(format!("no async track {a}")));
        }
        let tid =
            self.tid.ok_or_else(|| Failure(StatusCode::BAD_REQUEST, "tid or async is required".into()))?;
        let threads = &t.index.threads;
        let at = threads
            .binary_search_by_key(&tid, |th| th.tid)
            .map_err(|_| not_found(format!("no thread {tid}")))?;
        Ok(&threads[at])
    }
}

/// The names an answer refers to, by number.
#[derive(Default)]
struct Names(BTreeMap<u32, String>);

impl Names {
    fn add(&mut self, index: &IndexFile, n: u32) -> u32 {
        self.0.entry(n).or_insert_with(|| index.name(n).to_owned());
        n
    }
}

/// `GET /api/slices`: a thread's slices in a window, by level: `[start, end, name, index, flags]`
/// for a slice, `[start, end, -count, first, name]` for a run of narrower ones (`name` the run's
/// dominant one, `SliceItem::Merged`). The answer may hold tens of thousands of items: its JSON
/// is written an item at a time (`api::slices_json`), not made of values first.
async fn slices(State(traces): State<Shared>, Query(q): Query<WindowQuery>) -> Result<Response, Failure> {
    let t = match source(&traces, q.trace)? {
        Source::Index(t) => t,
        Source::Live(slot, live) => return q.live(slot, live, "slices"),
    };
    let (w, thread) = (q.window(t)?, q.thread(t)?);
    let levels = t.index.slices_in(thread, w).into_iter().skip(q.from).take(MAX_LEVELS);
    let more = thread.levels.len() > q.from.saturating_add(MAX_LEVELS);
    let out = api::slices_json(q.from, levels, more, |ticks| t.ns(ticks), |n| t.index.name(n).to_owned());
    json_bytes(out)
}

/// An answer of JSON already written, or 500 if writing it failed.
pub(crate) fn json_bytes(out: Result<Vec<u8>, serde_json::Error>) -> Result<Response, Failure> {
    let out = out.map_err(|e| Failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    Ok(([(header::CONTENT_TYPE, "application/json")], out).into_response())
}

/// `GET /api/points`: a thread's points in a window: `[ts, name, index, kind]` for a point,
/// `[start, end, -count, first]` for several within a pixel.
async fn points(State(traces): State<Shared>, Query(q): Query<WindowQuery>) -> Result<Response, Failure> {
    let t = match source(&traces, q.trace)? {
        Source::Index(t) => t,
        Source::Live(slot, live) => return q.live(slot, live, "points"),
    };
    let (w, thread) = (q.window(t)?, q.thread(t)?);
    let mut names = Names::default();
    let points = t
        .index
        .points_in(thread, w)
        .into_iter()
        .map(|item| match item {
            PointItem::Point(i, p) => {
                api::PointEntry::Point(t.ns(p.ts), names.add(&t.index, p.name), i, p.kind)
            }
            PointItem::Merged { first, count, start, end } => {
                api::PointEntry::Merged(t.ns(start), t.ns(end), -(count as i64), first)
            }
        })
        .collect();
    Ok(Json(api::PointsAnswer { points, names: names.0 }).into_response())
}

/// `GET /api/samples`: a counter's values in a window, a pixel at a time:
/// `[start, end, count, min, max, last]`.
async fn samples(State(traces): State<Shared>, Query(q): Query<WindowQuery>) -> Result<Response, Failure> {
    let t = match source(&traces, q.trace)? {
        Source::Index(t) => t,
        Source::Live(slot, live) => return q.live(slot, live, "samples"),
    };
    let w = q.window(t)?;
    let c = q.counter.ok_or_else(|| Failure(StatusCode::BAD_REQUEST, "counter is required".into()))?;
    if c >= t.index.counters.len() {
        return Err(not_found(format!("no counter {c}")));
    }
    let samples: Vec<api::SamplePixel> = t
        .index
        .samples_in(c, w)
        .into_iter()
        .map(|s| (t.ns(s.start), t.ns(s.end), s.count, Finite(s.min), Finite(s.max), Finite(s.last)))
        .collect();
    Ok(Json(api::Samples { samples }).into_response())
}

#[derive(Debug, Deserialize)]
struct SliceQuery {
    trace: usize,
    index: u64,
}

/// `GET /api/slice`: one slice by its number.
async fn slice_details(
    State(traces): State<Shared>,
    Query(q): Query<SliceQuery>,
) -> Result<Response, Failure> {
    let t = match source(&traces, q.trace)? {
        Source::Index(t) => t,
        Source::Live(..) => {
            let answer = crate::live::api::details(traces.clone(), q.trace, q.index, false).await;
            return answer.map(IntoResponse::into_response);
        }
    };
    let s = t.index.get_slice(q.index).ok_or_else(|| not_found(format!("no slice {}", q.index)))?;
    let on = |tracks| track_of(tracks, q.index);
    let (async_track, thread, level) = match on(&t.index.threads) {
        Some((_, th, level)) => (None, th, level),
        None => on(&t.index.asyncs)
            .map(|(k, th, level)| (Some(k), th, level))
            .ok_or_else(|| not_found(format!("slice {} is on no track", q.index)))?,
    };
    let event = event_details(&traces, q.trace, s.event).await;
    let system = match async_track {
        None => crate::system_api::slice_figures(&traces, q.trace, thread.tid, q.index).await,
        Some(_) => None,
    };
    // An async slice's lanes do not nest: its path is its name.
    // Durations as `phosphor stats` measures them (`phosphor_model::timeline`): a slice's end less
    // its start, each rounded to the nanosecond; its self time, that less its children's.
    let dur = |s: &crate::records::Slice| (t.ns(s.end) - t.ns(s.start)).max(0) as u64;
    let (path, self_ns, children) = match async_track {
        None => crate::stats::context(&t.index, thread, level, q.index, dur),
        Some(_) => (vec![t.index.name(s.name).to_owned()], dur(&s), 0),
    };
    Ok(Json(api::SliceAnswer {
        index: q.index,
        name: t.index.name(s.name).to_owned(),
        start_ns: t.ns(s.start),
        end_ns: t.ns(s.end),
        duration_ns: dur(&s),
        self_ns,
        children,
        path,
        tid: async_track.is_none().then_some(thread.tid),
        async_track,
        level,
        callsite: Some(s.callsite),
        flags: s.flags,
        event_offset: Some(s.event),
        event,
        system,
        live: false,
    })
    .into_response())
}

/// The details of the event at byte `offset` of trace `n` (`events.rs`), read on a blocking
/// thread; `{"error": ...}` when there are none.
async fn event_details(traces: &Shared, n: usize, offset: u64) -> EventAnswer {
    let shared = traces.clone();
    let read = tokio::task::spawn_blocking(move || match shared.get(n) {
        Some(t) => t.events.details(&t.path, &t.index, offset),
        None => Err(format!("no trace {n}")),
    });
    match read.await {
        Ok(Ok(details)) => EventAnswer::Details(details),
        Ok(Err(why)) => EventAnswer::Failed(api::ErrorAnswer { error: why }),
        Err(e) => EventAnswer::Failed(api::ErrorAnswer { error: e.to_string() }),
    }
}

/// `GET /api/point`: one point by its number, with its event's details.
async fn point_details(
    State(traces): State<Shared>,
    Query(q): Query<SliceQuery>,
) -> Result<Response, Failure> {
    let t = match source(&traces, q.trace)? {
        Source::Index(t) => t,
        Source::Live(..) => {
            let answer = crate::live::api::details(traces.clone(), q.trace, q.index, true).await;
            return answer.map(IntoResponse::into_response);
        }
    };
    let thread = t
        .index
        .threads
        .iter()
        .find(|th| (th.points.0..th.points.0 + th.points.1).contains(&q.index))
        .ok_or_else(|| not_found(format!("no point {}", q.index)))?;
    let p = t.index.point(q.index);
    let event = if p.kind == crate::records::point_kinds::LOST_CHUNKS {
        None
    } else {
        Some(event_details(&traces, q.trace, p.event).await)
    };
    Ok(Json(api::PointAnswer {
        index: q.index,
        name: t.index.name(p.name).to_owned(),
        kind: p.kind,
        ts_ns: t.ns(p.ts),
        tid: thread.tid,
        event,
        live: false,
    })
    .into_response())
}

/// The track of `tracks` that slice `index` is on, its place, and the slice's level there.
fn track_of(
    tracks: &[crate::file::ThreadTrack],
    index: u64,
) -> Option<(usize, &crate::file::ThreadTrack, usize)> {
    tracks.iter().enumerate().find_map(|(k, th)| {
        let level = th.levels.iter().position(|&(first, n)| (first..first + n).contains(&index))?;
        Some((k, th, level))
    })
}

#[cfg(test)]
#[path = "server_tests.rs"]
pub(crate) mod tests;

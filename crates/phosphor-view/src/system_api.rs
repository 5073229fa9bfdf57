//! The system context's API (`system.rs`): `/api/system` (what a trace's system blocks held),
//! `/api/context` (a thread's off-CPU intervals and CPU samples in a window), `/api/stack` (one
//! sample's stack, symbolized), `/api/stacks` (a thread's samples in a window by call stack: a
//! slice's or a long poll's), `/api/heap` (the live heap bytes in a window), and a slice's
//! figures for `/api/slice`. Each on a blocking thread: the first reads the system blocks.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::Json;
use phosphor_format::system::{SCOPE_ALLOC_ARGS, SCOPE_ALLOC_NAME};
use serde::{Deserialize, Serialize};

use crate::events::ArgValue;

use crate::server::{trace, Failure, Shared, MAX_PIXELS};
use crate::traces::Trace;

/// Runs `f` on trace `n` on a blocking thread.
async fn blocking<T: Send + 'static>(
    traces: Shared,
    n: usize,
    f: impl FnOnce(&Trace) -> Result<T, Failure> + Send + 'static,
) -> Result<Json<T>, Failure> {
    trace(&traces, n)?;
    let shared = traces.clone();
    let answer = tokio::task::spawn_blocking(move || match shared.get(n) {
        Some(t) => f(t),
        None => Err(Failure(StatusCode::NOT_FOUND, format!("no trace {n}"))),
    });
    match answer.await {
        Ok(a) => a.map(Json),
        Err(e) => Err(Failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct TraceQuery {
    trace: usize,
}

/// `GET /api/system`: what the trace's system blocks held (`present` false when none).
pub(crate) async fn system(
    State(traces): State<Shared>,
    Query(q): Query<TraceQuery>,
) -> Result<Json<crate::system::SystemSummary>, Failure> {
    blocking(traces, q.trace, |t| {
        let listed: Vec<u32> =
            crate::server::listed_threads(&t.index).into_iter().map(|k| t.index.threads[k].tid).collect();
        Ok(t.system().summary(t.place(), &listed))
    })
    .await
}

#[derive(Debug, Deserialize)]
pub(crate) struct ContextQuery {
    trace: usize,
    tid: Option<u32>,
    start: i64,
    end: i64,
    px: u32,
}

impl ContextQuery {
    fn check(&self) -> Result<(), Failure> {
        if self.px == 0 || self.px > MAX_PIXELS || self.end < self.start {
            let why = format!("px must be 1 to {MAX_PIXELS} and end at least start");
            return Err(Failure(StatusCode::BAD_REQUEST, why));
        }
        Ok(())
    }
}

/// `GET /api/context`: thread `tid`'s off-CPU intervals and CPU samples in a window
/// (`SystemView::window`).
pub(crate) async fn context(
    State(traces): State<Shared>,
    Query(q): Query<ContextQuery>,
) -> Result<Json<crate::system::ContextAnswer>, Failure> {
    q.check()?;
    let tid = q.tid.ok_or_else(|| Failure(StatusCode::BAD_REQUEST, "tid is required".into()))?;
    blocking(traces, q.trace, move |t| Ok(t.system().window(t.place(), tid, q.start, q.end, q.px))).await
}

/// `GET /api/heap`: the live heap bytes in a window, a pixel at a time.
pub(crate) async fn heap(
    State(traces): State<Shared>,
    Query(q): Query<ContextQuery>,
) -> Result<Json<crate::api::Samples<crate::system::HeapPixel>>, Failure> {
    q.check()?;
    blocking(traces, q.trace, move |t| Ok(t.system().heap_window(t.place(), q.start, q.end, q.px))).await
}

#[derive(Debug, Deserialize)]
pub(crate) struct StackQuery {
    trace: usize,
    tid: u32,
    /// The sample's place among its thread's (as `/api/context` gives it).
    index: usize,
}

/// `GET /api/stack`: one CPU sample's stack, innermost frame first, symbolized.
pub(crate) async fn stack(
    State(traces): State<Shared>,
    Query(q): Query<StackQuery>,
) -> Result<Json<crate::system::StackAnswer>, Failure> {
    blocking(traces, q.trace, move |t| {
        t.system().stack(t.place(), q.tid, q.index).ok_or_else(|| {
            Failure(StatusCode::NOT_FOUND, format!("no sample {} of thread {}", q.index, q.tid))
        })
    })
    .await
}

#[derive(Debug, Deserialize)]
pub(crate) struct StacksQuery {
    trace: usize,
    tid: u32,
    start: i64,
    end: i64,
}

/// `GET /api/stacks`: thread `tid`'s CPU samples from `start` to `end` by call stack, symbolized.
pub(crate) async fn stacks(
    State(traces): State<Shared>,
    Query(q): Query<StacksQuery>,
) -> Result<Json<crate::system::StacksAnswer>, Failure> {
    if q.end < q.start {
        return Err(Failure(StatusCode::BAD_REQUEST, "end must be at least start".into()));
    }
    blocking(traces, q.trace, move |t| Ok(t.system().stacks(t.place(), q.tid, q.start, q.end))).await
}

/// A slice's system figures for `/api/slice`: on- and off-CPU time, preempted time, switches,
/// samples, and the allocations of the `phosphor/scope_alloc` event that follows it on its
/// thread; `null` when the trace has no system context.
pub(crate) async fn slice_figures(traces: &Shared, n: usize, tid: u32, index: u64) -> Option<SliceSystem> {
    let shared = traces.clone();
    let read = tokio::task::spawn_blocking(move || {
        let t = shared.get(n)?;
        let system = t.system();
        if system.is_empty() {
            return None;
        }
        let s = t.index.get_slice(index)?;
        let clock = t.place().clock();
        let (start, end) = (clock.to_ns(s.start), clock.to_ns(s.end));
        let f = system.figures(tid, start, end);
        let duration = end.saturating_sub(start);
        Some(SliceSystem {
            on_cpu_ns: duration.saturating_sub(f.off_ns),
            off_cpu_ns: f.off_ns,
            preempted_ns: f.preempted_ns,
            blocked_ns: f.off_ns - f.preempted_ns,
            switches: f.switches,
            samples: f.samples,
            allocations: scope_alloc(t, tid, s.end),
        })
    });
    read.await.ok().flatten()
}

/// A slice's system figures (`system` in `/api/slice`).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SliceSystem {
    /// The time its thread ran on a CPU within the slice.
    on_cpu_ns: u64,
    /// The time its thread was off the CPU within the slice.
    off_cpu_ns: u64,
    /// Of that, the time it was runnable (taken off the CPU).
    preempted_ns: u64,
    /// Of that, the time it was blocked.
    blocked_ns: u64,
    /// The off-CPU intervals that start in the slice.
    switches: u64,
    /// The CPU samples of its thread in the slice.
    samples: u64,
    /// From the `phosphor/scope_alloc` event stamped with its end on its thread; null without one.
    allocations: Option<Allocations>,
}

/// The allocations of a `phosphor/scope_alloc` event: its two arguments' values.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Allocations {
    /// How many allocations.
    allocs: Option<ArgValue>,
    /// How many bytes.
    bytes: Option<ArgValue>,
}

/// The most points at a slice's end looked at for its `scope_alloc` event.
const MAX_AT_END: u64 = 64;

/// The allocations and bytes of the `phosphor/scope_alloc` event at `end_ticks` on thread `tid`
/// (the one recorded when a scope closes), `null` if there is none.
fn scope_alloc(t: &Trace, tid: u32, end_ticks: u64) -> Option<Allocations> {
    let i = &t.index;
    let Ok(k) = i.threads.binary_search_by_key(&tid, |th| th.tid) else { return None };
    let (first, count) = i.threads[k].points;
    // The thread's first point at or after the slice's end, by binary search.
    let (mut lo, mut hi) = (first, first + count);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if i.point(mid).ts < end_ticks {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    for p in (lo..(first + count).min(lo + MAX_AT_END)).map(|at| i.point(at)) {
        if p.ts != end_ticks {
            break;
        }
        if i.name(p.name) != SCOPE_ALLOC_NAME {
            continue;
        }
        let Ok(details) = t.events.details(&t.path, i, p.event) else { continue };
        if details.category != phosphor_format::system::PHOSPHOR_CATEGORY {
            continue;
        }
        let arg = |name: &str| details.args.iter().find(|x| x.0 == name).map(|x| x.1.clone());
        let [allocs, bytes] = SCOPE_ALLOC_ARGS;
        return Some(Allocations { allocs: arg(allocs), bytes: arg(bytes) });
    }
    None
}

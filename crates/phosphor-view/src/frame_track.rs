//! `GET /api/frames`: the frame track. The frames of each frame set (`trace_frame!`) in a window,
//! as `phosphor_export::frames::read_frames` measures them (the frames `phosphor stats` measures,
//! by the same code), read once per trace on the first request. Frames narrower than a pixel are
//! merged into runs at least a pixel wide, so an answer holds at most about two entries a pixel
//! whatever the zoom.

use std::fs::File;
use std::io::BufReader;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::Json;
use phosphor_export::frames::{read_frames, FrameList};
use phosphor_format::file::Reader;
use serde::{Deserialize, Serialize};

use crate::server::{trace, Failure, Shared, MAX_PIXELS};
use crate::stats::blocking;

/// A trace's frame sets, once read: by name, or the error that stopped the reading.
#[derive(Debug)]
pub(crate) struct FrameSets {
    sets: Vec<FrameList>,
    read_error: Option<String>,
}

impl FrameSets {
    /// The frame sets of the trace file at `path`.
    pub(crate) fn read(path: &std::path::Path) -> FrameSets {
        let reader = File::open(path)
            .map_err(|e| format!("{}: {e}", path.display()))
            .and_then(|f| Reader::new(BufReader::with_capacity(1 << 16, f)).map_err(|e| e.to_string()));
        match reader {
            Ok(reader) => {
                let (sets, failure) = read_frames(reader);
                FrameSets { sets, read_error: failure.map(|e| format!("{}: {e}", path.display())) }
            }
            Err(e) => FrameSets { sets: Vec::new(), read_error: Some(e) },
        }
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct FramesQuery {
    trace: usize,
    start: i64,
    end: i64,
    px: u32,
}

/// One frame set in the window.
#[derive(Debug, Serialize)]
pub(crate) struct SetAnswer {
    /// The set's name (`frame` for `trace_frame!()`).
    name: String,
    /// Its frames in the whole trace.
    count: u64,
    /// Their p50, p99 and longest durations, in nanoseconds (as `phosphor stats` gives them).
    p50_ns: u64,
    p99_ns: u64,
    max_ns: u64,
    /// The frames in the window, in order.
    frames: Vec<FrameEntry>,
}

/// `[start, duration, number]`: a frame at least a pixel wide; `[start, end, -count, first,
/// longest]`: a run of `count` frames narrower than a pixel from number `first`, the longest
/// lasting `longest` ns.
#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(untagged)]
pub(crate) enum FrameEntry {
    Frame(i64, u64, u64),
    Run(i64, i64, i64, u64, u64),
}

/// The answer: the trace's frame sets, by name.
#[derive(Debug, Serialize)]
pub(crate) struct FramesAnswer {
    sets: Vec<SetAnswer>,
    /// Where reading the trace for its frames stopped, if it is damaged.
    read_error: Option<String>,
}

/// `GET /api/frames?trace=T&start=S&end=E&px=P`.
pub(crate) async fn frames(
    State(traces): State<Shared>,
    Query(q): Query<FramesQuery>,
) -> Result<Json<FramesAnswer>, Failure> {
    if q.px == 0 || q.px > MAX_PIXELS || q.end < q.start {
        let why = format!("px must be 1 to {MAX_PIXELS} and end at least start");
        return Err(Failure(StatusCode::BAD_REQUEST, why));
    }
    blocking(move || {
        let t = trace(&traces, q.trace)?;
        let offset = t.offset_ns();
        let read = t.frame_sets();
        let pixel = ((q.end - q.start) as f64 / f64::from(q.px)).max(1.0);
        let sets = read
            .sets
            .iter()
            .map(|l| {
                let d = l.stats.durations.as_ref();
                SetAnswer {
                    name: l.stats.name.clone(),
                    count: l.frames.len() as u64,
                    p50_ns: d.map_or(0, |d| d.p50_ns),
                    p99_ns: d.map_or(0, |d| d.p99_ns),
                    max_ns: d.map_or(0, |d| d.max_ns),
                    frames: window(l, offset, q.start, q.end, pixel),
                }
            })
            .collect();
        Ok(Json(FramesAnswer { sets, read_error: read.read_error.clone() }))
    })
    .await
}

/// The frames of `list` (placed `offset` ns on the shared timeline) that overlap `start..end`,
/// those narrower than `pixel` ns merged into runs.
pub(crate) fn window(list: &FrameList, offset: i64, start: i64, end: i64, pixel: f64) -> Vec<FrameEntry> {
    let at = |f: &phosphor_export::frames::SlowFrame| f.start_ns.saturating_add(offset);
    let end_of = |f: &phosphor_export::frames::SlowFrame| at(f).saturating_add(f.dur_ns as i64);
    // Frames are in time order, their ends too: the first that ends after `start`.
    let first = list.frames.partition_point(|f| end_of(f) <= start);
    let mut out = Vec::new();
    let mut run: Option<(i64, i64, i64, u64, u64)> = None;
    let flush = |run: &mut Option<(i64, i64, i64, u64, u64)>, out: &mut Vec<FrameEntry>| {
        if let Some((s, e, n, first, longest)) = run.take() {
            out.push(if n == 1 {
                FrameEntry::Frame(s, (e - s) as u64, first)
            } else {
                FrameEntry::Run(s, e, -n, first, longest)
            });
        }
    };
    for f in list.frames[first..].iter().take_while(|f| at(f) < end || (at(f) == end && f.dur_ns == 0)) {
        if f.dur_ns as f64 >= pixel {
            flush(&mut run, &mut out);
            out.push(FrameEntry::Frame(at(f), f.dur_ns, f.number));
            continue;
        }
        match &mut run {
            Some((s, e, n, _, longest)) if ((*e - *s) as f64) < pixel => {
                *e = end_of(f);
                *n += 1;
                *longest = (*longest).max(f.dur_ns);
            }
            _ => {
                flush(&mut run, &mut out);
                run = Some((at(f), end_of(f), 1, f.number, f.dur_ns));
            }
        }
    }
    flush(&mut run, &mut out);
    out
}

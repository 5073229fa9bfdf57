//! Scans of everything a live model holds, for `/api/search` (hits and their pixel columns) and
//! `/api/stats` / `/api/kind` (`live/stats.rs`) while a trace is recorded: the same answers as an
//! index gives, over the records the live view keeps (the newest, past its limit).

use super::{Live, LiveModel};
use crate::server::Shared;
use crate::traces::Slot;

/// A record the model holds, as a search sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rec {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) name: u32,
    pub(crate) id: u64,
    /// Its thread (0 on an async track).
    pub(crate) tid: u32,
    pub(crate) async_track: Option<u32>,
    pub(crate) level: u32,
    pub(crate) point: bool,
}

impl LiveModel {
    /// The number of names.
    pub(crate) fn name_count(&self) -> u32 {
        self.names.len() as u32
    }

    /// Calls `f` with every slice (begins still open included, running to their thread's newest
    /// event) and point held, thread by thread, then the async tracks'.
    pub(crate) fn each_record(&self, mut f: impl FnMut(Rec)) {
        for t in &self.threads {
            let tid = t.tid;
            for s in &t.slices {
                let level = u32::from(s.depth);
                f(Rec {
                    start: s.start,
                    end: s.end,
                    name: s.name,
                    id: s.id,
                    tid,
                    async_track: None,
                    level,
                    point: false,
                });
            }
            for (d, o) in t.open.iter().enumerate() {
                let end = t.last.max(o.start);
                f(Rec {
                    start: o.start,
                    end,
                    name: o.name,
                    id: o.id,
                    tid,
                    async_track: None,
                    level: d as u32,
                    point: false,
                });
            }
            for p in &t.points {
                f(Rec {
                    start: p.ts,
                    end: p.ts,
                    name: p.name,
                    id: p.id,
                    tid,
                    async_track: None,
                    level: 0,
                    point: true,
                });
            }
        }
        for (a, track) in self.asyncs.iter().enumerate() {
            for (lane, l) in track.lanes.iter().enumerate() {
                for s in l {
                    let (async_track, level) = (Some(a as u32), lane as u32);
                    f(Rec {
                        start: s.start,
                        end: s.end,
                        name: s.name,
                        id: s.id,
                        tid: 0,
                        async_track,
                        level,
                        point: false,
                    });
                }
            }
        }
    }
}

/// The live traces of `traces`, with their numbers.
pub(crate) fn live_traces(traces: &Shared) -> impl Iterator<Item = (usize, &Slot, &Live)> {
    traces.slots().enumerate().filter_map(|(n, s)| Some((n, s, s.live()?)))
}

/// What part of its recording each live trace's answers cover: from `from_ns` (the first time the live view still holds all of, its
/// `horizon_ns`, once it has dropped records; else the trace's start) to `end_ns`, its newest.
pub(crate) fn coverage(traces: &Shared) -> Vec<crate::api::LiveCoverage> {
    live_traces(traces)
        .filter_map(|(n, slot, live)| {
            let m = live.model();
            let (start, end) = m.span()?;
            let p = slot.place();
            let from = m.horizon.map_or(start, |h| h.max(start));
            Some(crate::api::LiveCoverage {
                trace: n,
                start_ns: p.ns(start),
                end_ns: p.ns(end),
                from_ns: p.ns(from),
                dropped: m.dropped,
                skipped: m.skipped,
            })
        })
        .collect()
}

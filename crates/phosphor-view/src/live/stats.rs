//! `/api/stats` and `/api/kind` of a live trace: the statistics of the slices the live view
//! holds, per scope path, in the same rows as an index's (`stats.rs`).
//!
//! A slice's path is found in one pass over each thread's slices from the newest end back (the
//! order they are kept in, reversed): a slice's holders end at or after it, so they are met
//! before it, and the one of each level met last is the only one of that level that can hold
//! it. A holder the live view has dropped is left out of the path (as `/api/slice` leaves it
//! out); a begin still open holds what is inside it. Open begins are not counted (as the
//! statistics leave begins never ended out).

use std::collections::HashMap;

use phosphor_export::Durations;
use phosphor_model::names;
use phosphor_model::nesting::DEFAULT_MAX_DEPTH;

use super::LiveModel;
use crate::records::slice_flags;
use crate::stats::{type_of, StatsRow, Table, MAX_ROWS};

/// No parent: a path's outermost name.
const ROOT: u32 = u32::MAX;

/// The paths of a model's slices: each a parent path and a name.
#[derive(Default)]
struct Paths {
    nodes: Vec<(u32, u32)>,
    of: HashMap<(u32, u32), u32>,
}

impl Paths {
    fn intern(&mut self, parent: u32, name: u32) -> u32 {
        let next = self.nodes.len() as u32;
        *self.of.entry((parent, name)).or_insert_with(|| {
            self.nodes.push((parent, name));
            next
        })
    }

    /// Path `at`'s names as `phosphor stats` shows them (cut, and past its depth cap the
    /// ancestors down to it, the cap's marker, then its own name), outermost first.
    fn shown(&self, m: &LiveModel, mut at: u32) -> Vec<String> {
        let mut out = Vec::new();
        while at != ROOT {
            let (parent, name) = self.nodes[at as usize];
            out.push(names::shown(m.name(name)).into_owned());
            at = parent;
        }
        out.reverse();
        let cap = DEFAULT_MAX_DEPTH;
        if out.len() > cap {
            let own = out.pop().unwrap_or_default();
            out.truncate(cap);
            out.push(format!("[deeper than {cap}]"));
            out.push(own);
        }
        out
    }
}

/// A finished slice with its path, as the pass gives it.
struct Seen {
    tid: u32,
    id: u64,
    start: u64,
    end: u64,
    /// Its duration on the model's timeline.
    ns: u64,
    path: u32,
    kind: u8,
}

/// Calls `f` with every finished slice of `m` (of thread `tid` only, if given) that starts from
/// `a` to `b` (ticks), with its path in `paths`.
fn each_slice(m: &LiveModel, a: u64, b: u64, tid: Option<u32>, paths: &mut Paths, mut f: impl FnMut(&Seen)) {
    let time = |ticks| m.timeline.time(ticks);
    for t in m.threads.iter().filter(|t| tid.is_none_or(|tid| t.tid == tid)) {
        // The begins open, each inside the one before.
        let mut open: Vec<(u64, u32)> = Vec::with_capacity(t.open.len());
        let mut parent = ROOT;
        for o in &t.open {
            parent = paths.intern(parent, o.name);
            open.push((time(o.start), parent));
        }
        // By level: the start and path of the slice of that level met last.
        let mut last: Vec<Option<(u64, u32)>> = Vec::new();
        for s in t.slices.iter().rev() {
            let (ss, se) = (time(s.start), time(s.end));
            let d = usize::from(s.depth);
            let holds = |h: &Option<(u64, u32)>| h.filter(|&(start, _)| start <= ss).map(|(_, p)| p);
            let parent = (0..d)
                .rev()
                .find_map(|j| holds(last.get(j).unwrap_or(&None)).or_else(|| holds(&open.get(j).copied())))
                .unwrap_or(ROOT);
            let path = paths.intern(parent, s.name);
            if last.len() <= d {
                last.resize(d + 1, None);
            }
            last[d] = Some((ss, path));
            if (a..=b).contains(&s.start) {
                let kind = s.flags & slice_flags::KIND_MASK;
                f(&Seen { tid: t.tid, id: s.id, start: s.start, end: s.end, ns: se - ss, path, kind });
            }
        }
    }
}

/// The statistics table of live trace `n` (model `m`) from `a` to `b` (ticks), of thread `tid`
/// only if given: as `stats.rs`'s `table`.
pub(crate) fn table(n: usize, m: &LiveModel, a: u64, b: u64, tid: Option<u32>) -> Table {
    let mut paths = Paths::default();
    let mut acc: HashMap<(u32, u8), Durations> = HashMap::new();
    let mut slices = 0u64;
    each_slice(m, a, b, tid, &mut paths, |s| {
        acc.entry((s.path, s.kind)).or_default().add(s.ns);
        slices += 1;
    });
    // Paths that show alike are one row, as in the statistics.
    let mut shown: HashMap<(Vec<String>, &'static str), (u32, Durations)> = HashMap::new();
    for ((path, kind), d) in acc {
        let key = (paths.shown(m, path), type_of(kind));
        let row = shown.entry(key).or_insert_with(|| (path, Durations::default()));
        row.0 = row.0.min(path);
        row.1.merge(&d);
    }
    let clock = m.timeline.clock();
    let mut rows: Vec<(u64, u32, StatsRow)> = shown
        .into_iter()
        .filter_map(|((names, ty), (path, d))| {
            let row = StatsRow::new(n, names, ty, &d.stats(clock)?);
            Some((row.total_ns, path, row))
        })
        .collect();
    let kinds = rows.len();
    rows.sort_by_key(|r| (std::cmp::Reverse(r.0), r.1));
    rows.truncate(MAX_ROWS);
    Table { rows, kinds, slices }
}

/// One row of a live trace's statistics (`want` names of type `ty`) from `a` to `b` (ticks):
/// its durations (on the model's timeline), and each slice's (duration, number, thread, start,
/// end) for the slowest.
pub(crate) fn kind(
    m: &LiveModel,
    want: &[String],
    ty: &str,
    a: u64,
    b: u64,
) -> Vec<(u64, u64, u32, u64, u64)> {
    // The paths first, then the slices of those that show as `want` (the same walk gives the
    // same path numbers).
    let mut paths = Paths::default();
    each_slice(m, a, b, None, &mut paths, |_| {});
    let hit: Vec<bool> = (0..paths.nodes.len() as u32).map(|p| paths.shown(m, p) == want).collect();
    let mut out = Vec::new();
    each_slice(m, a, b, None, &mut Paths::default(), |s| {
        if hit[s.path as usize] && type_of(s.kind) == ty {
            out.push((s.ns, s.id, s.tid, s.start, s.end));
        }
    });
    out
}

/// The clock a live model's durations are on.
pub(crate) fn clock(m: &LiveModel) -> &phosphor_format::ClockInfo {
    m.timeline.clock()
}

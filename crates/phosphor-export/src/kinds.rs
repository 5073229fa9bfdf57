//! The statistics' kinds: what the nesting resolves, gathered by thread and path ([`Collector`],
//! the statistics' [`Sink`]), and the two tables made of them at the end ([`tables`]): per thread
//! and path, and per path across threads.
//!
//! # Memory
//!
//! A file of a million callsites or threads, one event each, has a million kinds, so the tables
//! are built without a second copy: their order is found by sorting indices (4 bytes a kind), each
//! table is allocated once at its final length, and the accumulators are freed before the table
//! across threads is built (a path seen on one thread copies that thread's row, merged rows are
//! made first).

use std::cmp::Ordering;
use std::sync::Arc;

use phosphor_format::file::ClockInfo;
use rustc_hash::FxHashMap as HashMap;

use crate::durations::Durations;
use crate::labels::Labels;
use crate::scope_path::{PathTree, PathTreeBuilder, ScopePath};
use crate::scope_system::{AllocWaits, ScopeHook, SystemAcc};
use crate::stats::{EventType, KindStats, MAX_PROBLEM_EXAMPLES};
use crate::system::SystemContext;
use phosphor_model::background::Consumer;
use phosphor_model::names;
use phosphor_model::nesting::{
    self, Label, Nesting, PathId, Problem, ProblemKind, Sink, Slice, SliceKind, DEEPER, ROOT,
};

#[derive(Debug, Default)]
pub(crate) struct KindAcc {
    pub(crate) count: u64,
    pub(crate) durations: Durations,
    /// What the system saw, once something was (most kinds of most traces: never).
    pub(crate) system: Option<Box<SystemAcc>>,
}

impl KindAcc {
    fn system(&mut self) -> &mut SystemAcc {
        self.system.get_or_insert_with(Default::default)
    }
}

/// A kind as the nesting resolves it: a path on a thread, and what was counted.
#[derive(Debug)]
pub(crate) struct Kind {
    pub(crate) tid: u32,
    pub(crate) path: PathId,
    pub(crate) acc: KindAcc,
}

/// What the nesting resolves, by thread and path; and the problems.
#[derive(Debug, Default)]
pub(crate) struct Collector {
    /// By path, the place in `kinds` of its kind on the first thread it was seen on ([`NONE`]
    /// before): most paths are on one thread (4 bytes a path, not a map's entry).
    first: Vec<u32>,
    /// By thread and path, the kind's place in `kinds`, for the other threads.
    others: HashMap<(u32, PathId), u32>,
    pub(crate) kinds: Vec<Kind>,
    pub(crate) problems: Vec<Problem>,
    pub(crate) problem_count: u64,
    pub(crate) late_parents: u64,
    pub(crate) per_thread: HashMap<u32, u64>,
    /// The system context asked about each scope, if the trace has one.
    pub(crate) hook: Option<ScopeHook>,
    pub(crate) allocs: AllocWaits,
}

/// No kind.
const NONE: u32 = u32::MAX;

impl Collector {
    /// The allocation counts of thread `tid`'s scope that started at `start` (its
    /// `phosphor/scope_alloc` event).
    pub(crate) fn scope_alloc(&mut self, tid: u32, start: u64, allocs: u64, bytes: u64) {
        self.allocs.seen = true;
        match self.allocs.last.get(&tid) {
            Some(&(s, at)) if s == start => self.kinds[at as usize].acc.system().alloc(allocs, bytes),
            _ => {
                let w = self.allocs.waiting.entry((tid, start)).or_default();
                w.0 += allocs;
                w.1 += bytes;
            }
        }
    }

    /// Frees what finding the kinds takes, once every slice is in.
    pub(crate) fn free_index(&mut self) {
        self.first = Vec::new();
        self.others = HashMap::default();
    }
}

/// A `phosphor/scope_alloc` event: the allocations of thread `tid`'s scope that ended at `end`
/// (the last complete event it recorded, if that one ended then).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScopeAlloc {
    pub(crate) tid: u32,
    pub(crate) end: u64,
    pub(crate) allocs: u64,
    pub(crate) bytes: u64,
}

impl Consumer<()> for Collector {
    type Message = ScopeAlloc;

    fn message(&mut self, nesting: &Nesting, m: ScopeAlloc) {
        // Bookkeeping, not an instant of the program: its counts go to the scope before it, which
        // ended when it is stamped (one whose scope was lost matches none).
        if let Some(start) = nesting.complete_ending_at(m.tid, m.end) {
            self.scope_alloc(m.tid, start, m.allocs, m.bytes);
        }
    }
}

impl Sink for Collector {
    fn slice(&mut self, s: &Slice) {
        let kinds = &mut self.kinds;
        let new = |kinds: &mut Vec<Kind>| {
            kinds.push(Kind { tid: s.tid, path: s.path, acc: KindAcc::default() });
            kinds.len() as u32 - 1
        };
        let p = s.path as usize;
        if p >= self.first.len() {
            self.first.resize(p + 1, NONE);
        }
        let at = match self.first[p] {
            NONE => {
                let at = new(kinds);
                self.first[p] = at;
                at
            }
            first if kinds[first as usize].tid == s.tid => first,
            _ => *self.others.entry((s.tid, s.path)).or_insert_with(|| new(kinds)),
        };
        let k = &mut kinds[at as usize].acc;
        k.count += 1;
        if s.kind == SliceKind::Scope {
            k.durations.add(s.dur);
            if let Some(hook) = &self.hook {
                hook.add(k.system(), s.tid, s.start, s.dur);
            }
            if self.allocs.seen {
                if let Some((a, b)) = self.allocs.waiting.remove(&(s.tid, s.start)) {
                    k.system().alloc(a, b);
                }
                self.allocs.last.insert(s.tid, (s.start, at));
            }
        }
    }

    fn problem(&mut self, p: Problem) {
        self.problem_count += 1;
        self.late_parents += u64::from(matches!(p.kind, ProblemKind::LateParent { .. }));
        *self.per_thread.entry(p.tid).or_default() += 1;
        if self.problems.len() < MAX_PROBLEM_EXAMPLES {
            self.problems.push(p);
        }
    }
}

/// The statistics' paths as [`ScopePath`]s: the nesting's paths of labels (a name and an event
/// type) become paths of names, in a tree of their own.
pub(crate) struct NameTree {
    tree: Arc<PathTree>,
    /// By the nesting's path id, the tree's.
    ids: Vec<u32>,
}

impl NameTree {
    fn path(&self, path: PathId) -> ScopePath {
        ScopePath::new(self.tree.clone(), self.ids[path as usize])
    }

    /// The order of two paths' names.
    fn cmp(&self, a: PathId, b: PathId) -> Ordering {
        self.tree.cmp(self.ids[a as usize], self.ids[b as usize])
    }
}

/// Interns every path of `paths` as names: the labels' (which differ in name or in event type),
/// and `marker` for the depth cap's marker (`deeper`: its number among the labels' names, if a
/// label has it).
pub(crate) fn name_tree(
    paths: &nesting::Paths,
    labels: Labels,
    marker: &str,
    deeper: Option<u32>,
) -> NameTree {
    let by_label: Vec<u32> = (0..labels.len() as Label).map(|l| labels.name_number(l)).collect();
    let (names, deeper) = match deeper {
        Some(d) => (labels.into_names(&[]), d),
        None => {
            let n = labels.len_names();
            (labels.into_names(&[marker]), n)
        }
    };
    let mut b = PathTreeBuilder::new(names);
    // A path is interned after its parent, so its parent's id is already mapped.
    let mut ids = Vec::with_capacity(paths.len());
    for path in 0..paths.len() as PathId {
        ids.push(if path == ROOT {
            0
        } else {
            let label: Label = paths.label(path);
            let name = if label == DEEPER { deeper } else { by_label[label as usize] };
            b.child(ids[paths.parent(path) as usize], name)
        });
    }
    NameTree { tree: b.finish(), ids }
}

/// The names of threads `tids` (sorted) among `thread_names`, as shown (cut as kinds' names are: a
/// name of megabytes may name every thread), by id; the last of a thread named twice.
pub(crate) fn shown_thread_names<'a>(
    tids: &[u32],
    thread_names: impl IntoIterator<Item = (u32, &'a str)>,
) -> Vec<(u32, String)> {
    let mut names: Vec<(u32, String)> = thread_names
        .into_iter()
        .filter(|(tid, _)| tids.binary_search(tid).is_ok())
        .map(|(tid, name)| (tid, names::shown(name).into_owned()))
        .collect();
    // The last name of a thread first, then the others dropped.
    names.reverse();
    names.sort_by_key(|(tid, _)| *tid);
    names.dedup_by_key(|(tid, _)| *tid);
    names.shrink_to_fit();
    names
}

/// In a source of a row across threads (`tables`): the row is merged from several threads', at
/// the place the other bits give among the merged; without it, the row is its one thread's, at
/// that place in the table per thread.
const MERGED: u32 = 1 << 31;

/// The kinds per thread and path (by thread id, then path) and per path across threads (by
/// path), from the collector's `per_thread` kinds: rows of one path on every thread add up to its
/// row across threads. `event_type` is the type of a path's last label.
///
/// The two tables are the result, so their rows (104 bytes each) are most of the memory: the
/// rest is freed or cut to 4 bytes a row before the second is made.
pub(crate) fn tables(
    mut per_thread: Vec<Kind>,
    tree: NameTree,
    event_type: impl Fn(PathId) -> EventType,
    clock: &ClockInfo,
    context: Option<&SystemContext>,
) -> (Vec<KindStats>, Vec<KindStats>) {
    let kind = |tid, path: PathId, acc: &KindAcc| KindStats {
        tid,
        path: tree.path(path),
        event_type: event_type(path),
        count: acc.count,
        durations: acc.durations.stats(clock),
        system: acc.system.as_ref().map(|s| Box::new(s.stats(context))),
    };
    // By path, so that a path's rows are a run; (path, thread) is unique.
    per_thread.sort_unstable_by_key(|k| (k.path, k.tid));

    // The table per thread: by thread, the path's names, the type; then the order above.
    let mut order: Vec<u32> = (0..per_thread.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| {
        let (x, y) = (&per_thread[a as usize], &per_thread[b as usize]);
        x.tid
            .cmp(&y.tid)
            .then_with(|| tree.cmp(x.path, y.path))
            .then_with(|| event_type(x.path).cmp(&event_type(y.path)))
            .then(a.cmp(&b))
    });
    // By row of `per_thread`, its place in `kinds`.
    let mut at = vec![0u32; per_thread.len()];
    let mut kinds = Vec::with_capacity(per_thread.len());
    for (place, &i) in order.iter().enumerate() {
        let k = &per_thread[i as usize];
        at[i as usize] = place as u32;
        kinds.push(kind(Some(k.tid), k.path, &k.acc));
    }
    drop(order);

    // Each path, in the order of its ids: where its row across threads comes from. (Fewer than
    // 2^31 rows: each takes more than a byte of memory.)
    let mut sources: Vec<u32> = Vec::new();
    let mut merged: Vec<Option<KindStats>> = Vec::new();
    let mut start = 0;
    for run in per_thread.chunk_by(|a, b| a.path == b.path) {
        if let [_] = run {
            sources.push(at[start]);
        } else {
            let mut all = KindAcc::default();
            for k in run {
                all.count += k.acc.count;
                all.durations.merge(&k.acc.durations);
                if let Some(s) = &k.acc.system {
                    all.system().merge(s);
                }
            }
            merged.push(Some(kind(None, run[0].path, &all)));
            sources.push(MERGED | (merged.len() as u32 - 1));
        }
        start += run.len();
    }
    drop((per_thread, at, tree));

    // The table across threads: by the path's names, the type; then the path's id (the sort is
    // stable).
    let row = |source: u32| match source & MERGED {
        0 => kinds.get(source as usize),
        _ => merged.get((source & !MERGED) as usize).and_then(Option::as_ref),
    };
    sources.sort_by(|&a, &b| match (row(a), row(b)) {
        (Some(x), Some(y)) => x.path.cmp_names(&y.path).then_with(|| x.event_type.cmp(&y.event_type)),
        // Not reached: every source names a row.
        (x, y) => x.is_some().cmp(&y.is_some()),
    });
    let mut paths = Vec::with_capacity(sources.len());
    for source in sources {
        paths.push(match source & MERGED {
            0 => KindStats { tid: None, ..kinds[source as usize].clone() },
            _ => match merged.get_mut((source & !MERGED) as usize).and_then(Option::take) {
                Some(row) => row,
                // Not reached: each merged row has one source.
                None => continue,
            },
        });
    }
    (kinds, paths)
}

//! The statistics' kinds: what the nesting resolves, gathered by thread and path ([`Collector`],
//! the statistics' [`Sink`]), and the two tables made of them at the end ([`tables`]): per thread
//! and path, and per path across threads.
//!
//! # Memory
//!
//! A file of a million callsites or threads, one event each, has a million kinds, so the tables
//! are built without a second copy: the accumulators are sorted in place, the table per thread is
//! allocated once at its final length and made from the accumulators' last row back, freeing them
//! as it is filled, and the table across threads ([`PathRows`]) holds rows only for the paths seen
//! on several threads: a path seen on one thread is that thread's row, named by its place (4 bytes
//! a path, where a copy took 112).

use std::cmp::Ordering;
use std::sync::Arc;

use hashbrown::HashTable;
use phosphor_format::file::ClockInfo;
use rustc_hash::{FxBuildHasher, FxHashMap as HashMap};
use std::hash::BuildHasher;

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
    /// The places in `kinds` of the kinds on the other threads, found by thread and path
    /// ([`key`]): 4 bytes an entry, where a map keyed by both would take 12 (a million threads
    /// of one path each, in hostile files, are a million entries).
    others: HashTable<u32>,
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

/// The hash of a kind's thread and path, in [`Collector::others`].
fn key(tid: u32, path: PathId) -> u64 {
    FxBuildHasher.hash_one((tid, path))
}

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
        self.others = HashTable::new();
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
            _ => {
                let hash = key(s.tid, s.path);
                let is = |&at: &u32| kinds[at as usize].tid == s.tid && kinds[at as usize].path == s.path;
                match self.others.find(hash, is) {
                    Some(&at) => at,
                    None => {
                        let at = new(kinds);
                        let rehash = |&at: &u32| key(kinds[at as usize].tid, kinds[at as usize].path);
                        self.others.insert_unique(hash, at, rehash);
                        at
                    }
                }
            }
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

/// In a row of [`PathRows`]: the row is merged from several threads', at the place the other bits
/// give among the merged; without it, the row is its one thread's, at that place in the table per
/// thread.
const MERGED: u32 = 1 << 31;

/// While the tables are made (`tables`): a path seen on one thread, its place not yet known.
const ONE: u32 = u32::MAX - 1;

/// The table across threads, made of the table per thread: by path, where its row is. A path seen
/// on one thread (in files of a million callsites or threads, nearly all) is that thread's row, 4
/// bytes and no copy of it; only the rows merged from several threads are rows of their own.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PathRows {
    /// By path, in order: a place in the table per thread, or [`MERGED`] and a place in `merged`.
    /// (Fewer than 2^31 rows: each takes more than a byte of memory.)
    rows: Vec<u32>,
    /// The rows of the paths seen on several threads, `tid` `None`.
    merged: Vec<KindStats>,
}

impl PathRows {
    /// The row that `row` names, in `kinds` (the table per thread) or among the merged.
    fn get<'a>(&'a self, kinds: &'a [KindStats], row: u32) -> Option<&'a KindStats> {
        match row & MERGED {
            0 => kinds.get(row as usize),
            _ => self.merged.get((row & !MERGED) as usize),
        }
    }
}

/// The kinds per path, all threads together ([`TraceStats::paths`](crate::TraceStats::paths)), by
/// path: its names, then its type. A path seen on one thread only is that thread's row of
/// [`TraceStats::kinds`](crate::TraceStats::kinds) (its `tid` is the thread's), a path seen on
/// several has a row of its own (`tid` `None`) adding theirs up.
#[derive(Clone, Copy)]
pub struct Paths<'a> {
    pub(crate) rows: &'a PathRows,
    pub(crate) kinds: &'a [KindStats],
}

impl<'a> Paths<'a> {
    /// The number of paths.
    pub fn len(&self) -> usize {
        self.rows.rows.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rows.rows.is_empty()
    }

    /// The `i`th path's row, in the order of paths.
    pub fn get(&self, i: usize) -> Option<&'a KindStats> {
        let (rows, kinds) = (self.rows, self.kinds);
        rows.get(kinds, *rows.rows.get(i)?)
    }

    /// The rows, in the order of paths.
    pub fn iter(&self) -> PathsIter<'a> {
        PathsIter { rows: self.rows.rows.iter(), table: self.rows, kinds: self.kinds }
    }
}

impl std::fmt::Debug for Paths<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for Paths<'a> {
    type Item = &'a KindStats;
    type IntoIter = PathsIter<'a>;

    fn into_iter(self) -> PathsIter<'a> {
        self.iter()
    }
}

/// The rows of [`Paths`], in the order of paths.
#[derive(Clone, Debug)]
pub struct PathsIter<'a> {
    rows: std::slice::Iter<'a, u32>,
    table: &'a PathRows,
    kinds: &'a [KindStats],
}

impl<'a> Iterator for PathsIter<'a> {
    type Item = &'a KindStats;

    fn next(&mut self) -> Option<&'a KindStats> {
        // Every row names one (`tables`): the iteration ends at the first that does not.
        self.table.get(self.kinds, *self.rows.next()?)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.rows.size_hint()
    }
}

impl DoubleEndedIterator for PathsIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.table.get(self.kinds, *self.rows.next_back()?)
    }
}

impl ExactSizeIterator for PathsIter<'_> {}

/// The kinds per thread and path (by thread id, then path) and per path across threads (by
/// path), from the collector's `per_thread` kinds: rows of one path on every thread add up to its
/// row across threads. `event_type` is the type of a path's last label.
///
/// The table per thread is the result's memory (a row of 112 bytes a kind): the table across
/// threads adds 4 bytes a path and a row for each path seen on several threads.
pub(crate) fn tables(
    mut per_thread: Vec<Kind>,
    tree: NameTree,
    event_type: impl Fn(PathId) -> EventType,
    clock: &ClockInfo,
    context: Option<&SystemContext>,
) -> (Vec<KindStats>, PathRows) {
    let kind = |tid, path: PathId, acc: &KindAcc| KindStats {
        tid,
        path: tree.path(path),
        event_type: event_type(path),
        count: acc.count,
        durations: acc.durations.stats(clock),
        system: acc.system.as_ref().map(|s| Box::new(s.stats(context))),
    };
    // By path, so that a path's rows are a run ((path, thread) is unique): the rows across
    // threads merged, and by path id, where each path's row is to be.
    per_thread.sort_unstable_by_key(|k| (k.path, k.tid));
    let mut sources = vec![NONE; tree.ids.len()];
    let mut merged: Vec<KindStats> = Vec::new();
    for run in per_thread.chunk_by(|a, b| a.path == b.path) {
        sources[run[0].path as usize] = if let [_] = run {
            ONE
        } else {
            let mut all = KindAcc::default();
            for k in run {
                all.count += k.acc.count;
                all.durations.merge(&k.acc.durations);
                if let Some(s) = &k.acc.system {
                    all.system().merge(s);
                }
            }
            merged.push(kind(None, run[0].path, &all));
            MERGED | (merged.len() as u32 - 1)
        };
    }
    merged.shrink_to_fit();

    // The table per thread: by thread, the path's names, the type, the path's id. Sorted in
    // place; a path of one thread is to be its row.
    per_thread.sort_unstable_by(|x, y| {
        x.tid
            .cmp(&y.tid)
            .then_with(|| tree.cmp(x.path, y.path))
            .then_with(|| event_type(x.path).cmp(&event_type(y.path)))
            .then(x.path.cmp(&y.path))
    });
    for (place, k) in per_thread.iter().enumerate() {
        let source = &mut sources[k.path as usize];
        if *source == ONE {
            *source = place as u32;
        }
    }
    // Made from the last row back, the accumulators' memory freed as the table's is filled (the
    // table's pages are taken as written): in turn, never both whole.
    let n = per_thread.len();
    let step = (n / 16).max(1 << 12);
    let mut kinds = Vec::with_capacity(n);
    while let Some(k) = per_thread.pop() {
        kinds.push(kind(Some(k.tid), k.path, &k.acc));
        if per_thread.capacity() - per_thread.len() >= step {
            per_thread.shrink_to_fit();
        }
    }
    kinds.reverse();
    drop((per_thread, tree));
    // Each path with rows, in the order of its ids.
    sources.retain(|&s| s != NONE);

    // The table across threads: by the path's names, the type; then the path's id (the sort is
    // stable).
    let mut paths = PathRows { rows: Vec::new(), merged };
    sources.sort_by(|&a, &b| match (paths.get(&kinds, a), paths.get(&kinds, b)) {
        (Some(x), Some(y)) => x.path.cmp_names(&y.path).then_with(|| x.event_type.cmp(&y.event_type)),
        // Not reached: every source names a row.
        (x, y) => x.is_some().cmp(&y.is_some()),
    });
    paths.rows = sources;
    (kinds, paths)
}

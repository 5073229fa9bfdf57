//! Scope nesting: each thread's tree of slices, built from a stream in which a complete event
//! arrives at its **end**, after the slices nested in it. Statistics (`stats`) and folded stacks
//! (`folded`) both read their paths from here.
//!
//! # The algorithm
//!
//! A slice's path (the names of the slices enclosing it, outermost first) is known only once every
//! slice that could enclose it has arrived. Per thread, [`Nesting`] keeps:
//!
//! * the stack of **open begins** (a begin whose end has not come): everything recorded while one
//!   is open goes into its **region**, so it gets the begin's name as a prefix;
//! * in each region, the **pending** finished subtrees, sorted by start: slices whose parent may
//!   still arrive.
//!
//! A complete event `[s, e]` **adopts** the pending subtrees of the innermost region that start
//! within it, in order of start, up to the first that ends after it (the children were recorded
//! first, as scope guards do). If an earlier pending slice contains it instead (an event recorded
//! with explicit times, after its parent), it goes down into that slice's children, the same way.
//! Equal intervals nest the one recorded first inside the later one. An end closes the innermost
//! open begin (whatever its name, as viewers draw it) and turns it into a pending subtree holding
//! its region. Instants, counters and logs are zero-length marks, adopted like slices. A slice
//! that **partially overlaps** its nearest earlier sibling, or the first pending slice that starts
//! inside it and ends after it, is *interlaced*: reported, and left a sibling. So is a slice
//! recorded while a begin is open that started before it (it stays in the begin's region).
//!
//! Each level's pending slices are `Siblings` (`siblings.rs`): ordered by start (the newest first among equal
//! starts), with insertion anywhere and the removal of a run in O(log n). So a slice costs
//! O(log n) to place, plus a step per level it goes down and per subtree it adopts, however its
//! timestamps jump about; a file whose timestamps go backwards costs no more than one in order.
//!
//! # Where the slices are kept
//!
//! Every pending slice of a [`Nesting`], all threads together, is a node of one arena (a `Vec`
//! and a stack of its free places), and trees are made of node indices: a slice costs no block of its own, its
//! children none either, and resolving a subtree walks indices and frees the nodes in place.
//! Owned subtrees (each node holding a list of its children's nodes) cost, per event, a move of
//! the 80-byte node into its list and out of it onto the walk's stack, and a block allocated and
//! freed per parent: two thirds of the time of `phosphor stats` went there.
//!
//! A node's children are either a chain (each child links to the next, in key order, through its
//! node) or a `Siblings` list of indices. A parent adopts a run of slices taken from its
//! region's list, already in key order, so it chains them: no allocation. Only a node that a
//! later slice goes down into (an event recorded with explicit times, after its parent) needs its
//! children searched: its chain becomes a list then, once, and the O(log n) placement above holds
//! in it. A begin's region becomes its children as it is (a list, or a chain of its one slice).
//!
//! The walk pushes a node's children onto its stack as indices, in key order, and reverses them
//! (the first in time on top) or, where starts are equal, sorts them into the order [`Sink`]
//! documents. A pending slice takes its 48-byte node (with no payload) and, if it sits in a list,
//! 24 bytes there: at most 72 bytes, where an owned node took 80 (and 4 in the stack of free
//! places once it is resolved).
//!
//! Paths are interned in [`Paths`] (a trie of labels: a path of depth d takes d nodes, shared with
//! its prefixes), and a subtree is handed to the [`Sink`] with its final paths when it is
//! **resolved**: at the end of the stream, or early (below).
//!
//! # Depth
//!
//! Paths are at most `max_depth` labels deep ([`DEFAULT_MAX_DEPTH`]). Below that, a slice's path is
//! its ancestors down to that depth, then [`DEEPER`], then its own label: the slices deeper than
//! the cap are counted by name under one marker per place where the cap was reached
//! ([`Nesting::truncated`] counts them). Without a cap, a file of n nested scopes would make n
//! paths of up to n labels for the statistics and the folded stacks to spell out. A slice never
//! goes down into pending slices past the cap either (its path would not change): it is placed
//! beside the slice that holds it there, which counts its duration as a child's. So durations and
//! counts stay exact, self times below the cap are exact along a chain of slices and approximate
//! where the cap cuts a wider tree, and no problem is reported below the cap.
//!
//! # When a path is final, and memory
//!
//! Nothing in the stream marks where a complete event starts, so a parent can arrive at any later
//! time and adopt any suffix of a thread's pending siblings (those starting after its start).
//! Exact paths therefore need every pending sibling kept until the end of the stream: no earlier
//! point is safe, and a flat trace (a long run of top-level slices) would keep them all. Instead
//! each thread keeps at most `limit` pending slices. Past it, the oldest pending subtrees (lowest
//! region first, then earliest start) are resolved under the path known now; a region remembers
//! the latest start it resolved early, and a slice that later arrives and would have enclosed one
//! of them is reported as [`ProblemKind::LateParent`]: its own path is right, but the slices
//! resolved early were counted without its name. So memory is bounded by `limit` slices per thread
//! plus the open begins, and paths are exact unless a `LateParent` is reported.

use std::cmp::Reverse;

use phosphor_format::IdMap;

pub use crate::paths::{Label, PathId, Paths, DEEPER, ROOT};
use crate::siblings::{FirstInPlace, Key, Siblings};

#[path = "arena.rs"]
mod arena;
use arena::{total_dur, Arena, Node, Step, Walk, LIST, NIL};

/// Pending slices kept per thread by default (statistics and folded stacks): at most 72 bytes
/// each (a node and its place in a list), so about 4.5 MiB per thread at most (plus the spare
/// capacity of the arena and the lists). Past it, the oldest are
/// resolved under the path known then. A frame of a game or a request of a server is far smaller;
/// a scope around a whole thread's work is not, and is reported as a late parent.
pub const DEFAULT_PENDING_LIMIT: usize = 1 << 16;

/// The deepest path kept by default (statistics and folded stacks): slices nested deeper are
/// counted by name under a `[deeper than 256]` marker. Flame graph tools cap stacks too (perf at
/// 127 frames by default); an instrumented program's scopes nest far less deeply than its calls.
pub const DEFAULT_MAX_DEPTH: usize = 256;

/// What a resolved slice is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SliceKind {
    /// A slice with a duration: a complete or lock event, or a begin/end pair.
    Scope,
    /// A point: an instant, counter or log.
    Mark,
    /// A begin never ended: no duration; it only names what it encloses.
    Unclosed,
}

/// A slice whose path is final, as handed to the [`Sink`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    pub tid: u32,
    pub path: PathId,
    /// The labels on its path: 1 at the top level (the depth cap's marker counts as one).
    pub depth: u32,
    pub kind: SliceKind,
    /// Start, in raw clock ticks.
    pub start: u64,
    /// Duration in ticks (0 for marks and unclosed begins).
    pub dur: u64,
    /// The duration less the durations of the slices directly nested in it.
    pub self_ticks: u64,
}

/// A scope that does not nest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// An end closed the innermost open begin, which has another label.
    WrongName { open: Label, end: Label },
    /// An end came with no begin open.
    EndWithoutBegin { end: Label },
    /// A begin was still open at the end of the stream.
    LeftOpen { open: Label },
    /// `scope` partially overlaps its sibling `other`.
    Interlaced { scope: Label, other: Label },
    /// `scope` encloses slices already resolved without it (the pending limit was reached).
    LateParent { scope: Label },
}

/// A problem, on thread `tid` at raw timestamp `ts`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Problem {
    pub tid: u32,
    pub ts: u64,
    pub kind: ProblemKind,
}

/// What receives the resolved slices and the problems.
///
/// A subtree is handed over as a walk in time order: each slice is *entered* ([`Sink::enter`],
/// which by default calls [`Sink::slice`]) before the slices nested in it, and *left*
/// ([`Sink::leave`]) after them; siblings in order of start (among equal starts, those of no
/// length first, then the one that lasts, then a begin never ended). A writer that turns the
/// walk into begins and ends gets, at equal timestamps, begins outer-first and ends inner-first:
/// what any client that sorts by time with ties in stream order (Perfetto's trace processor),
/// or replays the stream as written, rebuilds as this tree.
pub trait Sink<P = ()> {
    /// A slice whose path is final.
    fn slice(&mut self, _slice: &Slice) {}
    /// The slice with the payload it was added with ([`Nesting::complete_with`] and the like),
    /// before the slices nested in it. By default, [`Sink::slice`].
    fn enter(&mut self, slice: &Slice, payload: P) {
        let _ = payload;
        self.slice(slice);
    }
    /// After the slices nested in `slice` (entered just before them).
    fn leave(&mut self, _slice: &Slice) {}
    /// A scope that does not nest.
    fn problem(&mut self, _problem: Problem) {}
}

/// A begin not yet ended.
#[derive(Debug)]
struct Open<P> {
    label: Label,
    start: u64,
    /// Its path as known now (a complete event that later encloses it would change it).
    path: PathId,
    /// Durations of its children resolved early.
    nested: u64,
    payload: P,
}

/// The pending subtrees at one level of open begins: their roots, in the [`Arena`].
#[derive(Debug, Default)]
struct Region {
    /// The first in place: most threads of a file of many threads have one slice.
    items: FirstInPlace<u32>,
    /// The latest start of a subtree resolved early from this region.
    resolved_until: Option<u64>,
}

/// A thread's open begins and pending slices: 104 bytes (with no payload), and nothing on the
/// heap but its one node in the arena until it has a second pending slice or an open begin (a
/// file may have a million threads of one slice each).
#[derive(Debug)]
struct Thread<P> {
    /// The top level's region.
    top: Region,
    /// The open begins, outermost first, each with the region inside it.
    levels: Vec<(Open<P>, Region)>,
    /// Nodes in all the regions' subtrees (at most the limit, below `u32::MAX`).
    pending: u32,
    tid: u32,
    /// The start and end of its last complete event (start `u64::MAX`: none yet): the scope that
    /// a `phosphor/scope_alloc` event after it, stamped with its end, belongs to.
    last_complete: (u64, u64),
}

impl<P> Thread<P> {
    fn new(tid: u32) -> Thread<P> {
        Thread { top: Region::default(), levels: Vec::new(), pending: 0, tid, last_complete: (u64::MAX, 0) }
    }

    /// The innermost open begin.
    fn open(&self) -> Option<&Open<P>> {
        self.levels.last().map(|(o, _)| o)
    }

    /// The path of the innermost open begin; the root at the top level.
    fn prefix(&self) -> PathId {
        self.open().map_or(ROOT, |o| o.path)
    }

    /// The region inside the innermost open begin, or the top level.
    fn innermost(&mut self) -> &mut Region {
        self.levels.last_mut().map_or(&mut self.top, |(_, r)| r)
    }
}
/// The per-thread trees. Feed it a thread's events in the order the thread recorded them (threads
/// may interleave), then call [`Nesting::finish`].
///
/// Each slice may carry a payload `P` (none by default): what a writer needs to write it (an
/// event kept aside), handed back with the slice to [`Sink::enter`] when its path is final.
#[derive(Debug)]
pub struct Nesting<P = ()> {
    /// By thread id, its place in `threads`.
    thread_index: IdMap,
    threads: Vec<Thread<P>>,
    paths: Paths,
    limit: usize,
    /// Every pending slice.
    arena: Arena<P>,
    /// Scratch stack of [`Walk::resolve`].
    stack: Vec<Step>,
    /// Scratch list of the slices a slice adopts.
    adopted: Vec<(Key, u32)>,
    resolved_early: u64,
    truncated: u64,
    /// Pending slices, all threads together (the sum of each thread's count).
    pending: usize,
    /// The arrival number of the next slice (0 is for begins left open, placed after all).
    next_seq: u64,
    /// Levels gone down and subtrees adopted, placing slices: what their placement cost.
    #[cfg(test)]
    steps: u64,
}

impl<P: Default> Nesting<P> {
    /// Keeps at most `limit` pending slices per thread, and paths [`DEFAULT_MAX_DEPTH`] deep.
    pub fn new(limit: usize) -> Nesting<P> {
        Nesting {
            thread_index: IdMap::default(),
            threads: Vec::new(),
            paths: Paths::new(DEFAULT_MAX_DEPTH),
            // A thread's count of pending slices is a `u32`.
            limit: limit.min(u32::MAX as usize - 1),
            arena: Arena::default(),
            stack: Vec::new(),
            adopted: Vec::new(),
            resolved_early: 0,
            truncated: 0,
            pending: 0,
            next_seq: 1,
            #[cfg(test)]
            steps: 0,
        }
    }

    /// Cuts paths at `depth` labels (at least 1) instead. Call it before the first event.
    pub fn max_depth(mut self, depth: usize) -> Nesting<P> {
        self.paths = Paths::new(depth);
        self
    }

    /// The paths interned so far.
    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    /// The paths, once the stream has ended.
    pub fn into_paths(self) -> Paths {
        self.paths
    }

    /// The paths, once the stream has ended, leaving none (under the same depth cap).
    pub fn take_paths(&mut self) -> Paths {
        let empty = Paths::new(self.paths.max_depth());
        std::mem::replace(&mut self.paths, empty)
    }

    /// The most pending slices a thread keeps.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Slices resolved before the end of the stream because a thread reached the limit.
    pub fn resolved_early(&self) -> u64 {
        self.resolved_early
    }

    /// Slices resolved so far whose path was cut at the depth cap.
    pub fn truncated(&self) -> u64 {
        self.truncated
    }

    /// Pending slices, all threads together.
    pub fn pending(&self) -> usize {
        self.pending
    }

    /// The state of thread `tid`, new if it had none.
    fn thread(&mut self, tid: u32) -> &mut Thread<P> {
        thread(&mut self.thread_index, &mut self.threads, tid)
    }

    /// What placing the slices has cost so far: levels gone down, subtrees adopted.
    #[cfg(test)]
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Opens a begin slice.
    pub fn begin(&mut self, tid: u32, label: Label, ts: u64) {
        self.begin_with(tid, label, ts, P::default());
    }

    /// Opens a begin slice carrying `payload`.
    pub fn begin_with(&mut self, tid: u32, label: Label, ts: u64, payload: P) {
        let prefix = self.thread(tid).prefix();
        let path = self.paths.child(prefix, label);
        let open = Open { label, start: ts, path, nested: 0, payload };
        self.thread(tid).levels.push((open, Region::default()));
    }

    /// Whether thread `tid` has a begin open.
    pub fn has_open(&self, tid: u32) -> bool {
        self.thread_index.get(tid).is_some_and(|at| !self.threads[at as usize].levels.is_empty())
    }

    /// Closes the innermost open begin of `tid`.
    pub fn end(&mut self, tid: u32, label: Label, ts: u64, sink: &mut impl Sink<P>) {
        self.end_with(tid, label, ts, sink, |_| {});
    }

    /// Closes the innermost open begin of `tid`, first handing its payload to `update` (a writer
    /// adds the end's arguments to it). Returns whether a begin was open.
    pub fn end_with(
        &mut self,
        tid: u32,
        label: Label,
        ts: u64,
        sink: &mut impl Sink<P>,
        update: impl FnOnce(&mut P),
    ) -> bool {
        let Some((mut open, region)) = self.thread(tid).levels.pop() else {
            sink.problem(Problem { tid, ts, kind: ProblemKind::EndWithoutBegin { end: label } });
            return false;
        };
        if open.label != label {
            sink.problem(Problem { tid, ts, kind: ProblemKind::WrongName { open: open.label, end: label } });
        }
        update(&mut open.payload);
        let resolved_inside = region.resolved_until.is_some();
        let mut node = Node::new(open.start, ts.max(open.start), open.label, SliceKind::Scope, open.payload);
        let nested = total_dur(&self.arena.nodes, region.items.iter().map(|(_, &i)| i));
        node.nested = open.nested.saturating_add(nested);
        node.children = self.arena.children_of(region.items);
        self.add(tid, node, sink);
        if resolved_inside {
            // A slice that later encloses this one would also enclose the children resolved early.
            let outer = self.thread(tid).innermost();
            outer.resolved_until = outer.resolved_until.max(Some(open.start));
        }
        true
    }

    /// A slice from `ts` lasting `dur` ticks, recorded at its end.
    pub fn complete(&mut self, tid: u32, label: Label, ts: u64, dur: u64, sink: &mut impl Sink<P>) {
        self.complete_with(tid, label, ts, dur, P::default(), sink);
    }

    /// [`Nesting::complete`], the slice carrying `payload`.
    pub fn complete_with(
        &mut self,
        tid: u32,
        label: Label,
        ts: u64,
        dur: u64,
        payload: P,
        sink: &mut impl Sink<P>,
    ) {
        let node = Node::new(ts, ts.saturating_add(dur), label, SliceKind::Scope, payload);
        self.add(tid, node, sink);
        thread(&mut self.thread_index, &mut self.threads, tid).last_complete = (ts, ts.saturating_add(dur));
    }

    /// The start of thread `tid`'s last complete event if it ended at `end`: the scope a
    /// `phosphor/scope_alloc` at `end` belongs to (one whose scope was lost, overwritten in a ring
    /// or dropped, matches no other).
    pub fn complete_ending_at(&self, tid: u32, end: u64) -> Option<u64> {
        let t = &self.threads[self.thread_index.get(tid)? as usize];
        let (start, last_end) = t.last_complete;
        (start != u64::MAX && last_end == end).then_some(start)
    }

    /// A point event at `ts`.
    pub fn mark(&mut self, tid: u32, label: Label, ts: u64, sink: &mut impl Sink<P>) {
        self.mark_with(tid, label, ts, P::default(), sink);
    }

    /// [`Nesting::mark`], the mark carrying `payload`.
    pub fn mark_with(&mut self, tid: u32, label: Label, ts: u64, payload: P, sink: &mut impl Sink<P>) {
        self.add(tid, Node::new(ts, ts, label, SliceKind::Mark, payload), sink);
    }

    fn add(&mut self, tid: u32, mut node: Node<P>, sink: &mut impl Sink<P>) {
        let t = thread(&mut self.thread_index, &mut self.threads, tid);
        if let Some(open) = t.open().filter(|o| node.kind == SliceKind::Scope && node.start < o.start) {
            // Recorded while the begin is open, but started before it: it stays in the begin's
            // region (as viewers draw it), and overlaps it from the begin on.
            let kind = ProblemKind::Interlaced { scope: node.label, other: open.label };
            sink.problem(Problem { tid, ts: open.start, kind });
        }
        // Levels the slice may go down before its path would be cut anyway.
        let prefix = t.prefix();
        let room = (self.paths.max_depth() as u32).saturating_sub(self.paths.depth(prefix)) as usize;
        node.seq = self.next_seq;
        self.next_seq += 1;
        let region = t.innermost();
        let _steps = insert(region, &mut self.arena, &mut self.adopted, node, room, tid, sink);
        #[cfg(test)]
        {
            self.steps += _steps as u64;
        }
        t.pending += 1;
        self.pending += 1;
        if t.pending as usize > self.limit {
            let mut walk = Walk {
                arena: &mut self.arena,
                paths: &mut self.paths,
                stack: &mut self.stack,
                truncated: &mut self.truncated,
            };
            let resolved = shed(t, self.limit, &mut walk, sink);
            self.resolved_early += resolved as u64;
            self.pending -= resolved;
        }
    }

    /// Resolves every pending slice of every thread now, as a thread past its limit resolves its
    /// oldest (a slice that later encloses them is reported as a late parent): for a writer that
    /// bounds what all threads hold together. Returns the slices resolved.
    pub fn shed_all(&mut self, sink: &mut impl Sink<P>) -> usize {
        let mut walk = Walk {
            arena: &mut self.arena,
            paths: &mut self.paths,
            stack: &mut self.stack,
            truncated: &mut self.truncated,
        };
        let mut resolved = 0;
        for t in self.threads.iter_mut().filter(|t| t.pending > 0) {
            resolved += shed(t, 0, &mut walk, sink);
        }
        self.resolved_early += resolved as u64;
        self.pending -= resolved;
        resolved
    }

    /// Ends the stream: begins still open become unclosed slices (reported), and every pending
    /// subtree is resolved. No slice may be added after: the paths' index is freed.
    pub fn finish(&mut self, sink: &mut impl Sink<P>) {
        self.thread_index = IdMap::default();
        self.pending = 0;
        let mut threads = std::mem::take(&mut self.threads);
        threads.sort_unstable_by_key(|t| Reverse(t.tid));
        // By id; each thread's memory is freed once it is resolved, and the list's as it empties
        // (a million threads' states while the sink grows): at half its room, so that the sink's
        // growth is offset early; the moves add up to the list's length once.
        while let Some(mut t) = threads.pop() {
            if threads.len() < threads.capacity() / 2 {
                threads.shrink_to_fit();
            }
            let tid = t.tid;
            while let Some((open, region)) = t.levels.pop() {
                sink.problem(Problem {
                    tid,
                    ts: open.start,
                    kind: ProblemKind::LeftOpen { open: open.label },
                });
                let mut node =
                    Node::new(open.start, open.start, open.label, SliceKind::Unclosed, open.payload);
                node.children = self.arena.children_of(region.items);
                // After the slices starting with it (arrival number 0 sorts last).
                let key = node.key();
                let i = self.arena.alloc(node);
                t.innermost().items.list().insert(key, i);
            }
            let mut walk = Walk {
                arena: &mut self.arena,
                paths: &mut self.paths,
                stack: &mut self.stack,
                truncated: &mut self.truncated,
            };
            for (_, i) in std::mem::take(&mut t.top.items) {
                walk.resolve(tid, ROOT, i, sink);
            }
        }
        // Every node is free.
        self.arena = Arena::default();
        self.paths.free_index();
    }
}

/// The state of thread `tid` in `threads`, found by `index`; new if it had none.
fn thread<'a, P>(index: &mut IdMap, threads: &'a mut Vec<Thread<P>>, tid: u32) -> &'a mut Thread<P> {
    let at = match index.get(tid) {
        Some(at) => at,
        None => {
            threads.push(Thread::new(tid));
            let at = threads.len() as u32 - 1;
            index.insert(tid, at);
            at
        }
    };
    &mut threads[at as usize]
}

/// The earlier slice in `list` that holds `node`, if any: the oldest of those starting with it,
/// or the one before them. No other can (siblings do not overlap), and among equal starts only
/// the oldest can be a scope: a later scope starting there adopts the slices starting with it, or
/// goes inside the scope that holds it.
///
/// Also returns the item just before those starting with it (what the caller checks for an
/// overlap): found by the same search when none starts with it, as in most traces.
fn holder<P>(list: &Siblings<u32>, nodes: &[Node<P>], node: &Node<P>) -> (Option<u32>, Option<u32>) {
    let before = match list.last_at_or_before(node.start) {
        None => return (None, None),
        Some((k, &i)) if k.0 == node.start => {
            // The oldest starting with it.
            if nodes[i as usize].holds(node) {
                return (Some(i), None);
            }
            list.last_before(node.start).map(|(_, &i)| i)
        }
        Some((_, &i)) => Some(i),
    };
    let held = before.filter(|&i| nodes[i as usize].holds(node));
    (held, before)
}

/// The list a slice is placed in: the region's, or the children of node `parent` (made a list).
fn siblings_in<'a, P>(
    items: &'a mut FirstInPlace<u32>,
    arena: &'a mut Arena<P>,
    parent: u32,
) -> (&'a mut Siblings<u32>, &'a mut [Node<P>]) {
    if parent == NIL {
        (items.list(), &mut arena.nodes)
    } else {
        let at = arena.nodes[parent as usize].children - LIST;
        (&mut arena.lists[at as usize], &mut arena.nodes)
    }
}

/// Puts `node` into `region`: down into the pending slice that holds it, if any (at most `room`
/// levels); there, it adopts the slices it contains (through `adopted`, left empty). Returns the
/// levels gone down plus the subtrees adopted.
fn insert<P>(
    region: &mut Region,
    arena: &mut Arena<P>,
    adopted: &mut Vec<(Key, u32)>,
    mut node: Node<P>,
    room: usize,
    tid: u32,
    sink: &mut impl Sink<P>,
) -> usize {
    let Region { items, resolved_until } = region;
    let is_scope = node.kind == SliceKind::Scope;
    let key = node.key();
    if items.is_empty() {
        // Nothing to go down into, adopt or overlap.
        if is_scope && resolved_until.is_some_and(|r| node.start <= r) {
            sink.problem(Problem {
                tid,
                ts: node.start,
                kind: ProblemKind::LateParent { scope: node.label },
            });
        }
        *items = FirstInPlace::One(key, arena.alloc(node));
        return 0;
    }
    // The slice goes into the children of `parent` ([`NIL`]: the region).
    let mut parent = NIL;
    let mut depth = 0;
    // At the depth cap, the slice is placed beside the one that holds it, which takes its
    // duration as a child's (exact along a chain); no problem is reported there.
    let mut capped = NIL;
    // The slice just before it in the list it goes into (found by `holder`).
    let mut before;
    loop {
        let (list, nodes) = siblings_in(items, arena, parent);
        let held;
        (held, before) = holder(list, nodes, &node);
        let Some(h) = held else { break };
        if depth == room {
            capped = h;
            break;
        }
        depth += 1;
        arena.make_list(h);
        parent = h;
    }
    let at_top = parent == NIL && capped == NIL;
    if is_scope && at_top && resolved_until.is_some_and(|r| node.start <= r) {
        sink.problem(Problem { tid, ts: node.start, kind: ProblemKind::LateParent { scope: node.label } });
    }
    let mut adopted_dur = 0;
    if is_scope {
        let (list, nodes) = siblings_in(items, arena, parent);
        if capped == NIL {
            // `holder` found that the nearest earlier sibling does not hold `node`: if it is still
            // running when `node` starts, the two overlap.
            if let Some(prev) = before {
                let prev = &nodes[prev as usize];
                if prev.kind == SliceKind::Scope && prev.end > node.start {
                    let kind = ProblemKind::Interlaced { scope: node.label, other: prev.label };
                    sink.problem(Problem { tid, ts: node.start, kind });
                }
            }
        }
        let end = node.end;
        let refused = list.take_run(node.start, end, |&i| nodes[i as usize].end <= end, adopted);
        if let Some(&i) = refused.and_then(|k| list.get(k)).filter(|_| capped == NIL) {
            let n = &nodes[i as usize];
            if n.kind == SliceKind::Scope && n.start < end {
                let kind = ProblemKind::Interlaced { scope: node.label, other: n.label };
                sink.problem(Problem { tid, ts: n.start, kind });
            }
        }
        adopted_dur = total_dur(nodes, adopted.iter().map(|&(_, i)| i));
        node.nested = node.nested.saturating_add(adopted_dur);
    }
    let steps = depth + adopted.len();
    let dur = node.dur();
    let i = arena.alloc(node);
    arena.adopt(i, adopted);
    let holder = if capped != NIL { capped } else { parent };
    if holder != NIL {
        let nested = &mut arena.nodes[holder as usize].nested;
        *nested = nested.saturating_add(dur).saturating_sub(adopted_dur);
    }
    siblings_in(items, arena, parent).0.insert(key, i);
    steps
}

#[cfg(test)]
thread_local! {
    /// Levels looked at by `shed` on this thread: what shedding has cost (the tests').
    pub(crate) static SHED_LEVELS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Resolves the oldest pending subtrees of `t` (lowest region first) until it holds at most three
/// quarters of `limit`, so that shedding happens once per many events. Returns the slices
/// resolved.
fn shed<P: Default>(
    t: &mut Thread<P>,
    limit: usize,
    walk: &mut Walk<'_, P>,
    sink: &mut impl Sink<P>,
) -> usize {
    let target = limit - limit / 4;
    let mut resolved = 0;
    for k in 0..=t.levels.len() {
        if t.pending as usize <= target {
            // Done: the levels further in are not looked at (a thread may have a hundred
            // thousand begins open, and a writer sheds often).
            break;
        }
        #[cfg(test)]
        SHED_LEVELS.with(|n| n.set(n.get() + 1));
        let prefix = if k == 0 { ROOT } else { t.levels[k - 1].0.path };
        while t.pending as usize > target {
            let (open, region) = match k {
                0 => (None, &mut t.top),
                _ => {
                    let (open, region) = &mut t.levels[k - 1];
                    (Some(open), region)
                }
            };
            let Some((_, i)) = region.items.pop_first() else { break };
            let node = &walk.arena.nodes[i as usize];
            region.resolved_until = region.resolved_until.max(Some(node.start));
            if let Some(open) = open {
                open.nested = open.nested.saturating_add(node.dur());
            }
            let n = walk.resolve(t.tid, prefix, i, sink);
            t.pending -= n as u32;
            resolved += n;
        }
    }
    resolved
}

#[cfg(test)]
#[path = "nesting_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "walk_tests.rs"]
mod walk_tests;

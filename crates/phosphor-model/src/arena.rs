//! The nodes of the nesting (`nesting.rs`) and their walk: every pending slice of a
//! [`Nesting`](super::Nesting) in one arena, trees of indices (see the nesting's module docs,
//! "Where the slices are kept").

use std::cmp::Reverse;

use super::{Label, PathId, Paths, Sink, Slice, SliceKind};
use crate::siblings::{FirstInPlace, Key, Siblings};

/// No node: the end of a chain, a node with no children.
pub(super) const NIL: u32 = u32::MAX;

/// [`Node::children`] from this value on (below [`NIL`]) is a list in [`Arena::lists`]; below it,
/// the first node of a chain.
pub(super) const LIST: u32 = 1 << 31;

/// A finished slice waiting for its parent, in the [`Arena`]: 48 bytes with no payload.
#[derive(Debug)]
pub(super) struct Node<P> {
    pub(super) start: u64,
    pub(super) end: u64,
    /// Durations of the direct children, including those already resolved.
    pub(super) nested: u64,
    /// Its arrival number: with its start, its [`Key`] among its siblings.
    pub(super) seq: u64,
    pub(super) label: Label,
    /// Its children, in key order: [`NIL`] (none), the first of a chain linked by
    /// [`Node::next`], or `LIST` plus the place of a list in [`Arena::lists`].
    pub(super) children: u32,
    /// The next node of the chain it is in (its parent's children).
    pub(super) next: u32,
    pub(super) kind: SliceKind,
    /// What the caller added with the slice, handed back to [`Sink::enter`].
    pub(super) payload: P,
}

impl<P> Node<P> {
    pub(super) fn new(start: u64, end: u64, label: Label, kind: SliceKind, payload: P) -> Node<P> {
        Node { start, end, nested: 0, seq: 0, label, children: NIL, next: NIL, kind, payload }
    }

    pub(super) fn key(&self) -> Key {
        (self.start, Reverse(self.seq))
    }

    pub(super) fn dur(&self) -> u64 {
        match self.kind {
            SliceKind::Scope => self.end - self.start,
            SliceKind::Mark | SliceKind::Unclosed => 0,
        }
    }

    /// Whether this (earlier) slice holds `later`, which arrived after it: `later` starts inside
    /// it and ends by its end. Equal intervals are the other way round (a parent arrives after its
    /// children), and a slice starting at this one's end came after it.
    pub(super) fn holds(&self, later: &Node<P>) -> bool {
        self.kind == SliceKind::Scope
            && self.start <= later.start
            && later.start < self.end
            && later.end <= self.end
            && (self.start, self.end) != (later.start, later.end)
    }
}

/// The summed durations of nodes `of` in `nodes`, saturating: the durations of a corrupt file can
/// be anything, and overlapping (interlaced) siblings can sum past their parent.
pub(super) fn total_dur<P>(nodes: &[Node<P>], of: impl IntoIterator<Item = u32>) -> u64 {
    of.into_iter().fold(0, |sum, i| sum.saturating_add(nodes[i as usize].dur()))
}

/// Every pending slice of a [`Nesting`], all threads together, and the lists of children that
/// are searched (see the [module docs](self)).
#[derive(Debug)]
pub(super) struct Arena<P> {
    pub(super) nodes: Vec<Node<P>>,
    /// The free nodes, the last freed last (a stack apart from the nodes: taking one reads no
    /// node that has left the cache).
    pub(super) free: Vec<u32>,
    /// The children of the nodes that slices went down into, by place.
    pub(super) lists: Vec<Siblings<u32>>,
    /// The free places of `lists`.
    pub(super) free_lists: Vec<u32>,
}

impl<P> Default for Arena<P> {
    fn default() -> Arena<P> {
        Arena { nodes: Vec::new(), free: Vec::new(), lists: Vec::new(), free_lists: Vec::new() }
    }
}

impl<P> Arena<P> {
    /// Stores `node` (whose children are already its own), in a free place if there is one.
    pub(super) fn alloc(&mut self, node: Node<P>) -> u32 {
        if let Some(i) = self.free.pop() {
            self.nodes[i as usize] = node;
            return i;
        }
        let i = u32::try_from(self.nodes.len()).ok().filter(|&i| i < LIST).expect("2^31 pending slices");
        self.nodes.push(node);
        i
    }

    /// Frees node `i`, whose children have been taken.
    pub(super) fn release(&mut self, i: u32) {
        self.free.push(i);
    }

    /// Stores `list`, in a free place if there is one, and returns its place.
    pub(super) fn store(&mut self, list: Siblings<u32>) -> u32 {
        match self.free_lists.pop() {
            Some(at) => {
                self.lists[at as usize] = list;
                at
            }
            None => {
                let at =
                    u32::try_from(self.lists.len()).ok().filter(|&at| at < NIL - LIST).expect("2^31 lists");
                self.lists.push(list);
                at
            }
        }
    }

    /// Children made of a region's pending slices.
    pub(super) fn children_of(&mut self, items: FirstInPlace<u32>) -> u32 {
        match items {
            FirstInPlace::One(_, i) => {
                self.nodes[i as usize].next = NIL;
                i
            }
            FirstInPlace::Many(list) if list.is_empty() => NIL,
            FirstInPlace::Many(list) => LIST + self.store(list),
        }
    }

    /// Makes the children of node `i` a list (a slice goes down into it), and returns its place.
    pub(super) fn make_list(&mut self, i: u32) -> usize {
        let children = self.nodes[i as usize].children;
        if children != NIL && children >= LIST {
            return (children - LIST) as usize;
        }
        let mut items = std::collections::VecDeque::new();
        let mut c = children;
        while c != NIL {
            let n = &self.nodes[c as usize];
            items.push_back((n.key(), c));
            c = n.next;
        }
        // An empty list too: the slice is about to join it.
        let at = self.store(Siblings::List(items));
        self.nodes[i as usize].children = LIST + at;
        at as usize
    }

    /// Gives node `i` the `adopted` nodes (in key order, starting within it) as children, beside
    /// those it has.
    pub(super) fn adopt(&mut self, i: u32, adopted: &mut Vec<(Key, u32)>) {
        let Some(&(_, first)) = adopted.first() else { return };
        if self.nodes[i as usize].children == NIL {
            for w in adopted.windows(2) {
                self.nodes[w[0].1 as usize].next = w[1].1;
            }
            self.nodes[adopted[adopted.len() - 1].1 as usize].next = NIL;
            self.nodes[i as usize].children = first;
            adopted.clear();
            return;
        }
        let at = self.make_list(i);
        self.lists[at].extend(adopted.drain(..));
    }

    /// Takes the children of node `i`, in key order, onto `out` as steps entering them under `path`.
    pub(super) fn take_children(&mut self, i: u32, path: PathId, out: &mut Vec<Step>) {
        let children = std::mem::replace(&mut self.nodes[i as usize].children, NIL);
        match children {
            NIL => {}
            first if first < LIST => {
                let mut c = first;
                while c != NIL {
                    out.push(Step::Enter(c, path));
                    c = self.nodes[c as usize].next;
                }
            }
            list => {
                let at = list - LIST;
                let list = std::mem::take(&mut self.lists[at as usize]);
                self.free_lists.push(at);
                out.extend(list.into_iter().map(|(_, c)| Step::Enter(c, path)));
            }
        }
    }
}

/// A step of [`Walk::resolve`].
#[derive(Clone, Copy, Debug)]
pub(super) enum Step {
    /// Enter node under the path.
    Enter(u32, PathId),
    /// Leave node, whose path is given, once the slices nested in it are walked.
    Leave(u32, PathId),
}

/// What resolving subtrees needs of a [`Nesting`].
pub(super) struct Walk<'a, P> {
    pub(super) arena: &'a mut Arena<P>,
    pub(super) paths: &'a mut Paths,
    /// Scratch stack.
    pub(super) stack: &'a mut Vec<Step>,
    pub(super) truncated: &'a mut u64,
}

impl<P: Default> Walk<'_, P> {
    /// The slice node `i` of thread `tid` is, on `path`.
    pub(super) fn slice(&self, tid: u32, i: u32, path: PathId) -> Slice {
        let node = &self.arena.nodes[i as usize];
        let dur = node.dur();
        let self_ticks = dur.saturating_sub(node.nested);
        let depth = self.paths.depth(path);
        Slice { tid, path, depth, kind: node.kind, start: node.start, dur, self_ticks }
    }

    /// Hands the subtree of node `root`, under `prefix`, to `sink` as a walk in time order (see
    /// [`Sink`]), counting the paths cut at the depth cap, and frees its nodes; returns its size.
    /// Iterative: a subtree can be deeper than the call stack.
    pub(super) fn resolve(&mut self, tid: u32, prefix: PathId, root: u32, sink: &mut impl Sink<P>) -> usize {
        let mut n = 0;
        self.stack.push(Step::Enter(root, prefix));
        while let Some(step) = self.stack.pop() {
            let (i, prefix) = match step {
                Step::Enter(i, prefix) => (i, prefix),
                Step::Leave(i, path) => {
                    sink.leave(&self.slice(tid, i, path));
                    self.arena.release(i);
                    continue;
                }
            };
            let path = self.paths.child(prefix, self.arena.nodes[i as usize].label);
            *self.truncated += u64::from(self.paths.is_truncated(path));
            let slice = self.slice(tid, i, path);
            sink.enter(&slice, std::mem::take(&mut self.arena.nodes[i as usize].payload));
            n += 1;
            self.stack.push(Step::Leave(i, path));
            let first = self.stack.len();
            self.arena.take_children(i, path, self.stack);
            // The children, the first in time on top. Among those of one start (at most one of
            // which lasts: siblings do not overlap), the marks and slices of no length first,
            // then the one that lasts, then a begin never ended: a client that sorts by time
            // would otherwise nest the first in the one that lasts, or everything in the one
            // never ended. Among equal ones, the oldest first.
            let nodes = &self.arena.nodes;
            let start = |s: &Step| match *s {
                Step::Enter(c, _) | Step::Leave(c, _) => nodes[c as usize].start,
            };
            let children = &mut self.stack[first..];
            if children.windows(2).all(|w| start(&w[0]) < start(&w[1])) {
                // In key order, of distinct starts: that order, reversed.
                children.reverse();
            } else {
                // In key order, the newest first among equal starts: kept among equals.
                children.sort_by_key(|s| match *s {
                    Step::Enter(c, _) | Step::Leave(c, _) => {
                        let c = &nodes[c as usize];
                        Reverse((c.start, c.kind == SliceKind::Unclosed, c.end))
                    }
                });
            }
        }
        n
    }
}

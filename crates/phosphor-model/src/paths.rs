//! Paths: a slice's name and those of the slices enclosing it, interned in a trie shared by all
//! threads ([`Paths`]), cut at a depth cap. See [`crate::nesting`] for how slices get them.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// A slice's name, as its consumer numbers them (a stack segment for folded stacks; a name and an
/// event type for statistics). A begin and the end that matches it carry the same label.
/// [`DEEPER`] is reserved.
pub type Label = u32;

/// The label of the marker that stands for the levels below the depth cap.
pub const DEEPER: Label = Label::MAX;

/// An interned path: a stack of labels. [`ROOT`] is the empty path, a thread's top level.
pub type PathId = u32;

/// The empty path.
pub const ROOT: PathId = 0;

/// One path of the trie.
#[derive(Clone, Copy, Debug)]
struct PathNode {
    parent: PathId,
    label: Label,
    /// Labels in the path, the [`DEEPER`] marker included.
    depth: u32,
}

/// The paths seen so far: a trie of labels, shared by all threads.
#[derive(Debug)]
pub struct Paths {
    nodes: Vec<PathNode>,
    /// The paths, found by their parent and last label (4 bytes a path).
    index: HashTable<PathId>,
    max_depth: u32,
}

impl Paths {
    pub(crate) fn new(max_depth: usize) -> Paths {
        Paths {
            nodes: vec![PathNode { parent: ROOT, label: DEEPER, depth: 0 }],
            index: HashTable::new(),
            max_depth: u32::try_from(max_depth).unwrap_or(u32::MAX).clamp(1, u32::MAX - 2),
        }
    }

    /// The path `parent` followed by `label`, cut at the depth cap: past it, the ancestors down
    /// to the cap, [`DEEPER`], then `label`.
    pub fn child(&mut self, parent: PathId, label: Label) -> PathId {
        let depth = self.depth(parent);
        if depth < self.max_depth {
            self.intern(parent, label)
        } else if depth == self.max_depth {
            let marker = self.intern(parent, DEEPER);
            self.intern(marker, label)
        } else {
            // Below the marker: beside `parent`, under the same marker.
            self.intern(self.parent(parent), label)
        }
    }

    fn intern(&mut self, parent: PathId, label: Label) -> PathId {
        let nodes = &self.nodes;
        let hash = |parent: PathId, label: Label| FxBuildHasher.hash_one((parent, label));
        let found = self.index.find(hash(parent, label), |&p| {
            let n = &nodes[p as usize];
            (n.parent, n.label) == (parent, label)
        });
        if let Some(&id) = found {
            return id;
        }
        let next = nodes.len() as PathId;
        let depth = nodes[parent as usize].depth + 1;
        self.nodes.push(PathNode { parent, label, depth });
        let nodes = &self.nodes;
        self.index.insert_unique(hash(parent, label), next, |&p| {
            let n = &nodes[p as usize];
            hash(n.parent, n.label)
        });
        next
    }

    /// Labels in `path` (a path cut at the cap counts its marker).
    pub fn depth(&self, path: PathId) -> u32 {
        self.nodes[path as usize].depth
    }

    /// `path` without its last label (the root for the root).
    pub fn parent(&self, path: PathId) -> PathId {
        self.nodes[path as usize].parent
    }

    /// The last label of `path` (meaningless for the root).
    pub fn label(&self, path: PathId) -> Label {
        self.nodes[path as usize].label
    }

    /// Whether `path` was cut at the depth cap.
    pub fn is_truncated(&self, path: PathId) -> bool {
        self.depth(path) > self.max_depth
    }

    /// Frees the index that finds a path by its parent and label: no path may be interned after.
    pub(crate) fn free_index(&mut self) {
        self.index = HashTable::new();
    }

    /// The depth cap.
    pub fn max_depth(&self) -> usize {
        self.max_depth as usize
    }

    /// Never: the root is always there.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Paths interned, the root included: their ids are below it, a parent's below its
    /// children's.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The labels of `path`, outermost first.
    pub fn labels(&self, mut path: PathId) -> Vec<Label> {
        let mut out = Vec::with_capacity(self.depth(path) as usize);
        while path != ROOT {
            out.push(self.label(path));
            path = self.parent(path);
        }
        out.reverse();
        out
    }
}

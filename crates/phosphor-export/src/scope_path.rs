//! [`ScopePath`]: a kind's path (`frame/update/physics`), interned in a tree of names that the
//! statistics of one file share.
//!
//! A path is its parent's path and one name more, so the tree stores each path as a node (its
//! parent, its name), and a [`ScopePath`] is the tree and a node: 16 bytes, whatever its depth.
//! Spelled out as strings, the n paths of n nested scopes would take n²/2 names.

use std::cmp::Ordering;
use std::fmt;
use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use phosphor_model::names::NameList;

/// The names of the enclosing scopes, outermost first, then the kind's own: a path in the tree
/// of the [`TraceStats`](crate::TraceStats) it came from. Cloning it copies a reference.
///
/// ```
/// # use phosphor::{trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig};
/// # let log = TraceLog::new(TraceLogConfig::default()).unwrap();
/// # log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
/// # {
/// #     trace_scope!(log: &log, "app", "frame");
/// #     trace_scope!(log: &log, "app", "update");
/// # }
/// # log.stop();
/// # let bytes = log.take_trace().unwrap().write_to(Vec::new()).unwrap();
/// # let stats = phosphor_export::TraceStats::from_bytes(&bytes).unwrap();
/// let update = &stats.path(&["frame", "update"]).unwrap().path;
/// assert_eq!(update.to_string(), "frame/update");
/// assert_eq!((update.len(), update.name()), (2, "update"));
/// assert_eq!(update.segments().collect::<Vec<_>>(), ["frame", "update"]);
/// ```
#[derive(Clone)]
pub struct ScopePath {
    tree: Arc<PathTree>,
    id: u32,
}

impl ScopePath {
    pub(crate) fn new(tree: Arc<PathTree>, id: u32) -> ScopePath {
        ScopePath { tree, id }
    }

    /// The number of names (found by walking up the tree: O(names)).
    pub fn len(&self) -> usize {
        let mut n = 0;
        let mut id = self.id;
        while id != 0 {
            n += 1;
            id = self.tree.node(id).parent;
        }
        n
    }

    /// Whether it has no name (a kind's path always has one).
    pub fn is_empty(&self) -> bool {
        self.id == 0
    }

    /// The last name: the kind's own.
    pub fn name(&self) -> &str {
        self.tree.name(self.id)
    }

    /// The names, outermost first.
    pub fn segments(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator + '_ {
        let mut ids = Vec::new();
        let mut id = self.id;
        while id != 0 {
            ids.push(id);
            id = self.tree.node(id).parent;
        }
        ids.into_iter().rev().map(|id| self.tree.name(id))
    }

    /// Whether the names are `names`, in order.
    pub fn is(&self, names: &[&str]) -> bool {
        self.len() == names.len() && self.segments().eq(names.iter().copied())
    }

    /// Paths in the tree this one is in (the empty one included).
    #[cfg(test)]
    pub(crate) fn tree_len(&self) -> usize {
        self.tree.nodes.len()
    }

    /// Whether `other` is in the same tree.
    #[cfg(test)]
    pub(crate) fn same_tree(&self, other: &ScopePath) -> bool {
        Arc::ptr_eq(&self.tree, &other.tree)
    }

    /// The order of the names, as `Vec<String>`s compare (the names of both compared in turn).
    pub(crate) fn cmp_names(&self, other: &ScopePath) -> Ordering {
        if Arc::ptr_eq(&self.tree, &other.tree) {
            self.tree.cmp(self.id, other.id)
        } else {
            self.segments().cmp(other.segments())
        }
    }
}

impl PartialEq for ScopePath {
    fn eq(&self, other: &ScopePath) -> bool {
        self.cmp_names(other) == Ordering::Equal
    }
}

impl Eq for ScopePath {}

/// The names joined by `/`.
impl fmt::Display for ScopePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, name) in self.segments().enumerate() {
            if i > 0 {
                f.write_str("/")?;
            }
            f.write_str(name)?;
        }
        Ok(())
    }
}

impl fmt::Debug for ScopePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.segments()).finish()
    }
}

#[derive(Clone, Copy, Debug)]
struct Node {
    /// Below the node's id: a parent is added first.
    parent: u32,
    name: u32,
}

/// Paths as a tree of names: node 0 is the empty path; a node is its parent and a name.
#[derive(Debug)]
pub(crate) struct PathTree {
    nodes: Vec<Node>,
    names: NameList,
    /// By node, its place in the order of the paths' names: the tree walked depth first, each
    /// node's children in the order of their names (which differ), is that order.
    rank: Vec<u32>,
}

impl PathTree {
    fn node(&self, id: u32) -> Node {
        self.nodes[id as usize]
    }

    fn name(&self, id: u32) -> &str {
        if id == 0 {
            ""
        } else {
            self.names.get(self.node(id).name)
        }
    }

    /// The order of two paths' names.
    pub(crate) fn cmp(&self, a: u32, b: u32) -> Ordering {
        self.rank[a as usize].cmp(&self.rank[b as usize])
    }
}

/// Builds a [`PathTree`] by interning paths one name at a time.
#[derive(Debug)]
pub(crate) struct PathTreeBuilder {
    tree: PathTree,
    /// The nodes, found by their parent and name (4 bytes a node).
    index: HashTable<u32>,
}

impl PathTreeBuilder {
    /// A tree over `names` (which must differ from each other).
    pub(crate) fn new(names: NameList) -> PathTreeBuilder {
        let root = Node { parent: 0, name: 0 };
        let tree = PathTree { nodes: vec![root], names, rank: Vec::new() };
        PathTreeBuilder { tree, index: HashTable::new() }
    }

    /// The path `parent` followed by the name numbered `name`.
    pub(crate) fn child(&mut self, parent: u32, name: u32) -> u32 {
        let hash = |parent: u32, name: u32| FxBuildHasher.hash_one((parent, name));
        let nodes = &self.tree.nodes;
        let same = |&n: &u32| (nodes[n as usize].parent, nodes[n as usize].name) == (parent, name);
        if let Some(&id) = self.index.find(hash(parent, name), same) {
            return id;
        }
        let next = nodes.len() as u32;
        self.tree.nodes.push(Node { parent, name });
        let nodes = &self.tree.nodes;
        self.index.insert_unique(hash(parent, name), next, |&n| {
            hash(nodes[n as usize].parent, nodes[n as usize].name)
        });
        next
    }

    pub(crate) fn finish(self) -> Arc<PathTree> {
        let mut tree = self.tree;
        drop(self.index);
        tree.rank = ranks(&tree);
        Arc::new(tree)
    }
}

/// The rank of each node of `tree`: its place in a depth-first walk that takes each node's
/// children in the order of their names. Iterative, in O(n log n).
fn ranks(tree: &PathTree) -> Vec<u32> {
    let n = tree.nodes.len();
    // The children of node p are `kids[first[p]..first[p + 1]]`.
    let mut first = vec![0u32; n + 1];
    for node in &tree.nodes[1..] {
        first[node.parent as usize + 1] += 1;
    }
    for p in 0..n {
        first[p + 1] += first[p];
    }
    let mut kids = vec![0u32; n.saturating_sub(1)];
    let mut next = first.clone();
    for (id, node) in tree.nodes.iter().enumerate().skip(1) {
        kids[next[node.parent as usize] as usize] = id as u32;
        next[node.parent as usize] += 1;
    }
    drop(next);
    for p in 0..n {
        kids[first[p] as usize..first[p + 1] as usize]
            .sort_unstable_by(|&a, &b| tree.name(a).cmp(tree.name(b)));
    }
    let mut rank = vec![0u32; n];
    let mut stack = vec![0u32];
    let mut order = 0;
    while let Some(p) = stack.pop() {
        rank[p as usize] = order;
        order += 1;
        stack.extend(kids[first[p as usize] as usize..first[p as usize + 1] as usize].iter().rev());
    }
    rank
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree of `paths` and a [`ScopePath`] for each.
    fn paths(paths: &[&[&str]]) -> Vec<ScopePath> {
        let mut names: Vec<&str> = paths.iter().flat_map(|p| p.iter().copied()).collect();
        names.sort_unstable();
        names.dedup();
        let mut list = NameList::default();
        for n in &names {
            list.push(n);
        }
        let mut b = PathTreeBuilder::new(list);
        let ids: Vec<u32> = paths
            .iter()
            .map(|p| p.iter().fold(0, |parent, n| b.child(parent, names.binary_search(n).unwrap() as u32)))
            .collect();
        let tree = b.finish();
        ids.into_iter().map(|id| ScopePath::new(tree.clone(), id)).collect()
    }

    #[test]
    fn paths_order_as_their_names_do() {
        let cases: &[&[&str]] = &[
            &["a"],
            &["a", "b"],
            &["a", "b", "c"],
            &["a", "b c"],
            &["a", "bb"],
            &["a b"],
            &["b"],
            &["b", "a"],
            &["ab"],
            &["a", "b", "c", "d", "e"],
            &["a", "c"],
        ];
        let ps = paths(cases);
        for (x, px) in cases.iter().zip(&ps) {
            assert!(px.is(x));
            assert_eq!(px.to_string(), x.join("/"));
            for (y, py) in cases.iter().zip(&ps) {
                assert_eq!(px.cmp_names(py), x.cmp(y), "{x:?} vs {y:?}");
            }
        }
    }

    #[test]
    fn a_deep_path_takes_a_node_per_name() {
        let deep: Vec<String> = (0..1000).map(|i| format!("f{}", i % 3)).collect();
        let deep: Vec<&str> = deep.iter().map(String::as_str).collect();
        let ps = paths(&[&deep, &deep[..500]]);
        // 1000 nodes and the root for both paths: the shorter is a prefix of the longer.
        assert_eq!(ps[0].tree.nodes.len(), 1001);
        assert_eq!((ps[0].len(), ps[1].len()), (1000, 500));
        assert_eq!(ps[0].name(), "f0");
        assert!(ps[1].cmp_names(&ps[0]).is_lt());
    }
}

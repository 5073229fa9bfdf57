//! The pending slices at one level of the nesting (`nesting.rs`): a list ordered by start, the
//! newest first among equal starts, that takes an insertion anywhere, and the removal of a run of
//! neighbours, in O(log n).
//!
//! In an ordinary trace a slice joins the list at its end and a parent takes a run from its end,
//! and the oldest leave from its front: a sorted `VecDeque` does all three without moving the
//! others, and keeps them in one block. But a file's timestamps can go backwards, so a slice may
//! belong anywhere, and a sorted list would move half of it on every insertion. So [`Siblings`]
//! becomes a `BTreeMap` when an insertion or a removal would move more than [`MOVES`] items,
//! and a `VecDeque` again once half of its items have joined it at its end in a row: each change
//! of form, O(n), is paid for by the n/2 operations or more before it.

use std::cmp::Reverse;
use std::collections::{BTreeMap, VecDeque};

/// Where an item sits: its start, then its arrival number reversed, so that the newest of equal
/// starts comes first. Arrival numbers are never `u64::MAX`.
pub type Key = (u64, Reverse<u64>);

/// The most items a sorted list moves for one insertion or removal before it becomes a tree.
const MOVES: usize = 32;

/// The partition point of `pred` in `v` (the first item whose key it is false for; true for a
/// prefix), searched from the end: O(log d) for a point d items from it, as the points of an
/// ordinary trace are.
fn partition<V>(v: &VecDeque<(Key, V)>, pred: impl Fn(&Key) -> bool) -> usize {
    // `pred` is false from `hi` on.
    let (mut hi, mut step) = (v.len(), 1);
    while hi > 0 {
        let probe = hi.saturating_sub(step);
        if pred(&v[probe].0) {
            // The point is in (probe, hi].
            let mut lo = probe + 1;
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if pred(&v[mid].0) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            return lo;
        }
        hi = probe;
        step *= 2;
    }
    0
}

/// The smallest key of the items starting at `start`.
fn first_at(start: u64) -> Key {
    (start, Reverse(u64::MAX))
}

/// The largest key of the items starting at `start`.
fn last_at(start: u64) -> Key {
    (start, Reverse(0))
}

/// Items ordered by [`Key`].
#[derive(Debug)]
pub enum Siblings<V> {
    /// Sorted by key.
    List(VecDeque<(Key, V)>),
    /// And the items that joined it at its end since an item joined it elsewhere (boxed: most
    /// lists are short, and a list is the size of its `VecDeque`).
    Tree(Box<(BTreeMap<Key, V>, usize)>),
}

impl<V> Default for Siblings<V> {
    fn default() -> Siblings<V> {
        Siblings::List(VecDeque::new())
    }
}

impl<V> Siblings<V> {
    pub fn len(&self) -> usize {
        match self {
            Siblings::List(v) => v.len(),
            Siblings::Tree(tree) => tree.0.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Makes a sorted list a tree.
    fn make_tree(&mut self) {
        if let Siblings::List(v) = self {
            *self = Siblings::Tree(Box::new((std::mem::take(v).into_iter().collect(), 0)));
        }
    }

    /// Adds an item; a key already present is replaced (keys are unique in use).
    pub fn insert(&mut self, key: Key, value: V) {
        match self {
            Siblings::List(v) => {
                let at = partition(v, |k| *k < key);
                if v.get(at).is_some_and(|(k, _)| *k == key) {
                    v[at].1 = value;
                } else if v.capacity() == 0 {
                    // Room for one only: most lists (a thread's top level in a file of many
                    // threads, a slice's children) never hold a second, and a first push would
                    // make room for four.
                    v.reserve_exact(1);
                    v.push_back((key, value));
                } else if at.min(v.len() - at) <= MOVES {
                    v.insert(at, (key, value));
                } else {
                    self.make_tree();
                    self.insert(key, value);
                }
            }
            Siblings::Tree(tree) => {
                let (m, appends) = &mut **tree;
                *appends = if m.last_key_value().is_none_or(|(k, _)| *k < key) { *appends + 1 } else { 0 };
                m.insert(key, value);
                if 2 * *appends > m.len() {
                    *self = Siblings::List(std::mem::take(m).into_iter().collect());
                }
            }
        }
    }

    /// Adds items in key order (as [`Siblings::take_run`] returns them).
    pub fn extend(&mut self, items: impl IntoIterator<Item = (Key, V)>) {
        if self.is_empty() {
            *self = Siblings::List(items.into_iter().collect());
            return;
        }
        for (k, v) in items {
            self.insert(k, v);
        }
    }

    pub fn get(&self, key: Key) -> Option<&V> {
        match self {
            Siblings::List(v) => {
                let at = partition(v, |k| *k < key);
                v.get(at).filter(|(k, _)| *k == key).map(|(_, v)| v)
            }
            Siblings::Tree(tree) => tree.0.get(&key),
        }
    }

    /// The last item with a key at most `bound`.
    fn last_up_to(&self, bound: Key) -> Option<(Key, &V)> {
        match self {
            Siblings::List(v) => {
                let at = partition(v, |k| *k <= bound);
                at.checked_sub(1).map(|i| (v[i].0, &v[i].1))
            }
            Siblings::Tree(tree) => tree.0.range(..=bound).next_back().map(|(k, v)| (*k, v)),
        }
    }

    /// The last item starting at `start` or before: the oldest of those starting at `start`, or
    /// the one just before them ([`Siblings::last_before`]) if none does.
    pub fn last_at_or_before(&self, start: u64) -> Option<(Key, &V)> {
        self.last_up_to(last_at(start))
    }

    /// The item just before those starting at `start`: the oldest of the latest start below it.
    pub fn last_before(&self, start: u64) -> Option<(Key, &V)> {
        let bound = start.checked_sub(1)?;
        self.last_up_to(last_at(bound))
    }

    /// Removes the run of items that start from `from` to `to`, in key order, up to the first
    /// that `take` refuses; appends them to `out` and returns the refused item's key. Costs
    /// O(log n) per item taken, and the refused item stays where it is.
    pub fn take_run(
        &mut self,
        from: u64,
        to: u64,
        mut take: impl FnMut(&V) -> bool,
        out: &mut Vec<(Key, V)>,
    ) -> Option<Key> {
        match self {
            Siblings::List(v) => {
                let lo = partition(v, |k| *k < first_at(from));
                let mut hi = lo;
                while hi < v.len() && v[hi].0 .0 <= to && take(&v[hi].1) {
                    hi += 1;
                }
                let refused = v.get(hi).filter(|(k, _)| k.0 <= to).map(|(k, _)| *k);
                if hi > lo {
                    if lo.min(v.len() - hi) > MOVES {
                        self.make_tree();
                        return self.take_run(from, to, take, out);
                    }
                    out.extend(v.drain(lo..hi));
                }
                refused
            }
            Siblings::Tree(tree) => loop {
                let m = &mut tree.0;
                let (&k, v) = m.range(first_at(from)..).next()?;
                if k.0 > to {
                    return None;
                }
                if !take(v) {
                    return Some(k);
                }
                let v = m.remove(&k).expect("the key was just found");
                out.push((k, v));
            },
        }
    }

    /// Removes the first item.
    pub fn pop_first(&mut self) -> Option<(Key, V)> {
        match self {
            Siblings::List(v) => v.pop_front(),
            Siblings::Tree(tree) => tree.0.pop_first(),
        }
    }

    /// The items in key order.
    pub fn iter(&self) -> Iter<'_, V> {
        match self {
            Siblings::List(v) => Iter::List(v.iter()),
            Siblings::Tree(tree) => Iter::Tree(tree.0.iter()),
        }
    }
}

/// [`Siblings`] that hold a first item in place, with no allocation: a thread's top level in a
/// file of a million threads of one slice each would otherwise take a million small blocks, which
/// the allocator keeps once they are freed.
#[derive(Debug)]
pub enum FirstInPlace<V> {
    One(Key, V),
    Many(Siblings<V>),
}

impl<V> Default for FirstInPlace<V> {
    fn default() -> FirstInPlace<V> {
        FirstInPlace::Many(Siblings::default())
    }
}

impl<V> FirstInPlace<V> {
    pub fn is_empty(&self) -> bool {
        match self {
            FirstInPlace::One(..) => false,
            FirstInPlace::Many(list) => list.is_empty(),
        }
    }

    /// The items as a list (which allocates for an item held in place).
    pub fn into_list(self) -> Siblings<V> {
        match self {
            FirstInPlace::One(key, value) => {
                let mut list = Siblings::default();
                list.insert(key, value);
                list
            }
            FirstInPlace::Many(list) => list,
        }
    }

    /// The items as a list, to change.
    pub fn list(&mut self) -> &mut Siblings<V> {
        // Two rounds at most: a second finds the list made in the first.
        loop {
            match self {
                FirstInPlace::Many(list) => return list,
                FirstInPlace::One(..) => *self = FirstInPlace::Many(std::mem::take(self).into_list()),
            }
        }
    }

    /// Removes the first item.
    pub fn pop_first(&mut self) -> Option<(Key, V)> {
        match std::mem::take(self) {
            FirstInPlace::One(key, value) => Some((key, value)),
            FirstInPlace::Many(mut list) => {
                let first = list.pop_first();
                *self = FirstInPlace::Many(list);
                first
            }
        }
    }

    /// The items in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&Key, &V)> {
        let (one, many) = match self {
            FirstInPlace::One(key, value) => (Some((key, value)), None),
            FirstInPlace::Many(list) => (None, Some(list.iter())),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }
}

impl<V> IntoIterator for FirstInPlace<V> {
    type Item = (Key, V);
    type IntoIter = std::iter::Chain<std::option::IntoIter<(Key, V)>, IntoIter<V>>;

    fn into_iter(self) -> Self::IntoIter {
        let (one, list) = match self {
            FirstInPlace::One(key, value) => (Some((key, value)), Siblings::default()),
            FirstInPlace::Many(list) => (None, list),
        };
        one.into_iter().chain(list)
    }
}

/// The items of a [`Siblings`] in key order.
pub enum Iter<'a, V> {
    List(std::collections::vec_deque::Iter<'a, (Key, V)>),
    Tree(std::collections::btree_map::Iter<'a, Key, V>),
}

impl<'a, V> Iterator for Iter<'a, V> {
    type Item = (&'a Key, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::List(i) => i.next().map(|(k, v)| (k, v)),
            Iter::Tree(i) => i.next(),
        }
    }
}

/// The items of a [`Siblings`] in key order, moved out.
pub enum IntoIter<V> {
    List(std::collections::vec_deque::IntoIter<(Key, V)>),
    Tree(std::collections::btree_map::IntoIter<Key, V>),
}

impl<V> Iterator for IntoIter<V> {
    type Item = (Key, V);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            IntoIter::List(i) => i.next(),
            IntoIter::Tree(i) => i.next(),
        }
    }
}

impl<V> IntoIterator for Siblings<V> {
    type Item = (Key, V);
    type IntoIter = IntoIter<V>;

    fn into_iter(self) -> IntoIter<V> {
        match self {
            Siblings::List(v) => IntoIter::List(v.into_iter()),
            Siblings::Tree(tree) => IntoIter::Tree(tree.0.into_iter()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(start: u64, seq: u64) -> Key {
        (start, Reverse(seq))
    }

    /// The same operations on a short list, on a long one that became a tree, and on a plain
    /// sorted reference.
    #[test]
    fn both_representations_keep_the_order_of_a_sorted_reference() {
        for n in [5u64, 300] {
            let mut s = Siblings::default();
            let mut reference: Vec<(Key, u64)> = Vec::new();
            // Starts out of order, with repeats (seq = arrival number).
            for seq in 1..=n {
                let start = (seq * 7) % 11;
                s.insert(key(start, seq), seq);
                reference.push((key(start, seq), seq));
            }
            reference.sort();
            assert_eq!(matches!(s, Siblings::Tree(..)), n > 100);
            let got: Vec<(Key, u64)> = s.iter().map(|(k, v)| (*k, *v)).collect();
            assert_eq!(got, reference);
            // Newest first among equal starts.
            let at3: Vec<u64> = got.iter().filter(|(k, _)| k.0 == 3).map(|(_, v)| *v).collect();
            assert!(at3.windows(2).all(|w| w[0] > w[1]), "{at3:?}");
            // The oldest of those starting at 3, or the last before them.
            assert_eq!(s.last_at_or_before(3).map(|(_, v)| *v), at3.last().copied());
            let up_to4 = reference.iter().rev().find(|(k, _)| k.0 < 4).map(|(_, v)| *v);
            let at4: Vec<u64> = got.iter().filter(|(k, _)| k.0 == 4).map(|(_, v)| *v).collect();
            assert_eq!(s.last_at_or_before(4).map(|(_, v)| *v), at4.last().copied().or(up_to4));
            let before5 = reference.iter().rev().find(|(k, _)| k.0 < 5).map(|(_, v)| *v);
            assert_eq!(s.last_before(5).map(|(_, v)| *v), before5);
            assert_eq!(s.last_before(0).map(|(_, v)| *v), None);

            // The run from 2 to 6 up to the first even value.
            let mut out = Vec::new();
            let refused = s.take_run(2, 6, |v| v % 2 == 1, &mut out);
            let run: Vec<(Key, u64)> =
                reference.iter().filter(|(k, _)| (2..=6).contains(&k.0)).copied().collect();
            let stop = run.iter().position(|(_, v)| v % 2 == 0);
            assert_eq!(out, run[..stop.unwrap_or(run.len())]);
            assert_eq!(refused, stop.map(|i| run[i].0));
            reference.retain(|item| !out.contains(item));
            let rest: Vec<(Key, u64)> = s.into_iter().collect();
            assert_eq!(rest, reference);
        }
    }

    #[test]
    fn a_run_stops_at_the_end_of_its_range_without_a_refusal() {
        let mut s = Siblings::default();
        for (seq, start) in [(1, 10), (2, 20), (3, 30)] {
            s.insert(key(start, seq), seq);
        }
        let mut out = Vec::new();
        assert_eq!(s.take_run(15, 25, |_| true, &mut out), None);
        assert_eq!(out, [(key(20, 2), 2)]);
        assert_eq!(s.pop_first(), Some((key(10, 1), 1)));
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn a_list_joined_at_its_ends_stays_a_list_and_a_tree_joined_at_its_end_becomes_one_again() {
        let mut s = Siblings::default();
        // At the end (an ordinary trace), then at the front (timestamps going backwards).
        for i in 0..1000u64 {
            s.insert(key(1000 + i, i + 1), i);
            s.insert(key(999 - i, i + 1), i);
        }
        assert!(matches!(s, Siblings::List(_)));
        s.insert(key(1000, 5000), 0);
        assert!(matches!(s, Siblings::Tree(..)), "an insertion in the middle would move 1,000");
        // Half of its items joined at its end in a row.
        for i in 0..2002u64 {
            s.insert(key(3000 + i, 6000 + i), i);
            assert_eq!(matches!(s, Siblings::List(_)), i == 2001, "{i}");
        }
        let keys: Vec<Key> = s.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys.len(), 4003);
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn the_search_from_the_end_finds_what_a_binary_search_does() {
        for n in 0..70u64 {
            // Wrapped around its buffer: half pushed at the back, half at the front.
            let mut v: VecDeque<(Key, ())> = VecDeque::new();
            for i in 0..n {
                if i % 2 == 0 {
                    v.push_back((key(1000 + 2 * i, 1), ()));
                } else {
                    v.push_front((key(1000 - 2 * i, 1), ()));
                }
            }
            for x in 850..(1000 + 2 * n + 2) {
                let bound = key(x, 1);
                assert_eq!(partition(&v, |k| *k < bound), v.partition_point(|(k, _)| *k < bound), "{n} {x}");
            }
        }
    }
}

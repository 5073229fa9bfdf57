//! The pending slices at one level of the nesting (`nesting.rs`): a list ordered by start, the
//! newest first among equal starts, that takes an insertion anywhere, and the removal of a run of
//! neighbours, in O(log n).
//!
//! A file's timestamps can go backwards, so a slice may belong anywhere in the list, and a sorted
//! `Vec` would move half of it on every insertion. [`Siblings`] is a sorted `Vec` while it is
//! short ([`FEW`] items: most lists hold a child or two, and a `BTreeMap` node costs about
//! 800 bytes), and a `BTreeMap` past that.

use std::cmp::Reverse;
use std::collections::BTreeMap;

/// Where an item sits: its start, then its arrival number reversed, so that the newest of equal
/// starts comes first. Arrival numbers are never `u64::MAX`.
pub(crate) type Key = (u64, Reverse<u64>);

/// Items a list keeps in a `Vec` before it becomes a `BTreeMap`.
const FEW: usize = 16;

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
pub(crate) enum Siblings<V> {
    /// Sorted by key; at most [`FEW`] items.
    Few(Vec<(Key, V)>),
    Many(BTreeMap<Key, V>),
}

impl<V> Default for Siblings<V> {
    fn default() -> Siblings<V> {
        Siblings::Few(Vec::new())
    }
}

impl<V> Siblings<V> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Siblings::Few(v) => v.len(),
            Siblings::Many(m) => m.len(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds an item; a key already present is replaced (keys are unique in use).
    pub(crate) fn insert(&mut self, key: Key, value: V) {
        match self {
            Siblings::Few(v) => {
                let at = v.partition_point(|(k, _)| *k < key);
                if v.get(at).is_some_and(|(k, _)| *k == key) {
                    v[at].1 = value;
                    return;
                }
                v.insert(at, (key, value));
                if v.len() > FEW {
                    *self = Siblings::Many(std::mem::take(v).into_iter().collect());
                }
            }
            Siblings::Many(m) => {
                m.insert(key, value);
            }
        }
    }

    /// Adds items in key order (as [`Siblings::take_run`] returns them).
    pub(crate) fn extend(&mut self, items: Vec<(Key, V)>) {
        if items.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = if items.len() <= FEW {
                Siblings::Few(items)
            } else {
                Siblings::Many(items.into_iter().collect())
            };
            return;
        }
        for (k, v) in items {
            self.insert(k, v);
        }
    }

    pub(crate) fn get(&self, key: Key) -> Option<&V> {
        match self {
            Siblings::Few(v) => {
                let at = v.partition_point(|(k, _)| *k < key);
                v.get(at).filter(|(k, _)| *k == key).map(|(_, v)| v)
            }
            Siblings::Many(m) => m.get(&key),
        }
    }

    pub(crate) fn get_mut(&mut self, key: Key) -> Option<&mut V> {
        match self {
            Siblings::Few(v) => {
                let at = v.partition_point(|(k, _)| *k < key);
                v.get_mut(at).filter(|(k, _)| *k == key).map(|(_, v)| v)
            }
            Siblings::Many(m) => m.get_mut(&key),
        }
    }

    /// The last item with a key at most `bound`.
    fn last_up_to(&self, bound: Key) -> Option<(Key, &V)> {
        match self {
            Siblings::Few(v) => {
                let at = v.partition_point(|(k, _)| *k <= bound);
                at.checked_sub(1).map(|i| (v[i].0, &v[i].1))
            }
            Siblings::Many(m) => m.range(..=bound).next_back().map(|(k, v)| (*k, v)),
        }
    }

    /// The oldest item starting at `start`.
    pub(crate) fn oldest_at(&self, start: u64) -> Option<(Key, &V)> {
        self.last_up_to(last_at(start)).filter(|(k, _)| k.0 == start)
    }

    /// The item just before those starting at `start`: the oldest of the latest start below it.
    pub(crate) fn last_before(&self, start: u64) -> Option<(Key, &V)> {
        let bound = start.checked_sub(1)?;
        self.last_up_to(last_at(bound))
    }

    /// Removes the run of items that start from `from` to `to`, in key order, up to the first
    /// that `take` refuses; appends them to `out` and returns the refused item's key. Costs
    /// O(log n) per item taken, and the refused item stays where it is.
    pub(crate) fn take_run(
        &mut self,
        from: u64,
        to: u64,
        mut take: impl FnMut(&V) -> bool,
        out: &mut Vec<(Key, V)>,
    ) -> Option<Key> {
        match self {
            Siblings::Few(v) => {
                let lo = v.partition_point(|(k, _)| *k < first_at(from));
                let mut hi = lo;
                while hi < v.len() && v[hi].0 .0 <= to && take(&v[hi].1) {
                    hi += 1;
                }
                let refused = v.get(hi).filter(|(k, _)| k.0 <= to).map(|(k, _)| *k);
                out.extend(v.drain(lo..hi));
                refused
            }
            Siblings::Many(m) => loop {
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
    pub(crate) fn pop_first(&mut self) -> Option<(Key, V)> {
        match self {
            Siblings::Few(v) => (!v.is_empty()).then(|| v.remove(0)),
            Siblings::Many(m) => m.pop_first(),
        }
    }

    /// The items in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Key, &V)> + '_ {
        let (few, many) = match self {
            Siblings::Few(v) => (Some(v.iter().map(|(k, v)| (k, v))), None),
            Siblings::Many(m) => (None, Some(m.iter())),
        };
        few.into_iter().flatten().chain(many.into_iter().flatten())
    }
}

impl<V> IntoIterator for Siblings<V> {
    type Item = (Key, V);
    type IntoIter = std::iter::Chain<
        std::iter::Flatten<std::option::IntoIter<std::vec::IntoIter<(Key, V)>>>,
        std::iter::Flatten<std::option::IntoIter<std::collections::btree_map::IntoIter<Key, V>>>,
    >;

    fn into_iter(self) -> Self::IntoIter {
        let (few, many) = match self {
            Siblings::Few(v) => (Some(v.into_iter()), None),
            Siblings::Many(m) => (None, Some(m.into_iter())),
        };
        few.into_iter().flatten().chain(many.into_iter().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(start: u64, seq: u64) -> Key {
        (start, Reverse(seq))
    }

    /// The same operations on a list grown past `FEW` and on a plain sorted reference.
    #[test]
    fn both_representations_keep_the_order_of_a_sorted_reference() {
        for n in [5u64, 40] {
            let mut s = Siblings::default();
            let mut reference: Vec<(Key, u64)> = Vec::new();
            // Starts out of order, with repeats (seq = arrival number).
            for seq in 1..=n {
                let start = (seq * 7) % 11;
                s.insert(key(start, seq), seq);
                reference.push((key(start, seq), seq));
            }
            reference.sort();
            assert_eq!(matches!(s, Siblings::Many(_)), n > FEW as u64);
            let got: Vec<(Key, u64)> = s.iter().map(|(k, v)| (*k, *v)).collect();
            assert_eq!(got, reference);
            // Newest first among equal starts.
            let at3: Vec<u64> = got.iter().filter(|(k, _)| k.0 == 3).map(|(_, v)| *v).collect();
            assert!(at3.windows(2).all(|w| w[0] > w[1]), "{at3:?}");
            assert_eq!(s.oldest_at(3).map(|(_, v)| *v), at3.last().copied());
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
}

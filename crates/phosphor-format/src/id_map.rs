//! [`IdMap`]: a map from the ids a file numbers things by (callsites, labels) to `u32`s, in a
//! plain array while the ids are about as many as the entries, as a writer's ids are (it numbers
//! callsites from [`FIRST_CALLSITE_ID`](crate::FIRST_CALLSITE_ID) up), and in a hash map for
//! the ids far past them, which only a hostile or unusual file has.
//!
//! A million callsites cost 4 MiB in the array, where a hash map takes 16 MiB or more; and a
//! lookup, once per event, is an index and a compare.

use rustc_hash::FxHashMap;

/// A map from `u32` ids to `u32` values.
///
/// Memory is bounded by the entries, whatever the ids: the array reaches at most twice the
/// number of entries plus [`DENSE_SLACK`](IdMap::DENSE_SLACK) slots, and an id past it is kept
/// in the hash map.
///
/// ```
/// use phosphor_format::IdMap;
///
/// let mut map = IdMap::default();
/// assert_eq!(map.insert(16, 0), None);
/// assert_eq!(map.insert(4_000_000_000, 1), None);
/// assert_eq!(map.insert(16, 2), Some(0));
/// assert_eq!((map.get(16), map.get(4_000_000_000), map.get(17)), (Some(2), Some(1), None));
/// assert_eq!(map.len(), 2);
/// ```
#[derive(Clone, Debug, Default)]
pub struct IdMap {
    /// By id, the value, or [`VACANT`].
    dense: Vec<u32>,
    /// The entries whose id was past the array's bound when they were inserted, or whose value is
    /// [`VACANT`]. An id is in one of the two at most.
    sparse: FxHashMap<u32, u32>,
    len: usize,
}

/// No value, in the array.
const VACANT: u32 = u32::MAX;

impl IdMap {
    /// Slots the array may hold past twice the number of entries: ids from 0 to this are always
    /// kept in the array.
    pub const DENSE_SLACK: usize = 1024;

    /// The value of `id`.
    #[inline]
    pub fn get(&self, id: u32) -> Option<u32> {
        match self.dense.get(id as usize) {
            Some(&v) if v != VACANT => Some(v),
            _ if self.sparse.is_empty() => None,
            _ => self.sparse.get(&id).copied(),
        }
    }

    /// Whether `id` has a value.
    pub fn contains(&self, id: u32) -> bool {
        self.get(id).is_some()
    }

    /// Sets the value of `id`, and returns its old value.
    pub fn insert(&mut self, id: u32, value: u32) -> Option<u32> {
        let old = self.get(id);
        if old.is_none() {
            self.len += 1;
        }
        let i = id as usize;
        if value != VACANT && i < self.len.saturating_mul(2).saturating_add(Self::DENSE_SLACK) {
            if old.is_some() && !self.sparse.is_empty() {
                self.sparse.remove(&id);
            }
            if i >= self.dense.len() {
                self.dense.resize(i + 1, VACANT);
            }
            self.dense[i] = value;
        } else {
            if let Some(slot) = self.dense.get_mut(i) {
                *slot = VACANT;
            }
            self.sparse.insert(id, value);
        }
        old
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every entry: those in the array by id, then the others in no order.
    pub fn iter(&self) -> Iter<'_> {
        Iter { dense: self.dense.iter().enumerate(), sparse: self.sparse.iter(), left: self.len }
    }
}

/// The entries of an [`IdMap`], as (id, value).
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    dense: std::iter::Enumerate<std::slice::Iter<'a, u32>>,
    sparse: std::collections::hash_map::Iter<'a, u32, u32>,
    left: usize,
}

impl Iterator for Iter<'_> {
    type Item = (u32, u32);

    fn next(&mut self) -> Option<(u32, u32)> {
        let next = match self.dense.find(|(_, &v)| v != VACANT) {
            // Ids in the array are below its length, a `u32` id's bound.
            Some((id, &v)) => Some((id as u32, v)),
            None => self.sparse.next().map(|(&id, &v)| (id, v)),
        };
        self.left = self.left.saturating_sub(usize::from(next.is_some()));
        next
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// xorshift64: a fixed sequence, so that a failure repeats.
    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn it_agrees_with_a_hash_map_whatever_the_ids() {
        for (seed, spread) in [(1, 64u64), (2, 4096), (3, 1 << 20), (4, 1 << 32)] {
            let mut next = rng(seed);
            let (mut map, mut model) = (IdMap::default(), HashMap::new());
            for step in 0..20_000 {
                // Mostly ids in order, as writers number them; some anywhere in the spread.
                let id = if next() % 4 == 0 { (next() % spread) as u32 } else { step as u32 };
                // Now and then the value the array cannot hold.
                let value = if next() % 97 == 0 { u32::MAX } else { next() as u32 };
                assert_eq!(map.insert(id, value), model.insert(id, value), "seed {seed}, step {step}");
                let probe = (next() % spread) as u32;
                assert_eq!(map.get(probe), model.get(&probe).copied());
            }
            assert_eq!(map.len(), model.len());
            assert_eq!(map.iter().len(), model.len());
            let mut all: Vec<(u32, u32)> = map.iter().collect();
            all.sort_unstable();
            let mut want: Vec<(u32, u32)> = model.into_iter().collect();
            want.sort_unstable();
            assert_eq!(all, want);
        }
    }

    #[test]
    fn ids_in_order_stay_in_the_array_and_far_ids_do_not_grow_it() {
        let mut map = IdMap::default();
        for id in 16..100_016 {
            map.insert(id, id - 16);
        }
        assert!(map.sparse.is_empty());
        assert_eq!(map.dense.len(), 100_016);
        map.insert(u32::MAX - 1, 7);
        assert_eq!(map.dense.len(), 100_016);
        assert_eq!(map.get(u32::MAX - 1), Some(7));
        // A file of far ids only: the array stays within its bound.
        let mut far = IdMap::default();
        for k in 0..10_000u32 {
            far.insert((1 << 31) + k * 7919, k);
        }
        assert!(far.dense.len() <= 2 * far.len() + IdMap::DENSE_SLACK);
        assert_eq!(far.len(), 10_000);
    }
}

//! A lock-free map from a foreign callsite's address to the points made for it: the cache of
//! [`bridge`](crate::bridge). Its atomics come from `sync`, so loom models it (model 11).

use std::marker::PhantomData;

use crate::sync::{AtomicPtr, AtomicUsize, Ordering};

/// A lock-free map from a foreign callsite's address to a value made once for it (its points),
/// with a fixed number of slots. Lookups never lock or allocate; an insertion allocates the
/// value's box once per key. When every slot is taken, [`insert`](SiteCache::insert) says so and
/// the caller counts the event as lost.
#[derive(Debug)]
pub struct SiteCache<V: 'static> {
    slots: Box<[Slot<V>]>,
    mask: usize,
    /// The cache hands out `&V` to every thread and may drop a `V` built on another thread: it is
    /// `Send` and `Sync` only when `V` is (its atomics alone would make it both).
    _values: PhantomData<V>,
}

#[derive(Debug)]
struct Slot<V> {
    /// The key (a non-zero address), or 0 while the slot is free.
    key: AtomicUsize,
    /// The value, or null until the inserting thread publishes it.
    value: AtomicPtr<V>,
}

impl<V: 'static> SiteCache<V> {
    /// A cache with room for `capacity` keys (rounded up to a power of two, at least 64).
    pub fn new(capacity: usize) -> SiteCache<V> {
        let n = capacity.next_power_of_two().max(64);
        let slots = (0..n)
            .map(|_| Slot { key: AtomicUsize::new(0), value: AtomicPtr::new(std::ptr::null_mut()) })
            .collect();
        SiteCache { slots, mask: n - 1, _values: PhantomData }
    }

    fn start(&self, key: usize) -> usize {
        // Fibonacci hashing: addresses are aligned, so their low bits are poor on their own.
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as usize) >> 16) & self.mask
    }

    /// The value of `key` (non-zero), if it was inserted.
    #[inline]
    pub fn get(&self, key: usize) -> Option<&'static V> {
        let i = self.start(key);
        // The key's own slot first, inline (where most keys sit); probing on is out of line.
        if let Some(slot) = self.slots.get(i) {
            // Relaxed and Acquire: see `probe`.
            if slot.key.load(Ordering::Relaxed) == key {
                let v = slot.value.load(Ordering::Acquire);
                // SAFETY: as in `probe`.
                return (!v.is_null()).then(|| unsafe { &*v });
            }
        }
        self.probe(key, i)
    }

    /// [`get`](Self::get) from slot `i` on.
    #[inline(never)]
    fn probe(&self, key: usize, mut i: usize) -> Option<&'static V> {
        for _ in 0..self.slots.len() {
            let slot = &self.slots[i];
            // Acquire pairs with the Release publication of the value in `insert`: a value read
            // here is fully built. The key's Relaxed load only steers the probe.
            match slot.key.load(Ordering::Relaxed) {
                0 => return None,
                k if k == key => {
                    let v = slot.value.load(Ordering::Acquire);
                    // SAFETY: a non-null value was leaked from a `Box<V>` by `insert` and is never
                    // freed, so it lives for 'static.
                    return (!v.is_null()).then(|| unsafe { &*v });
                }
                _ => i = (i + 1) & self.mask,
            }
        }
        None
    }

    /// Inserts `make()` for `key` (non-zero) unless it has a value; returns the value now in the
    /// cache, or `None` when the cache is full. Values are leaked: one per key, for the life of
    /// the process (foreign callsites are `static`s too).
    pub fn insert(&self, key: usize, make: impl FnOnce() -> V) -> Option<&'static V> {
        assert_ne!(key, 0, "0 is not a valid key");
        let mut i = self.start(key);
        for _ in 0..self.slots.len() {
            let slot = &self.slots[i];
            // Relaxed on success and failure: claiming a key publishes nothing by itself; the value
            // is published below with Release.
            match slot.key.compare_exchange(0, key, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Some(self.publish(slot, make)),
                Err(k) if k == key => {
                    // Acquire: see `get`.
                    let v = slot.value.load(Ordering::Acquire);
                    if v.is_null() {
                        // Another thread claimed the key and is building its value; build ours
                        // and race to publish: the first one wins, the loser's is dropped.
                        return Some(self.publish(slot, make));
                    }
                    // SAFETY: as in `get`.
                    return Some(unsafe { &*v });
                }
                Err(_) => i = (i + 1) & self.mask,
            }
        }
        None
    }

    fn publish(&self, slot: &Slot<V>, make: impl FnOnce() -> V) -> &'static V {
        let new = Box::into_raw(Box::new(make()));
        // Release on success: whoever loads this pointer (Acquire) sees the value built. Acquire on
        // failure: we read the winner's value.
        match slot.value.compare_exchange(std::ptr::null_mut(), new, Ordering::Release, Ordering::Acquire) {
            // SAFETY: just leaked from a box; never freed.
            Ok(_) => unsafe { &*new },
            Err(winner) => {
                // SAFETY: `new` came from `Box::into_raw` above and was never shared.
                drop(unsafe { Box::from_raw(new) });
                // SAFETY: as in `get`.
                unsafe { &*winner }
            }
        }
    }
}

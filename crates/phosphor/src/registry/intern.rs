//! Bounded, lock-free interning of dynamic strings (Palanteer's dynamic strings).
//!
//! [`intern`](crate::intern()) hashes a string (FNV-1a 64), finds it in a fixed table, and copies it
//! once into a fixed arena when it is new. The event then stores only the arena copy's address and
//! length, exactly like a `&'static str` argument, so a trace file's string table holds each
//! distinct string once, however many events use it.
//!
//! **Bounded.** The table ([`SLOTS`] entries) and the arena ([`ARENA_BYTES`]) are statics,
//! zero-initialised, so they cost memory only as they fill. When a string is longer than
//! [`MAX_INTERNED_BYTES`], or the table or the arena is full, or another thread is copying the same
//! string in at that moment, interning fails and the caller copies the string into the event
//! instead; each such fallback is counted ([`InternStats::fallbacks`]). Memory never grows beyond
//! these bounds, unlike tracers that keep every dynamic name for ever.
//!
//! # Protocol
//!
//! A slot holds a `key` (the hash, never 0) and a `loc` (where the copy is, 0 while it is being
//! written). A writer claims an empty slot by a compare-and-swap of its key, reserves arena bytes
//! with a `fetch_add` (the range is then its own), copies the string, and publishes `loc` with
//! Release. A reader that finds the key loads `loc` with Acquire, which makes the copied bytes
//! visible, and compares them with its string, so a hash collision never returns the wrong string.
//! Nobody waits: a slot still being written is a fallback.

use std::cell::UnsafeCell;

use crate::sync::{AtomicU64, AtomicUsize, Ordering};

/// Slots in the process-wide table.
#[cfg(not(loom))]
pub const SLOTS: usize = 4096;
/// Bytes in the process-wide arena.
#[cfg(not(loom))]
pub const ARENA_BYTES: usize = 256 << 10;
#[cfg(loom)]
pub const SLOTS: usize = 4;
#[cfg(loom)]
pub const ARENA_BYTES: usize = 64;

/// The longest string interned; longer ones are copied into their event (and cut there).
pub const MAX_INTERNED_BYTES: usize = phosphor_format::MAX_DYN_STR_BYTES;

/// Slots probed before the table counts as full for a hash.
const MAX_PROBES: usize = 32;

/// `loc` of a slot whose claimant found the arena full: never matches.
const LOC_NONE: u64 = u64::MAX;

/// What the interner holds, and how often it could not help.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InternStats {
    /// Distinct strings interned.
    pub strings: usize,
    /// Arena bytes used (reserved).
    pub bytes: usize,
    /// Strings copied into their event instead (too long, table or arena full, or a race).
    pub fallbacks: u64,
}

struct Slot {
    key: AtomicU64,
    loc: AtomicU64,
}

/// A bounded string interner: `SLOTS` slots and an `ARENA_BYTES` arena.
pub(crate) struct Interner {
    slots: [Slot; SLOTS],
    arena: UnsafeCell<[u8; ARENA_BYTES]>,
    /// Under loom, one tracked cell per arena byte, touched by every access to that byte, so that
    /// loom reports a read not ordered after the write (the arena itself is one std cell, whose
    /// disjoint concurrent writes loom would otherwise take for a race).
    #[cfg(loom)]
    shadow: [loom::cell::UnsafeCell<()>; ARENA_BYTES],
    used: AtomicUsize,
    strings: AtomicUsize,
    fallbacks: AtomicU64,
}

// SAFETY: the arena's bytes are written only in ranges reserved by a unique `fetch_add` on `used`
// (so no two writers share a byte), before the Release store that publishes them; they are read
// only after an Acquire load of that store, and never written again. Everything else is atomic.
unsafe impl Sync for Interner {}

impl Interner {
    /// An empty interner (a `static`).
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Interner {
        Interner {
            slots: [const { Slot { key: AtomicU64::new(0), loc: AtomicU64::new(0) } }; SLOTS],
            arena: UnsafeCell::new([0; ARENA_BYTES]),
            used: AtomicUsize::new(0),
            strings: AtomicUsize::new(0),
            fallbacks: AtomicU64::new(0),
        }
    }

    /// An empty interner (loom's atomics are not `const`).
    #[cfg(loom)]
    pub(crate) fn new() -> Interner {
        Interner {
            slots: std::array::from_fn(|_| Slot { key: AtomicU64::new(0), loc: AtomicU64::new(0) }),
            arena: UnsafeCell::new([0; ARENA_BYTES]),
            shadow: std::array::from_fn(|_| loom::cell::UnsafeCell::new(())),
            used: AtomicUsize::new(0),
            strings: AtomicUsize::new(0),
            fallbacks: AtomicU64::new(0),
        }
    }

    /// The interned copy of `s`, or `None` (counted) when it cannot be interned now.
    pub(crate) fn intern(&'static self, s: &str) -> Option<&'static str> {
        let found = self.lookup_or_insert(s);
        if found.is_none() {
            // Relaxed: a statistic.
            self.fallbacks.fetch_add(1, Ordering::Relaxed);
        }
        found
    }

    fn lookup_or_insert(&'static self, s: &str) -> Option<&'static str> {
        if s.len() > MAX_INTERNED_BYTES {
            return None;
        }
        let key = phosphor_format::fnv1a64(s.as_bytes()).max(1);
        let start = (key as usize) % SLOTS;
        for probe in 0..MAX_PROBES.min(SLOTS) {
            let slot = &self.slots[(start + probe) % SLOTS];
            // Acquire: pairs with the claimant's AcqRel compare-and-swap; what we read after it
            // (the `loc`) is then at least as new as the claim.
            let mut k = slot.key.load(Ordering::Acquire);
            if k == 0 {
                // AcqRel: claims the slot (Release orders nothing of ours before it, but Acquire on
                // failure gives us the winner's claim, as the load above would).
                match slot.key.compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => return self.fill(slot, s),
                    Err(now) => k = now,
                }
            }
            if k == key {
                match self.read(slot, s) {
                    Probe::Match(found) => return Some(found),
                    Probe::Busy => return None,
                    Probe::Other => {}
                }
            }
        }
        None
    }

    /// Copies `s` into the arena for a slot this thread claimed, and publishes it.
    fn fill(&'static self, slot: &Slot, s: &str) -> Option<&'static str> {
        // Relaxed: the reservation only has to be unique, which fetch_add is; the bytes are
        // published by the Release store of `loc` below.
        let off = self.used.fetch_add(s.len(), Ordering::Relaxed);
        if off.checked_add(s.len()).is_none_or(|end| end > ARENA_BYTES) {
            // Release: pairs with readers' Acquire; nothing to publish but the verdict.
            slot.loc.store(LOC_NONE, Ordering::Release);
            return None;
        }
        let copy = self.arena_write(off, s);
        // Relaxed: a statistic.
        self.strings.fetch_add(1, Ordering::Relaxed);
        // Release: publishes the copied bytes to every thread that loads `loc` with Acquire.
        slot.loc.store(((off as u64) << 32) | ((s.len() as u64) << 1) | 1, Ordering::Release);
        Some(copy)
    }

    /// Whether a slot with `s`'s key holds `s`.
    fn read(&'static self, slot: &Slot, s: &str) -> Probe {
        // Acquire: pairs with `fill`'s Release store, making the copied bytes visible.
        let loc = slot.loc.load(Ordering::Acquire);
        if loc == 0 {
            return Probe::Busy;
        }
        if loc == LOC_NONE {
            return Probe::Other;
        }
        let (off, len) = ((loc >> 32) as usize, ((loc & 0xffff_ffff) >> 1) as usize);
        match self.arena_read(off, len) {
            copy if copy == s => Probe::Match(copy),
            _ => Probe::Other,
        }
    }

    /// Copies `s` to arena bytes `off..` and returns the copy. The caller reserved the range.
    #[cfg(not(loom))]
    fn arena_write(&'static self, off: usize, s: &str) -> &'static str {
        // SAFETY: `off..off + len` is inside the arena (checked by the caller) and was reserved
        // by the caller's fetch_add alone, so no other thread writes it; no reader reads it before
        // the caller's Release store of `loc` publishes it.
        unsafe {
            let dst = self.arena.get().cast::<u8>().add(off);
            std::ptr::copy_nonoverlapping(s.as_ptr(), dst, s.len());
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(dst, s.len()))
        }
    }

    /// The published copy at `off..off + len`.
    #[cfg(not(loom))]
    fn arena_read(&'static self, off: usize, len: usize) -> &'static str {
        // SAFETY: the caller loaded (Acquire) the `loc` published (Release) after `off..off + len`
        // was written and checked to lie in the arena; those bytes are never written again, and
        // were copied from a `&str`, so they are valid UTF-8.
        unsafe {
            let p = self.arena.get().cast::<u8>().add(off);
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(p, len))
        }
    }

    /// Copies `s` to arena bytes `off..` and returns the copy. The caller reserved the range.
    #[cfg(loom)]
    fn arena_write(&'static self, off: usize, s: &str) -> &'static str {
        for cell in &self.shadow[off..off + s.len()] {
            cell.with_mut(|_| ());
        }
        // SAFETY: as in the non-loom version.
        unsafe {
            let dst = self.arena.get().cast::<u8>().add(off);
            std::ptr::copy_nonoverlapping(s.as_ptr(), dst, s.len());
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(dst, s.len()))
        }
    }

    /// The published copy at `off..off + len`.
    #[cfg(loom)]
    fn arena_read(&'static self, off: usize, len: usize) -> &'static str {
        for cell in &self.shadow[off..off + len] {
            cell.with(|_| ());
        }
        // SAFETY: as in the non-loom version.
        unsafe {
            let p = self.arena.get().cast::<u8>().add(off);
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(p, len))
        }
    }

    /// The arena's bytes handed out so far, `start..end`: every interned string lies inside. The
    /// crash dump and the tools read a static string word in place only inside known ranges
    /// (`addr.rs`), this one among them; the arena is part of a static, so it stays mapped.
    #[cfg(not(loom))]
    pub(crate) fn arena_range(&self) -> (usize, usize) {
        let start = self.arena.get() as usize;
        // Relaxed: only a bound; a string recorded in an event was published (and so reserved)
        // before the event was written. Async-signal-safe: one atomic load.
        (start, start + self.used.load(Ordering::Relaxed).min(ARENA_BYTES))
    }

    /// What it holds.
    pub(crate) fn stats(&self) -> InternStats {
        // Relaxed: statistics.
        InternStats {
            strings: self.strings.load(Ordering::Relaxed),
            bytes: self.used.load(Ordering::Relaxed).min(ARENA_BYTES),
            fallbacks: self.fallbacks.load(Ordering::Relaxed),
        }
    }
}

enum Probe {
    Match(&'static str),
    Busy,
    Other,
}

/// The process-wide interner.
#[cfg(not(loom))]
pub(crate) static INTERNER: Interner = Interner::new();

/// What the string interner holds, and how many strings it could not take.
#[cfg(not(loom))]
pub fn intern_stats() -> InternStats {
    INTERNER.stats()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn fresh() -> &'static Interner {
        Box::leak(Box::new(Interner::new()))
    }

    #[test]
    fn the_same_string_interns_to_the_same_copy_once() {
        let i = fresh();
        let owned = String::from("request-42");
        let a = i.intern(&owned).unwrap();
        let b = i.intern("request-42").unwrap();
        assert_eq!(a, "request-42");
        assert!(std::ptr::eq(a, b));
        assert!(!std::ptr::eq(a.as_ptr(), owned.as_ptr()));
        assert_eq!(i.stats(), InternStats { strings: 1, bytes: 10, fallbacks: 0 });
        assert_eq!(i.intern(""), Some(""));
    }

    #[test]
    fn a_slot_with_the_same_key_but_other_bytes_is_not_a_match() {
        // Plant a slot whose key is "abc"'s hash but whose bytes are "xyz": a collision.
        let i = fresh();
        let xyz = i.intern("xyz").unwrap();
        let key = phosphor_format::fnv1a64(b"abc").max(1);
        let home = (key as usize) % SLOTS;
        let loc =
            i.slots[(phosphor_format::fnv1a64(b"xyz").max(1) as usize) % SLOTS].loc.load(Ordering::Acquire);
        i.slots[home].key.store(key, Ordering::Release);
        i.slots[home].loc.store(loc, Ordering::Release);
        let abc = i.intern("abc").unwrap();
        assert_eq!(abc, "abc", "the colliding slot is skipped");
        assert_eq!(xyz, "xyz");
    }

    #[test]
    fn too_long_strings_and_a_full_arena_fall_back_and_are_counted() {
        let i = fresh();
        assert_eq!(i.intern(&"x".repeat(MAX_INTERNED_BYTES + 1)), None);
        let big = "y".repeat(MAX_INTERNED_BYTES);
        let mut n = 0;
        while i.intern(&format!("{n:04}{}", &big[4..])).is_some() {
            n += 1;
            assert!(n <= ARENA_BYTES / MAX_INTERNED_BYTES, "the arena is bounded");
        }
        assert_eq!(n, ARENA_BYTES / MAX_INTERNED_BYTES);
        let s = i.stats();
        assert_eq!((s.strings, s.bytes, s.fallbacks), (n, ARENA_BYTES, 2));
        // Strings interned before the arena filled are still found.
        assert!(i.intern(&format!("{:04}{}", 0, &big[4..])).is_some());
    }

    #[test]
    fn a_full_table_falls_back() {
        let i = fresh();
        let mut ok = 0;
        for n in 0..SLOTS + 100 {
            if i.intern(&n.to_string()).is_some() {
                ok += 1;
            }
        }
        assert!(ok <= SLOTS);
        assert!(i.stats().fallbacks >= 100, "{:?}", i.stats());
        assert_eq!(i.stats().strings, ok);
    }

    #[test]
    fn memory_is_bounded_however_many_distinct_strings_come() {
        // Unlike tracers that keep every dynamic name for ever: 200,000 distinct names fill the
        // table and the arena, then every new one is a counted fallback.
        let i = fresh();
        for n in 0..200_000u32 {
            let _ = i.intern(&format!("user-{n}-request-path"));
        }
        let s = i.stats();
        assert!(s.strings <= SLOTS && s.bytes <= ARENA_BYTES, "{s:?}");
        assert_eq!(s.strings as u64 + s.fallbacks, 200_000, "every string was interned or counted");
        assert!(s.fallbacks >= 200_000 - SLOTS as u64);
    }

    #[test]
    fn threads_interning_overlapping_strings_agree() {
        let i = fresh();
        let results: Vec<Vec<(String, Option<usize>)>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|t| {
                    s.spawn(move || {
                        (0..2000)
                            .map(|n| {
                                let v = format!("key-{}", (n * 7 + t * 13) % 500);
                                let got = i.intern(&v);
                                if let Some(g) = got {
                                    assert_eq!(g, v);
                                }
                                (v, got.map(|g| g.as_ptr() as usize))
                            })
                            .collect()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        // Every string has one copy: all threads that got one got the same address.
        let mut addr = std::collections::HashMap::new();
        for (v, a) in results.iter().flatten() {
            if let Some(a) = a {
                assert_eq!(*addr.entry(v.clone()).or_insert(*a), *a, "{v} has two copies");
            }
        }
        let st = i.stats();
        assert_eq!(st.strings, addr.len());
        let misses = results.iter().flatten().filter(|(_, a)| a.is_none()).count() as u64;
        assert_eq!(st.fallbacks, misses);
    }
}

//! What [`Ordered`](super::Ordered) keeps of a held slice's events: the bytes the writer encoded
//! for each ([`SliceWriter::encode`](super::SliceWriter::encode)), by slot number, in one buffer.
//!
//! A slot says where its bytes are, so the buffer is compacted once three quarters of it are
//! freed, without touching the numbers the slices keep: O(bytes held) at most once per three
//! times as many bytes freed, so amortised O(1) a byte, a third of a copy.

/// Where one event's bytes are.
#[derive(Clone, Copy, Debug)]
struct Slot {
    start: usize,
    /// Bytes; `u32::MAX`: the slot is free.
    len: u32,
}

const FREE: u32 = u32::MAX;

/// Encoded events, by slot number.
#[derive(Debug, Default)]
pub(super) struct Store {
    bytes: Vec<u8>,
    /// The buffer the next compaction copies into (the one before the last): reused, so that
    /// compacting touches no fresh memory once the buffers have grown.
    spare: Vec<u8>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Bytes of the events held now.
    live: usize,
}

impl Store {
    /// Appends an event's bytes with `encode` (which may write none) and returns its slot
    /// number, below `limit`; `encode` returning false takes no slot and leaves nothing.
    #[inline]
    pub(super) fn hold(&mut self, limit: u32, encode: impl FnOnce(&mut Vec<u8>) -> bool) -> Option<u32> {
        let start = self.bytes.len();
        if !encode(&mut self.bytes) {
            self.bytes.truncate(start);
            return None;
        }
        let len = self.bytes.len() - start;
        // An event's bytes are few: the writer refuses to encode a long one.
        let slot = Slot { start, len: u32::try_from(len).unwrap_or(FREE - 1).min(FREE - 1) };
        self.live += slot.len as usize;
        Some(match self.free.pop() {
            Some(n) => {
                self.slots[n as usize] = slot;
                n
            }
            None => {
                let n = u32::try_from(self.slots.len())
                    .ok()
                    .filter(|&n| n < limit)
                    .expect("too many events held");
                self.slots.push(slot);
                n
            }
        })
    }

    /// The bytes of slot `n`.
    #[inline]
    pub(super) fn get(&self, n: u32) -> &[u8] {
        let s = self.slots[n as usize];
        debug_assert!(s.len != FREE, "slot {n} holds nothing");
        if s.len == 0 {
            // Its start may be past the buffer, cleared since (nothing else was held).
            return &[];
        }
        &self.bytes[s.start..s.start + s.len as usize]
    }

    /// Frees slot `n`; the buffer is compacted once less than a quarter of it is in use.
    #[inline]
    pub(super) fn release(&mut self, n: u32) {
        let s = &mut self.slots[n as usize];
        if s.len == FREE {
            return;
        }
        self.live -= s.len as usize;
        s.len = FREE;
        self.free.push(n);
        if self.live == 0 {
            self.bytes.clear();
        } else if self.bytes.len() > 1 << 16 && self.live < self.bytes.len() / 4 {
            self.compact();
        }
    }

    /// Copies the held bytes into the spare buffer, in slot order, and keeps the old buffer as
    /// the next spare.
    #[cold]
    fn compact(&mut self) {
        let mut bytes = std::mem::take(&mut self.spare);
        bytes.clear();
        for s in self.slots.iter_mut().filter(|s| s.len != FREE) {
            let from = s.start;
            s.start = bytes.len();
            bytes.extend_from_slice(&self.bytes[from..from + s.len as usize]);
        }
        self.spare = std::mem::replace(&mut self.bytes, bytes);
    }

    /// Events held now.
    pub(super) fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Bytes of the buffers and slots, spare room included.
    pub(super) fn bytes(&self) -> usize {
        self.bytes.capacity()
            + self.spare.capacity()
            + self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.free.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_back_as_held_after_compactions_and_freed_slots_are_reused() {
        let mut store = Store::default();
        let text = |i: usize| format!("event {i}").repeat(1 + i % 5).into_bytes();
        let mut held: Vec<(u32, usize)> = Vec::new();
        for i in 0..40_000 {
            let n = store.hold(u32::MAX, |out| {
                out.extend_from_slice(&text(i));
                true
            });
            held.push((n.unwrap(), i));
            // Free three in four of the older ones: the buffer is compacted on the way.
            if i % 4 != 0 && i >= 100 {
                let (n, _) = held.swap_remove(held.len() - 100);
                store.release(n);
            }
        }
        assert_eq!(store.len(), held.len());
        for &(n, i) in &held {
            assert_eq!(store.get(n), text(i).as_slice(), "event {i}");
        }
        assert!(
            store.bytes.len() < 4 * store.live + (1 << 16),
            "{} bytes for {} live",
            store.bytes.len(),
            store.live
        );
        // An empty event reads back empty after everything else was freed and the buffer cleared.
        let empty = store.hold(u32::MAX, |_| true).unwrap();
        let last = store.hold(u32::MAX, |out| {
            out.extend_from_slice(b"x");
            true
        });
        store.release(last.unwrap());
        assert_eq!(store.get(empty), b"");
        store.release(empty);
        // A refused event takes nothing; freed slots are taken again before new ones.
        let slots = store.slots.len();
        assert_eq!(
            store.hold(u32::MAX, |out| {
                out.extend_from_slice(b"refused");
                false
            }),
            None
        );
        let (n, _) = held.pop().unwrap();
        store.release(n);
        assert_eq!(store.hold(u32::MAX, |_| true), Some(n));
        assert_eq!(store.get(n), b"");
        assert_eq!(store.slots.len(), slots);
        for (n, _) in held.drain(..) {
            store.release(n);
        }
        store.release(n);
        assert_eq!(store.len(), 0);
        assert!(store.bytes.is_empty());
    }
}

//! Stream mode's chunk pool: two lock-free stacks of chunk indices, the FREE chunks for the
//! writers and the chunks given back for the collector.
//!
//! A ring or a fixed buffer finds its next chunk with a cursor; a streaming buffer cannot, because
//! its free chunks are wherever the collector released them. Walking the chunks to find one was
//! cheap while most were free, and ruinous when few were: every writer of a starved pool scanned
//! thousands of chunk headers (one page apart each) per event, and took the CPU the collector
//! needed to free chunks (at 20 M events/s with a compressing datastream the producers' cost per
//! event went from 20 to over 200 ns). With a stack of free chunks a loan is one pop, and a failed
//! one returns at once.
//!
//! # Algorithm
//!
//! Both are Treiber stacks (R. K. Treiber, *Systems Programming: Coping with Parallelism*, IBM
//! RJ 5118, 1986) over the chunk indices, linked through `next`, one link per chunk: a chunk is in
//! at most one list at a time, so one array serves both. Every operation is one compare-and-swap
//! (or swap) of a head word, retried only when another thread's operation succeeded in between:
//! **lock-free**. No step waits for another thread to finish its own, so a thread preempted (or
//! interrupted by a signal handler) in the middle of a push or pop holds up no one; a bounded
//! queue such as crossbeam's `ArrayQueue` does not give that (its `pop` spins on a `push` that
//! has moved the tail but not yet written its slot).
//!
//! * **free**: pushed by the collector's `release`, popped by loans (many threads). The head is
//!   `[tag : 64 - b | index : b]`, `b` the bits of the chunk count (the index field's largest
//!   value, at least the count, means empty). Every successful change adds one to the tag. The
//!   ABA problem (a popper reads head `A` and its link `B`, others pop `A`, pop `B` and push `A`
//!   back, and the popper's compare-and-swap would then install `B`, which is loaned) cannot
//!   happen: the head would have to come back to the same index *and* tag, that is 2^(64 - b)
//!   successful operations (at least 2^32; 2^49 for a 64 MiB pool) while the popper sat between
//!   its load and its compare-and-swap.
//! * **full**: pushed by `give_back` (many threads), emptied whole by the one consumer, the
//!   collector's dispatcher, with one `swap`; the batch, newest first, is reversed into the
//!   consumer's own list, which it pops in the order the chunks were given back (the order of the
//!   successful pushes, so one thread's chunks come out in its order, which readers rely on). A
//!   push is immune to ABA (its link is the head it replaces, whatever happened meanwhile) and so
//!   is the swap, so this head carries no tag.
//!
//! Invariant: every FREE chunk is in `free` exactly once, except while a loaner that popped it
//! decides (it claims it, or sets it aside as pinned and pushes it back before it returns). A
//! chunk becomes FREE only at the buffer's creation (every index is pushed then) and by
//! [`release`](super::buffer::TraceBuffer::release), which pushes it; it leaves FREE only by a
//! loan, which popped it first. Every chunk given back is in `full` or the consumer's list until
//! the consumer pops it, so no chunk is lost from both, and none is in two lists at once.
//!
//! A reader's pin can outlive a chunk's FULL state: `release` keeps the pins, and the chunk is
//! FREE but pinned until the last reader unpins it. A loaner that pops such a chunk sets it aside
//! and tries the next, at most `MAX_PINNED_SKIPS` times, then pushes the pinned ones back; readers
//! pin one chunk at a time each, so few are ever pinned. An unpin does not push (it may run in a
//! signal handler).

use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// How many pinned chunks a loan sets aside before it gives up (and the event is dropped as
/// `no_chunk`, the pool being as good as empty).
const MAX_PINNED_SKIPS: usize = 8;

/// A value alone on its cache lines: 128 bytes, as `Tenant` (x86 prefetches lines in pairs).
#[repr(align(128))]
struct Padded<T>(T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// A streaming buffer's stacks of chunk indices (see the module). Each head is on lines of its
/// own: the writers' loans, their give-backs and the consumer's pops each write one, and none of
/// them shares a line with the read-mostly fields.
pub(crate) struct ChunkPool {
    /// Per chunk: the index below it in the list that holds it, or `nil`.
    next: Box<[AtomicU32]>,
    /// The FREE chunks (pinned ones included): `[tag | index]`, see the module.
    free: Padded<AtomicU64>,
    /// The chunks given back and not yet taken by the consumer, newest first: an index or `nil`.
    full: Padded<AtomicU32>,
    /// The consumer's own list, oldest first: what it took from `full` and has not popped yet.
    /// Only the consumer reads or writes it (Relaxed throughout).
    ready: Padded<AtomicU32>,
    /// The bits of `free`'s index field.
    bits: u32,
    /// No chunk: the index field's largest value, at least the chunk count.
    nil: u32,
    /// Set while the consumer pops (debug builds): a second consumer at once is a bug.
    #[cfg(all(debug_assertions, not(loom)))]
    consuming: std::sync::atomic::AtomicBool,
}

impl ChunkPool {
    /// Stacks for a pool of `count` chunks, all of them free.
    pub(crate) fn new(count: usize) -> ChunkPool {
        assert!(
            count > 0 && count < u32::MAX as usize,
            "a pool has chunks, and their indices fit in 32 bits"
        );
        let bits = u32::BITS - (count as u32).leading_zeros();
        let nil = (u64::MAX >> (64 - bits)) as u32;
        // Chunk 0 on top, each above the next one: loans start at the front of the pool.
        let next = (0..count as u32).map(|i| AtomicU32::new(if i + 1 < count as u32 { i + 1 } else { nil }));
        ChunkPool {
            next: next.collect(),
            free: Padded(AtomicU64::new(0)),
            full: Padded(AtomicU32::new(nil)),
            ready: Padded(AtomicU32::new(nil)),
            bits,
            nil,
            #[cfg(all(debug_assertions, not(loom)))]
            consuming: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The index in a `free` head.
    fn index(&self, head: u64) -> u32 {
        (head & u64::from(self.nil)) as u32
    }

    /// The head that replaces `head` with `index` on top: the tag one higher (wrapping).
    fn retag(&self, head: u64, index: u32) -> u64 {
        (head & !u64::from(self.nil)).wrapping_add(1 << self.bits) | u64::from(index)
    }

    /// Takes a free chunk for a loan: pops indices until `claim(index)` succeeds (it fails for a
    /// chunk still pinned, which is set aside and pushed back before returning), at most
    /// `1 + MAX_PINNED_SKIPS` times. `None` at once when the stack is empty or holds only pinned
    /// chunks. Never waits for another thread.
    pub(crate) fn take_free(&self, mut claim: impl FnMut(u32) -> bool) -> Option<u32> {
        let mut aside = [0u32; 1 + MAX_PINNED_SKIPS];
        let mut n = 0;
        let mut taken = None;
        while n < aside.len() {
            let Some(i) = self.pop_free() else { break };
            if claim(i) {
                taken = Some(i);
                break;
            }
            // Pinned: it stays FREE, so it goes back (see the invariant), once we have looked
            // further: pushed now, it would be the next one popped.
            aside[n] = i;
            n += 1;
        }
        // Back in the order they were popped: the stack is as it was, less the claimed chunk.
        for &i in aside[..n].iter().rev() {
            self.push_free(i);
        }
        taken
    }

    /// Pops the top of `free`.
    fn pop_free(&self) -> Option<u32> {
        // Acquire: pairs with the Release of the push that put the top chunk there (or, through
        // the release sequence every compare-and-swap of `free` continues, of any push before),
        // so its link below is the one that push stored, or a later one.
        let mut head = self.free.load(Ordering::Acquire);
        loop {
            let i = self.index(head);
            if i == self.nil {
                return None;
            }
            // Relaxed: ordered by the Acquire that gave us `head`. If `i` has been popped since,
            // this link may be stale, but then the head's tag changed and the compare-and-swap
            // below fails.
            let below = self.next[i as usize].load(Ordering::Relaxed);
            pool_test_hook::between(pool_test_hook::Step::Pop);
            // Acquire on failure: the new head is read as the first load was. Acquire on success
            // too, though the load above already synchronised: it costs nothing on a
            // compare-and-swap and keeps the argument local. No Release: a pop publishes nothing
            // (the chunk is handed over by its state's compare-and-swap, not by the stack).
            match self.free.compare_exchange_weak(
                head,
                self.retag(head, below),
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(i),
                Err(now) => head = now,
            }
        }
    }

    /// Pushes a chunk that has just become FREE (or that a loan set aside).
    pub(crate) fn push_free(&self, i: u32) {
        debug_assert!(i < self.nil);
        // Relaxed: a first guess; the compare-and-swap checks it.
        let mut head = self.free.load(Ordering::Relaxed);
        loop {
            // Relaxed: published by the Release below. Only this thread can reach chunk `i`'s link
            // now: the chunk is in no list.
            self.next[i as usize].store(self.index(head), Ordering::Relaxed);
            pool_test_hook::between(pool_test_hook::Step::PushFree);
            // Release: a popper that acquires this head sees the link stored above. No Acquire is
            // needed on failure: the new head is only a guess for the next try.
            match self.free.compare_exchange_weak(
                head,
                self.retag(head, i),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(now) => head = now,
            }
        }
    }

    /// Pushes a chunk given back, for the collector.
    pub(crate) fn push_full(&self, i: u32) {
        debug_assert!(i < self.nil);
        // Relaxed: a first guess; the compare-and-swap checks it.
        let mut head = self.full.load(Ordering::Relaxed);
        loop {
            // Relaxed: published by the Release below; chunk `i` is in no list yet.
            self.next[i as usize].store(head, Ordering::Relaxed);
            pool_test_hook::between(pool_test_hook::Step::PushFull);
            // Release: the consumer's Acquire swap sees the link, and everything this thread did
            // before (the chunk's records and its FULL state). Pushes are read-modify-writes, so
            // one swap that reads the newest synchronises with every push below it too.
            match self.full.compare_exchange_weak(head, i, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return,
                Err(now) => head = now,
            }
        }
    }

    /// The chunk given back the longest ago and not yet popped, if any. Only one thread may
    /// consume (the collector's dispatcher): the consumer's list is its own.
    pub(crate) fn pop_full(&self) -> Option<u32> {
        #[cfg(all(debug_assertions, not(loom)))]
        {
            // Relaxed: a check of the single consumer, not a synchronisation.
            let other = self.consuming.swap(true, std::sync::atomic::Ordering::Relaxed);
            debug_assert!(!other, "two threads consume a pool's full chunks at once");
        }
        // Relaxed (here and below for `ready`): only this thread touches it.
        let mut i = self.ready.load(Ordering::Relaxed);
        if i == self.nil {
            // Acquire: pairs with every push's Release (see `push_full`). The batch is ours now:
            // no one else can reach these chunks' links.
            let mut top = self.full.swap(self.nil, Ordering::Acquire);
            // Newest first: reverse it into the order the chunks were given back.
            let mut reversed = self.nil;
            while top != self.nil {
                // Relaxed: ordered by the Acquire swap, and the links are this thread's now.
                let below = self.next[top as usize].load(Ordering::Relaxed);
                self.next[top as usize].store(reversed, Ordering::Relaxed);
                reversed = top;
                top = below;
            }
            i = reversed;
        }
        let popped = (i != self.nil).then(|| {
            // Relaxed: this thread's list. The link is read before the caller can release the
            // chunk (which rewrites it).
            self.ready.store(self.next[i as usize].load(Ordering::Relaxed), Ordering::Relaxed);
            i
        });
        #[cfg(all(debug_assertions, not(loom)))]
        self.consuming.store(false, std::sync::atomic::Ordering::Relaxed);
        popped
    }

    /// Every index in the free stack, top first (tests: nothing else may run).
    #[cfg(test)]
    pub(crate) fn free_indices(&self) -> Vec<u32> {
        let mut v = Vec::new();
        let mut i = self.index(self.free.load(Ordering::Acquire));
        while i != self.nil {
            v.push(i);
            i = self.next[i as usize].load(Ordering::Relaxed);
        }
        v
    }
}

/// A test-only pause between the two steps of a push or a pop (after the link is read or stored,
/// before the head's compare-and-swap): a test parks a thread there and shows that the others
/// neither wait nor fail. Compiled to nothing outside the crate's unit tests.
pub(crate) mod pool_test_hook {
    /// Where the thread is.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum Step {
        Pop,
        PushFree,
        PushFull,
    }

    /// What a test runs there.
    #[cfg(all(test, not(loom)))]
    pub(crate) type Hook = Box<dyn FnMut(Step)>;

    #[cfg(all(test, not(loom)))]
    std::thread_local! {
        static HOOK: std::cell::RefCell<Option<Hook>> = const { std::cell::RefCell::new(None) };
    }

    /// Runs this thread's hook, if a test set one.
    #[inline(always)]
    pub(crate) fn between(_step: Step) {
        #[cfg(all(test, not(loom)))]
        HOOK.with(|h| {
            // A pool operation inside the hook runs no hook.
            if let Some(f) = h.try_borrow_mut().ok().as_mut().and_then(|f| f.as_mut()) {
                f(_step);
            }
        });
    }

    /// Sets this thread's hook (`None` removes it).
    #[cfg(all(test, not(loom), unix))] // record/pool_tests.rs's
    pub(crate) fn set(f: Option<Hook>) {
        HOOK.with(|h| *h.borrow_mut() = f);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn every_chunk_starts_free_and_a_pinned_one_is_kept_for_later() {
        let q = ChunkPool::new(3);
        // Chunk 0 is pinned: set aside, and pushed back where it was.
        assert_eq!(q.take_free(|i| i != 0), Some(1));
        assert_eq!(q.free_indices(), [0, 2]);
        assert_eq!(q.take_free(|i| i != 0), Some(2));
        assert_eq!(q.take_free(|_| true), Some(0), "the pinned chunk was kept");
        assert_eq!(q.take_free(|_| true), None, "empty");
        q.push_free(1);
        assert_eq!(q.take_free(|_| true), Some(1));
    }

    #[test]
    fn a_pool_of_pinned_chunks_gives_up_after_a_bounded_number_of_tries() {
        let q = ChunkPool::new(12);
        let mut tries = 0;
        assert_eq!(
            q.take_free(|_| {
                tries += 1;
                false
            }),
            None
        );
        assert_eq!(tries, 1 + MAX_PINNED_SKIPS);
        // None was lost, and the order is the same.
        assert_eq!(q.free_indices(), (0..12).collect::<Vec<_>>());
    }

    #[test]
    fn the_full_chunks_come_out_in_the_order_they_were_given_back() {
        let q = ChunkPool::new(4);
        q.push_full(1);
        q.push_full(0);
        assert_eq!(q.pop_full(), Some(1));
        // Given back while the consumer holds a batch: after it.
        q.push_full(3);
        q.push_full(2);
        assert_eq!(q.pop_full(), Some(0));
        assert_eq!(q.pop_full(), Some(3));
        assert_eq!(q.pop_full(), Some(2));
        assert_eq!(q.pop_full(), None);
    }

    #[test]
    fn the_tag_grows_with_every_change_and_the_index_field_fits_the_pool() {
        for (count, bits) in [(1, 1), (2, 2), (3, 2), (4, 3), (16_384, 15)] {
            let q = ChunkPool::new(count);
            assert_eq!(q.bits, bits, "{count} chunks");
            assert!(q.nil as usize >= count);
        }
        let q = ChunkPool::new(2);
        let before = q.free.load(Ordering::Relaxed);
        let i = q.take_free(|_| true).unwrap();
        q.push_free(i);
        let after = q.free.load(Ordering::Relaxed);
        assert_eq!(q.index(before), q.index(after), "the same chunk on top");
        assert_eq!(after >> q.bits, (before >> q.bits) + 2, "but a different head: pop and push counted");
    }
}

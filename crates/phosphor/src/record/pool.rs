//! Stream mode's two chunk queues: the chunks given back for the collector, and the chunks it has
//! released for the writers.
//!
//! A ring or a fixed buffer finds its next chunk with a cursor; a streaming buffer cannot, because
//! its free chunks are wherever the collector released them. Walking the chunks to find one was
//! cheap while most were free, and ruinous when few were: every writer of a starved pool scanned
//! thousands of chunk headers (one page apart each) per event, and took the CPU the collector
//! needed to free chunks (at 20 M events/s with a compressing datastream the producers' cost per
//! event went from 20 to over 200 ns). With a queue of free chunks a loan is one pop, and a failed
//! one returns at once.
//!
//! Invariant: every FREE chunk is in `free` exactly once, except while a loaner that popped it
//! decides (it claims it, or pushes it back). A chunk becomes FREE only at the buffer's creation
//! (every index is queued then) and by [`release`](super::buffer::TraceBuffer::release), which
//! queues it; it leaves FREE only by a loan, which popped it first. So neither queue can be full
//! when pushed (each is as long as the pool), and no chunk is lost from both.
//!
//! A reader's pin can outlive a chunk's FULL state: `release` keeps the pins, and the chunk is
//! FREE but pinned until the last reader unpins it. A loaner that pops such a chunk puts it back
//! at the end of the queue and tries the next; readers pin one chunk at a time each, so few are
//! ever pinned. An unpin does not push (it may run in a signal handler).

use crossbeam_queue::ArrayQueue;

/// How many pinned chunks a loan skips before it gives up (and the event is dropped as
/// `no_chunk`, the pool being as good as empty).
const MAX_PINNED_SKIPS: usize = 8;

/// A streaming buffer's queues of chunk indices (see the module).
pub(crate) struct StreamQueues {
    /// Chunks given back and not yet released by the collector.
    full: ArrayQueue<u32>,
    /// FREE chunks, pinned ones included.
    free: ArrayQueue<u32>,
}

impl StreamQueues {
    /// Queues for a pool of `count` chunks, all of them free.
    pub(crate) fn new(count: usize) -> StreamQueues {
        let free = ArrayQueue::new(count);
        for i in 0..count {
            let pushed = free.push(i as u32);
            debug_assert!(pushed.is_ok());
        }
        StreamQueues { full: ArrayQueue::new(count), free }
    }

    /// Takes a free chunk for a loan: pops indices until `claim(index)` succeeds (it fails for a
    /// chunk still pinned, which goes back to the end of the queue), at most
    /// `1 + MAX_PINNED_SKIPS` times. `None` when the queue is empty or holds only pinned chunks.
    pub(crate) fn take_free(&self, mut claim: impl FnMut(u32) -> bool) -> Option<u32> {
        for _ in 0..=MAX_PINNED_SKIPS {
            let i = self.free.pop()?;
            if claim(i) {
                return Some(i);
            }
            // Pinned: it stays FREE, so it must stay queued (see the invariant). We popped it, so
            // there is room.
            let pushed = self.free.push(i);
            debug_assert!(pushed.is_ok(), "a free chunk was queued twice");
        }
        None
    }

    /// Queues a chunk that has just become FREE.
    pub(crate) fn push_free(&self, i: u32) {
        // Never full: each chunk is queued at most once (see the invariant).
        let pushed = self.free.push(i);
        debug_assert!(pushed.is_ok(), "a free chunk was queued twice");
    }

    /// Queues a chunk given back, for the collector.
    pub(crate) fn push_full(&self, i: u32) {
        // Never full: a chunk is given back at most once between two loans.
        let pushed = self.full.push(i);
        debug_assert!(pushed.is_ok(), "a chunk was queued twice");
    }

    /// The next chunk given back, if any.
    pub(crate) fn pop_full(&self) -> Option<u32> {
        self.full.pop()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn every_chunk_starts_free_and_a_pinned_one_is_kept_for_later() {
        let q = StreamQueues::new(3);
        // Chunk 0 is pinned: skipped, and put back at the end.
        assert_eq!(q.take_free(|i| i != 0), Some(1));
        assert_eq!(q.take_free(|_| true), Some(2));
        assert_eq!(q.take_free(|_| true), Some(0), "the pinned chunk was kept");
        assert_eq!(q.take_free(|_| true), None, "empty");
        q.push_free(1);
        assert_eq!(q.take_free(|_| true), Some(1));
    }

    #[test]
    fn a_pool_of_pinned_chunks_gives_up_after_a_bounded_number_of_tries() {
        let q = StreamQueues::new(4);
        let mut tries = 0;
        assert_eq!(
            q.take_free(|_| {
                tries += 1;
                false
            }),
            None
        );
        assert_eq!(tries, 1 + MAX_PINNED_SKIPS);
        // None was lost: all four are still there.
        let mut left = Vec::new();
        while let Some(i) = q.take_free(|_| true) {
            left.push(i);
        }
        left.sort_unstable();
        assert_eq!(left, [0, 1, 2, 3]);
    }

    #[test]
    fn the_full_queue_is_first_in_first_out() {
        let q = StreamQueues::new(2);
        q.push_full(1);
        q.push_full(0);
        assert_eq!(q.pop_full(), Some(1));
        assert_eq!(q.pop_full(), Some(0));
        assert_eq!(q.pop_full(), None);
    }
}

//! Loom models of Stream mode's chunk pool (`record/pool.rs`) through the buffer that uses it:
//! loans (pops of the free stack, with pinned chunks set aside and pushed back), give-backs
//! (pushes of the full stack), the dispatcher's takes (one swap, reversed) and releases (pushes
//! of the free stack), and a reader's unpin, all at once. Each model checks that no chunk index is
//! lost or duplicated (no two loans hold one chunk; afterwards every chunk is loanable exactly
//! once), and that one thread's chunks come out of the full stack in the order it gave them back.
//!
//! Run with `scripts/loom.sh loom_pool`.

use std::sync::Arc;

use loom::thread;

use crate::record::buffer::{Loan, TraceBuffer, TraceChunk};
use crate::BufferMode;

fn take(b: &TraceBuffer) -> Option<&TraceChunk> {
    match b.loan(1, 0) {
        Loan::Chunk(c) => Some(c),
        Loan::AllLoaned => None,
        Loan::Exhausted { .. } => unreachable!("a streaming buffer is never exhausted"),
    }
}

/// Gives back every chunk still taken, releases every chunk given back, then loans until none is
/// left: every chunk must come out exactly once.
fn every_chunk_once(b: &TraceBuffer, chunks: u32) {
    while let Some(i) = b.pop_full_index() {
        b.release(b.chunk(i as usize));
    }
    let mut seen = vec![false; chunks as usize];
    while let Some(c) = take(b) {
        let i = b.index_of(c) as usize;
        assert!(!seen[i], "chunk {i} was free twice");
        seen[i] = true;
    }
    assert!(seen.iter().all(|&s| s), "a chunk was lost: {seen:?}");
}

/// A buffer of `chunks` whose chunk 0 is FREE but still pinned by a reader (given back and
/// released while pinned, as a streaming collector's piece can leave it).
fn with_pinned_free_chunk(chunks: usize) -> Arc<TraceBuffer> {
    let b = Arc::new(TraceBuffer::new(BufferMode::Stream, chunks).unwrap());
    let c = take(&b).unwrap();
    assert_eq!(b.index_of(c), 0);
    assert!(c.pin());
    // SAFETY: this thread holds c, which holds no event.
    unsafe { b.give_back(c, 0) };
    assert_eq!(b.pop_full_index(), Some(0));
    b.release(c);
    b
}

/// Two writers loan and give back one chunk each, a reader unpins the pinned free chunk, and the
/// dispatcher takes and releases what was given back, all at once.
#[test]
fn loans_give_backs_takes_and_an_unpin_race_and_no_chunk_is_lost_or_doubled() {
    crate::loom_tests::check("pool: two loaners, the dispatcher and an unpin (2 chunks)", Some(3), || {
        let b = with_pinned_free_chunk(2);
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || {
                    let c = take(&b)?;
                    let i = b.index_of(c);
                    // SAFETY: this thread holds c, which holds no event.
                    unsafe { b.give_back(c, 0) };
                    Some(i)
                })
            })
            .collect();
        let reader = {
            let b = b.clone();
            thread::spawn(move || b.chunk(0).unpin())
        };
        // The dispatcher.
        if let Some(i) = b.pop_full_index() {
            b.release(b.chunk(i as usize));
        }
        let got: Vec<Option<u32>> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        reader.join().unwrap();
        // While chunk 0 was pinned, at most one loan could succeed before a release; at least
        // the first loan found chunk 1.
        assert!(got.iter().any(|g| g.is_some()), "a free unpinned chunk was there: {got:?}");
        every_chunk_once(&b, 2);
    });
}

/// One writer gives back two chunks in order while another gives back one, and the dispatcher
/// takes concurrently: the first writer's chunks come out in its order.
#[test]
fn one_threads_chunks_are_taken_in_the_order_it_gave_them_back() {
    crate::loom_tests::check("pool: give-back order through the full stack (3 chunks)", Some(3), || {
        let b = Arc::new(TraceBuffer::new(BufferMode::Stream, 3).unwrap());
        let (first, second, other) = (take(&b).unwrap(), take(&b).unwrap(), take(&b).unwrap());
        let (i1, i2, i3) = (b.index_of(first), b.index_of(second), b.index_of(other));
        let w1 = {
            let b = b.clone();
            thread::spawn(move || {
                // SAFETY: this thread holds both chunks (loaned above), which hold no event.
                unsafe {
                    b.give_back(b.chunk(i1 as usize), 0);
                    b.give_back(b.chunk(i2 as usize), 0);
                }
            })
        };
        let w2 = {
            let b = b.clone();
            // SAFETY: this thread holds the chunk (loaned above), which holds no event.
            thread::spawn(move || unsafe { b.give_back(b.chunk(i3 as usize), 0) })
        };
        let mut order = Vec::new();
        for _ in 0..2 {
            if let Some(i) = b.pop_full_index() {
                order.push(i);
                b.release(b.chunk(i as usize));
            }
        }
        w1.join().unwrap();
        w2.join().unwrap();
        while let Some(i) = b.pop_full_index() {
            order.push(i);
            b.release(b.chunk(i as usize));
        }
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2], "each chunk taken once: {order:?}");
        let at = |i| order.iter().position(|&x| x == i).unwrap();
        assert!(at(i1) < at(i2), "one thread's chunks in its order: {order:?}");
        every_chunk_once(&b, 3);
    });
}

//! The pool's progress guarantee (`pool.rs`): a thread stopped in the middle of a push or a pop
//! holds up no other thread's loan, give-back or take. Each test parks one thread at a step of an
//! operation (the test-only hook, or a signal whose handler waits) and runs the others with a
//! bounded wait: a structure whose operations wait on each other would make them time out.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::buffer::{Loan, TraceBuffer, TraceChunk};
use super::pool::pool_test_hook::{self, Step};
use super::pool::ChunkPool;
use crate::BufferMode;

/// How long the other threads may take: far more than they need, so only waiting exceeds it.
const BOUND: Duration = Duration::from_secs(10);

fn take(b: &TraceBuffer) -> &TraceChunk {
    match b.loan(1, 0) {
        Loan::Chunk(c) => c,
        other => panic!("expected a chunk at once, got {other:?}"),
    }
}

/// Runs `frozen` on a thread that parks the first time it reaches `step`, then `others` on
/// another thread, which must finish within `BOUND` while the first is parked; then lets the
/// first go on and finish. Returns what `others` returned.
fn while_frozen_at<R: Send + 'static>(
    buf: &Arc<TraceBuffer>,
    step: Step,
    frozen: impl FnOnce(&TraceBuffer) + Send + 'static,
    others: impl FnOnce(&TraceBuffer) -> R + Send + 'static,
) -> R {
    let (parked_tx, parked_rx) = mpsc::channel();
    let (thaw_tx, thaw_rx) = mpsc::channel::<()>();
    let b = buf.clone();
    let a = std::thread::spawn(move || {
        let mut armed = true;
        pool_test_hook::set(Some(Box::new(move |s| {
            if s == step && armed {
                armed = false;
                parked_tx.send(()).unwrap();
                thaw_rx.recv().unwrap();
            }
        })));
        frozen(&b);
        pool_test_hook::set(None);
    });
    parked_rx.recv_timeout(BOUND).expect("the frozen thread reached its step");
    let (done_tx, done_rx) = mpsc::channel();
    let b = buf.clone();
    let other = std::thread::spawn(move || done_tx.send(others(&b)).unwrap());
    let r = done_rx.recv_timeout(BOUND);
    thaw_tx.send(()).unwrap();
    a.join().unwrap();
    other.join().unwrap();
    r.expect("the other threads finished while one was stopped mid-operation (none waits for it)")
}

#[test]
fn loans_and_give_backs_go_on_while_the_collector_is_stopped_in_the_middle_of_a_release() {
    let buf = Arc::new(TraceBuffer::new(BufferMode::Stream, 2).unwrap());
    let c0 = take(&buf);
    // SAFETY: this test holds c0, which holds no event.
    unsafe { buf.give_back(c0, 0) };
    assert_eq!(buf.pop_full_index(), Some(0));
    let held = while_frozen_at(
        &buf,
        Step::PushFree,
        |b| b.release(b.chunk(0)),
        |b| {
            let c1 = take(b);
            assert_eq!(b.index_of(c1), 1);
            // SAFETY: this thread holds c1, which holds no event.
            unsafe { b.give_back(c1, 0) };
            assert_eq!(b.pop_full_index(), Some(1));
            b.release(b.chunk(1));
            let again = take(b);
            // Chunk 0 is not back yet, and the only other one is held: a failed loan, at once.
            assert!(matches!(b.loan(1, 1), Loan::AllLoaned));
            b.index_of(again)
        },
    );
    assert_eq!(held, 1);
    assert_eq!(buf.index_of(take(&buf)), 0, "the release finished once its thread went on");
}

#[test]
fn a_loan_stopped_between_reading_the_top_and_taking_it_takes_no_chunk_that_was_loaned_meanwhile() {
    // The ABA case the free stack's tag is for: the stopped loaner read top 0 and its link 1;
    // meanwhile 0 and 1 are loaned, 0 comes back on top with link 2. Without the tag its
    // compare-and-swap would succeed and put chunk 1, which is loaned, on top.
    let buf = Arc::new(TraceBuffer::new(BufferMode::Stream, 3).unwrap());
    let (tx, rx) = mpsc::channel();
    let held = while_frozen_at(
        &buf,
        Step::Pop,
        move |b| tx.send(b.index_of(take(b))).unwrap(),
        |b| {
            let (c0, c1) = (take(b), take(b));
            assert_eq!((b.index_of(c0), b.index_of(c1)), (0, 1));
            // SAFETY: this thread holds c0, which holds no event.
            unsafe { b.give_back(c0, 0) };
            assert_eq!(b.pop_full_index(), Some(0));
            b.release(c0);
            b.index_of(c1)
        },
    );
    assert_eq!(held, 1);
    assert_eq!(rx.recv().unwrap(), 0, "the stopped loan retried and took the top, chunk 0");
    assert_eq!(buf.free_indices(), [2], "and left the free stack holding only the free chunk");
    assert_eq!(buf.index_of(take(&buf)), 2);
    assert!(matches!(buf.loan(1, 1), Loan::AllLoaned), "each chunk was loaned once");
}

#[test]
fn the_dispatcher_takes_and_writers_loan_while_a_give_back_is_stopped_in_the_middle() {
    let buf = Arc::new(TraceBuffer::new(BufferMode::Stream, 3).unwrap());
    let (c0, c1) = (take(&buf), take(&buf));
    let (i0, i1) = (buf.index_of(c0), buf.index_of(c1));
    let next = while_frozen_at(
        &buf,
        Step::PushFull,
        // SAFETY: the test gives chunk i0 to this thread, which holds no event.
        move |b| unsafe { b.give_back(b.chunk(i0 as usize), 0) },
        move |b| {
            // SAFETY: this thread holds chunk i1 (loaned above), which holds no event.
            unsafe { b.give_back(b.chunk(i1 as usize), 0) };
            assert_eq!(b.pop_full_index(), Some(i1), "the finished give-back is taken");
            assert_eq!(b.pop_full_index(), None, "the stopped one is not there yet: no wait");
            b.index_of(take(b))
        },
    );
    assert_eq!(next, 2);
    assert_eq!(buf.pop_full_index(), Some(i0), "and is taken once it finished");
}

#[test]
fn chunks_loaned_given_back_and_released_by_many_threads_are_each_in_one_place() {
    const CHUNKS: usize = 8;
    let buf = Arc::new(TraceBuffer::new(BufferMode::Stream, CHUNKS).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|_| {
            let (b, stop) = (buf.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                // Relaxed: a flag; the join orders everything.
                while !stop.load(Ordering::Relaxed) {
                    if let Loan::Chunk(c) = b.loan(1, n) {
                        n += 1;
                        // SAFETY: this thread holds c, which holds no event.
                        unsafe { b.give_back(c, 0) };
                    }
                }
                n
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_millis(300);
    let mut taken = 0u64;
    while Instant::now() < deadline {
        while let Some(i) = buf.pop_full_index() {
            taken += 1;
            buf.release(buf.chunk(i as usize));
        }
    }
    // Relaxed: see above.
    stop.store(true, Ordering::Relaxed);
    let loaned: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    while let Some(i) = buf.pop_full_index() {
        taken += 1;
        buf.release(buf.chunk(i as usize));
    }
    assert_eq!(taken, loaned, "every chunk given back was taken once");
    let mut all: Vec<u32> = (0..CHUNKS).map_while(|_| Some(buf.index_of(take(&buf)))).collect();
    all.sort_unstable();
    assert_eq!(all, (0..CHUNKS as u32).collect::<Vec<_>>(), "every chunk free once");
    assert!(matches!(buf.loan(1, 0), Loan::AllLoaned));
}

// -------------------------------------------------------------------------------------------------
// Stopped at any point, by a signal: the same guarantee without the hook, so it also runs against
// a queue that has no hook (crossbeam's `ArrayQueue` failed it: its pop spins on a half-done push).
// -------------------------------------------------------------------------------------------------

static FROZEN: AtomicBool = AtomicBool::new(false);
static THAW: AtomicBool = AtomicBool::new(false);

extern "C" fn freeze(_: libc::c_int) {
    // SeqCst throughout: a handshake with the test's thread, not a hot path.
    FROZEN.store(true, Ordering::SeqCst);
    while !THAW.load(Ordering::SeqCst) {
        std::hint::spin_loop();
    }
    FROZEN.store(false, Ordering::SeqCst);
}

#[test]
fn a_thread_stopped_anywhere_in_a_pool_operation_holds_up_no_loan() {
    // One chunk, so the cycling thread's every push is onto an empty stack (or queue): the case
    // where a pop meets a push in progress.
    let q = Arc::new(ChunkPool::new(1));
    let sig = libc::SIGRTMIN() + 7;
    // SAFETY: [1] `freeze` only touches atomics, so it is async-signal-safe. [2] `act` is zeroed
    // then filled; `sigaction` reads it and writes `old`.
    let old = unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = freeze as extern "C" fn(libc::c_int) as usize;
        act.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut act.sa_mask);
        let mut old: libc::sigaction = std::mem::zeroed();
        assert_eq!(libc::sigaction(sig, &act, &mut old), 0);
        old
    };
    let stop = Arc::new(AtomicBool::new(false));
    let (id_tx, id_rx) = mpsc::channel();
    let cycler = {
        let (q, stop) = (q.clone(), stop.clone());
        std::thread::spawn(move || {
            // SAFETY: pthread_self has no preconditions.
            id_tx.send(unsafe { libc::pthread_self() } as usize).unwrap();
            // The collector and a writer in one: loan, give back, take, release.
            while !stop.load(Ordering::SeqCst) {
                if let Some(i) = q.take_free(|_| true) {
                    q.push_full(i);
                }
                while let Some(i) = q.pop_full() {
                    q.push_free(i);
                }
            }
        })
    };
    let cycler_id = id_rx.recv().unwrap() as libc::pthread_t;
    // A second thread that loans and gives back while the cycler is stopped.
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel();
    let loaner = {
        let q = q.clone();
        std::thread::spawn(move || {
            for () in go_rx {
                if let Some(i) = q.take_free(|_| true) {
                    q.push_full(i);
                }
                done_tx.send(()).unwrap();
            }
        })
    };
    let mut waited = 0;
    for _ in 0..2000 {
        THAW.store(false, Ordering::SeqCst);
        // SAFETY: the cycler runs until `stop`, so its thread id is valid.
        assert_eq!(unsafe { libc::pthread_kill(cycler_id, sig) }, 0);
        let t0 = Instant::now();
        while !FROZEN.load(Ordering::SeqCst) {
            assert!(t0.elapsed() < BOUND, "the signal was never handled");
            std::thread::yield_now();
        }
        go_tx.send(()).unwrap();
        if done_rx.recv_timeout(BOUND).is_err() {
            waited += 1;
        }
        THAW.store(true, Ordering::SeqCst);
        while FROZEN.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        if waited > 0 {
            done_rx.recv().unwrap();
            break;
        }
    }
    stop.store(true, Ordering::SeqCst);
    cycler.join().unwrap();
    drop(go_tx);
    loaner.join().unwrap();
    // SAFETY: `old` came from the `sigaction` above.
    assert_eq!(unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) }, 0);
    assert_eq!(waited, 0, "a loan waited for a thread stopped in the middle of a pool operation");
    // The one chunk is in one place.
    let mut left: Vec<u32> = std::iter::from_fn(|| q.pop_full()).collect();
    left.extend(std::iter::from_fn(|| q.take_free(|_| true)));
    assert_eq!(left, [0]);
}

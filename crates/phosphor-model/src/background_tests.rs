//! A [`Feed`] run on the engine's thread hands its sink exactly what the engine run on the
//! caller's thread hands it: every slice, leave, problem and message, in the same order.

use super::*;
use crate::nesting::{Problem, Slice};
use crate::test_rng::Rng;

/// Everything a sink is told, in order.
#[derive(Debug, Default, PartialEq, Eq)]
struct Log(Vec<String>);

impl Sink<u32> for Log {
    fn enter(&mut self, s: &Slice, payload: u32) {
        self.0.push(format!("enter {s:?} {payload}"));
    }
    fn leave(&mut self, s: &Slice) {
        self.0.push(format!("leave {s:?}"));
    }
    fn problem(&mut self, p: Problem) {
        self.0.push(format!("problem {p:?}"));
    }
}

impl Consumer<u32> for Log {
    type Message = u64;
    fn message(&mut self, _: &Nesting<u32>, m: u64) {
        self.0.push(format!("message {m}"));
    }
    fn close(begin: &mut u32, end: u32) {
        // Seen in the log as the begin's payload when it is entered.
        *begin = begin.wrapping_mul(100_003).wrapping_add(end);
    }
    fn adopt(&mut self, payload: &mut u32, bytes: &mut &[u8]) {
        let Some(expected) = carried(*payload) else {
            return;
        };
        let took = bytes.get(..expected.len()).unwrap_or(bytes);
        let verdict = if took == expected { "its own" } else { "WRONG" };
        self.0.push(format!("adopt {payload}: {verdict} bytes {took:?}"));
        *bytes = &bytes[took.len()..];
    }
}

/// The bytes payload `p` carries ([`Feed::bytes`]), if any: a length byte, then as many bytes
/// made from `p` (some lengths 0).
fn carried(p: u32) -> Option<Vec<u8>> {
    let len = (p % 4 == 1).then_some(p % 13)?;
    Some(std::iter::once(len as u8).chain((0..len).map(|i| (p as u8).wrapping_add(i as u8))).collect())
}

/// A random stream on a few threads: begins and ends (some mismatched, some never ended),
/// complete events recorded at their end, marks and messages, on a coarse clock full of ties.
fn ops(seed: u64, n: usize) -> Vec<Op<u32, u64>> {
    let mut rng = Rng(seed);
    let mut clocks = [0u64; 3];
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let t = rng.below(3) as usize;
        clocks[t] += rng.below(3);
        let (tid, ts, label, payload) = (t as u32 + 1, clocks[t], rng.below(5) as u32, i as u32);
        out.push(match rng.below(10) {
            0 | 1 => Op::Begin { tid, label, ts, payload },
            2 => Op::End { tid, label, ts, payload: None },
            3 => Op::End { tid, label, ts, payload: Some(payload) },
            4 => Op::Mark { tid, label, ts, payload },
            5 => Op::Message(i as u64),
            _ => {
                let dur = rng.below(ts + 1).min(6);
                Op::Complete { tid, label, ts: ts - dur, dur, payload }
            }
        });
    }
    out
}

/// Gives `ops` to `feed`, with their payloads' bytes if `bytes` ([`carried`]).
fn feed_all(feed: &mut Feed<u32, Log>, ops: Vec<Op<u32, u64>>, bytes: bool) {
    for op in ops {
        let payload = match &op {
            Op::Begin { payload, .. } | Op::Complete { payload, .. } | Op::Mark { payload, .. } => {
                Some(*payload)
            }
            Op::End { payload, .. } => *payload,
            Op::Message(_) => None,
        };
        if let Some(bytes) = payload.filter(|_| bytes).and_then(carried) {
            feed.bytes().extend_from_slice(&bytes);
            if payload.is_some_and(|p| p % 8 == 5) {
                // A message between the bytes and their operation, which it must not separate.
                feed.message(u64::MAX - u64::from(payload.unwrap_or_default()));
            }
        }
        match op {
            Op::Begin { tid, label, ts, payload } => feed.begin_with(tid, label, ts, payload),
            Op::End { tid, label, ts, payload: None } => feed.end(tid, label, ts),
            Op::End { tid, label, ts, payload: Some(p) } => feed.end_with(tid, label, ts, p),
            Op::Complete { tid, label, ts, dur, payload } => feed.complete_with(tid, label, ts, dur, payload),
            Op::Mark { tid, label, ts, payload } => feed.mark_with(tid, label, ts, payload),
            Op::Message(m) => feed.message(m),
        }
    }
}

/// The sink's log and the paths, with the engine on its own thread (`background`) or not.
fn run(seed: u64, n: usize, limit: usize, background: bool) -> (Vec<String>, Vec<String>, bool) {
    let mut feed = Feed::new(Nesting::new(limit), Log::default()).background(background);
    feed_all(&mut feed, ops(seed, n), true);
    let moved = feed.parts().is_none();
    let (nesting, log) = feed.finish();
    nesting.finish(log);
    let paths =
        (0..nesting.paths().len() as u32).map(|p| format!("{:?}", nesting.paths().labels(p))).collect();
    (std::mem::take(&mut log.0), paths, moved)
}

#[test]
fn a_feed_on_its_own_thread_tells_the_sink_what_one_on_the_callers_does() {
    for seed in 1..=6u64 {
        // Several batches, and a limit low enough that slices are resolved early on the way.
        let n = BATCH * 5 + 123;
        let (here, here_paths, here_moved) = run(seed, n, 300, false);
        let (there, there_paths, there_moved) = run(seed, n, 300, true);
        assert!(!here_moved, "a feed kept here never moves");
        assert!(there_moved, "a long stream moves to the engine's thread");
        assert!(here.len() > n / 2, "the stream makes slices: {}", here.len());
        assert!(
            here.iter().any(|l| l.starts_with("message")) && here.iter().any(|l| l.starts_with("problem"))
        );
        assert_eq!(here, there, "seed {seed}");
        assert_eq!(here_paths, there_paths, "seed {seed}");
        // Every payload given bytes took its own, across the batches' ends and the messages.
        let adopted = here.iter().filter(|l| l.starts_with("adopt")).count();
        let given = ops(seed, n)
            .iter()
            .filter(|op| match op {
                Op::Begin { payload, .. } | Op::Complete { payload, .. } | Op::Mark { payload, .. } => {
                    carried(*payload).is_some()
                }
                Op::End { payload, .. } => payload.and_then(carried).is_some(),
                Op::Message(_) => false,
            })
            .count();
        assert!(given > n / 10, "{given}");
        assert_eq!(adopted, given, "seed {seed}");
        assert!(!here.iter().any(|l| l.contains("WRONG")), "seed {seed}");
    }
}

#[test]
fn a_short_stream_never_leaves_the_callers_thread() {
    let mut feed = Feed::new(Nesting::new(100), Log::default()).background(true);
    feed_all(&mut feed, ops(7, BATCH - 1), false);
    assert!(feed.parts().is_some(), "fewer operations than a batch stay here");
    assert_eq!(feed.pending(), BATCH - 1, "queued operations count as pending");
    let (nesting, log) = feed.finish();
    nesting.finish(log);
    assert!(!log.0.is_empty());
}

#[test]
fn pending_is_the_engines_count() {
    let mut nesting = Nesting::<u32>::new(1 << 20);
    let mut log = Log::default();
    for op in ops(9, 20_000) {
        apply(&mut nesting, &mut log, op, &mut &[][..]);
    }
    // The count kept as slices come and go equals each thread's counts summed.
    let before = nesting.pending();
    assert!(before > 0);
    nesting.shed_all(&mut log);
    assert_eq!(nesting.pending(), 0, "shedding every thread leaves none pending");
}

/// A sink that panics on a message: the panic reaches the caller at `finish`.
struct Bomb;

impl Sink<u32> for Bomb {}

impl Consumer<u32> for Bomb {
    type Message = ();
    fn message(&mut self, _: &Nesting<u32>, _: ()) {
        panic!("the sink failed");
    }
}

#[test]
fn a_panic_on_the_engines_thread_reaches_the_caller() {
    let mut feed = Feed::new(Nesting::new(100), Bomb).background(true);
    for i in 0..BATCH as u64 * 3 {
        feed.mark_with(1, 0, i, 0);
    }
    feed.message(());
    for i in 0..BATCH as u64 * 3 {
        feed.mark_with(1, 0, i, 0);
    }
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        feed.finish();
    }));
    let panic = caught.expect_err("the engine's panic is the caller's");
    assert_eq!(panic.downcast_ref::<&str>(), Some(&"the sink failed"));
}

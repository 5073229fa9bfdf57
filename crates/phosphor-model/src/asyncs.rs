//! Async slices: begins and ends paired across threads, for every tool ([`Pairing`]), and the
//! rows they are drawn on ([`Lanes`]).
//!
//! An async slice begins with an `AsyncBegin` event and ends with an `AsyncEnd` event of the same
//! name and async id, recorded on any threads. Chunks reach the file thread by thread, so the
//! end may be read before its begin, and async slices come in no time order. The statistics,
//! the Perfetto plan, the OTLP spans and the viewer's index all pair them here, in one pass, as
//! they read the file.
//!
//! # The pairing rule
//!
//! * **Key**: the name as every output shows it ([`async_name`]: the name an event of a `dyn`
//!   callsite carries, else its callsite's; not its category) and the async id. The caller numbers
//!   the names ([`AsyncKey::name`]); equal names must get equal numbers.
//! * **In file order**: a begin or an end whose key has the other half waiting pairs with it,
//!   whichever was read first. A half whose key has nothing waiting waits.
//! * **A second half of the same kind** (a begin again before the end, or an end again before
//!   the begin) gives up the one waiting: it is handed over unmatched at once (a begin never
//!   ended, an end never begun) and the new one waits. So a reused id never pairs with an
//!   earlier use's half, and a duplicate begin leaves the first one unended.
//! * **Times** are the caller's (the [`Timeline`](crate::timeline::Timeline)'s nanoseconds, or
//!   what a writer writes): a pair whose end is earlier than its begin (hostile or lost clocks)
//!   is still a pair, of no length ([`Matched::length`]); a pair at one instant has no length
//!   either, and counts. (A client that sorts events by time, ties in file order, as trace
//!   processor and Chrome JSON viewers do, sees neither as a pair when the end was read first:
//!   the end closes nothing and the begin stays open. [`Matched::Pair`] says which was read
//!   first.)
//! * **At the end** ([`Pairing::finish`]) the halves still waiting are handed over unmatched: the
//!   begins as never ended, the ends as never begun.
//!
//! # Memory
//!
//! One entry per half waiting (its key, its time and the caller's payload, in a hash map), at
//! most `max_open` ([`DEFAULT_MAX_OPEN`]): a half that would wait past it is handed over
//! unmatched at once and counted ([`Pairing::overflowed`]), so a file of a million begins never
//! ended costs the cap, not a million entries. Its other half, if it comes, is unmatched too.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use phosphor_format::file::{Event, Value};
use rustc_hash::FxHashMap as HashMap;

/// The most halves waiting for their other half, all names together: 262,144 (an entry is its
/// key, its time and the payload, about 40 bytes with a payload of a word: at most about 20 MiB
/// with the hash map's spare room).
pub const DEFAULT_MAX_OPEN: usize = 1 << 18;

/// The name an async event's slice is shown under: the name a `dyn` callsite's event carries (its
/// argument 0), else its callsite's.
pub fn async_name<'e>(e: &'e Event<'_>) -> &'e str {
    match e.args[0] {
        Some((_, Value::Str(s))) if e.callsite.dynamic_name => s,
        _ => e.callsite.name.as_str(),
    }
}

/// What pairs a begin with its end: the caller's number of the name, and the async id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AsyncKey {
    /// The name as shown ([`async_name`]), numbered by the caller.
    pub name: u32,
    /// The async id.
    pub id: u64,
}

/// A begin or an end: its time and what the caller keeps with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Half<P> {
    /// Its time.
    pub ts: u64,
    /// The caller's data.
    pub payload: P,
}

/// What [`Pairing`] hands over: a pair, or a half that will never have its other half.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Matched<P> {
    /// A begin and its end (`end.ts` may be earlier than `begin.ts`: see [`Matched::length`]).
    Pair {
        /// The begin.
        begin: Half<P>,
        /// The end.
        end: Half<P>,
        /// Whether the end was read first.
        end_first: bool,
    },
    /// A begin never ended.
    Unended(Half<P>),
    /// An end never begun.
    Unbegun(Half<P>),
}

impl<P> Matched<P> {
    /// A pair's length: its end less its begin, 0 if the end is earlier; `None` for a half alone.
    pub fn length(&self) -> Option<u64> {
        match self {
            Matched::Pair { begin, end, .. } => Some(end.ts.saturating_sub(begin.ts)),
            _ => None,
        }
    }
}

/// Pairs async begins and ends by the rule of the [module docs](self), handing each pair to a
/// sink as soon as both halves are read.
#[derive(Debug)]
pub struct Pairing<P> {
    /// Per key, the half waiting: a begin (`true`) or an end.
    open: HashMap<AsyncKey, (bool, Half<P>)>,
    max_open: usize,
    overflowed: u64,
}

impl<P> Default for Pairing<P> {
    fn default() -> Pairing<P> {
        Pairing::new(DEFAULT_MAX_OPEN)
    }
}

impl<P> Pairing<P> {
    /// A pairing that keeps at most `max_open` halves waiting (at least 1).
    pub fn new(max_open: usize) -> Pairing<P> {
        Pairing { open: HashMap::default(), max_open: max_open.max(1), overflowed: 0 }
    }

    /// A begin (`begin`) or an end of `key` at `ts`, read now; what it completes or gives up goes
    /// to `sink`.
    pub fn add(
        &mut self,
        key: AsyncKey,
        begin: bool,
        ts: u64,
        payload: P,
        sink: &mut impl FnMut(AsyncKey, Matched<P>),
    ) {
        let this = Half { ts, payload };
        match self.open.remove(&key) {
            Some((first_is_begin, first)) if first_is_begin != begin => {
                let (b, e) = if begin { (this, first) } else { (first, this) };
                sink(key, Matched::Pair { begin: b, end: e, end_first: begin });
            }
            Some((first_is_begin, first)) => {
                sink(key, unmatched(first_is_begin, first));
                self.open.insert(key, (begin, this));
            }
            None if self.open.len() >= self.max_open => {
                self.overflowed += 1;
                sink(key, unmatched(begin, this));
            }
            None => {
                self.open.insert(key, (begin, this));
            }
        }
    }

    /// Whether a half of `key` waits, and if so whether it is a begin, and its payload.
    pub fn waiting(&self, key: &AsyncKey) -> Option<(bool, &Half<P>)> {
        self.open.get(key).map(|(b, h)| (*b, h))
    }

    /// The end of the input: hands every half still waiting to `sink`, in key order.
    pub fn finish(&mut self, sink: &mut impl FnMut(AsyncKey, Matched<P>)) {
        let mut open: Vec<_> = self.open.drain().collect();
        open.sort_unstable_by_key(|&(key, _)| key);
        for (key, (begin, half)) in open {
            sink(key, unmatched(begin, half));
        }
        self.open.shrink_to_fit();
    }

    /// Forgets the halves waiting without handing them over (a live view that skipped part of a
    /// file: their other halves may be gone).
    pub fn forget(&mut self) {
        self.open.clear();
    }

    /// Halves waiting now.
    pub fn open(&self) -> usize {
        self.open.len()
    }

    /// Halves handed over unmatched because `max_open` were waiting.
    pub fn overflowed(&self) -> u64 {
        self.overflowed
    }
}

fn unmatched<P>(begin: bool, half: Half<P>) -> Matched<P> {
    if begin {
        Matched::Unended(half)
    } else {
        Matched::Unbegun(half)
    }
}

/// Async slices packed into rows, *lanes*, per class (a name): taken by class and then by start,
/// each slice goes on the lane of its class that freed first if that lane's last slice ended
/// strictly before it begins, else on a new lane. That is interval partitioning: as many lanes as
/// the most slices of the class that share an instant, the fewest possible. A slice never shares
/// an instant with another on its lane: at equal timestamps a client that sorts events by time
/// could nest one in the other. Perfetto's plan and the viewer's index both lay their lanes out
/// this way; lanes are numbered from 0 per class.
#[derive(Debug, Default)]
pub struct Lanes {
    class: Option<u32>,
    /// The class's lanes by the end of the last slice each holds.
    busy: BinaryHeap<Reverse<(u64, u32)>>,
    count: u32,
}

impl Lanes {
    /// The lane of a slice of `class` from `start` to `end` (inclusive; `u64::MAX` for one that
    /// never ends). Slices must come by class, and by start within a class.
    pub fn place(&mut self, class: u32, start: u64, end: u64) -> u32 {
        if self.class != Some(class) {
            self.class = Some(class);
            self.busy.clear();
            self.count = 0;
        }
        let lane = match self.busy.peek() {
            Some(&Reverse((free_after, lane))) if free_after < start => {
                self.busy.pop();
                lane
            }
            _ => {
                self.count += 1;
                self.count - 1
            }
        };
        self.busy.push(Reverse((end.max(start), lane)));
        lane
    }

    /// Lanes of the class placed last.
    pub fn count(&self) -> u32 {
        self.count
    }
}

#[cfg(test)]
#[path = "asyncs_tests.rs"]
mod tests;

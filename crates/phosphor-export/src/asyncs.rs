//! Async slices for the statistics: begins and ends paired by name and id across threads
//! ([`AsyncStats`]): their durations, and how long at least one was open (`async_union.rs`).

use rustc_hash::FxHashMap as HashMap;

use phosphor_format::file::{Callsite, ClockInfo};
use phosphor_format::Phase;

use crate::async_union::Union;
use crate::durations::Durations;
use crate::stats::AsyncStats;

/// Async slices: the halves waiting for their other half, and the pairs by name.
#[derive(Debug, Default)]
pub(crate) struct Asyncs {
    names: Vec<AsyncAcc>,
    index: HashMap<String, usize>,
    /// (name index, async id) → the half seen first: a begin (`true`) or an end, and its time.
    open: HashMap<(usize, u64), (bool, u64)>,
}

#[derive(Debug)]
struct AsyncAcc {
    name: String,
    durations: Durations,
    union: Union,
    unended: u64,
    unbegun: u64,
}

impl Asyncs {
    /// An async begin or end of `cs` with async id `id` at `ts`.
    pub(crate) fn add(&mut self, cs: &Callsite<'_>, id: u64, ts: u64) {
        let n = match self.index.get(cs.name.as_str()) {
            Some(&n) => n,
            None => {
                let n = self.names.len();
                let acc = AsyncAcc {
                    name: cs.name.to_string(),
                    durations: Durations::default(),
                    union: Union::default(),
                    unended: 0,
                    unbegun: 0,
                };
                self.names.push(acc);
                self.index.insert(cs.name.to_string(), n);
                n
            }
        };
        let begin = cs.phase == Phase::AsyncBegin;
        // Events come thread by thread, so an end may come before its begin.
        match self.open.remove(&(n, id)) {
            Some((first_is_begin, first)) if first_is_begin != begin => {
                let (b, e) = if begin { (ts, first) } else { (first, ts) };
                let acc = &mut self.names[n];
                acc.durations.add(e.saturating_sub(b));
                acc.union.add(b, e);
            }
            previous => {
                // A second begin (or end) for the same id: the first one stays unmatched.
                if let Some((first_is_begin, _)) = previous {
                    self.unmatched(n, first_is_begin);
                }
                self.open.insert((n, id), (begin, ts));
            }
        }
    }

    /// Each name and the durations of its pairs so far (for `diff.rs`).
    pub(crate) fn durations(&self) -> impl Iterator<Item = (&str, &Durations)> {
        self.names.iter().map(|a| (a.name.as_str(), &a.durations))
    }

    fn unmatched(&mut self, n: usize, begin: bool) {
        if begin {
            self.names[n].unended += 1;
        } else {
            self.names[n].unbegun += 1;
        }
    }

    /// The pairs' durations and the halves left unmatched, by name.
    pub(crate) fn finish(mut self, clock: &ClockInfo) -> Vec<AsyncStats> {
        for ((n, _), (begin, _)) in std::mem::take(&mut self.open) {
            self.unmatched(n, begin);
        }
        let mut out: Vec<AsyncStats> = self
            .names
            .into_iter()
            .map(|a| AsyncStats {
                durations: a.durations.stats(clock),
                union_ns: clock.ticks_to_ns(a.union.len()),
                union_error_ns: clock.ticks_to_ns(a.union.error()),
                name: a.name,
                unended: a.unended,
                unbegun: a.unbegun,
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }
}

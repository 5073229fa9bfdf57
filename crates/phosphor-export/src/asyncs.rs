//! Async slices for the statistics ([`AsyncStats`]): begins and ends paired by the model's one
//! rule (`phosphor_model::asyncs`: by shown name and id, across threads, in file order), their
//! durations, and how long at least one was open (`async_union.rs`).

use phosphor_format::file::{ClockInfo, Event};
use phosphor_format::Phase;
use phosphor_model::asyncs::{async_name, AsyncKey, Matched, Pairing};
use phosphor_model::names::NameSet;

use crate::async_union::Union;
use crate::durations::Durations;
use crate::stats::AsyncStats;

/// Async slices: the pairing, and the pairs by name.
#[derive(Debug, Default)]
pub(crate) struct Asyncs {
    /// By name number (`names`).
    accs: Vec<AsyncAcc>,
    names: NameSet,
    pairing: Pairing<()>,
}

#[derive(Debug, Default)]
struct AsyncAcc {
    durations: Durations,
    union: Union,
    unended: u64,
    unbegun: u64,
}

impl AsyncAcc {
    fn take(&mut self, m: Matched<()>) {
        match m {
            Matched::Pair { begin, end, .. } => {
                self.durations.add(end.ts.saturating_sub(begin.ts));
                self.union.add(begin.ts, end.ts);
            }
            Matched::Unended(_) => self.unended += 1,
            Matched::Unbegun(_) => self.unbegun += 1,
        }
    }
}

impl Asyncs {
    /// An async begin or end, `e`, with async id `id`, at `ts` (on the timeline).
    pub(crate) fn add(&mut self, e: &Event<'_>, id: u64, ts: u64) {
        let name = self.names.number(async_name(e));
        if name as usize == self.accs.len() {
            self.accs.push(AsyncAcc::default());
        }
        let accs = &mut self.accs;
        let key = AsyncKey { name, id };
        let begin = e.callsite.phase == Phase::AsyncBegin;
        self.pairing.add(key, begin, ts, (), &mut |k: AsyncKey, m| accs[k.name as usize].take(m));
    }

    /// Each name and the durations of its pairs so far (for `diff.rs`).
    pub(crate) fn durations(&self) -> impl Iterator<Item = (&str, &Durations)> {
        self.accs.iter().enumerate().map(|(n, a)| (self.names.get(n as u32), &a.durations))
    }

    /// The pairs' durations and the halves left unmatched, by name; and the halves given up
    /// because too many were waiting (counted unmatched too).
    pub(crate) fn finish(mut self, clock: &ClockInfo) -> (Vec<AsyncStats>, u64) {
        let accs = &mut self.accs;
        self.pairing.finish(&mut |k: AsyncKey, m| accs[k.name as usize].take(m));
        let given_up = self.pairing.overflowed();
        let names = &self.names;
        let mut out: Vec<AsyncStats> = self
            .accs
            .into_iter()
            .enumerate()
            .map(|(n, a)| AsyncStats {
                durations: a.durations.stats(clock),
                union_ns: clock.ticks_to_ns(a.union.len()),
                union_error_ns: clock.ticks_to_ns(a.union.error()),
                name: names.get(n as u32).to_owned(),
                unended: a.unended,
                unbegun: a.unbegun,
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        (out, given_up)
    }
}

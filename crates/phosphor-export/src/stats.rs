//! `TraceStats`: counts and durations of a trace, per thread and per event kind.
//!
//! One pass over [`Trace::events`] fills an accumulator: a count per thread, and per kind a count
//! and every duration in ticks. A kind is (category, name, phase); callsites at different lines
//! with the same three share a kind. Durations come from the event itself (complete and lock
//! events), from matching begin/end pairs (see `scopes`), or from async begin/end pairs with the
//! same name and id, which may sit on different threads. The durations of each kind are then
//! sorted, which gives exact percentiles, and converted to nanoseconds with the trace's clock.
//!
//! Memory grows with the events that carry a duration: 8 bytes each.

use std::collections::HashMap;

use phosphor::{Drops, Event, Phase, Trace, TraceError};

use crate::scopes::{Mismatch, RawMismatch, ScopeChecker};

/// At most this many [`Mismatch`]es are kept as examples in [`TraceStats::mismatches`]; all are
/// counted.
pub const MAX_MISMATCH_EXAMPLES: usize = 1000;

/// Statistics of a trace.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TraceStats {
    /// Events decoded from the trace.
    pub events: u64,
    /// Events the trace says it recorded; equal to `events` unless the trace is damaged.
    pub recorded: u64,
    /// Events lost, by reason, as the trace counted them.
    pub drops: Drops,
    /// From the first event's start to the last event's end, in nanoseconds.
    pub span_ns: u64,
    /// Per thread, by thread id.
    pub threads: Vec<ThreadStats>,
    /// Per kind, by category, name and phase.
    pub kinds: Vec<KindStats>,
    /// Begin/end mismatches, by thread then time: the first [`MAX_MISMATCH_EXAMPLES`].
    pub mismatches: Vec<Mismatch>,
    /// All begin/end mismatches.
    pub mismatch_count: u64,
    /// Async begins with no end of the same name and id.
    pub async_unended: u64,
    /// Async ends with no begin of the same name and id.
    pub async_unbegun: u64,
}

/// Statistics of one thread.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThreadStats {
    /// The thread id recorded in the trace.
    pub tid: u32,
    /// Its name, if it was named.
    pub name: Option<String>,
    /// Events it recorded.
    pub events: u64,
    /// Begin/end mismatches on it.
    pub mismatches: u64,
}

/// Statistics of one event kind.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct KindStats {
    /// Category.
    pub category: &'static str,
    /// Name.
    pub name: &'static str,
    /// Phase.
    pub phase: Phase,
    /// Events of this kind.
    pub count: u64,
    /// Their durations, for kinds that last and had at least one measured.
    pub durations: Option<DurationStats>,
}

/// A distribution of durations, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DurationStats {
    /// Durations measured: the events' count, or for begins the pairs that matched.
    pub samples: u64,
    /// Shortest.
    pub min_ns: u64,
    /// Mean.
    pub mean_ns: u64,
    /// Median (nearest rank).
    pub p50_ns: u64,
    /// 99th percentile (nearest rank).
    pub p99_ns: u64,
    /// Longest.
    pub max_ns: u64,
    /// Sum.
    pub total_ns: u64,
}

impl DurationStats {
    /// The distribution of `ticks`, converted with `to_ns`; `None` when empty. Sorts `ticks`.
    pub(crate) fn from_ticks(ticks: &mut [u64], to_ns: impl Fn(u64) -> u64) -> Option<DurationStats> {
        let n = ticks.len();
        if n == 0 {
            return None;
        }
        ticks.sort_unstable();
        let total: u128 = ticks.iter().map(|&t| u128::from(t)).sum();
        let mean = (total / n as u128) as u64;
        Some(DurationStats {
            samples: n as u64,
            min_ns: to_ns(ticks[0]),
            mean_ns: to_ns(mean),
            p50_ns: to_ns(ticks[nearest_rank(n, 50)]),
            p99_ns: to_ns(ticks[nearest_rank(n, 99)]),
            max_ns: to_ns(ticks[n - 1]),
            total_ns: to_ns(u64::try_from(total).unwrap_or(u64::MAX)),
        })
    }
}

/// The index of the `p`th percentile of `n` sorted values: the smallest value with at least `p`%
/// of the values at or below it.
fn nearest_rank(n: usize, p: usize) -> usize {
    (n * p).div_ceil(100).clamp(1, n) - 1
}

impl TraceStats {
    /// Computes the statistics of `trace`. Fails only if the trace does not decode.
    pub fn from_trace(trace: &Trace) -> Result<TraceStats, TraceError> {
        let mut acc = Accumulator::default();
        for event in trace.events() {
            acc.add(&event?);
        }
        Ok(acc.finish(trace))
    }
}

#[derive(Default)]
struct Accumulator {
    /// Callsite id → index in `kinds`.
    kind_of_id: Vec<Option<usize>>,
    kind_index: HashMap<(&'static str, &'static str, Phase), usize>,
    kinds: Vec<KindAcc>,
    threads: HashMap<u32, u64>,
    scopes: ScopeChecker,
    /// (name hash, async id) → the half seen first.
    asyncs: HashMap<(u64, u64), AsyncHalf>,
    async_unmatched: (u64, u64),
    events: u64,
    first_ts: Option<u64>,
    last_ts: u64,
}

struct KindAcc {
    category: &'static str,
    name: &'static str,
    phase: Phase,
    count: u64,
    ticks: Vec<u64>,
}

enum AsyncHalf {
    Begin { kind: usize, ts: u64 },
    End { ts: u64 },
}

impl Accumulator {
    fn kind(&mut self, ev: &Event<'_>) -> usize {
        let id = ev.id as usize;
        if let Some(Some(k)) = self.kind_of_id.get(id) {
            return *k;
        }
        let m = ev.callsite;
        let key = (m.category, m.name, m.phase);
        let next = self.kinds.len();
        let k = *self.kind_index.entry(key).or_insert(next);
        if k == next {
            let acc =
                KindAcc { category: m.category, name: m.name, phase: m.phase, count: 0, ticks: Vec::new() };
            self.kinds.push(acc);
        }
        if self.kind_of_id.len() <= id {
            self.kind_of_id.resize(id + 1, None);
        }
        self.kind_of_id[id] = Some(k);
        k
    }

    fn add(&mut self, ev: &Event<'_>) {
        self.events += 1;
        *self.threads.entry(ev.tid).or_default() += 1;
        let k = self.kind(ev);
        self.kinds[k].count += 1;
        self.first_ts = Some(self.first_ts.map_or(ev.ts, |f| f.min(ev.ts)));
        self.last_ts = self.last_ts.max(ev.ts.saturating_add(ev.duration.unwrap_or(0)));
        let name = ev.callsite.name;
        match ev.phase() {
            Phase::Begin => self.scopes.begin(ev.tid, name, k, ev.ts),
            Phase::End => {
                if let Some((begin_kind, ticks)) = self.scopes.end(ev.tid, name, ev.ts) {
                    self.kinds[begin_kind].ticks.push(ticks);
                }
            }
            Phase::AsyncBegin | Phase::AsyncEnd => self.add_async(ev, k),
            _ => {
                if let Some(d) = ev.duration {
                    self.kinds[k].ticks.push(d);
                }
            }
        }
    }

    fn add_async(&mut self, ev: &Event<'_>, kind: usize) {
        let key = (ev.callsite.name_hash, ev.async_id.unwrap_or(0));
        let half = match ev.phase() {
            Phase::AsyncBegin => AsyncHalf::Begin { kind, ts: ev.ts },
            _ => AsyncHalf::End { ts: ev.ts },
        };
        // Events arrive thread by thread, so an end may come before its begin.
        match (self.asyncs.remove(&key), half) {
            (Some(AsyncHalf::Begin { kind, ts: begin }), AsyncHalf::End { ts: end })
            | (Some(AsyncHalf::End { ts: end }), AsyncHalf::Begin { kind, ts: begin }) => {
                self.kinds[kind].ticks.push(end.saturating_sub(begin));
            }
            (previous, half) => {
                // A second begin (or end) for the same id: the first one stays unmatched.
                match previous {
                    Some(AsyncHalf::Begin { .. }) => self.async_unmatched.0 += 1,
                    Some(AsyncHalf::End { .. }) => self.async_unmatched.1 += 1,
                    None => {}
                }
                self.asyncs.insert(key, half);
            }
        }
    }

    fn finish(mut self, trace: &Trace) -> TraceStats {
        let clock = trace.clock();
        let to_ns = |ticks: u64| clock.ticks_to_ns(ticks);
        let first = self.first_ts.unwrap_or(0);

        for half in self.asyncs.values() {
            match half {
                AsyncHalf::Begin { .. } => self.async_unmatched.0 += 1,
                AsyncHalf::End { .. } => self.async_unmatched.1 += 1,
            }
        }

        let raw: Vec<RawMismatch> = self.scopes.finish();
        let mut per_thread: HashMap<u32, u64> = HashMap::new();
        for m in &raw {
            *per_thread.entry(m.tid).or_default() += 1;
        }
        let mismatch_count = raw.len() as u64;
        let mismatches = raw
            .into_iter()
            .take(MAX_MISMATCH_EXAMPLES)
            .map(|m| Mismatch { tid: m.tid, at_ns: to_ns(m.ts.saturating_sub(first)), kind: m.kind })
            .collect();

        let mut threads: Vec<ThreadStats> = self
            .threads
            .iter()
            .map(|(&tid, &events)| ThreadStats {
                tid,
                name: trace.thread_name(tid).map(str::to_owned),
                events,
                mismatches: per_thread.get(&tid).copied().unwrap_or(0),
            })
            .collect();
        threads.sort_by_key(|t| t.tid);

        let mut kinds: Vec<KindStats> = self
            .kinds
            .iter_mut()
            .map(|k| KindStats {
                category: k.category,
                name: k.name,
                phase: k.phase,
                count: k.count,
                durations: DurationStats::from_ticks(&mut k.ticks, to_ns),
            })
            .collect();
        kinds.sort_by(|a, b| (a.category, a.name, a.phase as u8).cmp(&(b.category, b.name, b.phase as u8)));

        TraceStats {
            events: self.events,
            recorded: trace.stats().recorded,
            drops: trace.stats().dropped.clone(),
            span_ns: to_ns(self.last_ts.saturating_sub(first)),
            threads,
            kinds,
            mismatches,
            mismatch_count,
            async_unended: self.async_unmatched.0,
            async_unbegun: self.async_unmatched.1,
        }
    }
}

impl TraceStats {
    /// The kind with this category, name and phase.
    pub fn kind(&self, category: &str, name: &str, phase: Phase) -> Option<&KindStats> {
        self.kinds.iter().find(|k| k.category == category && k.name == name && k.phase == phase)
    }

    /// The thread with this id.
    pub fn thread(&self, tid: u32) -> Option<&ThreadStats> {
        self.threads.iter().find(|t| t.tid == tid)
    }
}

#[cfg(test)]
#[path = "stats_tests.rs"]
mod tests;

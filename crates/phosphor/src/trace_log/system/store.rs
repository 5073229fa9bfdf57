//! The bounded store of a running trace's system context, filled by the collector each period and
//! read by `stop`, snapshots and the status.
//!
//! # Bounds
//!
//! Each kind has its own budget, so a flood of one cannot crowd out the others:
//!
//! * switches: [`MAX_SWITCHES`] (2^19, 12 MiB at 24 bytes each: 52 s at 10,000 switches/s);
//! * samples: [`MAX_SAMPLE_BYTES`] (32 MiB, counting 48 bytes per sample and 8 per frame: about
//!   4 minutes of one thread at 999 Hz with 30-frame stacks);
//! * heap counters: [`MAX_HEAP`] (2^16, one per 10 ms period: 11 minutes);
//! * mappings: not bounded here (the process's executable mappings are few, each kept once).
//!
//! Past a budget a Ring-mode trace (the flight recorder) drops its oldest records of that kind, so
//! it keeps the newest as its events do; every other mode keeps the oldest and drops the new ones.
//! Either way each one dropped is counted in [`SystemStatus::dropped`].

// Switches, samples and mappings come from perf events, which only Linux has.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

use std::collections::VecDeque;

use phosphor_format::system::{HeapCounter, Mapping, Sample, Switch, SystemBatch, SystemStatus};

/// The most switches a trace keeps.
pub(crate) const MAX_SWITCHES: usize = 1 << 19;
/// The most bytes of samples a trace keeps, as [`sample_cost`] counts them.
pub(crate) const MAX_SAMPLE_BYTES: usize = 32 << 20;
/// The most heap counters a trace keeps.
pub(crate) const MAX_HEAP: usize = 1 << 16;

/// What a sample costs the budget: its size in memory, roughly.
fn sample_cost(s: &Sample) -> usize {
    48 + 8 * s.frames.len()
}

#[derive(Debug)]
pub(super) struct Store {
    /// Keep the newest (Ring mode) rather than the oldest.
    keep_newest: bool,
    pub(super) status: SystemStatus,
    mappings: Vec<Mapping>,
    switches: VecDeque<Switch>,
    samples: VecDeque<Sample>,
    sample_bytes: usize,
    heap: VecDeque<HeapCounter>,
}

impl Store {
    pub(super) fn new(keep_newest: bool, status: SystemStatus) -> Store {
        Store {
            keep_newest,
            status,
            mappings: Vec::new(),
            switches: VecDeque::new(),
            samples: VecDeque::new(),
            sample_bytes: 0,
            heap: VecDeque::new(),
        }
    }

    pub(super) fn add_mappings(&mut self, m: Vec<Mapping>) {
        self.mappings.extend(m);
    }

    pub(super) fn add_switches(&mut self, new: Vec<Switch>) {
        for s in new {
            if self.switches.len() >= MAX_SWITCHES && !self.make_room(|st| st.switches.pop_front().is_some())
            {
                continue;
            }
            self.switches.push_back(s);
        }
    }

    pub(super) fn add_samples(&mut self, new: Vec<Sample>) {
        for s in new {
            let cost = sample_cost(&s);
            while self.sample_bytes + cost > MAX_SAMPLE_BYTES {
                let freed = |st: &mut Store| match st.samples.pop_front() {
                    Some(old) => {
                        st.sample_bytes -= sample_cost(&old);
                        true
                    }
                    None => false,
                };
                if !self.make_room(freed) {
                    break;
                }
            }
            if self.sample_bytes + cost > MAX_SAMPLE_BYTES {
                continue; // dropped and counted by `make_room`
            }
            self.sample_bytes += cost;
            self.samples.push_back(s);
        }
    }

    pub(super) fn add_heap(&mut self, h: HeapCounter) {
        if self.heap.len() >= MAX_HEAP && !self.make_room(|st| st.heap.pop_front().is_some()) {
            return;
        }
        self.heap.push_back(h);
    }

    /// Counts one record dropped: the oldest (`evict` removes it; whether there was one) when
    /// keeping the newest, else the new one. Whether there is room for the new one now.
    fn make_room(&mut self, evict: impl FnOnce(&mut Store) -> bool) -> bool {
        self.status.dropped += 1;
        self.keep_newest && evict(self)
    }

    /// A copy of everything so far, with the status.
    pub(super) fn batch(&self) -> SystemBatch {
        SystemBatch {
            status: Some(self.status.clone()),
            mappings: self.mappings.clone(),
            switches: self.switches.iter().copied().collect(),
            samples: self.samples.iter().cloned().collect(),
            heap: self.heap.iter().copied().collect(),
        }
    }

    /// Everything, moved out.
    pub(super) fn into_batch(self) -> SystemBatch {
        SystemBatch {
            status: Some(self.status),
            mappings: self.mappings,
            switches: self.switches.into(),
            samples: self.samples.into(),
            heap: self.heap.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use phosphor_format::system::{SampleKind, SwitchKind};

    fn switch(t: u64) -> Switch {
        Switch { tid: 1, time_ns: t, cpu: 0, kind: SwitchKind::In }
    }

    #[test]
    fn a_ring_trace_keeps_the_newest_switches_and_counts_the_oldest_dropped() {
        let mut s = Store::new(true, SystemStatus::default());
        s.add_switches((0..MAX_SWITCHES as u64 + 5).map(switch).collect());
        let b = s.into_batch();
        assert_eq!(b.switches.len(), MAX_SWITCHES);
        assert_eq!(b.switches[0].time_ns, 5);
        assert_eq!(b.status.unwrap().dropped, 5);
    }

    #[test]
    fn other_traces_keep_the_oldest_samples_and_count_the_newest_dropped() {
        let mut s = Store::new(false, SystemStatus::default());
        let sample = |t| Sample { tid: 1, time_ns: t, cpu: 0, kind: SampleKind::Cpu, frames: vec![1; 10] };
        let fit = MAX_SAMPLE_BYTES / (48 + 80);
        s.add_samples((0..fit as u64 + 3).map(sample).collect());
        let b = s.batch();
        assert_eq!(b.samples.len(), fit);
        assert_eq!(b.samples.last().unwrap().time_ns, fit as u64 - 1);
        assert_eq!(b.status.unwrap().dropped, 3);
    }

    #[test]
    fn heap_counters_are_bounded_too() {
        let mut s = Store::new(true, SystemStatus::default());
        for t in 0..MAX_HEAP as u64 + 2 {
            s.add_heap(HeapCounter { time_ns: t, ..HeapCounter::default() });
        }
        let b = s.into_batch();
        assert_eq!((b.heap.len(), b.heap[0].time_ns), (MAX_HEAP, 2));
        assert_eq!(b.status.unwrap().dropped, 2);
    }
}

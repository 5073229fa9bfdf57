//! [`SystemContext`]: a trace's system blocks (format 1.6) gathered per thread, so that the
//! statistics can ask what the kernel saw during one scope: how long its thread was off the CPU
//! (blocked or preempted), how often it was switched out, and which samples fell in it.
//!
//! A scope's events and the system blocks that cover it may be anywhere in a file (a saved trace
//! writes its system blocks at the end, a datastream one per period), so the context is read
//! first, in a pass of its own over the file's system blocks ([`SystemContext::read`]), and the
//! statistics' pass then asks it about each scope it resolves: the off-CPU time of an interval is
//! a difference of two prefix sums found by binary search, the samples in it a range of the
//! thread's samples by time.
//!
//! Off-CPU intervals run from a switch out (blocked) or a preemption to the thread's next switch
//! in; an interval still open at the end of the trace runs to its end. A switch in with no switch
//! out before it (the thread was off when the trace began) opens no interval.
//!
//! # Memory
//!
//! The context is the one thing the statistics hold in proportion to the trace: 16 bytes per
//! switch and per sample, and each distinct stack once. At most [`MAX_HELD`] switches and samples
//! are held; past it the rest are counted ([`SystemCounts::not_held`]) and the statistics say so.

use std::collections::HashMap;
use std::io::Read;

use phosphor_format::file::{Block, Error, Reader};
use phosphor_format::system::{
    HeapCounter, Mapping, SampleKind, Switch, SwitchKind, SystemBatch, SystemStatus,
};

use crate::symbolize::Symbolizer;

/// The most switches and CPU samples held, all threads together (16 bytes each: 256 MiB).
pub const MAX_HELD: u64 = 1 << 24;

/// What a trace's system blocks held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SystemCounts {
    /// System blocks read.
    pub blocks: u64,
    /// Context switches.
    pub switches: u64,
    /// CPU samples.
    pub samples: u64,
    /// Allocation samples (counted only: the statistics and flame graphs are of CPU samples).
    pub alloc_samples: u64,
    /// Heap totals.
    pub heap: u64,
    /// Mappings.
    pub mappings: u64,
    /// Switches and samples past [`MAX_HELD`], not used per scope.
    pub not_held: u64,
}

/// A sample as held: its time and its stack's number.
#[derive(Clone, Copy, Debug)]
struct HeldSample {
    time_ns: u64,
    stack: u32,
}

/// One thread's switches and samples.
#[derive(Debug, Default)]
struct ThreadContext {
    /// As read, then sorted by time (`finish`).
    switches: Vec<(u64, SwitchKind)>,
    /// Off-CPU intervals `(start, end, preempted)`, sorted and disjoint.
    off: Vec<(u64, u64, bool)>,
    /// Before interval `i`: the off-CPU time of the intervals before it, and of those preempted.
    before: Vec<(u64, u64)>,
    /// Times of the switches out and preemptions, sorted.
    outs: Vec<u64>,
    samples: Vec<HeldSample>,
}

/// What the kernel saw of one interval of a thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntervalContext {
    /// Off the CPU (blocked or preempted), in nanoseconds.
    pub off_cpu_ns: u64,
    /// Of which preempted (runnable, waiting for a CPU).
    pub preempted_ns: u64,
    /// Switches out and preemptions.
    pub switches: u64,
}

/// An off-CPU interval of one thread: from a switch out (blocked) or a preemption to its next
/// switch in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffCpu {
    /// When it left the CPU, `CLOCK_MONOTONIC` nanoseconds.
    pub start_ns: u64,
    /// When it resumed; `None` if it had not by the end of the trace (the interval then runs to
    /// the end of time, as [`SystemContext::interval`] measures it).
    pub end_ns: Option<u64>,
    /// Whether it left runnable (preempted), not blocked.
    pub preempted: bool,
}

/// A trace's system context, per thread (see the module's documentation).
#[derive(Debug, Default)]
pub struct SystemContext {
    /// The last status a system block gave.
    pub status: Option<SystemStatus>,
    /// What the blocks held.
    pub counts: SystemCounts,
    /// Every mapping, in file order.
    pub mappings: Vec<Mapping>,
    /// Heap totals, in file order.
    pub heap: Vec<HeapCounter>,
    threads: HashMap<u32, ThreadContext>,
    /// Each distinct stack once (innermost first), by number.
    stacks: Vec<Box<[u64]>>,
    stack_ids: HashMap<Box<[u64]>, u32>,
    /// By stack number, its leaf's function (see `name_leaves`), by number in `functions`.
    leaves: Vec<u32>,
    functions: Vec<String>,
}

impl SystemContext {
    /// Reads the system blocks of the rest of a file (other blocks are skipped, chunks not decoded),
    /// then sorts what it held. `Ok` with what was read if the file is damaged after the header:
    /// the statistics' own pass reports the damage.
    pub fn read<R: Read>(mut reader: Reader<R>) -> Result<SystemContext, Error> {
        let mut ctx = SystemContext::default();
        loop {
            match reader.next_block() {
                Ok(Some(Block::System(batch))) => ctx.add(batch),
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
        ctx.finish();
        Ok(ctx)
    }

    /// Takes in one system block.
    pub fn add(&mut self, batch: &SystemBatch) {
        self.counts.blocks += 1;
        if let Some(s) = &batch.status {
            self.status = Some(s.clone());
        }
        self.counts.mappings += batch.mappings.len() as u64;
        self.mappings.extend_from_slice(&batch.mappings);
        self.counts.heap += batch.heap.len() as u64;
        self.heap.extend_from_slice(&batch.heap);
        self.add_switches(&batch.switches);
        for s in &batch.samples {
            if s.kind != SampleKind::Cpu {
                self.counts.alloc_samples += 1;
                continue;
            }
            let full = self.held() >= MAX_HELD;
            self.counts.samples += 1;
            if full {
                self.counts.not_held += 1;
                continue;
            }
            let stack = match self.stack_ids.get(s.frames.as_slice()) {
                Some(&id) => id,
                None => {
                    let id = self.stacks.len() as u32;
                    let frames: Box<[u64]> = s.frames.clone().into();
                    self.stacks.push(frames.clone());
                    self.stack_ids.insert(frames, id);
                    id
                }
            };
            self.threads.entry(s.tid).or_default().samples.push(HeldSample { time_ns: s.time_ns, stack });
        }
    }

    /// Takes in context switches only (a system block's [`SystemBatch::switches`]): what
    /// [`SystemContext::off_cpu`] needs, without the samples' stacks.
    pub fn add_switches(&mut self, switches: &[Switch]) {
        for w in switches {
            let full = self.held() >= MAX_HELD;
            self.counts.switches += 1;
            if full {
                self.counts.not_held += 1;
                continue;
            }
            self.threads.entry(w.tid).or_default().switches.push((w.time_ns, w.kind));
        }
    }

    /// Switches and samples held.
    fn held(&self) -> u64 {
        self.counts.switches + self.counts.samples - self.counts.not_held
    }

    /// Sorts each thread's switches and samples by time and works out its off-CPU intervals.
    pub fn finish(&mut self) {
        for t in self.threads.values_mut() {
            t.switches.sort_by_key(|s| s.0);
            t.samples.sort_by_key(|s| s.time_ns);
            t.off.clear();
            t.outs.clear();
            let mut open: Option<(u64, bool)> = None;
            for &(time, kind) in &t.switches {
                match kind {
                    SwitchKind::Out | SwitchKind::Preempted => {
                        t.outs.push(time);
                        open.get_or_insert((time, kind == SwitchKind::Preempted));
                    }
                    SwitchKind::In => {
                        if let Some((start, preempted)) = open.take() {
                            t.off.push((start, time, preempted));
                        }
                    }
                }
            }
            if let Some((start, preempted)) = open {
                t.off.push((start, u64::MAX, preempted));
            }
            let (mut off, mut pre) = (0u64, 0u64);
            t.before = t
                .off
                .iter()
                .map(|&(s, e, p)| {
                    let b = (off, pre);
                    off = off.saturating_add(e - s);
                    if p {
                        pre = pre.saturating_add(e - s);
                    }
                    b
                })
                .collect();
        }
        self.stack_ids = HashMap::new();
    }

    /// Whether any switch or sample was held.
    pub fn is_empty(&self) -> bool {
        self.threads.is_empty()
    }

    /// Whether the trace has context switches: the status says they were on, or some arrived.
    pub fn has_switches(&self) -> bool {
        self.counts.switches > 0
            || matches!(
                self.status.as_ref().map(|s| &s.switches),
                Some(phosphor_format::system::Availability::On)
            )
    }

    /// What the kernel saw of thread `tid` between `start_ns` and `end_ns` (`CLOCK_MONOTONIC`).
    pub fn interval(&self, tid: u32, start_ns: u64, end_ns: u64) -> IntervalContext {
        let Some(t) = self.threads.get(&tid) else { return IntervalContext::default() };
        let (off_end, pre_end) = t.off_before(end_ns);
        let (off_start, pre_start) = t.off_before(start_ns);
        let outs = t.outs.partition_point(|&o| o < end_ns) - t.outs.partition_point(|&o| o < start_ns);
        IntervalContext {
            off_cpu_ns: off_end.saturating_sub(off_start),
            preempted_ns: pre_end.saturating_sub(pre_start),
            switches: outs as u64,
        }
    }

    /// Thread `tid`'s off-CPU intervals, in time order, once [`SystemContext::finish`] ran: the
    /// intervals [`SystemContext::interval`] measures a scope against (`phosphor sql`'s
    /// `off_cpu` table).
    pub fn off_cpu(&self, tid: u32) -> impl Iterator<Item = OffCpu> + '_ {
        let off = self.threads.get(&tid).map_or(&[][..], |t| &t.off[..]);
        off.iter().map(|&(start_ns, end, preempted)| OffCpu {
            start_ns,
            end_ns: (end != u64::MAX).then_some(end),
            preempted,
        })
    }

    /// The stack numbers of thread `tid`'s samples between `start_ns` and `end_ns`.
    pub fn samples(&self, tid: u32, start_ns: u64, end_ns: u64) -> impl Iterator<Item = u32> + '_ {
        let s = self.threads.get(&tid).map_or(&[][..], |t| {
            let lo = t.samples.partition_point(|s| s.time_ns < start_ns);
            let hi = t.samples.partition_point(|s| s.time_ns < end_ns);
            &t.samples[lo..hi.max(lo)]
        });
        s.iter().map(|s| s.stack)
    }

    /// The threads with held samples or switches, by id.
    pub fn thread_ids(&self) -> Vec<u32> {
        let mut tids: Vec<u32> = self.threads.keys().copied().collect();
        tids.sort_unstable();
        tids
    }

    /// Thread `tid`'s held CPU samples, by time: `(time_ns, stack number)`.
    pub fn thread_samples(&self, tid: u32) -> impl ExactSizeIterator<Item = (u64, u32)> + '_ {
        let s = self.threads.get(&tid).map_or(&[][..], |t| &t.samples[..]);
        s.iter().map(|s| (s.time_ns, s.stack))
    }

    /// The places among [`SystemContext::thread_samples`] of thread `tid`'s samples between
    /// `start_ns` and `end_ns`.
    pub fn sample_places(&self, tid: u32, start_ns: u64, end_ns: u64) -> std::ops::Range<usize> {
        let Some(t) = self.threads.get(&tid) else { return 0..0 };
        let lo = t.samples.partition_point(|s| s.time_ns < start_ns);
        let hi = t.samples.partition_point(|s| s.time_ns < end_ns);
        lo..hi.max(lo)
    }

    /// Every held CPU sample's thread and stack number, by thread id then time.
    pub fn all_samples(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let mut tids: Vec<u32> = self.threads.keys().copied().collect();
        tids.sort_unstable();
        tids.into_iter().flat_map(move |tid| self.threads[&tid].samples.iter().map(move |s| (tid, s.stack)))
    }

    /// A stack's addresses, innermost first.
    pub fn stack(&self, id: u32) -> &[u64] {
        &self.stacks[id as usize]
    }

    /// Names each stack's leaf: the function its first address is in, the one the compiler made
    /// (`perf report`'s symbol), not a function inlined into it there: a sample in an inlined
    /// `Instant::now` inside `spin` names `spin`, which the scope's own code can be searched
    /// for. The inlined frames are in the flame graph (`flamegraph --samples`). Before it,
    /// [`SystemContext::leaf`] gives `None`.
    pub fn name_leaves(&mut self, symbolizer: &mut Symbolizer) {
        symbolizer.add_mappings(&self.mappings);
        let mut numbers: HashMap<String, u32> = HashMap::new();
        self.functions.clear();
        self.leaves = self
            .stacks
            .iter()
            .map(|stack| {
                let name = symbolizer.leaf_function(stack);
                *numbers.entry(name).or_insert_with_key(|name| {
                    self.functions.push(name.clone());
                    self.functions.len() as u32 - 1
                })
            })
            .collect();
    }

    /// The number of a stack's leaf function, once [`SystemContext::name_leaves`] ran.
    pub fn leaf(&self, stack: u32) -> Option<u32> {
        self.leaves.get(stack as usize).copied()
    }

    /// The name of a leaf function by its number.
    pub fn function_name(&self, function: u32) -> &str {
        &self.functions[function as usize]
    }
}

impl ThreadContext {
    /// The off-CPU time before `t`, and the preempted part of it.
    fn off_before(&self, t: u64) -> (u64, u64) {
        // The intervals that start before `t`.
        let n = self.off.partition_point(|&(s, _, _)| s < t);
        let Some(last) = n.checked_sub(1) else { return (0, 0) };
        let (s, e, p) = self.off[last];
        let (off, pre) = self.before[last];
        let part = t.min(e) - s;
        (off.saturating_add(part), if p { pre.saturating_add(part) } else { pre })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use phosphor_format::system::{Sample, SampleKind, Switch};

    fn switch(time_ns: u64, kind: SwitchKind) -> Switch {
        Switch { tid: 1, time_ns, cpu: 0, kind }
    }

    fn context(switches: Vec<Switch>) -> SystemContext {
        let mut c = SystemContext::default();
        c.add(&SystemBatch { switches, ..SystemBatch::default() });
        c.finish();
        c
    }

    #[test]
    fn off_cpu_time_is_the_overlap_of_the_interval_with_the_off_intervals() {
        use SwitchKind::*;
        // Off 10..60 (blocked) and 80..90 (preempted); given out of order.
        let c = context(vec![switch(80, Preempted), switch(90, In), switch(10, Out), switch(60, In)]);
        let at = |s, e| c.interval(1, s, e);
        assert_eq!(at(0, 100), IntervalContext { off_cpu_ns: 60, preempted_ns: 10, switches: 2 });
        assert_eq!(at(20, 30), IntervalContext { off_cpu_ns: 10, preempted_ns: 0, switches: 0 });
        assert_eq!(at(50, 85), IntervalContext { off_cpu_ns: 15, preempted_ns: 5, switches: 1 });
        assert_eq!(at(60, 80), IntervalContext::default());
        assert_eq!(c.interval(2, 0, 100), IntervalContext::default(), "another thread");
    }

    #[test]
    fn an_interval_left_open_runs_to_the_end_and_a_lone_switch_in_opens_none() {
        use SwitchKind::*;
        let c = context(vec![switch(5, In), switch(50, Out)]);
        assert_eq!(c.interval(1, 0, 100).off_cpu_ns, 50);
        assert_eq!(c.interval(1, 0, 50).off_cpu_ns, 0);
    }

    #[test]
    fn off_cpu_lists_the_intervals_interval_measures() {
        use SwitchKind::*;
        let c = context(vec![
            switch(80, Preempted),
            switch(90, In),
            switch(10, Out),
            switch(60, In),
            switch(95, Out),
        ]);
        let got: Vec<OffCpu> = c.off_cpu(1).collect();
        let off = |start_ns, end_ns, preempted| OffCpu { start_ns, end_ns, preempted };
        assert_eq!(got, [off(10, Some(60), false), off(80, Some(90), true), off(95, None, false)]);
        let total: u64 = got.iter().map(|o| o.end_ns.unwrap_or(200).min(200) - o.start_ns.min(200)).sum();
        assert_eq!(c.interval(1, 0, 200).off_cpu_ns, total);
        assert_eq!(c.off_cpu(2).count(), 0, "another thread");
    }

    #[test]
    fn samples_are_found_by_time_and_stacks_are_kept_once() {
        let mut c = SystemContext::default();
        let sample =
            |t, frames: Vec<u64>| Sample { tid: 1, time_ns: t, cpu: 0, kind: SampleKind::Cpu, frames };
        let batch = SystemBatch {
            samples: vec![sample(30, vec![1, 2]), sample(10, vec![1, 2]), sample(20, vec![3])],
            ..SystemBatch::default()
        };
        c.add(&batch);
        c.finish();
        let got: Vec<u32> = c.samples(1, 10, 30).collect();
        assert_eq!(got, [0, 1]);
        assert_eq!((c.stack(0), c.stack(1)), (&[1, 2][..], &[3][..]));
        c.name_leaves(&mut Symbolizer::offline());
        assert_eq!(c.function_name(c.leaf(1).unwrap()), "0x3");
    }
}

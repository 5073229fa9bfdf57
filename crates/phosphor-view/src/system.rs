//! The system context of a trace (format 1.6's system blocks) as the viewer shows it: per thread,
//! its off-CPU intervals (blocked or preempted, from its context switches) and its CPU samples;
//! the process's heap totals.
//!
//! Read once per trace, in a pass over its system blocks ([`SystemView::read`]), on a blocking
//! thread, and kept with the trace. Times are kept as the system blocks give them
//! (`CLOCK_MONOTONIC` nanoseconds) and placed on the shared timeline when answered.
//!
//! A window's answer is bounded by its pixels, as the slices' are: an interval a pixel wide or
//! more is given whole; narrower ones are given as the pixel they start in, with their count and
//! the pixel's off-CPU and preempted time (two binary searches in prefix sums), and the walk goes
//! on from the pixel's end. So at most `2·px + 2` items, in `O(px · log n)` time. Samples likewise:
//! one alone in its pixel is given as is, several as the pixel with their count.
//!
//! # Memory
//!
//! At most [`MAX_KEPT`] switches and samples are kept, all threads together (16 bytes each);
//! past it the rest are counted and the page says so. At most [`MAX_HEAP`] heap totals and
//! [`MAX_MAPPINGS`] mappings are kept (the rest counted likewise).
//! Stacks are kept once each; a sample's stack is symbolized only when it is asked for
//! (`/api/stack`), at most [`MAX_FRAMES`] frames, through `phosphor_export`'s `Symbolizer`, whose
//! cache is bounded.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::Mutex;

use phosphor_export::symbolize::Symbolizer;
use phosphor_format::file::{Block, ClockKind, Reader};
use phosphor_format::system::{HeapCounter, Mapping, SampleKind, SwitchKind, SystemBatch};
use serde::Serialize;

use crate::api::Samples;

use crate::traces::Place;

/// The most switches and CPU samples kept, all threads together.
pub(crate) const MAX_KEPT: u64 = 1 << 22;
/// The most heap totals kept.
pub(crate) const MAX_HEAP: usize = 1 << 20;
/// The most mappings kept (the symbolizer's).
pub(crate) const MAX_MAPPINGS: usize = 1 << 16;
/// The most frames of a stack symbolized and given.
pub(crate) const MAX_FRAMES: usize = 64;
/// The most distinct stacks `/api/stacks` symbolizes and gives.
pub(crate) const MAX_STACKS: usize = 200;

/// The most addresses of distinct stacks kept (8 bytes each, and as much again while reading).
pub(crate) const MAX_STACK_FRAMES: u64 = 1 << 22;
/// The stack of a sample whose stack was not kept.
const NO_STACK: u32 = u32::MAX;

/// An off-CPU interval, in `CLOCK_MONOTONIC` nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Off {
    start: u64,
    end: u64,
    preempted: bool,
}

/// One thread's system context.
#[derive(Debug, Default)]
struct ThreadSystem {
    /// As read; emptied by `finish`.
    switches: Vec<(u64, SwitchKind)>,
    /// Sorted and disjoint.
    off: Vec<Off>,
    /// Before interval `i`: the off-CPU time of those before it, and of those preempted.
    before: Vec<(u64, u64)>,
    /// `(time, stack)`, sorted by time.
    samples: Vec<(u64, u32)>,
}

/// What a thread's system context says of one of its intervals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Figures {
    pub(crate) off_ns: u64,
    pub(crate) preempted_ns: u64,
    /// Off-CPU intervals that start in it.
    pub(crate) switches: u64,
    pub(crate) samples: u64,
}

/// A trace's system context as the viewer holds it (see the module's documentation).
#[derive(Debug, Default)]
pub(crate) struct SystemView {
    threads: HashMap<u32, ThreadSystem>,
    stacks: Vec<Box<[u64]>>,
    /// Each stack's number while the blocks are read; emptied by `finish`.
    stack_ids: HashMap<Box<[u64]>, u32>,
    /// Addresses in `stacks`.
    frames_kept: u64,
    /// Samples whose stack was not kept ([`MAX_STACK_FRAMES`]).
    stacks_dropped: u64,
    heap: Vec<HeapCounter>,
    mappings: Vec<Mapping>,
    blocks: u64,
    switches: u64,
    samples: u64,
    /// Switches and samples past the cap.
    not_kept: u64,
    /// The most switches and samples kept: [`MAX_KEPT`] when 0 (a test sets a smaller one).
    cap: u64,
    /// Heap totals and mappings past their caps.
    dropped: u64,
    /// Why the system blocks could not all be read.
    read_error: Option<String>,
    symbolizer: Mutex<Option<Symbolizer>>,
}

impl SystemView {
    /// Reads the system blocks of the trace at `path`; an open interval runs to `end_ns` (the
    /// trace's end, `CLOCK_MONOTONIC`). A read error keeps what came before it, and is said.
    pub(crate) fn read(path: &Path, end_ns: u64) -> SystemView {
        let mut v = SystemView::default();
        let reader = File::open(path)
            .map_err(|e| e.to_string())
            .and_then(|f| Reader::new(BufReader::with_capacity(1 << 16, f)).map_err(|e| e.to_string()))
            .map(Reader::read_ahead);
        match reader {
            Ok(mut r) => loop {
                match r.next_block() {
                    Ok(Some(Block::System(batch))) => v.add(batch),
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(e) => {
                        v.read_error = Some(format!("{}: {e}", path.display()));
                        break;
                    }
                }
            },
            Err(e) => v.read_error = Some(format!("{}: {e}", path.display())),
        }
        v.finish(end_ns);
        v
    }

    /// A view that keeps at most `cap` switches and samples.
    #[cfg(test)]
    pub(crate) fn with_cap(cap: u64) -> SystemView {
        SystemView { cap, ..SystemView::default() }
    }

    fn cap(&self) -> u64 {
        if self.cap == 0 {
            MAX_KEPT
        } else {
            self.cap
        }
    }

    fn kept(&self) -> u64 {
        self.switches + self.samples - self.not_kept
    }

    /// Takes in one system block.
    pub(crate) fn add(&mut self, batch: &SystemBatch) {
        self.blocks += 1;
        let room = MAX_MAPPINGS.saturating_sub(self.mappings.len());
        self.mappings.extend_from_slice(&batch.mappings[..batch.mappings.len().min(room)]);
        self.dropped += batch.mappings.len().saturating_sub(room) as u64;
        for h in &batch.heap {
            if self.heap.len() < MAX_HEAP {
                self.heap.push(*h);
            } else {
                self.dropped += 1;
            }
        }
        for w in &batch.switches {
            let full = self.kept() >= self.cap();
            self.switches += 1;
            if full {
                self.not_kept += 1;
                continue;
            }
            self.threads.entry(w.tid).or_default().switches.push((w.time_ns, w.kind));
        }
        for s in batch.samples.iter().filter(|s| s.kind == SampleKind::Cpu) {
            let full = self.kept() >= self.cap();
            self.samples += 1;
            if full {
                self.not_kept += 1;
                continue;
            }
            let frames = &s.frames[..s.frames.len().min(MAX_FRAMES)];
            let stack = match self.stack_ids.get(frames) {
                Some(&id) => id,
                None if self.frames_kept + frames.len() as u64 > MAX_STACK_FRAMES => {
                    self.stacks_dropped += 1;
                    NO_STACK
                }
                None => {
                    self.frames_kept += frames.len() as u64;
                    let id = self.stacks.len() as u32;
                    self.stacks.push(frames.into());
                    self.stack_ids.insert(frames.into(), id);
                    id
                }
            };
            self.threads.entry(s.tid).or_default().samples.push((s.time_ns, stack));
        }
    }

    /// Sorts what was read and makes each thread's off-CPU intervals: from a switch out or a
    /// preemption to the next switch in (an interval still open runs to `end_ns`).
    pub(crate) fn finish(&mut self, end_ns: u64) {
        self.heap.sort_by_key(|h| h.time_ns);
        self.stack_ids = HashMap::new();
        for t in self.threads.values_mut() {
            t.switches.sort_by_key(|s| s.0);
            t.samples.sort_by_key(|s| s.0);
            let mut open: Option<(u64, bool)> = None;
            for &(time, kind) in &t.switches {
                match kind {
                    SwitchKind::Out | SwitchKind::Preempted => {
                        open.get_or_insert((time, kind == SwitchKind::Preempted));
                    }
                    SwitchKind::In => {
                        if let Some((start, preempted)) = open.take() {
                            t.off.push(Off { start, end: time, preempted });
                        }
                    }
                }
            }
            if let Some((start, preempted)) = open {
                t.off.push(Off { start, end: end_ns.max(start), preempted });
            }
            t.switches = Vec::new();
            let (mut off, mut pre) = (0u64, 0u64);
            t.before = t
                .off
                .iter()
                .map(|o| {
                    let b = (off, pre);
                    off = off.saturating_add(o.end - o.start);
                    if o.preempted {
                        pre = pre.saturating_add(o.end - o.start);
                    }
                    b
                })
                .collect();
        }
    }

    /// Whether the trace had any system block.
    pub(crate) fn is_empty(&self) -> bool {
        self.blocks == 0
    }

    /// `/api/system`'s answer: what was read, and what was dropped; `threads`: those of `listed`
    /// (the threads the page shows) that have switches or samples.
    pub(crate) fn summary(&self, place: &Place, listed: &[u32]) -> SystemSummary {
        let tids: Vec<u32> = listed.iter().copied().filter(|t| self.threads.contains_key(t)).collect();
        SystemSummary {
            present: !self.is_empty(),
            blocks: self.blocks,
            switches: self.switches,
            samples: self.samples,
            intervals: self.threads.values().map(|t| t.off.len()).sum::<usize>(),
            heap: self.heap.len(),
            dropped: self.not_kept + self.dropped,
            stacks_dropped: self.stacks_dropped,
            max_kept: self.cap(),
            read_error: self.read_error.clone(),
            threads: tids,
            heap_range: self.heap_range(place),
        }
    }

    /// The first and last heap total's time and the largest live bytes, for the counter track.
    fn heap_range(&self, place: &Place) -> Option<(i64, i64, u64)> {
        let (first, last) = (self.heap.first()?, self.heap.last()?);
        let max = self.heap.iter().map(live_bytes).max().unwrap_or(0);
        Some((view_ns(place, first.time_ns), view_ns(place, last.time_ns), max))
    }

    /// Thread `tid`'s off-CPU time between `start` and `end` (`CLOCK_MONOTONIC`), and the
    /// preempted part, by prefix sums.
    fn off_between(t: &ThreadSystem, start: u64, end: u64) -> (u64, u64) {
        let before = |at: u64| {
            let n = t.off.partition_point(|o| o.start < at);
            let Some(last) = n.checked_sub(1) else { return (0, 0) };
            let o = t.off[last];
            let (off, pre) = t.before[last];
            let part = at.min(o.end) - o.start;
            (off.saturating_add(part), if o.preempted { pre.saturating_add(part) } else { pre })
        };
        let (a, b) = (before(start), before(end.max(start)));
        (b.0 - a.0, b.1 - a.1)
    }

    /// What thread `tid`'s context says of `start..end` (`CLOCK_MONOTONIC`).
    pub(crate) fn figures(&self, tid: u32, start: u64, end: u64) -> Figures {
        let Some(t) = self.threads.get(&tid) else { return Figures::default() };
        let (off_ns, preempted_ns) = Self::off_between(t, start, end);
        let starts = |at: u64| t.off.partition_point(|o| o.start < at);
        let samples = |at: u64| t.samples.partition_point(|s| s.0 < at);
        Figures {
            off_ns,
            preempted_ns,
            switches: starts(end).saturating_sub(starts(start)) as u64,
            samples: samples(end).saturating_sub(samples(start)) as u64,
        }
    }

    /// `/api/context`'s answer: thread `tid`'s off-CPU intervals and samples in the window
    /// `start..end` of the shared timeline, `px` pixels wide (see the module's documentation).
    /// Intervals: `[start, end, kind]` (kind 0 blocked, 1 preempted) or `[start, end, -count,
    /// off_ns, preempted_ns]` for a pixel of narrower ones; samples: `[time, place]` or `[start,
    /// end, -count, first place]`.
    pub(crate) fn window(&self, place: &Place, tid: u32, start: i64, end: i64, px: u32) -> ContextAnswer {
        let Some(t) = self.threads.get(&tid) else {
            return ContextAnswer { intervals: vec![], samples: vec![] };
        };
        let (w0, w1) = (mono_ns(place, start), mono_ns(place, end).max(mono_ns(place, start)));
        // A pixel, rounded up so that `px` of them cover the window.
        let pixel = (w1 - w0).div_ceil(u64::from(px.max(1))).max(1);
        let column = |at: u64| {
            let c0 = w0 + (at.saturating_sub(w0)) / pixel * pixel;
            (c0, c0.saturating_add(pixel))
        };
        let v = |mono: u64| view_ns(place, mono);

        let mut intervals = Vec::new();
        let mut i = t.off.partition_point(|o| o.end <= w0);
        let mut from = w0;
        while i < t.off.len() && t.off[i].start < w1 {
            let o = t.off[i];
            let s = o.start.max(from);
            if o.end.min(w1).saturating_sub(s) >= pixel {
                intervals.push(Interval::Whole(v(s), v(o.end), u8::from(o.preempted)));
                from = o.end;
                i += 1;
                continue;
            }
            let (c0, c1) = column(s);
            let (off, pre) = Self::off_between(t, c0, c1);
            // The intervals that end in the pixel, and one that runs on past it.
            let j = t.off.partition_point(|o| o.end <= c1);
            let count = j - i + usize::from(j < t.off.len() && t.off[j].start < c1);
            intervals.push(Interval::Merged(v(c0), v(c1), -(count as i64), off, pre));
            from = c1;
            i = j;
        }

        let mut samples = Vec::new();
        let mut i = t.samples.partition_point(|s| s.0 < w0);
        while i < t.samples.len() && t.samples[i].0 < w1 {
            let (c0, c1) = column(t.samples[i].0);
            let j = i + t.samples[i..].partition_point(|s| s.0 < c1);
            if j - i == 1 {
                samples.push(SampleItem::One(v(t.samples[i].0), i));
            } else {
                samples.push(SampleItem::Merged(v(c0), v(c1), -((j - i) as i64), i));
            }
            i = j;
        }
        ContextAnswer { intervals, samples }
    }

    /// `/api/heap`'s answer: the live heap bytes in a window, a pixel at a time, as the counters'
    /// samples are: `[start, end, count, min, max, last]`.
    pub(crate) fn heap_window(&self, place: &Place, start: i64, end: i64, px: u32) -> Samples<HeapPixel> {
        let (w0, w1) = (mono_ns(place, start), mono_ns(place, end).max(mono_ns(place, start)));
        let pixel = (w1 - w0).div_ceil(u64::from(px.max(1))).max(1);
        let h = &self.heap;
        let mut out = Vec::new();
        // The total before the window holds at its start.
        let mut i = h.partition_point(|c| c.time_ns < w0).saturating_sub(1);
        while i < h.len() && h[i].time_ns < w1 {
            let c0 = w0 + h[i].time_ns.saturating_sub(w0) / pixel * pixel;
            let c1 = c0.saturating_add(pixel);
            let j = i + 1 + h[i + 1..].partition_point(|c| c.time_ns < c1);
            let values = h[i..j].iter().map(live_bytes);
            let (min, max) = values.clone().fold((u64::MAX, 0), |(lo, hi), b| (lo.min(b), hi.max(b)));
            let last = live_bytes(&h[j - 1]);
            out.push((view_ns(place, c0.max(h[i].time_ns)), view_ns(place, c1), j - i, min, max, last));
            i = j;
        }
        Samples { samples: out }
    }

    /// `/api/stack`'s answer: sample `place` of thread `tid`, its stack symbolized (innermost
    /// first, inlined frames included), or `None` if there is no such sample.
    pub(crate) fn stack(&self, place: &Place, tid: u32, at: usize) -> Option<StackAnswer> {
        let &(time, stack) = self.threads.get(&tid)?.samples.get(at)?;
        let (frames, warnings) = self.symbolized([stack], |_, frames| frames);
        let frames = frames.into_iter().next().unwrap_or_default();
        Some(StackAnswer { time_ns: view_ns(place, time), frames, warnings })
    }

    /// `/api/stacks`' answer: thread `tid`'s CPU samples from `start` to `end` (the shared
    /// timeline; those at `end` left out, as a scope's figures count them) by call stack, the
    /// stacks symbolized to their functions and merged where those are the same, most samples
    /// first; past [`MAX_STACKS`] distinct stacks, the rest are counted in `more`.
    pub(crate) fn stacks(&self, place: &Place, tid: u32, start: i64, end: i64) -> StacksAnswer {
        let Some(t) = self.threads.get(&tid) else { return StacksAnswer::default() };
        let (s, e) = (mono_ns(place, start), mono_ns(place, end.max(start)));
        let (lo, hi) = (t.samples.partition_point(|x| x.0 < s), t.samples.partition_point(|x| x.0 < e));
        let mut counts: HashMap<u32, u64> = HashMap::new();
        for &(_, stack) in &t.samples[lo..hi.max(lo)] {
            *counts.entry(stack).or_default() += 1;
        }
        let mut by_count: Vec<(u32, u64)> = counts.into_iter().collect();
        by_count.sort_unstable_by_key(|&(stack, n)| (std::cmp::Reverse(n), stack));
        let more = by_count.iter().skip(MAX_STACKS).map(|&(_, n)| n).sum();
        by_count.truncate(MAX_STACKS);
        let count_of: HashMap<u32, u64> = by_count.iter().copied().collect();
        let (named, warnings) = self.symbolized(by_count.iter().map(|&(stack, _)| stack), |stack, frames| {
            (count_of[&stack], frames.into_iter().map(|f| f.function).collect::<Vec<_>>())
        });
        // Stacks of other addresses in the same functions are one stack here.
        let mut merged: Vec<SampleStack> = Vec::new();
        let mut at: HashMap<Vec<String>, usize> = HashMap::new();
        for (count, frames) in named {
            match at.get(&frames) {
                Some(&k) => merged[k].count += count,
                None => {
                    at.insert(frames.clone(), merged.len());
                    merged.push(SampleStack { count, frames });
                }
            }
        }
        merged.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.frames.cmp(&b.frames)));
        StacksAnswer { samples: (hi.max(lo) - lo) as u64, stacks: merged, more, warnings }
    }

    /// `stacks` symbolized (innermost first, inlined frames included), each given to `each` with
    /// its number; and the symbolizer's warnings.
    fn symbolized<T>(
        &self,
        stacks: impl IntoIterator<Item = u32>,
        mut each: impl FnMut(u32, Vec<Frame>) -> T,
    ) -> (Vec<T>, Vec<String>) {
        let mut guard = self.symbolizer.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let symbolizer = guard.get_or_insert_with(|| {
            let mut s = Symbolizer::new();
            s.add_mappings(&self.mappings);
            s
        });
        let mut out = Vec::new();
        for stack in stacks {
            let mut frames = Vec::new();
            let addresses = self.stacks.get(stack as usize).map_or(&[][..], |s| &s[..]);
            for (k, &address) in addresses.iter().enumerate() {
                for f in symbolizer.frames(address, k > 0).iter() {
                    frames.push(Frame {
                        function: f.function.clone(),
                        file: f.file.clone(),
                        line: f.line,
                        inlined: f.inlined,
                    });
                }
            }
            out.push(each(stack, frames));
        }
        (out, symbolizer.warnings().to_vec())
    }
}

/// `/api/stacks`' answer: a thread's CPU samples in a window, by call stack.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct StacksAnswer {
    /// The samples in the window.
    samples: u64,
    /// Their call stacks, most samples first.
    stacks: Vec<SampleStack>,
    /// The samples of the stacks past [`MAX_STACKS`], not given.
    more: u64,
    /// The symbolizer's warnings (a missing file, a build id that differs).
    warnings: Vec<String>,
}

/// A call stack and how many samples had it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SampleStack {
    count: u64,
    /// Its functions, innermost first.
    frames: Vec<String>,
}

/// `/api/system`'s answer.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SystemSummary {
    /// Whether the trace has system context (format 1.6).
    present: bool,
    /// Its system blocks.
    blocks: u64,
    /// The context switches kept.
    switches: u64,
    /// The CPU samples kept.
    samples: u64,
    /// The off-CPU intervals worked out from the switches.
    intervals: usize,
    /// The heap totals kept.
    heap: usize,
    /// What was past the caps and not kept (switches, samples, heap totals, mappings).
    dropped: u64,
    /// The stack addresses past the cap, not kept.
    stacks_dropped: u64,
    /// The cap on each kind kept.
    max_kept: u64,
    /// Where reading the system blocks stopped, if it did.
    read_error: Option<String>,
    /// The listed threads that have switches or samples.
    threads: Vec<u32>,
    /// The first and last heap total's time, and the largest live bytes.
    heap_range: Option<(i64, i64, u64)>,
}

/// `/api/context`'s answer.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ContextAnswer {
    /// The thread's off-CPU intervals in the window.
    intervals: Vec<Interval>,
    /// The thread's CPU samples in the window.
    samples: Vec<SampleItem>,
}

/// An off-CPU interval: `[start, end, preempted]`, or a pixel of narrower ones: `[start, end,
/// -count, off_ns, preempted_ns]`.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Interval {
    /// `[start, end, preempted]`: an interval a pixel wide or more (`preempted` 1: runnable, taken off the CPU; 0: blocked).
    Whole(i64, i64, u8),
    /// `[start, end, -count, off_ns, preempted_ns]`: a pixel of narrower ones.
    Merged(i64, i64, i64, u64, u64),
}

/// A CPU sample: `[time, place]`, or a pixel of several: `[start, end, -count, first place]`.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum SampleItem {
    /// `[time, index]`: a sample alone in its pixel; `index` its place among its thread's, for `/api/stack`.
    One(i64, usize),
    /// `[start, end, -count, first]`: several in a pixel.
    Merged(i64, i64, i64, usize),
}

/// The live heap bytes in a pixel: `[start, end, count, min, max, last]`.
pub(crate) type HeapPixel = (i64, i64, usize, u64, u64, u64);

/// `/api/stack`'s answer.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct StackAnswer {
    /// The sample's time, on the shared timeline.
    time_ns: i64,
    /// Its call stack, innermost frame first.
    frames: Vec<Frame>,
    /// The symbolizer's warnings (a missing file, a build id that differs).
    warnings: Vec<String>,
}

/// A symbolized frame, innermost first.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Frame {
    /// The function's name.
    function: String,
    /// Its source file; null without debug information.
    file: Option<String>,
    /// Its line; null without debug information.
    line: Option<u32>,
    /// Whether the frame was inlined into the next one out.
    inlined: bool,
}

/// A heap total's live bytes.
fn live_bytes(h: &HeapCounter) -> u64 {
    h.alloc_bytes.saturating_sub(h.freed_bytes)
}

/// `CLOCK_MONOTONIC` time `mono` on the shared timeline: as the trace's ticks are placed, since
/// a monotonic or wall clock's ticks are that clock's nanoseconds (`ClockInfo::to_ns`).
pub(crate) fn view_ns(place: &Place, mono: u64) -> i64 {
    let c = place.clock();
    match c.kind {
        ClockKind::Tsc => {
            let since = i128::from(mono) - i128::from(c.origin_monotonic_ns);
            (since + i128::from(place.offset_ns())).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
        }
        ClockKind::Monotonic | ClockKind::Realtime => place.ns(mono),
    }
}

/// The `CLOCK_MONOTONIC` time at `ns` on the shared timeline (the inverse of [`view_ns`]).
pub(crate) fn mono_ns(place: &Place, ns: i64) -> u64 {
    let c = place.clock();
    match c.kind {
        ClockKind::Tsc => {
            let since = i128::from(ns) - i128::from(place.offset_ns());
            (i128::from(c.origin_monotonic_ns) + since).clamp(0, i128::from(u64::MAX)) as u64
        }
        ClockKind::Monotonic | ClockKind::Realtime => place.ticks(ns, false),
    }
}

//! Live mode: the model of a trace that is still being written, fed block by block as
//! `phosphor record` writes it, and the window queries over it.
//!
//! # Where the data comes from
//!
//! The recorder writes each connection's file whole block by whole block and flushes at least
//! every 256 KiB; a thread per live trace ([`follow`]) tails that file with `phosphor_format`'s
//! `Reader` over a `Read` that waits at the end of the file until the connection has ended.
//! Tailing the file rather than taking blocks from the recorder through a channel keeps the
//! recorder exactly as it is (it never waits for, nor even knows the pace of, the viewer), keeps
//! the file the one source of truth (the model sees what `phosphor stats` will read), and lets a
//! lagging viewer skip: when the reader is more than [`LiveOptions::skip_behind`] bytes behind the file's end,
//! chunks are read past without their events being decoded (counted as `skipped`) until it is
//! within [`LiveOptions::resume_behind`]; table blocks (strings, callsites, thread names) are always taken in.
//!
//! # The model
//!
//! Per thread: its finished slices in one list sorted by end (the order they finish in), each with
//! its level; the begins still open (a stack, shown as slices running to the thread's newest
//! event); its points (instants, logs, problems) by time. Per counter, its samples by time; per
//! async name, lanes of slices that never overlap (begins and ends paired by the model's rule,
//! `phosphor_model::asyncs`, as the index pairs them). A begin's level is its place in the stack. An
//! end closes the innermost open begin of its thread whatever its name (the rule of
//! [`phosphor_model::nesting`], as the index applies it), the slice flagged
//! [`slice_flags::WRONG_END`] if the names differ; with no begin open it is a point. A complete
//! event arrives at its end, after the slices it holds: its level counts the begins open when it
//! arrives (everything recorded while a begin is open is in it), and when it arrives every slice
//! already there inside it goes one level down (each slice moves once per complete event around
//! it). Slices keep their raw clock ticks, but which holds which is decided on
//! [`Timeline`] times (nanoseconds rounded per timestamp, as `phosphor stats` and the outputs
//! nest them: two slices whose ends are one nanosecond there are equal, the earlier recorded
//! inside the later), and durations are measured there (rounded end less rounded start). Lock
//! events are named by [`phosphor_model::names::lock_name`]: `NAME (wait)` / `NAME (held)`.
//! A window query walks the slices that end in
//! or after the window in end order, placing each at its level (one further down, marked
//! interlaced, where it would overlap the previous slice of that level), and merges slices
//! narrower than a pixel as `query.rs` does: at most about two items a pixel and level.
//!
//! Memory is bounded by [`LiveOptions::max_records`]: past it, the oldest records (by end, or by
//! time) of every track are dropped down to 7/8 of it, counted in `dropped`, and the time before
//! which data was dropped is kept (`horizon`).
//!
//! A record's number says where its event is in the file (`details.rs`: its chunk's number and
//! its record's place there); the model keeps each chunk's offset (8 bytes a chunk, from the
//! oldest chunk a record held comes from), so that a slice's or a point's arguments are read
//! again from the file while it is recorded. Search and statistics scan what the model holds
//! (`scan.rs`, `stats.rs`).

use std::collections::VecDeque;
use std::time::Duration;

use phosphor_format::ClockInfo;
use phosphor_model::asyncs::{AsyncKey, Matched, Pairing};
use phosphor_model::timeline::Timeline;
use rustc_hash::FxHashMap as HashMap;

use crate::records::{point_kinds, slice_flags};

pub(crate) mod api;
mod details;
mod follow;
pub(crate) mod scan;
pub(crate) mod stats;
mod window;

pub use follow::{follow, Live, LiveHandle};

/// How often a reader at the end of a growing file looks again.
const POLL: Duration = Duration::from_millis(25);
/// The deepest level kept; deeper slices are drawn at this level.
const MAX_DEPTH: u16 = 1024;
/// Begins open at once on a thread; a deeper begin is not kept (counted as refused).
const MAX_OPEN: usize = 4096;
/// Begins open at once over all threads; past it, likewise.
const MAX_OPEN_TOTAL: usize = 1 << 18;
/// Async slices open at once in a trace; more are not kept (counted as refused).
const MAX_OPEN_ASYNC: usize = 1 << 16;
/// Lanes of an async track; a slice that would need another is not kept (counted as refused).
const MAX_LANES: usize = 256;
/// Threads, counters and async tracks of a trace; events of more are not kept (refused).
const MAX_TRACKS: usize = 1 << 14;
/// Distinct names of a trace, and their bytes; past either, new names are all called
/// [`TOO_MANY_NAMES`].
const MAX_NAMES: usize = 1 << 20;
const MAX_NAME_BYTES: usize = 64 << 20;
const TOO_MANY_NAMES: &str = "(more names than the live view keeps)";

/// How a live model is kept.
#[derive(Clone, Copy, Debug)]
pub struct LiveOptions {
    /// The most records (slices, points, samples) one live trace keeps; past it the oldest are
    /// dropped. About 32 bytes each.
    pub max_records: usize,
    /// A reader this many bytes behind the file's end stops decoding events (it skips chunks,
    /// counting their events)...
    pub skip_behind: u64,
    /// ...until it is back within this many.
    pub resume_behind: u64,
}

impl Default for LiveOptions {
    fn default() -> LiveOptions {
        LiveOptions { max_records: 2_000_000, skip_behind: 64 << 20, resume_behind: 8 << 20 }
    }
}

/// One event of a chunk, decoded and named: what the model takes in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Ev {
    /// A begin on thread `tid`.
    Begin { tid: u32, ts: u64, name: u32 },
    /// An end on thread `tid`.
    End { tid: u32, ts: u64, name: u32 },
    /// A slice known whole at its end: a complete event or a lock's wait or hold (`flags`).
    Slice { tid: u32, start: u64, end: u64, name: u32, flags: u8 },
    /// An instant, a log, a saturation marker or lost chunks ([`point_kinds`]).
    Point { tid: u32, ts: u64, name: u32, kind: u8 },
    /// A counter's value; the counter is named `name`.
    Sample { tid: u32, ts: u64, name: u32, value: f64 },
    /// An async begin (`begin`) or end of id `id`.
    Async { tid: u32, ts: u64, name: u32, id: u64, begin: bool },
}

/// Each distinct name once, numbered in the order first seen; the names added since the last
/// [`Names::take_new`] go to the model with the events that use them.
#[derive(Debug, Default)]
pub(crate) struct Names {
    numbers: HashMap<Box<str>, u32>,
    new: Vec<Box<str>>,
    bytes: usize,
}

impl Names {
    pub(crate) fn number(&mut self, name: &str) -> u32 {
        if let Some(&n) = self.numbers.get(name) {
            return n;
        }
        if self.numbers.len() >= MAX_NAMES || self.bytes + name.len() > MAX_NAME_BYTES {
            return self.number_unbounded(TOO_MANY_NAMES);
        }
        self.number_unbounded(name)
    }

    fn number_unbounded(&mut self, name: &str) -> u32 {
        if let Some(&n) = self.numbers.get(name) {
            return n;
        }
        let n = self.numbers.len() as u32;
        self.bytes += name.len();
        self.numbers.insert(name.into(), n);
        self.new.push(name.into());
        n
    }

    pub(crate) fn take_new(&mut self) -> Vec<Box<str>> {
        std::mem::take(&mut self.new)
    }
}

/// A slice as the model keeps it (32 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LSlice {
    start: u64,
    end: u64,
    /// Its number in this live trace: where its event (a begin's, for a slice of a begin and an
    /// end) is in the file (`details::pack`).
    id: u64,
    name: u32,
    depth: u16,
    flags: u8,
}

#[derive(Clone, Copy, Debug)]
struct LPoint {
    ts: u64,
    id: u64,
    name: u32,
    kind: u8,
}

#[derive(Clone, Copy, Debug)]
struct Open {
    start: u64,
    id: u64,
    name: u32,
}

#[derive(Debug, Default)]
struct Thread {
    tid: u32,
    name: Option<String>,
    /// Finished slices, sorted by end.
    slices: VecDeque<LSlice>,
    open: Vec<Open>,
    /// Begins not kept (over [`MAX_OPEN`] or [`MAX_OPEN_TOTAL`]) above `open`: the next ends
    /// close them, and are not kept either.
    over: usize,
    /// Points, sorted by time.
    points: VecDeque<LPoint>,
    /// The newest time of its events.
    last: u64,
    /// The deepest level it has had, plus one.
    levels: usize,
    /// The longest duration of its finished slices: none ending later than this after a
    /// window's end starts in it.
    longest: u64,
}

#[derive(Debug)]
struct Counter {
    name: u32,
    /// (time, value), sorted by time.
    samples: VecDeque<(u64, f64)>,
}

#[derive(Debug)]
struct AsyncTrack {
    name: u32,
    /// Each lane's slices, sorted by end and by start (they never overlap).
    lanes: Vec<VecDeque<LSlice>>,
}

/// What a live trace holds: see the module's documentation.
#[derive(Debug)]
pub struct LiveModel {
    limit: usize,
    /// The times nesting is decided and durations measured on.
    timeline: Timeline,
    names: Vec<Box<str>>,
    /// By tid.
    threads: Vec<Thread>,
    counters: Vec<Counter>,
    counter_of: HashMap<u32, usize>,
    asyncs: Vec<AsyncTrack>,
    async_of: HashMap<u32, usize>,
    /// Async begins and ends waiting for their other half (the model's pairing, by name and id),
    /// each with its record's number.
    open_asyncs: Pairing<u64>,
    /// The file offset of each chunk from number `first_chunk` on.
    chunks: VecDeque<u64>,
    first_chunk: u64,
    retained: usize,
    /// Begins open, over all threads.
    open: usize,
    /// Records dropped to keep within the limit.
    pub dropped: u64,
    /// Events not kept: over a bound on open begins, lanes or tracks.
    pub refused: u64,
    /// Events read past without decoding while the reader lagged.
    pub skipped: u64,
    /// Events taken in.
    pub events: u64,
    /// Records ending before this time (ticks) may have been dropped.
    pub horizon: Option<u64>,
    span: Option<(u64, u64)>,
    #[cfg(test)]
    next_id: u64,
}

impl LiveModel {
    /// An empty model keeping at most `options.max_records` records.
    pub fn new(options: LiveOptions) -> LiveModel {
        LiveModel {
            limit: options.max_records,
            timeline: Timeline::new(&nanoseconds()),
            names: Vec::new(),
            threads: Vec::new(),
            counters: Vec::new(),
            counter_of: HashMap::default(),
            asyncs: Vec::new(),
            async_of: HashMap::default(),
            open_asyncs: Pairing::new(MAX_OPEN_ASYNC),
            chunks: VecDeque::new(),
            first_chunk: 0,
            retained: 0,
            open: 0,
            dropped: 0,
            refused: 0,
            skipped: 0,
            events: 0,
            horizon: None,
            span: None,
            #[cfg(test)]
            next_id: 0,
        }
    }

    /// Name number `n`.
    pub fn name(&self, n: u32) -> &str {
        self.names.get(n as usize).map_or("", |s| s)
    }

    /// The most records it keeps.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Records held.
    pub fn retained(&self) -> usize {
        self.retained
    }

    /// The first and last time of the events taken in (ticks).
    pub fn span(&self) -> Option<(u64, u64)> {
        self.span
    }

    /// Sets the clock the trace was recorded on (its file's header): nesting and durations go by
    /// its [`Timeline`].
    pub(crate) fn set_clock(&mut self, clock: &ClockInfo) {
        self.timeline = Timeline::new(clock);
    }

    /// The duration of `s` (raw ticks) in nanoseconds as `phosphor stats` measures it: its end
    /// less its start, each rounded to the nanosecond.
    pub fn duration_ns(&self, s: &crate::records::Slice) -> u64 {
        self.timeline.time(s.end).saturating_sub(self.timeline.time(s.start))
    }

    /// Takes in the names first used by the events that follow.
    pub(crate) fn add_names(&mut self, names: Vec<Box<str>>) {
        self.names.extend(names);
    }

    /// Names thread `tid` (once it is known).
    pub(crate) fn name_thread(&mut self, tid: u32, name: String) {
        if let Some(t) = self.thread(tid) {
            t.name = Some(name);
        }
    }

    /// Forgets the open begins and async slices: after a skip, their ends may be gone.
    pub(crate) fn forget_open(&mut self) {
        for t in &mut self.threads {
            t.open.clear();
            t.over = 0;
        }
        self.open = 0;
        self.open_asyncs.forget();
    }

    /// The thread `tid`, made if new (`None` past [`MAX_TRACKS`]).
    fn thread(&mut self, tid: u32) -> Option<&mut Thread> {
        thread_of(&mut self.threads, tid)
    }

    #[cfg(test)]
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }

    /// Notes that chunk number `n` of the file is at `offset` (chunks come in order).
    pub(crate) fn add_chunk(&mut self, n: u64, offset: u64) {
        if self.chunks.is_empty() {
            self.first_chunk = n;
        }
        if n == self.first_chunk + self.chunks.len() as u64 {
            self.chunks.push_back(offset);
        }
    }

    /// The file offset of chunk number `n`, if the model still keeps it.
    pub(crate) fn chunk_offset(&self, n: u64) -> Option<u64> {
        self.chunks.get(usize::try_from(n.checked_sub(self.first_chunk)?).ok()?).copied()
    }

    /// Takes in one event, numbered in the order taken (for tests), then keeps within the limit.
    #[cfg(test)]
    pub(crate) fn take(&mut self, ev: Ev) {
        let id = self.id();
        self.take_at(ev, id);
    }

    /// Takes in one event whose record number is `id` (`details::pack`), then keeps within the
    /// limit.
    pub(crate) fn take_at(&mut self, ev: Ev, id: u64) {
        // A mark of lost chunks is no event of the trace's.
        if !matches!(ev, Ev::Point { kind: point_kinds::LOST_CHUNKS, .. }) {
            self.events += 1;
        }
        let (lo, hi) = match ev {
            Ev::Slice { start, end, .. } => (start, end),
            Ev::Begin { ts, .. }
            | Ev::End { ts, .. }
            | Ev::Point { ts, .. }
            | Ev::Sample { ts, .. }
            | Ev::Async { ts, .. } => (ts, ts),
        };
        self.span = Some(self.span.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        let kept = match ev {
            Ev::Begin { tid, ts, name } => self.begin(tid, ts, name, id),
            Ev::End { tid, ts, name } => self.end(tid, ts, name, id),
            Ev::Slice { tid, start, end, name, flags } => match thread_of(&mut self.threads, tid) {
                Some(t) => {
                    t.last = t.last.max(end);
                    let s = LSlice { start, end: end.max(start), id, name, depth: 0, flags };
                    insert_complete(t, &self.timeline, s);
                    self.retained += 1;
                    true
                }
                None => false,
            },
            Ev::Point { tid, ts, name, kind } => match self.thread(tid) {
                Some(t) => {
                    t.last = t.last.max(ts);
                    insert_sorted(&mut t.points, LPoint { ts, id, name, kind }, |p| p.ts);
                    self.retained += 1;
                    true
                }
                None => false,
            },
            Ev::Sample { tid, ts, name, value } => self.sample(tid, ts, name, value),
            Ev::Async { tid, ts, name, id: key, begin } => self.async_event(tid, ts, name, key, begin, id),
        };
        if !kept {
            self.refused += 1;
        }
        if self.retained > self.limit {
            self.evict();
        }
    }

    fn begin(&mut self, tid: u32, ts: u64, name: u32, id: u64) -> bool {
        let full = self.open >= MAX_OPEN_TOTAL;
        let Some(t) = self.thread(tid) else { return false };
        t.last = t.last.max(ts);
        if full || t.open.len() >= MAX_OPEN {
            t.over += 1;
            return false;
        }
        t.open.push(Open { start: ts, id, name });
        t.levels = t.levels.max(t.open.len());
        self.open += 1;
        true
    }

    /// An end: closes the innermost open begin of its thread whatever its name (flagged
    /// [`slice_flags::WRONG_END`] if its name is not the end's), or is a point if none is open.
    fn end(&mut self, tid: u32, ts: u64, name: u32, id: u64) -> bool {
        let Some(t) = self.thread(tid) else { return false };
        t.last = t.last.max(ts);
        if t.over > 0 {
            // It closes a begin that was not kept.
            t.over -= 1;
            return false;
        }
        let Some(o) = t.open.pop() else {
            let p = LPoint { ts, id, name, kind: point_kinds::END_WITHOUT_BEGIN };
            insert_sorted(&mut t.points, p, |p| p.ts);
            self.retained += 1;
            return true;
        };
        let flags =
            if o.name == name { slice_flags::SCOPE } else { slice_flags::SCOPE | slice_flags::WRONG_END };
        let depth = t.open.len().min(usize::from(MAX_DEPTH)) as u16;
        let s = LSlice { start: o.start, end: ts.max(o.start), id: o.id, name: o.name, depth, flags };
        t.longest = t.longest.max(s.end - s.start);
        insert_sorted(&mut t.slices, s, |s| s.end);
        self.retained += 1;
        self.open = self.open.saturating_sub(1);
        true
    }

    fn sample(&mut self, tid: u32, ts: u64, name: u32, value: f64) -> bool {
        if let Some(t) = self.thread(tid) {
            t.last = t.last.max(ts);
        }
        let next = self.counters.len();
        let c = *self.counter_of.entry(name).or_insert(next);
        if c == next {
            if next >= MAX_TRACKS {
                self.counter_of.remove(&name);
                return false;
            }
            self.counters.push(Counter { name, samples: VecDeque::new() });
        }
        insert_sorted(&mut self.counters[c].samples, (ts, value), |s| s.0);
        self.retained += 1;
        true
    }

    /// An async begin or end, paired by the model's rule (`phosphor_model::asyncs`): a pair is
    /// kept; a half given up (a second one of its kind) is forgotten, one past the cap refused.
    fn async_event(&mut self, tid: u32, ts: u64, name: u32, key: u64, begin: bool, id: u64) -> bool {
        if let Some(t) = self.thread(tid) {
            t.last = t.last.max(ts);
        }
        let mut pair = None;
        let overflowed = self.open_asyncs.overflowed();
        self.open_asyncs.add(AsyncKey { name, id: key }, begin, ts, id, &mut |_, m| {
            if let Matched::Pair { begin, end, .. } = m {
                pair = Some((begin.ts, end.ts, begin.payload));
            }
        });
        // Numbered by its begin's event, as an index points at its begin's.
        let Some((start, end, id)) = pair else { return self.open_asyncs.overflowed() == overflowed };
        let next = self.asyncs.len();
        let a = *self.async_of.entry(name).or_insert(next);
        if a == next {
            if next >= MAX_TRACKS {
                self.async_of.remove(&name);
                return false;
            }
            self.asyncs.push(AsyncTrack { name, lanes: Vec::new() });
        }
        let s = LSlice { start, end: end.max(start), id, name, depth: 0, flags: slice_flags::SCOPE };
        let lanes = &mut self.asyncs[a].lanes;
        // The first lane with room for it: slices come about in end order, so mostly at a
        // lane's back, but an end read late (from another thread's chunk) fills a gap.
        let fits = |l: &VecDeque<LSlice>| {
            let at = l.partition_point(|x| x.end <= s.start);
            l.get(at).is_none_or(|next| next.start >= s.end).then_some(at)
        };
        match lanes.iter().enumerate().find_map(|(k, l)| Some((k, fits(l)?))) {
            Some((lane, at)) => lanes[lane].insert(at, s),
            None if lanes.len() < MAX_LANES => lanes.push(VecDeque::from([s])),
            None => return false,
        }
        self.retained += 1;
        true
    }

    /// Drops the oldest records, down to 7/8 of the limit: every record ending before a cut
    /// chosen by binary search on time, so that all tracks keep the same stretch of time.
    fn evict(&mut self) {
        let target = (self.retained - self.limit + self.limit / 8) as u64;
        let Some((mut lo, mut hi)) = self.key_range() else { return };
        hi = hi.saturating_add(1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.count_before(mid) >= target {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let cut = lo;
        let mut removed = 0usize;
        for t in &mut self.threads {
            let n = t.slices.partition_point(|s| s.end < cut);
            t.slices.drain(..n);
            let m = t.points.partition_point(|p| p.ts < cut);
            t.points.drain(..m);
            removed += n + m;
        }
        for c in &mut self.counters {
            let n = c.samples.partition_point(|s| s.0 < cut);
            c.samples.drain(..n);
            removed += n;
        }
        for a in &mut self.asyncs {
            for lane in &mut a.lanes {
                let n = lane.partition_point(|s| s.end < cut);
                lane.drain(..n);
                removed += n;
            }
        }
        self.retained -= removed.min(self.retained);
        self.dropped += removed as u64;
        self.horizon = Some(self.horizon.map_or(cut, |h| h.max(cut)));
        // The chunks before the oldest a record held comes from.
        let mut oldest = u64::MAX;
        self.each_record(|r| oldest = oldest.min(r.id));
        let first = details::unpack(oldest).0;
        while self.first_chunk < first && self.chunks.pop_front().is_some() {
            self.first_chunk += 1;
        }
    }

    /// The smallest and largest key (a slice's end, a point's or sample's time) held.
    fn key_range(&self) -> Option<(u64, u64)> {
        let mut range: Option<(u64, u64)> = None;
        let mut add = |a: Option<u64>, b: Option<u64>| {
            if let (Some(a), Some(b)) = (a, b) {
                range = Some(range.map_or((a, b), |(lo, hi)| (lo.min(a), hi.max(b))));
            }
        };
        for t in &self.threads {
            add(t.slices.front().map(|s| s.end), t.slices.back().map(|s| s.end));
            add(t.points.front().map(|p| p.ts), t.points.back().map(|p| p.ts));
        }
        for c in &self.counters {
            add(c.samples.front().map(|s| s.0), c.samples.back().map(|s| s.0));
        }
        for lane in self.asyncs.iter().flat_map(|a| &a.lanes) {
            add(lane.front().map(|s| s.end), lane.back().map(|s| s.end));
        }
        range
    }

    /// Records whose key is before `cut`.
    fn count_before(&self, cut: u64) -> u64 {
        let mut n = 0;
        for t in &self.threads {
            n += t.slices.partition_point(|s| s.end < cut) + t.points.partition_point(|p| p.ts < cut);
        }
        for c in &self.counters {
            n += c.samples.partition_point(|s| s.0 < cut);
        }
        for lane in self.asyncs.iter().flat_map(|a| &a.lanes) {
            n += lane.partition_point(|s| s.end < cut);
        }
        n as u64
    }
}

/// Inserts `x` into `list` sorted by `key`, after those of an equal key: at the back, as items
/// come nearly in order, else where a binary search puts it (a trace out of order costs no more
/// than a search a record).
fn insert_sorted<T>(list: &mut VecDeque<T>, x: T, key: impl Fn(&T) -> u64) {
    let at = place(list, key(&x), &key);
    list.insert(at, x);
}

/// Where an item of key `k` goes in `list` (sorted by `key`): after those of a key up to `k`.
fn place<T>(list: &VecDeque<T>, k: u64, key: impl Fn(&T) -> u64) -> usize {
    match list.back() {
        Some(last) if key(last) > k => list.partition_point(|y| key(y) <= k),
        _ => list.len(),
    }
}

/// The thread `tid` of `threads` (sorted by tid), made if new (`None` past [`MAX_TRACKS`]).
fn thread_of(threads: &mut Vec<Thread>, tid: u32) -> Option<&mut Thread> {
    let at = match threads.binary_search_by_key(&tid, |t| t.tid) {
        Ok(at) => at,
        Err(_) if threads.len() >= MAX_TRACKS => return None,
        Err(at) => {
            threads.insert(at, Thread { tid, ..Thread::default() });
            at
        }
    };
    Some(&mut threads[at])
}

/// A clock of a nanosecond a tick: the timeline of a model before its file's header is read.
fn nanoseconds() -> ClockInfo {
    ClockInfo::monotonic(0, 0)
}

/// Inserts a slice known at its end into `t`, below the begins open: the slices already there
/// that it holds go a level down, and those there that hold it put it a level further down.
/// Which holds which is decided on `timeline`'s times, as [`phosphor_model::nesting`] decides it:
/// of two slices of the same extent there, the one recorded first is inside.
fn insert_complete(t: &mut Thread, timeline: &Timeline, mut x: LSlice) {
    let time = |ticks| timeline.time(ticks);
    let (xs, xe) = (time(x.start), time(x.end));
    // Sorted by ticks, so by time too: past `hi` they end after it there.
    let hi = t.slices.partition_point(|y| time(y.end) <= xe);
    let mut depth = t.open.len() + t.slices.range(hi..).filter(|y| time(y.start) <= xs).count();
    let mut i = hi;
    while i > 0 && time(t.slices[i - 1].end) >= xs {
        i -= 1;
        let y = &mut t.slices[i];
        let ys = time(y.start);
        if ys >= xs {
            // Inside it (an older slice of the same extent is inside the newer one).
            y.depth = (y.depth + 1).min(MAX_DEPTH);
            t.levels = t.levels.max(usize::from(y.depth) + 1);
        } else if time(y.end) == xe {
            depth += 1;
        }
    }
    x.depth = depth.min(usize::from(MAX_DEPTH)) as u16;
    t.levels = t.levels.max(usize::from(x.depth) + 1);
    t.longest = t.longest.max(x.end - x.start);
    let at = place(&t.slices, x.end, |s| s.end);
    t.slices.insert(at, x);
}

#[cfg(test)]
#[path = "live_tests.rs"]
mod tests;

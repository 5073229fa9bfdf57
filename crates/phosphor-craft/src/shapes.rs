//! The hostile shapes: valid trace files whose tables, depths, clocks or timestamps make a reader
//! that is linear in the file do far more than linear work, each with its size as a parameter.
//!
//! Every file has one category (`craft`), one source file and the empty string; names never
//! contain `inf` or `nan`, so that a tool printing a non-finite number is not confused with a
//! name. [`Shape::write`] streams the file: the generator holds one chunk, never the trace.

use std::io::{self, Write};

use phosphor_format::file::{ClockInfo, ClockKind, RawCallsite, Trailer};
use phosphor_format::{fnv1a64, Level, Phase, FIRST_CALLSITE_ID};

use crate::records;
use crate::trace::{ChunkStream, TraceWriter};

/// The order in which [`Shape::BackwardTimestamps`]' complete events go back in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backwards {
    /// Each event starts before the one recorded before it.
    Decreasing,
    /// Late, early, late, early: every other event goes back across the whole trace.
    Alternating,
}

/// A hostile file and its size.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// (a) One string of `bytes` bytes is the name of `callsites` complete callsites; the first
    /// `events` are recorded once each (a viewer's format repeats a name per event: the output
    /// grows with `events × bytes`, the reader's tables should not grow with `callsites × bytes`).
    HugeCallsiteName { bytes: usize, callsites: u32, events: u32 },
    /// (b) One string of `bytes` bytes names `threads` threads; the first `events` have one
    /// complete event each.
    HugeThreadName { bytes: usize, threads: u32, events: u32 },
    /// (c) `depth` begins on one thread that no end closes.
    UnclosedBegins { depth: u32 },
    /// (d) `depth` nested begin/end pairs on one thread, an instant and a log at the bottom.
    NestedScopes { depth: u32 },
    /// (e) `events` complete events on one thread whose timestamps go backwards.
    BackwardTimestamps { events: u32, order: Backwards },
    /// (f) A small trace of every phase on a TSC clock of `ns_per_tick` nanoseconds per tick
    /// (inf, NaN, 0, negative, subnormal), with a slice lasting the whole tick range.
    ClockRate { ns_per_tick: f64 },
    /// (g) `callsites` callsites of distinct names, each recorded once.
    ManyCallsites { callsites: u32 },
    /// (h) `threads` named threads, each with one complete event in a chunk of its own.
    ManyThreads { threads: u32 },
    /// `chunks` chunks of one event each, every other sequence number missing (lost chunks).
    TinyChunks { chunks: u32 },
    /// `events` instants named by their argument 0, a distinct string of 8,000 bytes each.
    HugeArgs { events: u32 },
    /// A log whose format string pads its parameter to the widest width `repeats` times
    /// (`{0:65536}…`): a small string asks for `repeats` × 64 KiB of message; `events` logs.
    LogWidthBomb { repeats: u32, events: u32 },
    /// `depth` nested scopes, each of a distinct name of `name_bytes` bytes: the path of the
    /// deepest is `depth × name_bytes` long, and the paths of all of them half `depth` times that.
    DeepLongNames { depth: u32, name_bytes: usize },
    /// `threads` threads of `logs` logs each, `params` parameters a log (at most 16), the last
    /// thread's chunks (the latest logs) first: more than the reorder window of `phosphor logs`
    /// holds, all out of order.
    LogsOutOfOrder { threads: u32, logs: u32, params: u32 },
    /// `slices` async slices of distinct ids whose ends (on thread 2) are all written before their
    /// begins (on thread 1), and as many async begins never ended: every half waits for its
    /// other half, more than a reader may keep (the model's cap on halves waiting).
    AsyncsWaiting { slices: u32 },
}

/// The strings every file starts with, by index.
const CATEGORY: u32 = 0;
const EMPTY: u32 = 1;
const FILE: u32 = 2;
const FIRST_FREE_STRING: usize = 3;

/// A callsite of `phase` named by string `name`.
pub fn callsite(id: u32, phase: Phase, name: u32) -> RawCallsite {
    RawCallsite {
        id,
        phase,
        level: (phase == Phase::Log).then_some(Level::Info),
        dynamic_name: false,
        flow: false,
        line: id,
        strings: [CATEGORY, name, EMPTY, EMPTY, FILE],
        name_hash: fnv1a64(&id.to_le_bytes()),
    }
}

/// A nanosecond clock (rate 1).
pub fn monotonic() -> ClockInfo {
    tsc(1.0)
}

/// A clock of `ns_per_tick`.
pub fn tsc(ns_per_tick: f64) -> ClockInfo {
    ClockInfo {
        kind: if ns_per_tick == 1.0 { ClockKind::Monotonic } else { ClockKind::Tsc },
        ns_per_tick,
        origin_ticks: 1_000,
        origin_monotonic_ns: 1_000_000,
        origin_wall_ns: 1_700_000_000_000_000_000,
        fallback_reason: None,
    }
}

/// Starts a file: header, then the three common strings.
fn start<W: Write>(out: W, clock: ClockInfo) -> io::Result<TraceWriter<W>> {
    let mut w = TraceWriter::new(out, clock, "craft")?;
    let first = w.strings(&["craft", "", "hostile.rs"])?;
    debug_assert_eq!(first, CATEGORY);
    Ok(w)
}

/// `count` names `prefix0`, `prefix1`, … written in batches; returns the index of the first.
fn numbered_names<W: Write>(w: &mut TraceWriter<W>, prefix: &str, count: u32) -> io::Result<u32> {
    let mut first = None;
    let mut i = 0;
    while i < count {
        let batch: Vec<String> = (i..count.min(i + 4096)).map(|k| format!("{prefix}{k}")).collect();
        let at = w.strings(&batch)?;
        first.get_or_insert(at);
        i += batch.len() as u32;
    }
    Ok(first.unwrap_or(FIRST_FREE_STRING as u32))
}

impl Shape {
    /// Writes the file to `out`; returns `out`.
    pub fn write<W: Write>(&self, out: W) -> io::Result<W> {
        match *self {
            Shape::HugeCallsiteName { bytes, callsites, events } => {
                huge_callsite_name(out, bytes, callsites, events)
            }
            Shape::HugeThreadName { bytes, threads, events } => huge_thread_name(out, bytes, threads, events),
            Shape::UnclosedBegins { depth } => unclosed_begins(out, depth),
            Shape::AsyncsWaiting { slices } => asyncs_waiting(out, slices),
            Shape::NestedScopes { depth } => nested_scopes(out, depth),
            Shape::BackwardTimestamps { events, order } => backward_timestamps(out, events, order),
            Shape::ClockRate { ns_per_tick } => every_phase(out, tsc(ns_per_tick)),
            Shape::ManyCallsites { callsites } => many_callsites(out, callsites),
            Shape::ManyThreads { threads } => many_threads(out, threads),
            Shape::TinyChunks { chunks } => tiny_chunks(out, chunks),
            Shape::HugeArgs { events } => huge_args(out, events),
            Shape::LogWidthBomb { repeats, events } => log_width_bomb(out, repeats, events),
            Shape::LogsOutOfOrder { threads, logs, params } => logs_out_of_order(out, threads, logs, params),
            Shape::DeepLongNames { depth, name_bytes } => deep_long_names(out, depth, name_bytes),
        }
    }
}

/// [`Shape::HugeCallsiteName`].
fn huge_callsite_name<W: Write>(out: W, bytes: usize, callsites: u32, events: u32) -> io::Result<W> {
    let id = FIRST_CALLSITE_ID;
    let mut w = start(out, monotonic())?;
    let name = w.repeated_string("x", bytes)?;
    w.callsites((0..callsites).map(|k| callsite(id + k, Phase::Complete, name)))?;
    let mut s = ChunkStream::new(1);
    for k in 0..events.min(callsites) {
        s.push(&mut w, &records::complete(u64::from(k) * 10, id + k, 5))?;
    }
    s.flush(&mut w)?;
    w.finish(Trailer::default())
}

/// [`Shape::HugeThreadName`].
fn huge_thread_name<W: Write>(out: W, bytes: usize, threads: u32, events: u32) -> io::Result<W> {
    let id = FIRST_CALLSITE_ID;
    let mut w = start(out, monotonic())?;
    let name = w.repeated_string("t", bytes)?;
    let work = w.string("work")?;
    w.callsites([callsite(id, Phase::Complete, work)])?;
    w.threads((1..=threads).map(|tid| (tid, name)))?;
    for tid in 1..=events.min(threads) {
        let mut s = ChunkStream::new(tid);
        s.push(&mut w, &records::complete(u64::from(tid) * 10, id, 5))?;
        s.flush(&mut w)?;
    }
    w.finish(Trailer::default())
}

/// [`Shape::UnclosedBegins`].
fn unclosed_begins<W: Write>(out: W, depth: u32) -> io::Result<W> {
    let id = FIRST_CALLSITE_ID;
    let mut w = start(out, monotonic())?;
    let names = numbered_names(&mut w, "open", 16)?;
    w.callsites((0..16).map(|k| callsite(id + k, Phase::Begin, names + k)))?;
    let mut s = ChunkStream::new(1);
    for d in 0..depth {
        s.push(&mut w, &records::begin(u64::from(d), id + d % 16))?;
    }
    s.flush(&mut w)?;
    w.finish(Trailer::default())
}

/// [`Shape::AsyncsWaiting`].
fn asyncs_waiting<W: Write>(out: W, slices: u32) -> io::Result<W> {
    let id = FIRST_CALLSITE_ID;
    let mut w = start(out, monotonic())?;
    let names = w.strings(&["waiting", "unended"])?;
    w.callsites([
        callsite(id, Phase::AsyncBegin, names),
        callsite(id + 1, Phase::AsyncEnd, names),
        callsite(id + 2, Phase::AsyncBegin, names + 1),
    ])?;
    let n = u64::from(slices);
    let mut ends = ChunkStream::new(2);
    for k in 0..n {
        ends.push(&mut w, &records::async_edge(10 * k + 5, id + 1, k))?;
    }
    ends.flush(&mut w)?;
    let mut begins = ChunkStream::new(1);
    for k in 0..n {
        begins.push(&mut w, &records::async_edge(10 * k, id, k))?;
        begins.push(&mut w, &records::async_edge(10 * k, id + 2, k))?;
    }
    begins.flush(&mut w)?;
    w.finish(Trailer::default())
}

/// [`Shape::NestedScopes`].
fn nested_scopes<W: Write>(out: W, depth: u32) -> io::Result<W> {
    let id = FIRST_CALLSITE_ID;
    let mut w = start(out, monotonic())?;
    let names = numbered_names(&mut w, "scope", 16)?;
    w.callsites((0..16).map(|k| callsite(id + k, Phase::Begin, names + k)))?;
    w.callsites((0..16).map(|k| callsite(id + 16 + k, Phase::End, names + k)))?;
    let leaf = w.strings(&["leaf", "at the bottom: {}"])?;
    w.callsites([callsite(id + 32, Phase::Instant, leaf), callsite(id + 33, Phase::Log, leaf + 1)])?;
    let mut s = ChunkStream::new(1);
    let d = u64::from(depth);
    for k in 0..depth {
        s.push(&mut w, &records::begin(u64::from(k), id + k % 16))?;
    }
    s.push(&mut w, &records::instant(d, id + 32))?;
    s.push(&mut w, &records::log(d, id + 33, &[d]))?;
    for k in (0..depth).rev() {
        s.push(&mut w, &records::end(2 * d - u64::from(k), id + 16 + k % 16))?;
    }
    s.flush(&mut w)?;
    w.finish(Trailer::default())
}

/// [`Shape::BackwardTimestamps`].
fn backward_timestamps<W: Write>(out: W, events: u32, order: Backwards) -> io::Result<W> {
    let id = FIRST_CALLSITE_ID;
    let mut w = start(out, monotonic())?;
    let names = numbered_names(&mut w, "back", 4)?;
    w.callsites((0..4).map(|k| callsite(id + k, Phase::Complete, names + k)))?;
    let mut s = ChunkStream::new(1);
    let n = u64::from(events);
    for k in 0..events {
        let i = u64::from(k);
        let ts = match order {
            Backwards::Decreasing => 10 * (n - i),
            Backwards::Alternating if k % 2 == 0 => 10 * (n + i),
            Backwards::Alternating => 10 * (n - i),
        };
        s.push(&mut w, &records::complete(ts, id + k % 4, 3))?;
    }
    s.flush(&mut w)?;
    w.finish(Trailer::default())
}

/// [`Shape::ManyCallsites`].
fn many_callsites<W: Write>(out: W, callsites: u32) -> io::Result<W> {
    let id = FIRST_CALLSITE_ID;
    let mut w = start(out, monotonic())?;
    let names = numbered_names(&mut w, "site", callsites)?;
    w.callsites((0..callsites).map(|k| callsite(id + k, Phase::Complete, names + k)))?;
    let mut s = ChunkStream::new(1);
    for k in 0..callsites {
        s.push(&mut w, &records::complete(u64::from(k) * 10, id + k, 5))?;
    }
    s.flush(&mut w)?;
    w.finish(Trailer::default())
}

/// [`Shape::ManyThreads`].
fn many_threads<W: Write>(out: W, threads: u32) -> io::Result<W> {
    let id = FIRST_CALLSITE_ID;
    let mut w = start(out, monotonic())?;
    let work = w.string("work")?;
    w.callsites([callsite(id, Phase::Complete, work)])?;
    let names = numbered_names(&mut w, "worker ", threads)?;
    w.threads((0..threads).map(|k| (k + 1, names + k)))?;
    for k in 0..threads {
        let mut s = ChunkStream::new(k + 1);
        s.push(&mut w, &records::complete(u64::from(k) * 10, id, 5))?;
        s.flush(&mut w)?;
    }
    w.finish(Trailer::default())
}

/// [`Shape::TinyChunks`].
fn tiny_chunks<W: Write>(out: W, chunks: u32) -> io::Result<W> {
    let id = FIRST_CALLSITE_ID;
    let mut w = start(out, monotonic())?;
    let name = w.string("tiny")?;
    w.callsites([callsite(id, Phase::Complete, name)])?;
    let mut s = ChunkStream::with_capacity(1, 1);
    for k in 0..chunks {
        s.push(&mut w, &records::complete(u64::from(k) * 10, id, 5))?;
        s.flush(&mut w)?;
        s.skip(1);
    }
    w.finish(Trailer::default())
}

/// [`Shape::HugeArgs`].
fn huge_args<W: Write>(out: W, events: u32) -> io::Result<W> {
    let id = FIRST_CALLSITE_ID;
    let mut w = start(out, monotonic())?;
    let strs = w.strings(&["named by its argument", "name", "static"])?;
    let mut site = callsite(id, Phase::Instant, strs);
    site.dynamic_name = true;
    site.strings[2] = strs + 1;
    site.strings[3] = strs + 1;
    w.callsites([site])?;
    let mut s = ChunkStream::new(1);
    let filler = "a".repeat(8_000);
    for k in 0..events {
        let name = format!("{k:08}{filler}");
        s.push(&mut w, &records::with_string(u64::from(k), id, &name, Some(strs + 2)))?;
    }
    s.flush(&mut w)?;
    w.finish(Trailer::default())
}

/// [`Shape::LogWidthBomb`].
fn log_width_bomb<W: Write>(out: W, repeats: u32, events: u32) -> io::Result<W> {
    let id = FIRST_CALLSITE_ID;
    let mut w = start(out, monotonic())?;
    let format = w.repeated_string("{0:65536}", 9 * repeats as usize)?;
    w.callsites([callsite(id, Phase::Log, format)])?;
    let mut s = ChunkStream::new(1);
    for k in 0..events {
        s.push(&mut w, &records::log(u64::from(k), id, &[7]))?;
    }
    s.flush(&mut w)?;
    w.finish(Trailer::default())
}

/// [`Shape::LogsOutOfOrder`].
fn logs_out_of_order<W: Write>(out: W, threads: u32, logs: u32, params: u32) -> io::Result<W> {
    let id = FIRST_CALLSITE_ID;
    let mut w = start(out, monotonic())?;
    let params: Vec<u64> = (0..u64::from(params).min(phosphor_format::MAX_PARAMS as u64)).collect();
    let format = w.string(&format!("log{}", " {}".repeat(params.len())))?;
    w.callsites([callsite(id, Phase::Log, format)])?;
    for t in (0..threads).rev() {
        let mut s = ChunkStream::new(t + 1);
        for k in 0..logs {
            let ts = (u64::from(t) * u64::from(logs) + u64::from(k)) * 10;
            s.push(&mut w, &records::log(ts, id, &params))?;
        }
        s.flush(&mut w)?;
    }
    w.finish(Trailer::default())
}

/// [`Shape::DeepLongNames`].
fn deep_long_names<W: Write>(out: W, depth: u32, name_bytes: usize) -> io::Result<W> {
    let id = FIRST_CALLSITE_ID;
    let mut w = start(out, monotonic())?;
    let filler = "n".repeat(name_bytes.saturating_sub(8));
    let mut first = None;
    for k in 0..depth {
        let i = w.string(&format!("{k:08}{filler}"))?;
        first.get_or_insert(i);
    }
    let names = first.unwrap_or(0);
    w.callsites((0..depth).map(|k| callsite(id + 2 * k, Phase::Begin, names + k)))?;
    w.callsites((0..depth).map(|k| callsite(id + 2 * k + 1, Phase::End, names + k)))?;
    let mut s = ChunkStream::new(1);
    let d = u64::from(depth);
    for k in 0..depth {
        s.push(&mut w, &records::begin(u64::from(k), id + 2 * k))?;
    }
    for k in (0..depth).rev() {
        s.push(&mut w, &records::end(2 * d - u64::from(k), id + 2 * k + 1))?;
    }
    s.flush(&mut w)?;
    w.finish(Trailer::default())
}

/// A small trace with an event of every phase, on `clock`; one complete slice spans the whole
/// tick range, and the clock's origin sits in the middle of it.
fn every_phase<W: Write>(out: W, clock: ClockInfo) -> io::Result<W> {
    let mut w = start(out, clock)?;
    let id = FIRST_CALLSITE_ID;
    let phases = [
        Phase::Begin,
        Phase::End,
        Phase::Complete,
        Phase::Instant,
        Phase::Counter,
        Phase::AsyncBegin,
        Phase::AsyncEnd,
        Phase::Log,
        Phase::LockWait,
        Phase::LockHeld,
        Phase::Data,
    ];
    let names = w.strings(&phases.map(|p| if p == Phase::Log { "took {} ticks" } else { p.as_str() }))?;
    w.callsites(phases.iter().enumerate().map(|(k, &p)| callsite(id + k as u32, p, names + k as u32)))?;
    let mut s = ChunkStream::new(1);
    let at = |p: Phase| id + phases.iter().position(|&q| q == p).expect("listed") as u32;
    s.push(&mut w, &records::complete(0, at(Phase::Complete), u64::MAX))?;
    for (k, ts) in [1u64, 999, 1_000, 1_001, 1 << 40, u64::MAX / 2, u64::MAX - 8].into_iter().enumerate() {
        s.push(&mut w, &records::begin(ts, at(Phase::Begin)))?;
        s.push(&mut w, &records::counter(ts, at(Phase::Counter), ts as f64))?;
        s.push(&mut w, &records::counter(ts, at(Phase::Data), -(ts as f64)))?;
        s.push(&mut w, &records::async_edge(ts, at(Phase::AsyncBegin), k as u64))?;
        s.push(&mut w, &records::instant(ts + 1, at(Phase::Instant)))?;
        s.push(&mut w, &records::log(ts + 1, at(Phase::Log), &[ts]))?;
        s.push(&mut w, &records::complete(ts + 1, at(Phase::LockWait), 1))?;
        s.push(&mut w, &records::complete(ts + 2, at(Phase::LockHeld), 5))?;
        s.push(&mut w, &records::complete(ts + 2, at(Phase::Complete), 3))?;
        s.push(&mut w, &records::async_edge(ts + 7, at(Phase::AsyncEnd), k as u64))?;
        s.push(&mut w, &records::end(ts + 8, at(Phase::End)))?;
    }
    s.flush(&mut w)?;
    w.finish(Trailer::default())
}

//! Folded stacks (`thread;outer;inner 1234` lines) and SVG flame graphs of a trace file.
//!
//! [`fold`] reads a trace file with its [`Reader`] and adds up, for every distinct stack of slices,
//! the **self time in nanoseconds** spent in its innermost slice: the slice's duration minus the
//! durations of the slices nested in it. [`write_folded`] writes the result as one line per stack,
//! `thread;outer;inner <self-time-ns>`, sorted, the input of flame graph tools; and
//! [`write_flamegraph`] draws it as an SVG flame graph with [`inferno`].
//!
//! # Stacks
//!
//! The first segment is the thread's name, or `thread <tid>` for a thread without one; then come
//! the names of the enclosing slices, outermost first. Lock events are named as in the Chrome
//! export, `<name> (wait)` and `<name> (held)`. A `;` or line break in a name would break the
//! format, so it becomes `_`. Lines of zero self time are left out. The slices are:
//!
//! * complete and lock events, which are written when they **end**: a nested slice arrives before
//!   the slice enclosing it;
//! * begin/end pairs, in order: an end closes the innermost open begin of its thread (an end with
//!   nothing open is ignored).
//!
//! The nesting (which slice encloses which, as complete events arrive after their children) is
//! the one statistics use: see `nesting.rs`. A complete event recorded while a begin slice is open,
//! so inside it, gets its stack as a prefix even if it overlaps it without nesting in it; slices
//! that partially overlap a sibling stay siblings.
//!
//! # Memory
//!
//! The aggregate takes one entry per distinct stack and thread, its stack interned (a path of the
//! nesting's trie): the stacks are spelled out only as they are written (`stacks.rs`), and a flame
//! graph is handed the lines it can draw. Besides it, the folder holds the
//! slices still waiting for a parent, at most
//! [`DEFAULT_PENDING_LIMIT`](crate::DEFAULT_PENDING_LIMIT) per thread: a complete event's
//! parent is only known when the parent ends, and nothing marks where it starts, so a later parent
//! could adopt any of them. Past the limit the oldest are folded under the stack known then (a
//! parent that arrives later no longer prefixes them). Begin slices never closed have no duration:
//! they only give their names to what they enclose.

use hashbrown::HashTable;
use rustc_hash::{FxBuildHasher, FxHashMap as HashMap, FxHashSet as HashSet};
use std::borrow::Cow;
use std::hash::BuildHasher;
use std::io::{BufWriter, Read, Write};

use phosphor_format::file::{self, ClockInfo, Event, Reader, Value};
use phosphor_format::Phase;

use crate::error::read_events;
pub use crate::error::{Error, ExportSummary};
use crate::stacks::Stacks;
use phosphor_model::background::{Consumer, Feed};
use phosphor_model::names::{self, MAX_NAME_BYTES};
use phosphor_model::nesting::{Label, Nesting, PathId, Sink, Slice, SliceKind};

/// Folded stacks: self time in nanoseconds per stack, and what was read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Folded {
    /// `(stack, self-time-ns)`, sorted by stack; the stack's segments are joined by `;`.
    pub stacks: Vec<(String, u64)>,
    /// What was read (`events` counts every event read, slices or not).
    pub summary: ExportSummary,
}

impl Folded {
    /// The folded lines, `stack self-time-ns`, sorted.
    pub fn lines(&self) -> impl Iterator<Item = String> + '_ {
        self.stacks.iter().map(|(s, ns)| format!("{s} {ns}"))
    }
}

/// Folds the trace that `reader` reads. The error, if any, is the read error that stopped it: the
/// stacks are then those of everything before it. All the stacks are spelled out in memory:
/// [`write_folded`] writes them one at a time instead.
pub fn fold<R: Read>(reader: Reader<R>) -> (Folded, Option<file::Error>) {
    let (stacks, summary, failure) = stacks(reader);
    (Folded { stacks: stacks.to_vec(), summary }, failure)
}

/// Reads the trace and sorts its stacks.
fn stacks<R: Read>(mut reader: Reader<R>) -> (Stacks, ExportSummary, Option<file::Error>) {
    let clock = reader.header().clock.clone();
    let mut f = Folder::default();
    let mut summary = ExportSummary::default();
    let Ok(failure) = read_events(&mut reader, &mut summary, |e| -> Result<(), std::convert::Infallible> {
        f.add(e);
        Ok(())
    });
    summary.threads = u32::try_from(f.threads.len()).unwrap_or(u32::MAX);
    summary.complete = reader.trailer().is_some();
    // The first segments of the threads with events, made once their pending slices are resolved
    // and freed; the reader's tables (a million callsites or thread names, in hostile files) are
    // freed before the stacks are sorted.
    let (nesting, times) = f.engine.finish();
    nesting.finish(times);
    let mut names: Vec<(u32, &str)> =
        reader.thread_names().filter(|(t, _)| f.threads.contains(t)).map(|(t, n)| (t, n.as_str())).collect();
    // The last name of a thread named twice.
    names.reverse();
    names.sort_by_key(|(t, _)| *t);
    names.dedup_by_key(|(t, _)| *t);
    let mut threads: Vec<(u32, String, bool)> = names
        .into_iter()
        .map(|(tid, n)| (tid, sanitize(&names::shown(n)), n.len() > MAX_NAME_BYTES))
        .collect();
    threads.shrink_to_fit();
    drop(reader);
    let stacks = f.finish(threads, &clock, &mut summary);
    (stacks, summary, failure)
}

/// Writes the folded stacks of the trace that `reader` reads to `out`, one sorted line per stack
/// (buffered here), each spelled out as it is written. On a read error the stacks read so far
/// are written, then [`Error::Read`] says where reading stopped.
pub fn write_folded<R: Read, W: Write>(reader: Reader<R>, out: W) -> Result<ExportSummary, Error> {
    let (stacks, summary, failure) = stacks(reader);
    let mut out = BufWriter::with_capacity(1 << 16, out);
    stacks.write(&mut out)?;
    out.flush()?;
    finish(summary, failure)
}

/// Draws the trace that `reader` reads as an SVG flame graph, titled `title`, to `out`: the
/// folded stacks of [`fold`] rendered by [`inferno`], widths in nanoseconds of self time. Runs of
/// frames too narrow to be drawn are handed to inferno as one line each (the picture is the same).
/// On a read error the graph of what was read is written, then [`Error::Read`] says where reading
/// stopped. A trace read whole without a slice to draw writes nothing and gives
/// [`Error::NothingToDraw`].
pub fn write_flamegraph<R: Read, W: Write>(
    reader: Reader<R>,
    out: W,
    title: &str,
) -> Result<ExportSummary, Error> {
    let (stacks, summary, failure) = stacks(reader);
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_owned();
    options.count_name = "ns".to_owned();
    let mut notes = Vec::new();
    if summary.truncated > 0 {
        let depth = crate::DEFAULT_MAX_DEPTH;
        notes.push(format!(
            "{} slices nested deeper than {depth} are drawn by name under [deeper than {depth}]",
            summary.truncated
        ));
    }
    if summary.names_cut > 0 {
        notes.push(format!("{} names longer than {MAX_NAME_BYTES} bytes are cut", summary.names_cut));
    }
    // inferno holds every line: when the frames it can draw would take more text than the budget,
    // the narrowest are merged (widths doubled until it fits; past 100 % only one line is left).
    let asked = options.min_width;
    let mut min_width = asked;
    let lines = loop {
        let budget = if min_width > 100.0 { usize::MAX } else { FLAME_TEXT_BUDGET };
        if let Some(lines) = stacks.flame_lines(min_width, budget) {
            break lines;
        }
        min_width = (min_width * 2.0).max(0.1);
    };
    if min_width > asked {
        options.min_width = min_width;
        notes.push(format!(
            "frames narrower than {min_width}% are not drawn, to keep the graph's text under {} MiB",
            FLAME_TEXT_BUDGET >> 20
        ));
    }
    if !notes.is_empty() {
        options.subtitle = Some(notes.join("; "));
    }
    drop(stacks);
    // inferno would draw an error image and say "No stack counts found", which names no file.
    if lines.lines().all(|l| l.ends_with(" 0")) {
        return match failure {
            // Damaged before its first stack: the read error, with the offset, says why.
            Some(_) => finish(summary, failure),
            None => Err(Error::NothingToDraw { exported: summary }),
        };
    }
    let mut out = BufWriter::with_capacity(1 << 16, out);
    inferno::flamegraph::from_lines(&mut options, lines.lines(), &mut out)?;
    out.flush()?;
    finish(summary, failure)
}

fn finish(summary: ExportSummary, failure: Option<file::Error>) -> Result<ExportSummary, Error> {
    match failure {
        None => Ok(summary),
        Some(source) => Err(Error::Read { offset: source.offset(), exported: summary, source }),
    }
}

/// The most text of stacks a flame graph is drawn from: inferno holds it all, with a frame for
/// each rectangle it draws.
const FLAME_TEXT_BUDGET: usize = 32 << 20;

/// Self time per thread and stack: the nesting engine's sink.
#[derive(Debug, Default)]
struct SelfTimes {
    /// By path, the first thread seen on it and its self time there: most paths are on one thread
    /// (16 bytes a path, not a map's entry).
    first: Vec<(Option<u32>, u64)>,
    /// By thread and path, for the other threads.
    others: HashMap<(u32, PathId), u64>,
}

impl Consumer<()> for SelfTimes {
    /// The folded stacks send nothing but slices.
    type Message = std::convert::Infallible;

    fn message(&mut self, _: &Nesting, message: Self::Message) {
        match message {}
    }
}

impl Sink for SelfTimes {
    fn slice(&mut self, s: &Slice) {
        if s.kind != SliceKind::Scope {
            return;
        }
        let p = s.path as usize;
        if p >= self.first.len() {
            self.first.resize(p + 1, (None, 0));
        }
        let total = match &mut self.first[p] {
            (tid @ None, total) => {
                *tid = Some(s.tid);
                total
            }
            (Some(tid), total) if *tid == s.tid => total,
            _ => self.others.entry((s.tid, s.path)).or_default(),
        };
        *total = total.saturating_add(s.self_ticks);
    }
}

impl SelfTimes {
    /// Every (thread, path, self time in ticks).
    fn into_times(self) -> impl Iterator<Item = (u32, PathId, u64)> {
        let first = self.first.into_iter().enumerate();
        first
            .filter_map(|(path, (tid, ticks))| Some((tid?, path as PathId, ticks)))
            .chain(self.others.into_iter().map(|((tid, path), ticks)| (tid, path, ticks)))
    }
}

#[derive(Debug)]
struct Folder {
    /// Stack segments, by label.
    names: Vec<Box<str>>,
    /// The labels, found by their segment's text in `names` (each stored once).
    name_index: HashTable<Label>,
    /// Callsite id → label.
    by_callsite: HashMap<u32, Label>,
    /// The nesting engine and the self times: on a second core once the file is long enough.
    engine: Feed<(), SelfTimes>,
    /// Threads that had events.
    threads: HashSet<u32>,
    /// Distinct names cut to be shown (`names.rs`).
    names_cut: u64,
}

impl Default for Folder {
    fn default() -> Folder {
        Folder {
            names: Vec::new(),
            name_index: HashTable::new(),
            by_callsite: HashMap::default(),
            engine: Feed::new(Nesting::new(crate::DEFAULT_PENDING_LIMIT), SelfTimes::default()),
            threads: HashSet::default(),
            names_cut: 0,
        }
    }
}

impl Folder {
    fn add(&mut self, e: &Event<'_>) {
        self.threads.insert(e.tid);
        let cs = &e.callsite;
        let suffix = match cs.phase {
            Phase::Complete | Phase::Begin | Phase::End => "",
            Phase::LockWait => " (wait)",
            Phase::LockHeld => " (held)",
            _ => return,
        };
        let label = match e.args[0] {
            // A name chosen at run time: labelled by that name (and a lock's phase), not by the
            // callsite.
            Some((_, Value::Str(name))) if cs.dynamic_name => self.label_name(name, suffix),
            _ => self.label(cs.id, names::lock_base(&cs.name, cs.phase), suffix),
        };
        match cs.phase {
            Phase::Begin => self.engine.begin_with(e.tid, label, e.ts, ()),
            Phase::End => self.engine.end(e.tid, label, e.ts),
            _ => self.engine.complete_with(e.tid, label, e.ts, e.duration.unwrap_or(0), ()),
        }
    }

    /// The label of callsite `id`, its segment made by `make` the first time.
    fn label(&mut self, id: u32, name: &str, suffix: &str) -> Label {
        if let Some(&l) = self.by_callsite.get(&id) {
            return l;
        }
        let l = self.label_name(name, suffix);
        self.by_callsite.insert(id, l);
        l
    }

    /// The label of a frame named `name` and `suffix`: the name is cut first (`names.rs`), so
    /// that a name of megabytes costs its first bytes only, however many callsites it names.
    fn label_name(&mut self, name: &str, suffix: &str) -> Label {
        let shown = names::shown(name);
        // Owned only when cut.
        let cut = matches!(shown, Cow::Owned(_));
        let text = sanitize(&format!("{shown}{suffix}"));
        let names = &self.names;
        let hash = FxBuildHasher.hash_one(text.as_str());
        if let Some(&l) = self.name_index.find(hash, |&l| *names[l as usize] == *text) {
            return l;
        }
        let l = self.names.len() as Label;
        self.names_cut += u64::from(cut);
        self.names.push(text.into_boxed_str());
        let names = &self.names;
        self.name_index.insert_unique(hash, l, |&l| FxBuildHasher.hash_one(&*names[l as usize]));
        l
    }

    /// Ends the stream; the stacks with self time, sorted. Counts the truncated slices in `summary`.
    /// `threads` are the named threads' first segments and whether their names were cut, by id.
    fn finish(
        mut self,
        mut threads: Vec<(u32, String, bool)>,
        clock: &ClockInfo,
        summary: &mut ExportSummary,
    ) -> Stacks {
        // (Nothing is left to resolve if `stacks` did it.)
        let (nesting, times) = self.engine.finish();
        nesting.finish(times);
        self.name_index = HashTable::new();
        self.by_callsite = HashMap::default();
        self.threads = HashSet::default();
        summary.truncated = u32::try_from(nesting.truncated()).unwrap_or(u32::MAX);
        let paths = nesting.take_paths();
        let times = std::mem::take(times)
            .into_times()
            .map(|(tid, path, ticks)| (tid, path, clock.ticks_to_ns(ticks)));
        let threads_cut = std::cell::Cell::new(0u64);
        let thread = |tid: u32| match threads.binary_search_by_key(&tid, |t| t.0) {
            Ok(at) => {
                threads_cut.set(threads_cut.get() + u64::from(threads[at].2));
                std::mem::take(&mut threads[at].1)
            }
            Err(_) => format!("thread {tid}"),
        };
        let stacks = Stacks::new(times, thread, self.names, paths);
        let cut = self.names_cut + threads_cut.get();
        summary.names_cut = u32::try_from(cut).unwrap_or(u32::MAX);
        stacks
    }
}

/// A name as a stack segment: `;` separates segments and a line break ends the line.
fn sanitize(name: &str) -> String {
    name.replace([';', '\n', '\r'], "_")
}

#[cfg(test)]
#[path = "folded_tests.rs"]
mod tests;

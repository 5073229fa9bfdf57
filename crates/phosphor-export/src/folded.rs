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
//! Per thread the folder keeps the stack of open begin slices and, for complete events, the
//! finished subtrees still waiting for a parent, sorted by start. When a complete slice `[s, e)`
//! arrives, the waiting subtrees that start at or after `s` are its children; when an end closes a
//! begin slice, the subtrees finished since its begin are. A complete event that arrives while a
//! begin slice is open, so inside it, gets its stack as a prefix; a slice that overlaps an open
//! begin slice without nesting in it is counted as its child.
//!
//! # Memory
//!
//! The aggregate takes one entry per distinct stack. Besides it, the folder holds the subtrees
//! still waiting for a parent: a complete event's parent is only known when the parent ends, so a
//! long-lived open parent keeps its finished children waiting until it closes, and the top-level
//! subtrees of a thread wait to the end of the stream, where those still waiting become roots
//! (under the stack of the begin slices still open, if any). Begin slices never closed have no
//! duration: they only give their names to what they enclose.

use std::collections::HashMap;
use std::io::{BufWriter, Read, Write};

use phosphor_format::file::{self, Reader};
use phosphor_format::Phase;

use crate::error::read_events;
pub use crate::error::{Error, ExportSummary};

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
/// stacks are then those of everything before it.
pub fn fold<R: Read>(mut reader: Reader<R>) -> (Folded, Option<file::Error>) {
    let clock = reader.header().clock.clone();
    let mut f = Folder::new(clock.origin_ticks, clock.ns_per_tick);
    let mut summary = ExportSummary::default();
    let Ok(failure) = read_events(&mut reader, &mut summary, |e| -> Result<(), std::convert::Infallible> {
        let cs = e.callsite;
        let (suffix, closes) = match cs.phase {
            Phase::Complete => ("", false),
            Phase::LockWait => (" (wait)", false),
            Phase::LockHeld => (" (held)", false),
            Phase::Begin => ("", true),
            Phase::End => {
                f.end(e.tid, e.ts);
                return Ok(());
            }
            _ => {
                f.thread(e.tid);
                return Ok(());
            }
        };
        let name = f.name(cs.id, || format!("{}{suffix}", cs.name));
        if closes {
            f.begin(e.tid, name, e.ts);
        } else {
            f.complete(e.tid, name, e.ts, e.duration.unwrap_or(0));
        }
        Ok(())
    });
    let names: HashMap<u32, &str> = reader.thread_names().collect();
    summary.threads = f.threads.len();
    summary.complete = reader.trailer().is_some();
    (Folded { stacks: f.finish(&names), summary }, failure)
}

/// Writes the folded stacks of the trace that `reader` reads to `out`, one sorted line per stack
/// (buffered here). On a read error the stacks read so far are written, then [`Error::Read`] says
/// where reading stopped.
pub fn write_folded<R: Read, W: Write>(reader: Reader<R>, out: W) -> Result<ExportSummary, Error> {
    let (folded, failure) = fold(reader);
    let mut out = BufWriter::with_capacity(1 << 16, out);
    for (stack, ns) in &folded.stacks {
        writeln!(out, "{stack} {ns}")?;
    }
    out.flush()?;
    finish(folded.summary, failure)
}

/// Draws the trace that `reader` reads as an SVG flame graph, titled `title`, to `out`: the
/// folded stacks of [`fold`] rendered by [`inferno`], widths in nanoseconds of self time. On a read
/// error the graph of what was read is written, then [`Error::Read`] says where reading stopped.
/// A trace without slices gives inferno's error image and [`Error::Write`].
pub fn write_flamegraph<R: Read, W: Write>(
    reader: Reader<R>,
    out: W,
    title: &str,
) -> Result<ExportSummary, Error> {
    let (folded, failure) = fold(reader);
    let lines: Vec<String> = folded.lines().collect();
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_owned();
    options.count_name = "ns".to_owned();
    let mut out = BufWriter::with_capacity(1 << 16, out);
    inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut out)?;
    out.flush()?;
    finish(folded.summary, failure)
}

fn finish(summary: ExportSummary, failure: Option<file::Error>) -> Result<ExportSummary, Error> {
    match failure {
        None => Ok(summary),
        Some(source) => Err(Error::Read { offset: source.offset(), exported: summary, source }),
    }
}

/// A finished slice waiting for its parent, with its own finished children.
#[derive(Debug)]
struct Node {
    name: u32,
    start: i64,
    dur: u64,
    self_ns: u64,
    children: Vec<Node>,
}

/// A begin slice still open: where its children start in the thread's waiting list.
#[derive(Debug)]
struct Open {
    name: u32,
    start: i64,
    first_child: usize,
}

#[derive(Debug, Default)]
struct ThreadState {
    open: Vec<Open>,
    /// Finished subtrees without a parent yet; sorted by start within each open slice's part.
    waiting: Vec<Node>,
}

/// One node of the aggregate: a stack, by the name indices of its segments.
#[derive(Debug, Default)]
struct Path {
    children: HashMap<u32, usize>,
    self_ns: u64,
}

#[derive(Debug)]
struct Folder {
    origin_ticks: u64,
    ns_per_tick: f64,
    names: Vec<String>,
    name_index: HashMap<String, u32>,
    by_callsite: HashMap<u32, u32>,
    threads: HashMap<u32, ThreadState>,
    /// Per thread, the root of its stacks in `paths`.
    roots: HashMap<u32, usize>,
    paths: Vec<Path>,
}

impl Folder {
    fn new(origin_ticks: u64, ns_per_tick: f64) -> Folder {
        Folder {
            origin_ticks,
            ns_per_tick,
            names: Vec::new(),
            name_index: HashMap::new(),
            by_callsite: HashMap::new(),
            threads: HashMap::new(),
            roots: HashMap::new(),
            paths: Vec::new(),
        }
    }

    /// Raw ticks to nanoseconds since the clock origin (as the Chrome export computes them).
    fn ns(&self, ticks: u64) -> i64 {
        let d = i128::from(ticks) - i128::from(self.origin_ticks);
        if self.ns_per_tick == 1.0 {
            i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
        } else {
            (d as f64 * self.ns_per_tick).round() as i64
        }
    }

    /// The name index of callsite `id`, made by `make` the first time.
    fn name(&mut self, id: u32, make: impl FnOnce() -> String) -> u32 {
        if let Some(&i) = self.by_callsite.get(&id) {
            return i;
        }
        let name = sanitize(&make());
        let i = match self.name_index.get(&name) {
            Some(&i) => i,
            None => {
                let i = self.names.len() as u32;
                self.names.push(name.clone());
                self.name_index.insert(name, i);
                i
            }
        };
        self.by_callsite.insert(id, i);
        i
    }

    fn thread(&mut self, tid: u32) -> &mut ThreadState {
        self.threads.entry(tid).or_default()
    }

    fn begin(&mut self, tid: u32, name: u32, ts: u64) {
        let start = self.ns(ts);
        let t = self.thread(tid);
        let first_child = t.waiting.len();
        t.open.push(Open { name, start, first_child });
    }

    fn end(&mut self, tid: u32, ts: u64) {
        let end = self.ns(ts);
        let t = self.thread(tid);
        let Some(open) = t.open.pop() else { return };
        let children: Vec<Node> = t.waiting.drain(open.first_child..).collect();
        let dur = end.saturating_sub(open.start).max(0) as u64;
        let node = node(open.name, open.start, dur, children);
        insert_sorted(t, node);
    }

    fn complete(&mut self, tid: u32, name: u32, ts: u64, duration: u64) {
        let start = self.ns(ts);
        let dur = self.ns(ts.saturating_add(duration)).saturating_sub(start).max(0) as u64;
        let t = self.thread(tid);
        let first = t.open.last().map_or(0, |o| o.first_child);
        let from = first + t.waiting[first..].partition_point(|n| n.start < start);
        let children: Vec<Node> = t.waiting.drain(from..).collect();
        insert_sorted(t, node(name, start, dur, children));
    }

    /// Adds the subtree `node` under the aggregate node `at`.
    fn add(&mut self, at: usize, node: &Node) {
        let child = match self.paths[at].children.get(&node.name) {
            Some(&c) => c,
            None => {
                let c = self.paths.len();
                self.paths.push(Path::default());
                self.paths[at].children.insert(node.name, c);
                c
            }
        };
        self.paths[child].self_ns += node.self_ns;
        for n in &node.children {
            self.add(child, n);
        }
    }

    /// Ends the stream: every waiting subtree is a root (under the begin slices still open); then
    /// the stacks, sorted.
    fn finish(mut self, thread_names: &HashMap<u32, &str>) -> Vec<(String, u64)> {
        let threads = std::mem::take(&mut self.threads);
        for (tid, t) in threads {
            let mut at = self.root(tid);
            let mut next_open = 0;
            for (i, node) in t.waiting.iter().enumerate() {
                while next_open < t.open.len() && t.open[next_open].first_child <= i {
                    let prefix =
                        Node { name: t.open[next_open].name, start: 0, dur: 0, self_ns: 0, children: vec![] };
                    self.add(at, &prefix);
                    at = self.paths[at].children[&prefix.name];
                    next_open += 1;
                }
                self.add(at, node);
            }
        }
        let mut out = Vec::new();
        let mut roots: Vec<(u32, usize)> = self.roots.iter().map(|(t, r)| (*t, *r)).collect();
        roots.sort_unstable();
        for (tid, root) in roots {
            let mut stack = match thread_names.get(&tid) {
                Some(n) => sanitize(n),
                None => format!("thread {tid}"),
            };
            self.emit(root, &mut stack, &mut out);
        }
        out.sort_unstable();
        out
    }

    fn root(&mut self, tid: u32) -> usize {
        *self.roots.entry(tid).or_insert_with(|| {
            self.paths.push(Path::default());
            self.paths.len() - 1
        })
    }

    fn emit(&self, at: usize, stack: &mut String, out: &mut Vec<(String, u64)>) {
        let p = &self.paths[at];
        if p.self_ns > 0 {
            out.push((stack.clone(), p.self_ns));
        }
        for (&name, &child) in &p.children {
            let len = stack.len();
            stack.push(';');
            stack.push_str(&self.names[name as usize]);
            self.emit(child, stack, out);
            stack.truncate(len);
        }
    }
}

/// A finished slice with its children: its self time is its duration minus theirs.
fn node(name: u32, start: i64, dur: u64, children: Vec<Node>) -> Node {
    let nested: u64 = children.iter().map(|c| c.dur).sum();
    Node { name, start, dur, self_ns: dur.saturating_sub(nested), children }
}

/// Adds `node` to the waiting subtrees of the innermost open slice, in start order.
fn insert_sorted(t: &mut ThreadState, node: Node) {
    let first = t.open.last().map_or(0, |o| o.first_child);
    let at = first + t.waiting[first..].partition_point(|n| n.start <= node.start);
    t.waiting.insert(at, node);
}

/// A name as a stack segment: `;` separates segments and a line break ends the line.
fn sanitize(name: &str) -> String {
    name.replace([';', '\n', '\r'], "_")
}

#[cfg(test)]
#[path = "folded_tests.rs"]
mod tests;

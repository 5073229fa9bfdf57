//! The folded stacks of a trace, sorted but not spelled out: a line is a thread, an interned path
//! (`nesting.rs`'s trie) and its self time, and its text (`thread;outer;inner`) is written only
//! when the line is.
//!
//! Spelled out, the stacks of n nested slices take n²/2 names, and those of n slices under a deep
//! path n times its depth; so [`Stacks::write`] writes them one line at a time, in the order of
//! their text, which [`Stacks::new`] sorts without making it (by the trie: where two paths part,
//! the names there, each followed by `;` if its path goes on, decide).
//!
//! A flame graph needs every line in memory ([`inferno`] keeps slices of them), and draws no frame
//! narrower than its minimum width. [`Stacks::flame_lines`] leaves out what it would not draw:
//! each run of adjacent sibling frames too narrow to be drawn, together still too narrow, becomes
//! one line holding their time, under the first one's name. Every frame drawn keeps its place and
//! width, so the picture is the same, in lines bounded by what can be drawn.
//!
//! Frames that can be drawn can still be many and deep (a thousand kinds a few hundred deep, with
//! long names); [`flame_lines`](Stacks::flame_lines) stops at a budget of text, and its caller
//! asks again with a wider minimum width until the lines fit.

use std::cmp::Ordering;
use std::io::{self, Write};

use rustc_hash::FxHashMap as HashMap;

use phosphor_model::nesting::{Label, PathId, Paths, DEEPER, ROOT};

/// A frame of a flame graph: a thread (by rank) and a path.
type Frame = (u32, PathId);

/// Adjacent sibling frames too narrow to draw, drawn as one.
struct Run {
    /// The first, which names them.
    first: Frame,
    /// Their parent (`None` for threads).
    parent: Option<Frame>,
    ns: u64,
}

/// One line: a thread (by the rank of its name), a path and its self time.
#[derive(Clone, Copy, Debug)]
struct Line {
    thread: u32,
    path: PathId,
    ns: u64,
}

/// Folded stacks, sorted as their text, then by their self time.
#[derive(Debug)]
pub(crate) struct Stacks {
    lines: Vec<Line>,
    /// The first segment of each thread's stacks, by rank: in the order of their text.
    threads: Vec<String>,
    /// Frame names, by label.
    names: Vec<Box<str>>,
    /// The name of the depth cap's marker.
    deeper: String,
    paths: Paths,
}

impl Stacks {
    /// The stacks of `times` (thread id, path, self time in ns; zero times are left out): the
    /// first segment of a thread's stacks is `thread(tid)`, a frame's name is `names[label]`.
    pub(crate) fn new(
        times: impl IntoIterator<Item = (u32, PathId, u64)>,
        mut thread: impl FnMut(u32) -> String,
        names: Vec<Box<str>>,
        paths: Paths,
    ) -> Stacks {
        let times: Vec<(u32, PathId, u64)> = times.into_iter().filter(|t| t.2 > 0).collect();
        // Threads by the text of their segment, each followed by the `;` of its first frame.
        let mut tids: Vec<u32> = times.iter().map(|t| t.0).collect();
        tids.sort_unstable();
        tids.dedup();
        let mut labels: Vec<(String, u32)> = tids.iter().map(|&tid| (thread(tid), tid)).collect();
        labels.sort_unstable_by(|a, b| a.0.bytes().chain([b';']).cmp(b.0.bytes().chain([b';'])));
        let mut rank: HashMap<u32, u32> = HashMap::default();
        let mut threads: Vec<String> = Vec::new();
        for (label, tid) in labels {
            if threads.last() != Some(&label) {
                threads.push(label);
            }
            rank.insert(tid, threads.len() as u32 - 1);
        }
        let deeper = format!("[deeper than {}]", paths.max_depth());
        let lines = times.into_iter().map(|(tid, path, ns)| Line { thread: rank[&tid], path, ns }).collect();
        let mut s = Stacks { lines, threads, names, deeper, paths };
        let mut lines = std::mem::take(&mut s.lines);
        lines.sort_unstable_by(|a, b| {
            a.thread.cmp(&b.thread).then_with(|| s.cmp_paths(a.path, b.path)).then(a.ns.cmp(&b.ns))
        });
        s.lines = lines;
        s
    }

    fn name(&self, label: Label) -> &str {
        if label == DEEPER {
            &self.deeper
        } else {
            &self.names[label as usize]
        }
    }

    /// The order of the text of two paths of one thread (`outer;inner`).
    fn cmp_paths(&self, a: PathId, b: PathId) -> Ordering {
        let p = &self.paths;
        if a == b {
            return Ordering::Equal;
        }
        // Up to the depth of the shallower; `*_on`: whether the text goes on past there.
        let (mut x, mut y, mut x_on, mut y_on) = (a, b, false, false);
        while p.depth(x) > p.depth(y) {
            (x, x_on) = (p.parent(x), true);
        }
        while p.depth(y) > p.depth(x) {
            (y, y_on) = (p.parent(y), true);
        }
        if x == y {
            // One is a prefix of the other: the shorter text comes first.
            return x_on.cmp(&y_on);
        }
        while p.parent(x) != p.parent(y) {
            (x, y, x_on, y_on) = (p.parent(x), p.parent(y), true, true);
        }
        let at_x = self.name(p.label(x)).bytes().chain(x_on.then_some(b';'));
        let at_y = self.name(p.label(y)).bytes().chain(y_on.then_some(b';'));
        match at_x.cmp(at_y) {
            // Two frames of one name where the paths part (a frame named like the depth marker):
            // the rest decides.
            Ordering::Equal => {
                let text = |path| {
                    let mut s = String::new();
                    self.push_path(path, &mut s);
                    s
                };
                text(a).cmp(&text(b))
            }
            o => o,
        }
    }

    /// Appends `;name` for each frame of `path`.
    fn push_path(&self, path: PathId, out: &mut String) {
        for label in self.paths.labels(path) {
            out.push(';');
            out.push_str(self.name(label));
        }
    }

    /// The text of a line's stack.
    fn stack(&self, thread: u32, path: PathId, out: &mut String) {
        out.clear();
        out.push_str(&self.threads[thread as usize]);
        self.push_path(path, out);
    }

    /// The stacks and their self times.
    pub(crate) fn to_vec(&self) -> Vec<(String, u64)> {
        let mut out = Vec::with_capacity(self.lines.len());
        for l in &self.lines {
            let mut s = String::new();
            self.stack(l.thread, l.path, &mut s);
            out.push((s, l.ns));
        }
        out
    }

    /// Writes the lines, `stack self-time-ns`.
    pub(crate) fn write(&self, out: &mut impl Write) -> io::Result<()> {
        let mut s = String::new();
        for l in &self.lines {
            self.stack(l.thread, l.path, &mut s);
            writeln!(out, "{s} {}", l.ns)?;
        }
        Ok(())
    }

    /// The lines a flame graph needs, one per line of text, when it draws no frame narrower than
    /// `min_width` percent of the whole (as [`inferno`] has it): see the module's notes. `None`
    /// once they pass `budget` bytes.
    pub(crate) fn flame_lines(&self, min_width: f64, budget: usize) -> Option<String> {
        let raw_total: u128 = self.lines.iter().map(|l| u128::from(l.ns)).sum();
        // inferno adds the counts up in a `usize`: past 2^62 ns in all (146 years: only a corrupt
        // clock gets there; an infinite rate once overflowed it), every count is divided alike,
        // which keeps the widths.
        let divisor = u64::try_from((raw_total >> 62) + 1).unwrap_or(u64::MAX);
        let total = u64::try_from(raw_total / u128::from(divisor)).unwrap_or(u64::MAX);
        // Exactly inferno's test of a frame, by its time.
        let min_time = min_width / (100.0 / total as f64);
        let drawn = |t: u64| ((t / divisor) as f64) >= min_time;
        let totals = self.frame_totals();
        let time = |thread: u32, path: PathId| totals[&(thread, path)];
        let mut out = String::new();
        let mut stack = String::new();
        let mut line = |thread: u32, path: PathId, ns: u64, out: &mut String| {
            self.stack(thread, path, &mut stack);
            out.push_str(&stack);
            out.push(' ');
            out.push_str(&(ns / divisor).to_string());
            out.push('\n');
            (out.len() <= budget).then_some(())
        };
        // The outermost frame too narrow to draw that the last line went into, and the run that
        // frame belongs to.
        let mut last: Option<Frame> = None;
        let mut run: Option<Run> = None;
        for l in &self.lines {
            // The outermost frame of this line too narrow to draw, if any.
            let (mut x, mut hidden) = (l.path, None);
            while !drawn(time(l.thread, x)) {
                hidden = Some(x);
                if x == ROOT {
                    break;
                }
                x = self.paths.parent(x);
            }
            let Some(x) = hidden else {
                if let Some(r) = run.take() {
                    line(r.first.0, r.first.1, r.ns, &mut out)?;
                }
                line(l.thread, l.path, l.ns, &mut out)?;
                last = None;
                continue;
            };
            if last == Some((l.thread, x)) {
                continue;
            }
            last = Some((l.thread, x));
            let parent = (x != ROOT).then(|| (l.thread, self.paths.parent(x)));
            let ns = time(l.thread, x);
            match &mut run {
                Some(r) if r.parent == parent && !drawn(r.ns.saturating_add(ns)) => r.ns += ns,
                _ => {
                    if let Some(r) = run.replace(Run { first: (l.thread, x), parent, ns }) {
                        line(r.first.0, r.first.1, r.ns, &mut out)?;
                    }
                }
            }
        }
        if let Some(r) = run {
            line(r.first.0, r.first.1, r.ns, &mut out)?;
        }
        Some(out)
    }

    /// The time of each frame (thread, path): its lines' and those of the frames inside it. A
    /// thread's own frame is its root.
    fn frame_totals(&self) -> HashMap<(u32, PathId), u64> {
        let mut totals: HashMap<(u32, PathId), u64> = HashMap::default();
        // The frames of each depth, to add up deepest first: a frame has all of its time when
        // it is added to its parent's.
        let mut by_depth: Vec<Vec<(u32, PathId)>> = Vec::new();
        let mut add = |key: (u32, PathId), ns: u64, by_depth: &mut Vec<Vec<(u32, PathId)>>| {
            let t = totals.entry(key).or_insert_with(|| {
                let depth = self.paths.depth(key.1) as usize;
                if by_depth.len() <= depth {
                    by_depth.resize_with(depth + 1, Vec::new);
                }
                by_depth[depth].push(key);
                0
            });
            *t = t.saturating_add(ns);
            *t
        };
        for l in &self.lines {
            add((l.thread, l.path), l.ns, &mut by_depth);
        }
        for depth in (1..by_depth.len()).rev() {
            for (thread, path) in std::mem::take(&mut by_depth[depth]) {
                let t = add((thread, path), 0, &mut by_depth);
                add((thread, self.paths.parent(path)), t, &mut by_depth);
            }
        }
        totals
    }
}

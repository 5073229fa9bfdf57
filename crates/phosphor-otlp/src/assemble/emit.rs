//! Final trees to OTLP spans: ids, parents, trace ids and the selection, written into spans kept
//! for reuse (a conversion hands its encoded spans back through [`Assembler::recycle`], so steady
//! state allocates only for what varies: owned names, string values, span events).
//!
//! [`Assembler::recycle`]: super::Assembler::recycle

use std::collections::{BinaryHeap, HashMap};

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::span::{Event as SpanEvent, SpanKind};

use super::tree::{Rec, Strings, Val};
use super::wire::Wire;
use super::AssembleStats;
use crate::ids::{GroupRoots, Ids};
use crate::select::Selection;
use crate::Span;

/// The longest scope path matched against `--path` globs; a span whose path is longer is not
/// selected by them (nor is its subtree).
pub const MAX_PATH_BYTES: usize = 1 << 16;
/// [`Ancestor::path_len`] of a path past [`MAX_PATH_BYTES`].
const TOO_LONG: usize = usize::MAX;

/// The most spans kept for reuse.
const MAX_SPARE: usize = 1 << 14;

/// OTLP's `SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK`: whether the parent is remote is known.
pub const HAS_IS_REMOTE: u32 = 0x100;
/// OTLP's `SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK`: the parent is remote (a caller's, from a
/// `traceparent`).
pub const IS_REMOTE: u32 = 0x200;
/// W3C trace flags' "sampled" bit: the program's own traces are sampled (they are exported).
const SAMPLED: u8 = 0x01;

/// The tail rule "slowest N per root name and minute" ranks trees in windows of this length.
pub const TAIL_WINDOW_NS: u64 = 60_000_000_000;
/// The most root names ranked apart in one window; later names share one ranking.
pub const MAX_RANKED_NAMES: usize = 1024;

/// A final tree waiting in the slowest-roots ranking: a min-heap on duration.
#[derive(Debug)]
struct Ranked {
    duration: u64,
    n: u64,
    tree: Vec<Rec>,
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        (self.duration, self.n) == (other.duration, other.n)
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Reversed: the heap's top is the shortest (then the latest) tree.
        (other.duration, other.n).cmp(&(self.duration, self.n))
    }
}

/// A span of the tree on [`Emitter::emit`]'s walk, as its children see it.
#[derive(Clone, Copy, Debug)]
struct Ancestor {
    /// The length of its path.
    path_len: usize,
    trace_id: [u8; 16],
    /// Its span id if it was kept, else its own nearest kept ancestor's (`None`: none).
    parent_for_children: Option<[u8; 8]>,
    /// The W3C trace flags of its trace.
    trace_flags: u8,
    /// Left out by head sampling (its subtree too, unless a caller's context takes part of it).
    sampled_out: bool,
    /// Its trace's `tracestate`: an index in [`Emitter::states`].
    state: Option<u32>,
}

/// Emits final trees as spans.
#[derive(Debug)]
pub(super) struct Emitter {
    pub ids: Ids,
    pub selection: Selection,
    pub strings: Strings,
    pub stats: AssembleStats,
    /// [`event_size`] of the span events held (pending, or in spans not yet emitted).
    pub event_bytes: usize,
    /// Spans ready for the caller.
    pub ready: Vec<Span>,
    /// A file's protobuf conversion: spans are encoded here instead of made `ready`.
    pub wire: Option<Wire>,
    /// Spans to reuse.
    spare: Vec<Span>,
    slowest: BinaryHeap<Ranked>,
    /// The tree being built: its spans in time order (a parent before its children), root
    /// first.
    pub tree: Vec<Rec>,
    path: String,
    /// The spans of the tree being emitted, by index.
    walked: Vec<Ancestor>,
    thread_key: u32,
    /// Which roots share a trace.
    pub group: GroupRoots,
    /// Live use: how long a tree may come after later ones (the assembler's hold).
    pub hold_ns: Option<u64>,
    /// The tail rule's rankings, by root name and window.
    windows: HashMap<(Box<str>, u64), BinaryHeap<Ranked>>,
    /// The latest root start of a tree ranked so far.
    latest_start: u64,
    /// The `tracestate`s of the tree being emitted.
    states: Vec<Box<str>>,
}

impl Emitter {
    pub fn new(ids: Ids, selection: Selection) -> Emitter {
        let mut strings = Strings::default();
        let thread_key = strings.id("thread.id");
        Emitter {
            ids,
            selection,
            strings,
            stats: AssembleStats::default(),
            event_bytes: 0,
            ready: Vec::new(),
            wire: None,
            spare: Vec::new(),
            slowest: BinaryHeap::new(),
            tree: Vec::new(),
            path: String::new(),
            walked: Vec::new(),
            thread_key,
            group: GroupRoots::None,
            hold_ns: None,
            windows: HashMap::new(),
            latest_start: 0,
            states: Vec::new(),
        }
    }

    /// Spans to reuse (at most [`MAX_SPARE`] are kept).
    pub fn recycle(&mut self, spans: &mut Vec<Span>) {
        if self.spare.is_empty() {
            // The whole vector, without moving a span.
            std::mem::swap(&mut self.spare, spans);
        } else {
            let room = MAX_SPARE.saturating_sub(self.spare.len());
            let keep = spans.len().min(room);
            self.spare.extend(spans.drain(..keep));
        }
        spans.clear();
    }

    /// Keeps the spans left in [`Emitter::ready`] (a flush is done with them) for reuse.
    pub fn recycle_ready(&mut self) {
        let mut spans = std::mem::take(&mut self.ready);
        self.recycle(&mut spans);
        self.ready = spans;
    }

    /// Moves the ready spans to the end of `out` (swapping the vectors when `out` is empty).
    pub fn take_ready(&mut self, out: &mut Vec<Span>) {
        if out.is_empty() {
            std::mem::swap(out, &mut self.ready);
        } else {
            out.append(&mut self.ready);
        }
    }

    /// The tree in [`Emitter::tree`] (root first) is final: sampled, ranked or emitted.
    pub fn finalize(&mut self) {
        let Some(root) = self.tree.first() else { return };
        let head = &self.selection.sampling;
        if head.ratio.is_some()
            && self.tree.iter().all(|r| r.context.is_none())
            && !head.keeps_trace(&self.ids.trace(root.n))
        {
            // Left out whole: no caller's context in it says otherwise.
            self.stats.spans_sampled_out += self.tree.len() as u64;
            let tree = std::mem::take(&mut self.tree);
            return self.forget(tree);
        }
        if self.selection.tail.any() {
            self.tail();
        } else {
            self.rank();
        }
    }

    /// The tail rules: the tree is kept, ranked in its window, or dropped.
    fn tail(&mut self) {
        let Some(root) = self.tree.first() else { return };
        let (start, n) = (root.start, root.n);
        let longest = self.tree.iter().map(|r| r.end - r.start).max().unwrap_or(0);
        let error = self.tree.iter().any(|r| r.error);
        if self.selection.tail.keeps(longest, error) {
            return self.rank();
        }
        let tree = std::mem::take(&mut self.tree);
        let Some(keep) = self.selection.tail.slowest_per_minute else {
            self.stats.spans_tail_dropped += tree.len() as u64;
            return self.forget(tree);
        };
        let window = start / TAIL_WINDOW_NS;
        let mut name: Box<str> = self.strings.text(&tree[0].name).into();
        if self.windows.len() >= MAX_RANKED_NAMES && !self.windows.contains_key(&(name.clone(), window)) {
            name = "".into();
        }
        let heap = self.windows.entry((name, window)).or_default();
        heap.push(Ranked { duration: longest, n, tree });
        if heap.len() > keep {
            if let Some(out) = heap.pop() {
                self.stats.spans_tail_dropped += out.tree.len() as u64;
                self.forget(out.tree);
            }
        }
        self.latest_start = self.latest_start.max(start);
        if let Some(hold) = self.hold_ns {
            // Live: a window is over once trees starting a hold past its end have come (a
            // thread's trees are final within a hold of each other); its trees go on.
            let now = self.latest_start;
            let over: Vec<(Box<str>, u64)> = self
                .windows
                .keys()
                .filter(|(_, w)| (w + 1).saturating_mul(TAIL_WINDOW_NS).saturating_add(hold) < now)
                .cloned()
                .collect();
            self.close_windows(over);
        }
    }

    /// Hands the trees ranked in `windows` on, in time order.
    fn close_windows(&mut self, windows: Vec<(Box<str>, u64)>) {
        let mut trees: Vec<Ranked> =
            windows.iter().filter_map(|k| self.windows.remove(k)).flat_map(BinaryHeap::into_vec).collect();
        trees.sort_by_key(|r| (r.tree.first().map_or(0, |root| root.start), r.n));
        for r in trees {
            self.tree = r.tree;
            self.rank();
        }
    }

    /// Forgets a tree's span events (their bytes are no longer held).
    fn forget(&mut self, tree: Vec<Rec>) {
        for rec in &tree {
            self.event_bytes -= rec.events.iter().map(event_size).sum::<usize>();
        }
    }

    /// The tree in [`Emitter::tree`] is kept by sampling: ranked (slowest roots) or emitted.
    fn rank(&mut self) {
        let Some(keep) = self.selection.slowest_roots else {
            return self.emit();
        };
        let Some(root) = self.tree.first() else { return };
        let (duration, n) = (root.end - root.start, root.n);
        let tree = std::mem::take(&mut self.tree);
        self.slowest.push(Ranked { duration, n, tree });
        if self.slowest.len() > keep {
            if let Some(out) = self.slowest.pop() {
                self.stats.spans_unselected += out.tree.len() as u64;
                for rec in &out.tree {
                    self.event_bytes -= rec.events.iter().map(event_size).sum::<usize>();
                }
            }
        }
    }

    /// The end: the trees ranked so far are emitted, in time order.
    pub fn finish(&mut self) {
        let windows: Vec<(Box<str>, u64)> = self.windows.keys().cloned().collect();
        self.close_windows(windows);
        let mut slowest = std::mem::take(&mut self.slowest).into_vec();
        slowest.sort_by_key(|r| (r.tree.first().map_or(0, |root| root.start), r.n));
        for Ranked { tree, .. } in slowest {
            self.tree = tree;
            self.emit();
        }
    }

    /// Emits [`Emitter::tree`] into `ready`, selected, with trace and parent ids; empties it.
    /// Every span comes after its parent and its parent's earlier children's subtrees (time order,
    /// depth first), so the path of the parent is a prefix of the path being built.
    fn emit(&mut self) {
        let mut tree = std::mem::take(&mut self.tree);
        let Some(root) = tree.first() else {
            self.tree = tree;
            return;
        };
        let root_trace = self.ids.root_trace(self.group, root.n, root.start);
        let head_out = !self.selection.sampling.keeps_trace(&self.ids.trace(root.n));
        let paths = !self.selection.paths.is_empty();
        self.walked.clear();
        self.path.clear();
        self.states.clear();
        for mut rec in tree.drain(..) {
            self.event_bytes -= rec.events.iter().map(event_size).sum::<usize>();
            let parent = self.walked.get(rec.parent as usize).copied();
            let is_root = parent.is_none();
            let (mut trace_id, mut parent_id, mut trace_flags, mut sampled_out, mut state) = match parent {
                Some(a) => (a.trace_id, a.parent_for_children, a.trace_flags, a.sampled_out, a.state),
                None => (root_trace, None, SAMPLED, head_out, None),
            };
            let mut flags = HAS_IS_REMOTE;
            if let Some(c) = rec.context.take() {
                // This subtree joins the caller's trace, under the caller's span, and follows the
                // caller's sampling decision.
                trace_id = c.trace_id;
                parent_id = Some(c.parent_span_id);
                trace_flags = c.flags;
                sampled_out = !self.selection.sampling.keeps_caller(c.flags);
                flags |= IS_REMOTE;
                state = None;
            }
            if let Some(s) = rec.trace_state.take() {
                state = Some(self.states.len() as u32);
                self.states.push(s);
            }
            let trace_state = state.map_or("", |i| &self.states[i as usize]);
            let flags = flags | u32::from(trace_flags);
            let name = self.strings.text(&rec.name);
            // A path past MAX_PATH_BYTES (a hostile file: thousands of nested scopes of long
            // names) is not built further and matches no glob; `TOO_LONG` marks it for the subtree.
            let mut too_long = false;
            if paths {
                let from = parent.map_or(0, |a| a.path_len);
                too_long = from == TOO_LONG || from + 1 + name.len() > MAX_PATH_BYTES;
                if !too_long {
                    self.path.truncate(from);
                    if !self.path.is_empty() {
                        self.path.push('/');
                    }
                    self.path.push_str(name);
                }
            }
            let duration = rec.end - rec.start;
            let kept = !sampled_out && !too_long && self.selection.keeps(&self.path, duration, is_root);
            let parent_for_children = if kept {
                let id = self.ids.span(rec.n);
                let ids = Ids3 { trace: &trace_id, span: &id, parent: parent_id, flags, state: trace_state };
                match &mut self.wire {
                    Some(wire) => wire.span(&rec, &self.strings, self.thread_key, &ids),
                    None => {
                        let mut span = self.spare.pop().unwrap_or_default();
                        fill(&mut span, &mut rec, &self.strings, self.thread_key, &ids);
                        self.ready.push(span);
                    }
                }
                Some(id)
            } else {
                if sampled_out {
                    self.stats.spans_sampled_out += 1;
                } else {
                    self.stats.spans_unselected += 1;
                }
                parent_id
            };
            let path_len = if too_long { TOO_LONG } else { self.path.len() };
            self.walked.push(Ancestor {
                path_len,
                trace_id,
                parent_for_children,
                trace_flags,
                sampled_out,
                state,
            });
        }
        self.tree = tree;
    }
}

/// What a span event counts for in [`Emitter::event_bytes`]: its strings and a fixed part.
pub(super) fn event_size(e: &SpanEvent) -> usize {
    let value = |kv: &KeyValue| match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.len(),
        _ => 0,
    };
    64 + e.name.len() + e.attributes.iter().map(|kv| 48 + kv.key.len() + value(kv)).sum::<usize>()
}

/// A span's ids and flags.
pub(super) struct Ids3<'a> {
    pub trace: &'a [u8; 16],
    pub span: &'a [u8; 8],
    pub parent: Option<[u8; 8]>,
    /// `Span.flags`: the W3C trace flags, [`HAS_IS_REMOTE`] and [`IS_REMOTE`].
    pub flags: u32,
    /// `Span.trace_state`: the caller's `tracestate` (empty: none).
    pub state: &'a str,
}

/// Writes `rec` into `span`, reusing its strings and vectors.
fn fill(span: &mut Span, rec: &mut Rec, strings: &Strings, thread_key: u32, ids: &Ids3<'_>) {
    span.trace_id.clear();
    span.trace_id.extend_from_slice(ids.trace);
    span.span_id.clear();
    span.span_id.extend_from_slice(ids.span);
    span.trace_state.clear();
    span.trace_state.push_str(ids.state);
    span.parent_span_id.clear();
    if let Some(p) = ids.parent {
        span.parent_span_id.extend_from_slice(&p);
    }
    span.flags = ids.flags;
    span.name.clear();
    span.name.push_str(strings.text(&rec.name));
    span.kind = SpanKind::Internal as i32;
    span.start_time_unix_nano = rec.start;
    span.end_time_unix_nano = rec.end;
    let mut n = 0;
    for a in &rec.attrs {
        set(&mut span.attributes, n, strings.get(a.key), &a.value);
        n += 1;
    }
    if let Some(tid) = rec.tid {
        set(&mut span.attributes, n, strings.get(thread_key), &Val::Int(i64::from(tid)));
        n += 1;
    }
    span.attributes.truncate(n);
    span.dropped_attributes_count = 0;
    span.events.clear();
    span.events.append(&mut rec.events);
    span.dropped_events_count = 0;
    span.links.clear();
    span.dropped_links_count = 0;
    span.status = None;
}

/// Sets attribute `i` of `attributes` (pushing it when `i` is the length), reusing its key and a
/// string value's buffer.
fn set(attributes: &mut Vec<KeyValue>, i: usize, key: &str, value: &Val) {
    if i == attributes.len() {
        attributes.push(KeyValue::default());
    }
    let kv = &mut attributes[i];
    kv.key.clear();
    kv.key.push_str(key);
    let slot = kv.value.get_or_insert_with(AnyValue::default);
    match value {
        Val::Int(v) => slot.value = Some(any_value::Value::IntValue(*v)),
        Val::Double(v) => slot.value = Some(any_value::Value::DoubleValue(*v)),
        Val::Bool(v) => slot.value = Some(any_value::Value::BoolValue(*v)),
        Val::Str(s) => match &mut slot.value {
            Some(any_value::Value::StringValue(buf)) => {
                buf.clear();
                buf.push_str(s);
            }
            other => *other = Some(any_value::Value::StringValue(s.to_string())),
        },
    }
}

impl Emitter {
    /// Attributes as OTLP key-values (for span events, which are built once).
    pub fn key_values(&self, attrs: &[super::tree::Attr]) -> Vec<KeyValue> {
        let mut out = Vec::with_capacity(attrs.len());
        for (i, a) in attrs.iter().enumerate() {
            set(&mut out, i, self.strings.get(a.key), &a.value);
        }
        out
    }
}

//! Events to spans.
//!
//! Per thread, an [`Assembler`] keeps a stack of open begin/end scopes and a list of *pending*
//! items: finished spans (each with its subtree) that have no parent yet, and logs and instants
//! that no span has taken yet, in file order. A scope arrives at its end (a complete event is
//! recorded when it ends, after the scopes nested in it; an end event closes the innermost begin):
//! it takes as children the pending spans that start at or after its start, and as span events
//! the pending logs and instants at or after its start. Pending items of one thread never overlap,
//! so those are the last ones: they are popped from the back. What is left pending is a root
//! until something encloses it.
//!
//! A pending root is final when nothing can take it any more: files only know that at the end
//! ([`Assembler::finish`]), live use after `hold_ns` of trace time ([`Assembler::drain`]). Memory
//! is bounded: past [`MAX_HELD_PER_THREAD`] spans held by one thread, its oldest pending items are
//! final as they are (counted in [`AssembleStats::evicted_roots`]). A log or instant that no span
//! takes is counted in [`AssembleStats::events_outside_spans`] and dropped.
//!
//! A trace context event (`trace_context!`, see [`crate::context`]) is pending like a log: the
//! scope that takes it, the innermost one open on its thread at its time, joins the context's
//! trace (its trace id, the caller's span as its parent) with its subtree; one naming an async id
//! goes to that async slice. A context nothing takes is counted in
//! [`AssembleStats::contexts_unapplied`].
//!
//! Async slices (begin/end with the same id and name, on any thread) are spans of their own, roots
//! of their own traces; an end read before its begin (another thread's chunk reached the file
//! first) waits for it, up to [`MAX_OPEN_ASYNC`] such ends. Arguments are typed attributes (`int`, `double`, `string`, `bool`;
//! pointers as `0x…` strings; a `u64` past `i64::MAX` as a string). Times are wall-clock Unix
//! nanoseconds through the header's clock; a span's length is its ticks in ns, as `phosphor stats`
//! counts it.

use std::collections::{BinaryHeap, HashMap, VecDeque};

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::span::{Event as SpanEvent, SpanKind};
use phosphor_format::clock::ClockInfo;
use phosphor_format::file::{Event, Header, Value};
use phosphor_format::Phase;

use crate::context::{trace_context_of, TraceContext};
use crate::ids::Ids;
use crate::select::Selection;
use crate::Span;

/// How many spans one thread may hold (pending roots and their subtrees) before its oldest
/// pending items are final as they are.
pub const MAX_HELD_PER_THREAD: usize = 1 << 14;
/// How deep a thread's begin/end scopes may nest; deeper begins are counted and ignored.
pub const MAX_OPEN_PER_THREAD: usize = 1024;
/// How many async slices may be open at once; later begins are counted and ignored.
pub const MAX_OPEN_ASYNC: usize = 1 << 16;

/// How an [`Assembler`] makes spans.
#[derive(Clone, Debug, Default)]
pub struct AssembleOptions {
    /// Which spans are kept.
    pub selection: Selection,
    /// Live use: a finished span whose parent has not come after this much trace time (ns) is
    /// final as it is (a root). `None` (files): nothing is final before [`Assembler::finish`].
    pub hold_ns: Option<u64>,
}

/// What an [`Assembler`] has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AssembleStats {
    /// Spans made (before selection).
    pub spans: u64,
    /// Spans the selection left out.
    pub spans_unselected: u64,
    /// Log events attached to spans as span events.
    pub span_events: u64,
    /// Logs and instants that no span took (dropped).
    pub events_outside_spans: u64,
    /// Pending items made final early because their thread held too many spans (the spans are
    /// roots, the logs dropped and also counted in `events_outside_spans`).
    pub evicted_roots: u64,
    /// Begins never ended (at the end of the input, or past the open caps): no span is made.
    pub unclosed: u64,
    /// Ends with no open begin (a begin lost, or before the file's first chunk).
    pub unmatched_ends: u64,
    /// Trace contexts applied to a scope or async slice.
    pub contexts: u64,
    /// Trace contexts that no scope or async slice took (no scope open at their time on their
    /// thread, or no async slice of their id).
    pub contexts_unapplied: u64,
}

/// A finished span with its subtree.
#[derive(Debug, Default)]
struct Node {
    span: Span,
    /// Number in the file (for the trace id of a root).
    n: u64,
    children: Vec<Node>,
    /// Spans in this subtree, itself included.
    size: usize,
    /// The distributed trace this subtree joins, if a trace context was recorded in it.
    context: Option<TraceContext>,
}

impl Drop for Node {
    // Iterative: a hostile file can nest a million scopes.
    fn drop(&mut self) {
        let mut stack = std::mem::take(&mut self.children);
        while let Some(mut n) = stack.pop() {
            stack.append(&mut n.children);
        }
    }
}

#[derive(Debug)]
enum Item {
    Span(Box<Node>),
    Event(SpanEvent),
    /// A trace context recorded at this time, for the scope that takes it.
    Context(u64, TraceContext),
}

impl Item {
    fn start(&self) -> u64 {
        match self {
            Item::Span(n) => n.span.start_time_unix_nano,
            Item::Event(e) => e.time_unix_nano,
            Item::Context(t, _) => *t,
        }
    }
}

#[derive(Debug)]
struct Open {
    start: u64,
    name: String,
    attributes: Vec<KeyValue>,
}

#[derive(Debug, Default)]
struct Thread {
    open: Vec<Open>,
    pending: VecDeque<Item>,
    held: usize,
}

/// A final tree waiting in the slowest-roots ranking: a min-heap on duration.
#[derive(Debug)]
struct Ranked(u64, u64, Node);

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        (self.0, self.1) == (other.0, other.1)
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
        (other.0, other.1).cmp(&(self.0, self.1))
    }
}

/// Builds spans from one trace file's events, read in file order.
#[derive(Debug)]
pub struct Assembler {
    clock: ClockInfo,
    ids: Ids,
    options: AssembleOptions,
    threads: HashMap<u32, Thread>,
    asyncs: HashMap<(u64, String), Open>,
    /// Async ends read before their begins (another thread's chunk can reach the file first):
    /// the end time and arguments.
    early_ends: HashMap<(u64, String), (u64, Vec<KeyValue>)>,
    /// Trace contexts for async slices, by async id, until the slice is made.
    async_contexts: HashMap<u64, TraceContext>,
    ready: Vec<Span>,
    slowest: BinaryHeap<Ranked>,
    next: u64,
    now: u64,
    /// Live use: trace time (ns) gone by since the last event, by the caller's clock
    /// ([`Assembler::idle`]); the present is `now + idle_ns`.
    idle_ns: u64,
    stats: AssembleStats,
}

impl Assembler {
    /// An assembler for the file whose header is `header`.
    pub fn new(header: &Header, options: AssembleOptions) -> Assembler {
        Assembler {
            clock: header.clock.clone(),
            ids: Ids::new(header),
            options,
            threads: HashMap::new(),
            asyncs: HashMap::new(),
            early_ends: HashMap::new(),
            async_contexts: HashMap::new(),
            ready: Vec::new(),
            slowest: BinaryHeap::new(),
            next: 0,
            now: 0,
            idle_ns: 0,
            stats: AssembleStats::default(),
        }
    }

    /// Takes one event (in file order).
    pub fn push(&mut self, event: &Event<'_>) {
        self.idle_ns = 0;
        let start = self.clock.to_wall_ns(event.ts);
        if let Some((context, async_id)) = trace_context_of(event) {
            self.now = self.now.max(start);
            match async_id {
                Some(id)
                    if self.async_contexts.len() < MAX_OPEN_ASYNC
                        || self.async_contexts.contains_key(&id) =>
                {
                    if self.async_contexts.insert(id, context).is_some() {
                        self.stats.contexts_unapplied += 1;
                    }
                }
                Some(_) => self.stats.contexts_unapplied += 1,
                None => {
                    let thread = self.threads.entry(event.tid).or_default();
                    thread.pending.push_back(Item::Context(start, context));
                    self.bound(event.tid);
                }
            }
            return;
        }
        match event.phase() {
            Phase::Complete | Phase::LockWait | Phase::LockHeld => {
                let end = start.saturating_add(self.clock.ticks_to_ns(event.duration.unwrap_or(0)));
                self.now = self.now.max(end);
                let (name, attributes) = name_and_attributes(event);
                self.close(event.tid, start, end, name, attributes);
            }
            Phase::Begin => {
                self.now = self.now.max(start);
                let thread = self.threads.entry(event.tid).or_default();
                if thread.open.len() >= MAX_OPEN_PER_THREAD {
                    self.stats.unclosed += 1;
                    return;
                }
                let (name, attributes) = name_and_attributes(event);
                thread.open.push(Open { start, name, attributes });
            }
            Phase::End => {
                self.now = self.now.max(start);
                let Some(open) = self.threads.get_mut(&event.tid).and_then(|t| t.open.pop()) else {
                    self.stats.unmatched_ends += 1;
                    return;
                };
                let mut attributes = open.attributes;
                attributes.extend(name_and_attributes(event).1);
                self.close(event.tid, open.start, start, open.name, attributes);
            }
            Phase::AsyncBegin => {
                self.now = self.now.max(start);
                if self.asyncs.len() >= MAX_OPEN_ASYNC {
                    self.stats.unclosed += 1;
                    return;
                }
                let (name, mut attributes) = name_and_attributes(event);
                let id = event.async_id.unwrap_or(0);
                attributes.push(kv("phosphor.async_id", any_value::Value::IntValue(id as i64)));
                if let Some((end, more)) = self.early_ends.remove(&(id, name.clone())) {
                    attributes.extend(more);
                    let mut node = self.node(start, end, name, attributes);
                    node.context = self.async_context(id);
                    return self.finalize(node);
                }
                let open = Open { start, name: name.clone(), attributes };
                if self.asyncs.insert((id, name), open).is_some() {
                    self.stats.unclosed += 1;
                }
            }
            Phase::AsyncEnd => {
                self.now = self.now.max(start);
                let (name, attributes) = name_and_attributes(event);
                let key = (event.async_id.unwrap_or(0), name);
                let Some(mut open) = self.asyncs.remove(&key) else {
                    if self.early_ends.len() >= MAX_OPEN_ASYNC
                        || self.early_ends.insert(key, (start, attributes)).is_some()
                    {
                        self.stats.unmatched_ends += 1;
                    }
                    return;
                };
                open.attributes.extend(attributes);
                let mut node = self.node(open.start, start, open.name, open.attributes);
                node.context = self.async_context(key.0);
                self.finalize(node);
            }
            Phase::Log | Phase::Instant => {
                self.now = self.now.max(start);
                let (name, attributes) =
                    if event.phase() == Phase::Log { log_message(event) } else { name_and_attributes(event) };
                let e = SpanEvent { time_unix_nano: start, name, attributes, dropped_attributes_count: 0 };
                let thread = self.threads.entry(event.tid).or_default();
                thread.pending.push_back(Item::Event(e));
                self.bound(event.tid);
            }
            _ => {}
        }
    }

    /// Moves the spans that are final (live use: see [`AssembleOptions::hold_ns`]) into `out`.
    pub fn drain(&mut self, out: &mut Vec<Span>) {
        if let Some(hold) = self.options.hold_ns {
            let now = self.now.saturating_add(self.idle_ns);
            let mut done = Vec::new();
            for thread in self.threads.values_mut() {
                let outer = thread.open.first().map_or(u64::MAX, |o| o.start);
                while let Some(item) = thread.pending.front() {
                    let end = match item {
                        Item::Span(n) => n.span.end_time_unix_nano,
                        Item::Event(_) | Item::Context(..) => item.start(),
                    };
                    if end.saturating_add(hold) > now || item.start() >= outer {
                        break;
                    }
                    let item = thread.pending.pop_front().expect("front was there");
                    if let Item::Span(n) = &item {
                        thread.held -= n.size;
                    }
                    done.push(item);
                }
            }
            for item in done {
                self.final_item(item);
            }
        }
        out.append(&mut self.ready);
    }

    /// Live use: `ns` of time went by with no event (the caller's wall clock, which a live trace's
    /// clock follows). [`drain`](Self::drain) then counts it on top of the latest event's time,
    /// so the spans of a program that stopped recording are not held for ever; the next event
    /// forgets it.
    pub fn idle(&mut self, ns: u64) {
        self.idle_ns = self.idle_ns.saturating_add(ns);
    }

    /// The end of the input: moves every span left into `out`.
    pub fn finish(&mut self, out: &mut Vec<Span>) {
        let mut tids: Vec<u32> = self.threads.keys().copied().collect();
        tids.sort_unstable();
        for tid in tids {
            let thread = self.threads.remove(&tid).unwrap_or_default();
            self.stats.unclosed += thread.open.len() as u64;
            for item in thread.pending {
                self.final_item(item);
            }
        }
        self.stats.unclosed += self.asyncs.len() as u64;
        self.asyncs.clear();
        self.stats.unmatched_ends += self.early_ends.len() as u64;
        self.early_ends.clear();
        self.stats.contexts_unapplied += self.async_contexts.len() as u64;
        self.async_contexts.clear();
        let mut slowest = std::mem::take(&mut self.slowest).into_vec();
        slowest.sort_by_key(|r| (r.2.span.start_time_unix_nano, r.1));
        for Ranked(_, _, node) in slowest {
            self.emit(node);
        }
        out.append(&mut self.ready);
    }

    /// The figures so far.
    pub fn stats(&self) -> AssembleStats {
        self.stats
    }

    fn node(&mut self, start: u64, end: u64, name: String, attributes: Vec<KeyValue>) -> Node {
        let n = self.next;
        self.next += 1;
        self.stats.spans += 1;
        let span = Span {
            span_id: self.ids.span(n).to_vec(),
            name,
            kind: SpanKind::Internal as i32,
            start_time_unix_nano: start,
            end_time_unix_nano: end.max(start),
            attributes,
            ..Span::default()
        };
        Node { span, n, children: Vec::new(), size: 1, context: None }
    }

    /// The trace context recorded for async slice `id`, if any (applied, so counted).
    fn async_context(&mut self, id: u64) -> Option<TraceContext> {
        let c = self.async_contexts.remove(&id);
        self.stats.contexts += u64::from(c.is_some());
        c
    }

    /// A scope of thread `tid` ended: it takes its pending children and events.
    fn close(&mut self, tid: u32, start: u64, end: u64, name: String, mut attributes: Vec<KeyValue>) {
        attributes.push(kv("thread.id", any_value::Value::IntValue(i64::from(tid))));
        let mut node = self.node(start, end, name, attributes);
        let thread = self.threads.entry(tid).or_default();
        let mut taken = Vec::new();
        while thread.pending.back().is_some_and(|i| i.start() >= start) {
            taken.push(thread.pending.pop_back().expect("back was there"));
        }
        for item in taken.into_iter().rev() {
            match item {
                Item::Span(child) => {
                    node.size += child.size;
                    thread.held -= child.size;
                    node.children.push(*child);
                }
                Item::Event(e) => {
                    self.stats.span_events += 1;
                    node.span.events.push(e);
                }
                Item::Context(_, c) => {
                    // The latest context recorded in the scope wins; an earlier one is not applied.
                    if node.context.replace(c).is_some() {
                        self.stats.contexts_unapplied += 1;
                    } else {
                        self.stats.contexts += 1;
                    }
                }
            }
        }
        thread.held += node.size;
        thread.pending.push_back(Item::Span(Box::new(node)));
        self.bound(tid);
    }

    /// Past the cap, the thread's oldest pending items are final.
    fn bound(&mut self, tid: u32) {
        let Some(thread) = self.threads.get_mut(&tid) else { return };
        let mut done = Vec::new();
        while thread.held > MAX_HELD_PER_THREAD || thread.pending.len() > MAX_HELD_PER_THREAD {
            let Some(item) = thread.pending.pop_front() else { break };
            if let Item::Span(n) = &item {
                thread.held -= n.size;
            }
            self.stats.evicted_roots += 1;
            done.push(item);
        }
        for item in done {
            self.final_item(item);
        }
    }

    fn final_item(&mut self, item: Item) {
        match item {
            Item::Span(node) => self.finalize(*node),
            Item::Event(_) => self.stats.events_outside_spans += 1,
            Item::Context(..) => self.stats.contexts_unapplied += 1,
        }
    }

    /// A root is final: ranked (slowest roots) or emitted.
    fn finalize(&mut self, node: Node) {
        let Some(n) = self.options.selection.slowest_roots else {
            return self.emit(node);
        };
        let duration = node.span.end_time_unix_nano - node.span.start_time_unix_nano;
        self.slowest.push(Ranked(duration, node.n, node));
        if self.slowest.len() > n {
            if let Some(Ranked(_, _, out)) = self.slowest.pop() {
                self.stats.spans_unselected += out.size as u64;
            }
        }
    }

    /// A final tree into `ready`, selected, with trace and parent ids (iterative: trees can be
    /// deep).
    fn emit(&mut self, root: Node) {
        let trace_id = self.ids.trace(root.n).to_vec();
        let mut path = String::new();
        let mut stack = vec![ToEmit { node: root, parent: Vec::new(), prefix: 0, is_root: true, trace_id }];
        while let Some(ToEmit { mut node, mut parent, prefix, is_root, mut trace_id }) = stack.pop() {
            if let Some(c) = node.context.take() {
                // This subtree joins the caller's trace, under the caller's span.
                trace_id = c.trace_id.to_vec();
                parent = c.parent_span_id.to_vec();
            }
            let children = std::mem::take(&mut node.children);
            path.truncate(prefix);
            if !path.is_empty() {
                path.push('/');
            }
            path.push_str(&node.span.name);
            let mut span = std::mem::take(&mut node.span);
            let duration = span.end_time_unix_nano - span.start_time_unix_nano;
            let kept = self.options.selection.keeps(&path, duration, is_root);
            let child_parent = if kept {
                span.trace_id.clone_from(&trace_id);
                span.parent_span_id = parent;
                let id = span.span_id.clone();
                self.ready.push(span);
                id
            } else {
                self.stats.spans_unselected += 1;
                parent
            };
            let here = path.len();
            for child in children.into_iter().rev() {
                let (parent, trace_id) = (child_parent.clone(), trace_id.clone());
                stack.push(ToEmit { node: child, parent, prefix: here, is_root: false, trace_id });
            }
        }
    }
}

/// A node on `emit`'s stack.
struct ToEmit {
    node: Node,
    /// The nearest kept ancestor's span id (empty: none).
    parent: Vec<u8>,
    /// The length of the parent's path.
    prefix: usize,
    is_root: bool,
    trace_id: Vec<u8>,
}

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue { key: key.to_owned(), value: Some(AnyValue { value: Some(value) }), ..KeyValue::default() }
}

fn any(value: Value<'_>) -> any_value::Value {
    match value {
        Value::I64(v) => any_value::Value::IntValue(v),
        Value::U64(v) => match i64::try_from(v) {
            Ok(v) => any_value::Value::IntValue(v),
            Err(_) => any_value::Value::StringValue(v.to_string()),
        },
        Value::F64(v) => any_value::Value::DoubleValue(v),
        Value::Bool(v) => any_value::Value::BoolValue(v),
        Value::Str(s) => any_value::Value::StringValue(s.to_owned()),
        Value::Pointer(p) => any_value::Value::StringValue(format!("{p:#x}")),
    }
}

/// The event's name (argument 0 for a dynamic name) and its other arguments as attributes.
fn name_and_attributes(event: &Event<'_>) -> (String, Vec<KeyValue>) {
    let mut name = event.callsite.name.as_str().to_owned();
    let mut attributes = Vec::new();
    for (i, (key, value)) in event.args.iter().enumerate().filter_map(|(i, a)| Some((i, (*a)?))) {
        if i == 0 && event.callsite.dynamic_name {
            if let Value::Str(s) = value {
                s.clone_into(&mut name);
                continue;
            }
        }
        attributes.push(kv(key, any(value)));
    }
    (name, attributes)
}

/// A log's message (its format with `{…}` placeholders filled by its parameters, in order) and its
/// level as `log.severity`.
fn log_message(event: &Event<'_>) -> (String, Vec<KeyValue>) {
    let format = event.callsite.name.as_str();
    let mut params = event.params.iter();
    let mut message = String::with_capacity(format.len());
    let mut rest = format;
    while let Some(i) = rest.find(['{', '}']) {
        message.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            message.push_str(&tail[..1]);
            rest = &tail[2..];
        } else if let (true, Some(close)) = (tail.starts_with('{'), tail.find('}')) {
            match params.next() {
                Some(Value::Str(s)) => message.push_str(s),
                Some(Value::I64(v)) => message.push_str(&v.to_string()),
                Some(Value::U64(v)) => message.push_str(&v.to_string()),
                Some(Value::F64(v)) => message.push_str(&v.to_string()),
                Some(Value::Bool(v)) => message.push_str(&v.to_string()),
                Some(Value::Pointer(p)) => message.push_str(&format!("{p:#x}")),
                None => message.push_str(&tail[..=close]),
            }
            rest = &tail[close + 1..];
        } else {
            message.push_str(&tail[..1]);
            rest = &tail[1..];
        }
    }
    message.push_str(rest);
    let mut attributes = Vec::new();
    if let Some(level) = event.callsite.level {
        attributes.push(kv("log.severity", any_value::Value::StringValue(format!("{level:?}"))));
    }
    (message, attributes)
}

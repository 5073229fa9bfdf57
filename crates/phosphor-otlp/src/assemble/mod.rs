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

mod emit;
mod tree;

pub use self::emit::MAX_PATH_BYTES;

use std::collections::HashMap;

use opentelemetry_proto::tonic::trace::v1::span::Event as SpanEvent;
use phosphor_format::clock::ClockInfo;
use phosphor_format::file::{Event, Header};
use phosphor_format::Phase;

use self::emit::{event_size, Emitter};
use self::tree::{log_message, name_and_attrs, Attr, Open, Pending, Rec, Text, Thread, Val, NO_PARENT};
use crate::context::{trace_context_of, TraceContext};
use crate::ids::Ids;
use crate::roots::Roots;
use crate::select::Selection;
use crate::Span;

/// How many spans one thread may hold (pending roots and their subtrees) before its oldest
/// pending items are final as they are; with a file's [`Roots`], [`MAX_HELD_WITH_ROOTS`] over all
/// threads instead.
pub const MAX_HELD_PER_THREAD: usize = 1 << 14;
/// With a file's [`Roots`], only trees whose root has not closed yet are held, and the logs no span
/// has taken yet: at most this many spans and items over all threads (about 150 MiB at worst)
/// before the oldest pending items of the thread at hand are final as they are.
pub const MAX_HELD_WITH_ROOTS: usize = 1 << 20;
/// The most bytes of span events (logs and instants, whose messages can be up to a MiB each) held
/// while their spans are not final; later ones are dropped and counted.
pub const MAX_EVENT_BYTES: usize = 64 << 20;
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
    /// final as it is (a root). `None` (files): nothing is final before [`Assembler::finish`],
    /// unless the file's [`Roots`] are known.
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
    /// Logs and instants dropped because the span events waiting for their span to be final
    /// already held [`MAX_EVENT_BYTES`].
    pub span_events_dropped: u64,
}

/// What an event does to the spans of its thread: the one classification both the assembler and
/// the [`Roots`] scan follow, so that they count the same spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Edge {
    /// A span closes: a complete or lock event (start, end).
    Close(u64, u64),
    /// A begin/end scope begins.
    Begin(u64),
    /// A begin/end scope ends (it closes the innermost begin, if any).
    End(u64),
    /// A log, an instant or a trace context for the scope open: pending until a span takes it.
    Mark(u64),
    /// An async slice begins, or ends.
    AsyncBegin(u64),
    AsyncEnd(u64),
    /// A trace context for an async slice.
    AsyncContext(u64),
    /// Nothing (counters, markers of other kinds).
    Other,
}

/// How `event` counts; times are wall-clock ns through `clock`.
pub(crate) fn edge(clock: &ClockInfo, event: &Event<'_>) -> Edge {
    let t = clock.to_wall_ns(event.ts);
    match event.phase() {
        Phase::Complete | Phase::LockWait | Phase::LockHeld => {
            Edge::Close(t, t.saturating_add(clock.ticks_to_ns(event.duration.unwrap_or(0))))
        }
        Phase::Begin => Edge::Begin(t),
        Phase::End => Edge::End(t),
        Phase::AsyncBegin => Edge::AsyncBegin(t),
        Phase::AsyncEnd => Edge::AsyncEnd(t),
        Phase::Instant => match trace_context_of(event) {
            Some((_, Some(_))) => Edge::AsyncContext(t),
            _ => Edge::Mark(t),
        },
        Phase::Log => Edge::Mark(t),
        _ => Edge::Other,
    }
}

/// Builds spans from one trace file's events, read in file order.
#[derive(Debug)]
pub struct Assembler {
    clock: ClockInfo,
    options: AssembleOptions,
    /// A first reading's roots, handed to each thread as it appears.
    roots: Option<Roots>,
    threads: HashMap<u32, Thread>,
    /// [`Thread::size`] summed over all threads.
    held: usize,
    asyncs: HashMap<(u64, Text), Open>,
    /// Async ends read before their begins (another thread's chunk can reach the file first):
    /// the end time and attributes.
    early_ends: HashMap<(u64, Text), (u64, Vec<Attr>)>,
    /// Trace contexts for async slices, by async id, until the slice is made.
    async_contexts: HashMap<u64, TraceContext>,
    out: Emitter,
    next: u64,
    now: u64,
    /// Live use: trace time (ns) gone by since the last event, by the caller's clock
    /// ([`Assembler::idle`]); the present is `now + idle_ns`.
    idle_ns: u64,
}

impl Assembler {
    /// An assembler for the file whose header is `header`, reading it once.
    pub fn new(header: &Header, options: AssembleOptions) -> Assembler {
        Assembler {
            clock: header.clock.clone(),
            out: Emitter::new(Ids::new(header), options.selection.clone()),
            options,
            roots: None,
            threads: HashMap::new(),
            held: 0,
            asyncs: HashMap::new(),
            early_ends: HashMap::new(),
            async_contexts: HashMap::new(),
            next: 0,
            now: 0,
            idle_ns: 0,
        }
    }

    /// An assembler for the second reading of a file whose first reading gave `roots`
    /// ([`Roots::scan`]): each tree is final as soon as its root closes.
    pub fn with_roots(header: &Header, options: AssembleOptions, roots: Roots) -> Assembler {
        Assembler { roots: Some(roots), ..Assembler::new(header, options) }
    }

    /// Takes one event (in file order).
    pub fn push(&mut self, event: &Event<'_>) {
        self.idle_ns = 0;
        let tid = event.tid;
        match edge(&self.clock, event) {
            Edge::Close(start, end) => {
                self.now = self.now.max(end);
                let (name, attrs) = name_and_attrs(&mut self.out.strings, event);
                self.close(tid, start, end, name, attrs);
            }
            Edge::Begin(start) => {
                self.now = self.now.max(start);
                let thread = self.thread(tid);
                if thread.open.len() >= MAX_OPEN_PER_THREAD {
                    self.out.stats.unclosed += 1;
                    return;
                }
                let (name, attrs) = name_and_attrs(&mut self.out.strings, event);
                self.thread(tid).open.push(Open { start, name, attrs });
            }
            Edge::End(end) => {
                self.now = self.now.max(end);
                let Some(open) = self.threads.get_mut(&tid).and_then(|t| t.open.pop()) else {
                    self.out.stats.unmatched_ends += 1;
                    return;
                };
                let mut attrs = open.attrs;
                attrs.extend(name_and_attrs(&mut self.out.strings, event).1);
                self.close(tid, open.start, end, open.name, attrs);
            }
            Edge::Mark(t) => {
                self.now = self.now.max(t);
                let item = match trace_context_of(event) {
                    Some((context, _)) => Pending::Context(t, context),
                    None => {
                        let (name, attributes) = if event.phase() == Phase::Log {
                            let mut attrs = Vec::new();
                            if let Some(level) = event.callsite.level {
                                let key = self.out.strings.id("log.severity");
                                attrs.push(Attr { key, value: Val::Str(format!("{level:?}").into()) });
                            }
                            (log_message(event), attrs)
                        } else {
                            let (name, attrs) = name_and_attrs(&mut self.out.strings, event);
                            (self.out.strings.text(&name).to_owned(), attrs)
                        };
                        let attributes = self.out.key_values(&attributes);
                        let e =
                            SpanEvent { time_unix_nano: t, name, attributes, dropped_attributes_count: 0 };
                        let size = event_size(&e);
                        if self.out.event_bytes + size > MAX_EVENT_BYTES {
                            self.out.stats.span_events_dropped += 1;
                            return;
                        }
                        self.out.event_bytes += size;
                        Pending::Event(e)
                    }
                };
                self.thread(tid).pending.push_back(item);
                self.held += 1;
                self.bound(tid);
            }
            Edge::AsyncContext(t) => {
                self.now = self.now.max(t);
                let Some((context, Some(id))) = trace_context_of(event) else { return };
                if self.async_contexts.len() < MAX_OPEN_ASYNC || self.async_contexts.contains_key(&id) {
                    if self.async_contexts.insert(id, context).is_some() {
                        self.out.stats.contexts_unapplied += 1;
                    }
                } else {
                    self.out.stats.contexts_unapplied += 1;
                }
            }
            Edge::AsyncBegin(start) => {
                self.now = self.now.max(start);
                if self.asyncs.len() >= MAX_OPEN_ASYNC {
                    self.out.stats.unclosed += 1;
                    return;
                }
                let (name, mut attrs) = name_and_attrs(&mut self.out.strings, event);
                let id = event.async_id.unwrap_or(0);
                let key = self.out.strings.id("phosphor.async_id");
                attrs.push(Attr { key, value: Val::Int(id as i64) });
                if let Some((end, more)) = self.early_ends.remove(&(id, name.clone())) {
                    attrs.extend(more);
                    return self.async_slice(id, start, end, name, attrs);
                }
                if self.asyncs.insert((id, name.clone()), Open { start, name, attrs }).is_some() {
                    self.out.stats.unclosed += 1;
                }
            }
            Edge::AsyncEnd(end) => {
                self.now = self.now.max(end);
                let (name, attrs) = name_and_attrs(&mut self.out.strings, event);
                let key = (event.async_id.unwrap_or(0), name);
                let Some(mut open) = self.asyncs.remove(&key) else {
                    if self.early_ends.len() >= MAX_OPEN_ASYNC
                        || self.early_ends.insert(key, (end, attrs)).is_some()
                    {
                        self.out.stats.unmatched_ends += 1;
                    }
                    return;
                };
                open.attrs.extend(attrs);
                self.async_slice(key.0, open.start, end, open.name, open.attrs);
            }
            Edge::Other => {}
        }
    }

    /// Moves the spans that are final into `out`: with [`AssembleOptions::hold_ns`] (live use),
    /// the trees whose root ended that long ago and that no open scope may take; with a file's
    /// [`Roots`], the trees whose root closed.
    pub fn drain(&mut self, out: &mut Vec<Span>) {
        // The bound's count is the threads' (checked here, not per event: a file can have a
        // hundred thousand threads).
        debug_assert_eq!(self.held, self.threads.values().map(Thread::size).sum::<usize>());
        if let Some(hold) = self.options.hold_ns {
            let now = self.now.saturating_add(self.idle_ns);
            for thread in self.threads.values_mut() {
                let outer = thread.open.first().map_or(u64::MAX, |o| o.start);
                while let Some(item) = thread.pending.front() {
                    let (start, end) = (thread.start_of(item), thread.end_of(item));
                    if end.saturating_add(hold) > now || start >= outer {
                        break;
                    }
                    let before = thread.size();
                    let Some((item, base)) = thread.pop_front(&mut self.out.tree) else { break };
                    self.held -= before - thread.size();
                    self.out.final_item(item, base);
                }
            }
        }
        self.out.take_ready(out);
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
            let mut thread = self.threads.remove(&tid).unwrap_or_default();
            self.out.stats.unclosed += thread.open.len() as u64;
            while let Some((item, base)) = thread.pop_front(&mut self.out.tree) {
                self.out.final_item(item, base);
            }
        }
        self.held = 0;
        self.out.stats.unclosed += self.asyncs.len() as u64;
        self.asyncs.clear();
        self.out.stats.unmatched_ends += self.early_ends.len() as u64;
        self.early_ends.clear();
        self.out.stats.contexts_unapplied += self.async_contexts.len() as u64;
        self.async_contexts.clear();
        self.out.finish();
        debug_assert_eq!(self.out.event_bytes, 0, "every span event held was emitted or counted");
        self.out.take_ready(out);
    }

    /// Hands back spans taken from [`drain`](Self::drain) or [`finish`](Self::finish) once they
    /// are encoded: the next spans reuse their strings and vectors (`spans` is emptied).
    pub fn recycle(&mut self, spans: &mut Vec<Span>) {
        self.out.recycle(spans);
    }

    /// The figures so far.
    pub fn stats(&self) -> AssembleStats {
        self.out.stats
    }

    /// Thread `tid`'s state, made (with its roots, if known) on first use.
    fn thread(&mut self, tid: u32) -> &mut Thread {
        let roots = &mut self.roots;
        self.threads.entry(tid).or_insert_with(|| {
            let mut t = Thread::default();
            if let Some(roots) = roots {
                let known = roots.take(tid);
                t.roots = known.roots;
                t.known_from = known.known_from;
                t.roots_known = true;
            }
            t
        })
    }

    fn rec(&mut self, start: u64, end: u64, name: Text, attrs: Vec<Attr>, tid: Option<u32>) -> Rec {
        let n = self.next;
        self.next += 1;
        self.out.stats.spans += 1;
        let end = end.max(start);
        Rec { start, end, n, parent: NO_PARENT, name, attrs, events: Vec::new(), context: None, tid }
    }

    /// An async slice is made: a tree of its own, final.
    fn async_slice(&mut self, id: u64, start: u64, end: u64, name: Text, attrs: Vec<Attr>) {
        let mut rec = self.rec(start, end, name, attrs, None);
        rec.context = self.async_contexts.remove(&id).map(Box::new);
        self.out.stats.contexts += u64::from(rec.context.is_some());
        self.out.tree.clear();
        self.out.tree.push(rec);
        self.out.finalize(0);
    }

    /// A scope of thread `tid` closed: it takes the pending items that start at or after its
    /// start (its children, logs and trace contexts).
    fn close(&mut self, tid: u32, start: u64, end: u64, name: Text, attrs: Vec<Attr>) {
        let mut rec = self.rec(start, end, name, attrs, Some(tid));
        let thread = self.thread(tid);
        let before = thread.size();
        let k = thread.closed;
        thread.closed += 1;
        let (mut contexts, mut unapplied) = (0, 0);
        while let Some(item) = thread.pending.back() {
            if thread.start_of(item) < start {
                break;
            }
            match thread.pending.pop_back().expect("back was there") {
                Pending::Span(at) => {
                    let i = (at - thread.base) as usize;
                    thread.arena[i].parent = k;
                }
                Pending::Event(e) => rec.events.push(e),
                // The latest context recorded in the scope wins (popped first); an earlier one is
                // not applied.
                Pending::Context(_, c) => {
                    if rec.context.is_none() {
                        rec.context = Some(Box::new(c));
                        contexts += 1;
                    } else {
                        unapplied += 1;
                    }
                }
            }
        }
        rec.events.reverse();
        let events = rec.events.len() as u64;
        thread.arena.push_back(rec);
        thread.pending.push_back(Pending::Span(k));
        let root = thread.is_true_root(k);
        let after = thread.size();
        self.held = self.held + after - before;
        self.out.stats.span_events += events;
        self.out.stats.contexts += contexts;
        self.out.stats.contexts_unapplied += unapplied;
        if root {
            // Nothing later can take it, nor anything pending before it on its thread.
            let thread = self.threads.get_mut(&tid).expect("made above");
            let before = thread.size();
            while let Some((item, base)) = thread.pop_front(&mut self.out.tree) {
                self.out.final_item(item, base);
            }
            self.held -= before;
        } else {
            self.bound(tid);
        }
    }

    /// Past the caps, the thread's oldest pending items are final.
    fn bound(&mut self, tid: u32) {
        let with_roots = self.roots.is_some();
        let Some(thread) = self.threads.get_mut(&tid) else { return };
        loop {
            let over = if with_roots {
                self.held > MAX_HELD_WITH_ROOTS
            } else {
                thread.arena.len() > MAX_HELD_PER_THREAD || thread.pending.len() > MAX_HELD_PER_THREAD
            };
            if !over {
                break;
            }
            let before = thread.size();
            let Some((item, base)) = thread.pop_front(&mut self.out.tree) else { break };
            self.held -= before - thread.size();
            self.out.stats.evicted_roots += 1;
            self.out.final_item(item, base);
        }
    }
}

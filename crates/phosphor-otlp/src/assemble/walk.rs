//! The model's walk to span trees: a [`Sink`] of [`Nesting`](phosphor_model::nesting::Nesting)
//! that turns each resolved subtree into spans with parents, and the payloads the slices carry
//! meanwhile.
//!
//! The model hands a resolved subtree over in time order: a slice is entered before the slices
//! nested in it and left after them. The scopes entered and not yet left are a stack: a span's
//! parent is its top, a log or instant is a span event of its top, and a trace context is its
//! top's. When the stack empties, the tree (its root and everything under it) is final and goes
//! to the [`Emitter`].

use std::collections::HashMap;

use opentelemetry_proto::tonic::trace::v1::span::Event as SpanEvent;
use phosphor_format::clock::ClockInfo;
use phosphor_model::nesting::{Problem, ProblemKind, Sink, Slice, SliceKind};

use super::emit::{event_size, Emitter};
use super::tree::{Attr, Rec, Text, Val, NO_PARENT};
use super::wire::Encoded;
use crate::context::TraceContext;
use crate::Span;

/// How many spans are made ready before a flushing walk hands them on: a model resolving a
/// thread's slices at once (at the end of a file) would otherwise hold them all as spans.
pub const FLUSH_SPANS: usize = 4096;
/// How many bytes of encoded requests are made before a flushing walk hands them on.
pub const FLUSH_BYTES: usize = 1 << 20;

/// Where a flushing walk hands the spans made ([`super::Assembler::push_and_flush`]): the spans,
/// or, when the assembler encodes ([`super::Assembler::encode_protobuf`]), whole requests.
pub type Flush<'f> = dyn FnMut(&mut Vec<Span>, &mut Encoded) + 'f;

/// What a slice carries while the model holds it: what it is made of, decoded once (kept in
/// the model's node, which the walk reads anyway), and a begin/end pair's end attributes.
#[derive(Debug, Default)]
pub(super) struct Slot {
    pub item: Option<Item>,
    pub end: Vec<Attr>,
}

impl Slot {
    pub fn new(item: Item) -> Slot {
        Slot { item: Some(item), end: Vec::new() }
    }
}

/// What a slice is made of.
#[derive(Debug)]
pub(super) enum Item {
    /// A scope's (or a begin's) name and attributes.
    Span(Text, Vec<Attr>),
    /// A log or an instant, already a span event; whether it is an error-level log.
    Event(SpanEvent, bool),
    /// A trace context recorded at this time.
    Context(TraceContext),
    /// A caller's `tracestate` recorded at this time.
    State(Box<str>),
}

/// The walk's state: the scopes entered and not left, the tree being built.
#[derive(Debug)]
pub(super) struct Builder {
    pub clock: ClockInfo,
    pub out: Emitter,
    /// The scopes entered and not left, with their index in [`Emitter::tree`] and the latest end
    /// (ns) of the spans under them left so far (an unclosed one ends with it, in O(1)).
    stack: Vec<(Slice, u32, u64)>,
    /// The number of the next span.
    pub next: u64,
    /// By thread, the starts (raw ticks) of its open begins, outermost first: a subtree the
    /// model resolves early inside one has no parent here.
    opens: HashMap<u32, Vec<u64>>,
}

impl Builder {
    pub fn new(clock: ClockInfo, out: Emitter) -> Builder {
        Builder { clock, out, stack: Vec::new(), next: 0, opens: HashMap::new() }
    }

    /// A begin opened on thread `tid` at `ts`.
    pub fn opened(&mut self, tid: u32, ts: u64) {
        self.opens.entry(tid).or_default().push(ts);
    }

    /// Thread `tid`'s innermost begin closed.
    pub fn closed(&mut self, tid: u32) {
        if let Some(open) = self.opens.get_mut(&tid) {
            open.pop();
        }
    }

    /// The end of the input: the begins still open are never closed.
    pub fn all_closed(&mut self) {
        self.opens.clear();
    }

    /// A slice entered at the top of a walk lies inside a begin still open: resolved early, it is
    /// a root here.
    fn orphaned(&self, slice: &Slice) -> bool {
        self.opens.get(&slice.tid).and_then(|o| o.first()).is_some_and(|&start| slice.start >= start)
    }

    /// A span numbered now.
    pub fn rec(&mut self, start: u64, end: u64, name: Text, attrs: Vec<Attr>, tid: Option<u32>) -> Rec {
        let n = self.next;
        self.next += 1;
        self.out.stats.spans += 1;
        let end = end.max(start);
        Rec {
            start,
            end,
            n,
            parent: NO_PARENT,
            name,
            attrs,
            events: Vec::new(),
            context: None,
            trace_state: None,
            tid,
            error: false,
        }
    }

    /// Whether no tree is being built (between walks).
    pub fn idle(&self) -> bool {
        self.stack.is_empty() && self.out.tree.is_empty()
    }

    /// A log or instant nothing encloses.
    fn outside(&mut self, e: &SpanEvent) {
        self.out.event_bytes -= event_size(e);
        self.out.stats.events_outside_spans += 1;
    }
}

impl Sink<Slot> for Builder {
    fn enter(&mut self, slice: &Slice, slot: Slot) {
        match (slice.kind, slot.item) {
            (SliceKind::Scope, Some(Item::Span(name, mut attrs))) => {
                if self.stack.is_empty() && self.orphaned(slice) {
                    self.out.stats.evicted_roots += 1;
                }
                attrs.extend(slot.end);
                let start = self.clock.to_wall_ns(slice.start);
                let end = start.saturating_add(self.clock.ticks_to_ns(slice.dur));
                let mut rec = self.rec(start, end, name, attrs, Some(slice.tid));
                rec.parent = self.stack.last().map_or(NO_PARENT, |&(_, at, _)| at);
                self.stack.push((*slice, self.out.tree.len() as u32, 0));
                self.out.tree.push(rec);
            }
            (SliceKind::Unclosed, Some(Item::Span(name, mut attrs))) => {
                // A begin never ended is a span too, marked `phosphor.unclosed`: it holds what
                // `phosphor stats` puts under its name. It ends with the last span it holds (at
                // its begin if none; set when it is left).
                self.out.stats.unclosed += 1;
                attrs.push(Attr { key: self.out.strings.id("phosphor.unclosed"), value: Val::Bool(true) });
                let start = self.clock.to_wall_ns(slice.start);
                let mut rec = self.rec(start, start, name, attrs, Some(slice.tid));
                rec.parent = self.stack.last().map_or(NO_PARENT, |&(_, at, _)| at);
                self.stack.push((*slice, self.out.tree.len() as u32, 0));
                self.out.tree.push(rec);
            }
            (SliceKind::Unclosed, _) => self.out.stats.unclosed += 1,
            (SliceKind::Mark, Some(Item::Event(e, error))) => match self.stack.last() {
                Some(&(_, at, _)) => {
                    let rec = &mut self.out.tree[at as usize];
                    rec.error |= error;
                    rec.events.push(e);
                    self.out.stats.span_events += 1;
                }
                None => self.outside(&e),
            },
            (SliceKind::Mark, Some(Item::Context(c))) => match self.stack.last() {
                // The latest context recorded in a scope wins; an earlier one is not applied.
                Some(&(_, at, _)) => {
                    let rec = &mut self.out.tree[at as usize];
                    if rec.context.replace(Box::new(c)).is_some() {
                        self.out.stats.contexts_unapplied += 1;
                    } else {
                        self.out.stats.contexts += 1;
                    }
                }
                None => self.out.stats.contexts_unapplied += 1,
            },
            (SliceKind::Mark, Some(Item::State(state))) => {
                // The scope's, as its context is; the latest recorded wins.
                if let Some(&(_, at, _)) = self.stack.last() {
                    self.out.tree[at as usize].trace_state = Some(state);
                }
            }
            _ => {}
        }
    }

    fn problem(&mut self, problem: Problem) {
        if let ProblemKind::LateParent { .. } = problem.kind {
            self.out.stats.evicted_roots += 1;
        }
    }

    fn leave(&mut self, slice: &Slice) {
        if self.stack.last().is_none_or(|(s, _, _)| s != slice) {
            return;
        }
        let (_, at, below) = self.stack.pop().expect("just looked at");
        let rec = &mut self.out.tree[at as usize];
        if slice.kind == SliceKind::Unclosed {
            // It ends with the last of the spans under it (all left before it).
            rec.end = rec.end.max(below);
        }
        // What its parent holds ends at least as late as this subtree.
        let reach = rec.end.max(below);
        if let Some(parent) = self.stack.last_mut() {
            parent.2 = parent.2.max(reach);
        }
        if self.stack.is_empty() {
            self.out.finalize();
        }
    }
}

/// The walk with a place to hand the spans to as they are made (`None`: they wait in
/// [`Emitter::ready`]).
pub(super) struct Flushing<'a, 'r, 'f> {
    build: &'a mut Builder,
    flush: &'a mut Option<&'r mut Flush<'f>>,
}

impl<'a, 'r, 'f> Flushing<'a, 'r, 'f> {
    pub fn new(build: &'a mut Builder, flush: &'a mut Option<&'r mut Flush<'f>>) -> Self {
        Flushing { build, flush }
    }
}

impl Sink<Slot> for Flushing<'_, '_, '_> {
    fn enter(&mut self, slice: &Slice, slot: Slot) {
        self.build.enter(slice, slot);
    }

    fn leave(&mut self, slice: &Slice) {
        self.build.leave(slice);
        let out = &mut self.build.out;
        let bytes = out.wire.as_ref().map_or(0, |w| w.out.bytes.len());
        if out.ready.len() >= FLUSH_SPANS || bytes >= FLUSH_BYTES {
            if let Some(flush) = self.flush {
                let mut none = Encoded::default();
                flush(&mut out.ready, out.wire.as_mut().map_or(&mut none, |w| &mut w.out));
                out.recycle_ready();
            }
        }
    }

    fn problem(&mut self, problem: Problem) {
        self.build.problem(problem);
    }
}

//! Events to spans, on the trace model.
//!
//! Each thread's slices go into the model's [`Nesting`]: the one tree `phosphor stats` builds
//! from the same events (a complete event recorded at its end adopts the slices it encloses; an
//! end closes the innermost open begin; equal intervals nest the one recorded first inside the
//! other). Each slice carries a `Slot`: its name and attributes, decoded once, or its span event
//! (a log or instant) or trace context. When the model resolves a subtree it walks it in time
//! order, and the walk (`walk.rs`) makes the spans: a span's parent is the scope it is nested in, a
//! log or instant is a span event of the innermost scope enclosing it (one that no scope encloses
//! is counted in [`AssembleStats::events_outside_spans`] and dropped), and a scope that holds a
//! trace context joins the context's trace (see [`crate::context`]). Each top-level span is a
//! root, of a trace of its own; its tree is final when its walk ends.
//!
//! When is a subtree resolved? A file's: at the end ([`Assembler::finish`]), or when its thread
//! holds [`DEFAULT_PENDING_LIMIT`] slices, then the oldest, as `phosphor stats` does; a scope
//! that arrives later and encloses some of them, and a subtree resolved inside a begin still open
//! (a root here: the walk does not say which begin holds it), are counted in
//! [`AssembleStats::evicted_roots`]. Live use
//! ([`AssembleOptions::hold_ns`]): each thread has a model of its own, resolved whole once no
//! begin is open on it and its latest event is `hold_ns` of trace time old
//! ([`Assembler::drain`]), or [`LIVE_PENDING_LIMIT`] slices at a time.
//!
//! Async slices are spans of their own, roots of their own traces: their begins and ends are
//! paired by the model's one rule (`phosphor_model::asyncs`: by shown name and id, on any threads,
//! in file order, an end read before its begin waiting for it, a second begin giving the first
//! up), at most [`MAX_OPEN_ASYNC`] halves waiting at once. A pair's span has the begin's
//! attributes, its `phosphor.async_id`, then the end's; a begin never ended is counted in
//! [`AssembleStats::unclosed`], an end never begun in [`AssembleStats::unmatched_ends`]. A trace
//! context naming an async id goes to that async slice. Arguments are typed attributes (`int`, `double`, `string`, `bool`;
//! pointers as `0x…` strings; a `u64` always an `int`, its bits kept: past `i64::MAX` it reads
//! as negative, one type per key whatever the values). A lock's span is named `NAME
//! (wait)` or `NAME (held)`, as every output names it. Times are wall-clock Unix nanoseconds
//! through the header's clock, each rounded once (`phosphor_model::timeline`): a span's length is
//! its rounded end less its rounded start, as `phosphor stats` counts it.

mod emit;
mod tree;
mod walk;
mod wire;

pub use self::emit::{HAS_IS_REMOTE, IS_REMOTE, MAX_PATH_BYTES, MAX_RANKED_NAMES, TAIL_WINDOW_NS};

use std::collections::HashMap;

use opentelemetry_proto::tonic::trace::v1::span::Event as SpanEvent;
use phosphor_format::clock::ClockInfo;
use phosphor_format::file::{Event, Header};
use phosphor_format::logfmt::event_message;
use phosphor_format::Phase;
use phosphor_model::asyncs::{async_name, AsyncKey, Matched, Pairing};
use phosphor_model::names::NameSet;
use phosphor_model::nesting::{Nesting, DEFAULT_PENDING_LIMIT};
use phosphor_model::timeline::Timeline;

use self::emit::{event_size, Emitter};
use self::tree::{name_and_attrs, Attr, Text, Val};
use self::walk::{Builder, Flushing, Item, Slot};

pub use self::walk::{Flush, FLUSH_BYTES, FLUSH_SPANS};
pub use self::wire::Encoded;
use crate::context::{trace_context_of, trace_state_of, TraceContext};
use crate::ids::Ids;
use crate::select::Selection;
use crate::Span;

/// Live use: the most slices one thread's model holds before its oldest are resolved as they
/// are (a scope enclosing them later is not their parent).
pub const LIVE_PENDING_LIMIT: usize = 1 << 14;
/// The most bytes of span events (logs and instants, whose messages can be up to a MiB each) held
/// while their spans are not final; later ones are dropped and counted.
pub const MAX_EVENT_BYTES: usize = 64 << 20;
/// How many async begins and ends may wait for their other half at once (the model's cap); a
/// later one is counted as unmatched at once.
pub const MAX_OPEN_ASYNC: usize = phosphor_model::asyncs::DEFAULT_MAX_OPEN;

/// How an [`Assembler`] makes spans.
#[derive(Clone, Debug, Default)]
pub struct AssembleOptions {
    /// Which spans are kept.
    pub selection: Selection,
    /// Live use: a thread's spans are final once no begin is open on it and its latest event is
    /// this old (trace time, ns). `None` (files): at the end, or past the pending limit.
    pub hold_ns: Option<u64>,
    /// Which roots share a trace.
    pub group_roots: crate::ids::GroupRoots,
}

/// What an [`Assembler`] has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AssembleStats {
    /// Spans made (before selection).
    pub spans: u64,
    /// Spans the selection left out.
    pub spans_unselected: u64,
    /// Spans left out by head sampling (the ratio, or an unsampled caller).
    pub spans_sampled_out: u64,
    /// Spans left out by the tail rules (their tree neither slow nor failing, nor among the
    /// slowest of its minute).
    pub spans_tail_dropped: u64,
    /// Log events attached to spans as span events.
    pub span_events: u64,
    /// Logs and instants that no span took (dropped).
    pub events_outside_spans: u64,
    /// Spans and span events made final before their parent was known (their thread held too
    /// many slices): a scope that arrived after slices it encloses (a late parent, as `phosphor
    /// stats` reports it), and the spans resolved inside a begin still open, which are roots.
    pub evicted_roots: u64,
    /// Begins never ended, at the end of the input, and async slices never ended: no span.
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

/// A thread's model in live use.
#[derive(Debug)]
struct LiveThread {
    nesting: Nesting<Slot>,
    /// Begins open on it.
    open: u32,
    /// The latest time (wall ns) of its events: a complete event's end.
    latest: u64,
}

/// Where the slices are held until their tree is known.
#[derive(Debug)]
enum Models {
    /// A file: one model for every thread.
    File(Box<Nesting<Slot>>),
    /// Live use: one model per thread, resolved whole once the thread is quiet.
    Live(HashMap<u32, LiveThread>),
}

/// Builds spans from one trace file's events, read in file order.
#[derive(Debug)]
pub struct Assembler {
    /// Events are nested and timed on these times (nanoseconds rounded per timestamp, as
    /// `phosphor stats` and the other outputs take them); `clock` is their clock.
    timeline: Timeline,
    clock: ClockInfo,
    options: AssembleOptions,
    models: Models,
    build: Builder,
    /// Async begins and ends waiting for their other half (at wall ns), with their name and
    /// attributes; keyed by `async_names`' number of their name.
    asyncs: Pairing<(Text, Vec<Attr>)>,
    async_names: NameSet,
    /// Trace contexts for async slices, by async id, until the slice is made.
    async_contexts: HashMap<u64, TraceContext>,
    /// Callers' `tracestate`s for async slices, by async id, until the slice is made.
    async_states: HashMap<u64, Box<str>>,
    now: u64,
    /// Live use: trace time (ns) gone by since the last event, by the caller's clock
    /// ([`Assembler::idle`]); the present is `now + idle_ns`.
    idle_ns: u64,
}

/// The model holding thread `tid`'s slices, the event at hand at `t` (wall ns) opening `opens`
/// begins; in live use, with the thread's count of open begins.
fn model(models: &mut Models, tid: u32, t: u64, opens: u32) -> (&mut Nesting<Slot>, Option<&mut u32>) {
    match models {
        Models::File(nesting) => (nesting, None),
        Models::Live(threads) => {
            let thread = threads.entry(tid).or_insert_with(|| LiveThread {
                nesting: Nesting::new(LIVE_PENDING_LIMIT),
                open: 0,
                latest: 0,
            });
            thread.open += opens;
            thread.latest = thread.latest.max(t);
            (&mut thread.nesting, Some(&mut thread.open))
        }
    }
}

impl Assembler {
    /// An assembler for the file whose header is `header`.
    pub fn new(header: &Header, options: AssembleOptions) -> Assembler {
        let mut out = Emitter::new(Ids::new(header), options.selection.clone());
        out.group = options.group_roots;
        out.hold_ns = options.hold_ns;
        let models = match options.hold_ns {
            None => Models::File(Box::new(Nesting::new(DEFAULT_PENDING_LIMIT))),
            Some(_) => Models::Live(HashMap::new()),
        };
        Assembler {
            timeline: Timeline::new(&header.clock),
            clock: Timeline::new(&header.clock).clock().clone(),
            build: Builder::new(Timeline::new(&header.clock).clock().clone(), out),
            options,
            models,
            asyncs: Pairing::new(MAX_OPEN_ASYNC),
            async_names: NameSet::default(),
            async_contexts: HashMap::new(),
            async_states: HashMap::new(),
            now: 0,
            idle_ns: 0,
        }
    }

    /// Takes one event (in file order).
    pub fn push(&mut self, event: &Event<'_>) {
        self.push_flushing(event, None);
    }

    /// [`Assembler::push`], handing the spans made to `flush` each time [`FLUSH_SPANS`] are ready
    /// (it takes them out of the vector, and may put spans it is done with back, for reuse), or
    /// [`FLUSH_BYTES`] of requests are encoded (it takes them out).
    pub fn push_and_flush(&mut self, event: &Event<'_>, flush: &mut Flush<'_>) {
        self.push_flushing(event, Some(flush));
    }

    fn push_flushing(&mut self, event: &Event<'_>, mut flush: Option<&mut Flush<'_>>) {
        let flush = &mut flush;
        self.idle_ns = 0;
        let phase = event.callsite.phase;
        let ts = self.timeline.time(event.ts);
        let t = self.clock.to_wall_ns(ts);
        match phase {
            Phase::Complete | Phase::LockWait | Phase::LockHeld => {
                let dur = self.timeline.end(event.ts, event.duration.unwrap_or(0)) - ts;
                let end = t.saturating_add(dur);
                self.now = self.now.max(end);
                let (name, attrs) = name_and_attrs(&mut self.build.out.strings, event);
                let slot = Slot::new(Item::Span(name, attrs));
                let (nesting, _) = model(&mut self.models, event.tid, end, 0);
                nesting.complete_with(
                    event.tid,
                    0,
                    ts,
                    dur,
                    slot,
                    &mut Flushing::new(&mut self.build, flush),
                );
            }
            Phase::Begin => {
                self.now = self.now.max(t);
                let (name, attrs) = name_and_attrs(&mut self.build.out.strings, event);
                let slot = Slot::new(Item::Span(name, attrs));
                self.build.opened(event.tid, ts);
                let (nesting, _) = model(&mut self.models, event.tid, t, 1);
                nesting.begin_with(event.tid, 0, ts, slot);
            }
            Phase::End => {
                self.now = self.now.max(t);
                let (_, attrs) = name_and_attrs(&mut self.build.out.strings, event);
                let (nesting, open) = model(&mut self.models, event.tid, t, 0);
                if nesting.has_open(event.tid) {
                    // Closed before the walk it may start: what that walk enters is outside it.
                    self.build.closed(event.tid);
                }
                let sink = &mut Flushing::new(&mut self.build, flush);
                let closed = nesting.end_with(event.tid, 0, ts, sink, |s| s.end = attrs);
                if closed {
                    if let Some(open) = open {
                        *open -= 1;
                    }
                } else {
                    self.build.out.stats.unmatched_ends += 1;
                }
            }
            Phase::Instant | Phase::Log => {
                self.now = self.now.max(t);
                let item = match trace_context_of(event) {
                    Some((context, Some(id))) => return self.async_context(id, context),
                    Some((context, None)) => Item::Context(context),
                    None => match trace_state_of(event) {
                        Some((state, Some(id))) => return self.async_state(id, state),
                        Some((state, None)) => Item::State(state.into()),
                        None => match self.span_event(event, t) {
                            Some(e) => {
                                Item::Event(e, event.callsite.level == Some(phosphor_format::Level::Error))
                            }
                            None => return,
                        },
                    },
                };
                let slot = Slot::new(item);
                let (nesting, _) = model(&mut self.models, event.tid, t, 0);
                nesting.mark_with(event.tid, 0, ts, slot, &mut Flushing::new(&mut self.build, flush));
            }
            Phase::AsyncBegin | Phase::AsyncEnd => {
                self.now = self.now.max(t);
                self.async_half(event, t);
            }
            _ => {}
        }
        debug_assert!(self.build.idle(), "a walk ends within the call that starts it");
    }

    /// A log or an instant as a span event at `t`; `None` (counted) past [`MAX_EVENT_BYTES`].
    fn span_event(&mut self, event: &Event<'_>, t: u64) -> Option<SpanEvent> {
        let out = &mut self.build.out;
        let (name, attributes) = if event.phase() == Phase::Log {
            let mut attrs = Vec::new();
            if let Some(level) = event.callsite.level {
                let key = out.strings.id("log.severity");
                attrs.push(Attr { key, value: Val::Str(format!("{level:?}").into()) });
            }
            (event_message(event), attrs)
        } else {
            let (name, attrs) = name_and_attrs(&mut out.strings, event);
            (out.strings.text(&name).to_owned(), attrs)
        };
        let attributes = out.key_values(&attributes);
        let e = SpanEvent { time_unix_nano: t, name, attributes, dropped_attributes_count: 0 };
        let size = event_size(&e);
        if out.event_bytes + size > MAX_EVENT_BYTES {
            out.stats.span_events_dropped += 1;
            return None;
        }
        out.event_bytes += size;
        Some(e)
    }

    fn async_context(&mut self, id: u64, context: TraceContext) {
        let stats = &mut self.build.out.stats;
        if self.async_contexts.len() < MAX_OPEN_ASYNC || self.async_contexts.contains_key(&id) {
            if self.async_contexts.insert(id, context).is_some() {
                stats.contexts_unapplied += 1;
            }
        } else {
            stats.contexts_unapplied += 1;
        }
    }

    /// A caller's `tracestate` for the async slice `id` (at most [`MAX_OPEN_ASYNC`] wait).
    fn async_state(&mut self, id: u64, state: &str) {
        if self.async_states.len() < MAX_OPEN_ASYNC || self.async_states.contains_key(&id) {
            self.async_states.insert(id, state.into());
        }
    }

    /// An async begin or end at `t` (wall ns), paired by the model.
    fn async_half(&mut self, event: &Event<'_>, t: u64) {
        let begin = event.callsite.phase == Phase::AsyncBegin;
        let id = event.async_id.unwrap_or(0);
        let strings = &mut self.build.out.strings;
        let (name, mut attrs) = name_and_attrs(strings, event);
        if begin {
            let key = strings.id("phosphor.async_id");
            attrs.push(Attr { key, value: Val::Int(id as i64) });
        }
        let key = AsyncKey { name: self.async_names.number(async_name(event)), id };
        let Assembler { asyncs, build, async_contexts, async_states, .. } = self;
        asyncs.add(key, begin, t, (name, attrs), &mut |k, m| {
            async_matched(build, async_contexts, async_states, k, m)
        });
    }

    /// Moves the spans that are final into `out`. Live use ([`AssembleOptions::hold_ns`]): first
    /// resolves the threads with no begin open whose latest event is that old.
    pub fn drain(&mut self, out: &mut Vec<Span>) {
        let flush: &mut Option<&mut Flush<'_>> = &mut None;
        if let (Some(hold), Models::Live(threads)) = (self.options.hold_ns, &mut self.models) {
            let now = self.now.saturating_add(self.idle_ns);
            let mut quiet: Vec<u32> = threads
                .iter()
                .filter(|(_, t)| t.open == 0 && t.latest.saturating_add(hold) <= now)
                .map(|(&tid, _)| tid)
                .collect();
            quiet.sort_unstable();
            for tid in quiet {
                if let Some(mut t) = threads.remove(&tid) {
                    t.nesting.finish(&mut Flushing::new(&mut self.build, flush));
                }
            }
        }
        self.build.out.take_ready(out);
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
        self.finish_flushing(&mut None);
        self.build.out.take_ready(out);
    }

    /// [`Assembler::finish`], handing the spans made to `flush` as [`Assembler::push_and_flush`]
    /// does, the last ones included.
    pub fn finish_and_flush(&mut self, flush: &mut Flush<'_>) {
        let mut flush = Some(flush);
        self.finish_flushing(&mut flush);
        let out = &mut self.build.out;
        if let Some(wire) = &mut out.wire {
            wire.close();
        }
        if let Some(f) = flush {
            let mut none = Encoded::default();
            f(&mut out.ready, out.wire.as_mut().map_or(&mut none, |w| &mut w.out));
        }
        out.recycle_ready();
    }

    /// A file's protobuf conversion: spans are encoded straight into requests framed as
    /// `template`'s, of at most `max` spans and `max_bytes` bytes each (a span larger on its own
    /// is a request alone), handed to the flush of [`Assembler::push_and_flush`] and
    /// [`Assembler::finish_and_flush`] (not made `Span`s).
    pub fn encode_protobuf(
        &mut self,
        template: &crate::ExportTraceServiceRequest,
        max: usize,
        max_bytes: usize,
    ) {
        self.build.out.wire = Some(wire::Wire::new(template, max, max_bytes));
    }

    /// With [`Assembler::encode_protobuf`]: the spans and requests encoded so far.
    pub fn encoded(&self) -> (u64, u64) {
        self.build.out.wire.as_ref().map_or((0, 0), |w| (w.spans_out, w.batches_out))
    }

    fn finish_flushing(&mut self, flush: &mut Option<&mut Flush<'_>>) {
        // Begins still open are left unclosed: what they hold is not orphaned.
        self.build.all_closed();
        match &mut self.models {
            Models::File(nesting) => {
                nesting.finish(&mut Flushing::new(&mut self.build, flush));
                **nesting = Nesting::new(DEFAULT_PENDING_LIMIT);
            }
            Models::Live(threads) => {
                let mut all: Vec<(u32, LiveThread)> = threads.drain().collect();
                all.sort_unstable_by_key(|&(tid, _)| tid);
                for (_, mut t) in all {
                    t.nesting.finish(&mut Flushing::new(&mut self.build, flush));
                }
            }
        }
        let Assembler { asyncs, build, async_contexts, async_states, .. } = self;
        asyncs.finish(&mut |k, m| async_matched(build, async_contexts, async_states, k, m));
        self.async_states.clear();
        let stats = &mut self.build.out.stats;
        stats.contexts_unapplied += self.async_contexts.len() as u64;
        self.async_contexts.clear();
        self.build.out.finish();
        debug_assert_eq!(self.build.out.event_bytes, 0, "every span event held was emitted or counted");
    }

    /// Hands back spans taken from [`drain`](Self::drain) or [`finish`](Self::finish) once they
    /// are encoded: the next spans reuse their strings and vectors (`spans` is emptied).
    pub fn recycle(&mut self, spans: &mut Vec<Span>) {
        self.build.out.recycle(spans);
    }

    /// The figures so far.
    pub fn stats(&self) -> AssembleStats {
        self.build.out.stats
    }
}

/// What the model hands over for an async slice: a pair is a span, a tree of its own, final (with
/// the trace context of its id, if one came); a half alone is counted.
fn async_matched(
    build: &mut Builder,
    contexts: &mut HashMap<u64, TraceContext>,
    states: &mut HashMap<u64, Box<str>>,
    key: AsyncKey,
    m: Matched<(Text, Vec<Attr>)>,
) {
    let stats = &mut build.out.stats;
    let (begin, end) = match m {
        Matched::Pair { begin, end, .. } => (begin, end),
        Matched::Unended(_) => return stats.unclosed += 1,
        Matched::Unbegun(_) => return stats.unmatched_ends += 1,
    };
    let (name, mut attrs) = begin.payload;
    attrs.extend(end.payload.1);
    // An end earlier than its begin: a pair of no length (the model's rule).
    let mut rec = build.rec(begin.ts, end.ts.max(begin.ts), name, attrs, None);
    rec.context = contexts.remove(&key.id).map(Box::new);
    rec.trace_state = states.remove(&key.id);
    let out = &mut build.out;
    out.stats.contexts += u64::from(rec.context.is_some());
    out.tree.clear();
    out.tree.push(rec);
    out.finalize();
}

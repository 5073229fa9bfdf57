//! The assembler's compact spans: a span waiting for its parent is a [`Rec`] (times, an interned
//! name, typed attributes), not yet an OTLP `Span` with its strings and id vectors; and a thread's
//! closed spans in close order (an arena), whose trees are contiguous ranges ending at their root.

use std::collections::{HashMap, VecDeque};
// Shared, so that each string is kept once (the assembler moves to the forwarder's thread).
use std::sync::Arc;

use opentelemetry_proto::tonic::trace::v1::span::Event as SpanEvent;
use phosphor_format::file::{Event, TableStr, Value};
use phosphor_format::logfmt::format_log;
use phosphor_format::MAX_PARAMS;

use crate::context::TraceContext;

/// A string kept once: names and attribute keys come from a file's callsites, a few hundred
/// strings for millions of spans. Bounded by the reader's callsite tables (plus the assembler's
/// own keys). A string of the file's table is found by its index, so a name of megabytes is
/// hashed once, not once per event.
#[derive(Debug, Default)]
pub(super) struct Strings {
    ids: HashMap<Arc<str>, u32>,
    list: Vec<Arc<str>>,
    /// The file's string table index to the id.
    by_index: HashMap<u32, u32>,
}

impl Strings {
    pub(super) fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.list.len() as u32;
        let s: Arc<str> = s.into();
        self.list.push(s.clone());
        self.ids.insert(s, id);
        id
    }

    /// The id of a string of the file's table.
    pub(super) fn table_id(&mut self, s: TableStr<'_>) -> u32 {
        if let Some(&id) = self.by_index.get(&s.index()) {
            return id;
        }
        let id = self.id(s.as_str());
        self.by_index.insert(s.index(), id);
        id
    }

    pub(super) fn get(&self, id: u32) -> &str {
        self.list.get(id as usize).map_or("", |s| s)
    }

    pub(super) fn text<'a>(&'a self, text: &'a Text) -> &'a str {
        match text {
            Text::Interned(id) => self.get(*id),
            Text::Owned(s) => s,
        }
    }
}

/// A name or a string value: interned (a callsite's) or owned (a dynamic name, a log's message).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Text {
    Interned(u32),
    Owned(Box<str>),
}

/// An attribute value.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Val {
    Int(i64),
    Double(f64),
    Bool(bool),
    Str(Box<str>),
}

/// An attribute: an interned key and its value.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Attr {
    pub key: u32,
    pub value: Val,
}

/// No parent (yet): a pending root, or an async slice.
pub(super) const NO_PARENT: u64 = u64::MAX;

/// A closed span waiting to be final.
#[derive(Debug)]
pub(super) struct Rec {
    pub start: u64,
    pub end: u64,
    /// Number in the file, in close order over every thread: its span id (and its trace's id
    /// when it is a root).
    pub n: u64,
    /// The close number (on its thread) of the span that took it; [`NO_PARENT`] while none has.
    pub parent: u64,
    pub name: Text,
    pub attrs: Vec<Attr>,
    /// Logs and instants it took, in time order.
    pub events: Vec<SpanEvent>,
    /// The distributed trace its subtree joins, if a trace context was recorded in it.
    pub context: Option<Box<TraceContext>>,
    /// The recording thread of a scope (`thread.id`); `None` for an async slice.
    pub tid: Option<u32>,
}

/// Something on a thread that nothing has taken yet, in file order.
#[derive(Debug)]
pub(super) enum Pending {
    /// A span (by its close number) with its subtree: a root so far.
    Span(u64),
    /// A log or an instant.
    Event(SpanEvent),
    /// A trace context recorded at this time.
    Context(u64, TraceContext),
}

/// A begin/end scope that has begun.
#[derive(Debug)]
pub(super) struct Open {
    pub start: u64,
    pub name: Text,
    pub attrs: Vec<Attr>,
}

/// One thread's state.
///
/// Invariant: `arena` is the concatenation, in order, of the trees of the `Pending::Span` items
/// of `pending` (a tree is its spans in close order, root last: a scope closes after the scopes
/// nested in it); `arena[i]` has close number `base + i`.
#[derive(Debug, Default)]
pub(super) struct Thread {
    pub open: Vec<Open>,
    pub arena: VecDeque<Rec>,
    pub base: u64,
    pub pending: VecDeque<Pending>,
    /// Spans closed so far (the next close number).
    pub closed: u64,
    /// From a first reading of the file: the close numbers of this thread's true roots, ascending,
    /// for close numbers at or past `known_from`; `next_root` indexes the first not yet passed.
    pub roots: Vec<u64>,
    pub known_from: u64,
    pub next_root: usize,
    /// Whether a first reading gave this thread's roots.
    pub roots_known: bool,
}

impl Thread {
    /// The start of a pending item.
    pub fn start_of(&self, item: &Pending) -> u64 {
        match item {
            Pending::Span(at) => self.arena[(at - self.base) as usize].start,
            Pending::Event(e) => e.time_unix_nano,
            Pending::Context(t, _) => *t,
        }
    }

    /// The end of a pending item (its time for an event).
    pub fn end_of(&self, item: &Pending) -> u64 {
        match item {
            Pending::Span(at) => self.arena[(at - self.base) as usize].end,
            _ => self.start_of(item),
        }
    }

    /// Whether the span closed as number `k` is known to be a root of the whole file.
    pub fn is_true_root(&mut self, k: u64) -> bool {
        if !self.roots_known || k < self.known_from {
            return false;
        }
        while self.roots.get(self.next_root).is_some_and(|&r| r < k) {
            self.next_root += 1;
        }
        self.roots.get(self.next_root) == Some(&k)
    }

    /// Removes the oldest pending item; a span's tree is moved into `tree` (emptied first), whose
    /// element `i` had close number `base + i`, the returned base.
    pub fn pop_front(&mut self, tree: &mut Vec<Rec>) -> Option<(Pending, u64)> {
        let item = self.pending.pop_front()?;
        let base = self.base;
        if let Pending::Span(at) = item {
            tree.clear();
            let len = (at + 1 - self.base) as usize;
            tree.extend(self.arena.drain(..len));
            self.base = at + 1;
        }
        Some((item, base))
    }

    /// Spans and items held (a pending root counts twice: a bound, not a census).
    pub fn size(&self) -> usize {
        self.arena.len() + self.pending.len()
    }
}

/// A typed attribute value.
pub(super) fn val(value: Value<'_>) -> Val {
    match value {
        Value::I64(v) => Val::Int(v),
        Value::U64(v) => match i64::try_from(v) {
            Ok(v) => Val::Int(v),
            Err(_) => Val::Str(v.to_string().into()),
        },
        Value::F64(v) => Val::Double(v),
        Value::Bool(v) => Val::Bool(v),
        Value::Str(s) => Val::Str(s.into()),
        Value::Pointer(p) => Val::Str(format!("{p:#x}").into()),
    }
}

/// The event's name (argument 0 for a dynamic name) and its other arguments as attributes.
pub(super) fn name_and_attrs(strings: &mut Strings, event: &Event<'_>) -> (Text, Vec<Attr>) {
    let mut name = None;
    let mut attrs = Vec::new();
    for (i, (_, value)) in event.args.iter().enumerate().filter_map(|(i, a)| Some((i, (*a)?))) {
        if i == 0 && event.callsite.dynamic_name {
            if let Value::Str(s) = value {
                name = Some(Text::Owned(s.into()));
                continue;
            }
        }
        // The argument's name is the callsite's.
        attrs.push(Attr { key: strings.table_id(event.callsite.arg_names[i]), value: val(value) });
    }
    let name = name.unwrap_or_else(|| Text::Interned(strings.table_id(event.callsite.name)));
    (name, attrs)
}

/// A log's message: its format string filled with its parameters, as `phosphor logs` prints it.
pub(super) fn log_message(event: &Event<'_>) -> String {
    let mut params = [Value::Bool(false); MAX_PARAMS];
    let mut n = 0;
    for (slot, v) in params.iter_mut().zip(event.params.iter()) {
        *slot = v;
        n += 1;
    }
    let mut message = String::new();
    format_log(&mut message, event.callsite.name.as_str(), &params[..n]);
    message
}

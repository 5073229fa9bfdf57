//! The assembler's compact spans: a span whose tree is not final is a [`Rec`] (times, an interned
//! name, typed attributes), not yet an OTLP `Span` with its strings and id vectors.

use std::collections::HashMap;
// Shared, so that each string is kept once (the assembler moves to the forwarder's thread).
use std::sync::Arc;

use opentelemetry_proto::tonic::trace::v1::span::Event as SpanEvent;
use phosphor_format::file::{Event, TableStr, Value};
use phosphor_format::Phase;
use phosphor_model::names::lock_base;

use crate::context::TraceContext;

/// A string kept once: names and attribute keys come from a file's callsites, a few hundred
/// strings for millions of spans. Bounded by the reader's callsite tables (plus the assembler's
/// own keys). A string of the file's table is found by its index, so a name of megabytes is
/// hashed once, not once per event.
#[derive(Debug, Default)]
pub(super) struct Strings {
    ids: HashMap<Arc<str>, u32>,
    list: Vec<Arc<str>>,
    /// By the file's string table index, the id plus one (0: not seen yet).
    by_index: Vec<u32>,
    /// A lock's name as shown (`NAME (wait)`, `NAME (held)`), by the file's string table index
    /// of its callsite's name and whether it is the held phase.
    locks: HashMap<(u32, bool), u32>,
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
        let at = s.index() as usize;
        if let Some(&id) = self.by_index.get(at).filter(|&&id| id != 0) {
            return id - 1;
        }
        let id = self.id(s.as_str());
        if at >= self.by_index.len() {
            self.by_index.resize(at + 1, 0);
        }
        self.by_index[at] = id + 1;
        id
    }

    /// The id of a lock callsite's name as shown ([`lock_name`]).
    fn lock_id(&mut self, s: TableStr<'_>, phase: Phase) -> u32 {
        let key = (s.index(), phase == Phase::LockHeld);
        if let Some(&id) = self.locks.get(&key) {
            return id;
        }
        let id = self.id(&lock_name(s.as_str(), phase));
        self.locks.insert(key, id);
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

/// No parent: a root, or an async slice.
pub(super) const NO_PARENT: u32 = u32::MAX;

/// A span whose tree is not final yet.
#[derive(Debug)]
pub(super) struct Rec {
    pub start: u64,
    pub end: u64,
    /// Number in the file, in the order spans are made: its span id (and its trace's id when it
    /// is a root).
    pub n: u64,
    /// The index of its parent in its tree ([`NO_PARENT`]: the root).
    pub parent: u32,
    pub name: Text,
    pub attrs: Vec<Attr>,
    /// Logs and instants it encloses (and no span nested in it does), in time order.
    pub events: Vec<SpanEvent>,
    /// The distributed trace its subtree joins, if a trace context was recorded in it.
    pub context: Option<Box<TraceContext>>,
    /// The caller's `tracestate`, recorded with the context.
    pub trace_state: Option<Box<str>>,
    /// The recording thread of a scope (`thread.id`); `None` for an async slice.
    pub tid: Option<u32>,
    /// Whether it holds an error-level log (the tail rule `errors`).
    pub error: bool,
}

/// A typed attribute value.
pub(super) fn val(value: Value<'_>) -> Val {
    match value {
        Value::I64(v) => Val::Int(v),
        // One type per key whatever the value: OTLP has no unsigned integer, and a key that is an
        // int for small values and a string for large ones cannot be queried. The bits are kept
        // (two's complement): a value past i64::MAX reads as negative, `as u64` gives it back.
        Value::U64(v) => Val::Int(v as i64),
        Value::F64(v) => Val::Double(v),
        Value::Bool(v) => Val::Bool(v),
        Value::Str(s) => Val::Str(s.into()),
        Value::Pointer(p) => Val::Str(format!("{p:#x}").into()),
    }
}

/// A lock event's name as every output shows it: `NAME (wait)` or `NAME (held)`
/// ([`lock_base`]); other names as they are.
pub(super) fn lock_name(name: &str, phase: Phase) -> String {
    match phase {
        Phase::LockWait => format!("{} (wait)", lock_base(name, phase)),
        Phase::LockHeld => format!("{} (held)", lock_base(name, phase)),
        _ => name.to_owned(),
    }
}

/// The event's name (argument 0 for a dynamic name; a lock's as [`lock_name`] shows it) and its
/// other arguments as attributes.
pub(super) fn name_and_attrs(strings: &mut Strings, event: &Event<'_>) -> (Text, Vec<Attr>) {
    let mut name = None;
    let mut attrs = Vec::new();
    let phase = event.callsite.phase;
    for (i, (_, value)) in event.args.iter().enumerate().filter_map(|(i, a)| Some((i, (*a)?))) {
        if i == 0 && event.callsite.dynamic_name {
            if let Value::Str(s) = value {
                let shown = match phase {
                    Phase::LockWait | Phase::LockHeld => lock_name(s, phase).into_boxed_str(),
                    _ => s.into(),
                };
                name = Some(Text::Owned(shown));
                continue;
            }
        }
        // The argument's name is the callsite's.
        attrs.push(Attr { key: strings.table_id(event.callsite.arg_names[i]), value: val(value) });
    }
    let name = name.unwrap_or_else(|| match phase {
        Phase::LockWait | Phase::LockHeld => Text::Interned(strings.lock_id(event.callsite.name, phase)),
        _ => Text::Interned(strings.table_id(event.callsite.name)),
    });
    (name, attrs)
}

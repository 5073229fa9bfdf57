//! [`Rows`]: the nesting engine's sink, which numbers the resolved slices and marks and keeps
//! them as rows until the reader turns them into Arrow batches.
//!
//! The engine hands a resolved subtree over as a walk (`enter` before the slices nested in it,
//! `leave` after), so a slice's id is given when it is entered and its parent is the slice
//! entered last and not left, on a stack. A subtree resolved early (a thread past the engine's
//! pending limit) is walked without the slices that will enclose it: its top has no parent id,
//! though its path and depth name them.

use phosphor_model::nesting::{PathId, Problem, Sink, Slice, SliceKind};

use crate::sites::Kind;

/// What a slice or mark carries through the nesting engine from its event: small, as the engine
/// moves it with its slice; what most rows lack is boxed apart ([`Extra`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct Payload {
    /// Its site ([`crate::sites::Sites`]).
    pub(crate) site: u32,
    pub(crate) kind: Kind,
    /// A counter's value.
    pub(crate) value: f64,
    /// Its text, typed arguments and flow, when it has any of them that a table shows.
    pub(crate) extra: Option<Box<Extra>>,
}

/// The parts of a [`Payload`] that only some rows have, and only some tables show.
#[derive(Clone, Debug, Default)]
pub(crate) struct Extra {
    /// Its arguments as a JSON object (`None`: it had none); a log's message.
    pub(crate) text: Option<Box<str>>,
    /// Its arguments, typed, when the `args` table is wanted (`None`: none, or not wanted).
    pub(crate) args: Option<Box<[crate::args_table::Arg]>>,
    /// The flow it continues (a poll of an instrumented future), when `flows` is wanted.
    pub(crate) flow: Option<u64>,
}

impl Payload {
    /// Its arguments as JSON, or a log's message.
    pub(crate) fn text(&self) -> Option<&str> {
        self.extra.as_ref().and_then(|e| e.text.as_deref())
    }

    /// Its typed arguments, given up (for the `args` table, once its batch is made).
    pub(crate) fn take_args(&mut self) -> Option<Box<[crate::args_table::Arg]>> {
        self.extra.as_mut().and_then(|e| e.args.take())
    }

    /// The flow it continues.
    pub(crate) fn flow(&self) -> Option<u64> {
        self.extra.as_ref().and_then(|e| e.flow)
    }

    /// Sets what the extra holds when `extra` has anything.
    pub(crate) fn set_extra(&mut self, extra: Extra) {
        if extra.text.is_some() || extra.args.is_some() || extra.flow.is_some() {
            self.extra = Some(Box::new(extra));
        }
    }
}

/// A resolved slice or mark.
#[derive(Debug)]
pub(crate) struct Row {
    pub(crate) tid: u32,
    pub(crate) id: u64,
    pub(crate) parent: Option<u64>,
    pub(crate) depth: u32,
    pub(crate) path: PathId,
    /// Start on the timeline.
    pub(crate) start: u64,
    /// `None` for a begin never ended.
    pub(crate) dur: Option<u64>,
    pub(crate) self_dur: u64,
    pub(crate) payload: Payload,
}

/// The rows resolved and not yet made into batches: slices (scopes, locks, begins never ended)
/// and marks (instants, counters, logs) apart.
#[derive(Debug, Default)]
pub(crate) struct Rows {
    pub(crate) slices: Vec<Row>,
    /// Instants, counters and logs, in [`Rows::MARKS`]' order.
    pub(crate) marks: [Vec<Row>; 3],
    /// The scopes that do not nest, as the engine reported them.
    pub(crate) problems: Vec<Problem>,
    /// The slices entered and not yet left: (thread, id).
    stack: Vec<(u32, u64)>,
    next_id: u64,
    /// Allocation counts waiting for their slices (`allocations`).
    pub(crate) allocs: crate::allocations::AllocMatch,
}

impl Rows {
    /// The tables of marks, in the order [`Rows::marks`] keeps them.
    pub(crate) const MARKS: [crate::tables::Table; 3] =
        [crate::tables::Table::Instants, crate::tables::Table::Counters, crate::tables::Table::Logs];

    pub(crate) fn new() -> Rows {
        Rows { next_id: 1, ..Rows::default() }
    }
}

impl Sink<Payload> for Rows {
    fn enter(&mut self, s: &Slice, payload: Payload) {
        let id = self.next_id;
        self.next_id += 1;
        let parent = self.stack.last().filter(|(tid, _)| *tid == s.tid).map(|&(_, id)| id);
        self.stack.push((s.tid, id));
        self.allocs.entered(s, id);
        let row = Row {
            tid: s.tid,
            id,
            parent,
            depth: s.depth,
            path: s.path,
            start: s.start,
            dur: (s.kind != SliceKind::Unclosed).then_some(s.dur),
            self_dur: s.self_ticks,
            payload,
        };
        match s.kind {
            SliceKind::Mark => {
                let table = crate::tables::table_of(row.payload.kind);
                let at = Rows::MARKS.iter().position(|&t| t == table).unwrap_or(2);
                self.marks[at].push(row);
            }
            SliceKind::Scope | SliceKind::Unclosed => self.slices.push(row),
        }
    }

    fn leave(&mut self, _slice: &Slice) {
        self.stack.pop();
    }

    fn problem(&mut self, problem: Problem) {
        self.problems.push(problem);
    }
}

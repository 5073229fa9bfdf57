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
/// moves it with its slice; what most rows lack is packed apart ([`Extra`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct Payload {
    /// Its site ([`crate::sites::Sites`]).
    pub(crate) site: u32,
    pub(crate) kind: Kind,
    /// A counter's value.
    pub(crate) value: f64,
    /// Its text, arguments and flow, when it has any of them that a table shows.
    pub(crate) extra: Option<Extra>,
}

/// The parts of a [`Payload`] that only some rows have, and only some tables show, packed in
/// one allocation: a flags byte; its count of arguments (`u32`, little-endian, so that the
/// `args` rows are counted without unpacking); the flow it continues (8 bytes) if [`FLOW`];
/// a log's message (its length as `u32` and its bytes) if [`TEXT`]; then its arguments to the
/// end, laid out as [`crate::args_table::Packed`] lays them out (the `arguments` JSON and the
/// `args` rows are both written from them when the batches are made).
#[derive(Clone, Debug)]
pub(crate) struct Extra(Box<[u8]>);

const FLOW: u8 = 1;
const TEXT: u8 = 2;

/// Appends an extra's bytes ([`Extra`]) to `out`; returns whether it has anything (else the
/// bytes appended are to be dropped).
fn pack_to<'a>(
    out: &mut Vec<u8>,
    flow: Option<u64>,
    text: Option<&str>,
    args: impl IntoIterator<Item = (&'a str, phosphor_format::file::Value<'a>)>,
) -> bool {
    let at = out.len();
    out.push((u8::from(flow.is_some()) * FLOW) | (u8::from(text.is_some()) * TEXT));
    out.extend_from_slice(&[0; 4]);
    if let Some(flow) = flow {
        out.extend_from_slice(&flow.to_le_bytes());
    }
    if let Some(text) = text {
        let len = u32::try_from(text.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&text.as_bytes()[..len as usize]);
    }
    let args = crate::args_table::pack_into(out, args);
    // Saturating: no event carries 4 billion arguments.
    let n = u32::try_from(args).unwrap_or(u32::MAX);
    out[at + 1..at + 5].copy_from_slice(&n.to_le_bytes());
    flow.is_some() || text.is_some() || args > 0
}

impl Extra {
    /// The extra of a row continuing `flow`, of message `text`, with arguments `args`; `None`
    /// if it has none of them. `scratch` is a buffer kept between calls, so that making one
    /// costs the one allocation of its bytes.
    pub(crate) fn pack<'a>(
        scratch: &mut Vec<u8>,
        flow: Option<u64>,
        text: Option<&str>,
        args: impl IntoIterator<Item = (&'a str, phosphor_format::file::Value<'a>)>,
    ) -> Option<Extra> {
        scratch.clear();
        pack_to(scratch, flow, text, args).then(|| Extra(scratch.as_slice().into()))
    }

    /// [`Extra::pack`], the bytes appended to `bytes` (a feed's, [`Feed::bytes`]) after their
    /// length (`u32`, little-endian) instead of allocated: the extra returned is a mark, empty,
    /// that [`Extra::adopt`] fills from them on the engine's thread.
    ///
    /// [`Feed::bytes`]: phosphor_model::background::Feed::bytes
    pub(crate) fn carry<'a>(
        bytes: &mut Vec<u8>,
        flow: Option<u64>,
        text: Option<&str>,
        args: impl IntoIterator<Item = (&'a str, phosphor_format::file::Value<'a>)>,
    ) -> Option<Extra> {
        let at = bytes.len();
        bytes.extend_from_slice(&[0; 4]);
        if !pack_to(bytes, flow, text, args) {
            bytes.truncate(at);
            return None;
        }
        // Saturating: no event's packed arguments reach 4 GiB (its file's blocks are bounded).
        let len = u32::try_from(bytes.len() - at - 4).unwrap_or(u32::MAX);
        bytes[at..at + 4].copy_from_slice(&len.to_le_bytes());
        // An empty box allocates nothing; a packed extra is never empty (its flags and count).
        Some(Extra(Box::default()))
    }

    /// Fills a mark made by [`Extra::carry`] with its bytes, taken from the front of `bytes`,
    /// into an allocation of this thread. An extra already filled takes nothing.
    pub(crate) fn adopt(&mut self, bytes: &mut &[u8]) {
        if !self.0.is_empty() {
            return;
        }
        let Some((len, rest)) = bytes.split_first_chunk::<4>() else {
            return;
        };
        let len = (u32::from_le_bytes(*len) as usize).min(rest.len());
        let (packed, rest) = rest.split_at(len);
        self.0 = packed.into();
        *bytes = rest;
    }

    fn flags(&self) -> u8 {
        self.0.first().copied().unwrap_or(0)
    }

    /// Its count of arguments.
    fn count(&self) -> usize {
        self.0.get(1..5).and_then(|b| b.try_into().ok()).map_or(0, u32::from_le_bytes) as usize
    }

    fn flow(&self) -> Option<u64> {
        let bytes = self.0.get(5..13).filter(|_| self.flags() & FLOW != 0)?;
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    }

    /// Where the text's length is, and where the arguments start.
    fn layout(&self) -> (usize, usize) {
        let at = if self.flags() & FLOW != 0 { 13 } else { 5 };
        if self.flags() & TEXT == 0 {
            return (at, at);
        }
        let len = self.0.get(at..at + 4).and_then(|b| b.try_into().ok()).map_or(0, u32::from_le_bytes);
        (at, at + 4 + len as usize)
    }

    fn text(&self) -> Option<&str> {
        if self.flags() & TEXT == 0 {
            return None;
        }
        let (at, args) = self.layout();
        // Written from a `&str` by `pack` (cut only past 4 GiB, which no trace string reaches).
        self.0.get(at + 4..args).map(|b| std::str::from_utf8(b).unwrap_or(""))
    }

    fn args(&self) -> &[u8] {
        self.0.get(self.layout().1..).unwrap_or_default()
    }
}

/// A row's packed extra and where its arguments start in it.
pub(crate) type PackedArgs = (Box<[u8]>, usize);

impl Payload {
    /// A log's message.
    pub(crate) fn text(&self) -> Option<&str> {
        self.extra.as_ref().and_then(Extra::text)
    }

    /// Its arguments, packed (empty: none).
    pub(crate) fn args(&self) -> &[u8] {
        self.extra.as_ref().map_or(&[], Extra::args)
    }

    /// Its packed extra, given up with where its arguments start and their count (for the
    /// `args` table, once the batches of its row are made), if it has arguments.
    pub(crate) fn take_args(&mut self) -> Option<(PackedArgs, usize)> {
        let e = self.extra.as_ref().filter(|e| e.count() > 0)?;
        let (from, n) = (e.layout().1, e.count());
        self.extra.take().map(|e| ((e.0, from), n))
    }

    /// The flow it continues.
    pub(crate) fn flow(&self) -> Option<u64> {
        self.extra.as_ref().and_then(Extra::flow)
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

#[cfg(test)]
mod tests {
    use phosphor_format::file::Value;

    use super::*;

    #[test]
    fn an_extra_gives_back_its_flow_text_and_arguments_with_their_count() {
        let args = [("n", Value::I64(-3)), ("s", Value::Str("é")), ("b", Value::Bool(true))];
        let mut scratch = vec![9; 40];
        for (flow, text, given) in [
            (Some(u64::MAX - 1), Some("a message"), 3),
            (None, Some(""), 2),
            (Some(7), None, 1),
            (None, None, 3),
            (Some(1), None, 0),
        ] {
            let extra = Extra::pack(&mut scratch, flow, text, args.iter().copied().take(given));
            let mut payload = Payload { extra, ..Payload::default() };
            assert_eq!(payload.flow(), flow);
            assert_eq!(payload.text(), text);
            let back: Vec<_> = crate::args_table::unpack(payload.args()).map(|(k, _)| k).collect();
            let keys: Vec<_> = args.iter().take(given).map(|&(k, _)| k).collect();
            assert_eq!(back, keys);
            match payload.take_args() {
                Some(((bytes, from), n)) => {
                    assert_eq!(n, given);
                    assert_eq!(crate::args_table::unpack(&bytes[from..]).count(), given);
                    assert!(payload.extra.is_none(), "given up with its arguments");
                }
                None => assert_eq!(given, 0),
            }
        }
        assert!(Extra::pack(&mut scratch, None, None, args.iter().copied().take(0)).is_none());
    }
}

//! Events of a chunk read from a file, with callsites and strings resolved.
//!
//! [`ChunkEvents`] walks a [`Chunk`]'s records the way the runtime's in-memory iterator does:
//! thread-switch markers change the thread, each event is decoded with every length checked, its
//! callsite is looked up in the tables read so far, and static string words are resolved through
//! the string table. Everything borrows the reader; nothing is allocated per event.

use super::chunk::Chunk;
use super::error::{Error, ErrorKind};
use super::strings::StringTable;
use super::tables::{Callsite, Tables};
use crate::{decode_event, ArgWord, ParamIter, Phase, RawParams, ID_THREAD_SWITCH, MAX_ARGS};

/// An argument value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// Signed integer.
    I64(i64),
    /// Unsigned integer.
    U64(u64),
    /// Float.
    F64(f64),
    /// Boolean.
    Bool(bool),
    /// A string: static (from the string table) or dynamic (from the records).
    Str(&'a str),
    /// A pointer's address in the recording process.
    Pointer(u64),
}

/// One event read from a file.
#[derive(Clone, Debug, PartialEq)]
pub struct Event<'a> {
    /// Recording thread.
    pub tid: u32,
    /// Raw clock value (the start, for complete events).
    pub ts: u64,
    /// The callsite (its strings are handles to the reader's string table).
    pub callsite: Callsite<'a>,
    /// Duration in clock ticks, for complete and lock events.
    pub duration: Option<u64>,
    /// The id of an async event.
    pub async_id: Option<u64>,
    /// Arguments: name and value.
    pub args: [Option<(&'a str, Value<'a>)>; MAX_ARGS],
    /// A log's parameters, in order (empty for other events).
    pub params: Params<'a>,
    /// Whether a string argument was cut when it was recorded.
    pub truncated: bool,
    /// File offset of the event's main record.
    pub offset: u64,
}

/// A log event's parameters, with static strings resolved through the string table. Compared and
/// printed as their values.
#[derive(Clone, Copy)]
pub struct Params<'a> {
    raw: Option<RawParams<'a>>,
    strings: &'a StringTable,
}

impl<'a> Params<'a> {
    /// How many parameters.
    pub fn len(&self) -> usize {
        self.raw.map_or(0, |r| r.len())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The parameters in order.
    pub fn iter(&self) -> ParamValues<'a> {
        ParamValues { inner: self.raw.map(|r| r.iter()), strings: self.strings }
    }
}

impl PartialEq for Params<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl core::fmt::Debug for Params<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Iterator over a log's parameter values; see [`Params::iter`].
#[derive(Clone, Debug)]
pub struct ParamValues<'a> {
    inner: Option<ParamIter<'a>>,
    strings: &'a StringTable,
}

impl<'a> Iterator for ParamValues<'a> {
    type Item = Value<'a>;

    fn next(&mut self) -> Option<Value<'a>> {
        let w = self.inner.as_mut()?.next()?;
        // `ChunkEvents` checked every static string's index before handing out the event.
        Some(value(w, self.strings).unwrap_or(Value::Str("")))
    }
}

/// `w` as a value, a static string resolved in `strings` (in files the whole word is a string
/// table index, see chunk.rs); `Err` with the index if the table has no such string.
#[inline(always)]
fn value<'a>(w: ArgWord<'a>, strings: &'a StringTable) -> Result<Value<'a>, u64> {
    Ok(match w {
        ArgWord::I64(v) => Value::I64(v),
        ArgWord::U64(v) => Value::U64(v),
        ArgWord::F64(v) => Value::F64(v),
        ArgWord::Bool(v) => Value::Bool(v),
        ArgWord::Pointer(v) => Value::Pointer(v),
        ArgWord::Str(s) => Value::Str(s),
        ArgWord::StaticStr { addr, len } => {
            let index = addr | ((len as u64) << 48);
            let s = usize::try_from(index).ok().and_then(|i| strings.get(i)).ok_or(index)?;
            Value::Str(s)
        }
    })
}

impl Event<'_> {
    /// The event's phase.
    pub fn phase(&self) -> Phase {
        self.callsite.phase
    }

    /// The argument called `name`.
    pub fn arg(&self, name: &str) -> Option<Value<'_>> {
        self.args.iter().flatten().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

/// Iterator over a chunk's events; see [`Chunk::events`]. After an error it skips the rest of the
/// chunk.
#[derive(Debug)]
pub struct ChunkEvents<'a> {
    chunk: Chunk<'a>,
    pos: usize,
    tid: u32,
}

impl<'a> ChunkEvents<'a> {
    pub(crate) fn new(chunk: Chunk<'a>) -> ChunkEvents<'a> {
        ChunkEvents { chunk, pos: 0, tid: chunk.extents.tid }
    }
}

impl<'a> ChunkEvents<'a> {
    /// The next event whose callsite's phase `keep` accepts, decoded as [`next`](Iterator::next)
    /// decodes it. The events passed over are neither decoded nor checked, only stepped over by
    /// their record counts: a pass that wants a few kinds of events (the Perfetto export's plan
    /// of async slices) reads a chunk for a fraction of the cost, and leaves the checks to the
    /// pass that reads every event. An event of an undefined callsite is not passed over: it is
    /// returned (as the error `next` gives).
    pub fn next_where(&mut self, mut keep: impl FnMut(Phase) -> bool) -> Option<Result<Event<'a>, Error>> {
        let records = self.chunk.records;
        loop {
            let r = records.get(self.pos)?;
            if r.id == ID_THREAD_SWITCH {
                self.tid = r.slots[0] as u32;
                self.pos += 1;
                continue;
            }
            match self.chunk.tables.phase(r.id) {
                Some(phase) if !keep(phase) => self.pos += 1 + r.meta.continuation(),
                _ => return self.next(),
            }
        }
    }
}

impl<'a> Iterator for ChunkEvents<'a> {
    type Item = Result<Event<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let records = self.chunk.records;
        loop {
            let at = self.pos;
            let r = records.get(at)?;
            if r.id == ID_THREAD_SWITCH {
                self.tid = r.slots[0] as u32;
                self.pos += 1;
                continue;
            }
            match decode_at(records, at, self.tid, self.chunk.tables, self.chunk.record_offset(at), None) {
                Ok((event, len)) => {
                    self.pos += len;
                    return Some(Ok(event));
                }
                Err(e) => {
                    self.pos = self.chunk.records.len();
                    return Some(Err(e));
                }
            }
        }
    }
}

/// Decodes the event whose main record is `records[at]`, recorded by thread `tid` and found at
/// file offset `offset`, with callsites and strings from `tables` (callsites as defined when the
/// tables were at `version`, if given); returns it and how many records it takes. Every length is
/// checked; an error names `offset`.
#[inline]
pub(crate) fn decode_at<'a>(
    records: &'a [crate::Record],
    at: usize,
    tid: u32,
    tables: &'a Tables,
    offset: u64,
    version: Option<u32>,
) -> Result<(Event<'a>, usize), Error> {
    let r = &records[at];
    let raw = decode_event(records, at).map_err(|e| Error::new(ErrorKind::Decode(e), offset))?;
    let cs = match version {
        None => tables.callsite(r.id),
        Some(v) => tables.callsite_at(r.id, v),
    };
    let cs = cs.ok_or_else(|| Error::new(ErrorKind::UnknownCallsite(r.id), offset))?;
    let unknown = |index| Error::new(ErrorKind::UnknownString { index, len: tables.strings.len() }, offset);
    let mut args = [None; MAX_ARGS];
    for (i, a) in raw.args.iter().enumerate() {
        let Some(w) = *a else { continue };
        args[i] = Some((cs.arg_names[i].as_str(), value(w, &tables.strings).map_err(unknown)?));
    }
    if let Some(p) = raw.params {
        // Check every static string now, so that iterating the parameters cannot fail.
        for w in p.iter() {
            value(w, &tables.strings).map_err(unknown)?;
        }
    }
    let lead = (raw.lead_len > 0).then_some(raw.lead[0]);
    let event = Event {
        tid,
        ts: r.ts,
        callsite: cs,
        duration: if cs.phase.has_duration() { lead } else { None },
        async_id: if matches!(cs.phase, Phase::AsyncBegin | Phase::AsyncEnd) { lead } else { None },
        args,
        params: Params { raw: raw.params, strings: &tables.strings },
        truncated: raw.truncated,
        offset,
    };
    Ok((event, raw.len))
}

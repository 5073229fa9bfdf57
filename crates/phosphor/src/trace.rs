//! `Trace`: a finished in-memory trace, and its events decoded.
//!
//! A trace keeps the buffer's chunks as they were written (no copy at `stop`), the callsite table,
//! the thread names and the clock. [`Trace::events`] decodes them lazily, in chunk loan order; each
//! thread's events come out in the order it recorded them. Complete events are written when they
//! end, so a parent scope follows its children: sort by timestamp where that matters.

use std::collections::HashMap;

use phosphor_format::file::Aggregate;
use phosphor_format::{
    decode_event, ArgWord, DecodeError, Phase, RawParams, Record, FIRST_CALLSITE_ID, ID_THREAD_SWITCH,
};

use crate::buffer::TraceBuffer;
use crate::callsite::{Callsite, CallsiteMeta};
use crate::clock::ClockInfo;
use crate::stats::Stats;

/// A finished trace.
#[derive(Debug)]
pub struct Trace {
    buffer: TraceBuffer,
    order: Vec<usize>,
    callsites: Vec<&'static Callsite>,
    threads: HashMap<u32, String>,
    clock: ClockInfo,
    stats: Stats,
    aggregates: Vec<Aggregate>,
}

/// One chunk of a trace.
#[derive(Clone, Copy, Debug)]
pub struct ChunkView<'a> {
    /// The thread that first wrote into it (pool chunks switch threads with marker records).
    pub tid: u32,
    /// The chunk's writer stream and sequence number in it, as the trace file's extents hold them
    /// (`phosphor::format::file::Extents::stream`): the tenant's loan count, with a pool tenant's
    /// number in the top 16 bits.
    pub seq: u64,
    /// Its committed records.
    pub records: &'a [Record],
}

/// An argument value of a decoded event: the same type the trace-file reader yields.
pub use phosphor_format::file::Value as ArgValue;

/// A decoded event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event<'a> {
    /// Recording thread.
    pub tid: u32,
    /// Raw clock value (the start, for complete events).
    pub ts: u64,
    /// Callsite id.
    pub id: u32,
    /// Static metadata.
    pub callsite: &'static CallsiteMeta,
    /// Duration in clock ticks, for complete and lock events.
    pub duration: Option<u64>,
    /// The id of an async event.
    pub async_id: Option<u64>,
    /// Arguments: name and value.
    pub args: [Option<(&'static str, ArgValue<'a>)>; 2],
    /// A log's parameters (`trace_log!`), in order; empty for other events.
    pub params: LogParamValues<'a>,
    /// Whether a string argument was cut.
    pub truncated: bool,
}

/// The parameters of a log event, decoded on demand.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct LogParamValues<'a> {
    raw: Option<RawParams<'a>>,
}

impl<'a> LogParamValues<'a> {
    /// How many.
    pub fn len(&self) -> usize {
        self.raw.map_or(0, |r| r.len())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values in order.
    pub fn iter(&self) -> impl Iterator<Item = ArgValue<'a>> + 'a {
        self.raw.into_iter().flat_map(|r| r.iter()).map(value)
    }
}

impl Event<'_> {
    /// The event's phase.
    pub fn phase(&self) -> Phase {
        self.callsite.phase
    }

    /// The argument called `name`.
    pub fn arg(&self, name: &str) -> Option<ArgValue<'_>> {
        self.args.iter().flatten().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    /// The event's name: the callsite's, or for a name chosen at run time (`dyn`), argument 0.
    pub fn name(&self) -> &str {
        match (self.callsite.dynamic_name, &self.args[0]) {
            (true, Some((_, ArgValue::Str(s)))) => s,
            _ => self.callsite.name,
        }
    }
}

/// A trace that does not decode. Traces recorded by this crate always decode; this guards the
/// readers against memory corruption.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// A record is malformed.
    #[error("chunk {chunk}: {source}")]
    Decode {
        /// Chunk position in loan order.
        chunk: usize,
        /// What was wrong.
        source: DecodeError,
    },
    /// A record names a callsite the trace does not know.
    #[error("chunk {chunk}, record {record}: unknown callsite id {id}")]
    UnknownCallsite {
        /// Chunk position in loan order.
        chunk: usize,
        /// Record position in the chunk.
        record: usize,
        /// The id found.
        id: u32,
    },
}

impl Trace {
    pub(crate) fn new(
        buffer: TraceBuffer,
        callsites: Vec<&'static Callsite>,
        threads: HashMap<u32, String>,
        clock: ClockInfo,
        stats: Stats,
        aggregates: Vec<Aggregate>,
    ) -> Trace {
        let order = buffer.used_chunks();
        Trace { buffer, order, callsites, threads, clock, stats, aggregates }
    }

    /// The chunks holding data, in loan order.
    pub fn chunks(&self) -> impl Iterator<Item = ChunkView<'_>> + '_ {
        self.order.iter().map(|&i| {
            let c = self.buffer.chunk(i);
            // SAFETY: the trace owns the buffer; the log evicted every tenant before handing it
            // over, so nothing writes into it any more.
            ChunkView { tid: c.tid(), seq: c.seq(), records: unsafe { c.records() } }
        })
    }

    /// Every event, decoded.
    pub fn events(&self) -> Events<'_> {
        Events { trace: self, chunk: 0, pos: 0, tid: 0, records: &[] }
    }

    /// The callsite with `id`.
    pub fn callsite(&self, id: u32) -> Option<&'static CallsiteMeta> {
        let i = id.checked_sub(FIRST_CALLSITE_ID)? as usize;
        self.callsites.get(i).map(|c| c.meta())
    }

    /// Every callsite known when the trace stopped, with its id.
    pub fn callsites(&self) -> impl Iterator<Item = (u32, &'static CallsiteMeta)> + '_ {
        self.callsites.iter().enumerate().map(|(i, c)| (FIRST_CALLSITE_ID + i as u32, c.meta()))
    }

    /// The name of thread `tid`, if it was named.
    pub fn thread_name(&self, tid: u32) -> Option<&str> {
        self.threads.get(&tid).map(String::as_str)
    }

    /// How the trace's clock values map to time.
    pub fn clock(&self) -> &ClockInfo {
        &self.clock
    }

    /// What was recorded and dropped.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// What the aggregate points (`trace_sum!`, `trace_histogram!`) whose category the trace
    /// took counted during the trace (see `aggregate.rs` for how a delta is taken).
    pub fn aggregates(&self) -> &[Aggregate] {
        &self.aggregates
    }
}

/// Iterator over a trace's events; see [`Trace::events`].
#[derive(Debug)]
pub struct Events<'a> {
    trace: &'a Trace,
    chunk: usize,
    pos: usize,
    tid: u32,
    records: &'a [Record],
}

impl<'a> Iterator for Events<'a> {
    type Item = Result<Event<'a>, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            while self.pos >= self.records.len() {
                let &i = self.trace.order.get(self.chunk)?;
                let c = self.trace.buffer.chunk(i);
                // SAFETY: as in `Trace::chunks`.
                self.records = unsafe { c.records() };
                self.tid = c.tid();
                self.pos = 0;
                self.chunk += 1;
            }
            let at = self.pos;
            let r = &self.records[at];
            if r.id == ID_THREAD_SWITCH {
                self.tid = r.slots[0] as u32;
                self.pos += 1;
                continue;
            }
            let chunk = self.chunk - 1;
            let raw = match decode_event(self.records, at) {
                Ok(raw) => raw,
                Err(source) => {
                    self.pos = self.records.len(); // skip the rest of a corrupt chunk
                    return Some(Err(TraceError::Decode { chunk, source }));
                }
            };
            self.pos += raw.len;
            let Some(meta) = self.trace.callsite(r.id) else {
                return Some(Err(TraceError::UnknownCallsite { chunk, record: at, id: r.id }));
            };
            let lead = (raw.lead_len > 0).then_some(raw.lead[0]);
            let mut args = [None, None];
            for (i, a) in raw.args.iter().enumerate() {
                args[i] = a.map(|w| (meta.arg_names[i], value(w)));
            }
            return Some(Ok(Event {
                tid: self.tid,
                ts: r.ts,
                id: r.id,
                callsite: meta,
                duration: if meta.phase.has_duration() { lead } else { None },
                async_id: if matches!(meta.phase, Phase::AsyncBegin | Phase::AsyncEnd) { lead } else { None },
                args,
                params: LogParamValues { raw: raw.params },
                truncated: raw.truncated,
            }));
        }
    }
}

fn value(w: ArgWord<'_>) -> ArgValue<'_> {
    match w {
        ArgWord::I64(v) => ArgValue::I64(v),
        ArgWord::U64(v) => ArgValue::U64(v),
        ArgWord::F64(v) => ArgValue::F64(v),
        ArgWord::Bool(v) => ArgValue::Bool(v),
        ArgWord::Pointer(v) => ArgValue::Pointer(v),
        ArgWord::Str(s) => ArgValue::Str(s),
        ArgWord::StaticStr { addr, len } => ArgValue::Str(static_str(addr, len)),
    }
}

/// Resolves a static string recorded by this process.
pub(crate) fn static_str(addr: u64, len: usize) -> &'static str {
    if addr == 0 {
        return "";
    }
    // SAFETY: in-memory traces are recorded by this process, and a StaticStr word is only ever
    // packed from a `&'static str` (`arg::Static`), so `addr..addr+len` lies inside that string,
    // which lives for the whole program.
    let bytes = unsafe { std::slice::from_raw_parts(addr as usize as *const u8, len) };
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        // A string longer than 65,535 bytes was cut, possibly inside a char: keep the valid prefix.
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
    }
}

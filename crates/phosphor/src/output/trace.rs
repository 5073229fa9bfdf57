//! `Trace`: a finished in-memory trace, and its events decoded.
//!
//! A trace keeps the buffer's chunks as they were written (no copy at `stop`), the callsite table,
//! the thread names and the clock. [`Trace::events`] decodes them lazily, in chunk loan order; each
//! thread's events come out in the order it recorded them. Complete events are written when they
//! end, so a parent scope follows its children: sort by timestamp where that matters.

use std::collections::HashMap;

use phosphor_format::file::Aggregate;
use phosphor_format::system::SystemBatch;
use phosphor_format::{
    decode_event, ArgWord, DecodeError, Phase, RawParams, Record, FIRST_CALLSITE_ID, ID_THREAD_SWITCH,
};

use crate::record::buffer::TraceBuffer;
use crate::record::clock::ClockInfo;
use crate::registry::callsite::{Callsite, CallsiteMeta};
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
    system: Option<SystemBatch>,
    /// How `save` and `write_to` compress the file's blocks.
    compression: phosphor_format::file::Compression,
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

    /// A log event's message (`trace_log!`): its format string filled with its parameters, as
    /// `phosphor logs` and every other tool print it (`phosphor_format::logfmt`).
    pub fn message(&self) -> String {
        let mut params = [ArgValue::U64(0); phosphor_format::MAX_PARAMS];
        let mut n = 0;
        for (slot, v) in params.iter_mut().zip(self.params.iter()) {
            *slot = v;
            n += 1;
        }
        let mut out = String::new();
        phosphor_format::logfmt::format_log(&mut out, self.callsite.name, &params[..n]);
        out
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
        Trace {
            buffer,
            order,
            callsites,
            threads,
            clock,
            stats,
            aggregates,
            system: None,
            compression: crate::output::trace_file::DEFAULT_SAVE_COMPRESSION,
        }
    }

    /// The trace with its system context (`None`: it asked for none).
    pub(crate) fn with_system(mut self, system: Option<SystemBatch>) -> Trace {
        self.system = system;
        self
    }

    /// The trace, saved by [`save`](Self::save) and [`write_to`](Self::write_to) with its blocks
    /// compressed by `compression` (by default the trace's
    /// [`TraceConfig::compression`](crate::TraceConfig::compression), else
    /// [`DEFAULT_SAVE_COMPRESSION`](crate::DEFAULT_SAVE_COMPRESSION)).
    /// [`Compression::None`](phosphor_format::file::Compression::None) writes a file that
    /// readers of format 1.6 and older read.
    pub fn with_compression(mut self, compression: phosphor_format::file::Compression) -> Trace {
        self.compression = compression;
        self
    }

    /// How [`save`](Self::save) and [`write_to`](Self::write_to) compress the file's blocks.
    pub fn compression(&self) -> phosphor_format::file::Compression {
        self.compression
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

    /// The system context collected while the trace ran (see `TraceConfig::context_switches`,
    /// `cpu_samples` and `allocations`): the traced threads' context switches and CPU samples,
    /// the heap totals, the executable mappings, and its status (always there), which says what
    /// was unavailable and why, and what was lost. `None` when the trace asked for none. Times
    /// are `CLOCK_MONOTONIC` nanoseconds: compare them with events through
    /// [`clock().to_ns`](ClockInfo::to_ns).
    pub fn system(&self) -> Option<&SystemBatch> {
        self.system.as_ref()
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

/// What a static string argument whose address is not readable memory decodes as.
pub(crate) const BAD_STATIC_STR: &str = "<bad static string>";

/// Resolves a static string recorded by this process, or [`BAD_STATIC_STR`] when its word does not
/// point at readable memory (a corrupt or forged record): `addr.rs` reads it in place only inside
/// the program's read-only segments or the interner's arena, and has the kernel copy it elsewhere.
pub(crate) fn static_str(addr: u64, len: usize) -> &'static str {
    if addr == 0 {
        return "";
    }
    let Some(bytes) = usize::try_from(addr).ok().and_then(|a| crate::output::addr::resolve(a, len)) else {
        return BAD_STATIC_STR;
    };
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        // A string longer than 65,535 bytes was cut, possibly inside a char: keep the valid prefix.
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
    }
}

// Linux: elsewhere a static string word is trusted as recorded (see `addr.rs`).
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use phosphor_format::file::{Reader, Value};
    use phosphor_format::pack_static_str;

    use crate::{trace_instant, ArgValue, BufferMode, Static, Trace, TraceConfig, TraceLog};

    /// A trace of four events whose static string argument the test then points elsewhere: to
    /// address 0x10, to an inaccessible page, across the end of a readable page into that one,
    /// and to a string leaked on the heap (a real `&'static str`, which must still resolve).
    fn forged() -> (Trace, &'static str) {
        let log = TraceLog::new(Default::default()).unwrap();
        log.start(TraceConfig::new(BufferMode::Fixed, 1 << 16)).unwrap();
        for k in 0..4u64 {
            trace_instant!(log: &log, "forge", "forged", "k" => k, "s" => Static("original"));
        }
        log.stop();
        let trace = log.take_trace().unwrap();
        // Two pages: the first readable, the second not.
        // SAFETY: a fresh anonymous mapping of two pages, then the second made inaccessible; the
        // mapping is never unmapped (the test process ends with it).
        let page = unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            assert_eq!(libc::mprotect(p.cast::<u8>().add(4096).cast(), 4096, libc::PROT_NONE), 0);
            p as usize
        };
        let leaked: &'static str = Box::leak(String::from("leaked on the heap").into_boxed_str());
        let targets =
            [(0x10, 5), (page + 4096, 8), (page + 4093, 8), (leaked.as_ptr() as usize, leaked.len())];
        let original = pack_static_str("original".as_ptr() as usize, 8).0;
        for &i in &trace.order {
            let chunk = trace.buffer.chunk(i);
            // SAFETY: the trace owns its stopped buffer: nothing else reads or writes it now.
            let records = unsafe { chunk.records() }.to_vec();
            for (at, mut r) in records.into_iter().enumerate() {
                let Some(slot) = r.slots.iter().position(|&w| w == original) else { continue };
                let (addr, len) = targets[r.slots[0] as usize];
                r.slots[slot] = pack_static_str(addr, len).0;
                // SAFETY: as above; the slot is one of the chunk's committed records.
                unsafe { chunk.slot(at).write(std::mem::MaybeUninit::new(r)) };
            }
        }
        (trace, leaked)
    }

    #[test]
    fn a_static_string_word_outside_readable_memory_decodes_as_a_placeholder() {
        let (trace, leaked) = forged();
        let got: Vec<String> = trace
            .events()
            .map(|e| match e.unwrap().arg("s") {
                Some(ArgValue::Str(s)) => s.to_owned(),
                other => panic!("{other:?}"),
            })
            .collect();
        let bad = super::BAD_STATIC_STR;
        assert_eq!(got, [bad, bad, bad, leaked]);
    }

    #[test]
    fn a_static_string_word_outside_readable_memory_is_saved_as_a_placeholder() {
        let (trace, leaked) = forged();
        let file = trace.write_to(Vec::new()).unwrap();
        let mut r = Reader::new(&file[..]).unwrap();
        let mut got = Vec::new();
        r.for_each_event(|e| match e.arg("s") {
            Some(Value::Str(s)) => got.push(s.to_owned()),
            other => panic!("{other:?}"),
        })
        .unwrap();
        let bad = super::BAD_STATIC_STR;
        assert_eq!(got, [bad, bad, bad, leaked]);
    }
}

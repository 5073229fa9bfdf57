//! The Chrome trace event format (JSON), as `chrome://tracing`, Perfetto's UI and Speedscope load it.
//!
//! [`write_chrome_json`] streams a trace file into `{"traceEvents":[...]}`, one chunk at a time.
//! Thread slices (begins, ends, complete and lock events, instants, logs) go through
//! [`Ordered`], which holds each thread's slices (bounded) until their tree is the one `phosphor
//! stats` builds and hands them over as a walk in time order; everything else (counters, async
//! slices, flows, metadata) is written as the [`Reader`] decodes it. The JSON is written by hand:
//! the output is a fixed shape of numbers and escaped strings, and a serializer would only add an
//! intermediate value per event.
//!
//! # Mapping
//!
//! | Phosphor phase | `ph` | extra fields |
//! |---|---|---|
//! | begin / end pair | `X` | `dur`; the begin's name and arguments |
//! | begin never ended | `B` | (no `E`) |
//! | end with no begin open on its thread | dropped | (as `phosphor stats` drops it) |
//! | complete | `X` | `dur` |
//! | lock wait / lock held | `X` | `dur`; the name gets ` (wait)` / ` (held)` |
//! | instant | `i` | `"s":"t"` (thread scope) |
//! | log | `i` | `"s":"t"`; the name is the formatted message; `args`: `level`, `p0`, `p1`, ... |
//! | counter, data | `C` | the value in `args` |
//! | async begin / end | `b` / `e` | `"id"` (hex string: ids are 64-bit) and `"cat"` |
//!
//! An event named at run time (`dyn`) takes its name from argument 0, which is then not repeated
//! in `args`.
//!
//! Metadata events (`M`) name the process (first) and every thread (last: a thread's name may be
//! defined anywhere in the file). A thread that has events but no name is called `thread <tid>`.
//!
//! # Slices, per client
//!
//! Every slice with a duration is one `X`, in the walk's order (a slice before the slices nested
//! in it); a begin never ended is a `B` with no `E`. No `B`/`E` pairs: at equal times speedscope
//! queues a file's `B`s before its `X`s and opens a `B` before an `E` of the same name and
//! arguments, which nests a pair inside a touching sibling of the same name. Instants and logs
//! are `i`, which speedscope ignores.
//!
//! **The rule.** The walk is a sequence of points (each slice's begin, then its end after the
//! slices nested in it), in time order. Each point is written at its nanosecond plus one step
//! per point of its thread already written at that nanosecond (see `chrome_time`): every point of
//! a thread has a time of its own, and sorted by time the points are the walk, at any depth and
//! however many slices start or end, with or without length, in one nanosecond. Speedscope sorts
//! by time (its rules for ties then never apply: `ts`, then longer first, then file order, and an
//! end before a begin unless they name the same frame), so it rebuilds the tree `phosphor stats`
//! counts; so does Chrome's viewer. Perfetto reads times to the nanosecond with ties in file
//! order, which is the walk's. Since an `X` carries its end, the walk's slices are held
//! (`Walk`) until every one's end is known, which is when no scope is open on the walk: at most
//! the subtree [`Ordered`] hands over at once, bounded as it is.
//!
//! The steps are 0.1 ps up to 67 s from the trace's origin (coarser later, so that floating-point
//! sums keep the order), leaving room for 5,000 points per nanosecond and thread; past that many,
//! the rest of the nanosecond's points tie.
//!
//! # Time
//!
//! `ts` and `dur` are microseconds written as exact decimals with nanosecond precision
//! (`1234.567`), computed from integer nanoseconds. `ts` is **relative to the trace's clock
//! origin** (the instant the header's `origin_ticks` was read); the origin's `CLOCK_MONOTONIC` and
//! wall-clock nanoseconds are in `otherData`, so absolute times can be recovered. Relative times
//! keep the numbers small enough that a viewer parsing them as `f64` keeps every nanosecond. A
//! point that shares its nanosecond with earlier points of its thread is moved by its steps,
//! under half a nanosecond: rounded to the nanosecond, as Perfetto reads them, times and
//! durations are exact, and a slice alone in its nanoseconds is written at its exact times.
//!
//! Several files make one document through [`ChromeDocument`]: a process per file, each file's
//! `ts` counted from the earliest origin of them all (its origin on the shared timeline added).
//!
//! # Arguments
//!
//! Integers are JSON numbers; floats too, except NaN and the infinities, written as the strings
//! `"NaN"`, `"Infinity"`, `"-Infinity"`; pointers and async ids are hex strings. An event whose
//! string argument was cut when recorded gets `"truncated":true` in its args.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufWriter, Read, Write};

use phosphor_format::file::{ClockInfo, Event, Reader, TableStr, Value};
use phosphor_format::Phase;

use phosphor_model::ordered::Ordered;

use crate::chrome_time::{write_units_as_us, UNITS_PER_NS};
pub use crate::error::{Error, ExportSummary};

/// Writes the trace that `reader` reads as Chrome JSON to `out` (buffered here; pass the writer
/// itself, not a `BufWriter`, unless it is one already).
///
/// On a read error (a truncated or corrupt file) the events read so far stay written, the document
/// is closed so it parses, and [`Error::Read`] says where reading stopped.
pub fn write_chrome_json<R: Read, W: Write>(reader: Reader<R>, out: W) -> Result<ExportSummary, Error> {
    let mut doc = ChromeDocument::new(out)?;
    let result = doc.add_file(reader, 0);
    doc.finish()?;
    result
}

/// A Chrome JSON document of several trace files on one timeline, a process per file: files are
/// added one after the other ([`add_file`](Self::add_file)), each read once, in the memory one
/// file's export takes, then the document is closed ([`finish`](Self::finish)).
///
/// Each file's events are placed at its origin on the shared timeline
/// ([`crate::timeline::Placement::origin_ns`]), so `ts` counts from the earliest origin of the
/// files. A file's process is its header's pid, unless an earlier file of the document took that
/// pid: then `4294967295 - n` for the `n`-th file (no system gives pids that high), so every file
/// stays a process of its own. One file alone makes exactly what [`write_chrome_json`] makes; with
/// several, `otherData` holds `files`, each file's fields as [`write_chrome_json`] writes them,
/// plus its `pid` and `origin_ns`.
#[derive(Debug)]
pub struct ChromeDocument<W: Write> {
    out: BufWriter<W>,
    /// Each file's pid, origin and `otherData` fields, in the order added.
    files: Vec<(u32, i64, String)>,
}

impl<W: Write> ChromeDocument<W> {
    /// Opens the document on `out` (buffered here).
    pub fn new(out: W) -> Result<ChromeDocument<W>, Error> {
        let mut out = BufWriter::with_capacity(1 << 16, out);
        out.write_all(b"{\"traceEvents\":[\n")?;
        Ok(ChromeDocument { out, files: Vec::new() })
    }

    /// Writes the events of the trace that `reader` reads as a process of its own, its times
    /// moved by `origin_ns` (the file's origin on the shared timeline; 0 alone). On a read error
    /// the events read so far stay written, and the document can take more files.
    pub fn add_file<R: Read>(
        &mut self,
        mut reader: Reader<R>,
        origin_ns: i64,
    ) -> Result<ExportSummary, Error> {
        let header = reader.header();
        let clock = header.clock.clone();
        let n = self.files.len();
        let pid = if self.files.iter().any(|f| f.0 == header.pid) { u32::MAX - n as u32 } else { header.pid };
        let out = &mut self.out;
        let mut summary = ExportSummary::default();
        // One entry per thread; `last_tid` spares the map lookup for runs of one thread's events.
        let mut threads = BTreeSet::new();
        let mut last_tid = None;
        let mut scratch = String::new();
        let mut quoted = Quoted::default();
        let mut ids = Ids { pid, tid: None, bytes: Vec::new() };
        let mut walk = Walk::default();
        let mut ordered = Ordered::default();

        if n > 0 {
            out.write_all(b",\n")?;
        }
        write!(
            out,
            "{{\"name\":\"process_name\",\"ph\":\"M\",\"ts\":0,\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":"
        )?;
        write_str(out, &header.process_name)?;
        out.write_all(b"}}")?;

        let at = Placed { clock: &clock, origin_ns };
        let mut w = Slices {
            out,
            at: &at,
            ids: &mut ids,
            scratch: &mut scratch,
            quoted: &mut quoted,
            walk: &mut walk,
            error: None,
        };
        // Thread slices go through `Ordered`, which hands them over in the order of their tree;
        // the rest is written as it is read.
        let failure = loop {
            let chunk = match reader.next_chunk() {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break None,
                Err(e) => break Some(e),
            };
            summary.chunks += 1;
            let mut failed = None;
            for event in chunk.events() {
                // By reference: moving an `Event` out of the `Result` copies its 288 bytes.
                let e = match &event {
                    Ok(e) => e,
                    Err(_) => {
                        failed = event.err();
                        break;
                    }
                };
                if last_tid != Some(e.tid) {
                    threads.insert(e.tid);
                    last_tid = Some(e.tid);
                }
                if !ordered.push(&chunk, e, &mut w) {
                    w.stream(e);
                }
                if let Some(err) = w.error.take() {
                    return Err(err.into());
                }
                summary.events += 1;
            }
            if failed.is_some() {
                break failed;
            }
        };
        ordered.finish(reader.tables(), &mut w);
        w.flush_all();
        if let Some(err) = w.error.take() {
            return Err(err.into());
        }

        // Names last: a threads block may follow the chunks it names. Only threads with events get
        // one (a row with nothing on it helps no one), each cut as elsewhere (`names.rs`): one name of
        // megabytes may name a million threads.
        let mut names: BTreeMap<u32, Option<&str>> = threads.iter().map(|t| (*t, None)).collect();
        for (t, n) in reader.thread_names() {
            if let Some(name) = names.get_mut(&t) {
                *name = Some(n.as_str());
            }
        }
        for (tid, name) in names {
            write!(out, ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"ts\":0,\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":")?;
            match name {
                Some(n) => write_str(out, &phosphor_model::names::shown(n))?,
                None => write!(out, "\"thread {tid}\"")?,
            }
            out.write_all(b"}}")?;
        }
        let mut other = Vec::new();
        write_other_data(&mut other, &reader)?;
        self.files.push((pid, origin_ns, String::from_utf8_lossy(&other).into_owned()));

        summary.threads = u32::try_from(threads.len()).unwrap_or(u32::MAX);
        summary.complete = reader.trailer().is_some();
        match failure {
            None => Ok(summary),
            Some(source) => Err(Error::Read { offset: source.offset(), exported: summary, source }),
        }
    }

    /// Closes the document and flushes it.
    pub fn finish(mut self) -> Result<(), Error> {
        let out = &mut self.out;
        out.write_all(b"\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{")?;
        match self.files.as_slice() {
            [(_, _, one)] => out.write_all(one.as_bytes())?,
            files => {
                out.write_all(b"\"files\":[")?;
                for (i, (pid, origin_ns, fields)) in files.iter().enumerate() {
                    if i > 0 {
                        out.write_all(b",")?;
                    }
                    write!(out, "{{{fields},\"pid\":{pid},\"origin_ns\":{origin_ns}}}")?;
                }
                out.write_all(b"]")?;
            }
        }
        out.write_all(b"}}\n")?;
        out.flush()?;
        Ok(())
    }
}

/// A file's clock and its origin on the shared timeline.
struct Placed<'a> {
    clock: &'a ClockInfo,
    origin_ns: i64,
}

impl Placed<'_> {
    /// Nanoseconds of `ticks` on the shared timeline.
    #[inline]
    fn ns(&self, ticks: u64) -> i64 {
        self.clock.since_origin_ns(ticks).saturating_add(self.origin_ns)
    }
}

/// Writes nanoseconds as microseconds with three decimals, exactly.
fn write_us(out: &mut impl Write, ns: i64) -> io::Result<()> {
    if ns < 0 {
        out.write_all(b"-")?;
    }
    let abs = ns.unsigned_abs();
    write_u64(out, abs / 1000)?;
    let frac = abs % 1000;
    let digits = [b'.', b'0' + (frac / 100) as u8, b'0' + (frac / 10 % 10) as u8, b'0' + (frac % 10) as u8];
    out.write_all(&digits)
}

/// `00` to `99`, two ASCII digits each.
const DIGIT_PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// Decimal digits without the formatting machinery, two at a time: this runs several times per
/// event (a digit at a time, it was a sixth of the export's instructions).
pub(crate) fn write_u64(out: &mut impl Write, mut v: u64) -> io::Result<()> {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    while v >= 100 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        let pair = v as usize * 2;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + v as u8;
    }
    out.write_all(&buf[i..])
}

/// `,"pid":P,"tid":T` of the thread whose events are being written, made again when another
/// thread's come (once per chunk), not per event.
struct Ids {
    pid: u32,
    tid: Option<u32>,
    bytes: Vec<u8>,
}

impl Ids {
    #[inline]
    fn of(&mut self, tid: u32) -> &[u8] {
        if self.tid != Some(tid) {
            self.tid = Some(tid);
            self.bytes.clear();
            self.bytes.extend_from_slice(b",\"pid\":");
            // Writing to a `Vec` cannot fail.
            let _ = write_u64(&mut self.bytes, self.pid.into());
            self.bytes.extend_from_slice(b",\"tid\":");
            let _ = write_u64(&mut self.bytes, tid.into());
        }
        &self.bytes
    }
}

/// Names, categories and argument names from the file, quoted and escaped as JSON strings once,
/// by their index in the reader's string table (which holds each distinct string once): escaping
/// them per event was a sixth of the export's instructions. Strings longer than
/// [`Quoted::MAX_LEN`] are escaped each time, so the cache holds at most that much per string the
/// events use.
#[derive(Debug, Default)]
struct Quoted {
    by_index: Vec<Option<Box<[u8]>>>,
    /// Scratch for a string not cached.
    long: Vec<u8>,
}

impl Quoted {
    const MAX_LEN: usize = 256;

    /// `s` as a JSON string, quotes included.
    #[inline]
    fn get(&mut self, s: TableStr<'_>) -> &[u8] {
        let i = s.index() as usize;
        match self.by_index.get(i) {
            Some(Some(_)) => self.by_index[i].as_deref().unwrap_or_default(),
            _ => self.quote(s),
        }
    }

    /// Writes `s` as a JSON string, quotes included: from the cache, or a long one escaped
    /// straight into `out` (a 60 MiB name is not copied again, nor kept).
    #[inline]
    fn write(&mut self, out: &mut impl Write, s: TableStr<'_>) -> io::Result<()> {
        if s.len() > Self::MAX_LEN {
            return write_str(out, &s);
        }
        out.write_all(self.get(s))
    }

    #[cold]
    #[inline(never)]
    fn quote(&mut self, s: TableStr<'_>) -> &[u8] {
        let mut q = Vec::with_capacity(s.len() + 2);
        // Writing to a `Vec` cannot fail.
        let _ = write_str(&mut q, &s);
        if s.len() > Self::MAX_LEN {
            self.long = q;
            return &self.long;
        }
        let i = s.index() as usize;
        if i >= self.by_index.len() {
            self.by_index.resize(i + 1, None);
        }
        self.by_index[i].insert(q.into_boxed_slice())
    }
}

fn write_i64(out: &mut impl Write, v: i64) -> io::Result<()> {
    if v < 0 {
        out.write_all(b"-")?;
    }
    write_u64(out, v.unsigned_abs())
}

/// Where an event goes on the time axis.
#[derive(Clone, Copy)]
enum Place {
    /// At its own timestamp, with no duration: what is not a thread slice, and marks.
    Stream,
    /// A slice with a duration, as an `X`: start and end in `chrome_time` units.
    Complete { start: i128, end: i128 },
    /// A begin never ended, as a `B` with no `E`.
    Open { start: i128 },
}

/// Writes a time in `chrome_time` units as microseconds: three decimals when it is a whole
/// nanosecond (most are), up to seven when it was moved.
#[inline]
fn write_units(out: &mut impl Write, units: i128) -> io::Result<()> {
    if units % UNITS_PER_NS == 0 {
        write_us(out, i64::try_from(units / UNITS_PER_NS).unwrap_or(i64::MAX))
    } else {
        write_units_as_us(out, units)
    }
}

fn write_event(
    out: &mut impl Write,
    clock: &Placed<'_>,
    ids: &mut Ids,
    e: &Event<'_>,
    scratch: &mut String,
    quoted: &mut Quoted,
    place: Place,
) -> io::Result<()> {
    write_head(out, e, scratch, quoted)?;
    write_time(out, clock, Some(e), place)?;
    write_tail(out, ids, e, quoted)
}

/// An event's name and category, its first fields.
fn write_head(
    out: &mut impl Write,
    e: &Event<'_>,
    scratch: &mut String,
    quoted: &mut Quoted,
) -> io::Result<()> {
    let cs = &e.callsite;
    out.write_all(b",\n{\"name\":")?;
    let name: &str = match cs.phase {
        // A lock's phase follows its name: the callsite's, or the one a `dyn` lock carries.
        Phase::LockWait | Phase::LockHeld => {
            let carried = crate::logs::event_name(e, scratch);
            let name =
                if cs.dynamic_name { carried } else { phosphor_model::names::lock_base(carried, cs.phase) };
            let phase = if cs.phase == Phase::LockWait { " (wait)" } else { " (held)" };
            write_str_parts(out, &[name, phase])?;
            name
        }
        _ if cs.level.is_some() || cs.dynamic_name => crate::logs::event_name(e, scratch),
        _ => &cs.name,
    };
    if !matches!(cs.phase, Phase::LockWait | Phase::LockHeld) {
        if cs.level.is_some() || cs.dynamic_name {
            write_str(out, name)?;
        } else {
            quoted.write(out, cs.name)?;
        }
    }
    out.write_all(b",\"cat\":")?;
    quoted.write(out, cs.category)
}

/// An event's phase and time: `e` is the event of a [`Place::Stream`] (a held slice's phase
/// follows its place).
fn write_time(
    out: &mut impl Write,
    clock: &Placed<'_>,
    e: Option<&Event<'_>>,
    place: Place,
) -> io::Result<()> {
    match (place, e) {
        (Place::Complete { start, end }, _) => {
            out.write_all(b",\"ph\":\"X\",\"ts\":")?;
            write_units(out, start)?;
            out.write_all(b",\"dur\":")?;
            write_units_as_us(out, end - start)
        }
        (Place::Open { start }, _) => {
            out.write_all(b",\"ph\":\"B\",\"ts\":")?;
            write_units(out, start)
        }
        (Place::Stream, Some(e)) => {
            let ph: &[u8] = match e.callsite.phase {
                Phase::Begin => b",\"ph\":\"B\",\"ts\":",
                Phase::End => b",\"ph\":\"E\",\"ts\":",
                Phase::Complete | Phase::LockWait | Phase::LockHeld => b",\"ph\":\"X\",\"ts\":",
                Phase::Instant | Phase::Log => b",\"ph\":\"i\",\"ts\":",
                Phase::Counter | Phase::Data => b",\"ph\":\"C\",\"ts\":",
                Phase::AsyncBegin => b",\"ph\":\"b\",\"ts\":",
                Phase::AsyncEnd => b",\"ph\":\"e\",\"ts\":",
            };
            out.write_all(ph)?;
            write_us(out, clock.ns(e.ts))
        }
        (Place::Stream, None) => Ok(()),
    }
}

/// An event's fields after its time: thread, flow, arguments.
fn write_tail(out: &mut impl Write, ids: &mut Ids, e: &Event<'_>, quoted: &mut Quoted) -> io::Result<()> {
    let cs = &e.callsite;
    out.write_all(ids.of(e.tid))?;
    if matches!(cs.phase, Phase::Instant | Phase::Log) {
        out.write_all(b",\"s\":\"t\"")?;
    }
    if let Some(id) = e.async_id {
        write!(out, ",\"id\":\"{id:#x}\"")?;
    }
    // Flows (the JSON format's v2 flow fields): an instrumented future's async slice (its
    // callsites flagged) starts one at its begin and ends it at its end, and each poll continues
    // it; so the flow has two ends even with no poll. Async slices of `trace_async_begin!` have
    // none.
    let fields = match (cs.phase, cs.flow) {
        (Phase::AsyncBegin, true) => ",\"flow_out\":true",
        (Phase::AsyncEnd, true) => ",\"flow_in\":true",
        (Phase::Complete, true) => ",\"flow_in\":true,\"flow_out\":true",
        _ => "",
    };
    let id = match (cs.phase, e.async_id, e.args[0]) {
        (Phase::AsyncBegin | Phase::AsyncEnd, Some(id), _) => Some(id),
        (Phase::Complete, _, Some((_, Value::U64(id)))) => Some(id),
        _ => None,
    };
    if let (false, Some(id)) = (fields.is_empty(), id) {
        write!(out, ",\"bind_id\":\"{:#x}\"{fields}", crate::perfetto::flow_id(cs, id))?;
    }
    write_args(out, e, quoted)?;
    out.write_all(b"}")
}

/// Writes `,"args":{...}` for `e`, if it has any to show.
fn write_args(out: &mut impl Write, e: &Event<'_>, quoted: &mut Quoted) -> io::Result<()> {
    let cs = &e.callsite;
    let shown = |i: usize| crate::logs::shows_arg(e, i);
    let has_args = e.args.iter().enumerate().any(|(i, a)| a.is_some() && shown(i));
    if has_args || e.truncated || cs.level.is_some() {
        out.write_all(b",\"args\":{")?;
        let mut first = true;
        if let Some(level) = cs.level {
            write!(out, "\"level\":\"{level}\"")?;
            first = false;
            for (i, v) in e.params.iter().enumerate() {
                write!(out, ",\"p{i}\":")?;
                write_value(out, v)?;
            }
        }
        for (i, (name, value)) in e.args.iter().enumerate().filter_map(|(i, a)| a.map(|a| (i, a))) {
            if !shown(i) {
                continue;
            }
            if !first {
                out.write_all(b",")?;
            }
            first = false;
            if name.is_empty() {
                out.write_all(if i == 0 { b"\"arg0\":" } else { b"\"arg1\":" })?;
            } else {
                quoted.write(out, cs.arg_names[i])?;
                out.write_all(b":")?;
            }
            write_value(out, value)?;
        }
        if e.truncated {
            out.write_all(if first { b"\"truncated\":true" } else { b",\"truncated\":true" })?;
        }
        out.write_all(b"}")?;
    }
    Ok(())
}

fn write_value(out: &mut impl Write, v: Value<'_>) -> io::Result<()> {
    match v {
        Value::I64(v) => write_i64(out, v),
        Value::U64(v) => write_u64(out, v),
        // Debug is the shortest text that reads back to the same f64, and always valid JSON for a
        // finite value (`1.0`, `1e-7`, `-0.0`).
        Value::F64(v) if v.is_finite() => write!(out, "{v:?}"),
        Value::F64(v) if v.is_nan() => out.write_all(b"\"NaN\""),
        Value::F64(v) => out.write_all(if v > 0.0 { b"\"Infinity\"" } else { b"\"-Infinity\"" }),
        Value::Bool(v) => out.write_all(if v { b"true" } else { b"false" }),
        Value::Str(s) => write_str(out, s),
        Value::Pointer(p) => write!(out, "\"{p:#x}\""),
    }
}

/// A float as JSON: JSON has no infinity or NaN (a corrupt clock rate can be either), so those are
/// `null`.
fn json_f64(v: f64) -> String {
    if v.is_finite() {
        format!("{v:?}")
    } else {
        "null".into()
    }
}

fn write_other_data<R: Read>(out: &mut impl Write, reader: &Reader<R>) -> io::Result<()> {
    let h = reader.header();
    let (major, minor) = reader.version();
    let clock = h.clock.kind.as_str();
    write!(
        out,
        "\"format_version\":\"{major}.{minor}\",\"clock\":\"{clock}\",\"ns_per_tick\":{},\
         \"origin_monotonic_ns\":{},\"origin_wall_ns\":{}",
        json_f64(h.clock.ns_per_tick),
        h.clock.origin_monotonic_ns,
        h.clock.origin_wall_ns
    )?;
    if let Some(t) = reader.trailer() {
        write!(out, ",\"events_recorded\":{},\"events_dropped\":{}", t.recorded, t.dropped.total())?;
    } else {
        out.write_all(b",\"incomplete\":true")?;
    }
    Ok(())
}

fn write_str(out: &mut impl Write, s: &str) -> io::Result<()> {
    write_str_parts(out, &[s])
}

/// Writes the concatenation of `parts` as one JSON string.
fn write_str_parts(out: &mut impl Write, parts: &[&str]) -> io::Result<()> {
    out.write_all(b"\"")?;
    for s in parts {
        write_escaped(out, s)?;
    }
    out.write_all(b"\"")
}

/// Escapes what JSON requires (`"`, `\`, control characters) plus U+2028 and U+2029, which JSON
/// allows but JavaScript source does not, so the output can also be embedded in a script. Other
/// characters are written as UTF-8. Runs of plain bytes go out in one write.
fn write_escaped(out: &mut impl Write, s: &str) -> io::Result<()> {
    let bytes = s.as_bytes();
    let mut plain = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (escape, len): (&[u8], usize) = match b {
            b'"' => (b"\\\"", 1),
            b'\\' => (b"\\\\", 1),
            b'\n' => (b"\\n", 1),
            b'\r' => (b"\\r", 1),
            b'\t' => (b"\\t", 1),
            0x08 => (b"\\b", 1),
            0x0c => (b"\\f", 1),
            0..=0x1f => (b"", 1),
            0xe2 if bytes.get(i + 1) == Some(&0x80) && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9)) => {
                (if bytes[i + 2] == 0xa8 { b"\\u2028" } else { b"\\u2029" }, 3)
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.write_all(&bytes[plain..i])?;
        if escape.is_empty() {
            write!(out, "\\u{b:04x}")?;
        } else {
            out.write_all(escape)?;
        }
        i += len;
        plain = i;
    }
    out.write_all(&bytes[plain..])
}

#[path = "chrome_slices.rs"]
mod slices;
use slices::{Slices, Walk};

#[cfg(test)]
#[path = "chrome_tests.rs"]
mod tests;

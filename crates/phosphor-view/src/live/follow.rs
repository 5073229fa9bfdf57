//! Feeding a live model: the trace file read as the recorder writes it.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use phosphor_format::file::Reader;
use phosphor_format::Phase;
use rustc_hash::FxHashMap as HashMap;

use super::{Ev, LiveModel, LiveOptions, Names, POLL};
use crate::records::{point_kinds, slice_flags};

/// A live trace: its model, and how the reading of its file goes.
#[derive(Debug)]
pub struct Live {
    model: Mutex<LiveModel>,
    /// Set once the recorder has written the file's last byte: the reader then reads to the end
    /// and stops.
    ended: AtomicBool,
    /// Set once the reader has stopped (at the end, or at an error).
    finished: AtomicBool,
    /// Where reading stopped early, if it did.
    read_error: std::sync::OnceLock<String>,
    options: LiveOptions,
    /// The reader of events' details.
    details: super::details::Details,
}

impl Live {
    pub(crate) fn new(options: LiveOptions) -> Live {
        Live {
            model: Mutex::new(LiveModel::new(options)),
            ended: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            read_error: std::sync::OnceLock::new(),
            options,
            details: super::details::Details::default(),
        }
    }

    /// The model, locked. Never held across an await: each request locks it, answers and
    /// unlocks.
    pub fn model(&self) -> std::sync::MutexGuard<'_, LiveModel> {
        // A reader that panicked left the model as it was between two events: still readable.
        self.model.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Says that the file is complete: nothing more will be written to it.
    pub fn end(&self) {
        // Release: the recorder wrote and flushed the file's last bytes before this store; the
        // reader that sees it (Acquire, in `Follow::read`) then finds them all in the file.
        self.ended.store(true, Ordering::Release);
    }

    /// Whether the recorder has written the file's last byte.
    pub(crate) fn ended(&self) -> bool {
        // Acquire: pairs with the Release store in `end`: the file's bytes are all written.
        self.ended.load(Ordering::Acquire)
    }

    /// Whether the recorder is still writing the file.
    pub fn connected(&self) -> bool {
        // Relaxed: a figure for display; `Follow::read` orders the reading itself.
        !self.ended.load(Ordering::Relaxed)
    }

    /// Whether the reader has read all of the file (or stopped at an error).
    pub fn finished(&self) -> bool {
        // Acquire: pairs with the Release store in `follow`, so that `read_error` is set by then.
        self.finished.load(Ordering::Acquire)
    }

    /// Where reading stopped early, if it did.
    pub fn read_error(&self) -> Option<&str> {
        self.read_error.get().map(String::as_str)
    }

    /// Says that the file cannot be read live, and why.
    pub(crate) fn fail(&self, why: String) {
        let _ = self.read_error.set(why);
        // Release: as in `follow`.
        self.finished.store(true, Ordering::Release);
    }

    /// Frees the model once the trace is served from its index instead.
    pub(crate) fn clear(&self) {
        let mut m = self.model();
        *m = LiveModel::new(self.options);
        drop(m);
        self.details.clear();
    }

    /// The details of the event of record `id` (its number) of the file at `path`; an error
    /// says why there are none. Reads the file: not on an async worker.
    pub(crate) fn event(&self, path: &Path, id: u64) -> Result<crate::events::EventDetails, String> {
        let (chunk, record) = super::details::unpack(id);
        let offset = self.model().chunk_offset(chunk).ok_or_else(|| {
            "its chunk is older than the live view keeps: its details come once the trace is indexed"
                .to_owned()
        })?;
        self.details.event(path, chunk, offset, record)
    }
}

/// A file read as it grows: at its end, it waits for more until the recorder says it is complete.
struct Follow<'a> {
    file: File,
    live: &'a Live,
}

impl Read for Follow<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let n = self.file.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // Acquire: pairs with the Release store in `Live::end`: every byte written before it
            // is in the file, so one more read finds whatever the last one missed.
            if self.live.ended.load(Ordering::Acquire) {
                return self.file.read(buf);
            }
            std::thread::sleep(POLL);
        }
    }
}

/// Reads the trace at `path` as the recorder writes it into `live`'s model, until the recorder
/// has ended it ([`Live::end`]) and every byte is read, or reading fails. Runs on a thread of its
/// own; takes the model's lock once a chunk, only to add the chunk's events.
pub fn follow(live: &Live, path: &Path) {
    let result = follow_inner(live, path);
    if let Err(e) = result {
        let _ = live.read_error.set(e);
    }
    // Release: `read_error` is set before (see `finished`).
    live.finished.store(true, Ordering::Release);
}

fn follow_inner(live: &Live, path: &Path) -> Result<(), String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let probe = file.try_clone().map_err(|e| format!("{}: {e}", path.display()))?;
    let input = BufReader::with_capacity(1 << 16, Follow { file, live });
    let mut reader = Reader::new(input).map_err(|e| e.to_string())?;
    live.model().set_clock(&reader.header().clock);
    let mut names = Names::default();
    let mut named: rustc_hash::FxHashSet<u32> = Default::default();
    let mut streams: HashMap<(u16, u32), u64> = HashMap::default();
    let mut scratch = String::new();
    // Each with its record's number.
    let mut events: Vec<(Ev, u64)> = Vec::new();
    let (mut skipping, mut chunks) = (false, 0u64);
    loop {
        let chunk = match reader.next_chunk() {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return Ok(()),
            Err(e) => return Err(e.to_string()),
        };
        let number = chunks;
        chunks += 1;
        let x = chunk.extents;
        if chunks % 16 == 0 {
            // How far behind the file's end the reader is: past `skip_behind`, skip.
            let behind = probe.metadata().map_or(0, |m| m.len()).saturating_sub(chunk.stored_end());
            let was = skipping;
            let o = &live.options;
            skipping = if skipping { behind > o.resume_behind } else { behind > o.skip_behind };
            if was && !skipping {
                // The ends of begins skipped over, and the begins of ends skipped over, are gone.
                live.model().forget_open();
            }
        }
        // A gap in a writer stream's chunk numbers: chunks lost just before this one (followed
        // while skipping too, so that chunks skipped are not taken for lost).
        let n = x.seq & ((1 << phosphor_format::file::SEQ_STREAM_SHIFT) - 1);
        let lost = match streams.insert(x.stream_key(), n) {
            None => n,
            Some(last) => n.saturating_sub(last.saturating_add(1)),
        };
        if skipping {
            let mut m = live.model();
            m.add_chunk(number, chunk.offset);
            m.skipped += u64::from(x.event_count);
            continue;
        }
        events.clear();
        if lost > 0 {
            let plural = if lost == 1 { "" } else { "s" };
            let name = names.number(&format!("{lost} chunk{plural} lost"));
            let ev = Ev::Point { tid: x.tid, ts: x.first_ts, name, kind: point_kinds::LOST_CHUNKS };
            events.push((ev, super::details::pack(number, super::details::NO_RECORD)));
        }
        // Where its records are: a record's place is its offset's distance from the first, in
        // records.
        let (first_record, record_bytes) =
            (chunk.record_offset(0), chunk.record_offset(1) - chunk.record_offset(0));
        // The names of the threads it holds, once each name is known.
        let mut thread_names = Vec::new();
        let mut name_thread = |tid: u32| {
            if !named.contains(&tid) {
                if let Some(name) = chunk.thread_name(tid) {
                    thread_names.push((tid, name.to_string()));
                    named.insert(tid);
                }
            }
        };
        name_thread(x.tid);
        let mut error = None;
        let mut last_tid = x.tid;
        for e in chunk.events() {
            let e = match e {
                Ok(e) => e,
                Err(e) => {
                    error = Some(e.to_string());
                    break;
                }
            };
            if e.tid != last_tid {
                last_tid = e.tid;
                name_thread(e.tid);
            }
            if let Some(ev) = decode(&e, &mut names, &mut scratch) {
                let record = (e.offset - first_record) / record_bytes;
                events.push((ev, super::details::pack(number, record)));
            }
        }
        let mut m = live.model();
        m.add_chunk(number, chunk.offset);
        m.add_names(names.take_new());
        for (tid, name) in thread_names {
            m.name_thread(tid, name);
        }
        for &(ev, id) in &events {
            m.take_at(ev, id);
        }
        drop(m);
        if let Some(e) = error {
            return Err(e);
        }
    }
}

/// An event as the model takes it (`None` for a counter without a numeric value).
fn decode(e: &phosphor_format::file::Event<'_>, names: &mut Names, scratch: &mut String) -> Option<Ev> {
    let cs = &e.callsite;
    let (tid, ts) = (e.tid, e.ts);
    let mut name = |e| names.number(phosphor_export::logs::event_name(e, scratch));
    Some(match cs.phase {
        Phase::Complete | Phase::LockWait | Phase::LockHeld => {
            let flags = match cs.phase {
                Phase::LockWait => slice_flags::LOCK_WAIT,
                Phase::LockHeld => slice_flags::LOCK_HELD,
                _ => slice_flags::COMPLETE,
            };
            // A lock's callsites are `NAME.wait` / `NAME.held`: `NAME (wait)` / `NAME (held)`, as
            // the index and every output name them.
            let event_name = phosphor_export::logs::event_name(e, scratch);
            let name = names.number(&phosphor_model::names::lock_name(event_name, cs.phase));
            let end = ts.saturating_add(e.duration.unwrap_or(0));
            Ev::Slice { tid, start: ts, end, name, flags }
        }
        Phase::Begin => Ev::Begin { tid, ts, name: name(e) },
        Phase::End => Ev::End { tid, ts, name: name(e) },
        Phase::Instant => Ev::Point { tid, ts, name: name(e), kind: crate::build::instant_kind(e) },
        Phase::Log => Ev::Point { tid, ts, name: names.number(&cs.name), kind: point_kinds::LOG },
        Phase::Counter | Phase::Data => {
            let value = crate::build::sample_value(e)?;
            Ev::Sample { tid, ts, name: name(e), value }
        }
        Phase::AsyncBegin | Phase::AsyncEnd => {
            let begin = cs.phase == Phase::AsyncBegin;
            Ev::Async { tid, ts, name: name(e), id: e.async_id.unwrap_or(0), begin }
        }
    })
}

/// A live trace, for the recorder: ends it when dropped.
#[derive(Debug)]
pub struct LiveHandle(pub(crate) Arc<Live>);

impl LiveHandle {
    /// The live trace.
    pub fn live(&self) -> &Live {
        &self.0
    }
}

impl Drop for LiveHandle {
    fn drop(&mut self) {
        self.0.end();
    }
}

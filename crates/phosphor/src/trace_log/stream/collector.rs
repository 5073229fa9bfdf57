//! The collector: a streaming trace's dispatcher thread (it pops the buffer's full chunks and
//! queues them, and the pieces of chunks still held, for each datastream's thread) and the
//! datastreams' threads, which write what is queued for them and release each chunk once every
//! stream given it is done with it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use phosphor_format::file::{Header, Trailer};
use phosphor_format::{Record, ID_THREAD_SWITCH};

use super::datastream::{CallsiteTable, Stream, ThreadNames};
use super::{Backpressure, StreamConfig, StreamId, StreamStats, FLUSH_PERIOD, MAX_STREAMS};
use crate::error::{Error, ErrorKind};
use crate::record::buffer::{TraceBuffer, TraceChunk};
use crate::{Stats, TraceLog};
use phosphor_format::system::SystemBatch;

/// A datastream's thread: it writes the chunks the dispatcher queues for it, in order, and
/// releases each chunk once every stream that was given it is done with it.
struct Worker {
    id: u32,
    backpressure: Backpressure,
    /// Jobs ([`Job`]) to write: whole chunks given back, and pieces of chunks still held.
    queue: crossbeam_queue::ArrayQueue<u64>,
    stream: Mutex<Stream>,
    /// Set when the stream is being closed: finish once the queue is empty, with this trailer.
    closing: Mutex<Option<Trailer>>,
    /// System context batches to write (at most `MAX_PENDING_SYSTEM`), and how many were not
    /// queued for want of room.
    system: Mutex<(std::collections::VecDeque<Arc<SystemBatch>>, u64)>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// What the trace, its dispatcher and its datastream threads share.
pub(crate) struct Shared {
    workers: Mutex<Vec<Arc<Worker>>>,
    next_id: std::sync::atomic::AtomicU32,
    stop: AtomicBool,
    header: Header,
    /// Per chunk: the streams that still have to write it; the last one releases it.
    refs: Box<[std::sync::atomic::AtomicU32]>,
    /// Per chunk: the streams that still have to write the piece queued for them (at most one
    /// piece per chunk is outstanding); the last one unpins the chunk.
    piece_refs: Box<[std::sync::atomic::AtomicU32]>,
    buf: BufferPtr,
}

/// A streaming trace's dispatcher thread (it pops full chunks and queues them for each datastream's
/// thread, and runs the periodic flush).
pub(crate) struct Collector {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The buffer pointer, shared with the collector's threads. It stays valid until `stop` has joined
/// them.
#[derive(Clone, Copy)]
struct BufferPtr(*const TraceBuffer);
// SAFETY: a `TraceBuffer` is `Sync`; the pointer is dereferenced only while `stop` keeps the buffer
// alive (it joins every collector thread before freeing it).
unsafe impl Send for BufferPtr {}
// SAFETY: as above.
unsafe impl Sync for BufferPtr {}

impl BufferPtr {
    fn get(&self) -> &TraceBuffer {
        // SAFETY: see the type.
        unsafe { &*self.0 }
    }
}

/// The log, sent to the dispatcher; alive until `stop` has joined it.
struct LogPtr(*const TraceLog);
// SAFETY: `TraceLog` is `Sync`; `stop` (also run by `Drop`) joins the dispatcher before the log can go.
unsafe impl Send for LogPtr {}

impl Collector {
    /// Starts the dispatcher of `buf`, the buffer of `log`'s streaming trace.
    pub(crate) fn start(
        log: &TraceLog,
        buf: *const TraceBuffer,
        header: Header,
    ) -> std::io::Result<Collector> {
        let buf = BufferPtr(buf);
        let chunks = buf.get().chunk_count();
        let shared = Arc::new(Shared {
            workers: Mutex::new(Vec::new()),
            next_id: std::sync::atomic::AtomicU32::new(1),
            stop: AtomicBool::new(false),
            header,
            refs: (0..chunks).map(|_| std::sync::atomic::AtomicU32::new(0)).collect(),
            piece_refs: (0..chunks).map(|_| std::sync::atomic::AtomicU32::new(0)).collect(),
            buf,
        });
        let (s, l) = (shared.clone(), LogPtr(log));
        let thread = crate::record::internal_thread::Builder::new().name("phosphor-collector".into()).spawn(
            move || {
                let l = l;
                // SAFETY: see `LogPtr`.
                dispatch(&s, unsafe { &*l.0 })
            },
        )?;
        Ok(Collector { shared, thread: Some(thread) })
    }

    /// Opens a datastream: a thread of its own.
    pub(crate) fn open(&self, config: StreamConfig) -> Result<StreamId, Error> {
        let mut workers = self.shared.workers.lock().unwrap_or_else(|p| p.into_inner());
        if workers.len() >= MAX_STREAMS {
            return Err(Error::new(ErrorKind::TooManyStreams { max: MAX_STREAMS }));
        }
        // Relaxed: only distinctness matters.
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let w = Arc::new(Worker {
            id,
            backpressure: config.backpressure,
            // At most one whole chunk, or two pieces, of each chunk are queued at once.
            queue: crossbeam_queue::ArrayQueue::new(2 * self.shared.refs.len()),
            stream: Mutex::new(Stream::new(id, config)),
            closing: Mutex::new(None),
            system: Mutex::new(Default::default()),
            thread: Mutex::new(None),
        });
        let (ww, shared) = (w.clone(), self.shared.clone());
        let t = crate::record::internal_thread::Builder::new()
            .name(format!("phosphor-sink-{id}"))
            .spawn(move || write_stream(&shared, &ww))
            .map_err(|e| Error::new(ErrorKind::Collector(e.to_string())))?;
        *w.thread.lock().unwrap_or_else(|p| p.into_inner()) = Some(t);
        workers.push(w);
        Ok(StreamId(id))
    }

    /// What the system collector calls each period: queues `batch` for every open datastream's
    /// thread (a stream already `MAX_PENDING_SYSTEM` batches behind counts it as dropped).
    pub(crate) fn system_forwarder(&self) -> crate::trace_log::system::Forward {
        let shared = self.shared.clone();
        Box::new(move |batch: Arc<SystemBatch>| {
            let workers = shared.workers.lock().unwrap_or_else(|p| p.into_inner()).clone();
            for w in workers {
                let mut q = w.system.lock().unwrap_or_else(|p| p.into_inner());
                if q.0.len() < super::MAX_PENDING_SYSTEM {
                    q.0.push_back(batch.clone());
                } else {
                    q.1 += 1;
                }
            }
        })
    }

    /// The longest `Block` timeout among the open streams (zero: none blocks).
    pub(crate) fn block_timeout(&self) -> Duration {
        let workers = self.shared.workers.lock().unwrap_or_else(|p| p.into_inner());
        workers
            .iter()
            .filter_map(|w| match w.backpressure {
                Backpressure::Block { timeout } => Some(timeout),
                Backpressure::Drop => None,
            })
            .max()
            .unwrap_or_default()
    }

    /// Closes a datastream: it writes every chunk given back so far and the committed prefix of
    /// each chunk in `held` (the chunks the trace's tenants hold now, read under the control
    /// lock), then its trailer (with `stats`, whose `recorded` then also counts those prefixes).
    /// Returns what it wrote and lost.
    ///
    /// The held chunks are pinned first, then the chunks given back are queued: a chunk given back
    /// in between is found FULL by its pin, left to the queue, and taken from it. So every event
    /// committed before the call reaches the stream (or its `events_dropped`), whether its thread
    /// is busy, idle or gone (an exiting thread gives its chunk back).
    pub(crate) fn close(
        &self,
        id: StreamId,
        stats: &Stats,
        held: &[*const TraceChunk],
    ) -> Result<StreamStats, Error> {
        let buf = self.shared.buf.get();
        let mut pieces = Vec::with_capacity(held.len());
        let mut held_events = 0;
        for &chunk in held {
            // SAFETY: a tenant's current chunk belongs to the running trace's buffer, which the
            // caller's control lock keeps alive; `pin_committed` is atomic operations only.
            let c = unsafe { &*chunk };
            let index = buf.index_of(c);
            if pieces.iter().any(|p: &Job| p.index == index) {
                continue;
            }
            let Some(p) = c.pin_committed() else { continue };
            if p.full || p.records == 0 {
                // Given back meanwhile (on its way whole, through the queue), or empty.
                c.unpin();
                continue;
            }
            // SAFETY: pinned, and `p.records` is a committed count that `pin_committed` acquired.
            held_events += phosphor_format::count_events(unsafe { c.prefix(p.records) });
            pieces.push(Job { index, upto: p.records as u32 | FINAL });
        }
        let w = {
            let mut workers = self.shared.workers.lock().unwrap_or_else(|p| p.into_inner());
            let Some(k) = workers.iter().position(|w| w.id == id.0) else {
                for p in &pieces {
                    buf.chunk(p.index as usize).unpin();
                }
                return Err(Error::new(ErrorKind::NoSuchStream));
            };
            // Every chunk given back so far, for every stream (the dispatcher, which does the
            // same, waits for this lock).
            while let Some(i) = buf.pop_full_index() {
                queue_whole(&self.shared, &workers, i);
            }
            wake(&workers);
            workers.remove(k)
        };
        let mut lost = 0;
        for p in pieces {
            if w.queue.push(p.pack()).is_err() {
                // Never: a held chunk has at most one periodic piece and this one queued, and no
                // whole job (it would not have been loaned). Counted all the same.
                let c = buf.chunk(p.index as usize);
                // SAFETY: still pinned by us, and `upto` was acquired by `pin_committed`.
                lost += phosphor_format::count_events(unsafe { c.prefix((p.upto & !FINAL) as usize) });
                c.unpin();
            }
        }
        if lost > 0 {
            w.stream.lock().unwrap_or_else(|p| p.into_inner()).count_dropped(lost);
        }
        let mut t = trailer(stats);
        t.recorded += held_events;
        Ok(finish_worker(&w, t))
    }

    /// A datastream's figures so far.
    pub(crate) fn stats(&self, id: StreamId) -> Result<StreamStats, Error> {
        let workers = self.shared.workers.lock().unwrap_or_else(|p| p.into_inner());
        let w = workers.iter().find(|w| w.id == id.0).ok_or_else(|| Error::new(ErrorKind::NoSuchStream))?;
        let s = w.stream.lock().unwrap_or_else(|p| p.into_inner()).current_stats();
        Ok(s)
    }

    /// Lets the dispatcher queue every chunk given back, then finishes every stream with `stats`;
    /// returns each stream's figures. The caller has already taken every chunk back from the
    /// threads.
    pub(crate) fn finish(mut self, stats: Stats) -> Vec<(StreamId, StreamStats)> {
        // Release: the dispatcher's Acquire load then sees every chunk queued before.
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        let workers = std::mem::take(&mut *self.shared.workers.lock().unwrap_or_else(|p| p.into_inner()));
        let t = trailer(&stats);
        workers.iter().map(|w| (StreamId(w.id), finish_worker(w, t.clone()))).collect()
    }
}

/// Tells a stream's thread to finish after its queue, with `trailer`, and joins it.
fn finish_worker(w: &Worker, trailer: Trailer) -> StreamStats {
    *w.closing.lock().unwrap_or_else(|p| p.into_inner()) = Some(trailer);
    let t = w.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(t) = t {
        t.thread().unpark();
        let _ = t.join();
    }
    let s = w.stream.lock().unwrap_or_else(|p| p.into_inner()).current_stats();
    s
}

fn trailer(s: &Stats) -> Trailer {
    crate::output::trace_file::trailer_of(s)
}

/// What a datastream's thread is given to write: chunk `index`, whole (`upto` 0: given back, every
/// committed record not written yet), or a piece of it up to record `upto` (pinned meanwhile):
/// a periodic piece, which the last stream given it unpins, or, with the [`FINAL`] bit, the last
/// piece of a stream being closed, pinned for that stream alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Job {
    index: u32,
    upto: u32,
}

/// In [`Job::upto`]: the piece was pinned for one closing stream, which unpins it.
const FINAL: u32 = 1 << 31;

impl Job {
    fn pack(self) -> u64 {
        u64::from(self.index) | (u64::from(self.upto) << 32)
    }
    fn unpack(v: u64) -> Job {
        Job { index: v as u32, upto: (v >> 32) as u32 }
    }
}

/// The stream of chunk `i`'s piece is done with it: the last one unpins the chunk.
fn unref_piece(shared: &Shared, i: u32) {
    // AcqRel: the last decrement sees every other stream's reads (Acquire), and `unpin`'s Release
    // orders them all before a later loan.
    if shared.piece_refs[i as usize].fetch_sub(1, Ordering::AcqRel) == 1 {
        shared.buf.get().chunk(i as usize).unpin();
    }
}

/// The stream of chunk `i` is done with it: the last one releases it to the pool.
fn unref(shared: &Shared, i: u32) {
    // AcqRel: the last decrement sees every other stream's reads of the chunk (Acquire), and
    // `release`'s Release store then orders them all before the next writer.
    if shared.refs[i as usize].fetch_sub(1, Ordering::AcqRel) == 1 {
        let buf = shared.buf.get();
        buf.release(buf.chunk(i as usize));
    }
}

/// Queues chunk `i`, given back, whole for every stream in `workers` (the caller holds their
/// lock), or releases it if there is none.
fn queue_whole(shared: &Shared, workers: &[Arc<Worker>], i: u32) {
    if workers.is_empty() {
        let buf = shared.buf.get();
        buf.release(buf.chunk(i as usize));
        return;
    }
    // Relaxed: the queues' push and pop order it for the stream threads.
    shared.refs[i as usize].store(workers.len() as u32, Ordering::Relaxed);
    for w in workers {
        // The queue holds at most one whole chunk and two pieces (a periodic one and a closing
        // stream's last) per chunk, never both kinds at once: never full.
        let pushed = w.queue.push(Job { index: i, upto: 0 }.pack());
        debug_assert!(pushed.is_ok());
    }
}

/// Wakes every stream's thread in `workers`.
fn wake(workers: &[Arc<Worker>]) {
    for w in workers {
        if let Some(t) = w.thread.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            t.thread().unpark();
        }
    }
}

/// The dispatcher's loop.
fn dispatch(shared: &Shared, log: &TraceLog) {
    let buf = shared.buf.get();
    let mut last_flush = Instant::now();
    let mut pieces = Pieces::default();
    loop {
        // Acquire: pairs with `finish`'s Release.
        let stopping = shared.stop.load(Ordering::Acquire);
        let mut moved = 0;
        {
            let workers = shared.workers.lock().unwrap_or_else(|p| p.into_inner());
            while let Some(i) = buf.pop_full_index() {
                moved += 1;
                pieces.sent.remove(&i);
                queue_whole(shared, &workers, i);
                if moved % 256 == 0 {
                    break;
                }
            }
            if moved > 0 {
                wake(&workers);
            }
        }
        if stopping && moved == 0 {
            return;
        }
        if !stopping && last_flush.elapsed() >= FLUSH_PERIOD {
            pieces.flush(shared, log);
            last_flush = Instant::now();
        }
        if moved == 0 && !stopping {
            std::thread::park_timeout(Duration::from_millis(1));
        }
    }
}

/// The dispatcher's record of the pieces it sent, and of what each tenant held a period ago.
#[derive(Default)]
struct Pieces {
    /// Per chunk index: the loan stamp and the records up to which pieces were queued.
    sent: HashMap<u32, (u64, u32)>,
    /// Per tenant (address): its chunk (address) and committed count at the last flush.
    last: HashMap<usize, (usize, u32)>,
    held: Vec<(usize, usize)>,
}

impl Pieces {
    /// Queues, for every datastream, the events that have waited a whole period in a chunk that a
    /// thread still holds. The chunk is pinned until the last stream has written the piece. Takes
    /// no tenant lock: the writers never notice.
    fn flush(&mut self, shared: &Shared, log: &TraceLog) {
        let buf = shared.buf.get();
        self.held.clear();
        log.held_chunks(&mut self.held);
        let workers = shared.workers.lock().unwrap_or_else(|p| p.into_inner());
        let mut now = HashMap::with_capacity(self.held.len());
        for &(tenant, chunk) in &self.held {
            // SAFETY: a tenant's current chunk belongs to the running trace's buffer, which
            // outlives this thread; reading its committed count is an atomic load.
            let c = unsafe { &*(chunk as *const crate::record::buffer::TraceChunk) };
            let i = buf.index_of(c);
            let committed = c.committed();
            now.insert(tenant, (chunk, committed));
            let Some(&(then_chunk, then)) = self.last.get(&tenant) else { continue };
            // Relaxed: the piece counter is only ever changed by this thread upwards (from 0) and
            // by the streams downwards; a stale non-zero only delays the next piece by a period.
            let outstanding = shared.piece_refs[i as usize].load(Ordering::Relaxed) != 0;
            if then_chunk != chunk || then == 0 || workers.is_empty() || outstanding {
                continue;
            }
            let Some(p) = c.pin_committed() else { continue };
            let done = match self.sent.get(&i) {
                Some(&(loan, upto)) if loan == p.loan => upto as usize,
                _ => 0,
            };
            // Only what was committed a period ago has waited long enough; a chunk given back
            // meanwhile is on its way whole.
            if p.full || p.records <= done || (then as usize) <= done {
                c.unpin();
                continue;
            }
            self.sent.insert(i, (p.loan, p.records as u32));
            // Relaxed: the queues' push and pop order it for the stream threads.
            shared.piece_refs[i as usize].store(workers.len() as u32, Ordering::Relaxed);
            for w in workers.iter() {
                let pushed = w.queue.push(Job { index: i, upto: p.records as u32 }.pack());
                debug_assert!(pushed.is_ok());
                if let Some(t) = w.thread.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                    t.thread().unpark();
                }
            }
        }
        self.last = now;
    }
}

/// What a datastream's thread has written of a chunk that it was given in pieces: the loan, the
/// records written, and the thread whose events come next (a pool tenant switches writers).
#[derive(Clone, Copy)]
struct Written {
    loan: u64,
    upto: usize,
    tid: u32,
}

/// Writes one job for a datastream: records `from..to` of chunk `i` (the rest of it, for a whole
/// chunk), under the thread that wrote them.
fn write_job(
    shared: &Shared,
    w: &Worker,
    job: Job,
    table: &mut CallsiteTable,
    names: &mut ThreadNames,
    written: &mut HashMap<u32, Written>,
) {
    let chunk = shared.buf.get().chunk(job.index as usize);
    let loan = chunk.loan_stamp();
    let prior = written.get(&job.index).filter(|p| p.loan == loan).copied();
    let (from, tid) = prior.map_or((0, chunk.tid()), |p| (p.upto, p.tid));
    // SAFETY: a whole chunk is FULL and referenced by this stream (no loan takes it until every
    // stream given it has unreferenced it); a piece's chunk is pinned until every stream given it
    // is done, and `upto` is a count the dispatcher acquired before it queued the job (the queue's
    // push and pop order that for us). Either way no one writes the records read here.
    let records = unsafe {
        if job.upto == 0 {
            chunk.records()
        } else {
            chunk.prefix(job.upto as usize)
        }
    };
    let part = &records[from.min(records.len())..];
    touch(part);
    if job.upto == 0 {
        written.remove(&job.index);
    } else {
        // The writer at the end of this piece: the last thread switch in it, or the same one.
        let mut next = tid;
        let mut k = 0;
        while let Some(r) = part.get(k) {
            if r.id == ID_THREAD_SWITCH {
                next = r.slots[0] as u32;
            }
            k += 1 + r.meta.continuation();
        }
        written.insert(job.index, Written { loan, upto: records.len(), tid: next });
    }
    if !part.is_empty() {
        let mut s = w.stream.lock().unwrap_or_else(|p| p.into_inner());
        s.write_chunk(&shared.header, table, names, tid, chunk.seq(), part);
    }
}

/// Reads one word of every cache line of `records`, each load independent of the others, so the
/// processor fetches the lines in parallel. A chunk comes from another core's cache or from memory,
/// and the passes that follow walk it event by event, each step's address depending on the last
/// record's length: without this, every line was a miss of its own, one after the other (a third
/// of the datastream thread's time at 20 M events/s, by `perf`).
fn touch(records: &[Record]) {
    let mut x = 0u64;
    for r in records.iter().step_by(64 / std::mem::size_of::<Record>()) {
        x ^= r.ts;
    }
    std::hint::black_box(x);
}

/// A datastream's thread: writes what is queued for it, flushes when the queue is empty, and
/// finishes when it is closed.
fn write_stream(shared: &Shared, w: &Worker) {
    let mut table = CallsiteTable::default();
    let mut names = ThreadNames::default();
    let mut written = HashMap::new();
    loop {
        let mut wrote = 0;
        let (pending, refused) = {
            let mut q = w.system.lock().unwrap_or_else(|p| p.into_inner());
            (std::mem::take(&mut q.0), std::mem::take(&mut q.1))
        };
        if !pending.is_empty() || refused > 0 {
            let mut s = w.stream.lock().unwrap_or_else(|p| p.into_inner());
            s.count_system_dropped(refused);
            for b in &pending {
                s.write_system(&shared.header, b);
                wrote += 1;
            }
        }
        while let Some(v) = w.queue.pop() {
            let job = Job::unpack(v);
            let last = job.upto & FINAL != 0;
            let job = Job { index: job.index, upto: job.upto & !FINAL };
            write_job(shared, w, job, &mut table, &mut names, &mut written);
            if job.upto == 0 {
                unref(shared, job.index);
            } else if last {
                shared.buf.get().chunk(job.index as usize).unpin();
            } else {
                unref_piece(shared, job.index);
            }
            wrote += 1;
            if wrote % 64 == 0 {
                w.stream.lock().unwrap_or_else(|p| p.into_inner()).flush();
            }
        }
        if wrote > 0 {
            w.stream.lock().unwrap_or_else(|p| p.into_inner()).flush();
        }
        let closing = w.closing.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(t) = closing {
            let system_done = w.system.lock().unwrap_or_else(|p| p.into_inner()).0.is_empty();
            if w.queue.is_empty() && system_done {
                let mut s = w.stream.lock().unwrap_or_else(|p| p.into_inner());
                let stream = std::mem::replace(&mut *s, Stream::closed(w.id));
                *s = Stream::finished(stream.finish(&t));
                return;
            }
            // More came meanwhile: write it first.
            *w.closing.lock().unwrap_or_else(|p| p.into_inner()) = Some(t);
            continue;
        }
        if wrote == 0 {
            std::thread::park_timeout(Duration::from_millis(1));
        } else {
            // Let the dispatcher catch up on the periodic flush's chunks.
            std::thread::yield_now();
        }
    }
}

//! The nesting engine on a second core: [`Feed`] takes a stream of [`Nesting`] operations and
//! runs them on a thread of its own, so that a tool decodes the file on its thread while the
//! engine places the slices and its [`Consumer`] counts them on another.
//!
//! Reading a file is a pipeline with two heavy stages: decoding the events (decompression
//! included) and nesting them. The engine's state (each thread's tree and the paths) is one
//! structure that every event updates, so it does not split between threads without merging
//! paths afterwards; the stages do split. The tool's thread keeps everything that needs the
//! event's borrowed text (callsites, arguments, its own name tables) and sends the engine plain
//! operations (a thread id, a [`Label`], times, a payload) in batches of [`BATCH`]; the engine's
//! thread applies them in order, and hands each batch's buffer back for reuse. A payload's
//! variable part (a writer's packed arguments) travels as bytes in its batch ([`Feed::bytes`]),
//! which [`Consumer::adopt`] copies on the engine's thread: so it is allocated and freed on that
//! one thread, never freed on another (glibc's malloc then takes the allocating thread's arena
//! lock, which the two threads contend for, each wait a sleep). At most
//! [`IN_FLIGHT`] batches wait between the two: memory stays bounded, and the faster stage waits
//! for the slower one.
//!
//! The result is the same as applying the operations on one thread: they are applied in the
//! order given, [`Consumer::message`] included. So a [`Feed`] does not start its thread until
//! the first batch is full: a small input never leaves the caller's thread, and a machine with
//! one core never does (`std::thread::available_parallelism`), nor when the thread cannot be
//! spawned.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::nesting::{Label, Nesting, Sink};

/// Operations sent to the engine at a time: few enough to stay in a core's cache (about
/// 160 KiB of 40-byte operations), many enough that the hand-over costs nothing per event.
pub const BATCH: usize = 4096;

/// Batches queued for the engine at most before the caller waits for it.
pub const IN_FLIGHT: usize = 4;

/// A [`Sink`] that also takes messages of its own, in stream order with the slices: what the
/// caller learns from an event that is not a slice but must be counted where the slices are (an
/// allocation count for the scope that just ended, found with
/// [`Nesting::complete_ending_at`]).
pub trait Consumer<P>: Sink<P> {
    /// What the caller sends besides slices.
    type Message;
    /// A message, after every operation given before it and before every one after; `nesting`
    /// is the engine as those operations left it.
    fn message(&mut self, nesting: &Nesting<P>, message: Self::Message);

    /// What an end given a payload ([`Feed::end_with`]) does to its begin's payload (by
    /// default, nothing): a writer adds the end's time or arguments to it.
    fn close(_begin: &mut P, _end: P) {}

    /// A payload on the engine's thread before its operation is applied, with what is left of
    /// its batch's bytes ([`Feed::bytes`]): the consumer takes the payload's bytes, if it has
    /// any, from the front (the payloads of a batch take theirs in the order of their
    /// operations), into memory of this thread. By default, nothing.
    fn adopt(&mut self, _payload: &mut P, _bytes: &mut &[u8]) {}
}

/// One operation on the engine.
#[derive(Debug)]
enum Op<P, M> {
    Begin { tid: u32, label: Label, ts: u64, payload: P },
    End { tid: u32, label: Label, ts: u64, payload: Option<P> },
    Complete { tid: u32, label: Label, ts: u64, dur: u64, payload: P },
    Mark { tid: u32, label: Label, ts: u64, payload: P },
    Message(M),
}

/// Applies `op`, its payload first adopted with the front of `bytes` ([`Consumer::adopt`]).
fn apply<P: Default, S: Consumer<P>>(
    nesting: &mut Nesting<P>,
    sink: &mut S,
    op: Op<P, S::Message>,
    bytes: &mut &[u8],
) {
    match op {
        Op::Begin { tid, label, ts, mut payload } => {
            sink.adopt(&mut payload, bytes);
            nesting.begin_with(tid, label, ts, payload)
        }
        Op::End { tid, label, ts, payload: None } => {
            nesting.end(tid, label, ts, sink);
        }
        Op::End { tid, label, ts, payload: Some(mut end) } => {
            sink.adopt(&mut end, bytes);
            nesting.end_with(tid, label, ts, sink, |begin| S::close(begin, end));
        }
        Op::Complete { tid, label, ts, dur, mut payload } => {
            sink.adopt(&mut payload, bytes);
            nesting.complete_with(tid, label, ts, dur, payload, sink)
        }
        Op::Mark { tid, label, ts, mut payload } => {
            sink.adopt(&mut payload, bytes);
            nesting.mark_with(tid, label, ts, payload, sink)
        }
        Op::Message(m) => sink.message(nesting, m),
    }
}

/// Operations, and the bytes their payloads carry ([`Feed::bytes`]).
struct Batch<P, M> {
    ops: Vec<Op<P, M>>,
    bytes: Vec<u8>,
}

impl<P, M> Batch<P, M> {
    fn new() -> Batch<P, M> {
        Batch { ops: Vec::new(), bytes: Vec::new() }
    }

    /// Applies every operation in order, and empties the batch for reuse.
    fn apply_all<S: Consumer<P, Message = M>>(&mut self, nesting: &mut Nesting<P>, sink: &mut S)
    where
        P: Default,
    {
        let mut rest = &self.bytes[..];
        for op in self.ops.drain(..) {
            apply(nesting, sink, op, &mut rest);
        }
        self.bytes.clear();
    }
}

/// The engine's thread, as the caller sees it.
struct Remote<P, S: Consumer<P>> {
    to_engine: SyncSender<Batch<P, S::Message>>,
    /// Batches applied, handed back empty.
    spare: Receiver<Batch<P, S::Message>>,
    /// The engine's pending slices after its last batch.
    pending: Arc<AtomicUsize>,
    thread: JoinHandle<(Nesting<P>, S)>,
}

enum State<P, S: Consumer<P>> {
    /// On the caller's thread: before the first batch is full, or for good (boxed: the
    /// engine's state is hundreds of bytes).
    Here {
        nesting: Box<Nesting<P>>,
        sink: Box<S>,
    },
    There(Remote<P, S>),
    /// Only while moving between the two.
    Moving,
}

/// A [`Nesting`] and its [`Consumer`], fed on the caller's thread and run on a second one once
/// the stream is long enough (see the [module docs](self)). The methods are [`Nesting`]'s.
pub struct Feed<P, S: Consumer<P>> {
    state: State<P, S>,
    batch: Batch<P, S::Message>,
    /// The batch's bytes as the last operation given left them: any after are the next one's.
    named: usize,
    /// Whether the engine may move to a thread of its own.
    background: bool,
}

impl<P, S> Feed<P, S>
where
    P: Default + Send + 'static,
    S: Consumer<P> + Send + 'static,
    S::Message: Send + 'static,
{
    /// Feeds `nesting`, whose slices go to `sink`; on a second thread if the machine has a
    /// second core.
    pub fn new(nesting: Nesting<P>, sink: S) -> Feed<P, S> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Feed {
            state: State::Here { nesting: Box::new(nesting), sink: Box::new(sink) },
            batch: Batch::new(),
            named: 0,
            background: cores > 1,
        }
    }

    /// Keeps the engine on the caller's thread (`false`), or lets it move (`true`, the default
    /// with two cores or more). Call it before the first operation.
    pub fn background(mut self, on: bool) -> Feed<P, S> {
        self.background = on;
        self
    }

    /// The engine and its sink, before the first operation or once [`Feed::finish`] has joined
    /// them (`None` while they run on their thread): to configure them, or read them at the end.
    pub fn parts(&mut self) -> Option<(&mut Nesting<P>, &mut S)> {
        match &mut self.state {
            State::Here { nesting, sink } => Some((&mut **nesting, &mut **sink)),
            _ => None,
        }
    }

    /// [`Feed::parts`], to read.
    pub fn parts_ref(&self) -> Option<(&Nesting<P>, &S)> {
        match &self.state {
            State::Here { nesting, sink } => Some((&**nesting, &**sink)),
            _ => None,
        }
    }

    /// Pending slices of the engine, all threads together, plus the operations not yet applied:
    /// exact with the engine kept on the caller's thread, as of the last batch applied on the
    /// engine's.
    pub fn pending(&self) -> usize {
        match &self.state {
            State::Here { nesting, .. } => nesting.pending() + self.batch.ops.len(),
            // A statistic: the value of some recent batch is all it claims.
            State::There(r) => r.pending.load(Ordering::Relaxed) + self.batch.ops.len(),
            State::Moving => 0,
        }
    }

    /// Bytes for the payload of the operation given next: appended here just before it (messages
    /// may come in between), they travel with it to the engine's thread, where
    /// [`Consumer::adopt`] takes them from the front, the payloads in the order of their
    /// operations. So what a payload carries besides its fixed part is allocated, and later
    /// freed, on the engine's thread alone (see the [module docs](self)).
    pub fn bytes(&mut self) -> &mut Vec<u8> {
        &mut self.batch.bytes
    }

    /// [`Nesting::begin_with`].
    pub fn begin_with(&mut self, tid: u32, label: Label, ts: u64, payload: P) {
        self.push(Op::Begin { tid, label, ts, payload });
    }

    /// [`Nesting::end`].
    pub fn end(&mut self, tid: u32, label: Label, ts: u64) {
        self.push(Op::End { tid, label, ts, payload: None });
    }

    /// [`Nesting::end_with`], the begin's payload updated with `end` by [`Consumer::close`].
    pub fn end_with(&mut self, tid: u32, label: Label, ts: u64, end: P) {
        self.push(Op::End { tid, label, ts, payload: Some(end) });
    }

    /// [`Nesting::complete_with`].
    pub fn complete_with(&mut self, tid: u32, label: Label, ts: u64, dur: u64, payload: P) {
        self.push(Op::Complete { tid, label, ts, dur, payload });
    }

    /// [`Nesting::mark_with`].
    pub fn mark_with(&mut self, tid: u32, label: Label, ts: u64, payload: P) {
        self.push(Op::Mark { tid, label, ts, payload });
    }

    /// [`Consumer::message`], in order with the operations.
    pub fn message(&mut self, message: S::Message) {
        self.push(Op::Message(message));
    }

    fn push(&mut self, op: Op<P, S::Message>) {
        let message = matches!(op, Op::Message(_));
        if !message {
            self.named = self.batch.bytes.len();
        }
        if let (State::Here { nesting, sink }, false) = (&mut self.state, self.background) {
            // Kept here for good: nothing to batch.
            let mut rest = &self.batch.bytes[..];
            apply(nesting, &mut **sink, op, &mut rest);
            if !message {
                self.batch.bytes.clear();
                self.named = 0;
            }
            return;
        }
        if self.batch.ops.capacity() == 0 {
            self.batch.ops.reserve_exact(BATCH);
        }
        self.batch.ops.push(op);
        // A message does not end a batch while bytes wait for the operation after it.
        if self.batch.ops.len() >= BATCH && self.batch.bytes.len() == self.named {
            self.send();
        }
    }

    /// Hands the full batch to the engine: to its thread (started now if it may), or applied
    /// here.
    fn send(&mut self) {
        if let State::Here { .. } = self.state {
            if self.background {
                self.spawn();
            }
        }
        match &mut self.state {
            State::Here { nesting, sink } => self.batch.apply_all(nesting, &mut **sink),
            State::There(remote) => {
                // A buffer the engine has emptied, or a new one while all are in flight.
                let next = remote.spare.try_recv().unwrap_or_else(|_| Batch::new());
                let full = std::mem::replace(&mut self.batch, next);
                if remote.to_engine.send(full).is_err() {
                    // The engine's thread is gone: it panicked. `finish` reports it.
                    self.batch.ops.clear();
                    self.batch.bytes.clear();
                }
            }
            State::Moving => unreachable!("a feed is never left moving"),
        }
        self.named = 0;
    }

    /// Moves the engine to a thread of its own; it stays here if none can be started.
    fn spawn(&mut self) {
        let State::Here { nesting, sink } = std::mem::replace(&mut self.state, State::Moving) else {
            unreachable!("spawn is called on the caller's thread only");
        };
        let (to_engine, batches) = mpsc::sync_channel::<Batch<P, S::Message>>(IN_FLIGHT);
        let (give_back, spare) = mpsc::sync_channel(IN_FLIGHT + 1);
        let pending = Arc::new(AtomicUsize::new(nesting.pending()));
        let published = Arc::clone(&pending);
        // The engine and sink move into the closure; if the spawn fails, the closure (and they)
        // would be lost, so they travel in a slot the caller can take back.
        let slot = Arc::new(std::sync::Mutex::new(Some((*nesting, *sink))));
        let theirs = Arc::clone(&slot);
        let spawned = std::thread::Builder::new().name("phosphor-nesting".into()).spawn(move || {
            let taken = theirs.lock().unwrap_or_else(|e| e.into_inner()).take();
            let (mut nesting, mut sink) = taken.expect("the engine is handed over once");
            drop(theirs);
            for mut batch in batches {
                batch.apply_all(&mut nesting, &mut sink);
                published.store(nesting.pending(), Ordering::Relaxed);
                // The caller may have stopped taking spares: the buffer is then freed here.
                let _ = give_back.try_send(batch);
            }
            (nesting, sink)
        });
        self.state = match spawned {
            Ok(thread) => State::There(Remote { to_engine, spare, pending, thread }),
            Err(_) => {
                self.background = false;
                let back = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
                let (nesting, sink) = back.expect("a thread never started took nothing");
                State::Here { nesting: Box::new(nesting), sink: Box::new(sink) }
            }
        };
    }

    /// Applies every operation given, brings the engine back to the caller's thread, and
    /// lends it and its sink (the caller then calls [`Nesting::finish`] or reads them).
    ///
    /// # Panics
    ///
    /// If the engine panicked on its thread: with that panic.
    pub fn finish(&mut self) -> (&mut Nesting<P>, &mut S) {
        // Whatever comes after the end (nothing should) is applied here.
        self.background = false;
        if let State::There(_) = self.state {
            if !self.batch.ops.is_empty() {
                self.send();
            }
            let State::There(remote) = std::mem::replace(&mut self.state, State::Moving) else {
                unreachable!("checked just above");
            };
            let Remote { to_engine, thread, .. } = remote;
            // The engine's loop ends once the last batch is applied.
            drop(to_engine);
            let (nesting, sink) = thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            self.state = State::Here { nesting: Box::new(nesting), sink: Box::new(sink) };
        }
        let State::Here { nesting, sink } = &mut self.state else {
            unreachable!("the engine is here once joined");
        };
        self.batch.apply_all(nesting, &mut **sink);
        self.batch = Batch::new();
        self.named = 0;
        (&mut **nesting, &mut **sink)
    }
}

impl<P, S: Consumer<P>> std::fmt::Debug for Feed<P, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            State::Here { .. } => "here",
            State::There(_) => "on its thread",
            State::Moving => "moving",
        };
        f.debug_struct("Feed").field("state", &state).field("queued", &self.batch.ops.len()).finish()
    }
}

#[cfg(test)]
#[path = "background_tests.rs"]
mod tests;

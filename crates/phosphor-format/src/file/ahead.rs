//! Read-ahead (issue 38): a thread that reads a file's blocks and decodes its compressed groups
//! ahead of the [`Reader`](super::Reader), which takes them in file order.
//!
//! Decompression is most of what reading a compressed file costs before its events are decoded
//! (zstd about 0.24 s of the 0.82 s that decoding every event of the 11.6 M-event demo trace
//! takes on one core), and the groups are independent;
//! the tables and the chunks' events are not (a chunk needs the tables of the blocks before it), so
//! they stay with the reader, on the caller's thread. One thread reads the file and decodes each
//! group whole, as [`Reader`](super::Reader) would, and queues it; the reader lends its blocks as
//! before. The queue is bounded in bytes ([`READ_AHEAD_BYTES`], counting the block the reader
//! holds), not in blocks, and a block longer than that is read only once the reader holds nothing
//! else: a file of 64 MiB blocks costs what it costs without read-ahead, one block at a time. The
//! thread stops at the first error, which the reader returns in turn where it would have met it,
//! with the same offset; or when the reader is dropped.
//!
//! Buffers go back to the thread once the reader is done with them, so a long file costs a few
//! buffers of a group each, not an allocation per group.
//!
//! Blocks go over in batches of up to [`BATCH_BLOCKS`] and [`SMALL_BLOCK`] bytes: a file of tiny
//! uncompressed blocks (a million threads of one chunk each) would otherwise cost a message and a
//! wake-up per block, four times what reading it alone costs. Each block also counts
//! [`FRAME_COST`] in the budget, for its place in the queue and its allocation, so that a budget of
//! tiny blocks is not many times its bytes in memory.

use std::any::Any;
use std::io::Read;
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::compress::{Compression, GroupDecoder, MAX_GROUP_BYTES, MAX_GROUP_OFFSET};
use super::error::{Error, ErrorKind};
use super::header::{kind, BLOCK_HEADER_BYTES};
use super::reader::{read_frame_body, read_full, read_head};

/// The most bytes of blocks (decoded groups counted decoded) the read-ahead thread queues before
/// it waits for the reader: 16 groups of the usual 256 KiB, or four of the largest a group may be.
pub const READ_AHEAD_BYTES: usize = 4 * MAX_GROUP_BYTES as usize;

/// What a queued block costs besides its bytes, counted in the budget: its place in the queue
/// and its buffer's allocation (about 250 bytes), counted four times over, so that a file of
/// tiny blocks (a million threads of one chunk each, about 100 bytes a block) queues some 15,000
/// of them, a few MiB, not the 160,000 its bytes alone would let in.
const FRAME_COST: usize = 1 << 10;

/// The most blocks sent to the reader in one message.
const BATCH_BLOCKS: usize = 256;

/// Blocks shorter than this are read into a buffer of their own length, not a spare: a spare
/// kept from a group (up to [`MAX_GROUP_BYTES`]) would be counted as the block's few bytes and
/// hold megabytes. So the reader hands back only buffers of at least this much.
const SMALL_BLOCK: usize = 64 << 10;

/// One block, read ahead.
pub(crate) struct Frame {
    /// File offset of its framing.
    pub(crate) start: u64,
    /// File offset past it.
    pub(crate) end: u64,
    pub(crate) kind: u32,
    /// Its body; for a compressed group, the group decoded.
    pub(crate) bytes: Vec<u8>,
    /// A compressed group's codec.
    pub(crate) codec: Option<Compression>,
    /// The bytes it counts for in the budget, until the reader asks for the next block.
    held: usize,
}

/// Blocks sent together, in file order; an error or the trailer ends a batch.
type Batch = Vec<Result<Frame, Error>>;

/// What the two sides share: the bytes queued, and whether the reader is gone.
#[derive(Default)]
struct Shared {
    state: Mutex<(usize, bool)>,
    room: Condvar,
}

impl Shared {
    /// Waits until `bytes` more fit, or nothing is held (a block longer than the budget is read
    /// alone, as without read-ahead), and counts them; `false` if the reader is gone.
    fn reserve(&self, bytes: usize) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while state.0 > 0 && state.0 + bytes > READ_AHEAD_BYTES && !state.1 {
            state = self.room.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.0 += bytes;
        !state.1
    }

    /// [`Shared::reserve`] if `bytes` fit now, without waiting; `None` if they do not.
    fn try_reserve(&self, bytes: usize) -> Option<bool> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.0 > 0 && state.0 + bytes > READ_AHEAD_BYTES && !state.1 {
            return None;
        }
        state.0 += bytes;
        Some(!state.1)
    }

    fn taken(&self, bytes: usize) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0 = state.0.saturating_sub(bytes);
        self.room.notify_one();
    }

    fn close(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
        self.room.notify_one();
    }
}

/// The reader's end of a read-ahead thread.
pub(crate) struct Ahead<R> {
    blocks: Receiver<Batch>,
    /// The rest of the last batch received, in file order (reversed: the next is last).
    queue: Batch,
    spare: Sender<Vec<u8>>,
    shared: Closer,
    /// The thread, which gives the input back when it ends. Typed back by `back`: the reader of
    /// borrowed bytes (never read ahead) must have no destructor that could see its input.
    thread: Option<JoinHandle<Box<dyn Any + Send>>>,
    back: fn(Box<dyn Any + Send>) -> R,
    /// The bytes of the block handed out last, which the reader holds until it asks for the next.
    held: usize,
    /// Bytes of blocks the reader is done with, not given back to the budget yet: given back a
    /// MiB at a time ([`RELEASE_BYTES`]) or before the reader waits, so that tiny blocks do not
    /// cost a lock and a wake-up each.
    released: usize,
}

/// The bytes the reader gives back to the budget at once (a sixteenth of it).
const RELEASE_BYTES: usize = READ_AHEAD_BYTES / 16;

impl<R> std::fmt::Debug for Ahead<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ahead").finish_non_exhaustive()
    }
}

impl<R: Read + Send + 'static> Ahead<R> {
    /// Starts reading `input`, whose next block is at file offset `offset`.
    pub(crate) fn start(input: R, offset: u64) -> Ahead<R> {
        let (tx, blocks) = channel();
        let (spare, spare_rx) = channel();
        let shared = Arc::new(Shared::default());
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("phosphor-read-ahead".into())
            .spawn(move || -> Box<dyn Any + Send> { Box::new(run(input, offset, &s, &tx, &spare_rx)) })
            .expect("a thread to read ahead");
        let back = |input: Box<dyn Any + Send>| *input.downcast::<R>().expect("the input it was given");
        Ahead {
            blocks,
            queue: Vec::new(),
            spare,
            shared: Closer(shared),
            thread: Some(thread),
            back,
            held: 0,
            released: 0,
        }
    }
}

impl<R> Ahead<R> {
    /// The next block. The one before is taken in by now (a chunk's records are copied out, a
    /// group's blocks read): its bytes leave the budget.
    pub(crate) fn next(&mut self) -> Result<Frame, Error> {
        self.released += std::mem::take(&mut self.held);
        if self.released >= RELEASE_BYTES {
            self.shared.0.taken(std::mem::take(&mut self.released));
        }
        match self.take() {
            Some(Ok(frame)) => {
                self.held = frame.held;
                Ok(frame)
            }
            Some(Err(e)) => Err(e),
            // The thread sends an error or the trailer before it ends, unless it panicked.
            None => Err(self.panicked()),
        }
    }

    /// The next block of the queue, or of the next batch; `None` once the thread is gone.
    fn take(&mut self) -> Option<Result<Frame, Error>> {
        if self.queue.is_empty() {
            self.queue = match self.blocks.try_recv() {
                Ok(batch) => batch,
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => {
                    // The thread may be waiting for room: give back all before waiting for it.
                    self.shared.0.taken(std::mem::take(&mut self.released));
                    self.blocks.recv().ok()?
                }
            };
            self.queue.reverse();
        }
        self.queue.pop()
    }

    /// After the trailer: `Ok` if the file ends there.
    pub(crate) fn after_trailer(&mut self) -> Result<(), Error> {
        match self.take() {
            Some(Err(e)) => Err(e),
            Some(Ok(frame)) => Err(Error::new(ErrorKind::TrailingData, frame.start)),
            None => Ok(()),
        }
    }

    /// Hands a buffer the reader is done with back to the thread (one of a small block is
    /// dropped: the thread reads those into buffers of their own length).
    pub(crate) fn recycle(&self, mut buf: Vec<u8>) {
        if buf.capacity() >= SMALL_BLOCK && buf.capacity() <= MAX_GROUP_BYTES as usize {
            buf.clear();
            // The thread may have ended.
            let _ = self.spare.send(buf);
        }
    }

    /// Stops the thread and takes the input back (positioned anywhere).
    pub(crate) fn stop(mut self) -> R {
        self.shared.0.close();
        // Unblocks a send: the thread ends at its next block.
        let (_, dead) = channel();
        drop(std::mem::replace(&mut self.blocks, dead));
        let thread = self.thread.take().expect("stopped once");
        (self.back)(thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    }

    /// The thread ended without a word: it panicked; so does the caller.
    fn panicked(&mut self) -> Error {
        if let Some(thread) = self.thread.take() {
            if let Err(panic) = thread.join() {
                std::panic::resume_unwind(panic);
            }
        }
        unreachable!("the read-ahead thread ends after an error or the trailer")
    }
}

/// Closes the queue when the reader goes, so that a thread waiting for room ends (it is not
/// waited for: it may be blocked reading a pipe). Apart from [`Ahead`], which is generic over the
/// input, so that a reader of borrowed bytes may outlive nothing it borrows.
struct Closer(Arc<Shared>);

impl Drop for Closer {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// The read-ahead thread: reads blocks from `offset` on, decodes groups, queues them; after an
/// error or the trailer (and the check that nothing follows it), returns the input.
fn run<R: Read>(
    mut input: R,
    mut offset: u64,
    shared: &Shared,
    tx: &Sender<Batch>,
    spare: &Receiver<Vec<u8>>,
) -> R {
    let mut decoder = GroupDecoder::default();
    // The last compressed body, kept for the next.
    let mut packed = Vec::new();
    // Blocks read and not sent yet, and their bytes: sent once they are many, before a group or
    // a long block, and before waiting for room (the reader may be waiting for them).
    let mut batch = Vec::new();
    let mut batched = 0;
    loop {
        let start = offset;
        let frame = match read_head(&mut input, start) {
            Err(e) => Err(e),
            Ok((kind, len)) => {
                let bytes = len as usize;
                let compressed = kind == kind::COMPRESSED;
                let mut body = if compressed || bytes >= SMALL_BLOCK {
                    spare.try_recv().unwrap_or_default()
                } else {
                    Vec::new()
                };
                // A group counts its body and what it decodes to (at most MAX_GROUP_BYTES);
                // another block, its buffer; both, what a block costs in the queue.
                let held = FRAME_COST
                    + match compressed {
                        true => bytes + MAX_GROUP_BYTES as usize,
                        false => bytes.max(body.capacity()),
                    };
                let mut room = shared.try_reserve(held);
                if room.is_none() || compressed || bytes >= SMALL_BLOCK {
                    if !batch.is_empty() && tx.send(std::mem::take(&mut batch)).is_err() {
                        return input;
                    }
                    batched = 0;
                }
                if !*room.get_or_insert_with(|| shared.reserve(held)) {
                    return input;
                }
                match read_frame_body(&mut input, start, kind, len, &mut body) {
                    Err(e) => Err(e),
                    Ok(end) if kind == kind::COMPRESSED => {
                        offset = end;
                        std::mem::swap(&mut body, &mut packed);
                        decode_group(&mut decoder, &packed, start, &mut body).map(|codec| {
                            // What the reader will hold: the group decoded (the compressed body
                            // stays here, for the next).
                            let decoded = (body.capacity() + FRAME_COST).min(held);
                            shared.taken(held - decoded);
                            Frame { start, end, kind, bytes: body, codec: Some(codec), held: decoded }
                        })
                    }
                    Ok(end) => {
                        offset = end;
                        Ok(Frame { start, end, kind, bytes: body, codec: None, held })
                    }
                }
            }
        };
        let (trailer, failed) = match &frame {
            Ok(f) => (f.kind == kind::TRAILER, false),
            Err(_) => (false, true),
        };
        batched += frame.as_ref().map_or(0, |f| f.bytes.len());
        batch.push(frame);
        let last = trailer || failed;
        if last || batch.len() >= BATCH_BLOCKS || batched >= SMALL_BLOCK {
            if tx.send(std::mem::take(&mut batch)).is_err() || failed {
                return input;
            }
            batched = 0;
        }
        if trailer {
            trailing(&mut input, offset, tx);
            return input;
        }
    }
}

/// Decodes the group whose block starts at `start` (its body `packed`) into `out`.
fn decode_group(
    decoder: &mut GroupDecoder,
    packed: &[u8],
    start: u64,
    out: &mut Vec<u8>,
) -> Result<Compression, Error> {
    if start > MAX_GROUP_OFFSET {
        return Err(Error::malformed(
            "compressed group",
            format!("starts past byte {MAX_GROUP_OFFSET}, beyond what a chunk offset can address"),
            start,
        ));
    }
    decoder.decode(packed, start + BLOCK_HEADER_BYTES as u64, out)
}

/// After the trailer: an error if the file goes on (the reader reports it on its next call).
fn trailing(input: &mut impl Read, offset: u64, tx: &Sender<Batch>) {
    let mut one = [0u8; 1];
    match read_full(input, &mut one, offset) {
        Ok(0) => {}
        Ok(_) => {
            let _ = tx.send(vec![Err(Error::new(ErrorKind::TrailingData, offset))]);
        }
        Err(e) => {
            let _ = tx.send(vec![Err(e)]);
        }
    }
}

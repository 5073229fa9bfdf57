//! A live record's event details (arguments, source line, a log's message), read again from the
//! file being recorded, as `events.rs` reads them for an indexed trace.
//!
//! A live record's number says where its event is: the number of its chunk in the file (chunks
//! counted from 0 in the order a reader meets them) and its main record's place in the chunk
//! ([`pack`]). The model keeps each chunk's offset by its number. A chunk's events are decoded
//! with the tables (callsites, strings) of the blocks before it, so the details are read by a
//! reader of their own that goes forward through the file as far as asked: every byte up to a
//! chunk the live reader has taken in is in the file, so it never meets a block half written.
//! A chunk it has passed is read again by its offset (`Reader::chunk_at`), after which that
//! reader is spent and the next one starts from the beginning again.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::Mutex;

use crate::events::EventDetails;
use phosphor_format::file::Reader;

/// Bits of a live record's number that hold its main record's place in its chunk (a chunk holds
/// at most `MAX_BLOCK_BYTES / 32` = 2^21 records); the bits above hold its chunk's number, so
/// that numbers stay below 2^53, exact in a page's JavaScript, for 2^31 chunks.
pub(crate) const RECORD_BITS: u32 = 22;
/// The place of a record that is no event's (a mark of lost chunks).
pub(crate) const NO_RECORD: u64 = (1 << RECORD_BITS) - 1;

/// The number of record `record` of chunk number `chunk`.
pub(crate) fn pack(chunk: u64, record: u64) -> u64 {
    chunk << RECORD_BITS | record.min(NO_RECORD)
}

/// A number's chunk number and record place.
pub(crate) fn unpack(id: u64) -> (u64, u64) {
    (id >> RECORD_BITS, id & NO_RECORD)
}

/// The reader of a live trace's details, made on first use.
#[derive(Debug, Default)]
pub(crate) struct Details(Mutex<Option<Forward>>);

#[derive(Debug)]
struct Forward {
    reader: Reader<BufReader<File>>,
    /// Chunks read.
    read: u64,
}

impl Details {
    /// Closes the reader (the trace is served from its index now).
    pub(crate) fn clear(&self) {
        *self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = None;
    }

    /// The details of the event whose main record is record `record` of chunk number `chunk`
    /// (its block at `offset`) of the file at `path`, a chunk the live reader has taken in.
    pub(crate) fn event(
        &self,
        path: &Path,
        chunk: u64,
        offset: u64,
        record: u64,
    ) -> Result<EventDetails, String> {
        if record == NO_RECORD {
            return Err("no event: chunks were lost here".into());
        }
        let mut guard = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let behind = guard.as_ref().is_some_and(|f| f.read > chunk);
        if guard.is_none() {
            let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let reader = Reader::new(BufReader::with_capacity(1 << 16, file))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            *guard = Some(Forward { reader, read: 0 });
        }
        let Some(f) = guard.as_mut() else { return Err("no reader".into()) };
        let answer =
            if behind { again(f, path, offset, record) } else { forward(f, path, chunk, offset, record) };
        if behind || answer.is_err() {
            // Spent (`chunk_at`), or stopped at an error: the next request starts again.
            *guard = None;
        }
        answer
    }
}

/// Reads on to chunk number `chunk` and describes its event.
fn forward(
    f: &mut Forward,
    path: &Path,
    chunk: u64,
    offset: u64,
    record: u64,
) -> Result<EventDetails, String> {
    let at = |e: phosphor_format::file::Error| format!("{}: {e}", path.display());
    while f.read < chunk {
        f.reader
            .next_chunk()
            .map_err(at)?
            .ok_or_else(|| format!("{}: ends before chunk {chunk}", path.display()))?;
        f.read += 1;
    }
    let c = f
        .reader
        .next_chunk()
        .map_err(at)?
        .ok_or_else(|| format!("{}: ends before chunk {chunk}", path.display()))?;
    f.read += 1;
    if c.offset != offset {
        return Err(format!("{}: chunk {chunk} is at byte {}, not {offset}", path.display(), c.offset));
    }
    crate::events::describe(&c, c.record_offset(record as usize), path)
}

/// Reads chunk `offset` again, with the tables read so far, and describes its event.
fn again(f: &mut Forward, path: &Path, offset: u64, record: u64) -> Result<EventDetails, String> {
    let c = f.reader.chunk_at(offset).map_err(|e| format!("{}: {e}", path.display()))?;
    crate::events::describe(&c, c.record_offset(record as usize), path)
}

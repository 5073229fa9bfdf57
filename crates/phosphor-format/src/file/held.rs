//! Events kept aside past their chunk: a tool that must write an event later than it reads it (a
//! writer that emits a thread's slices once their nesting is known) copies its records here and
//! decodes it again when it writes it.
//!
//! An event is its main record and its continuation records (32 bytes each; a few for most
//! events). [`HeldEvents`] copies them into one buffer and hands out a slot number; the slot
//! says where they are, so the buffer can be compacted when half of it is freed, without
//! touching the numbers the tool keeps. [`HeldEvents::get`] decodes the event as
//! [`Chunk::events`](super::Chunk::events) did, against the tables of a later chunk or of the
//! reader: strings are only ever added, and a callsite redefined since (a later callsites block
//! replacing an id) is read as it was defined when the event was held (the tables keep up to
//! `MAX_REPLACED` replaced entries for that).

use super::chunk::Chunk;
use super::error::Error;
use super::event::{decode_at, Event};
use super::tables::Tables;
use crate::record::RECORD_SIZE;
use crate::Record;

/// Where one held event's records are.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// Index of its main record in the buffer.
    start: usize,
    /// Records (0: the slot is free).
    len: u32,
    tid: u32,
    /// File offset of its main record, for errors.
    offset: u64,
    /// The tables' version when it was read: it is decoded with the callsites of then.
    version: u32,
}

/// The callsites and strings a held event is decoded against: a chunk's
/// ([`Chunk::tables`](super::Chunk::tables)) or a reader's
/// ([`Reader::tables`](super::Reader::tables)).
#[derive(Clone, Copy, Debug)]
pub struct TableSet<'a>(pub(crate) &'a Tables);

/// Events copied out of their chunks, by slot number.
#[derive(Debug, Default)]
pub struct HeldEvents {
    records: Vec<Record>,
    /// The buffer the next compaction copies into (the one before the last): reused, so that
    /// compacting touches no fresh memory once the buffers have grown.
    spare: Vec<Record>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Records of the events held now.
    live: usize,
}

impl HeldEvents {
    /// Copies `event`, read from `chunk`, and returns its slot number (never `u32::MAX`).
    pub fn hold(&mut self, chunk: &Chunk<'_>, event: &Event<'_>) -> u32 {
        let at = ((event.offset - chunk.record_offset(0)) / RECORD_SIZE as u64) as usize;
        let len = 1 + chunk.records[at].meta.continuation();
        let start = self.records.len();
        self.records.extend_from_slice(&chunk.records[at..at + len]);
        self.live += len;
        let version = chunk.tables.version();
        let slot = Slot { start, len: len as u32, tid: event.tid, offset: event.offset, version };
        match self.free.pop() {
            Some(n) => {
                self.slots[n as usize] = slot;
                n
            }
            None => {
                self.slots.push(slot);
                assert!(self.slots.len() < u32::MAX as usize, "more than 2^32 - 1 events held");
                self.slots.len() as u32 - 1
            }
        }
    }

    /// The event in slot `n`, decoded against `tables`.
    ///
    /// # Panics
    ///
    /// If slot `n` holds no event.
    pub fn get<'a>(&'a self, n: u32, tables: TableSet<'a>) -> Result<Event<'a>, Error> {
        let s = self.slots[n as usize];
        assert!(s.len > 0, "slot {n} holds no event");
        let records = &self.records[s.start..s.start + s.len as usize];
        decode_at(records, 0, s.tid, tables.0, s.offset, Some(s.version)).map(|(e, _)| e)
    }

    /// Frees slot `n`; the buffer is compacted once less than half of it is in use.
    pub fn release(&mut self, n: u32) {
        let s = &mut self.slots[n as usize];
        if s.len == 0 {
            return;
        }
        self.live -= s.len as usize;
        s.len = 0;
        self.free.push(n);
        if self.live == 0 {
            self.records.clear();
        } else if self.records.len() > 4096 && self.live < self.records.len() / 2 {
            self.compact();
        }
    }

    /// Copies the held events' records into the spare buffer, in slot order, and keeps the old
    /// one as the next spare: O(records), once the buffer is half free, so amortised O(1) a
    /// record.
    fn compact(&mut self) {
        let mut records = std::mem::take(&mut self.spare);
        records.clear();
        for s in self.slots.iter_mut().filter(|s| s.len > 0) {
            let from = s.start;
            s.start = records.len();
            records.extend_from_slice(&self.records[from..from + s.len as usize]);
        }
        self.spare = std::mem::replace(&mut self.records, records);
    }

    /// Events held now.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the held events' records and slots, spare room included.
    pub fn bytes(&self) -> usize {
        (self.records.capacity() + self.spare.capacity()) * RECORD_SIZE
            + self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.free.capacity() * 4
    }
}

#[cfg(test)]
#[path = "held_tests.rs"]
mod tests;

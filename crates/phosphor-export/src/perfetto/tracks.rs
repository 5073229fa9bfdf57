//! The track model: the process track, a track per thread (described again when a threads block
//! renames it), counter tracks, and the async lanes, from the plan or laid out in one pass. Each
//! track's descriptor is written before the first event on it; uuids carry their kind in the low
//! four bits.

use std::io::{self, Read, Write};

use phosphor_format::file::{Chunk, Event, Reader};

use super::lanes::AsyncKey;
use super::proto::*;
use super::{plan, Exporter};

/// Track uuids: a kind in the low four bits, so the kinds never collide and thread uuids stay
/// short varints; in a merged export, the file's index in the top 16 bits (`FilePlace`).
pub(super) const UUID_PROCESS: u64 = 1;
pub(super) const UUID_THREAD: u64 = 2;
pub(super) const UUID_COUNTER: u64 = 3;
/// An async lane laid out in one pass (`lanes.rs`).
pub(super) const UUID_ASYNC: u64 = 4;
/// An async lane of the plan (`plan.rs`): its number plus one in the high bits.
pub(super) const UUID_LANE: u64 = 5;

/// A thread's track and the name its last descriptor gave (its index in the file's string
/// table: the reader holds the text).
pub(super) struct ThreadTrack {
    uuid: u64,
    name: Option<u32>,
}

impl<W: Write> Exporter<W> {
    /// The track of thread `tid`; its descriptor is written when the thread is first seen, named
    /// as the blocks before `chunk` name it.
    #[inline]
    pub(super) fn thread_track(&mut self, tid: u32, ts: u64, chunk: &Chunk<'_>) -> io::Result<u64> {
        if let Some((t, uuid)) = self.last_thread {
            if t == tid {
                return Ok(uuid);
            }
        }
        let uuid = match self.threads.get(&tid) {
            Some(t) => t.uuid,
            None => self.new_thread(tid, ts, chunk)?,
        };
        self.last_thread = Some((tid, uuid));
        Ok(uuid)
    }

    #[cold]
    #[inline(never)]
    pub(super) fn new_thread(&mut self, tid: u32, ts: u64, chunk: &Chunk<'_>) -> io::Result<u64> {
        let uuid = self.uuid_base | u64::from(tid) << 4 | UUID_THREAD;
        let name = chunk.thread_name(tid);
        self.thread_descriptor(tid, uuid, name.as_deref(), Some(ts))?;
        self.threads.insert(tid, ThreadTrack { uuid, name: name.map(|n| n.index()) });
        Ok(uuid)
    }

    /// The track of thread `tid` for events outside its chunks (system blocks): described, unnamed,
    /// if the thread has no track yet (a later threads block names it).
    pub(super) fn thread_track_by_id(&mut self, tid: u32, ts: u64) -> io::Result<u64> {
        if let Some(t) = self.threads.get(&tid) {
            return Ok(t.uuid);
        }
        let uuid = self.uuid_base | u64::from(tid) << 4 | UUID_THREAD;
        self.thread_descriptor(tid, uuid, None, Some(ts))?;
        self.threads.insert(tid, ThreadTrack { uuid, name: None });
        Ok(uuid)
    }

    /// After a threads block, writes the descriptor again for every thread with a track whose
    /// name changed.
    #[cold]
    #[inline(never)]
    pub(super) fn sync_thread_names<R: Read>(&mut self, reader: &Reader<R>) -> io::Result<()> {
        let strings = reader.strings();
        let mut renamed = Vec::new();
        for (tid, name) in reader.thread_names() {
            if let Some(t) = self.threads.get_mut(&tid) {
                if t.name.and_then(|i| strings.get(i as usize)) != Some(name.as_str()) {
                    renamed.push((tid, t.uuid, name.index()));
                }
                t.name = Some(name.index());
            }
        }
        // In tid order, so the output does not depend on the map's.
        renamed.sort_unstable();
        for (tid, uuid, name) in renamed {
            self.thread_descriptor(tid, uuid, strings.get(name as usize), None)?;
        }
        Ok(())
    }

    pub(super) fn thread_descriptor(
        &mut self,
        tid: u32,
        uuid: u64,
        name: Option<&str>,
        ts: Option<u64>,
    ) -> io::Result<()> {
        self.start_packet(ts, 0);
        let p = &mut self.buf;
        let track = p.begin(PACKET_TRACK_DESCRIPTOR);
        p.uint(TRACK_UUID, uuid);
        let thread = p.begin(TRACK_THREAD);
        p.int(THREAD_PID, i64::from(self.pid as i32));
        p.int(THREAD_TID, i64::from(tid));
        if let Some(name) = name {
            // Written per thread, not interned: cut as elsewhere, or one name of megabytes that
            // names every thread would make gigabytes of descriptors.
            p.bytes(THREAD_NAME, phosphor_model::names::shown(name).as_bytes());
        }
        p.end(thread);
        p.end(track);
        self.finish_packet(false)
    }

    /// The lane of async event `e` (of id `id`): the plan's if there is one that covers it, else
    /// laid out in one pass (see `lanes`); its descriptor is written if the lane is new.
    pub(super) fn async_track(&mut self, e: &Event<'_>, id: u64, begin: bool, ts: u64) -> io::Result<u64> {
        let planned = match self.plan.as_mut() {
            Some(plan) => {
                let lane = plan.next_lane();
                self.unplanned += u64::from(lane.is_none());
                lane
            }
            None => None,
        };
        let (lane, new) = match planned {
            Some((lane, new)) => (self.uuid_base | (u64::from(lane) + 1) << 4 | UUID_LANE, new),
            None => {
                let (category, name) = plan::class_of(e);
                let next = self.uuid_base | self.next_track << 4 | UUID_ASYNC;
                let placed = self.lanes.event(AsyncKey { category, name, id }, begin, ts, || next);
                if placed.new {
                    self.next_track += 1;
                }
                (placed.lane, placed.new)
            }
        };
        if new {
            self.async_descriptor(lane, e, ts)?;
        }
        Ok(lane)
    }

    /// The descriptor of an async lane, named as its slices are (an event's own name if its
    /// callsite's events carry theirs: the lane's slices all have that name).
    #[cold]
    #[inline(never)]
    pub(super) fn async_descriptor(&mut self, lane: u64, e: &Event<'_>, ts: u64) -> io::Result<()> {
        crate::logs::write_event_name(&mut self.message, e);
        self.start_packet(Some(ts), 0);
        let p = &mut self.buf;
        let track = p.begin(PACKET_TRACK_DESCRIPTOR);
        p.uint(TRACK_UUID, lane);
        p.uint(TRACK_PARENT_UUID, self.process_uuid);
        p.bytes(TRACK_NAME, self.message.as_bytes());
        p.end(track);
        self.finish_packet(false)
    }

    pub(super) fn new_track_uuid(&mut self, kind: u64) -> u64 {
        let uuid = self.uuid_base | self.next_track << 4 | kind;
        self.next_track += 1;
        uuid
    }
}

//! Incremental timestamps and the default track: what lets most packets leave out their clock,
//! their absolute time and their track.
//!
//! A packet's timestamp is a delta on one of the sequence's own clocks (ids 64 to 127), which its
//! `ClockSnapshot` defines with `is_incremental = true`, all at the reading of `CLOCK_MONOTONIC`
//! at the origin. A clock's first delta counts from the snapshot and each next one from the last
//! packet that used that clock: trace processor adds them up in stream order and converts the
//! sum through the snapshot, which is the identity here. A delta takes one to three bytes where an
//! absolute time took seven.
//!
//! Deltas are unsigned, and the stream is not in time order: chunks come per thread, so each
//! thread's events are in order but not the threads', and a complete event is recorded at its end,
//! after the slices nested in it, so its begin goes back in time. Hence many clocks:
//!
//! * each thread has one of [`THREAD_CLOCKS`] clocks, the sequence's default clock
//!   (`TracePacketDefaults.timestamp_clock_id`, no bytes per packet) while its events are
//!   written; its deltas follow the thread's own time;
//! * a packet earlier than the default clock's reading (a complete event's begin) takes, of the
//!   [`SPARE_CLOCKS`] others, the one that read last closest before it, and names it (three bytes):
//!   nested complete events have their begins in order per depth, so each depth keeps to a clock;
//! * a packet earlier than every spare clock's reading gives its absolute `CLOCK_MONOTONIC` time.
//!
//! A thread's slices are written as [`Ordered`](phosphor_model::ordered::Ordered) walks them,
//! in time order but up to thousands of slices after they are read, while its other events
//! (async slices, counters) are written as they are read: on the thread's clock they would
//! push its reading ahead of the walk, and send every slice after them back in time, onto the
//! spare clocks. So those go on a clock of their own per thread, one of [`STREAM_CLOCKS`],
//! which each of their packets names (three bytes), in their own order ([`Clocks::streamed`]);
//! the default clock and track are the walk's.
//!
//! A `TrackEvent` on a thread's track carries no `track_uuid`: `TrackEventDefaults.track_uuid` is
//! the thread's, set with its clock (new defaults replace the old whole) by the first packet
//! written for an event of another thread, about once per chunk. Events on other tracks (async
//! lanes, counters, the process) name theirs.

use rustc_hash::FxHashMap as HashMap;

use super::pb::Enc;
use super::proto::*;

/// The first of the sequence's own clocks.
pub(super) const FIRST_CLOCK: u64 = 64;
/// Clocks given to threads' slices (shared by threads that are many): ids 64 to 95.
const THREAD_CLOCKS: usize = 32;
/// Clocks given to threads' other events, written as read: ids 96 to 111.
const STREAM_CLOCKS: usize = 16;
/// Clocks for packets that go back in time: ids 112 to 127.
const SPARE_CLOCKS: usize = 16;
/// The first spare clock.
const FIRST_SPARE: usize = THREAD_CLOCKS + STREAM_CLOCKS;
/// Every clock the snapshot defines.
pub(super) const CLOCKS: usize = FIRST_SPARE + SPARE_CLOCKS;

/// The sequence's clocks and defaults.
#[derive(Debug)]
pub(super) struct Clocks {
    /// Each clock's reading: the last time written as a delta on it (absolute nanoseconds).
    last: [u64; CLOCKS],
    /// The default clock (an index into `last`).
    default: usize,
    /// The default track (0: none yet).
    track: u64,
    /// The thread track whose event is being written: the next packet makes it the default.
    want: u64,
    /// Each thread track's clock.
    by_thread: HashMap<u64, usize>,
    /// The clock of the events being written as read ([`Clocks::streamed`]), if they are.
    stream: Option<usize>,
    /// Each thread track's clock for its events written as read.
    by_stream: HashMap<u64, usize>,
}

impl Clocks {
    /// The clocks of a sequence whose snapshot reads `origin` (absolute `CLOCK_MONOTONIC`
    /// nanoseconds).
    pub(super) fn new(origin: u64) -> Clocks {
        Clocks {
            last: [origin; CLOCKS],
            default: 0,
            track: 0,
            want: 0,
            by_thread: HashMap::default(),
            stream: None,
            by_stream: HashMap::default(),
        }
    }

    /// The event being written is a slice on thread track `uuid`, in the walk's order.
    #[inline]
    pub(super) fn thread(&mut self, uuid: u64) {
        self.want = uuid;
        self.stream = None;
    }

    /// The packets written until the next [`Clocks::thread`] are events of the thread of track
    /// `uuid` written as read (async slices, counters, and what they describe): their times go on
    /// the thread's stream clock, which each names, and the defaults stay the walk's.
    #[inline]
    pub(super) fn streamed(&mut self, uuid: u64) {
        let next = self.by_stream.len() % STREAM_CLOCKS;
        self.stream = Some(THREAD_CLOCKS + *self.by_stream.entry(uuid).or_insert(next));
    }

    /// Begins a packet's fields: the defaults, if the thread changed, and the timestamp `ts`
    /// (absolute `CLOCK_MONOTONIC` nanoseconds), if it has one.
    #[inline]
    pub(super) fn start(&mut self, p: &mut Enc, ts: Option<u64>) {
        if let Some(c) = self.stream {
            if let Some(ts) = ts {
                self.named(p, c, ts);
            }
            return;
        }
        if self.want != self.track {
            self.switch(p);
        }
        let Some(ts) = ts else { return };
        let last = &mut self.last[self.default];
        if ts >= *last {
            p.uint(PACKET_TIMESTAMP, ts - *last);
            *last = ts;
        } else {
            self.backwards(p, ts);
        }
    }

    /// Makes the wanted thread's track and clock the defaults.
    #[cold]
    #[inline(never)]
    fn switch(&mut self, p: &mut Enc) {
        let next = self.by_thread.len() % THREAD_CLOCKS;
        self.default = *self.by_thread.entry(self.want).or_insert(next);
        self.track = self.want;
        self.write_defaults(p);
    }

    /// `ts` on clock `c`, named, unless it is before the clock's reading.
    #[inline]
    fn named(&mut self, p: &mut Enc, c: usize, ts: u64) {
        if ts >= self.last[c] {
            p.uint(PACKET_TIMESTAMP, ts - self.last[c]);
            p.uint(PACKET_TIMESTAMP_CLOCK_ID, FIRST_CLOCK + c as u64);
            self.last[c] = ts;
        } else {
            self.backwards(p, ts);
        }
    }

    /// A time before its clock's reading: on the spare clock that read last closest before it,
    /// or absolute.
    #[cold]
    #[inline(never)]
    fn backwards(&mut self, p: &mut Enc, ts: u64) {
        let best = (FIRST_SPARE..CLOCKS).filter(|&c| self.last[c] <= ts).max_by_key(|&c| self.last[c]);
        match best {
            Some(c) => {
                p.uint(PACKET_TIMESTAMP, ts - self.last[c]);
                p.uint(PACKET_TIMESTAMP_CLOCK_ID, FIRST_CLOCK + c as u64);
                self.last[c] = ts;
            }
            None => {
                p.uint(PACKET_TIMESTAMP, ts);
                p.uint(PACKET_TIMESTAMP_CLOCK_ID, BUILTIN_CLOCK_MONOTONIC);
            }
        }
    }

    /// The `track_uuid` of a `TrackEvent` on `track`: none if it is the default.
    #[inline]
    pub(super) fn event_track(&self, p: &mut Enc, track: u64) {
        if track != self.track {
            p.uint(EVENT_TRACK_UUID, track);
        }
    }

    /// `TracePacketDefaults`: the default clock, and the default track if there is one.
    pub(super) fn write_defaults(&self, p: &mut Enc) {
        let defaults = p.begin(PACKET_DEFAULTS);
        p.uint(DEFAULTS_TIMESTAMP_CLOCK_ID, FIRST_CLOCK + self.default as u64);
        if self.track != 0 {
            let track = p.begin(DEFAULTS_TRACK_EVENT);
            p.uint(EVENT_TRACK_UUID, self.track);
            p.end(track);
        }
        p.end(defaults);
    }
}

#[cfg(test)]
mod tests {
    use phosphor_format::file::{CallsiteInfo, Reader, Trailer, Writer};
    use phosphor_format::Phase;

    use super::super::checker::{check, s, slices, thread};
    use super::{SPARE_CLOCKS, THREAD_CLOCKS};
    use crate::test_files::{clock, header, slice};

    #[test]
    fn every_time_survives_more_threads_than_clocks_and_nesting_deeper_than_the_spare_clocks() {
        let threads = THREAD_CLOCKS as u64 + 12;
        let depth = SPARE_CLOCKS as u64 + 4;
        let callsite = CallsiteInfo {
            id: 16,
            category: "c",
            name: "s",
            phase: Phase::Complete,
            arg_names: ["", ""],
            file: "clock.rs",
            line: 1,
            name_hash: 0,
            level: None,
            dynamic_name: false,
            flow: false,
        };
        let mut w = Writer::new(Vec::new(), &header(clock(1.0))).unwrap();
        w.write_callsites(&[callsite]).unwrap();
        // Each thread's slices nest `depth` deep, recorded innermost first as complete events are;
        // each thread is earlier in time than the one before it in the file, so every thread's
        // first packet goes back too.
        let base = |tid: u64| 1_000 * (threads + 1 - tid);
        for tid in 1..=threads {
            let records: Vec<_> = (0..depth).rev().map(|k| slice(16, base(tid) + k, 100 - 2 * k)).collect();
            w.write_chunk(tid as u32, 0, &records, |_, _| "").unwrap();
        }
        let bytes = w.finish(&Trailer::default()).unwrap();
        let mut out = Vec::new();
        crate::perfetto::write_perfetto(Reader::new(bytes.as_slice()).unwrap(), &mut out).unwrap();
        let doc = check(&out);
        for tid in 1..=threads {
            let want: Vec<_> = (0..depth).map(|k| s("s", base(tid) + k, Some(100 - 2 * k), k)).collect();
            assert_eq!(slices(thread(&doc, tid)), want, "thread {tid}");
        }
    }
}

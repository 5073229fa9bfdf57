//! The index's records: fixed sizes, little-endian, so that the index file is read in place and a
//! window query finds its records by binary search.
//!
//! Times are the trace's own clock values (ticks), as recorded: durations then convert to
//! nanoseconds exactly as `phosphor stats` converts them, and the server places them on the
//! shared timeline in nanoseconds (`server.rs`).

/// Bytes of a [`Slice`] in the index.
pub const SLICE_BYTES: usize = 32;
/// Bytes of a [`Point`] in the index.
pub const POINT_BYTES: usize = 24;
/// Bytes of a [`Sample`] in the index.
pub const SAMPLE_BYTES: usize = 16;

/// The most a file offset stored beside flags can be: 2^56 − 1 bytes.
const OFFSET_MASK: u64 = (1 << 56) - 1;

/// What made a slice, and what is wrong with it (a [`Slice`]'s `flags`).
pub mod slice_flags {
    /// The two low bits: how it was recorded.
    pub const KIND_MASK: u8 = 0b11;
    /// A begin and its end.
    pub const SCOPE: u8 = 0;
    /// A complete event (a scope recorded at its end, with its duration).
    pub const COMPLETE: u8 = 1;
    /// Waiting for a lock.
    pub const LOCK_WAIT: u8 = 2;
    /// Holding a lock.
    pub const LOCK_HELD: u8 = 3;
    /// A begin never ended: the slice runs to the thread's last event.
    pub const UNCLOSED: u8 = 1 << 2;
    /// Closed by the end of another name (which closed an enclosing begin of its own name).
    pub const WRONG_END: u8 = 1 << 3;
    /// It overlaps a slice that does not hold it (interlaced scopes): it is drawn a level below
    /// the one its nesting gives, so that the slices of a level never overlap.
    pub const INTERLACED: u8 = 1 << 4;
}

/// What a point is (a [`Point`]'s `kind`).
pub mod point_kinds {
    /// An instant event.
    pub const INSTANT: u8 = 0;
    /// A log; its name is the format string, its message is made from the event.
    pub const LOG: u8 = 1;
    /// The runtime's saturation marker: events were dropped here.
    pub const SATURATION: u8 = 2;
    /// An end with no begin of its name open on its thread.
    pub const END_WITHOUT_BEGIN: u8 = 3;
    /// Chunks of the thread's stream were lost just before this time (its name says how many).
    pub const LOST_CHUNKS: u8 = 4;
}

/// A slice of a thread's timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// Start, in clock ticks.
    pub start: u64,
    /// End (at least `start`).
    pub end: u64,
    /// The name's number in the index's names.
    pub name: u32,
    /// The callsite id of the event (of the begin, for a begin and its end).
    pub callsite: u32,
    /// File offset of the event's main record (of the begin, for a begin and its end); at most
    /// 2^56 − 1.
    pub event: u64,
    /// [`slice_flags`].
    pub flags: u8,
}

impl Slice {
    /// The slice's bytes in the index.
    pub fn encode(&self) -> [u8; SLICE_BYTES] {
        let mut b = [0u8; SLICE_BYTES];
        b[0..8].copy_from_slice(&self.start.to_le_bytes());
        b[8..16].copy_from_slice(&self.end.to_le_bytes());
        b[16..20].copy_from_slice(&self.name.to_le_bytes());
        b[20..24].copy_from_slice(&self.callsite.to_le_bytes());
        let packed = (self.event & OFFSET_MASK) | u64::from(self.flags) << 56;
        b[24..32].copy_from_slice(&packed.to_le_bytes());
        b
    }

    /// The slice whose bytes are `b`.
    pub fn decode(b: &[u8; SLICE_BYTES]) -> Slice {
        let packed = u64_at(b, 24);
        Slice {
            start: u64_at(b, 0),
            end: u64_at(b, 8),
            name: u32_at(b, 16),
            callsite: u32_at(b, 20),
            event: packed & OFFSET_MASK,
            flags: (packed >> 56) as u8,
        }
    }

    /// How it was recorded ([`slice_flags::KIND_MASK`] bits).
    pub fn kind(&self) -> u8 {
        self.flags & slice_flags::KIND_MASK
    }

    /// Its duration in clock ticks.
    pub fn duration(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
}

/// An event at one time on a thread: an instant, a log, a saturation marker or a problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    /// When, in clock ticks.
    pub ts: u64,
    /// The name's number in the index's names (a log's format string).
    pub name: u32,
    /// The callsite id of the event.
    pub callsite: u32,
    /// File offset of the event's main record; at most 2^56 − 1.
    pub event: u64,
    /// [`point_kinds`].
    pub kind: u8,
}

impl Point {
    /// The point's bytes in the index.
    pub fn encode(&self) -> [u8; POINT_BYTES] {
        let mut b = [0u8; POINT_BYTES];
        b[0..8].copy_from_slice(&self.ts.to_le_bytes());
        b[8..12].copy_from_slice(&self.name.to_le_bytes());
        b[12..16].copy_from_slice(&self.callsite.to_le_bytes());
        let packed = (self.event & OFFSET_MASK) | u64::from(self.kind) << 56;
        b[16..24].copy_from_slice(&packed.to_le_bytes());
        b
    }

    /// The point whose bytes are `b`.
    pub fn decode(b: &[u8; POINT_BYTES]) -> Point {
        let packed = u64_at(b, 16);
        Point {
            ts: u64_at(b, 0),
            name: u32_at(b, 8),
            callsite: u32_at(b, 12),
            event: packed & OFFSET_MASK,
            kind: (packed >> 56) as u8,
        }
    }
}

/// A value of a counter or data track.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// When, in clock ticks.
    pub ts: u64,
    /// The value.
    pub value: f64,
}

impl Sample {
    /// The sample's bytes in the index.
    pub fn encode(&self) -> [u8; SAMPLE_BYTES] {
        let mut b = [0u8; SAMPLE_BYTES];
        b[0..8].copy_from_slice(&self.ts.to_le_bytes());
        b[8..16].copy_from_slice(&self.value.to_le_bytes());
        b
    }

    /// The sample whose bytes are `b`.
    pub fn decode(b: &[u8; SAMPLE_BYTES]) -> Sample {
        Sample { ts: u64_at(b, 0), value: f64::from_bits(u64_at(b, 8)) }
    }
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_as_they_were_encoded() {
        let s = Slice {
            start: 5,
            end: u64::MAX,
            name: 7,
            callsite: u32::MAX,
            event: OFFSET_MASK,
            flags: slice_flags::LOCK_HELD | slice_flags::INTERLACED,
        };
        assert_eq!(Slice::decode(&s.encode()), s);
        assert_eq!(s.kind(), slice_flags::LOCK_HELD);
        let p = Point { ts: u64::MAX - 1, name: 1, callsite: 16, event: 1 << 40, kind: point_kinds::LOG };
        assert_eq!(Point::decode(&p.encode()), p);
        let v = Sample { ts: 3, value: -0.5 };
        assert_eq!(Sample::decode(&v.encode()), v);
    }
}

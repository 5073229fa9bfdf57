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

/// The 56 bits an event's offset is stored in, beside 8 bits of flags.
const OFFSET_MASK: u64 = (1 << 56) - 1;
/// Set in a stored offset that is a virtual one (an event inside a compressed group, format 1.7).
const STORED_VIRTUAL: u64 = 1 << 55;
/// Bits of a virtual offset that hold the place inside the group's decoded bytes (as the format
/// lays them out: bits 0 to 22, the group's file offset above them).
const INNER_BITS: u32 = 23;
/// The largest group file offset a stored virtual offset holds: 2^32 − 1 (32 bits between the
/// inner offset and the flag).
pub(crate) const MAX_STORED_GROUP: u64 = (1 << (55 - INNER_BITS)) - 1;

/// An event's offset as the index stores it, in 56 bits: a plain file offset as it is (below
/// 2^55), a virtual one ([`VIRTUAL_OFFSET`](phosphor_format::file::VIRTUAL_OFFSET)) as bit 55,
/// its group's file offset in bits 23 to 54, and the offset inside the group in bits 0 to 22.
/// `None` when it does not fit: a plain offset past 2^55 or a group past 4 GiB into the file.
pub(crate) fn pack_offset(offset: u64) -> Option<u64> {
    match phosphor_format::file::split_virtual(offset) {
        None => (offset < STORED_VIRTUAL).then_some(offset),
        Some((group, inner)) => (group <= MAX_STORED_GROUP && inner < 1 << INNER_BITS)
            .then_some(STORED_VIRTUAL | group << INNER_BITS | inner),
    }
}

/// The offset [`pack_offset`] stored (the low 56 bits of `packed`).
pub(crate) fn unpack_offset(packed: u64) -> u64 {
    let stored = packed & OFFSET_MASK;
    if stored & STORED_VIRTUAL == 0 {
        return stored;
    }
    let group = (stored & !STORED_VIRTUAL) >> INNER_BITS;
    let inner = stored & ((1 << INNER_BITS) - 1);
    phosphor_format::file::VIRTUAL_OFFSET | group << INNER_BITS | inner
}

/// The low 56 bits of a record's packed word: `event` stored by [`pack_offset`] (build checks
/// that it fits before a record is made, see `build.rs`).
fn stored(event: u64) -> u64 {
    pack_offset(event).unwrap_or(event & OFFSET_MASK)
}

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
    /// Closed by an end of another name (an end closes the innermost open begin, whatever its
    /// name: the model's one rule).
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Slice {
    /// Start, in clock ticks.
    pub start: u64,
    /// End (at least `start`).
    pub end: u64,
    /// The name's number in the index's names.
    pub name: u32,
    /// The callsite id of the event (of the begin, for a begin and its end).
    pub callsite: u32,
    /// File offset of the event's main record (of the begin, for a begin and its end), virtual
    /// inside a compressed group; stored as `records::pack_offset` says.
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
        let packed = stored(self.event) | u64::from(self.flags) << 56;
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
            event: unpack_offset(packed),
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
    /// File offset of the event's main record, virtual inside a compressed group; stored as
    /// `records::pack_offset` says.
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
        let packed = stored(self.event) | u64::from(self.kind) << 56;
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
            event: unpack_offset(packed),
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
            event: STORED_VIRTUAL - 1,
            flags: slice_flags::LOCK_HELD | slice_flags::INTERLACED,
        };
        assert_eq!(Slice::decode(&s.encode()), s);
        assert_eq!(s.kind(), slice_flags::LOCK_HELD);
        let p = Point { ts: u64::MAX - 1, name: 1, callsite: 16, event: 1 << 40, kind: point_kinds::LOG };
        assert_eq!(Point::decode(&p.encode()), p);
        let v = Sample { ts: 3, value: -0.5 };
        assert_eq!(Sample::decode(&v.encode()), v);
    }

    #[test]
    fn offsets_inside_compressed_groups_are_stored_whole() {
        use phosphor_format::file::{split_virtual, Compression, Header, Reader, Trailer, Writer};
        use phosphor_format::{ArgType, Meta, Record};
        let header = Header {
            clock: phosphor_craft::monotonic(),
            pid: 1,
            process_name: "offsets".into(),
            boot_id: None,
            host_name: None,
        };
        let mut w = Writer::with_compression(Vec::new(), &header, Compression::Zstd { level: 1 }).unwrap();
        let records: Vec<Record> = (0..100u64)
            .map(|i| Record::new(i, 16, Meta::new(0, ArgType::U64, ArgType::None), [i, 0]))
            .collect();
        for tid in 0..40 {
            w.write_chunk(tid, 0, &records, |_, _| "").unwrap();
        }
        let bytes = w.finish(&Trailer::default()).unwrap();
        let mut r = Reader::new(&bytes[..]).unwrap();
        let mut virtuals = 0;
        while let Some(chunk) = r.next_chunk().unwrap() {
            let at = chunk.offset;
            virtuals += usize::from(split_virtual(at).is_some());
            for event in [at, at + 40, chunk.end_offset()] {
                let p = Point { ts: 1, name: 2, callsite: 16, event, kind: point_kinds::INSTANT };
                assert_eq!(Point::decode(&p.encode()), p, "{event:#x}");
            }
        }
        assert_eq!(virtuals, 40, "every chunk is inside a compressed group");
        // Past what 56 bits hold: refused, so that `build` can name it.
        assert_eq!(pack_offset(STORED_VIRTUAL), None);
        let far = phosphor_format::file::VIRTUAL_OFFSET | (MAX_STORED_GROUP + 1) << INNER_BITS;
        assert_eq!(pack_offset(far), None);
    }
}

//! The reversible pre-transforms of a compressed group (format 1.7), applied to the records of
//! each chunk block in it before the codec, and undone after.
//!
//! * [`Transform::Delta`]: each record's first word (an event's timestamp) becomes the wrapping
//!   difference from the previous record's in the chunk. Timestamps a few hundred ticks apart
//!   become small numbers with zero high bytes, which every codec takes better than absolute
//!   values (the bench in `benches/compress.rs`: zstd 1 from ratio 5.9 to 8.1).
//! * [`Transform::DeltaShuffle`]: the delta, then the records' bytes transposed: byte 0 of every
//!   record, then byte 1, and so on, so the fast codecs see runs (zero high bytes, repeated ids
//!   and metas); LZ4 from ratio 3.6 to 5.5.
//!
//! Only the records of chunk blocks change, never a block's framing or a chunk's extents, so the
//! inverse finds the same blocks the forward pass did, and both are exact inverses on any bytes
//! (a malformed block is left for the reader to report once the transform is undone). A block
//! that runs past the group's end is left alone by both.

use super::chunk::EXTENTS_BYTES;
use super::header::{kind, BLOCK_HEADER_BYTES};
use crate::record::RECORD_SIZE;

/// A group's pre-transform; its id is the group's second byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transform {
    None = 0,
    Delta = 1,
    DeltaShuffle = 2,
}

impl Transform {
    pub(crate) fn from_id(id: u8) -> Option<Transform> {
        match id {
            0 => Some(Transform::None),
            1 => Some(Transform::Delta),
            2 => Some(Transform::DeltaShuffle),
            _ => None,
        }
    }
}

/// Calls `f` with the records of every chunk block of the framed blocks in `group`, each cut to
/// whole records.
fn each_chunk(group: &mut [u8], mut f: impl FnMut(&mut [u8])) {
    let mut at = 0;
    while group.len() - at >= BLOCK_HEADER_BYTES {
        let k = u32::from_le_bytes(group[at..at + 4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(group[at + 4..at + 8].try_into().expect("4 bytes")) as usize;
        let body = at + BLOCK_HEADER_BYTES;
        if len > group.len() - body {
            return;
        }
        if k == kind::CHUNK && len >= EXTENTS_BYTES {
            let n = (len - EXTENTS_BYTES) / RECORD_SIZE;
            f(&mut group[body + EXTENTS_BYTES..body + EXTENTS_BYTES + n * RECORD_SIZE]);
        }
        at = body + len;
    }
}

fn word(records: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(records[i * RECORD_SIZE..i * RECORD_SIZE + 8].try_into().expect("8 bytes"))
}

fn set_word(records: &mut [u8], i: usize, v: u64) {
    records[i * RECORD_SIZE..i * RECORD_SIZE + 8].copy_from_slice(&v.to_le_bytes());
}

/// Applies `t` to the chunk blocks of the framed blocks in `group`.
pub(crate) fn forward(group: &mut [u8], t: Transform) {
    if t == Transform::None {
        return;
    }
    let mut tmp = Vec::new();
    each_chunk(group, |records| {
        let n = records.len() / RECORD_SIZE;
        // Back to front, so each difference is taken from the previous record's original value.
        for i in (1..n).rev() {
            let d = word(records, i).wrapping_sub(word(records, i - 1));
            set_word(records, i, d);
        }
        if t == Transform::DeltaShuffle {
            tmp.clear();
            tmp.extend_from_slice(records);
            for (j, column) in records.chunks_exact_mut(n.max(1)).enumerate().take(RECORD_SIZE) {
                for (i, b) in column.iter_mut().enumerate() {
                    *b = tmp[i * RECORD_SIZE + j];
                }
            }
        }
    });
}

/// Undoes `t` on the chunk blocks of the framed blocks in `group`.
pub(crate) fn inverse(group: &mut [u8], t: Transform) {
    if t == Transform::None {
        return;
    }
    let mut tmp = Vec::new();
    each_chunk(group, |records| {
        let n = records.len() / RECORD_SIZE;
        if t == Transform::DeltaShuffle {
            tmp.clear();
            tmp.extend_from_slice(records);
            for (i, record) in records.chunks_exact_mut(RECORD_SIZE).enumerate() {
                for (j, b) in record.iter_mut().enumerate() {
                    *b = tmp[j * n + i];
                }
            }
        }
        for i in 1..n {
            let v = word(records, i).wrapping_add(word(records, i - 1));
            set_word(records, i, v);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Framed blocks: a chunk of `n` records of pseudo-random bytes, a string block, a chunk cut
    /// short of a whole record, and a block running past the end.
    fn group(n: usize) -> Vec<u8> {
        let mut g = Vec::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut bytes = |len: usize| {
            (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect::<Vec<u8>>()
        };
        for (k, len) in [(kind::CHUNK, EXTENTS_BYTES + n * 32), (kind::STRINGS, 13), (kind::CHUNK, 40 + 50)] {
            g.extend_from_slice(&k.to_le_bytes());
            g.extend_from_slice(&(len as u32).to_le_bytes());
            g.extend(bytes(len));
        }
        g.extend_from_slice(&kind::CHUNK.to_le_bytes());
        g.extend_from_slice(&1000u32.to_le_bytes());
        g.extend(bytes(64));
        g
    }

    #[test]
    fn every_transform_is_undone_exactly_and_changes_only_records() {
        for n in [0, 1, 2, 127] {
            for t in [Transform::None, Transform::Delta, Transform::DeltaShuffle] {
                let original = group(n);
                let mut g = original.clone();
                forward(&mut g, t);
                assert_eq!(g.len(), original.len());
                // Framing and extents are untouched.
                assert_eq!(g[..8 + EXTENTS_BYTES], original[..8 + EXTENTS_BYTES], "{t:?} {n}");
                if t != Transform::None && n >= 2 {
                    assert_ne!(g, original, "{t:?} {n}");
                }
                inverse(&mut g, t);
                assert_eq!(g, original, "{t:?} {n}");
            }
        }
    }

    #[test]
    fn the_delta_turns_close_timestamps_into_small_numbers() {
        let mut g = Vec::new();
        g.extend_from_slice(&kind::CHUNK.to_le_bytes());
        g.extend_from_slice(&((EXTENTS_BYTES + 3 * 32) as u32).to_le_bytes());
        g.extend_from_slice(&[0; EXTENTS_BYTES]);
        for ts in [1_000_000_000u64, 1_000_000_250, 1_000_000_249] {
            g.extend_from_slice(&ts.to_le_bytes());
            g.extend_from_slice(&[7; 24]);
        }
        forward(&mut g, Transform::Delta);
        let records = &g[8 + EXTENTS_BYTES..];
        assert_eq!(word(records, 0), 1_000_000_000);
        assert_eq!(word(records, 1), 250);
        assert_eq!(word(records, 2), u64::MAX);
    }
}

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

/// Copies the framed blocks `src` into `dst` (as long as `src`), passing the records of every
/// chunk block (cut to whole records) to `f(records, out)`, which writes `out`: the same place in
/// `dst`. Everything else is copied as it is, and nothing is written twice.
fn map_chunks(src: &[u8], dst: &mut [u8], mut f: impl FnMut(&[u8], &mut [u8])) {
    debug_assert_eq!(src.len(), dst.len());
    // `src[copied..at]` is copied when the next records (or the end) come.
    let (mut at, mut copied) = (0, 0);
    while src.len() - at >= BLOCK_HEADER_BYTES {
        let k = u32::from_le_bytes(src[at..at + 4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(src[at + 4..at + 8].try_into().expect("4 bytes")) as usize;
        let body = at + BLOCK_HEADER_BYTES;
        if len > src.len() - body {
            break;
        }
        if k == kind::CHUNK && len >= EXTENTS_BYTES {
            let n = (len - EXTENTS_BYTES) / RECORD_SIZE;
            let range = body + EXTENTS_BYTES..body + EXTENTS_BYTES + n * RECORD_SIZE;
            dst[copied..range.start].copy_from_slice(&src[copied..range.start]);
            f(&src[range.clone()], &mut dst[range.clone()]);
            copied = range.end;
        }
        at = body + len;
    }
    dst[copied..].copy_from_slice(&src[copied..]);
}

fn load(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn store(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Transposes the 8×8 matrix of bytes whose row `r` is `x[r]` (byte `c` of the row is bits
/// `8c..8c+8`): afterwards byte `c` of `x[r]` is what byte `r` of `x[c]` was. Three rounds of
/// swapping off-diagonal blocks (4×4, then 2×2, then single bytes), each a few shifts and masks
/// per pair of rows; its own inverse.
#[inline(always)]
fn transpose8(x: &mut [u64; 8]) {
    /// Row a's upper block of columns changes places with row b's lower block.
    #[inline(always)]
    fn swap(x: &mut [u64; 8], a: usize, b: usize, shift: u32, mask: u64) {
        let t = ((x[a] >> shift) ^ x[b]) & mask;
        x[a] ^= t << shift;
        x[b] ^= t;
    }
    const M32: u64 = 0x0000_0000_ffff_ffff;
    const M16: u64 = 0x0000_ffff_0000_ffff;
    const M8: u64 = 0x00ff_00ff_00ff_00ff;
    for (a, b) in [(0, 4), (1, 5), (2, 6), (3, 7)] {
        swap(x, a, b, 32, M32);
    }
    for (a, b) in [(0, 2), (1, 3), (4, 6), (5, 7)] {
        swap(x, a, b, 16, M16);
    }
    for (a, b) in [(0, 1), (2, 3), (4, 5), (6, 7)] {
        swap(x, a, b, 8, M8);
    }
}

/// Delta (and, with `shuffle`, the byte shuffle) of the `n` records in `src`, written to `dst`.
fn forward_records(src: &[u8], dst: &mut [u8], shuffle: bool) {
    let n = src.len() / RECORD_SIZE;
    // The record's first word, less the previous record's (the first record's is kept).
    let delta = |i: usize| {
        let v = load(src, i * RECORD_SIZE);
        if i == 0 {
            v
        } else {
            v.wrapping_sub(load(src, (i - 1) * RECORD_SIZE))
        }
    };
    if !shuffle {
        dst.copy_from_slice(src);
        for i in 1..n {
            store(dst, i * RECORD_SIZE, delta(i));
        }
        return;
    }
    // Column j (byte j of every record) goes to dst[j*n..(j+1)*n]. Eight records at a time: each
    // of their four words, transposed, gives eight bytes of eight columns.
    let whole = n - n % 8;
    let mut x = [0u64; 8];
    for i0 in (0..whole).step_by(8) {
        for w in 0..RECORD_SIZE / 8 {
            for (r, v) in x.iter_mut().enumerate() {
                *v = if w == 0 { delta(i0 + r) } else { load(src, (i0 + r) * RECORD_SIZE + w * 8) };
            }
            transpose8(&mut x);
            for (b, v) in x.iter().enumerate() {
                store(dst, (w * 8 + b) * n + i0, *v);
            }
        }
    }
    for i in whole..n {
        let mut record = [0u8; RECORD_SIZE];
        record.copy_from_slice(&src[i * RECORD_SIZE..(i + 1) * RECORD_SIZE]);
        record[..8].copy_from_slice(&delta(i).to_le_bytes());
        for (j, b) in record.iter().enumerate() {
            dst[j * n + i] = *b;
        }
    }
}

/// Undoes [`forward_records`]: the records, from their transformed bytes `src`, into `dst`.
fn inverse_records(src: &[u8], dst: &mut [u8], shuffle: bool) {
    let n = src.len() / RECORD_SIZE;
    if shuffle {
        let whole = n - n % 8;
        let mut x = [0u64; 8];
        for i0 in (0..whole).step_by(8) {
            for w in 0..RECORD_SIZE / 8 {
                for (b, v) in x.iter_mut().enumerate() {
                    *v = load(src, (w * 8 + b) * n + i0);
                }
                transpose8(&mut x);
                for (r, v) in x.iter().enumerate() {
                    store(dst, (i0 + r) * RECORD_SIZE + w * 8, *v);
                }
            }
        }
        for i in whole..n {
            for j in 0..RECORD_SIZE {
                dst[i * RECORD_SIZE + j] = src[j * n + i];
            }
        }
    } else {
        dst.copy_from_slice(src);
    }
    // The running sum restores each timestamp from its difference.
    for i in 1..n {
        let v = load(dst, i * RECORD_SIZE).wrapping_add(load(dst, (i - 1) * RECORD_SIZE));
        store(dst, i * RECORD_SIZE, v);
    }
}

/// Writes `src` (framed blocks) into `dst` (as long as `src`) with `t` applied to its chunk
/// blocks.
pub(crate) fn forward_into(src: &[u8], dst: &mut [u8], t: Transform) {
    match t {
        Transform::None => dst.copy_from_slice(src),
        Transform::Delta => map_chunks(src, dst, |r, out| forward_records(r, out, false)),
        Transform::DeltaShuffle => map_chunks(src, dst, |r, out| forward_records(r, out, true)),
    }
}

/// Writes `src` (framed blocks with `t` applied) into `dst` (as long as `src`) with `t` undone.
/// Framing is never transformed, so the same chunk blocks are found as by [`forward_into`].
pub(crate) fn inverse_into(src: &[u8], dst: &mut [u8], t: Transform) {
    match t {
        Transform::None => dst.copy_from_slice(src),
        Transform::Delta => map_chunks(src, dst, |r, out| inverse_records(r, out, false)),
        Transform::DeltaShuffle => map_chunks(src, dst, |r, out| inverse_records(r, out, true)),
    }
}

/// Applies `t` to the chunk blocks of the framed blocks in `group`, in place.
pub(crate) fn forward(group: &mut [u8], t: Transform) {
    let src = group.to_vec();
    forward_into(&src, group, t);
}

/// Undoes `t` on the chunk blocks of the framed blocks in `group`, in place.
#[cfg(test)]
fn inverse(group: &mut [u8], t: Transform) {
    let src = group.to_vec();
    inverse_into(&src, group, t);
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
        for n in [0, 1, 2, 7, 8, 9, 16, 127] {
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
        assert_eq!(load(records, 0), 1_000_000_000);
        assert_eq!(load(records, 32), 250);
        assert_eq!(load(records, 64), u64::MAX);
    }

    #[test]
    fn the_word_transpose_matches_the_definition() {
        let mut x = [0u64; 8];
        for (r, v) in x.iter_mut().enumerate() {
            *v = u64::from_le_bytes(std::array::from_fn(|c| (r * 8 + c) as u8));
        }
        let before = x;
        transpose8(&mut x);
        for (r, row) in x.iter().enumerate() {
            for (c, old) in before.iter().enumerate() {
                assert_eq!(row.to_le_bytes()[c], old.to_le_bytes()[r], "row {r} column {c}");
            }
        }
        transpose8(&mut x);
        assert_eq!(x, before, "its own inverse");
    }

    #[test]
    fn the_shuffle_lays_out_byte_j_of_every_record_as_column_j() {
        for n in [1usize, 5, 8, 13, 24, 127] {
            let src: Vec<u8> = (0..n * RECORD_SIZE).map(|k| (k * 7 + k / 32) as u8).collect();
            let mut dst = vec![0; src.len()];
            forward_records(&src, &mut dst, true);
            // The expected bytes: the records with their first word as a delta, column by column.
            let mut delta = src.clone();
            for i in 1..n {
                let d = load(&src, i * RECORD_SIZE).wrapping_sub(load(&src, (i - 1) * RECORD_SIZE));
                store(&mut delta, i * RECORD_SIZE, d);
            }
            for i in 0..n {
                for j in 0..RECORD_SIZE {
                    assert_eq!(dst[j * n + i], delta[i * RECORD_SIZE + j], "n {n} record {i} byte {j}");
                }
            }
            let mut back = vec![0; src.len()];
            inverse_records(&dst, &mut back, true);
            assert_eq!(back, src, "n {n}");
        }
    }
}

//! Corrupt and truncated input: errors with byte offsets, never a panic.

use phosphor_format::file::{kind, Block, ErrorKind, Reader, FORMAT_MINOR, PREAMBLE_BYTES};

use crate::golden::golden_v1;
use crate::support::read_all;

/// `(offset, kind, body length)` of every block, walked from the documented framing.
fn blocks(bytes: &[u8]) -> Vec<(usize, u32, usize)> {
    let mut out = Vec::new();
    let mut at = PREAMBLE_BYTES;
    while at + 8 <= bytes.len() {
        let kind = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        out.push((at, kind, len));
        at += 8 + len;
    }
    assert_eq!(at, bytes.len(), "the blocks tile the file");
    out
}

fn error_kind(bytes: &[u8]) -> (ErrorKind, u64) {
    let e = read_all(bytes).error.expect("an error");
    (e.kind().clone(), e.offset())
}

#[test]
fn a_file_cut_at_every_offset_reads_every_complete_chunk_then_names_where_it_stopped() {
    let file = golden_v1();
    let full = read_all(&file);
    assert!(full.error.is_none() && full.trailer);
    let ends: Vec<usize> = blocks(&file).iter().map(|(at, _, len)| at + 8 + len).collect();
    for cut in 0..file.len() {
        let got = read_all(&file[..cut]);
        let expect: Vec<_> = full.chunks.iter().filter(|c| c.1 <= cut as u64).cloned().collect();
        assert_eq!(got.chunks, expect, "cut at {cut}");
        let e = got.error.unwrap_or_else(|| panic!("cut at {cut} reads as whole"));
        assert!(matches!(e.kind(), ErrorKind::Truncated { .. }), "cut at {cut}: {e}");
        // Reading stops at the start of the first incomplete block.
        let stop = ends.iter().copied().filter(|&end| end <= cut).max().unwrap_or(0);
        let stop = if cut < PREAMBLE_BYTES { 0 } else { stop.max(PREAMBLE_BYTES) };
        assert_eq!(e.offset(), stop as u64, "cut at {cut}: {e}");
    }
}

#[test]
fn flipping_any_byte_gives_a_clean_read_or_an_error_inside_the_file_never_a_panic() {
    let file = golden_v1();
    let mut errors = 0;
    for at in 0..file.len() {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut bad = file.clone();
            bad[at] ^= mask;
            if let Some(e) = read_all(&bad).error {
                errors += 1;
                assert!(e.offset() <= file.len() as u64, "flip at {at}: offset {} past the end", e.offset());
                assert!(!e.to_string().is_empty());
            }
        }
    }
    // Timestamps and argument values can take any value, but framing, lengths and tables cannot.
    assert!(errors > file.len() / 2, "only {errors} flips were noticed");
}

#[test]
fn bad_magic_is_reported_at_offset_zero() {
    let mut file = golden_v1();
    file[3] = b'X';
    assert_eq!(error_kind(&file), (ErrorKind::BadMagic, 0));
    assert_eq!(error_kind(b"GIF89a"), (ErrorKind::BadMagic, 0));
}

#[test]
fn a_newer_major_version_is_refused_at_the_version_field() {
    let mut file = golden_v1();
    file[8] = 2;
    assert_eq!(
        error_kind(&file),
        (ErrorKind::UnsupportedVersion { major: 2, minor: FORMAT_MINOR, supported: 1 }, 8)
    );
}

#[test]
fn a_newer_minor_version_with_an_unknown_block_still_reads() {
    let file = golden_v1();
    let (trailer_at, _, _) = *blocks(&file).last().unwrap();
    let mut newer = file[..trailer_at].to_vec();
    newer[10] = 7; // minor version 7
    newer.extend_from_slice(&0x77u32.to_le_bytes());
    newer.extend_from_slice(&3u32.to_le_bytes());
    newer.extend_from_slice(b"new");
    newer.extend_from_slice(&file[trailer_at..]);
    let got = read_all(&newer);
    assert!(got.error.is_none(), "{:?}", got.error);
    assert!(got.trailer);
    assert_eq!(got.chunks.len(), 10);
    let mut r = Reader::new(&newer[..]).unwrap();
    assert_eq!(r.version(), (1, 7));
    let mut unknown = Vec::new();
    while let Some(b) = r.next_block().unwrap() {
        if let Block::Unknown { kind, len } = b {
            unknown.push((kind, len));
        }
    }
    assert_eq!(unknown, [(0x77, 3)]);
}

#[test]
fn an_unknown_critical_block_is_an_error_at_its_offset() {
    let file = golden_v1();
    let (trailer_at, _, _) = *blocks(&file).last().unwrap();
    let mut bad = file[..trailer_at].to_vec();
    bad.extend_from_slice(&(kind::CRITICAL | 0x77).to_le_bytes());
    bad.extend_from_slice(&0u32.to_le_bytes());
    bad.extend_from_slice(&file[trailer_at..]);
    assert_eq!(
        error_kind(&bad),
        (ErrorKind::UnknownCriticalBlock { kind: kind::CRITICAL | 0x77 }, trailer_at as u64)
    );
}

#[test]
fn a_block_length_over_the_limit_is_refused_without_reading_it() {
    let file = golden_v1();
    let (at, _, _) = blocks(&file)[2];
    let mut bad = file.clone();
    bad[at + 4..at + 8].copy_from_slice(&u32::MAX.to_le_bytes());
    let (kind, offset) = error_kind(&bad);
    assert!(matches!(kind, ErrorKind::Malformed { .. }), "{kind:?}");
    assert_eq!(offset, at as u64 + 4);
}

#[test]
fn a_chunk_whose_length_disagrees_with_its_extents_is_malformed_at_the_extents() {
    let file = golden_v1();
    let (at, _, _) = *blocks(&file).iter().find(|b| b.1 == kind::CHUNK).unwrap();
    let mut bad = file.clone();
    // record_count 8 → 9: committed_bytes (at extents + 32) no longer matches it.
    bad[at + 8 + 4] = 9;
    let (kind, offset) = error_kind(&bad);
    assert!(matches!(kind, ErrorKind::Malformed { what: "chunk block", .. }), "{kind:?}");
    assert_eq!(offset, at as u64 + 8 + 32);
}

#[test]
fn a_record_naming_an_unknown_callsite_is_an_error_at_that_record() {
    let file = golden_v1();
    let (at, _, _) = *blocks(&file).iter().find(|b| b.1 == kind::CHUNK).unwrap();
    let record = at + 8 + 40 + 32; // the second record of the first chunk
    let mut bad = file.clone();
    bad[record + 8..record + 12].copy_from_slice(&999u32.to_le_bytes());
    assert_eq!(error_kind(&bad), (ErrorKind::UnknownCallsite(999), record as u64));
}

#[test]
fn a_static_string_index_past_the_table_is_an_error_at_its_record() {
    let file = golden_v1();
    let (at, _, _) = *blocks(&file).iter().find(|b| b.1 == kind::CHUNK).unwrap();
    let record = at + 8 + 40 + 3 * 32; // the Begin event with a static string in slot 0
    let mut bad = file.clone();
    bad[record + 16..record + 24].copy_from_slice(&5000u64.to_le_bytes());
    let (kind, offset) = error_kind(&bad);
    assert!(matches!(kind, ErrorKind::UnknownString { index: 5000, .. }), "{kind:?}");
    assert_eq!(offset, record as u64);
}

#[test]
fn data_after_the_trailer_is_an_error_at_its_offset() {
    let mut file = golden_v1();
    let len = file.len();
    file.push(0);
    assert_eq!(error_kind(&file), (ErrorKind::TrailingData, len as u64));
}

#[test]
fn a_file_that_does_not_start_with_the_header_block_is_refused() {
    let file = golden_v1();
    let (at, _, _) = blocks(&file)[1];
    let mut bad = file[..PREAMBLE_BYTES].to_vec();
    bad.extend_from_slice(&file[at..]);
    assert_eq!(error_kind(&bad), (ErrorKind::MissingHeader { found: kind::STRINGS }, PREAMBLE_BYTES as u64));
}

/// The golden file's bytes, the offset of its first callsite entry, and that of its aggregates
/// block.
fn golden_offsets() -> (Vec<u8>, usize, usize) {
    let file = golden_v1();
    let b = blocks(&file);
    let callsites = b.iter().find(|x| x.1 == kind::CALLSITES).unwrap().0 + 8 + 8;
    let aggregates = b.iter().find(|x| x.1 == kind::AGGREGATES).unwrap().0;
    (file, callsites, aggregates)
}

#[test]
fn an_unknown_log_level_or_callsite_flag_is_malformed_at_its_byte() {
    let (file, entry, _) = golden_offsets();
    let mut bad = file.clone();
    bad[entry + 5] = 9;
    let (k, offset) = error_kind(&bad);
    assert!(matches!(&k, ErrorKind::Malformed { what: "callsite block", .. }), "{k:?}");
    assert!(k.to_string().contains("level code 9"), "{k}");
    assert_eq!(offset, entry as u64 + 5);
    let mut bad = file.clone();
    bad[entry + 6] = 0x4;
    let (k, offset) = error_kind(&bad);
    assert!(k.to_string().contains("flags 0x4"), "{k}");
    assert_eq!(offset, entry as u64 + 6);
}

#[test]
fn a_bad_aggregates_block_is_an_error_at_the_entry() {
    let (file, _, at) = golden_offsets();
    let body = at + 8;
    // Entry 0: callsite u32 at body+4, kind u8 at body+8.
    let mut bad = file.clone();
    bad[body + 4..body + 8].copy_from_slice(&999u32.to_le_bytes());
    assert_eq!(error_kind(&bad), (ErrorKind::UnknownCallsite(999), body as u64 + 4));
    let mut bad = file.clone();
    bad[body + 8] = 3;
    let (k, offset) = error_kind(&bad);
    assert!(k.to_string().contains("unknown aggregate kind 3"), "{k}");
    assert_eq!(offset, body as u64 + 8);
    // Entry 1 (the histogram) starts after entry 0's 24 bytes; its count is at +8.
    let hist = body + 4 + 24;
    let mut bad = file.clone();
    bad[hist + 8] = 6;
    let (k, _) = error_kind(&bad);
    assert!(k.to_string().contains("add up to 5, not the count 6"), "{k}");
    // The bucket count (after count, sum, min, max) claims more than the block holds.
    let mut bad = file.clone();
    bad[hist + 40..hist + 44].copy_from_slice(&u32::MAX.to_le_bytes());
    let (k, offset) = error_kind(&bad);
    assert!(k.to_string().contains("buckets do not fit"), "{k}");
    assert_eq!(offset, hist as u64 + 40);
}

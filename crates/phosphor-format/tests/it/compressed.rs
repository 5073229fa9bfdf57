//! Compressed groups (format 1.7): round trips for each codec, flushes that leave a readable
//! file, random access by virtual offsets, and hostile groups that fail with offsets.

use std::cell::RefCell;
use std::io::{Cursor, Write};
use std::rc::Rc;

use phosphor_format::file::{
    kind, split_virtual, ClockInfo, Compression, ErrorKind, Header, Reader, Trailer, Writer, MAX_GROUP_BYTES,
    PREAMBLE_BYTES, VIRTUAL_OFFSET,
};
use phosphor_format::{Meta, Record};

use crate::golden::{everything, golden_v1, golden_v1_with};
use crate::support::read_all;

const CODECS: [Compression; 4] = [
    Compression::Zstd { level: 1 },
    Compression::Zstd { level: -5 },
    Compression::Zstd { level: 9 },
    Compression::Lz4,
];

fn header() -> Header {
    let clock = ClockInfo::monotonic(0, 0);
    Header { clock, pid: 7, process_name: "compressed".into(), boot_id: None, host_name: None }
}

/// `(offset, kind, body length)` of every block of a file, from the documented framing.
fn blocks(bytes: &[u8]) -> Vec<(usize, u32, usize)> {
    let mut out = Vec::new();
    let mut at = PREAMBLE_BYTES;
    while at + 8 <= bytes.len() {
        let kind = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        out.push((at, kind, len));
        at += 8 + len;
    }
    out
}

/// `chunks` chunks of 127 instants of callsite 16 on 3 threads, timestamps a few ticks apart.
pub fn many_chunks(compression: Compression, chunks: u64) -> Vec<u8> {
    let mut w = Writer::with_compression(Vec::new(), &header(), compression).unwrap();
    write_many(&mut w, 0..chunks);
    w.finish(&Trailer { recorded: 127 * chunks, ..Trailer::default() }).unwrap()
}

fn write_many<W: Write>(w: &mut Writer<W>, chunks: std::ops::Range<u64>) {
    let cs = phosphor_format::file::CallsiteInfo {
        id: 16,
        category: "c",
        name: "tick",
        phase: phosphor_format::Phase::Instant,
        arg_names: ["i", ""],
        file: "f.rs",
        line: 1,
        name_hash: 0,
        level: None,
        dynamic_name: false,
        flow: false,
    };
    if chunks.start == 0 {
        w.write_callsites([&cs]).unwrap();
        w.write_thread_names([(1, "one"), (2, "two"), (3, "three")]).unwrap();
    }
    for c in chunks {
        let records: Vec<Record> = (0..127)
            .map(|i| {
                let n = c * 127 + i;
                Record::new(
                    1_000_000 + n * 37 + (n * n) % 11,
                    16,
                    Meta::new(0, phosphor_format::ArgType::U64, phosphor_format::ArgType::None),
                    [n, 0],
                )
            })
            .collect();
        w.write_chunk((c % 3) as u32 + 1, c / 3, &records, |_, _| "").unwrap();
    }
}

#[test]
fn every_codec_round_trips_every_block_kind_in_groups() {
    let plain = everything(&golden_v1());
    for codec in CODECS {
        let bytes = golden_v1_with(codec);
        let kinds: Vec<u32> = blocks(&bytes).iter().map(|b| b.1).collect();
        // Header plain, then one group for everything, then the trailer plain.
        assert_eq!(kinds, [kind::HEADER, kind::COMPRESSED, kind::TRAILER], "{codec}");
        assert_eq!(everything(&bytes), plain, "{codec}");
    }
}

#[test]
fn a_long_file_is_written_in_bounded_groups_and_reads_back_every_event() {
    let plain = many_chunks(Compression::None, 300);
    for codec in CODECS {
        let bytes = many_chunks(codec, 300);
        let groups: Vec<_> = blocks(&bytes).into_iter().filter(|b| b.1 == kind::COMPRESSED).collect();
        // 300 chunks of 4 KiB in groups of about 256 KiB.
        assert!((4..=6).contains(&groups.len()), "{codec}: {} groups", groups.len());
        assert!(bytes.len() * 3 < plain.len(), "{codec}: {} of {} bytes", bytes.len(), plain.len());
        assert_eq!(everything(&bytes), everything(&plain), "{codec}");
        let mut r = Reader::new(&bytes[..]).unwrap();
        r.for_each_event(|_| {}).unwrap();
        assert_eq!(r.decoded_bytes(), plain.len() as u64, "{codec}");
        assert_eq!(r.stored_bytes(), bytes.len() as u64, "{codec}");
    }
}

#[test]
fn chunk_at_reads_a_chunk_inside_a_group_again_by_its_virtual_offset() {
    for codec in CODECS {
        let bytes = many_chunks(codec, 150);
        let mut r = Reader::new(Cursor::new(&bytes[..])).unwrap();
        let mut chunks = Vec::new();
        while let Some(c) = r.next_chunk().unwrap() {
            assert_ne!(c.offset & VIRTUAL_OFFSET, 0, "{codec}: a chunk in a group has a virtual offset");
            // Its file position is its group's end.
            let (group, _) = split_virtual(c.offset).unwrap();
            let group_len = u32::from_le_bytes(bytes[group as usize + 4..][..4].try_into().unwrap());
            assert_eq!(c.stored_end(), group + 8 + u64::from(group_len), "{codec}");
            let events: Vec<String> = c.events().map(|e| format!("{:?}", e.unwrap())).collect();
            chunks.push((c.offset, events));
        }
        assert_eq!(chunks.len(), 150);
        // Backwards (a group decoded again at each group change), then forwards.
        for (offset, events) in chunks.iter().rev().chain(&chunks) {
            let c = r.chunk_at(*offset).unwrap();
            let again: Vec<String> = c.events().map(|e| format!("{:?}", e.unwrap())).collect();
            assert_eq!(&again, events, "{codec} at {offset:#x}");
        }
        // Inside a group but not a block's start, and past the group's end: errors.
        let e = r.chunk_at(chunks[0].0 + 1).map(|_| ()).unwrap_err();
        assert!(e.decoded_offset().is_some(), "{e}");
        assert!(r.chunk_at(chunks[0].0 + (MAX_GROUP_BYTES as u64 - 8)).is_err());
        // A virtual offset naming a plain block as its group.
        let e = r.chunk_at(VIRTUAL_OFFSET | (PREAMBLE_BYTES as u64) << 23).map(|_| ()).unwrap_err();
        assert!(e.to_string().contains("not a compressed group"), "{e}");
    }
}

/// A `Write` whose bytes the test can look at while the writer holds it.
#[derive(Clone, Default)]
struct Shared(Rc<RefCell<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_flush_mid_stream_leaves_a_file_that_reads_to_its_last_block() {
    for codec in CODECS {
        let out = Shared::default();
        let mut w = Writer::with_compression(out.clone(), &header(), codec).unwrap();
        write_many(&mut w, 0..5);
        // Gathered, not written yet.
        assert!(read_all(&out.0.borrow()).chunks.is_empty(), "{codec}");
        w.flush().unwrap();
        let first = out.0.borrow().clone();
        let got = read_all(&first);
        assert_eq!(got.chunks.len(), 5, "{codec}");
        let e = got.error.expect("no trailer yet");
        assert!(matches!(e.kind(), ErrorKind::Truncated { .. }), "{e}");
        assert_eq!(e.offset(), first.len() as u64);
        write_many(&mut w, 5..9);
        w.flush().unwrap();
        assert_eq!(read_all(&out.0.borrow()).chunks.len(), 9, "{codec}");
        w.finish(&Trailer::default()).unwrap();
        let whole = read_all(&out.0.borrow());
        assert!(whole.error.is_none() && whole.trailer, "{codec}");
        assert_eq!(whole.chunks.len(), 9);
    }
}

#[test]
fn a_file_cut_inside_a_group_loses_that_group_and_names_its_start() {
    let bytes = many_chunks(Compression::Zstd { level: 1 }, 150);
    let groups: Vec<_> = blocks(&bytes).into_iter().filter(|b| b.1 == kind::COMPRESSED).collect();
    assert!(groups.len() >= 2);
    let (second, _, len) = groups[1];
    let chunks_in_first = {
        let r = read_all(&bytes[..second]);
        r.chunks.len()
    };
    for cut in [second + 1, second + 8, second + 8 + len / 2, second + 8 + len - 1] {
        let got = read_all(&bytes[..cut]);
        assert_eq!(got.chunks.len(), chunks_in_first, "cut at {cut}");
        let e = got.error.unwrap();
        assert!(
            matches!(e.kind(), ErrorKind::Truncated { what: "compressed group" | "block header", .. }),
            "{e}"
        );
        assert_eq!(e.offset(), second as u64, "cut at {cut}: {e}");
    }
}

/// The plain golden file with its blocks after the header replaced by one group block of
/// `codec`, `transform`, declared length `len` and compressed bytes `packed`, then the trailer.
fn with_group(codec: u8, transform: u8, len: u32, packed: &[u8]) -> (Vec<u8>, u64) {
    let plain = golden_v1();
    let b = blocks(&plain);
    let header_end = b[0].0 + 8 + b[0].2;
    let trailer = *b.last().unwrap();
    let mut out = plain[..header_end].to_vec();
    let mut body = vec![codec, transform, 1, 0];
    body.extend_from_slice(&len.to_le_bytes());
    body.extend_from_slice(packed);
    out.extend_from_slice(&kind::COMPRESSED.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    out.extend_from_slice(&plain[trailer.0..]);
    (out, header_end as u64)
}

/// The plain golden file's blocks between the header and the trailer, framed.
fn inner_blocks() -> Vec<u8> {
    let plain = golden_v1();
    let b = blocks(&plain);
    plain[b[0].0 + 8 + b[0].2..b.last().unwrap().0].to_vec()
}

fn zstd(bytes: &[u8]) -> Vec<u8> {
    zstd::bulk::compress(bytes, 1).unwrap()
}

#[test]
fn a_hand_made_group_reads_like_the_writer_s() {
    let inner = inner_blocks();
    let (file, _) = with_group(1, 0, inner.len() as u32, &zstd(&inner));
    assert_eq!(everything(&file), everything(&golden_v1()));
    let (file, _) = with_group(2, 0, inner.len() as u32, &lz4_flex::block::compress(&inner));
    assert_eq!(everything(&file), everything(&golden_v1()));
}

#[test]
fn hostile_groups_fail_with_the_group_s_offset_never_a_panic() {
    let inner = inner_blocks();
    let packed = zstd(&inner);
    let n = inner.len() as u32;
    let fail = |file: &[u8]| read_all(file).error.expect("an error");
    // An unknown codec: the kind is critical, so the reader stops.
    let (file, at) = with_group(9, 0, n, &packed);
    let e = fail(&file);
    assert_eq!(e.kind(), &ErrorKind::UnknownCodec { codec: 9 }, "{e}");
    assert_eq!(e.offset(), at + 8);
    // An unknown transform.
    let (file, at) = with_group(1, 7, n, &packed);
    let e = fail(&file);
    assert!(e.to_string().contains("unknown transform 7"), "{e}");
    assert_eq!(e.offset(), at + 9);
    // Lying lengths: shorter and longer than what the bytes decode to, and over the cap.
    for (len, says) in
        [(n - 1, "compressed group"), (n + 1, "decodes to"), (MAX_GROUP_BYTES + 1, "over the limit")]
    {
        let (file, at) = with_group(1, 0, len, &packed);
        let e = fail(&file);
        assert!(e.to_string().contains(says), "{len}: {e}");
        assert!(e.offset() >= at && e.offset() <= at + 16, "{len}: {e}");
        let (file, at) = with_group(2, 0, len, &lz4_flex::block::compress(&inner));
        let e = fail(&file);
        assert!(e.offset() >= at && e.offset() <= at + 16, "lz4 {len}: {e}");
    }
    // Garbage instead of compressed bytes.
    for codec in [1, 2] {
        let (file, at) = with_group(codec, 0, n, &[0xa5; 64]);
        let e = fail(&file);
        assert_eq!(e.offset(), at + 16, "{codec}: {e}");
    }
    // A group body shorter than its fields.
    let (mut file, at) = with_group(1, 0, n, &[]);
    let len_at = at as usize + 4;
    file[len_at..len_at + 4].copy_from_slice(&3u32.to_le_bytes());
    file.drain(len_at + 4 + 3..len_at + 4 + 8);
    assert!(fail(&file).to_string().contains("shorter than its 8 bytes"), "{}", fail(&file));
}

#[test]
fn a_group_that_ends_mid_block_names_the_group_and_the_decoded_offset() {
    let inner = inner_blocks();
    let b = blocks(&[&[0u8; PREAMBLE_BYTES][..], &inner].concat());
    // Cut the third block in half, and inside its framing.
    for cut in [b[2].0 - PREAMBLE_BYTES + 8 + b[2].2 / 2, b[2].0 - PREAMBLE_BYTES + 3] {
        let short = &inner[..cut];
        let (file, at) = with_group(1, 0, short.len() as u32, &zstd(short));
        let e = read_all(&file).error.expect("an error");
        assert_eq!(e.offset(), at, "{e}");
        assert_eq!(e.decoded_offset(), Some((b[2].0 - PREAMBLE_BYTES) as u64), "{e}");
        let text = e.to_string();
        assert!(text.contains(&format!("compressed group at byte {at}")), "{text}");
    }
}

#[test]
fn a_bad_record_inside_a_group_names_the_group_and_the_record_s_decoded_offset() {
    let mut inner = inner_blocks();
    let b = blocks(&[&[0u8; PREAMBLE_BYTES][..], &inner].concat());
    let (chunk_at, _, _) = *b.iter().find(|x| x.1 == kind::CHUNK).unwrap();
    let chunk_at = chunk_at - PREAMBLE_BYTES;
    // The first record's callsite id: one no block defined.
    let record = chunk_at + 8 + 40;
    inner[record + 8..record + 12].copy_from_slice(&9999u32.to_le_bytes());
    let (file, at) = with_group(1, 0, inner.len() as u32, &zstd(&inner));
    let e = read_all(&file).error.expect("an error");
    assert_eq!(e.kind(), &ErrorKind::UnknownCallsite(9999), "{e}");
    assert_eq!((e.offset(), e.decoded_offset()), (at, Some(record as u64)), "{e}");
}

#[test]
fn headers_trailers_and_groups_inside_a_group_are_refused() {
    let plain = golden_v1();
    let b = blocks(&plain);
    for (at, _, len) in [b[0], *b.last().unwrap()] {
        let inner = [&inner_blocks()[..], &plain[at..at + 8 + len]].concat();
        let (file, _) = with_group(1, 0, inner.len() as u32, &zstd(&inner));
        let e = read_all(&file).error.expect("an error");
        assert!(e.to_string().contains("inside a compressed group"), "{e}");
    }
}

#[test]
fn a_decompression_bomb_fails_at_the_cap_with_bounded_memory() {
    // 1 GiB of zeros in 128 zstd frames of 8 MiB (about 300 bytes each); it declares itself
    // under the cap.
    let bomb = zstd::bulk::compress(&vec![0u8; 8 << 20], 1).unwrap().repeat(128);
    let (file, at) = with_group(1, 0, MAX_GROUP_BYTES, &bomb);
    let (e, peak) = crate::memory::peak_bytes_during(|| read_all(&file).error.expect("an error"));
    assert_eq!(e.offset(), at + 16, "{e}");
    assert!(e.to_string().contains("zstd"), "{e}");
    // The decoded group (at most the cap), the block, the zstd context: not the gigabyte.
    assert!(peak < 3 * MAX_GROUP_BYTES as usize, "{peak} bytes");
}

#[test]
fn an_out_of_range_zstd_level_is_refused_when_the_writer_is_made() {
    let e = Writer::with_compression(Vec::new(), &header(), Compression::Zstd { level: 40 }).unwrap_err();
    assert!(e.to_string().contains("zstd level 40"), "{e}");
}

#[test]
fn flipping_or_cutting_any_byte_of_a_compressed_file_gives_a_read_or_an_error_inside_it() {
    for codec in [Compression::Zstd { level: 1 }, Compression::Lz4] {
        let file = golden_v1_with(codec);
        let mut errors = 0;
        for at in 0..file.len() {
            for mask in [0x01u8, 0x80, 0xff] {
                let mut bad = file.clone();
                bad[at] ^= mask;
                if let Some(e) = read_all(&bad).error {
                    errors += 1;
                    assert!(e.offset() <= file.len() as u64, "{codec}, flip at {at}: {e}");
                    assert!(e.decoded_offset().is_none_or(|d| d <= u64::from(MAX_GROUP_BYTES)), "{e}");
                }
            }
        }
        // The framing, the group's fields and (for zstd, whose frames carry a checksum-free but
        // strict format) most of the compressed bytes are checked: most flips are caught.
        assert!(errors > file.len(), "{codec}: {errors} errors in {} flips", 3 * file.len());
        let whole = read_all(&file);
        for cut in 0..file.len() {
            let got = read_all(&file[..cut]);
            let e = got.error.unwrap_or_else(|| panic!("{codec}: cut at {cut} reads as whole"));
            assert!(matches!(e.kind(), ErrorKind::Truncated { .. }), "{codec}, cut at {cut}: {e}");
            // All or nothing of the one group.
            assert!(got.chunks.is_empty() || got.chunks == whole.chunks, "{codec}, cut at {cut}");
        }
    }
}

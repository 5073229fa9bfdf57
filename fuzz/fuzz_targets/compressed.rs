//! Fuzzes compressed groups (format 1.7) with an oracle: the input's blocks are written twice, plain
//! and in one compressed group (codec and transform chosen by the input), and both files must
//! read the same blocks and events, and fail (or not) alike. Then one byte of the compressed file
//! is flipped (where the input says), and that file must read to its end or stop with an error at
//! an offset inside it, never panic or allocate without bound.
//!
//! Input: a selector byte (bits 0–1 codec: zstd, LZ4; bits 2–3 transform 0–2; bit 4 flip a byte),
//! two bytes of flip position, one byte of flip mask, then the framed blocks that go between the
//! header and the trailer (seeds: `fuzz/seeds/compressed`, the golden file's blocks).

#![no_main]

use libfuzzer_sys::fuzz_target;
use phosphor_format::file::{kind, Block, ClockInfo, Header, Reader, Trailer, Writer, MAX_GROUP_BYTES};

/// The preamble and header of a file, and its trailer block.
fn ends() -> (Vec<u8>, Vec<u8>) {
    let header = Header {
        clock: ClockInfo::monotonic(0, 0),
        pid: 1,
        process_name: "fuzz".into(),
        boot_id: None,
        host_name: None,
    };
    let start = Writer::new(Vec::new(), &header).unwrap().offset() as usize;
    let whole = Writer::new(Vec::new(), &header).unwrap().finish(&Trailer::default()).unwrap();
    (whole[..start].to_vec(), whole[start..].to_vec())
}

/// What a reader gives of `file`: every block and event as text, and whether it failed.
fn read(file: &[u8]) -> (Vec<String>, bool) {
    let mut out = Vec::new();
    let mut r = match Reader::new(file) {
        Ok(r) => r,
        Err(e) => {
            assert!(e.offset() <= file.len() as u64, "{e}");
            return (out, true);
        }
    };
    loop {
        match r.next_block() {
            Ok(Some(Block::Chunk(c))) => {
                out.push(format!("{:?}", c.extents));
                for e in c.events() {
                    match e {
                        Ok(e) => out.push(format!("{} {} {:?}", e.ts, e.callsite.id, e.args)),
                        Err(e) => {
                            assert!(e.offset() <= file.len() as u64, "{e}");
                            return (out, true);
                        }
                    }
                }
            }
            Ok(Some(b)) => out.push(format!("{b:?}")),
            Ok(None) => return (out, false),
            Err(e) => {
                assert!(e.offset() <= file.len() as u64, "{e}");
                let _ = e.to_string();
                return (out, true);
            }
        }
    }
}

/// Whether the blocks framed in `inner` mean the same inside a group as outside: whole, and none a
/// header, a trailer or a group (which a group may not hold, and a plain file reads otherwise).
fn comparable(inner: &[u8]) -> bool {
    let mut at = 0;
    while at < inner.len() {
        if inner.len() - at < 8 {
            return false;
        }
        let k = u32::from_le_bytes(inner[at..at + 4].try_into().unwrap());
        let len = u32::from_le_bytes(inner[at + 4..at + 8].try_into().unwrap()) as usize;
        if matches!(k, kind::HEADER | kind::TRAILER | kind::COMPRESSED) || len > inner.len() - at - 8 {
            return false;
        }
        at += 8 + len;
    }
    true
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 || data.len() - 4 > MAX_GROUP_BYTES as usize {
        return;
    }
    let (select, flip_at, mask, inner) =
        (data[0], u16::from_le_bytes([data[1], data[2]]) as usize, data[3], &data[4..]);
    let codec = if select & 1 == 0 { 1u8 } else { 2 };
    let transform = (select >> 2) % 3;
    let mut transformed = inner.to_vec();
    assert!(phosphor_format::file::transform_group(&mut transformed, transform));
    let packed = match codec {
        1 => zstd::bulk::compress(&transformed, 1).unwrap(),
        _ => lz4_flex::block::compress(&transformed),
    };
    let (head, trailer) = ends();
    let mut body = vec![codec, transform, 1, 0];
    body.extend_from_slice(&(inner.len() as u32).to_le_bytes());
    body.extend_from_slice(&packed);
    let mut grouped = head.clone();
    grouped.extend_from_slice(&kind::COMPRESSED.to_le_bytes());
    grouped.extend_from_slice(&(body.len() as u32).to_le_bytes());
    grouped.extend_from_slice(&body);
    grouped.extend_from_slice(&trailer);
    let plain = [&head[..], inner, &trailer[..]].concat();

    let (got, failed) = read(&grouped);
    if comparable(inner) {
        let (want, plain_failed) = read(&plain);
        assert_eq!(got, want);
        assert_eq!(failed, plain_failed);
    }
    if select & 16 != 0 && mask != 0 {
        let at = head.len() + flip_at % (grouped.len() - head.len());
        grouped[at] ^= mask;
        let _ = read(&grouped);
    }
});

//! Allocation-free encoders of trace file blocks, for writers that cannot allocate: the crash-dump
//! path of the runtime writes a trace file from a fatal-signal handler with these, into buffers on
//! its stack. Each function writes one whole block (framing included) at the start of `out` and
//! returns its length, or `None` when `out` is too short. What they write is what [`Writer`]
//! writes; a reader cannot tell them apart.
//!
//! [`Writer`]: super::Writer

use super::chunk::{encode_chunk_into, EXTENTS_BYTES};
use super::header::{kind, Trailer, BLOCK_HEADER_BYTES, FORMAT_MAJOR, FORMAT_MINOR, MAGIC, PREAMBLE_BYTES};
use super::tables::{RawCallsite, CALLSITE_ENTRY_BYTES};
use crate::record::RECORD_SIZE;
use crate::{DecodeError, Record};

/// The 16-byte preamble: magic and version.
pub fn preamble() -> [u8; PREAMBLE_BYTES] {
    let mut p = [0u8; PREAMBLE_BYTES];
    p[0..8].copy_from_slice(&MAGIC);
    p[8..10].copy_from_slice(&FORMAT_MAJOR.to_le_bytes());
    p[10..12].copy_from_slice(&FORMAT_MINOR.to_le_bytes());
    p
}

/// The preamble and the header block, to write first (this one allocates: encode it ahead of
/// time, when allocating is allowed).
pub fn preamble_and_header(header: &super::Header) -> Vec<u8> {
    let mut body = Vec::new();
    header.encode(&mut body);
    let mut out = preamble().to_vec();
    out.extend_from_slice(&kind::HEADER.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// Writes the framing of a block of `kind` with a body of `len` bytes; the body goes after it.
fn frame(out: &mut [u8], kind: u32, len: usize) -> Option<usize> {
    let total = BLOCK_HEADER_BYTES.checked_add(len)?;
    if out.len() < total {
        return None;
    }
    out[0..4].copy_from_slice(&kind.to_le_bytes());
    out[4..8].copy_from_slice(&u32::try_from(len).ok()?.to_le_bytes());
    Some(total)
}

/// A strings block holding `strs` (each at most 4 GiB); they take the next string indices.
pub fn strings_block(out: &mut [u8], strs: &[&[u8]]) -> Option<usize> {
    let len = 4 + strs.iter().map(|s| 4 + s.len()).sum::<usize>();
    let total = frame(out, kind::STRINGS, len)?;
    let mut at = BLOCK_HEADER_BYTES;
    out[at..at + 4].copy_from_slice(&(strs.len() as u32).to_le_bytes());
    at += 4;
    for s in strs {
        out[at..at + 4].copy_from_slice(&u32::try_from(s.len()).ok()?.to_le_bytes());
        out[at + 4..at + 4 + s.len()].copy_from_slice(s);
        at += 4 + s.len();
    }
    Some(total)
}

/// A callsites block defining one callsite.
pub fn callsite_block(out: &mut [u8], c: &RawCallsite) -> Option<usize> {
    let total = frame(out, kind::CALLSITES, 8 + CALLSITE_ENTRY_BYTES)?;
    let b = &mut out[BLOCK_HEADER_BYTES..total];
    b[0..4].copy_from_slice(&1u32.to_le_bytes());
    b[4..8].copy_from_slice(&(CALLSITE_ENTRY_BYTES as u32).to_le_bytes());
    b[8..].copy_from_slice(&c.encode());
    Some(total)
}

/// Why [`chunk_block`] wrote nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChunkBlockError {
    /// `out` is too short.
    NoRoom,
    /// Record `index` does not decode.
    Decode(usize, DecodeError),
}

/// A chunk block of `records`, each static string word replaced by `intern(address, length)` (a
/// string table index, whose strings block must precede this block in the file).
pub fn chunk_block(
    out: &mut [u8],
    tid: u32,
    seq: u64,
    records: &[Record],
    intern: impl FnMut(u64, usize) -> u32,
) -> Result<usize, ChunkBlockError> {
    let len = EXTENTS_BYTES + records.len() * RECORD_SIZE;
    let total = frame(out, kind::CHUNK, len).ok_or(ChunkBlockError::NoRoom)?;
    encode_chunk_into(tid, seq, records, &mut out[BLOCK_HEADER_BYTES..total], intern)
        .map_err(|(i, e)| ChunkBlockError::Decode(i, e))?;
    Ok(total)
}

/// The trailer block: the file is whole after it.
pub fn trailer_block(out: &mut [u8], t: &Trailer) -> Option<usize> {
    let mut len = 0;
    t.encode_with(&mut |b| len += b.len());
    let total = frame(out, kind::TRAILER, len)?;
    let mut at = BLOCK_HEADER_BYTES;
    t.encode_with(&mut |b| {
        out[at..at + b.len()].copy_from_slice(b);
        at += b.len();
    });
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::{CallsiteInfo, ClockInfo, DropCounts, Header, Reader, Value, Writer};
    use crate::{pack_static_str, ArgType, Meta, Phase};

    #[test]
    fn raw_blocks_make_the_file_the_writer_makes() {
        let header = Header {
            clock: ClockInfo::monotonic(0, 0),
            pid: 7,
            process_name: "raw".into(),
            boot_id: Some([7; 16]),
            host_name: Some("raw-host".into()),
        };
        let records = [
            Record::new(
                10,
                16,
                Meta::new(0, ArgType::U64, ArgType::StaticStr),
                [5, pack_static_str(0x1000, 3).0],
            ),
            Record::new(20, 16, Meta::new(0, ArgType::U64, ArgType::None), [6, 0]),
        ];
        let trailer = Trailer {
            recorded: 2,
            dropped: DropCounts { contended: 1, ..DropCounts::default() },
            ..Trailer::default()
        };
        let cs = CallsiteInfo {
            id: 16,
            category: "c",
            name: "n",
            phase: Phase::Instant,
            arg_names: ["a", "s"],
            file: "f.rs",
            line: 3,
            name_hash: 9,
            level: None,
            dynamic_name: false,
            flow: false,
        };
        // The reference: the allocating writer.
        let mut w = Writer::new(Vec::new(), &header).unwrap();
        w.write_callsites([&cs]).unwrap();
        w.write_chunk(1, 0, &records, |_, _| "abc").unwrap();
        let reference = w.finish(&trailer).unwrap();

        // The same with the raw encoders, string by string as a crash dump writes them.
        let mut file = preamble_and_header(&header);
        let mut buf = [0u8; 8192];
        let n = strings_block(&mut buf, &[b"c", b"n", b"a", b"s", b"f.rs"]).unwrap();
        file.extend_from_slice(&buf[..n]);
        let raw = RawCallsite {
            id: 16,
            phase: Phase::Instant,
            level: None,
            dynamic_name: false,
            flow: false,
            line: 3,
            strings: [0, 1, 2, 3, 4],
            name_hash: 9,
        };
        let n = callsite_block(&mut buf, &raw).unwrap();
        file.extend_from_slice(&buf[..n]);
        let n = strings_block(&mut buf, &[b"abc"]).unwrap();
        file.extend_from_slice(&buf[..n]);
        let n = chunk_block(&mut buf, 1, 0, &records, |_, _| 5).unwrap();
        file.extend_from_slice(&buf[..n]);
        let n = trailer_block(&mut buf, &trailer).unwrap();
        file.extend_from_slice(&buf[..n]);

        let read = |bytes: &[u8]| {
            let mut r = Reader::new(bytes).unwrap();
            let mut out = Vec::new();
            r.for_each_event(|e| {
                out.push((
                    e.ts,
                    e.callsite.name.to_string(),
                    format!("{:?}", e.arg("a")),
                    format!("{:?}", e.arg("s")),
                ))
            })
            .unwrap();
            (out, r.trailer().cloned())
        };
        let (got, got_trailer) = read(&file);
        assert_eq!((got.clone(), got_trailer), read(&reference));
        assert_eq!(got[0].2, format!("{:?}", Some(Value::U64(5))));
        assert_eq!(got[0].3, format!("{:?}", Some(Value::Str("abc"))));
        assert_eq!(chunk_block(&mut [0u8; 16], 1, 0, &records, |_, _| 0), Err(ChunkBlockError::NoRoom));
        assert_eq!(strings_block(&mut [0u8; 4], &[b"x"]), None);
    }
}

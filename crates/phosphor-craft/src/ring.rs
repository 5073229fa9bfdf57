//! Ring files (the mapped buffer of a file-backed trace, which `phosphor recover` turns into a
//! trace file), laid out as `phosphor_format::file::ring` documents them, with every chunk full
//! and a metadata region of many callsites.

use std::io::{self, Write};

use phosphor_format::chunk::{CHUNK_BYTES, CHUNK_RECORDS};
use phosphor_format::file::ring::{at, chunk_at, RING_HEADER_BYTES, RING_MAGIC};
use phosphor_format::file::{raw, Header};
use phosphor_format::{Phase, FIRST_CALLSITE_ID};

use crate::records;
use crate::shapes::{callsite, monotonic};
use crate::trace::TraceWriter;

/// Writes a ring file of `chunks` full chunks (complete events of `callsites` callsites, round
/// robin, 127 to a chunk), whose metadata defines the callsites.
pub fn write_ring<W: Write>(mut out: W, chunks: u32, callsites: u32) -> io::Result<W> {
    let callsites = callsites.max(1);
    let meta = metadata(callsites)?;
    let head = raw::preamble_and_header(&Header {
        clock: monotonic(),
        pid: 1,
        process_name: "craft ring".into(),
        boot_id: None,
        host_name: None,
    });
    let meta_offset = RING_HEADER_BYTES as u64 + u64::from(chunks) * CHUNK_BYTES as u64;
    let mut ring_header = vec![0u8; RING_HEADER_BYTES];
    ring_header[..8].copy_from_slice(&RING_MAGIC);
    put(&mut ring_header, at::VERSION, &1u32.to_le_bytes());
    put(&mut ring_header, at::CHUNK_SIZE, &(CHUNK_BYTES as u32).to_le_bytes());
    put(&mut ring_header, at::CHUNK_COUNT, &u64::from(chunks).to_le_bytes());
    put(&mut ring_header, at::META_OFFSET, &meta_offset.to_le_bytes());
    put(&mut ring_header, at::META_CAPACITY, &(meta.bytes.len() as u64).to_le_bytes());
    put(&mut ring_header, at::META_LEN, &(meta.bytes.len() as u64).to_le_bytes());
    put(&mut ring_header, at::META_STRINGS, &u64::from(meta.strings).to_le_bytes());
    put(&mut ring_header, at::HEAD_LEN, &(head.len() as u32).to_le_bytes());
    put(&mut ring_header, at::HEAD, &head);
    out.write_all(&ring_header)?;

    let mut chunk = vec![0u8; CHUNK_BYTES];
    let mut k = 0u32;
    for c in 0..chunks {
        chunk.fill(0);
        for (i, r) in chunk[..CHUNK_RECORDS * 32].chunks_exact_mut(32).enumerate() {
            let ts = u64::from(c) * 1_000 + i as u64 * 5;
            r.copy_from_slice(&records::complete(ts, FIRST_CALLSITE_ID + k % callsites, 2)[0].to_bytes());
            k = k.wrapping_add(1);
        }
        put(&mut chunk, chunk_at::LOAN, &(u64::from(c) + 1).to_le_bytes());
        put(&mut chunk, chunk_at::SEQ, &u64::from(c).to_le_bytes());
        put(&mut chunk, chunk_at::TID, &1u32.to_le_bytes());
        put(&mut chunk, chunk_at::COMMITTED, &(CHUNK_RECORDS as u32).to_le_bytes());
        put(&mut chunk, chunk_at::COMMITTED + 4, &(CHUNK_RECORDS as u32).to_le_bytes());
        chunk[chunk_at::STATE] = 2;
        out.write_all(&chunk)?;
    }
    out.write_all(&meta.bytes)?;
    out.flush()?;
    Ok(out)
}

/// The metadata region's blocks and the strings they define.
struct Metadata {
    bytes: Vec<u8>,
    strings: u32,
}

/// Strings and callsite blocks, as a trace file's blocks (the ring's metadata is those blocks).
fn metadata(callsites: u32) -> io::Result<Metadata> {
    let id = FIRST_CALLSITE_ID;
    let mut w = TraceWriter::new(Vec::new(), monotonic(), "")?;
    let skip = w.written() as usize;
    w.strings(&["craft", "", "hostile.rs"])?;
    let mut strings = 3;
    let mut k = 0;
    while k < callsites {
        let batch: Vec<String> = (k..callsites.min(k + 4096)).map(|i| format!("ring site {i}")).collect();
        let first = w.strings(&batch)?;
        strings += batch.len() as u32;
        w.callsites((0..batch.len() as u32).map(|j| callsite(id + k + j, Phase::Complete, first + j)))?;
        k += batch.len() as u32;
    }
    // The writer's header and (below) trailer are not metadata.
    let end = w.written() as usize;
    let mut bytes = w.finish(Default::default())?;
    bytes.truncate(end);
    bytes.drain(..skip);
    Ok(Metadata { bytes, strings })
}

fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
    buf[at..at + bytes.len()].copy_from_slice(bytes);
}

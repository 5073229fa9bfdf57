//! Compression of a real trace's blocks (issue 24): for each codec and level, group size and
//! pre-transform, the ratio, the compression and decompression speed on one core.
//!
//! A plain `main` (no harness): each configuration compresses the whole file, which takes a
//! tenth of a second or more, so a sampling harness would take an hour for the sweep. The best
//! of three passes is reported.
//!
//! ```text
//! cargo bench -p phosphor-format --bench compress -- TRACE.phos [--quick]
//! ```
//!
//! The blocks after the header are grouped as a compressed writer groups them: `group` chunk
//! blocks (with the table blocks between them) per group, or (`256 KiB`) as the writer does, by
//! bytes; each group is transformed with the library's transform and compressed on its own into a
//! whole file, which the `Reader` then reads back (decoding included: "read MB/s" is the decoded
//! bytes per second of reading every block; the plain file's figure is printed first).

use std::time::{Duration, Instant};

use phosphor_format::file::{kind, Block, Reader};

const EXTENTS: usize = 40;
const CHUNK: u32 = 5;

#[derive(Clone, Copy, Debug)]
enum Codec {
    Zstd(i32),
    Lz4,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Transform {
    None = 0,
    /// Each record's first word (the timestamp) as the wrapping difference from the previous
    /// record's, per chunk.
    Delta = 1,
    /// Delta, then the records' bytes transposed: byte 0 of every record, then byte 1, ...
    DeltaShuffle = 2,
}

/// The framed blocks of a file after its header: (kind, framed bytes).
fn blocks(file: &[u8]) -> Vec<(u32, &[u8])> {
    let mut at = 16;
    let mut out = Vec::new();
    while at + 8 <= file.len() {
        let kind = u32::from_le_bytes(file[at..at + 4].try_into().unwrap());
        let len = u32::from_le_bytes(file[at + 4..at + 8].try_into().unwrap()) as usize;
        let end = (at + 8 + len).min(file.len());
        out.push((kind, &file[at..end]));
        at = end;
    }
    out.remove(0); // the header
    out
}

/// Groups of framed blocks, each holding `n` chunk blocks (the trailer stays out, as it would).
fn groups(blocks: &[(u32, &[u8])], n: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut chunks = 0;
    for &(kind, b) in blocks {
        if kind == 6 {
            break;
        }
        cur.extend_from_slice(b);
        if kind == CHUNK {
            chunks += 1;
            if chunks == n {
                out.push(std::mem::take(&mut cur));
                chunks = 0;
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

struct Run {
    /// The whole file as the writer would write it: preamble and header, groups, trailer.
    file: Vec<u8>,
    compress: Duration,
    decode: Duration,
}

/// Compresses each group as the writer does (the library's transform, then the codec) into a
/// file, then reads the file back with the `Reader` (every block taken in, chunks' records
/// copied out), timing both.
fn run(head: &[u8], groups: &[Vec<u8>], trailer: &[u8], codec: Codec, t: Transform) -> Run {
    let mut zc = match codec {
        Codec::Zstd(l) => Some(zstd::bulk::Compressor::new(l).unwrap()),
        Codec::Lz4 => None,
    };
    let mut file = head.to_vec();
    let mut scratch = Vec::new();
    let mut packed = Vec::new();
    let start = Instant::now();
    for g in groups {
        scratch.clear();
        scratch.extend_from_slice(g);
        assert!(phosphor_format::file::transform_group(&mut scratch, t as u8));
        let (id, level) = match codec {
            Codec::Zstd(l) => {
                packed.resize(zstd::zstd_safe::compress_bound(scratch.len()), 0);
                let n = zc.as_mut().unwrap().compress_to_buffer(&scratch[..], &mut packed[..]).unwrap();
                packed.truncate(n);
                (1u8, l as i8 as u8)
            }
            Codec::Lz4 => {
                packed.resize(lz4_flex::block::get_maximum_output_size(scratch.len()), 0);
                let n = lz4_flex::block::compress_into(&scratch, &mut packed).unwrap();
                packed.truncate(n);
                (2, 0)
            }
        };
        file.extend_from_slice(&kind::COMPRESSED.to_le_bytes());
        file.extend_from_slice(&(packed.len() as u32 + 8).to_le_bytes());
        file.extend_from_slice(&[id, t as u8, level, 0]);
        file.extend_from_slice(&(g.len() as u32).to_le_bytes());
        file.extend_from_slice(&packed);
    }
    let compress = start.elapsed();
    file.extend_from_slice(trailer);
    let start = Instant::now();
    let chunks = read_blocks(&file);
    let decode = start.elapsed();
    assert_eq!(chunks, groups.iter().map(|g| count_chunks(g)).sum::<usize>());
    Run { file, compress, decode }
}

/// Reads every block of `file`; returns the chunks.
fn read_blocks(file: &[u8]) -> usize {
    let mut r = Reader::new(file).unwrap();
    let mut chunks = 0;
    while let Some(b) = r.next_block().unwrap() {
        if let Block::Chunk(c) = b {
            std::hint::black_box(c.records);
            chunks += 1;
        }
    }
    chunks
}

fn count_chunks(group: &[u8]) -> usize {
    let mut at = 0;
    let mut n = 0;
    while at + 8 <= group.len() {
        n += usize::from(u32::from_le_bytes(group[at..at + 4].try_into().unwrap()) == CHUNK);
        at += 8 + u32::from_le_bytes(group[at + 4..at + 8].try_into().unwrap()) as usize;
    }
    n
}

/// Groups as the writer makes them: blocks gathered until the next would pass `bytes`.
fn groups_by_bytes(blocks: &[(u32, &[u8])], bytes: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    for &(kind, b) in blocks {
        if kind == 6 {
            break;
        }
        if !cur.is_empty() && cur.len() + b.len() > bytes {
            out.push(std::mem::take(&mut cur));
        }
        cur.extend_from_slice(b);
        if cur.len() >= bytes {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let Some(path) = args.iter().find(|a| !a.starts_with("--")) else {
        eprintln!("usage: cargo bench -p phosphor-format --bench compress -- TRACE.phos [--quick]");
        return;
    };
    let quick = args.iter().any(|a| a == "--quick");
    let file = std::fs::read(path).expect("read the trace");
    let blocks = blocks(&file);
    let chunks = blocks.iter().filter(|b| b.0 == CHUNK).count();
    let events: u64 = blocks
        .iter()
        .filter(|b| b.0 == CHUNK && b.1.len() >= 8 + EXTENTS)
        .map(|b| u64::from(u32::from_le_bytes(b.1[8 + 36..8 + 40].try_into().unwrap())))
        .sum();
    let header_end = 16 + 8 + u32::from_le_bytes(file[20..24].try_into().unwrap()) as usize;
    let head = &file[..header_end];
    let trailer = blocks.iter().find(|b| b.0 == 6).map_or(&[][..], |b| b.1);
    let passes = if quick { 1 } else { 3 };
    let plain = (0..passes)
        .map(|_| {
            let start = Instant::now();
            assert_eq!(read_blocks(&file), chunks);
            start.elapsed()
        })
        .min()
        .unwrap();
    let mbs = |d: Duration| file.len() as f64 / d.as_secs_f64() / 1e6;
    println!(
        "{path}: {} bytes, {events} events ({:.2} B/event), {chunks} chunk blocks; the plain file reads at {:.0} MB/s",
        file.len(),
        file.len() as f64 / events as f64,
        mbs(plain)
    );
    println!("| codec | group | transform | ratio | B/event | compress MB/s | read MB/s (decoded) |");
    println!("|---|---|---|---|---|---|---|");
    let codecs = [Codec::Lz4, Codec::Zstd(-5), Codec::Zstd(-3), Codec::Zstd(-1), Codec::Zstd(1)];
    let sizes: &[usize] = if quick { &[0] } else { &[1, 4, 16, 64, 0] };
    for &n in sizes {
        // 0: the writer's grouping, by bytes.
        let gs = if n == 0 { groups_by_bytes(&blocks, 256 << 10) } else { groups(&blocks, n) };
        let label = if n == 0 { "256 KiB".to_string() } else { n.to_string() };
        for codec in codecs {
            for t in [Transform::None, Transform::Delta, Transform::DeltaShuffle] {
                let best = (0..passes)
                    .map(|_| run(head, &gs, trailer, codec, t))
                    .reduce(|a, b| Run {
                        file: a.file,
                        compress: a.compress.min(b.compress),
                        decode: a.decode.min(b.decode),
                    })
                    .unwrap();
                println!(
                    "| {codec:?} | {label} | {t:?} | {:.2} | {:.2} | {:.0} | {:.0} |",
                    file.len() as f64 / best.file.len() as f64,
                    best.file.len() as f64 / events as f64,
                    mbs(best.compress),
                    mbs(best.decode),
                );
            }
        }
    }
}

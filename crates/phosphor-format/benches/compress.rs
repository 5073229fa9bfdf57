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
//! blocks (with the table blocks between them) per group, each group compressed on its own.

use std::time::{Duration, Instant};

const RECORD: usize = 32;
const EXTENTS: usize = 40;
const CHUNK: u32 = 5;

#[derive(Clone, Copy, Debug)]
enum Codec {
    Zstd(i32),
    Lz4,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Transform {
    None,
    /// Each record's first word (the timestamp) as the wrapping difference from the previous
    /// record's, per chunk.
    Delta,
    /// Delta, then the records' bytes transposed: byte 0 of every record, then byte 1, ...
    DeltaShuffle,
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

/// Applies `t` to every chunk block of a group in place (into `scratch`).
fn transform(group: &[u8], t: Transform, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(group);
    if t == Transform::None {
        return;
    }
    let mut at = 0;
    let mut tmp = Vec::new();
    while at + 8 <= out.len() {
        let kind = u32::from_le_bytes(out[at..at + 4].try_into().unwrap());
        let len = u32::from_le_bytes(out[at + 4..at + 8].try_into().unwrap()) as usize;
        let body = at + 8;
        if kind == CHUNK && len >= EXTENTS {
            let recs = &mut out[body + EXTENTS..body + len];
            let n = recs.len() / RECORD;
            let mut prev = 0u64;
            for i in 0..n {
                let w = &mut recs[i * RECORD..i * RECORD + 8];
                let v = u64::from_le_bytes(w[..].try_into().unwrap());
                w.copy_from_slice(&v.wrapping_sub(prev).to_le_bytes());
                prev = v;
            }
            if t == Transform::DeltaShuffle {
                tmp.clear();
                tmp.resize(n * RECORD, 0);
                for i in 0..n {
                    for j in 0..RECORD {
                        tmp[j * n + i] = recs[i * RECORD + j];
                    }
                }
                recs[..n * RECORD].copy_from_slice(&tmp);
            }
        }
        at = body + len;
    }
}

/// The inverse of `transform`, in place.
fn untransform(buf: &mut [u8], t: Transform) {
    if t == Transform::None {
        return;
    }
    let mut at = 0;
    let mut tmp = Vec::new();
    while at + 8 <= buf.len() {
        let kind = u32::from_le_bytes(buf[at..at + 4].try_into().unwrap());
        let len = u32::from_le_bytes(buf[at + 4..at + 8].try_into().unwrap()) as usize;
        let body = at + 8;
        if kind == CHUNK && len >= EXTENTS {
            let recs = &mut buf[body + EXTENTS..body + len];
            let n = recs.len() / RECORD;
            if t == Transform::DeltaShuffle {
                tmp.clear();
                tmp.resize(n * RECORD, 0);
                for i in 0..n {
                    for j in 0..RECORD {
                        tmp[i * RECORD + j] = recs[j * n + i];
                    }
                }
                recs[..n * RECORD].copy_from_slice(&tmp);
            }
            let mut prev = 0u64;
            for i in 0..n {
                let w = &mut recs[i * RECORD..i * RECORD + 8];
                let v = u64::from_le_bytes(w[..].try_into().unwrap()).wrapping_add(prev);
                w.copy_from_slice(&v.to_le_bytes());
                prev = v;
            }
        }
        at = body + len;
    }
}

struct Run {
    stored: usize,
    compress: Duration,
    decompress: Duration,
}

fn run(groups: &[Vec<u8>], codec: Codec, t: Transform) -> Run {
    let mut stored = 0;
    let mut packed = Vec::new();
    let mut scratch = Vec::new();
    let mut zc = match codec {
        Codec::Zstd(l) => Some(zstd::bulk::Compressor::new(l).unwrap()),
        Codec::Lz4 => None,
    };
    let mut zd = zstd::bulk::Decompressor::new().unwrap();
    // Compress.
    let start = Instant::now();
    let mut outs = Vec::with_capacity(groups.len());
    for g in groups {
        transform(g, t, &mut scratch);
        packed.clear();
        match codec {
            Codec::Zstd(_) => {
                packed.reserve(zstd::zstd_safe::compress_bound(scratch.len()));
                zc.as_mut().unwrap().compress_to_buffer(&scratch, &mut packed).unwrap();
            }
            Codec::Lz4 => {
                packed.resize(lz4_flex::block::get_maximum_output_size(scratch.len()), 0);
                let n = lz4_flex::block::compress_into(&scratch, &mut packed).unwrap();
                packed.truncate(n);
            }
        }
        stored += packed.len() + 20; // the group block's framing and fields
        outs.push(packed.clone());
    }
    let compress = start.elapsed();
    // Decompress (and check).
    let mut buf = vec![0u8; groups.iter().map(Vec::len).max().unwrap_or(0)];
    let start = Instant::now();
    for (g, p) in groups.iter().zip(&outs) {
        let n = match codec {
            Codec::Zstd(_) => zd.decompress_to_buffer(p, &mut buf[..]).unwrap(),
            Codec::Lz4 => lz4_flex::block::decompress_into(p, &mut buf[..]).unwrap(),
        };
        untransform(&mut buf[..n], t);
        assert_eq!(n, g.len());
        std::hint::black_box(&buf[..n]);
    }
    let decompress = start.elapsed();
    assert!(groups.iter().zip(&outs).all(|(g, _)| !g.is_empty()));
    Run { stored, compress, decompress }
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
    let raw: usize = blocks.iter().map(|b| b.1.len()).sum();
    println!(
        "{path}: {} bytes, {events} events ({:.2} B/event), {chunks} chunk blocks, {raw} bytes of blocks",
        file.len(),
        file.len() as f64 / events as f64
    );
    println!("| codec | group | transform | ratio | B/event | compress MB/s | decompress MB/s |");
    println!("|---|---|---|---|---|---|---|");
    let codecs = [Codec::Lz4, Codec::Zstd(-5), Codec::Zstd(-3), Codec::Zstd(-1), Codec::Zstd(1)];
    let sizes: &[usize] = if quick { &[16] } else { &[1, 4, 16, 64] };
    let passes = if quick { 1 } else { 3 };
    for &n in sizes {
        let gs = groups(&blocks, n);
        let total: usize = gs.iter().map(Vec::len).sum();
        for codec in codecs {
            for t in [Transform::None, Transform::Delta, Transform::DeltaShuffle] {
                let best = (0..passes)
                    .map(|_| run(&gs, codec, t))
                    .reduce(|a, b| Run {
                        stored: a.stored,
                        compress: a.compress.min(b.compress),
                        decompress: a.decompress.min(b.decompress),
                    })
                    .unwrap();
                let mbs = |d: Duration| total as f64 / d.as_secs_f64() / 1e6;
                println!(
                    "| {codec:?} | {n} | {t:?} | {:.2} | {:.2} | {:.0} | {:.0} |",
                    total as f64 / best.stored as f64,
                    (best.stored + 16 + 100) as f64 / events as f64,
                    mbs(best.compress),
                    mbs(best.decompress),
                );
            }
        }
    }
}

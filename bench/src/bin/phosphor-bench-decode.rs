//! `phosphor-bench-decode MODE FILE [REPEAT]`: how fast a trace file reads, in events per second
//! (issue 38). The modes, each timed alone in this process (wall time, best of REPEAT, default 3):
//!
//! * `zstd`: the framing and zstd decompression of every compressed group, nothing else: the
//!   floor every reader of the file pays, to which the others are compared;
//! * `blocks`: `Reader::next_chunk` to the end (groups decoded, tables taken in, records
//!   copied), no event decoded;
//! * `decode`: every field of every event (`Chunk::events`), on one thread;
//! * `decode-ahead`: the same with `Reader::read_ahead` (zstd on a thread of its own);
//! * `all`: each of the above in turn, with their ratios to `zstd`.
//!
//! Peak memory: run it under `/usr/bin/time -v`, one mode at a time.

use std::fs::File;
use std::io::BufReader;
use std::time::Instant;

use phosphor::format::file::{kind, Reader, Value, BLOCK_HEADER_BYTES, PREAMBLE_BYTES};

/// A checksum of what was decoded, printed so that nothing is optimized away.
type Sum = u64;

fn open(path: &str) -> Reader<BufReader<File>> {
    let f = File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Reader::new(BufReader::with_capacity(1 << 16, f)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// zstd alone: the documented framing walked by hand, each group's bytes decompressed.
fn zstd_only(path: &str) -> (u64, Sum) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut z = zstd::bulk::Decompressor::new().expect("a zstd context");
    let mut out = Vec::new();
    let (mut at, mut decoded, mut sum) = (PREAMBLE_BYTES, 0u64, 0u64);
    while at + BLOCK_HEADER_BYTES <= bytes.len() {
        let k = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().expect("4 bytes")) as usize;
        let body = &bytes[at + BLOCK_HEADER_BYTES..at + BLOCK_HEADER_BYTES + len];
        if k == kind::COMPRESSED && body[0] == 1 {
            let n = u32::from_le_bytes(body[4..8].try_into().expect("4 bytes")) as usize;
            out.resize(n, 0);
            let got = z.decompress_to_buffer(&body[8..], &mut out[..]).expect("a zstd group");
            decoded += got as u64;
            sum = sum.wrapping_add(u64::from(out[got / 2]));
        }
        at += BLOCK_HEADER_BYTES + len;
    }
    (decoded, sum)
}

fn blocks(path: &str) -> (u64, Sum) {
    let mut r = open(path);
    let (mut records, mut sum) = (0u64, 0u64);
    while let Some(c) = r.next_chunk().expect("a whole file") {
        records += c.records.len() as u64;
        sum = sum.wrapping_add(c.extents.first_ts);
    }
    (records, sum)
}

/// Every field of every event, folded into a sum.
fn decode(path: &str, ahead: bool) -> (u64, Sum) {
    let mut r = open(path);
    if ahead {
        r = r.read_ahead();
    }
    let (mut events, mut sum) = (0u64, 0u64);
    while let Some(c) = r.next_chunk().expect("a whole file") {
        for e in c.events() {
            let e = e.expect("a well-formed event");
            events += 1;
            let mut s = u64::from(e.tid) ^ e.ts ^ u64::from(e.callsite.id) ^ e.offset;
            s ^= e.duration.unwrap_or(0) ^ e.async_id.unwrap_or(0) ^ u64::from(e.truncated);
            s ^= e.callsite.name.as_str().len() as u64;
            for (name, v) in e.args.iter().flatten() {
                s ^= name.len() as u64 ^ value(v);
            }
            for v in e.params.iter() {
                s ^= value(&v);
            }
            sum = sum.wrapping_add(s);
        }
    }
    (events, sum)
}

fn value(v: &Value<'_>) -> u64 {
    match *v {
        Value::I64(x) => x as u64,
        Value::U64(x) | Value::Pointer(x) => x,
        Value::F64(x) => x.to_bits(),
        Value::Bool(b) => u64::from(b),
        Value::Str(s) => s.len() as u64,
    }
}

/// Best wall time of `repeat` runs of `f`, in seconds, and what it counted.
fn time(repeat: usize, mut f: impl FnMut() -> (u64, Sum)) -> (f64, u64) {
    let mut best = f64::INFINITY;
    let mut counted = 0;
    for _ in 0..repeat {
        let t = Instant::now();
        let (n, sum) = f();
        best = best.min(t.elapsed().as_secs_f64());
        counted = n;
        std::hint::black_box(sum);
    }
    (best, counted)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(path)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: phosphor-bench-decode zstd|blocks|decode|decode-ahead|all FILE [REPEAT]");
        std::process::exit(2);
    };
    let repeat = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(3);
    let events = decode(path, false).0;
    let modes: Vec<&str> = match mode.as_str() {
        "all" => vec!["zstd", "blocks", "decode", "decode-ahead"],
        m => vec![m],
    };
    let mut zstd = None;
    println!("{path}: {events} events");
    for m in &modes {
        let (secs, counted) = match *m {
            "zstd" => time(repeat, || zstd_only(path)),
            "blocks" => time(repeat, || blocks(path)),
            "decode" => time(repeat, || decode(path, false)),
            "decode-ahead" => time(repeat, || decode(path, true)),
            other => panic!("unknown mode {other}"),
        };
        if *m == "zstd" {
            zstd = Some(secs);
        }
        let ratio = zstd.map_or(String::new(), |z| format!("  {:.2}× zstd", secs / z));
        println!(
            "{m:<13} {secs:>7.3} s  {:>6.1} M events/s  ({counted} counted){ratio}",
            events as f64 / secs / 1e6
        );
    }
}

//! Structure-aware fuzzing of everything that reads a *valid* trace file: the input does not
//! become the file's bytes; it describes a file (`phosphor-craft` writes it), so that every run
//! reaches past the reader's checks into the exporters and the statistics, with the shapes that
//! cost them most: strings up to megabytes shared by many entries, nesting a hundred thousand
//! deep, begins never closed, timestamps that go back, clock rates that are NaN or infinite, many
//! callsites, threads and chunks, redefined callsites, thread switches, dynamic names. The
//! viewer's index is built from it too, and window queries of every track must keep their bound;
//! the OTLP conversions (one and two readings, live) are checked on it and on a copy with one byte
//! damaged (`otlp_check.rs`).
//!
//! Two modes (the first byte): one of `phosphor-craft`'s hostile shapes with fuzzed sizes, or a
//! file built op by op. The file is read whole (it must be: the generator writes only valid
//! files), then by every exporter into `io::sink()`. Run it with `-rss_limit_mb` and `-timeout`
//! (`scripts/fuzz.sh` does) so that a blow-up of memory or time is a finding.

#![no_main]

mod otlp_check;

use std::io::sink;

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use phosphor_craft::{callsite, records, Backwards, ChunkStream, Shape, TraceWriter};
use phosphor_export::logs::{write_logs, LogFilter, LogOrder};
use phosphor_export::{chrome, folded, perfetto, TableOptions, TraceStats};
use phosphor_format::file::{ClockInfo, ClockKind, DropCounts, RawCallsite, Reader, Trailer};
use phosphor_format::{Phase, Record, FIRST_CALLSITE_ID};
use phosphor_view::{BuildOptions, Window};

/// Records a generated file may hold (64 MiB): bounds the generator, not what it finds.
const MAX_RECORDS: usize = 2 << 20;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let file = match u.arbitrary::<bool>() {
        Ok(true) => shape(&mut u).ok().and_then(|s| s.write(Vec::new()).ok()),
        Ok(false) => ops(&mut u).ok(),
        Err(_) => None,
    };
    if let Some(file) = file {
        read_everything(&file);
        // What is left of the input chooses the OTLP options, a byte to damage, the live path's.
        let options = otlp_check::options(&mut u).unwrap_or_default();
        let hold = u.int_in_range(0..=10_000_000u64).unwrap_or(1_000);
        let every = u.int_in_range(256..=5000u32).unwrap_or(1024);
        otlp_check::check(&file, &options, hold, every);
        if let Ok(at) = u.int_in_range(0..=file.len().saturating_sub(1)) {
            let mut damaged = file.clone();
            if let Some(b) = damaged.get_mut(at) {
                *b ^= u.int_in_range(1..=255u8).unwrap_or(0x5a);
            }
            otlp_check::check(&damaged, &options, hold, every);
        }
    }
});

/// A size: mostly small, sometimes one of the sizes that hurt (never once the input is used up,
/// so that short inputs stay cheap).
fn size(u: &mut Unstructured<'_>, small: u32, large: &[u32]) -> Result<u32> {
    if u.int_in_range(0..=3u8)? == 3 {
        Ok(*u.choose(large)?)
    } else {
        u.int_in_range(0..=small)
    }
}

fn clock_rate(u: &mut Unstructured<'_>) -> Result<f64> {
    const HOSTILE: [f64; 10] =
        [f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 0.0, -0.0, -2.5, 5e-324, f64::MAX, 1e-300, 0.37];
    if u.arbitrary()? {
        Ok(*u.choose(&HOSTILE)?)
    } else {
        u.arbitrary()
    }
}

/// One of `phosphor-craft`'s shapes, sized by the input.
fn shape(u: &mut Unstructured<'_>) -> Result<Shape> {
    let bytes = size(u, 4096, &[65_536, 1 << 20, 4 << 20])? as usize;
    let n = size(u, 64, &[1_000, 65_536, 250_000])?;
    let deep = size(u, 256, &[10_000, 100_000])?;
    Ok(match u.int_in_range(0..=11)? {
        0 => Shape::HugeCallsiteName { bytes, callsites: n, events: n.min(64) },
        1 => Shape::HugeThreadName { bytes, threads: n, events: n.min(64) },
        2 => Shape::UnclosedBegins { depth: deep },
        3 => Shape::NestedScopes { depth: deep },
        4 => {
            let order = if u.arbitrary()? { Backwards::Decreasing } else { Backwards::Alternating };
            Shape::BackwardTimestamps { events: size(u, 1_000, &[70_000, 200_000])?, order }
        }
        5 => Shape::ClockRate { ns_per_tick: clock_rate(u)? },
        6 => Shape::ManyCallsites { callsites: n },
        7 => Shape::ManyThreads { threads: n },
        8 => Shape::TinyChunks { chunks: n },
        9 => Shape::HugeArgs { events: n.min(8_000) },
        10 => Shape::LogWidthBomb { repeats: size(u, 64, &[4_096])?, events: u.int_in_range(0..=4)? },
        _ => Shape::DeepLongNames { depth: deep.min(4_000), name_bytes: bytes.min(65_536) },
    })
}

/// A string of `len` bytes of one pattern: a letter, a multi-byte char, format-string syntax, or
/// the widest format width.
fn pattern(u: &mut Unstructured<'_>, len: usize) -> Result<String> {
    let unit = *u.choose(&["x", "é", "{}", "{0:65536}", "{:?}", "}{", "\"\\", " ", "\u{2028}", "𝄞"])?;
    let mut s = unit.repeat(len / unit.len() + 1);
    let mut cut = len.min(s.len());
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    Ok(s)
}

/// A file built op by op: strings, callsites of every phase, thread names, then events on several
/// threads, with nests, runs, timestamp jumps, redefinitions and chunk sizes chosen by the input.
fn ops(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    let kind = *u.choose(&[ClockKind::Tsc, ClockKind::Monotonic, ClockKind::Realtime])?;
    let clock = ClockInfo {
        kind,
        ns_per_tick: clock_rate(u)?,
        origin_ticks: u.arbitrary()?,
        origin_monotonic_ns: u.arbitrary()?,
        origin_wall_ns: u.arbitrary()?,
        fallback_reason: None,
    };
    let io = |_| libfuzzer_sys::arbitrary::Error::IncorrectFormat;
    let mut w = TraceWriter::new(Vec::new(), clock, "fuzz").map_err(io)?;
    // Strings 0..3 as in every crafted file, then the input's.
    w.strings(&["craft", "", "fuzz.rs"]).map_err(io)?;
    let n_strings = u.int_in_range(1..=8)?;
    for _ in 0..n_strings {
        let len = size(u, 64, &[4_096, 65_536, 1 << 20])? as usize;
        let s = pattern(u, len)?;
        w.string(&s).map_err(io)?;
    }
    let string = |u: &mut Unstructured<'_>| -> Result<u32> { Ok(3 + u.int_in_range(0..=n_strings - 1)?) };
    let n_sites = size(u, 32, &[4_096, 100_000])?.max(1);
    let phase_of = |k: u32| Phase::from_code((k % 11) as u8 + 1).expect("codes 1 to 11");
    let mut sites = Vec::new();
    for k in 0..n_sites {
        let mut c = callsite(FIRST_CALLSITE_ID + k, phase_of(k), 3 + k % n_strings);
        if k < 64 {
            c.phase = phase_of(u.arbitrary()?);
            c.level = (c.phase == Phase::Log).then_some(phosphor_format::Level::Warn);
            c.strings[1] = string(u)?;
            c.strings[2] = string(u)?;
            c.dynamic_name = u.ratio(1, 4)?;
            c.flow = c.phase == Phase::Complete && u.ratio(1, 4)?;
        }
        sites.push(c);
    }
    w.callsites(sites.iter().copied()).map_err(io)?;
    let n_names = size(u, 8, &[10_000, 100_000])?;
    let name = string(u)?;
    w.threads((1..=n_names).map(|t| (t, name))).map_err(io)?;

    let mut streams: Vec<ChunkStream> = Vec::new();
    let mut current = 0usize;
    let mut ts: u64 = 0;
    let mut records = 0usize;
    let mut event = Vec::new();
    while !u.is_empty() && records < MAX_RECORDS {
        let op = u.int_in_range(0..=9)?;
        if op == 0 || streams.is_empty() {
            // A thread: a new one, or back to one already seen.
            let tid = if u.arbitrary()? || streams.is_empty() { u.int_in_range(1..=1_000_000)? } else { 0 };
            if tid != 0 {
                let capacity = *u.choose(&[127usize, 1, 2, 10_000])?;
                streams.push(ChunkStream::with_capacity(tid, capacity));
                current = streams.len() - 1;
            } else {
                current = u.choose_index(streams.len())?;
            }
            continue;
        }
        let site = sites[u.choose_index(sites.len())?];
        let s = &mut streams[current];
        match op {
            1 => ts = ts.wrapping_add(u.int_in_range(0..=1_000)?),
            2 => ts = ts.wrapping_sub(u.int_in_range(0..=1_000_000)?),
            3 => {
                let any = u.arbitrary()?;
                ts = *u.choose(&[0, u64::MAX, u64::MAX / 2, 1 << 63, any])?;
            }
            4 => s.skip(u.int_in_range(0..=3)?),
            5 => {
                // Redefine a callsite: same id, other phase, name or flags.
                let mut c = site;
                c.phase = phase_of(u.arbitrary()?);
                c.level = (c.phase == Phase::Log).then_some(phosphor_format::Level::Error);
                c.strings[1] = string(u)?;
                w.callsites([c]).map_err(io)?;
                sites[(c.id - FIRST_CALLSITE_ID) as usize] = c;
            }
            _ => {
                // A run of `repeat` events of one callsite, `step` ticks apart (backwards when
                // negative): a nest of begins, a run of ends, a flat run, a sawtooth.
                let repeat = size(u, 16, &[1_000, 10_000, 100_000])?.min((MAX_RECORDS - records) as u32 / 4);
                let step: i16 = u.arbitrary()?;
                let dur: u64 = *u.choose(&[0, 1, 10, 1_000_000, u64::MAX])?;
                let len = size(u, 32, &[8_000])? as usize;
                let text = pattern(u, len)?;
                let static_arg = if u.arbitrary()? { Some(string(u)?) } else { None };
                let run = Run { dur, text, static_arg };
                for k in 0..repeat {
                    ts = ts.wrapping_add_signed(i64::from(step));
                    event.clear();
                    fill(&mut event, &site, ts, u64::from(k), &run);
                    records += event.len();
                    s.push(&mut w, &event).map_err(io)?;
                }
            }
        }
    }
    for s in &mut streams {
        s.flush(&mut w).map_err(io)?;
    }
    let trailer = Trailer {
        dropped: DropCounts { buffer_full: u.arbitrary().unwrap_or(0), ..DropCounts::default() },
        saturation_markers: u.arbitrary().unwrap_or(0),
        chunks_overwritten: u.arbitrary().unwrap_or(0),
        ..Trailer::default()
    };
    w.finish(trailer).map_err(io)
}

/// What the events of one run share.
struct Run {
    /// Duration of complete and lock events; the bits of counter values.
    dur: u64,
    /// The dynamic name of events of `dyn`-named callsites.
    text: String,
    /// A static string argument (a string index) beside the dynamic name.
    static_arg: Option<u32>,
}

/// The records of the `k`-th event of a run of callsite `site`.
fn fill(out: &mut Vec<Record>, site: &RawCallsite, ts: u64, k: u64, run: &Run) {
    let (id, dur) = (site.id, run.dur);
    match site.phase {
        Phase::Begin | Phase::End | Phase::Instant if site.dynamic_name => {
            out.extend(records::with_string(ts, id, &run.text, run.static_arg))
        }
        Phase::Begin | Phase::End | Phase::Instant => out.extend(records::begin(ts, id)),
        Phase::Complete | Phase::LockWait | Phase::LockHeld => out.extend(records::complete(ts, id, dur)),
        Phase::Counter | Phase::Data => out.extend(records::counter(ts, id, f64::from_bits(dur ^ k))),
        Phase::AsyncBegin | Phase::AsyncEnd => out.extend(records::async_edge(ts, id, k % 7)),
        Phase::Log => out.extend(records::log(ts, id, &[k, dur, ts])),
    }
}

/// Reads the file whole, then runs every exporter and the statistics on it.
fn read_everything(file: &[u8]) {
    let reader = || Reader::new(file).expect("a crafted file has a header");
    let mut events = 0u64;
    reader().for_each_event(|_| events += 1).expect("a crafted file reads whole");
    let _ = perfetto::write_perfetto(reader(), sink());
    let _ = chrome::write_chrome_json(reader(), sink());
    let _ = folded::write_folded(reader(), sink());
    let _ = folded::write_flamegraph(reader(), sink(), "fuzz");
    let _ = write_logs(reader(), sink(), &LogFilter::default(), &mut LogOrder::default());
    // A small reorder window, so that it overflows and lets logs out early.
    let small = LogFilter { json: true, window_bytes: Some(64 << 10), ..LogFilter::default() };
    let _ = write_logs(reader(), sink(), &small, &mut LogOrder::default());
    if let Ok(stats) = TraceStats::from_reader(reader()) {
        let _ = stats.to_string();
        let _ = stats.write_json(sink(), TableOptions { top: None, ..TableOptions::default() });
    }
    view(file, events);
}

/// The viewer's index of the file, and window queries of every track at a few zooms.
fn view(file: &[u8], events: u64) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("t.phos");
    std::fs::write(&path, file).expect("the file written");
    let options = BuildOptions { sort_dir: Some(dir.path().to_owned()), ..BuildOptions::default() };
    let index = phosphor_view::open(&path, None, &options).expect("a crafted file is indexed");
    assert_eq!(index.meta.events, events, "the index read every event");
    assert_eq!(index.meta.read_error, None);
    let (a, b) = (index.meta.start_ticks, index.meta.end_ticks);
    let windows = [
        Window::new(0, u64::MAX, 1600),
        Window::new(a, b, 1600),
        Window::new(a, a + (b - a) / 1000, 7),
        Window::new(b, b, 1),
    ];
    for w in windows {
        for t in index.threads.iter().chain(&index.asyncs) {
            let levels = index.slices_in(t, w);
            let pixels = (w.end - w.start) / w.pixel + 1;
            for level in &levels {
                assert!(level.len() as u64 <= 2 * pixels + 2, "{} items for {pixels} pixels", level.len());
            }
            let _ = index.points_in(t, w);
        }
        for c in 0..index.counters.len() {
            let _ = index.samples_in(c, w);
        }
    }
}

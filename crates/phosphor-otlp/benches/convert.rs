//! Trace files to OTLP spans: how many spans per second each way of converting makes, on one
//! realistic trace recorded in-process before divan starts, next to the Perfetto conversion of the
//! same file (the tools' main export, as the reference).
//!
//! The trace: 4 threads × 8,000 frames, each frame a scope with an argument holding 4 to 7 nested
//! scopes (one with a string argument, one a lock wait and hold), a log with two parameters, and
//! every 4th frame an async slice begun and ended on the same thread: 248,000 spans from 288,000
//! events.
//!
//! - `protobuf_once`: `convert`, what `phosphor convert --to otlp` does (one reading; each
//!   thread's slices held by the trace model until their tree is known).
//! - `json_once`: the same to OTLP JSON Lines.
//! - `min_duration` and `slowest_roots`: with a selection (`--min-duration 2us`, `--slowest 10`).
//! - `live_assembler`: the live path's `Assembler` (holding a root 1 ms of trace time for an
//!   enclosing scope, drained every 1,024 events, spans recycled) without encoding.
//! - `perfetto`: `phosphor_export::perfetto::write_perfetto` of the same file.
//!
//! Counters are spans (events for `perfetto`), so divan prints spans per second.
//!
//! Run with `cargo bench -p phosphor-otlp --bench convert`; BENCHMARKS.md has the figures.

use std::sync::LazyLock;

use divan::counter::ItemsCount;
use divan::Bencher;
use phosphor::{
    trace_async_begin, trace_async_end, trace_lock_guard, trace_log, trace_scope, BufferMode, TraceConfig,
    TraceLog, TraceLogConfig,
};
use phosphor_format::file::Reader;
use phosphor_otlp::assemble::{AssembleOptions, Assembler};
use phosphor_otlp::convert::{convert, ConvertOptions, Converted, Encoding};
use phosphor_otlp::select::Selection;

struct Trace {
    file: Vec<u8>,
    spans: u64,
    events: u64,
}

static TRACE: LazyLock<Trace> = LazyLock::new(record);

fn record() -> Trace {
    let log = TraceLog::new(TraceLogConfig::new()).expect("a trace log");
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 26)).expect("started");
    let lock = std::sync::Mutex::new(0u64);
    let work = |seed: u64| {
        for i in 0..8_000u64 {
            trace_scope!(log: &log, "app", "frame", "i" => i);
            if i % 4 == 0 {
                trace_async_begin!(log: &log, "io", "request", seed * 10_000 + i);
            }
            for j in 0..(i + seed) % 4 + 2 {
                trace_scope!(log: &log, "app", "update", "j" => j);
                let mut x = i ^ j;
                for _ in 0..50 {
                    x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(7);
                }
                std::hint::black_box(x);
            }
            {
                trace_scope!(log: &log, "app", "render", "pass" => "main");
                trace_log!(log: &log, info, "app", "frame {} took {} steps", i, seed);
            }
            {
                let g = trace_lock_guard!(log: &log, "app", "state", lock.lock().unwrap());
                std::hint::black_box(*g);
            }
            if i % 4 == 0 {
                trace_async_end!(log: &log, "io", "request", seed * 10_000 + i);
            }
        }
    };
    std::thread::scope(|s| {
        for seed in 0..4 {
            let work = &work;
            s.spawn(move || work(seed));
        }
    });
    log.stop();
    let trace = log.take_trace().expect("a trace");
    let file = trace.write_to(Vec::new()).expect("written");
    let mut events = 0u64;
    Reader::new(file.as_slice()).unwrap().for_each_event(|_| events += 1).unwrap();
    let mut out = Vec::new();
    let c =
        convert(&mut Reader::new(file.as_slice()).unwrap(), &ConvertOptions::default(), &mut out).unwrap();
    assert_eq!(c.stats.evicted_roots + c.stats.unclosed + c.stats.unmatched_ends, 0, "{:?}", c.stats);
    Trace { spans: c.spans, file, events }
}

fn once(options: &ConvertOptions) -> Converted {
    let mut out = Vec::with_capacity(64 << 20);
    convert(&mut Reader::new(TRACE.file.as_slice()).unwrap(), options, &mut out).unwrap()
}

fn spans<'a, 'b>(b: Bencher<'a, 'b>) -> Bencher<'a, 'b> {
    b.counter(ItemsCount::new(TRACE.spans))
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn protobuf_once(b: Bencher) {
    spans(b).bench(|| once(&ConvertOptions::default()));
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn json_once(b: Bencher) {
    let options = ConvertOptions { encoding: Encoding::Json, ..ConvertOptions::default() };
    spans(b).bench(|| once(&options));
}

fn selected(selection: Selection) -> ConvertOptions {
    ConvertOptions {
        assemble: AssembleOptions { selection, ..AssembleOptions::default() },
        ..ConvertOptions::default()
    }
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn min_duration(b: Bencher) {
    let options = selected(Selection { min_duration_ns: Some(2_000), ..Selection::default() });
    spans(b).bench(|| once(&options));
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn slowest_roots(b: Bencher) {
    let options = selected(Selection { slowest_roots: Some(10), ..Selection::default() });
    spans(b).bench(|| once(&options));
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn live_assembler(b: Bencher) {
    spans(b).bench(|| {
        let mut reader = Reader::new(TRACE.file.as_slice()).unwrap();
        let options = AssembleOptions { hold_ns: Some(1_000_000), ..AssembleOptions::default() };
        let mut asm = Assembler::new(reader.header(), options);
        let (mut out, mut n) = (Vec::new(), 0u32);
        reader
            .for_each_event(|e| {
                asm.push(e);
                n = n.wrapping_add(1);
                if n % 1024 == 0 {
                    asm.drain(&mut out);
                    asm.recycle(&mut out);
                }
            })
            .unwrap();
        asm.finish(&mut out);
        out.len()
    });
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn perfetto(b: Bencher) {
    b.counter(ItemsCount::new(TRACE.events)).bench(|| {
        let mut out = Vec::with_capacity(64 << 20);
        phosphor_export::perfetto::write_perfetto(Reader::new(TRACE.file.as_slice()).unwrap(), &mut out)
            .unwrap();
        out.len()
    });
}

fn main() {
    let t = &*TRACE;
    eprintln!("trace: {} events, {} spans, {} bytes", t.events, t.spans, t.file.len());
    divan::main();
}

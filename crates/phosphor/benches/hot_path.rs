//! The hot-path benchmark: what one event costs the calling thread, next to the limit loop.
//!
//! Every scenario runs in this one process, on one thread, with one trace running on the global
//! log for the whole run: a 64 MiB Ring buffer (so it never fills), whose category filter excludes
//! `off`. Each sample is a fixed 10,000 events, so divan's figures are per event. The limit loop is
//! the floor every tracer is measured against (see PEERS.md): one raw `rdtsc` and one 32-byte store
//! into a thread-local ring, with the same loop around it as the other scenarios.
//!
//! Before divan starts, `main` writes one ring's worth of events, so the measured events land in
//! pages that are already mapped and chunks that are being reused, as in a long-running trace.
//! After divan, it stops the trace and checks that every emitted event is accounted for:
//! `recorded + dropped == emitted`, the drops being the Ring's overwrites.
//!
//! The binary also holds 10,000 extra registered points (`ten_thousand_points`), to show that the
//! number of points does not change what one event costs.
//!
//! Run with `cargo bench -p phosphor --bench hot_path`; BENCHMARKS.md has the figures.

use std::sync::atomic::{AtomicU64, Ordering};

use divan::{black_box, Bencher};
use phosphor::{BufferMode, TraceConfig, TraceLog, TraceLogConfig};
use phosphor_limit::limit_step;

/// Events per divan sample.
const SAMPLE_SIZE: u32 = 10_000;
/// Samples per scenario: 10 M events each.
const SAMPLE_COUNT: u32 = 1_000;
/// The global trace's Ring buffer.
const RING_BYTES: usize = 64 << 20;
/// The Ring buffer of the independent log in `instant_small_ring`: 64 chunks, which stay in cache.
const SMALL_RING_BYTES: usize = 256 << 10;

/// Events that passed their enabled check on the global log, for the accounting check in `main`.
static EMITTED: AtomicU64 = AtomicU64::new(0);

fn count_emitted(n: u64) {
    // Relaxed: a tally read by the same thread after divan returns.
    EMITTED.fetch_add(n, Ordering::Relaxed);
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn limit_loop(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        limit_step(i, 7);
    });
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn instant_2_int_args(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_instant!("bench", "instant", "a" => i as i64, "b" => 7u64);
    });
    count_emitted(i);
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn scope(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_scope!("bench", "scope");
    });
    count_emitted(i);
}

/// A scope whose callsite a trigger watches (`bench/scope_armed>10s`, armed in `main`), which
/// never fires: the armed path reads the clock once in the guard, records the slice with that
/// explicit end, and compares the duration with the trigger's threshold out of line.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn scope_armed(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_scope!("bench", "scope_armed");
    });
    count_emitted(i);
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn counter(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_counter!("bench", "counter", i);
    });
    count_emitted(i);
}

/// A callsite whose category the trace excludes: the cached-state check and nothing else.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn disabled_category(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_instant!("off", "disabled", "a" => i as i64, "b" => 7u64);
    });
}

/// `#[phosphor::trace]` on a function: a scope, as `scope` is.
#[phosphor::trace(category = "bench", name = "attribute")]
#[inline(always)]
fn attributed() {}

/// `#[phosphor::trace]` on a function whose category the trace excludes.
#[phosphor::trace(category = "off", name = "attribute_disabled", args(a))]
#[inline(always)]
fn attributed_disabled(a: u64) {
    black_box(a);
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn attribute_scope(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        attributed();
    });
    count_emitted(i);
}

/// The attribute on a disabled callsite: the cached-state check, as `disabled_category`.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn attribute_disabled(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        attributed_disabled(i);
    });
}

/// For information: a short dynamic string is copied into a continuation record.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn instant_dynamic_str(bencher: Bencher) {
    let s: &str = black_box("request-42");
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_instant!("bench", "dyn_str", "s" => s);
    });
    count_emitted(i);
}

/// A deferred-format log with three integer parameters (`trace_log!`): two records (descriptor and
/// parameter 0 in the slots, parameters 1 and 2 in a continuation record); nothing is formatted.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn log_3_ints(bench: Bencher) {
    let mut i = 0u64;
    bench.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_log!(info, "bench", "item {} of {} took {} ns", i, 7u64, i >> 3);
    });
    count_emitted(i);
}

/// A 16-byte dynamic string argument, copied into the event (a continuation record).
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn instant_dyn_str_16(bencher: Bencher) {
    let s: &str = black_box("request-4242-abc");
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_instant!("bench", "dyn_str_16", "s" => s);
    });
    count_emitted(i);
}

/// The same 16-byte string interned (`phosphor::intern`): hashed and found in the interner, then
/// stored by address in one record.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn instant_interned_16(bencher: Bencher) {
    let s: &str = black_box("request-4242-abc");
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_instant!("bench", "interned_16", "s" => phosphor::intern(s));
    });
    count_emitted(i);
}

/// A log of a level the trace filters out (`TraceConfig::log_level`): the cached-state check only.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn disabled_log_level(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_log!(trace, "bench", "item {} of {} took {} ns", i, 7u64, i >> 3);
    });
}

/// A histogram point (`trace_histogram!`): no event, four relaxed atomic updates.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn histogram_point(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_histogram!("bench", "histogram", i & 0xffff);
    });
}

/// An event named at run time by a `PString` chosen among static ones (Palanteer's `plString_t`):
/// stored by address like a static name, so it should cost what `instant_2_int_args` costs.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn instant_pstring_name(bencher: Bencher) {
    const NAMES: [phosphor::PString; 2] = [phosphor::pstr!("read"), phosphor::pstr!("write")];
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_instant!("bench", dyn NAMES[(i & 1) as usize], "a" => i as i64);
    });
    count_emitted(i);
}

/// For information: an uncontended `std::sync::Mutex` locked and released, untraced: the floor
/// under `lock_guard`.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn lock_untraced(bencher: Bencher) {
    let m = std::sync::Mutex::new(0u64);
    bencher.bench_local(|| {
        let mut g = m.lock().unwrap();
        *g = g.wrapping_add(1);
    });
    black_box(m);
}

/// `trace_lock_guard!` with a literal name and no arguments around the same uncontended lock: two
/// events (the wait and the held slice), three clock reads.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn lock_guard(bencher: Bencher) {
    let m = std::sync::Mutex::new(0u64);
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        let mut g = phosphor::trace_lock_guard!("bench", "lock", m.lock().unwrap());
        *g = g.wrapping_add(1);
    });
    count_emitted(2 * i);
}

/// `lock_guard` with two integer arguments, recorded on both events (each then takes two
/// records).
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn lock_guard_2_args(bencher: Bencher) {
    let m = std::sync::Mutex::new(0u64);
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        let mut g = phosphor::trace_lock_guard!("bench", "lock_args", m.lock().unwrap(), "a" => i as i64, "b" => 7u64);
        *g = g.wrapping_add(1);
    });
    count_emitted(2 * i);
}

/// `lock_guard` named at run time by a [`PString`](phosphor::PString), which costs what a literal
/// name costs: the name is argument 0, so each event is still one record.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn lock_guard_dyn_name(bencher: Bencher) {
    const NAMES: [phosphor::PString; 2] = [phosphor::pstr!("lock_a"), phosphor::pstr!("lock_b")];
    let m = std::sync::Mutex::new(0u64);
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        let mut g = phosphor::trace_lock_guard!("bench", dyn NAMES[(i & 1) as usize], m.lock().unwrap());
        *g = g.wrapping_add(1);
    });
    count_emitted(2 * i);
}

/// A callsite whose category the trace takes but which a point rule disabled
/// (`points::disable(name=...)`): the same cached-state check as `disabled_category`.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn disabled_point(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_instant!("bench", "disabled_by_rule", "a" => i as i64, "b" => 7u64);
    });
}

/// 10,000 more registered points (statics in the linker section, all given ids by
/// `points::list()` in `main`): the recording path reads only its own callsite's state word, so
/// the scenarios above cost the same as without them.
#[allow(dead_code)]
fn ten_thousand_points() {
    macro_rules! ten {
        ($($body:tt)*) => {
            { $($body)*; } { $($body)*; } { $($body)*; } { $($body)*; } { $($body)*; }
            { $($body)*; } { $($body)*; } { $($body)*; } { $($body)*; } { $($body)*; }
        };
    }
    ten!(ten!(ten!(ten!(phosphor::__phosphor_callsite!(POINT, "many", "point", Instant, ["", ""])))));
}

/// `instant_2_int_args` into an independent log whose 64 MiB Ring lives in a memory-mapped ring
/// file (`TraceConfig::file_backed`): the flight recorder that survives `SIGKILL`. The file is in
/// the system's temporary directory. Compare with `instant_2_int_args` (heap, same size).
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn instant_file_backed(bencher: Bencher) {
    let path = std::env::temp_dir().join(format!("phosphor-bench-{}.ring", std::process::id()));
    let log = TraceLog::new(TraceLogConfig::default()).expect("a free log slot");
    log.start(TraceConfig::new(BufferMode::Ring, RING_BYTES).file_backed(&path)).expect("a ring file");
    let warm = (RING_BYTES / 32) as u64;
    for i in 0..warm {
        phosphor::trace_instant!(log: &log, "bench", "warm_file", "a" => i as i64, "b" => 7u64);
    }
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_instant!(log: &log, "bench", "instant_file", "a" => i as i64, "b" => 7u64);
    });
    log.stop();
    let stats = log.stats();
    assert_eq!(stats.recorded + stats.dropped.total(), i + warm, "file-backed ring lost events: {stats}");
    drop(log.take_trace());
    let _ = std::fs::remove_file(&path);
}

/// For information: `instant_2_int_args` into an independent log with a 256 KiB Ring, whose chunks
/// stay in cache. The gap to `instant_2_int_args` is the cost of writing to memory that is not
/// cached (the 64 MiB ring is swept once every 2 M events).
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn instant_small_ring(bencher: Bencher) {
    let log = TraceLog::new(TraceLogConfig::default()).expect("a free log slot");
    log.start(TraceConfig::new(BufferMode::Ring, SMALL_RING_BYTES)).expect("a fresh log");
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_instant!(log: &log, "bench", "instant_small", "a" => i as i64, "b" => 7u64);
    });
    log.stop();
    let stats = log.stats();
    assert_eq!(stats.recorded + stats.dropped.total(), i, "small ring lost events: {stats}");
}

fn main() {
    let log = TraceLog::global();
    let config = TraceConfig::new(BufferMode::Ring, RING_BYTES)
        .categories("-off")
        .expect("a valid filter")
        .log_level(phosphor::Level::Debug)
        .trigger("bench/scope_armed>10s".parse().expect("a valid trigger"))
        .trigger_dir(std::env::temp_dir().join("phosphor-bench-triggers"));
    log.start(config).expect("no trace is running yet");
    let matched = phosphor::points::disable("name=disabled_by_rule".parse().expect("a valid selector"));
    assert_eq!(matched, 1);
    let points = phosphor::points::list();
    let many = points.iter().filter(|p| p.category == "many").count();
    assert_eq!(many, 10_000, "the 10,000 extra points are registered");
    println!("registered points: {}", points.len());

    let warm = (RING_BYTES / 32) as u64;
    for i in 0..warm {
        phosphor::trace_instant!("bench", "warm_up", "a" => i as i64, "b" => 7u64);
    }
    count_emitted(warm);

    divan::main();

    log.stop();
    let stats = log.stats();
    // Relaxed: every increment was made by this thread.
    let emitted = EMITTED.load(Ordering::Relaxed);
    let accounted = stats.recorded + stats.dropped.total();
    println!(
        "\nglobal trace: emitted {emitted}, recorded {}, dropped {} (overwritten by the Ring: {})",
        stats.recorded,
        stats.dropped.total(),
        stats.dropped.overwritten
    );
    assert_eq!(accounted, emitted, "events unaccounted for:\n{stats}");
    assert_eq!(stats.dropped.total(), stats.dropped.overwritten, "drops other than overwrites:\n{stats}");
    assert_eq!(log.triggers().fired, 0, "the armed scope's trigger never fires");
}

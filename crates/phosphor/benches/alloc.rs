//! What `phosphor::alloc::Traced` costs (issue 23 §3): one allocation and free of 64 bytes through
//! `Traced<System>` next to `System` itself, and a scope whose trace counts allocations next to the
//! limit loop (the uncounted scope is `hot_path`'s `scope`).
//!
//! `Traced<System>` is this binary's global allocator, so its threads have their slots as in a
//! program that installs it. The allocator scenarios call `GlobalAlloc` directly on a `System` and
//! on a `Traced<System>`, so both pay the same call. The global log runs a 64 MiB Ring trace with
//! `allocations(true)` for the whole run; after divan, `main` checks that every emitted event
//! (each scope: its slice and its `scope_alloc`) is accounted for.
//!
//! Run with `cargo bench -p phosphor --bench alloc`; BENCHMARKS.md has the figures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use divan::{black_box, Bencher};
use phosphor::alloc::Traced;
use phosphor::{BufferMode, TraceConfig, TraceLog};
use phosphor_limit::limit_step;

#[global_allocator]
static GLOBAL: Traced<System> = Traced::new(System);

/// The same wrapper, called directly like `System` is.
static TRACED: Traced<System> = Traced::new(System);

/// Operations per divan sample.
const SAMPLE_SIZE: u32 = 10_000;
/// Samples per scenario.
const SAMPLE_COUNT: u32 = 1_000;
const RING_BYTES: usize = 64 << 20;

/// Events that passed their enabled check, for the accounting check in `main`.
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

fn alloc_free(bencher: Bencher, a: &dyn GlobalAlloc) {
    let layout = Layout::from_size_align(64, 8).expect("a valid layout");
    bencher.bench_local(|| {
        // SAFETY: a valid layout of non-zero size; the block is freed with the same layout.
        unsafe {
            let p = a.alloc(black_box(layout));
            assert!(!p.is_null());
            a.dealloc(black_box(p), layout);
        }
    });
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn alloc_free_64_system(bencher: Bencher) {
    alloc_free(bencher, &System);
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn alloc_free_64_traced(bencher: Bencher) {
    alloc_free(bencher, &TRACED);
}

/// A scope of a trace that counts allocations: its slice and its `scope_alloc` instant.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn scope_counting(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_scope!("bench", "scope_counting");
    });
    count_emitted(2 * i);
}

/// The same scope around one 64-byte `Box` (the global allocator: `Traced`).
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn scope_counting_one_box(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_scope!("bench", "scope_counting_one_box");
        drop(black_box(Box::new([0u8; 64])));
    });
    count_emitted(2 * i);
}

fn main() {
    let log = TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Ring, RING_BYTES).allocations(true))
        .expect("no trace is running yet");
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
    println!(
        "\nglobal trace: emitted {emitted}, recorded {}, dropped {}",
        stats.recorded,
        stats.dropped.total()
    );
    assert_eq!(stats.recorded + stats.dropped.total(), emitted, "events unaccounted for:\n{stats}");
    assert_eq!(stats.dropped.total(), stats.dropped.overwritten, "drops other than overwrites:\n{stats}");
    assert_eq!(phosphor::alloc::unmatched_scopes(), 0, "every counting scope found its mark");
}

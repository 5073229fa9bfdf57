//! What a probe site costs while no tool is attached, next to the limit loop.
//!
//! The limit loop is the floor Phosphor measures every event against (see
//! `crates/phosphor/benches/hot_path.rs`): one raw `rdtsc` and one 32-byte store into a
//! thread-local ring. A probe site with nothing attached is a `nop` and the moves that put its
//! arguments in registers; a disabled semaphore check is one load and a branch. Each sample is a
//! fixed 10,000 iterations of the same loop, so divan's figures are per iteration.
//!
//! Run with `cargo bench -p phosphor-usdt --bench probe_site`.

use divan::{black_box, Bencher};
use phosphor_limit::limit_step;
use phosphor_usdt::{sdt, sdt_define_semaphore, sdt_enabled, sdt_with_semaphore};

/// Iterations per divan sample.
const SAMPLE_SIZE: u32 = 10_000;
/// Samples per scenario: 10 M iterations each.
const SAMPLE_COUNT: u32 = 1_000;

sdt_define_semaphore!(bench, gated);

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn limit_loop(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        limit_step(i, 7);
    });
}

/// The loop alone: what every scenario pays besides its probe.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn empty_loop(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        black_box(i);
    });
}

/// A probe with two arguments, as `limit_loop` stores two: the nop and two register moves.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn sdt_2_args(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        sdt!(bench, two, black_box(i), 7u64);
    });
}

/// A probe with twelve arguments, the most: twelve registers to fill.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn sdt_12_args(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        let x = black_box(i);
        sdt!(
            bench, twelve, x, x as i8, x as i16, x as i32, x as u8, x as u16, x as u32, -1i64, 2usize, true,
            'c', 9isize
        );
    });
}

/// `sdt_enabled!` while nothing is attached: one load of the semaphore and a branch.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn sdt_enabled_off(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        if sdt_enabled!(bench, gated) {
            black_box(i);
        }
    });
}

/// `sdt_with_semaphore!` while nothing is attached: the check, and an argument never computed.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn sdt_with_semaphore_off(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        sdt_with_semaphore!(bench, gated, black_box(i).count_ones(), i);
    });
}

fn main() {
    divan::main();
}

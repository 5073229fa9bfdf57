//! Issue 39, defect 13: CPU sample stacks as deep as the code's, named. A thread spins at the end
//! of a chain of 30 `#[inline(never)]` functions (this test crate is built without frame
//! pointers, the default) while the system context records; the samples of that thread, read from
//! the saved trace and symbolized as `phosphor view` and `phosphor stats` do (`Symbolizer` on the
//! trace's mappings), hold the whole chain, innermost first. The kernel's frame-pointer walk alone
//! gave one or two frames here, and made-up addresses beyond them.
//!
//! Where the kernel refuses perf events (a container's seccomp, `perf_event_paranoid` 3), the test
//! says so and passes.

use std::hint::black_box;
use std::time::{Duration, Instant};

use phosphor::format::system::Availability;
use phosphor::{trace_instant, trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig};
use phosphor_export::symbolize::Symbolizer;

/// Functions in the chain.
const DEPTH: usize = 30;

fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a pointer to a timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// The innermost function: spins until this thread has run until `until` (its CPU time), in its
/// own instructions (one clock read per million rounds).
#[inline(never)]
fn deep_29(until: u64) -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    loop {
        let mut i = 0u32;
        while i < 1_000_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            i += 1;
        }
        if thread_cpu_ns() >= until {
            return x;
        }
    }
}

macro_rules! chain {
    ($($name:ident -> $next:ident),* $(,)?) => {$(
        #[inline(never)]
        fn $name(until: u64) -> u64 {
            // Work after the call, so that it is not a tail call and this frame stays.
            black_box($next(black_box(until))).rotate_left(1)
        }
    )*};
}

chain!(
    deep_00 -> deep_01,
    deep_01 -> deep_02,
    deep_02 -> deep_03,
    deep_03 -> deep_04,
    deep_04 -> deep_05,
    deep_05 -> deep_06,
    deep_06 -> deep_07,
    deep_07 -> deep_08,
    deep_08 -> deep_09,
    deep_09 -> deep_10,
    deep_10 -> deep_11,
    deep_11 -> deep_12,
    deep_12 -> deep_13,
    deep_13 -> deep_14,
    deep_14 -> deep_15,
    deep_15 -> deep_16,
    deep_16 -> deep_17,
    deep_17 -> deep_18,
    deep_18 -> deep_19,
    deep_19 -> deep_20,
    deep_20 -> deep_21,
    deep_21 -> deep_22,
    deep_22 -> deep_23,
    deep_23 -> deep_24,
    deep_24 -> deep_25,
    deep_25 -> deep_26,
    deep_26 -> deep_27,
    deep_27 -> deep_28,
    deep_28 -> deep_29
);

/// This thread's kernel id, as traces carry it.
fn gettid() -> u32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    (unsafe { libc::gettid() }) as u32
}

/// Attaches this thread to `log` and waits until the collector watches it (a snapshot shows one
/// of its switches; each sleep makes two).
fn watched(log: &TraceLog) {
    trace_instant!(log: log, "stacks", "attach");
    let me = gettid();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !log.snapshot().unwrap().system().unwrap().switches.iter().any(|s| s.tid == me) {
        assert!(Instant::now() < deadline, "the collector never watched this thread");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn samples_of_a_thread_thirty_calls_deep_hold_the_whole_chain_symbolized() {
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20).context_switches(true).cpu_samples(999)).unwrap();
    if let Availability::Unavailable(why) = log.system_status().unwrap().samples {
        eprintln!("CPU samples unavailable here, not checked: {why}");
        return;
    }
    let tid = std::thread::scope(|s| {
        s.spawn(|| {
            watched(&log);
            trace_scope!(log: &log, "stacks", "deep");
            black_box(deep_00(thread_cpu_ns() + 300_000_000));
            gettid()
        })
        .join()
        .unwrap()
    });
    log.stop();
    let trace = log.take_trace().unwrap();
    let dir = std::env::temp_dir().join(format!("phosphor-stacks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("deep.phos");
    trace.save(&file).unwrap();
    let saved =
        phosphor::format::file::Reader::new(std::io::BufReader::new(std::fs::File::open(&file).unwrap()));
    let mut symbolizer = Symbolizer::new();
    let mut samples = Vec::new();
    let mut reader = saved.unwrap();
    while let Some(block) = reader.next_block().unwrap() {
        if let phosphor::format::file::Block::System(batch) = block {
            symbolizer.add_mappings(&batch.mappings);
            samples.extend(batch.samples.iter().filter(|s| s.tid == tid).cloned());
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let chain: Vec<String> = (0..DEPTH).rev().map(|i| format!("deep_{i:02}")).collect();
    let mut whole = 0;
    let mut deepest = 0;
    let mut example = Vec::new();
    for s in &samples {
        // Each frame's functions (inlined ones too), innermost first; a caller's frame looked up
        // inside its call.
        let names: Vec<String> = s
            .frames
            .iter()
            .enumerate()
            .flat_map(|(i, &a)| {
                symbolizer.frames(a, i > 0).iter().map(|f| f.function.clone()).collect::<Vec<_>>()
            })
            .collect();
        // The chain's functions in the stack, innermost first, each after the one inside it.
        let mut found = 0;
        // A name from the symbol table is qualified (`it::system_stacks::deep_05`); one from
        // DWARF built with line tables only (CI's `line-tables-only`) is the bare function name.
        for n in &names {
            if found < DEPTH && (*n == chain[found] || n.ends_with(&format!("::{}", chain[found]))) {
                found += 1;
            }
        }
        deepest = deepest.max(s.frames.len());
        if found == DEPTH {
            whole += 1;
        } else if example.is_empty() {
            example = names;
        }
    }
    eprintln!(
        "{whole} of {} samples hold all {DEPTH} calls; the deepest has {deepest} frames",
        samples.len()
    );
    // 999 Hz of 300 ms of CPU time: about 300 samples however loaded the machine; a third leaves
    // room for a slow start.
    assert!(samples.len() >= 100, "{} samples of the spinning thread", samples.len());
    // Nearly all of them are in the chain's innermost function (or the clock read it makes), with
    // the whole chain under it; the rest are the thread's start and end.
    assert!(
        whole * 10 >= samples.len() * 8,
        "{whole} of {} whole; one that is not: {example:#?}",
        samples.len()
    );
    assert!(deepest > DEPTH && deepest <= phosphor::format::system::MAX_FRAMES);
    // Only the kernel's own code (the vDSO's clock read) may stay unnamed.
    let warnings = symbolizer.warnings();
    assert!(warnings.iter().all(|w| w.starts_with("[vdso]")), "{warnings:?}");
}

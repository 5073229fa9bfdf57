//! A long poll tied to the CPU samples inside it, on a real runtime and a real system context
//! (`--system`'s CPU samples, `perf_event_open`): one task spins on the CPU in a named function
//! inside one poll; the saved file, read by the code `phosphor stats` runs (the system context
//! read first and its leaves symbolized, then the statistics), lists that long poll with samples
//! whose leaf is the spinning function. Needs `--cfg tokio_unstable` (tokio's task hooks); where
//! the kernel refuses `perf_event_open`, it says so and passes.

use std::sync::Arc;
use std::time::Duration;

use phosphor::format::system::{Availability, SampleKind};
use phosphor::tokio::TaskHooks;
use phosphor::{trace_instant, BufferMode, TraceConfig, TraceLog};
use phosphor_export::symbolize::Symbolizer;
use phosphor_export::system::SystemContext;
use phosphor_export::StatsBuilder;

use crate::support::{started, stop_and_take};

/// Samples of the spinning function the poll waits for (999 Hz of CPU time: about 50 ms of it).
const WANT_SAMPLES: usize = 40;
/// The least CPU time the poll spins for.
const MIN_SPIN: Duration = Duration::from_millis(50);
/// The most: past it, the samples never came, and the test fails.
const MAX_SPIN: Duration = Duration::from_secs(30);
/// The hooks' long-poll threshold (wall time; the poll spins longer than this in CPU time alone).
const LONG_POLL: Duration = Duration::from_millis(20);

/// The calling thread's kernel id, as traces and samples carry it.
fn gettid() -> u32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    (unsafe { libc::gettid() }) as u32
}

/// The calling thread's CPU time, or `CLOCK_MONOTONIC`'s, in nanoseconds.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a pointer to a timespec we own.
    unsafe { libc::clock_gettime(clock, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// A few milliseconds of CPU in this function's own instructions (no call in the loop, so that
/// a sample's leaf address is here; unoptimised builds call functions for iterators and
/// `black_box`, so neither is used).
#[inline(never)]
fn spin_on_cpu(seed: u64) -> u64 {
    let mut x = seed | 1;
    let mut i = 0u32;
    while i < 1_000_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        i += 1;
    }
    x
}

/// The addresses of `spin_on_cpu` in this process: its function pointer, for its symbol's size
/// in the executable's symbol table.
fn spin_range() -> std::ops::Range<u64> {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read("/proc/self/exe").unwrap();
    let file = object::File::parse(&*data).unwrap();
    let sym = file
        .symbols()
        .find(|s| s.name().is_ok_and(|n| n.contains("spin_on_cpu")))
        .expect("spin_on_cpu in the symbol table");
    let start = spin_on_cpu as fn(u64) -> u64 as usize as u64;
    start..start + sym.size()
}

/// The body of one poll: spins in [`spin_on_cpu`] until the log's system context holds
/// [`WANT_SAMPLES`] CPU samples of this thread, taken since the poll began, whose leaf is in it,
/// and [`MIN_SPIN`] of CPU time went by. Returns the worker's thread id and those samples.
fn spin_in_one_poll(log: &TraceLog, range: std::ops::Range<u64>) -> (u32, usize) {
    let (tid, since) = (gettid(), clock_ns(libc::CLOCK_MONOTONIC));
    // An event, so that this worker thread is the log's and the collector watches it.
    trace_instant!(log: log, "test", "spinning");
    let cpu0 = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    loop {
        x = spin_on_cpu(x);
        let cpu = Duration::from_nanos(clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) - cpu0);
        if cpu < MIN_SPIN {
            continue;
        }
        let snap = log.snapshot().expect("a snapshot of the running trace");
        let seen = snap.system().map_or(0, |s| {
            s.samples
                .iter()
                .filter(|s| s.tid == tid && s.time_ns >= since && s.kind == SampleKind::Cpu)
                .filter(|s| s.frames.first().is_some_and(|a| range.contains(a)))
                .count()
        });
        if seen >= WANT_SAMPLES {
            return (tid, seen);
        }
        assert!(cpu < MAX_SPIN, "{seen} samples in spin_on_cpu after {cpu:?} of CPU ({x:x})");
    }
}

#[test]
fn a_long_poll_holds_the_cpu_samples_of_the_function_its_task_spun_in() {
    let log = started(TraceConfig::new(BufferMode::Fixed, 8 << 20).context_switches(true).cpu_samples(999));
    match log.system_status().expect("a status while running").samples {
        Availability::On => {}
        Availability::Unavailable(why) => {
            eprintln!("CPU samples unavailable here (perf_event_open refused), not checked: {why}");
            return;
        }
        Availability::Off => panic!("CPU samples asked for but off"),
    }
    let leaked: &'static Arc<TraceLog> = Box::leak(Box::new(log.clone()));
    let log_ref: &'static TraceLog = leaked;
    let range = spin_range();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(1);
    TaskHooks::new().log(log_ref).long_poll(LONG_POLL).install(&mut builder);
    let rt = builder.build().unwrap();
    let (task, line, (tid, seen)) = rt.block_on(async move {
        let (h, line) = (tokio::spawn(async move { spin_in_one_poll(log_ref, range) }), line!());
        let task = h.id().to_string().parse::<u64>().unwrap();
        (task, line, h.await.unwrap())
    });
    drop(rt);
    let trace = stop_and_take(&log);
    let path = std::env::temp_dir().join(format!("phosphor-long-poll-samples-{}.phos", std::process::id()));
    trace.save(&path).unwrap();
    drop(trace);

    // What `phosphor stats FILE` does (phosphor-cli's `stats::run`): the system context first,
    // its samples' leaves symbolized from the process's own objects, then the statistics.
    let open =
        || phosphor::format::file::Reader::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
    let mut context = SystemContext::read(open().unwrap()).unwrap();
    context.name_leaves(&mut Symbolizer::new());
    let reader = open().unwrap();
    let stats = StatsBuilder::new(&reader.header().clock).system(Arc::new(context)).read(reader).unwrap();
    std::fs::remove_file(&path).unwrap();

    let name = format!("{}:{line}", file!());
    let poll = stats
        .long_polls
        .iter()
        .find(|p| p.task_id == task)
        .unwrap_or_else(|| panic!("no long poll of task {task}: {:#?}", stats.long_polls));
    assert_eq!((poll.task.as_str(), poll.tid), (name.as_str(), tid), "{poll:#?}");
    assert!(poll.dur_ns >= MIN_SPIN.as_nanos() as u64, "{poll:#?}");
    let system = poll.system.as_ref().expect("the long poll's system context");
    let spun = system.functions.iter().find(|(f, _)| f.contains("spin_on_cpu"));
    // Every sample the poll saw in the function before it returned is inside the long poll.
    assert!(
        spun.is_some_and(|&(_, n)| n as usize >= seen) && system.samples as usize >= seen,
        "{seen} samples were seen in spin_on_cpu during the poll; the long poll has {poll:#?}"
    );
    // The task's row counts it, and the text lists the long poll with its leaf function.
    let row = stats.tasks.iter().find(|t| t.name == name).expect("the task's row");
    assert_eq!(row.long_polls, 1, "{row:#?}");
    let text = stats.report(Default::default()).to_string();
    let listed = text.split("\nlongest long polls (").nth(1).unwrap_or_else(|| panic!("{text}"));
    let listed = listed.lines().find(|l| l.trim_start().starts_with(&format!("{name} #{task} ")));
    eprintln!("{seen} samples seen in spin_on_cpu during the poll; phosphor stats lists: {listed:?}");
    assert!(listed.is_some_and(|l| l.contains("spin_on_cpu (")), "{text}");
}

//! System context (issue 23): the traced threads' context switches and CPU samples, collected by
//! the `phosphor-system` thread, checked against what the test thread did inside its scopes.
//!
//! Where the kernel refuses `perf_event_open` to this process (a container's seccomp profile,
//! `perf_event_paranoid` 3), the tests that need it say so and pass; the refused path itself is
//! checked everywhere, forced by `PHOSPHOR_PERF_UNAVAILABLE`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use phosphor::format::system::{Availability, SwitchKind, SystemBatch, SystemStatus};
use phosphor::{trace_instant, trace_scope, BufferMode, Trace, TraceConfig, TraceLog, TraceLogConfig};

use crate::hardening::{alone, fork_and_check, run_alone};
use crate::support::{events, new_log, stop_and_take};

/// The calling thread's kernel id, as traces and perf records carry it.
fn gettid() -> u32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    (unsafe { libc::gettid() }) as u32
}

/// Whether the source is collected; `false` (said on stderr) when this machine refuses it.
fn available(what: &str, a: &Availability) -> bool {
    match a {
        Availability::On => true,
        Availability::Unavailable(why) => {
            eprintln!("{what} unavailable here, not checked: {why}");
            false
        }
        Availability::Off => panic!("{what} asked for but off"),
    }
}

/// Records an event so this thread attaches to `log`, then waits until the collector has
/// opened this thread's event: until a snapshot shows one of this thread's switches (each
/// sleep makes two).
fn watched_by_collector(log: &TraceLog) {
    trace_instant!(log: log, "system", "attach");
    let me = gettid();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        std::thread::sleep(Duration::from_millis(5));
        let snap = log.snapshot().expect("snapshot");
        if snap.system().expect("system context").switches.iter().any(|s| s.tid == me) {
            return;
        }
        assert!(Instant::now() < deadline, "the collector never watched this thread");
    }
}

/// The interval of this thread's complete event `name`, in `CLOCK_MONOTONIC` nanoseconds.
fn scope_ns(trace: &Trace, name: &str) -> (u64, u64) {
    let me = gettid();
    let e = events(trace)
        .into_iter()
        .find(|e| e.name() == name && e.tid == me)
        .unwrap_or_else(|| panic!("no {name} scope"));
    let clock = trace.clock();
    (clock.to_ns(e.ts), clock.to_ns(e.ts + e.duration.expect("a complete event")))
}

#[test]
fn a_scope_that_sleeps_50_ms_holds_50_ms_off_cpu_between_a_switch_out_and_in() {
    let log = new_log(TraceLogConfig::default());
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20).context_switches(true)).unwrap();
    let status = log.system_status().expect("a status while running");
    if !available("context switches", &status.switches) {
        return;
    }
    watched_by_collector(&log);
    {
        trace_scope!(log: &log, "system", "sleeping");
        std::thread::sleep(Duration::from_millis(50));
    }
    let trace = stop_and_take(&log);
    let (start, end) = scope_ns(&trace, "sleeping");
    let system = trace.system().expect("system context");
    let me = gettid();
    let mine: Vec<_> = system.switches.iter().filter(|s| s.tid == me).collect();
    // Off-CPU stretches (out or preempted, to the next in) that overlap the scope.
    let mut off = 0;
    let mut blocked_pairs = 0;
    for w in mine.windows(2) {
        let (a, b) = (w[0], w[1]);
        if a.kind == SwitchKind::In || b.kind != SwitchKind::In || b.time_ns < start || a.time_ns > end {
            continue;
        }
        off += b.time_ns - a.time_ns;
        blocked_pairs += usize::from(a.kind == SwitchKind::Out);
    }
    eprintln!("sleeping: {off} ns off-CPU in a {} ns scope, {blocked_pairs} blocked pairs", end - start);
    assert!(blocked_pairs >= 1, "no blocked out + in pair inside [{start}, {end}]: {mine:?}");
    // The sleep is off the CPU for at least 50 ms, less the few microseconds between the scope's
    // start and the switch; never longer than the scope (plus the trace clock's calibration).
    assert!(off >= 49_000_000, "{off} ns off-CPU for a 50 ms sleep: {mine:?}");
    assert!(off <= end - start + 1_000_000, "{off} ns off-CPU in a {} ns scope", end - start);
    let status = system.status.as_ref().expect("a stopped trace's status");
    assert_eq!(status.samples, Availability::Off);
}

/// This thread's CPU time, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a pointer to a timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Burns `cpu_ns` of this thread's CPU time, in this function's own instructions: no call in
/// the loop but the clock's, once in a million rounds, so that nearly every sample's leaf
/// address is here (unoptimised builds call functions for iterators and `black_box`, so neither
/// is used). CPU time, not wall time, so that a loaded machine does not thin the samples out.
#[inline(never)]
fn burn_cpu_for_samples(cpu_ns: u64) -> u64 {
    let until = thread_cpu_ns() + cpu_ns;
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

/// The addresses of `burn_cpu_for_samples` in this process: from its function pointer, for
/// its symbol's size in the executable's symbol table.
fn burn_range() -> std::ops::Range<u64> {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read("/proc/self/exe").unwrap();
    let file = object::File::parse(&*data).unwrap();
    let sym = file
        .symbols()
        .find(|s| s.name().is_ok_and(|n| n.contains("burn_cpu_for_samples")))
        .expect("burn_cpu_for_samples in the symbol table");
    let start = burn_cpu_for_samples as fn(u64) -> u64 as usize as u64;
    start..start + sym.size()
}

#[test]
fn a_scope_that_burns_cpu_in_a_known_function_holds_samples_whose_leaf_is_in_it() {
    let log = new_log(TraceLogConfig::default());
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20).context_switches(true).cpu_samples(999)).unwrap();
    let status = log.system_status().expect("a status while running");
    if !available("CPU samples", &status.samples) {
        return;
    }
    watched_by_collector(&log);
    {
        trace_scope!(log: &log, "system", "burning");
        burn_cpu_for_samples(200_000_000);
    }
    let trace = stop_and_take(&log);
    let (start, end) = scope_ns(&trace, "burning");
    let system = trace.system().expect("system context");
    let range = burn_range();
    let me = gettid();
    let inside: Vec<_> =
        system.samples.iter().filter(|s| s.tid == me && (start..=end).contains(&s.time_ns)).collect();
    let in_burn = inside.iter().filter(|s| s.frames.first().is_some_and(|a| range.contains(a))).count();
    eprintln!("burning: {in_burn} of {} samples in the scope have their leaf in burn", inside.len());
    // 999 Hz of CPU time: about 200 samples for 200 ms, however loaded the machine; half of
    // that leaves room for the samples at the scope's edges and a slow start.
    assert!(
        in_burn >= 100,
        "{in_burn} of {} samples in {range:x?}: {:x?}",
        inside.len(),
        &inside[..5.min(inside.len())]
    );
    assert!(in_burn * 10 >= inside.len() * 8, "{in_burn} of {} samples in burn", inside.len());
    let exe = std::fs::read_link("/proc/self/exe").unwrap();
    let mapped = system.mappings.iter().find(|m| (m.start..m.end).contains(&range.start)).expect("a mapping");
    assert_eq!(std::path::Path::new(&mapped.path), exe);
    assert_eq!(system.status.as_ref().unwrap().sample_hz, 999);
}

#[test]
fn a_streaming_trace_sends_its_system_context_to_its_datastreams_and_keeps_a_copy() {
    use phosphor::stream::{MemorySink, Sink, StreamConfig};
    let log = new_log(TraceLogConfig::default());
    log.start(TraceConfig::new(BufferMode::Stream, 1 << 20).context_switches(true)).unwrap();
    let status = log.system_status().unwrap();
    let mem = MemorySink::new();
    let id = log.open_stream(StreamConfig::new(Sink::Memory(mem.clone()))).unwrap();
    trace_instant!(log: &log, "system", "streamed");
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(10)); // switches, over a few periods
    }
    log.stop();
    let stream = log.stream_stats(id).unwrap();
    assert_eq!(stream.system_batches_dropped, 0, "{stream:?}");
    assert!(stream.events_written >= 1 && mem.bytes().len() > 64);
    let trace = log.take_trace().unwrap();
    let system = trace.system().expect("system context");
    if available("context switches", &status.switches) {
        let me = gettid();
        assert!(system.switches.iter().any(|s| s.tid == me && s.kind == SwitchKind::Out));
    }
    // The stream's file holds every switch the trace kept, in its system blocks.
    let bytes = mem.bytes();
    let mut reader = phosphor::format::file::Reader::new(&bytes[..]).unwrap();
    let mut streamed = Vec::new();
    while let Some(block) = reader.next_block().unwrap() {
        if let phosphor::format::file::Block::System(batch) = block {
            streamed.extend(batch.switches.iter().copied());
        }
    }
    assert_eq!(streamed, system.switches, "the stream's switches against the trace's");
}

#[test]
fn a_trace_without_system_context_has_none() {
    let log = new_log(TraceLogConfig::default());
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 16)).unwrap();
    assert_eq!(log.system_status(), None);
    trace_instant!(log: &log, "system", "plain");
    let trace = stop_and_take(&log);
    assert!(trace.system().is_none());
    assert_eq!(log.system_status(), None);
}

#[test]
fn allocations_without_the_traced_allocator_are_unavailable_and_say_why() {
    // This binary's global allocator is its own counting one, not `phosphor::alloc::Traced`.
    let log = new_log(TraceLogConfig::default());
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 16).allocations(true)).unwrap();
    let status = log.system_status().unwrap();
    assert!(
        matches!(&status.allocations, Availability::Unavailable(why) if why.contains("Traced")),
        "{status:?}"
    );
    let trace = stop_and_take(&log);
    assert_eq!(trace.system().and_then(|s| s.status.clone()), Some(status));
}

#[test]
fn refused_perf_events_leave_the_trace_running_and_say_why() {
    run_alone("system::refused_child", &[("PHOSPHOR_PERF_UNAVAILABLE", "1".into())], Duration::from_secs(60));
}

#[test]
#[ignore = "run alone, in a process of its own, by refused_perf_events_leave_*"]
fn refused_child() {
    if !alone() {
        return;
    }
    let log = TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 16).context_switches(true).cpu_samples(999)).unwrap();
    for i in 0..10u64 {
        trace_instant!("system", "still-recorded", "i" => i);
    }
    let status = log.system_status().unwrap();
    let trace = stop_and_take(log);
    assert_eq!(events(&trace).len(), 10);
    for a in [&status.switches, &status.samples] {
        assert!(
            matches!(a, Availability::Unavailable(why) if why.starts_with("perf_event_open: EACCES")),
            "{status:?}"
        );
    }
    let system: &SystemBatch = trace.system().unwrap();
    assert!(system.switches.is_empty() && system.samples.is_empty());
    assert_eq!(system.status.as_ref(), Some(&status));
}

#[test]
fn a_seccomp_filter_refusing_perf_event_open_leaves_the_trace_running_and_names_seccomp() {
    run_alone("system::seccomp_child", &[], Duration::from_secs(60));
}

/// Installs, on the calling thread (and so on the threads it starts), a seccomp filter that
/// answers `perf_event_open` with `EPERM`, as Docker's default profile does.
fn refuse_perf_event_open() {
    let insn = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter { code: code as u16, jt, jf, k };
    let mut program = [
        // The system call's number (offset 0 of `struct seccomp_data`).
        insn(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 0),
        insn(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, 0, 1, libc::SYS_perf_event_open as u32),
        insn(libc::BPF_RET | libc::BPF_K, 0, 0, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        insn(libc::BPF_RET | libc::BPF_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ];
    let prog = libc::sock_fprog { len: program.len() as u16, filter: program.as_mut_ptr() };
    // SAFETY: prctl with these options only reads `prog` (a valid program of `len` instructions)
    // and changes this thread's own filters; no-new-privs lets an unprivileged thread install one.
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        assert_eq!(
            libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog as *const libc::sock_fprog),
            0,
            "seccomp: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[test]
#[ignore = "run alone, in a process of its own, by a_seccomp_filter_refusing_*"]
fn seccomp_child() {
    if !alone() {
        return;
    }
    refuse_perf_event_open();
    let log = TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 16).context_switches(true)).unwrap();
    trace_instant!("system", "recorded-anyway");
    let status = log.system_status().unwrap();
    eprintln!("under seccomp: {status:?}");
    let trace = stop_and_take(log);
    assert_eq!(events(&trace).len(), 1);
    assert!(
        matches!(&status.switches, Availability::Unavailable(why)
            if why.starts_with("perf_event_open: EPERM") && why.contains("seccomp")),
        "{status:?}"
    );
    assert_eq!(status.samples, Availability::Off);
    assert!(trace.system().unwrap().switches.is_empty());
}

#[test]
fn a_forked_child_of_a_process_collecting_system_context_neither_hangs_nor_inherits_it() {
    run_alone("system::fork_child", &[], Duration::from_secs(120));
}

#[test]
#[ignore = "run alone, in a process of its own, by a_forked_child_of_a_process_collecting_*"]
fn fork_child() {
    if !alone() {
        return;
    }
    let log = TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Ring, 4 << 20).context_switches(true).cpu_samples(999)).unwrap();
    trace_instant!("system", "parent");
    for k in 0..5 {
        std::thread::sleep(Duration::from_millis(15)); // a collector period or so between forks
        if let Err(e) = fork_and_check(log) {
            panic!("fork {} of 5: {e}", k + 1);
        }
    }
    let trace = stop_and_take(log);
    let status: &SystemStatus = trace.system().unwrap().status.as_ref().unwrap();
    assert_ne!(status.switches, Availability::Off);
}

#[test]
fn start_stop_cycles_with_system_context_leave_no_perf_descriptor_open() {
    run_alone("system::descriptors_child", &[], Duration::from_secs(60));
}

/// The perf event descriptors this process holds.
fn perf_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().contains("perf_event"))
        .count()
}

#[test]
#[ignore = "run alone, in a process of its own, by start_stop_cycles_with_system_context_*"]
fn descriptors_child() {
    if !alone() {
        return;
    }
    assert_eq!(perf_fds(), 0);
    let log = TraceLog::global();
    for _ in 0..5 {
        log.start(TraceConfig::new(BufferMode::Fixed, 1 << 16).context_switches(true).cpu_samples(999))
            .unwrap();
        let status = log.system_status().unwrap();
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let wait = Arc::new(Mutex::new(wait));
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let wait = wait.clone();
                std::thread::spawn(move || {
                    trace_instant!("system", "worker");
                    let _ = wait.lock().unwrap().recv(); // until released (or the sender is gone)
                })
            })
            .collect();
        trace_instant!("system", "main");
        let wait_for_fds = |n: usize, what: &str| {
            let deadline = Instant::now() + Duration::from_secs(20);
            while perf_fds() != n {
                assert!(Instant::now() < deadline, "{what}: {} perf descriptors, not {n}", perf_fds());
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        if status.switches == Availability::On {
            // One event per traced thread, opened within a period or so of its first event...
            wait_for_fds(4, "this thread and its 3 workers");
            drop(release);
            for w in workers {
                w.join().unwrap();
            }
            // ... and closed within a period or so of its exit.
            wait_for_fds(1, "the workers exited");
        } else {
            drop(release);
            for w in workers {
                w.join().unwrap();
            }
        }
        log.stop();
        assert_eq!(perf_fds(), 0, "perf descriptors left open after stop");
    }
}

//! The system tables of a trace recorded by the runtime with context switches and CPU samples
//! (`perf_event_open`): a thread sleeps inside `sleepy` scopes and spins inside `busy` ones. The
//! per-scope figures of SQL equal the statistics', and the samples inside `busy` are symbolized
//! through this test binary's debug information down to this file's lines.
//!
//! Where the kernel refuses perf events (a container's seccomp, `perf_event_paranoid` 3), the test
//! says so and passes.

use std::hint::black_box;
use std::time::{Duration, Instant};

use phosphor::format::system::Availability;
use phosphor::{trace_instant, trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig};

use crate::system::{OFF_CPU_PER_PATH, SAMPLES_PER_LEAF};

/// Spins through `rounds` rounds of its own instructions: CPU time however loaded the machine.
#[inline(never)]
fn spin_for(rounds: u64) -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..rounds {
        for _ in 0..100_000 {
            x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
    }
    x
}

#[test]
fn a_recorded_trace_answers_per_scope_as_the_statistics_with_frames_down_to_lines() {
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    let config = TraceConfig::new(BufferMode::Fixed, 1 << 20).context_switches(true).cpu_samples(999);
    log.start(config).unwrap();
    let status = log.system_status().unwrap();
    if let (Availability::Unavailable(why), _) | (_, Availability::Unavailable(why)) =
        (&status.switches, &status.samples)
    {
        eprintln!("perf events unavailable here, not checked: {why}");
        log.stop();
        return;
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            // Watched once a snapshot shows a switch (this is the one thread with events; each
            // sleep makes two).
            trace_instant!(log: &log, "app", "attach");
            let deadline = Instant::now() + Duration::from_secs(20);
            while log.snapshot().unwrap().system().is_none_or(|s| s.switches.is_empty()) {
                assert!(Instant::now() < deadline, "the collector never watched this thread");
                std::thread::sleep(Duration::from_millis(5));
            }
            for _ in 0..3 {
                {
                    trace_scope!(log: &log, "app", "sleepy");
                    std::thread::sleep(Duration::from_millis(20));
                }
                {
                    trace_scope!(log: &log, "app", "busy");
                    spin_for(200);
                }
            }
        });
    });
    log.stop();
    let bytes = log.take_trace().unwrap().write_to(Vec::new()).unwrap();
    let stats = crate::system::stats(&bytes);
    let session = crate::system::session(&bytes, "recorded");

    let got = crate::system::query(&session, OFF_CPU_PER_PATH);
    let mut expected: Vec<String> = stats
        .paths()
        .iter()
        .filter(|k| k.event_type.has_duration())
        .map(|k| {
            let sys = k.system.as_deref().cloned().unwrap_or_default();
            let blocked = sys.off_cpu_ns - sys.preempted_ns;
            format!("{}|{}|{}|{blocked}|{}", k.path_string(), k.count, sys.off_cpu_ns, sys.preempted_ns)
        })
        .collect();
    expected.sort();
    assert_eq!(got, expected);
    let sleepy = got.iter().find(|r| r.starts_with("sleepy|")).expect("a sleepy row");
    let blocked: u64 = sleepy.split('|').nth(3).unwrap().parse().unwrap();
    assert!(blocked > 0, "a sleeping scope was blocked: {sleepy}");

    // Per path and leaf, the statistics' top functions are among SQL's rows, and SQL's rows add
    // up to the statistics' samples.
    let got = crate::system::query(&session, SAMPLES_PER_LEAF);
    for k in stats.paths() {
        let sys = k.system.as_deref().cloned().unwrap_or_default();
        let path = format!("{}|", k.path_string());
        let rows: Vec<&String> = got.iter().filter(|r| r.starts_with(&path)).collect();
        let total: u64 = rows.iter().map(|r| r.rsplit('|').next().unwrap().parse::<u64>().unwrap()).sum();
        assert_eq!(total, sys.samples, "{path}");
        for (f, n) in &sys.functions {
            assert!(rows.contains(&&format!("{path}{f}|{n}")), "{path}{f}|{n} in {rows:?}");
        }
    }
    let busy_samples: u64 = got
        .iter()
        .filter(|r| r.starts_with("busy|"))
        .map(|r| r.rsplit('|').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(busy_samples > 0, "{got:?}");

    // The spinning function, with this file and a line, in the stacks sampled inside `busy`.
    let spin = crate::system::query(
        &session,
        "SELECT DISTINCT f.function, f.file, f.line IS NOT NULL FROM slices s
           JOIN samples sm ON sm.trace = s.trace AND sm.tid = s.tid AND sm.ts >= s.ts AND sm.ts < s.ts + s.dur
           JOIN frames f ON f.trace = sm.trace AND f.stack_id = sm.stack_id
         WHERE s.name = 'busy' AND f.function LIKE '%spin_for'",
    );
    assert!(
        spin.iter().any(|r| r.contains("system_recorded.rs|true")),
        "spin_for named with its file and line: {spin:?}"
    );
}

//! The recorder's own threads (the streaming collector's dispatcher and datastream threads, and
//! `phosphor-system`, `phosphor-trigger`, `phosphor-dump`) run with the asynchronous signals
//! blocked, so no signal handler that records can interrupt them inside a pool operation or a lock;
//! the synchronous faults stay deliverable. Read from `/proc/self/task/*/status`.

use phosphor::stream::{MemorySink, Sink, StreamConfig};
use phosphor::{BufferMode, TraceConfig};

use crate::support::new_log;

/// The recorder's threads of this process now: (name, blocked signal mask).
fn recorder_threads() -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(comm) = std::fs::read_to_string(task.path().join("comm")) else { continue };
        let name = comm.trim().to_string();
        // Names are cut to 15 bytes: "phosphor-collec", "phosphor-trigge".
        let ours =
            ["phosphor-collec", "phosphor-sink-", "phosphor-system", "phosphor-trigge", "phosphor-dump"];
        if !ours.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else { continue };
        let blocked = status
            .lines()
            .find_map(|l| l.strip_prefix("SigBlk:"))
            .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
            .unwrap();
        out.push((name, blocked));
    }
    out
}

fn bit(signal: libc::c_int) -> u64 {
    1 << (signal - 1)
}

#[test]
fn the_collector_and_datastream_threads_run_with_the_asynchronous_signals_blocked() {
    let log = new_log(Default::default());
    log.start(TraceConfig::new(BufferMode::Stream, 1 << 20)).unwrap();
    let id = log.open_stream(StreamConfig::new(Sink::Memory(MemorySink::new()))).unwrap();
    // A thread names itself once it runs: wait for both names (bounded).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let threads = loop {
        let t = recorder_threads();
        let named = |p: &str| t.iter().any(|(n, _)| n.starts_with(p));
        if (named("phosphor-collec") && named("phosphor-sink-")) || std::time::Instant::now() > deadline {
            break t;
        }
        std::thread::yield_now();
    };
    assert!(threads.iter().any(|(n, _)| n == "phosphor-collec"), "the dispatcher runs: {threads:?}");
    assert!(threads.iter().any(|(n, _)| n.starts_with("phosphor-sink-")), "a datastream runs: {threads:?}");
    for (name, blocked) in &threads {
        for s in [libc::SIGUSR1, libc::SIGUSR2, libc::SIGPROF, libc::SIGTERM, libc::SIGINT, libc::SIGALRM] {
            assert_ne!(blocked & bit(s), 0, "{name}: signal {s} blocked (SigBlk {blocked:x})");
        }
        for s in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGFPE,
            libc::SIGILL,
            libc::SIGTRAP,
            libc::SIGSYS,
            libc::SIGABRT,
        ] {
            assert_eq!(blocked & bit(s), 0, "{name}: fault {s} stays deliverable (SigBlk {blocked:x})");
        }
    }
    log.close_stream(id).unwrap();
    log.stop();
}

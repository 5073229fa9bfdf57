//! The flight recorder's triggers: a dump on a signal (in this process) and on a panic (in a child
//! process, this test binary run again for one ignored test).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use phosphor::format::file::{Reader, Value};
use phosphor::{trace_instant, BufferMode, TraceConfig};

use crate::support::started;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `(thread, name, i)` of every event of a dump file.
fn dumped(path: &Path) -> Vec<(u32, String, u64)> {
    let bytes = std::fs::read(path).unwrap();
    let mut r = Reader::new(&bytes[..]).unwrap();
    let mut out = Vec::new();
    r.for_each_event(|e| {
        let i = match e.arg("i") {
            Some(Value::U64(i)) => i,
            _ => 0,
        };
        out.push((e.tid, e.callsite.name.to_string(), i));
    })
    .unwrap();
    out
}

/// This machine's boot id, as a trace file's header (format 1.5) holds it.
pub(crate) fn this_boot() -> Option<[u8; 16]> {
    let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    phosphor::format::file::parse_boot_id(&text)
}

fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(Instant::now() < deadline, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn each_signal_dumps_the_running_trace_to_a_numbered_file() {
    let dir = scratch("recorder-signal");
    let log = started(TraceConfig::new(BufferMode::Ring, 1 << 20));
    phosphor::recorder::dump_on_signal(log.clone(), libc::SIGUSR2, dir.join("dump-{n}.phos")).unwrap();
    for i in 0..100u64 {
        trace_instant!(log: &log, "rec", "rec-sig", "i" => i);
    }
    // SAFETY: raising a signal whose handler was just installed.
    unsafe { libc::raise(libc::SIGUSR2) };
    wait_for(&dir.join("dump-1.phos"));
    for i in 100..150u64 {
        trace_instant!(log: &log, "rec", "rec-sig", "i" => i);
    }
    // SAFETY: as above.
    unsafe { libc::raise(libc::SIGUSR2) };
    wait_for(&dir.join("dump-2.phos"));
    let first: Vec<u64> = dumped(&dir.join("dump-1.phos")).into_iter().map(|e| e.2).collect();
    let second: Vec<u64> = dumped(&dir.join("dump-2.phos")).into_iter().map(|e| e.2).collect();
    assert_eq!(first, (0..100).collect::<Vec<_>>());
    assert_eq!(second, (0..150).collect::<Vec<_>>());
    assert!(!dir.join("dump-1.phos.tmp").exists(), "written through a temporary file and renamed");
    assert!(
        phosphor::recorder::dump_on_signal(log.clone(), libc::SIGUSR1, dir.join("x")).is_err(),
        "one signal per process"
    );
    log.stop();
}

/// The child of `a_panic_dumps_the_trace_before_the_default_hook_runs`: two threads log without
/// end; once each has logged 1,000 events, the main thread logs one last event and panics while
/// they go on.
#[test]
#[ignore = "run by a_panic_dumps_the_trace_before_the_default_hook_runs in a child process"]
fn panic_child() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let path = std::env::var_os("PHOSPHOR_TEST_PANIC_DUMP").expect("run by the parent test");
    let log = started(TraceConfig::new(BufferMode::Ring, 4 << 20));
    phosphor::recorder::dump_on_panic(log.clone(), path);
    let counts: &'static [AtomicU64; 2] = Box::leak(Box::new([AtomicU64::new(0), AtomicU64::new(0)]));
    for count in counts.iter() {
        let log = log.clone();
        std::thread::spawn(move || {
            for i in 0u64.. {
                trace_instant!(log: &log, "rec", "rec-worker", "i" => i);
                // Relaxed: a progress counter read by the main thread.
                count.store(i + 1, Ordering::Relaxed);
            }
        });
    }
    // Relaxed: see above.
    while counts.iter().any(|c| c.load(Ordering::Relaxed) < 1000) {
        std::thread::yield_now();
    }
    trace_instant!(log: &log, "rec", "rec-last", "i" => 7u64);
    panic!("phosphor test panic");
}

#[test]
fn a_panic_dumps_the_trace_before_the_default_hook_runs() {
    let dir = scratch("recorder-panic");
    let dump = dir.join("panic.phos");
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "recorder::panic_child", "--test-threads=1", "--nocapture"])
        .env("PHOSPHOR_TEST_PANIC_DUMP", &dump)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the child failed as a panicking test does");
    assert!(stderr.contains("phosphor test panic"), "the previous hook still printed the panic:\n{stderr}");
    let events = dumped(&dump);
    let workers = events.iter().filter(|e| e.1 == "rec-worker").count();
    assert!(workers >= 2000, "the workers' events up to the panic are in the dump ({workers})");
    let last: Vec<_> = events.iter().filter(|e| e.1 == "rec-last").collect();
    assert_eq!(last.len(), 1, "the panicking thread's last event is in the dump");
    assert_eq!(last[0].2, 7);
}

/// The child of `a_fatal_signal_dumps_the_trace_and_the_process_still_dies_of_it`: two threads
/// log and finish, the main thread logs one last event and aborts (`SIGABRT`: a raised `SIGSEGV`
/// would not kill a Rust program, whose own handler only acts on real faults).
#[test]
#[ignore = "run by a_fatal_signal_dumps_the_trace_and_the_process_still_dies_of_it in a child process"]
fn crash_child() {
    let path = std::env::var_os("PHOSPHOR_TEST_CRASH_DUMP").expect("run by the parent test");
    let log = phosphor::TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Ring, 4 << 20)).unwrap();
    phosphor::recorder::dump_on_crash(log, path).unwrap();
    let workers: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(|| {
                for i in 0..500u64 {
                    trace_instant!("rec", "rec-crash-worker", "i" => i, "s" => phosphor::Static("static-arg"));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    trace_instant!("rec", "rec-crash-last", "i" => 9u64);
    if std::env::var_os("PHOSPHOR_TEST_CRASH_SEGV").is_some() {
        // A real fault: a write to a page mapped read-only.
        // SAFETY: mapping one anonymous read-only page; the write below faults, by design.
        unsafe {
            let page = libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(page, libc::MAP_FAILED);
            std::ptr::write_volatile(page.cast::<u8>(), 1);
        }
    }
    std::process::abort();
}

#[test]
fn a_fatal_signal_dumps_the_trace_and_the_process_still_dies_of_it() {
    check_crash_dump("abort", libc::SIGABRT);
}

#[test]
fn a_segmentation_fault_dumps_the_trace_and_the_process_still_dies_of_it() {
    check_crash_dump("segv", libc::SIGSEGV);
}

/// Runs `crash_child` (aborting, or faulting when `how` is "segv"), and checks that it died of
/// `signal` and that its dump holds every event, the last one included.
fn check_crash_dump(how: &str, signal: libc::c_int) {
    use std::os::unix::process::ExitStatusExt;
    let dir = scratch(&format!("recorder-crash-{how}"));
    let dump = dir.join("crash.phos");
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--ignored", "--exact", "recorder::crash_child", "--test-threads=1", "--nocapture"])
        .env("PHOSPHOR_TEST_CRASH_DUMP", &dump);
    if how == "segv" {
        cmd.env("PHOSPHOR_TEST_CRASH_SEGV", "1");
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.signal(), Some(signal), "{}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&dump).expect("a crash dump");
    let mut r = Reader::new(&bytes[..]).unwrap();
    assert_eq!(r.header().boot_id, this_boot(), "the header made at start names the boot");
    let mut events = Vec::new();
    r.for_each_event(|e| {
        let s = match e.arg("s") {
            Some(Value::Str(s)) => s.to_owned(),
            _ => String::new(),
        };
        events.push((e.callsite.name.to_string(), s));
    })
    .unwrap();
    assert!(r.trailer().is_some(), "the dump is a whole file");
    let workers: Vec<_> = events.iter().filter(|e| e.0 == "rec-crash-worker").collect();
    assert_eq!(workers.len(), 1000, "every worker event");
    assert!(workers.iter().all(|e| e.1 == "static-arg"), "static string arguments are resolved");
    assert_eq!(
        events.last().map(|e| e.0.as_str()),
        Some("rec-crash-last"),
        "the crashing thread's last event"
    );
}

/// The child of `a_killed_process_leaves_a_ring_file_that_recovers_every_committed_event`: logs
/// 3 × 700 events into a file-backed ring, says so, and waits to be killed.
#[test]
#[ignore = "run by a_killed_process_leaves_a_ring_file_that_recovers_every_committed_event in a child process"]
fn kill_child() {
    let path = std::env::var_os("PHOSPHOR_TEST_RING_FILE").expect("run by the parent test");
    let log = started(TraceConfig::new(BufferMode::Ring, 1 << 20).file_backed(path));
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..700u64 {
                    trace_instant!(log: &log, "rec", "rec-ring", "i" => i);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    println!("logged");
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn a_killed_process_leaves_a_ring_file_that_recovers_every_committed_event() {
    use std::io::BufRead;
    let dir = scratch("recorder-ring");
    let ring = dir.join("trace.ring");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "recorder::kill_child", "--test-threads=1", "--nocapture"])
        .env("PHOSPHOR_TEST_RING_FILE", &ring)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.any(|l| l.unwrap().contains("logged")), "the child logged");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let bytes = std::fs::read(&ring).unwrap();
    let trace = phosphor::format::file::ring::recover(&bytes).unwrap();
    let mut r = Reader::new(&trace[..]).unwrap();
    assert_eq!(r.header().boot_id, this_boot(), "the ring file's header names the boot");
    let mut per_thread: std::collections::BTreeMap<u32, Vec<u64>> = Default::default();
    r.for_each_event(|e| {
        assert_eq!(e.callsite.name, "rec-ring");
        let Some(Value::U64(i)) = e.arg("i") else { panic!("{e:?}") };
        per_thread.entry(e.tid).or_default().push(i);
    })
    .unwrap();
    assert_eq!(r.trailer().map(|t| t.recorded), Some(2100));
    assert_eq!(per_thread.len(), 3);
    for (tid, seq) in per_thread {
        assert_eq!(seq, (0..700).collect::<Vec<_>>(), "thread {tid}: exactly its committed events, in order");
    }
}

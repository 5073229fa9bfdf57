//! The crash handler (`recorder::dump_on_crash`) under harder conditions than one crash: two
//! threads faulting at once, a fault inside the handler itself, and a static string argument whose
//! memory is gone. Each runs in a child
//! process (this test binary run again for one ignored test).

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use phosphor::format::file::{Reader, Value};
use phosphor::{trace_instant, BufferMode, TraceConfig, TraceLog};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the ignored test `crash::{name}` in a child with `PHOSPHOR_TEST_DIR=dir`, and waits at most
/// `limit` for it to end (killing it past that).
fn run_child(name: &str, dir: &Path, limit: Duration) -> (ExitStatus, String) {
    let mut child: Child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", &format!("crash::{name}"), "--test-threads=1", "--nocapture"])
        .env("PHOSPHOR_TEST_DIR", dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            return (out.status, String::from_utf8_lossy(&out.stderr).into_owned());
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!("{name} did not end within {limit:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `(name, i, s, thread)` of every event of a whole dump file (a missing trailer fails the test).
fn whole_dump(path: &Path) -> Vec<(String, u64, String, u32)> {
    let bytes = std::fs::read(path).expect("a crash dump");
    let mut r = Reader::new(&bytes[..]).unwrap();
    let mut out = Vec::new();
    r.for_each_event(|e| {
        let i = match e.arg("i") {
            Some(Value::U64(i)) => i,
            _ => u64::MAX,
        };
        let s = match e.arg("s") {
            Some(Value::Str(s)) => s.to_owned(),
            _ => String::new(),
        };
        out.push((e.callsite.name.to_string(), i, s, e.tid));
    })
    .unwrap_or_else(|e| panic!("the dump reads to its end: {e}"));
    assert!(r.trailer().is_some(), "the dump is a whole file");
    out
}

fn dir_from_env() -> PathBuf {
    PathBuf::from(std::env::var_os("PHOSPHOR_TEST_DIR").expect("run by the parent test"))
}

/// A page that faults when written.
fn read_only_page() -> *mut u8 {
    // SAFETY: a fresh anonymous read-only mapping of one page, never unmapped.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(page, libc::MAP_FAILED);
    page.cast()
}

fn started_global(path: &Path) -> &'static TraceLog {
    let log = TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Ring, 16 << 20)).unwrap();
    phosphor::recorder::dump_on_crash(log, path.join("crash.phos")).unwrap();
    log
}

const EACH: u64 = 60_000;

/// The child of `two_threads_faulting_at_once_leave_one_whole_dump`: two threads each log
/// `EACH` events with a static string (so the dump takes a while to write), a last event, then
/// meet at a barrier and write to a read-only page at the same moment.
#[test]
#[ignore = "run by two_threads_faulting_at_once_leave_one_whole_dump"]
fn two_faults_child() {
    let log = started_global(&dir_from_env());
    let page = read_only_page() as usize;
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let threads: Vec<_> = (0..2u64)
        .map(|t| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                for i in 0..EACH {
                    let s = phosphor::Static("static-two");
                    trace_instant!(log: log, "crash", "crash-two", "i" => i, "s" => s);
                }
                trace_instant!(log: log, "crash", "crash-two-last", "i" => t);
                barrier.wait();
                // SAFETY: none: the write faults, by design.
                unsafe { std::ptr::write_volatile((page + t as usize) as *mut u8, 1) };
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
    unreachable!("the faults kill the process");
}

#[test]
fn two_threads_faulting_at_once_leave_one_whole_dump() {
    let dir = scratch("crash-two");
    let (status, stderr) = run_child("two_faults_child", &dir, Duration::from_secs(120));
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "the process dies of its fault: {status:?}\n{stderr}");
    let mut per_thread: std::collections::BTreeMap<u32, Vec<u64>> = Default::default();
    let mut last = Vec::new();
    for (name, i, s, tid) in whole_dump(&dir.join("crash.phos")) {
        match name.as_str() {
            "crash-two" => {
                assert_eq!(s, "static-two");
                per_thread.entry(tid).or_default().push(i);
            }
            "crash-two-last" => last.push(i),
            other => panic!("unexpected event {other}"),
        }
    }
    last.sort();
    assert_eq!(last, [0, 1], "both faulting threads' last events");
    assert_eq!(per_thread.len(), 2);
    for (tid, seq) in per_thread {
        assert!(seq.iter().copied().eq(0..EACH), "thread {tid}: every event, in order");
    }
}

/// The child of `a_fault_inside_the_crash_handler_chains_at_once`: the buffer is a file-backed
/// ring whose file is then truncated, so the handler's first read of a chunk faults (`SIGBUS`)
/// inside the handler of an abort.
#[test]
#[ignore = "run by a_fault_inside_the_crash_handler_chains_at_once"]
fn fault_in_handler_child() {
    let dir = dir_from_env();
    let ring = dir.join("trace.ring");
    let log = TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Ring, 1 << 20).file_backed(&ring)).unwrap();
    phosphor::recorder::dump_on_crash(log, dir.join("crash.phos")).unwrap();
    for i in 0..100u64 {
        trace_instant!("crash", "crash-nested", "i" => i);
    }
    std::fs::OpenOptions::new().write(true).open(&ring).unwrap().set_len(0).unwrap();
    std::process::abort();
}

#[test]
fn a_fault_inside_the_crash_handler_chains_at_once() {
    let dir = scratch("crash-nested");
    // A handler waiting for its own dump would never end.
    let (status, stderr) = run_child("fault_in_handler_child", &dir, Duration::from_secs(60));
    assert_eq!(
        status.signal(),
        Some(libc::SIGBUS),
        "the fault in the handler kills the process: {status:?}\n{stderr}"
    );
    let bytes = std::fs::read(dir.join("crash.phos")).unwrap();
    assert!(Reader::new(&bytes[..]).is_ok(), "the dump was begun: {} bytes", bytes.len());
}

/// The child of `a_static_string_whose_memory_is_gone_is_dumped_as_a_placeholder`: an event's
/// static string lives in a page that is unmapped before the program aborts.
#[test]
#[ignore = "run by a_static_string_whose_memory_is_gone_is_dumped_as_a_placeholder"]
fn gone_string_child() {
    let log = started_global(&dir_from_env());
    // SAFETY: a fresh anonymous page, filled with ASCII, viewed as a string; it is unmapped below
    // while a recorded event still points at it, which is the point of the test (nothing in this
    // process reads it afterwards but the crash handler, which must check first).
    let doomed: &'static str = unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        std::ptr::copy_nonoverlapping(b"doomed".as_ptr(), p.cast(), 6);
        std::str::from_utf8_unchecked(std::slice::from_raw_parts(p.cast(), 6))
    };
    let leaked: &'static str = String::from("leaked-and-alive").leak();
    trace_instant!(log: log, "crash", "crash-gone", "i" => 0u64, "s" => phosphor::Static(doomed));
    trace_instant!(log: log, "crash", "crash-gone", "i" => 1u64, "s" => phosphor::Static(leaked));
    trace_instant!(log: log, "crash", "crash-gone", "i" => 2u64, "s" => phosphor::Static("literal"));
    // SAFETY: the page mapped above; see there.
    unsafe { libc::munmap(doomed.as_ptr() as *mut libc::c_void, 4096) };
    std::process::abort();
}

#[test]
fn a_static_string_whose_memory_is_gone_is_dumped_as_a_placeholder() {
    let dir = scratch("crash-gone");
    let (status, stderr) = run_child("gone_string_child", &dir, Duration::from_secs(60));
    assert_eq!(status.signal(), Some(libc::SIGABRT), "the process dies of its abort: {status:?}\n{stderr}");
    let got: Vec<(u64, String)> =
        whole_dump(&dir.join("crash.phos")).into_iter().map(|e| (e.1, e.2)).collect();
    assert_eq!(
        got,
        [
            (0, "<bad static string>".to_owned()),
            (1, "leaked-and-alive".to_owned()),
            (2, "literal".to_owned())
        ]
    );
}

//! `fork()` at any moment (issue 37 §2): a child forked while another thread of its parent is
//! writing a crash dump, or holds a trigger dump's list, or from inside the forking thread's own
//! event, neither hangs nor crashes, and a child's trace observes only the child (no switch of
//! its parent's threads). Each moment is made with a test-only pause point (`__test_hooks`), not
//! a sleep, and each scenario runs in a process of its own (see `hardening::run_alone`).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use phosphor::__test_hooks::{self as hooks, Point};
use phosphor::format::system::Availability;
use phosphor::trigger::{PostWindow, Trigger};
use phosphor::{trace_instant, trace_scope, ArgValue, BufferMode, TraceConfig, TraceLog};

use crate::hardening::{alone, read_trace_file, run_alone, scratch_file};

/// The calling thread's kernel id.
fn gettid() -> u32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    (unsafe { libc::gettid() }) as u32
}

/// Writes `msg` to standard error with one `write` (not through std's locked handle, which a
/// thread of the parent may have held at the fork) and returns a failure status.
fn child_fail(msg: &str) -> i32 {
    let msg = format!("forked child {}: {msg}\n", std::process::id());
    // SAFETY: writing a valid buffer of its own length to fd 2.
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
    1
}

/// In a child: runs `f` (a panic is a failure, said on stderr) and leaves with its status.
fn exit_with(f: impl FnOnce() -> i32) -> ! {
    let status = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        child_fail(&format!("panicked: {msg}"));
        2
    });
    // SAFETY: ends the child at once, running no destructor or atexit handler of the parent's.
    unsafe { libc::_exit(status) }
}

/// Waits up to `limit` for child `pid` (doing `meanwhile` between looks); its wait status, or
/// `Err` if it hung (it is killed then).
fn wait_child(pid: libc::pid_t, limit: Duration, mut meanwhile: impl FnMut()) -> Result<i32, String> {
    assert!(pid > 0, "fork: {}", std::io::Error::last_os_error());
    let deadline = Instant::now() + limit;
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child, with a valid status pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return Ok(status);
        }
        if Instant::now() > deadline {
            // SAFETY: killing and reaping our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Err(format!("the child hung (not done within {limit:?})"));
        }
        meanwhile();
        // Polling for a timeout: a hang sends no signal.
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Whether a wait status is an exit with status 0.
fn exited_ok(status: i32) -> bool {
    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}

/// In a child whose inherited trace stopped at the fork: starts `config`, records `n` events,
/// stops, and checks that the trace holds exactly those, all of this thread. 0 when it does.
fn child_traces_itself(log: &TraceLog, config: TraceConfig, n: u64) -> i32 {
    if log.is_enabled() {
        return child_fail("the parent's trace still runs in the child");
    }
    if let Err(e) = log.start(config) {
        return child_fail(&format!("start: {e}"));
    }
    let me = gettid();
    for i in 0..n {
        trace_instant!(log: log, "fork-anytime", "child", "i" => i);
    }
    log.stop();
    let Some(trace) = log.take_trace() else { return child_fail("no trace after stop") };
    let mut got = Vec::new();
    for e in trace.events() {
        match e {
            Ok(e) if e.callsite.name == "child" && e.tid == me => match e.arg("i") {
                Some(ArgValue::U64(i)) => got.push(i),
                other => return child_fail(&format!("a child event without its i: {other:?}")),
            },
            Ok(e) => return child_fail(&format!("a stray {} of thread {}", e.callsite.name, e.tid)),
            Err(e) => return child_fail(&format!("the trace does not decode: {e}")),
        }
    }
    if got != (0..n).collect::<Vec<_>>() || trace.stats().recorded != n {
        return child_fail(&format!("the child's trace holds {got:?}: {:?}", trace.stats()));
    }
    0
}

// ---- A fork while another thread writes the crash dump ----

/// Times the action the crash handler chains to has run in this process.
static CHAINED: AtomicU32 = AtomicU32::new(0);

/// The action in place before `dump_on_crash`: counts and returns. A raised `SIGABRT` is no
/// fault, so the raising thread then goes on.
extern "C" fn chained(_: libc::c_int) {
    CHAINED.fetch_add(1, Ordering::SeqCst);
}

/// The child's part: raises `SIGABRT`, whose handler (the parent's, inherited) must let it take
/// its course, the chained action, rather than wait for the parent's dump; then exits 0.
fn child_raises() -> ! {
    // SAFETY: raising a signal whose handlers (ours, then `chained`) are installed. `raise` asks
    // the kernel for the calling thread's id, so it also works in a child of a raw `clone`.
    unsafe { libc::raise(libc::SIGABRT) };
    let status = if CHAINED.load(Ordering::SeqCst) == 1 { 0 } else { 3 };
    // SAFETY: ends the child at once.
    unsafe { libc::_exit(status) }
}

#[test]
fn a_child_forked_during_a_crash_dump_crashes_without_waiting_for_it() {
    run_alone("fork_anytime::crash_dump_fork_child", &[], Duration::from_secs(120));
}

/// The process the test above starts.
#[test]
#[ignore = "run alone, in a process of its own, by a_child_forked_during_a_crash_dump_*"]
fn crash_dump_fork_child() {
    if !alone() {
        return;
    }
    let dump = scratch_file("fork-anytime-crash.phos");
    // SAFETY: a zeroed sigaction with a plain handler and an empty mask is valid.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = chained as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGABRT, &sa, std::ptr::null_mut()), 0);
    }
    let log = TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Ring, 1 << 20)).unwrap();
    for i in 0..100u64 {
        trace_instant!("fork-anytime", "before", "i" => i);
    }
    phosphor::recorder::dump_on_crash(log, dump.path()).unwrap();
    hooks::arm(Point::CrashDump);
    // SAFETY: raising a signal whose handlers are installed; `chained` returns.
    let crasher = std::thread::spawn(|| unsafe { libc::raise(libc::SIGABRT) });
    assert!(hooks::wait_held(Point::CrashDump, Duration::from_secs(30)), "the crashing thread never dumped");

    // A child of `fork`, whose handlers run, and one of a raw `clone`, in which none does: only
    // the owner word's pid tells its crash from the parent's dump there.
    // SAFETY: the child only raises a signal and leaves through `_exit`.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        child_raises();
    }
    let forked = wait_child(pid, Duration::from_secs(10), || {});
    // SAFETY: a fork without the atfork handlers (SIGCHLD to the parent at exit, same stack
    // copied): the child runs `child_raises` only, which makes system calls and `_exit`s.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as libc::c_long,
            0 as libc::c_long,
            0 as libc::c_long,
            0 as libc::c_long,
            0 as libc::c_long,
        )
    };
    if pid == 0 {
        child_raises();
    }
    let cloned = wait_child(pid as libc::pid_t, Duration::from_secs(10), || {});

    hooks::release(Point::CrashDump);
    crasher.join().unwrap();
    assert_eq!(CHAINED.load(Ordering::SeqCst), 1, "the crashing thread's signal went on after its dump");
    let counts = read_trace_file(dump.path());
    assert!(counts.trailer && counts.events >= 100, "the parent's dump is whole: {counts:?}");
    for (how, result) in [("fork", forked), ("raw clone", cloned)] {
        let status = result.unwrap_or_else(|e| panic!("the child of {how} crashed during the dump: {e}"));
        assert!(
            exited_ok(status),
            "the child of {how}: wait status {status:#x} (3: its signal did not go on)"
        );
    }
    log.stop();
}

// ---- A fork while the trigger thread holds its list of dumps ----

/// Spins for `d` inside a scope that the trigger below watches.
fn slow_scope(d: Duration) {
    trace_scope!("fork-anytime", "slow");
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[test]
fn a_child_forked_during_a_trigger_dump_starts_a_trace_of_its_own() {
    run_alone("fork_anytime::trigger_dump_fork_child", &[], Duration::from_secs(120));
}

/// The process the test above starts.
#[test]
#[ignore = "run alone, in a process of its own, by a_child_forked_during_a_trigger_dump_*"]
fn trigger_dump_fork_child() {
    if !alone() {
        return;
    }
    let dir = std::path::PathBuf::from(scratch_file("fork-anytime-triggers").path());
    let _ = std::fs::remove_dir_all(&dir);
    let log = TraceLog::global();
    let trigger = Trigger::slower_than("fork-anytime", "slow", Duration::from_millis(1));
    let config = TraceConfig::new(BufferMode::Ring, 1 << 20)
        .trigger_dir(&dir)
        .post_window(PostWindow::Time(Duration::ZERO))
        .trigger(trigger);
    log.start(config).unwrap();
    hooks::arm(Point::TriggerDumpList);
    slow_scope(Duration::from_millis(3));
    assert!(
        hooks::wait_held(Point::TriggerDumpList, Duration::from_secs(30)),
        "the trigger thread never reached its list of dumps"
    );
    // The trigger thread holds the list until released: once the fork is done (a fork that does
    // not wait for it), or once the fork's `prepare` is about to wait for it (one that does).
    hooks::arm(Point::ForkWaitsForTriggerList);
    let forked = Arc::new(AtomicBool::new(false));
    let releaser = {
        let forked = forked.clone();
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut why = None;
            while why.is_none() && Instant::now() < deadline {
                if forked.load(Ordering::SeqCst) {
                    why = Some("forked");
                } else if hooks::wait_held(Point::ForkWaitsForTriggerList, Duration::from_millis(5)) {
                    why = Some("the fork waits");
                }
            }
            hooks::release(Point::TriggerDumpList);
            why
        })
    };
    // SAFETY: the child runs `child_traces_itself` under `exit_with`, which leaves through `_exit`.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        exit_with(|| child_traces_itself(log, TraceConfig::new(BufferMode::Ring, 1 << 20), 10));
    }
    forked.store(true, Ordering::SeqCst);
    let why = releaser.join().unwrap();
    assert!(why.is_some(), "the fork neither happened nor waited for the trigger thread's list");
    hooks::release(Point::ForkWaitsForTriggerList);
    let status = wait_child(pid, Duration::from_secs(10), || {}).unwrap_or_else(|e| panic!("{e}"));
    assert!(exited_ok(status), "the child's check failed (wait status {status:#x}; stderr says which)");
    log.stop();
    let s = log.triggers();
    assert_eq!((s.fired, s.dumps.len()), (1, 1), "the parent's dump was written and listed: {s:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- A child's trace with context switches sees only the child ----

/// Records an event (so this thread is traced), then waits until `log`'s snapshots have shown
/// this thread's switches growing `periods` times: the collector has drained this thread's ring
/// that often, and in all but the periods whose `try_control` found a snapshot holding the lock
/// it has also listed the traced threads and opened and drained their rings. `None` past 20 s.
fn collector_periods(log: &TraceLog, periods: usize) -> Option<()> {
    trace_instant!(log: log, "fork-anytime", "attach");
    let me = gettid();
    let deadline = Instant::now() + Duration::from_secs(20);
    let (mut seen, mut growths) = (0, 0);
    while growths < periods {
        std::thread::sleep(Duration::from_millis(5));
        let snap = log.snapshot().ok()?;
        let mine = snap.system()?.switches.iter().filter(|s| s.tid == me).count();
        if mine > seen {
            seen = mine;
            growths += 1;
        }
        if Instant::now() > deadline {
            return None;
        }
    }
    Some(())
}

/// The child's part: a trace with switches, which must hold this thread's and no other's.
fn child_switches_are_its_own(log: &TraceLog) -> i32 {
    if let Err(e) = log.start(TraceConfig::new(BufferMode::Ring, 1 << 20).context_switches(true)) {
        return child_fail(&format!("start: {e}"));
    }
    if collector_periods(log, 6).is_none() {
        return child_fail("the child's collector never watched its thread");
    }
    log.stop();
    let Some(trace) = log.take_trace() else { return child_fail("no trace after stop") };
    let Some(system) = trace.system() else { return child_fail("no system context") };
    let me = gettid();
    let foreign: Vec<u32> = system.switches.iter().map(|s| s.tid).filter(|&t| t != me).collect();
    if !foreign.is_empty() {
        let mut tids = foreign.clone();
        tids.dedup();
        return child_fail(&format!(
            "{} switches of threads {tids:?}, not of this process ({me}), in the child's trace",
            foreign.len()
        ));
    }
    if let Some(e) = trace.events().flatten().find(|e| e.tid != me) {
        return child_fail(&format!("an event of thread {} in the child's trace", e.tid));
    }
    0
}

#[test]
fn a_forked_childs_trace_with_switches_holds_only_its_own_threads() {
    run_alone("fork_anytime::switches_fork_child", &[], Duration::from_secs(120));
}

/// The process the test above starts.
#[test]
#[ignore = "run alone, in a process of its own, by a_forked_childs_trace_with_switches_*"]
fn switches_fork_child() {
    if !alone() {
        return;
    }
    let log = TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Ring, 1 << 20).context_switches(true)).unwrap();
    match log.system_status().expect("a status while running").switches {
        Availability::On => {}
        Availability::Unavailable(why) => {
            eprintln!("context switches unavailable here (perf_event_open refused), not checked: {why}");
            log.stop();
            return;
        }
        Availability::Off => panic!("context switches asked for but off"),
    }
    // This thread is traced (its tenant kept across the fork) and watched.
    collector_periods(log, 1).expect("the collector never watched this thread");
    // SAFETY: the child runs `child_switches_are_its_own` under `exit_with`.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        exit_with(|| child_switches_are_its_own(log));
    }
    // Switches of this thread while the child traces: each sleep makes two.
    let status = wait_child(pid, Duration::from_secs(60), || std::thread::sleep(Duration::from_millis(1)))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(exited_ok(status), "the child's check failed (wait status {status:#x}; stderr says which)");
    log.stop();
}

// ---- A fork from inside the forking thread's own event ----

/// What `fork` returned inside the write (-1 before).
static FORKED_IN_WRITE: AtomicI32 = AtomicI32::new(-1);

fn fork_now() {
    // SAFETY: forking; both processes go on with the write that called this.
    FORKED_IN_WRITE.store(unsafe { libc::fork() }, Ordering::SeqCst);
}

/// The child's part, after the write the fork interrupted has ended: the buffer it wrote into
/// was kept (counted), and the thread's next trace gets a fresh tenant.
fn child_after_interrupted_write(log: &TraceLog) -> i32 {
    if hooks::buffers_kept_at_fork() != 1 {
        return child_fail(&format!("{} buffers kept at the fork, not 1", hooks::buffers_kept_at_fork()));
    }
    for round in 0..2 {
        let status = child_traces_itself(log, TraceConfig::new(BufferMode::Fixed, 1 << 20), 10);
        if status != 0 {
            return child_fail(&format!("trace {round} of the child failed"));
        }
    }
    0
}

#[test]
fn a_fork_from_inside_a_write_leaves_the_write_its_buffer() {
    run_alone("fork_anytime::write_fork_child", &[], Duration::from_secs(120));
}

/// The process the test above starts.
#[test]
#[ignore = "run alone, in a process of its own, by a_fork_from_inside_a_write_*"]
fn write_fork_child() {
    if !alone() {
        return;
    }
    let log = TraceLog::global();
    // Above glibc's largest mmap threshold (32 MiB): freed, its memory would be unmapped, and the
    // interrupted write would fault on it.
    log.start(TraceConfig::new(BufferMode::Ring, 48 << 20)).unwrap();
    for i in 0..10u64 {
        trace_instant!("fork-anytime", "before", "i" => i);
    }
    hooks::write_calling(log, fork_now);
    let pid = FORKED_IN_WRITE.load(Ordering::SeqCst);
    if pid == 0 {
        exit_with(|| child_after_interrupted_write(log));
    }
    let status = wait_child(pid, Duration::from_secs(20), || {}).unwrap_or_else(|e| panic!("{e}"));
    assert!(exited_ok(status), "the child failed (wait status {status:#x}; stderr says why)");
    assert_eq!(hooks::buffers_kept_at_fork(), 0, "the parent keeps nothing");
    log.stop();
    let trace = log.take_trace().unwrap();
    let names: Vec<String> = trace.events().flatten().map(|e| e.callsite.name.to_string()).collect();
    assert_eq!(
        names.iter().filter(|n| *n == "hooked").count(),
        1,
        "the parent's interrupted event: {names:?}"
    );
    assert_eq!(trace.stats().recorded, 11, "{:?}", trace.stats());
}

//! What a forked child must not do to its parent (issue 17 §2): its copy of the control server
//! must not remove the parent's socket when dropped, and the dump signal sent to the child must
//! not make the parent's `phosphor-dump` thread dump the parent (the child inherits the handler
//! and the pipe, not the thread).

use std::path::Path;
use std::time::{Duration, Instant};

use phosphor::trigger::Trigger;
use phosphor::{trace_instant, trace_scope, BufferMode, TraceConfig, TraceLog};

use crate::hardening::{alone, run_alone, scratch_file};

#[test]
fn a_forked_child_starts_without_the_parents_triggers() {
    run_alone("fork_effects::fork_triggers_child", &[], Duration::from_secs(60));
}

#[test]
fn a_forked_child_leaves_the_parents_control_socket_and_dump_signal_alone() {
    run_alone("fork_effects::fork_effects_child", &[], Duration::from_secs(60));
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The process the test above starts (a fork and a process-wide signal setup need a process of
/// their own).
#[test]
#[ignore = "run alone, in a process of its own, by a_forked_child_leaves_*"]
fn fork_effects_child() {
    if !alone() {
        return;
    }
    let socket = scratch_file("fork-effects.sock");
    let dump = scratch_file("fork-effects-dump.phos");
    let server = phosphor::control::serve(Some(socket.path().to_owned()), Default::default()).unwrap();
    let log = TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Ring, 1 << 20)).unwrap();
    phosphor::recorder::dump_on_signal(log, libc::SIGUSR2, dump.path()).unwrap();
    for i in 0..100u64 {
        trace_instant!("fork-effects", "tick", "i" => i);
    }
    // SAFETY: the child raises a signal, drops its copy of the server and leaves through `_exit`;
    // nothing in it can panic.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: raising a signal whose handler is installed; `_exit` ends the child at once.
        unsafe { libc::raise(libc::SIGUSR2) };
        drop(server);
        // SAFETY: as above.
        unsafe { libc::_exit(0) };
    }
    assert!(pid > 0, "fork: {}", std::io::Error::last_os_error());
    let mut status = 0;
    // SAFETY: reaping our own child with a valid status pointer.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child status {status:#x}");
    // Had the child's byte reached the parent's dump thread, the dump would appear within this.
    std::thread::sleep(Duration::from_millis(300));
    assert!(Path::new(socket.path()).exists(), "the child's copy of the server removed the parent's socket");
    assert!(!dump.path().exists(), "the dump signal sent to the child dumped the parent");
    // The parent's own signal still dumps it.
    // SAFETY: raising a signal whose handler is installed.
    unsafe { libc::raise(libc::SIGUSR2) };
    wait_for("the parent's own dump", Duration::from_secs(20), || dump.path().exists());
    drop(server);
    assert!(!socket.path().exists(), "the parent's drop removes its socket");
    log.stop();
}

/// Spins for `d` inside a scope that the triggers below watch.
fn slow_scope(d: Duration) {
    trace_scope!("fork-triggers", "slow");
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// The child's checks, as an exit status (0: all held), so that a failed assertion in the child
/// never unwinds into the parent's test harness.
fn child_checks(dir: &Path) -> i32 {
    let log = TraceLog::global();
    // The parent's trace stopped in the child at the fork, its trigger with it.
    if !log.triggers().armed.is_empty() || log.is_enabled() {
        return 10;
    }
    // A trace without triggers: the slow scope, which the parent's trigger watched, fires nothing.
    if log.start(TraceConfig::new(BufferMode::Ring, 1 << 20).trigger_dir(dir)).is_err() {
        return 11;
    }
    slow_scope(Duration::from_millis(3));
    let fired = log.triggers().fired;
    log.stop();
    let marker = log
        .take_trace()
        .map(|t| t.events().filter(|e| e.as_ref().is_ok_and(|e| e.callsite.name == "trigger")).count());
    if fired != 0 || marker != Some(0) {
        return 12;
    }
    // The child's own trigger works: its dump thread is the child's.
    let config = TraceConfig::new(BufferMode::Ring, 1 << 20).trigger_dir(dir).trigger(Trigger::slower_than(
        "fork-triggers",
        "slow",
        Duration::from_millis(1),
    ));
    if log.start(config).is_err() {
        return 13;
    }
    slow_scope(Duration::from_millis(3));
    log.stop(); // dumps the pending window
    let s = log.triggers();
    if s.fired != 1 || s.dumps.len() != 1 || !s.dumps[0].path.exists() {
        return 14;
    }
    0
}

/// The process the test above starts.
#[test]
#[ignore = "run alone, in a process of its own, by a_forked_child_starts_without_*"]
fn fork_triggers_child() {
    if !alone() {
        return;
    }
    let dir = std::path::PathBuf::from(scratch_file("fork-triggers").path());
    let _ = std::fs::remove_dir_all(&dir);
    let log = TraceLog::global();
    let config = TraceConfig::new(BufferMode::Ring, 1 << 20).trigger_dir(&dir).trigger(Trigger::slower_than(
        "fork-triggers",
        "slow",
        Duration::from_millis(1),
    ));
    log.start(config).unwrap();
    slow_scope(Duration::from_micros(10)); // registers the callsite; fires nothing
                                           // SAFETY: the child runs `child_checks`, which catches nothing but returns a status, and
                                           // leaves through `_exit`.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = std::panic::catch_unwind(|| child_checks(&dir.join("child"))).unwrap_or(20);
        // SAFETY: ends the child at once, running no destructor of the parent's state.
        unsafe { libc::_exit(code) };
    }
    assert!(pid > 0, "fork: {}", std::io::Error::last_os_error());
    let mut status = 0;
    // SAFETY: reaping our own child with a valid status pointer.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status), "child status {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 0, "the child's check that failed (see child_checks)");
    // The parent's trigger is still armed and fires in the parent.
    assert_eq!(log.triggers().armed.len(), 1);
    slow_scope(Duration::from_millis(3));
    log.stop();
    let s = log.triggers();
    assert_eq!((s.fired, s.dumps.len()), (1, 1), "{s:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

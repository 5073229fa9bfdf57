//! What a forked child must not do to its parent (issue 17 §2): its copy of the control server
//! must not remove the parent's socket when dropped, and the dump signal sent to the child must
//! not make the parent's `phosphor-dump` thread dump the parent (the child inherits the handler
//! and the pipe, not the thread).

use std::path::Path;
use std::time::{Duration, Instant};

use phosphor::{trace_instant, BufferMode, TraceConfig, TraceLog};

use crate::hardening::{alone, run_alone, scratch_file};

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

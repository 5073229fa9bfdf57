//! Sizes a traced program must survive: a buffer larger than the machine can hold, asked for
//! through the API or over the control channel, is an error and never an abort.

use std::process::Command;

use phosphor::{trace_instant, BufferMode, ErrorKind, TraceConfig};

use crate::support::{new_log, stop_and_take};

const TIB: usize = 1 << 40;

#[test]
fn starting_a_one_terabyte_buffer_is_an_error_that_names_the_cap() {
    let log = new_log(Default::default());
    for mode in [BufferMode::Fixed, BufferMode::Ring, BufferMode::Stream] {
        let err = log.start(TraceConfig::new(mode, TIB)).expect_err("1 TiB is past the cap");
        let ErrorKind::BufferTooLarge { size, max } = *err.kind() else { panic!("{mode:?}: {err}") };
        assert_eq!(size, TIB);
        assert!(max as u64 <= TraceConfig::MAX_BUFFER_BYTES && max < TIB, "{err}");
        assert!(err.to_string().contains(&max.to_string()), "the message names the cap: {err}");
        assert!(!log.is_enabled(), "a rejected start starts nothing");
    }
    // The largest size of all, too.
    let err = log.start(TraceConfig::new(BufferMode::Fixed, usize::MAX)).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::BufferTooLarge { .. }), "{err}");
    // The log still works.
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 16)).unwrap();
    trace_instant!(log: &log, "limits", "after");
    assert_eq!(stop_and_take(&log).stats().recorded, 1);
}

/// The child of `control_sizes_past_the_cap_or_negative_are_errors_and_the_program_lives_on`: the
/// built-in commands drive a log of their own here, so this runs in a process of its own.
#[test]
#[ignore = "run by control_sizes_past_the_cap_or_negative_are_errors_and_the_program_lives_on"]
fn control_sizes_child() {
    let log: &'static phosphor::TraceLog = Box::leak(Box::new(new_log(Default::default())));
    phosphor::control::register_builtins(log).unwrap();
    for size in ["1099511627776", "-1", "-4096", "9223372036854775807"] {
        let r = phosphor::control::call(&format!("trace.start mode=ring size={size}"));
        println!("size={size} error={} text={}", r.error, r.text);
        assert!(!log.is_enabled());
    }
    let r = phosphor::control::call("trace.start mode=fixed size=65536");
    assert!(!r.error, "{r:?}");
    trace_instant!(log: log, "limits", "alive");
    let r = phosphor::control::call("trace.stop");
    assert!(!r.error, "{r:?}");
    println!("recorded={}", log.take_trace().unwrap().stats().recorded);
}

#[test]
fn control_sizes_past_the_cap_or_negative_are_errors_and_the_program_lives_on() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "limits::control_sizes_child", "--test-threads=1", "--nocapture"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the program lives on: {:?}\n{stdout}", out.status);
    let line = |size: &str| {
        // libtest prints the test's name on the line of its first output.
        let key = format!("size={size} error=");
        stdout.lines().find(|l| l.contains(&key)).unwrap_or_else(|| panic!("no {key} in {stdout}")).to_owned()
    };
    for size in ["1099511627776", "9223372036854775807"] {
        let l = line(size);
        assert!(l.contains("error=true") && l.contains("larger than the limit of"), "{l}");
    }
    for size in ["-1", "-4096"] {
        let l = line(size);
        assert!(l.contains("error=true") && l.contains(&format!("size {size} is negative")), "{l}");
    }
    assert!(stdout.lines().any(|l| l.ends_with("recorded=1")), "a trace still starts and records: {stdout}");
}

/// The child of `a_ring_file_on_a_full_filesystem_is_an_error_at_start_never_a_sigbus_later`: a
/// file-backed ring of 1 MiB (plus its 4 MiB metadata region) on a 256 KiB tmpfs, then events
/// enough to write every chunk.
#[test]
#[ignore = "run by a_ring_file_on_a_full_filesystem_is_an_error_at_start_never_a_sigbus_later"]
fn full_filesystem_child() {
    let dir = std::path::PathBuf::from(std::env::var_os("PHOSPHOR_TEST_TINY_FS").expect("run by the parent"));
    let path = dir.join("trace.ring");
    let log = new_log(Default::default());
    match log.start(TraceConfig::new(BufferMode::Ring, 1 << 20).file_backed(&path)) {
        Err(e) => println!("start failed: {e}"),
        Ok(()) => {
            for i in 0..100_000u64 {
                trace_instant!(log: &log, "limits", "fill", "i" => i);
            }
            log.stop();
            println!("started and recorded");
        }
    }
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    println!("left behind: {left:?}");
}

#[test]
fn a_ring_file_on_a_full_filesystem_is_an_error_at_start_never_a_sigbus_later() {
    use std::os::unix::process::CommandExt;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("limits-tiny-fs");
    let _ = std::fs::create_dir_all(&dir);
    // A 256 KiB tmpfs, mounted in a user and mount namespace of the child's own, so the test needs
    // no privilege and leaves no mount behind. Everything the child runs before `exec` is prepared
    // here: between fork and exec only system calls are allowed.
    let c = |s: &str| std::ffi::CString::new(s).unwrap();
    // SAFETY: getuid and getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let maps = [
        (c("/proc/self/setgroups"), "deny".to_owned()),
        (c("/proc/self/uid_map"), format!("0 {uid} 1")),
        (c("/proc/self/gid_map"), format!("0 {gid} 1")),
    ];
    let (target, fstype, options, root) = (c(dir.to_str().unwrap()), c("tmpfs"), c("size=256k"), c("/"));
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--ignored", "--exact", "limits::full_filesystem_child", "--test-threads=1", "--nocapture"])
        .env("PHOSPHOR_TEST_TINY_FS", &dir);
    // SAFETY: the closure makes system calls only, on data prepared above, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let fail = || Err(std::io::Error::last_os_error());
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                return fail();
            }
            for (file, text) in &maps {
                let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 || libc::write(fd, text.as_ptr().cast(), text.len()) != text.len() as isize {
                    return fail();
                }
                libc::close(fd);
            }
            // Private, so that nothing mounted here is seen outside (it would be a slave mount
            // anyway, being made in a new user namespace).
            libc::mount(
                std::ptr::null(),
                root.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            );
            if libc::mount(fstype.as_ptr(), target.as_ptr(), fstype.as_ptr(), 0, options.as_ptr().cast()) != 0
            {
                return fail();
            }
            Ok(())
        });
    }
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) => {
            eprintln!("skipped: no user namespace to mount a small tmpfs in ({e})");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "no SIGBUS: {:?}\n{stdout}", out.status);
    assert!(
        stdout.contains("start failed: the ring file could not be created")
            && stdout.contains("No space left on device"),
        "the full filesystem is an error at start: {stdout}"
    );
    assert!(
        stdout.contains("left behind: []"),
        "a ring file that could not be reserved is removed: {stdout}"
    );
}

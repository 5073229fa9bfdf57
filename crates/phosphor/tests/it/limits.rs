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

//! Compile-time groups and the `off` feature: what a disabled group leaves in the binary.
//!
//! Builds the workspace crate `phosphor-compile-out` (in a target directory of its own, so the
//! workspace's build keeps its features) with its `net` group on and its `disk` group off, with
//! both on, and with all of Phosphor compiled out; then reads each binary's bytes for the groups'
//! unique name markers, and runs it. Debug builds: dead code is not optimised away there, so a
//! callsite that was merely unused (rather than removed by the macros) would still show.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

const NET: &str = "cgo-net-9f2c1";
const DISK: &str = "cgo-disk-4be07";

/// Builds the crate with `features` and returns the binary's bytes and what running it printed.
/// One build at a time: they share a target directory.
fn build_and_run(features: &[&str]) -> (Vec<u8>, String) {
    static BUILD: Mutex<()> = Mutex::new(());
    let _one = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("compile-out");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "-q", "-p", "phosphor-compile-out"]).arg("--target-dir").arg(&target);
    if !features.is_empty() {
        cmd.args(["--features", &features.join(",")]);
    }
    let out = cmd.current_dir(env!("CARGO_MANIFEST_DIR")).output().expect("cargo runs");
    assert!(
        out.status.success(),
        "building with {features:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin: PathBuf = target.join("debug/phosphor-compile-out");
    let bytes = std::fs::read(&bin).expect("the binary");
    let run = Command::new(&bin).output().expect("the binary runs");
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    (bytes, String::from_utf8(run.stdout).unwrap().trim().to_owned())
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn a_disabled_group_leaves_no_callsite_or_string_in_the_binary() {
    let (bin, printed) = build_and_run(&[]);
    assert!(contains(&bin, NET), "the enabled group's names are in the binary (the search works)");
    assert!(contains(&bin, "cgo.net"));
    assert!(!contains(&bin, DISK), "the disabled group's names are not");
    assert!(!contains(&bin, "cgo.disk"), "nor its category");
    // 12 event macros, three lock guards' two events each (a literal name, with arguments, a
    // `dyn` name), no events for the sum and the histogram, `#[phosphor::trace]` on a function (a
    // scope) and an async fn (begin, poll, end); 23 callsites of the net group in the linker
    // section; and the two ungrouped logs.
    assert_eq!(printed, "events=23 callsites=25");
}

#[test]
fn enabling_the_other_group_brings_its_instrumentation_back() {
    let (bin, printed) = build_and_run(&["trace-disk"]);
    assert!(contains(&bin, NET) && contains(&bin, DISK));
    assert_eq!(printed, "events=44 callsites=48");
}

#[test]
fn a_compile_time_level_limit_removes_more_verbose_logs() {
    let (bin, printed) = build_and_run(&["max-level-warn"]);
    assert!(contains(&bin, "cgo-level-warn-51d3"), "the warn log stays (the search works)");
    assert!(!contains(&bin, "cgo-level-info-8a6e"), "the info log is compiled out");
    // The net group's own `info` log goes too: 22 of its callsites and 20 events, plus the warn log.
    assert_eq!(printed, "events=21 callsites=23");
    let (bin, _) = build_and_run(&[]);
    assert!(contains(&bin, "cgo-level-info-8a6e"), "without the limit it is there");
}

#[test]
fn the_off_feature_compiles_all_of_phosphor_out_and_the_program_still_runs() {
    let (bin, printed) = build_and_run(&["off", "trace-disk"]);
    assert!(!contains(&bin, NET) && !contains(&bin, DISK));
    assert!(!contains(&bin, "cgo.net") && !contains(&bin, "cgo.disk"));
    assert_eq!(printed, "events=0 callsites=0");
}

//! Running the built `phosphor` binary, in a scratch directory of its own.

use std::path::PathBuf;
use std::process::{Command, Output};

/// A new empty directory for one test, under Cargo's scratch directory for integration tests.
pub fn scratch(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("phosphor-cli-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// The binary, to be run in the scratch directory of `test`, so that what it writes by default
/// (`demo-out/`) lands there.
pub fn command(test: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_phosphor"));
    c.current_dir(scratch(test));
    c
}

/// Runs the binary with `args` in the scratch directory of `test`.
pub fn phosphor(test: &str, args: &[&str]) -> Output {
    command(test).args(args).output().expect("the phosphor binary runs")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("the report is UTF-8")
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The count on the report line that starts with `label`, e.g. `  emitted     12,345`.
pub fn count(report: &str, label: &str) -> u64 {
    let line = report
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no {label:?} line in:\n{report}"));
    let number = line.trim_start()[label.len()..].split_whitespace().next().unwrap();
    number.replace(',', "").parse().unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

//! Running the built `phosphor` binary, in a scratch directory of its own.

use std::path::{Path, PathBuf};
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

/// Starts the binary as `c` says, its stdout's lines sent to the receiver as they come (a
/// server's address and URL, then what it reports).
pub fn spawn_lines(c: &mut Command) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead;
    let mut child = c.stdout(std::process::Stdio::piped()).spawn().expect("the phosphor binary starts");
    let stdout = std::io::BufReader::new(child.stdout.take().expect("a piped stdout"));
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in stdout.lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    (child, lines)
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

/// The Python interpreter with the official Perfetto protos (`scripts/python-env.sh`, or
/// `$PHOSPHOR_PYTHON`), set up once per test process.
pub fn python() -> &'static Path {
    static PYTHON: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PYTHON.get_or_init(|| {
        if let Some(p) = std::env::var_os("PHOSPHOR_PYTHON") {
            return PathBuf::from(p);
        }
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/python-env.sh");
        let out = Command::new("bash").arg(script).output().expect("bash runs scripts/python-env.sh");
        assert!(
            out.status.success(),
            "scripts/python-env.sh failed (it needs python3 with venv and PyPI access):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    })
}

/// Checks a `.pftrace` with scripts/check_pftrace.py (the official Perfetto schema); returns its
/// JSON result.
pub fn check_pftrace(file: &Path) -> serde_json::Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/check_pftrace.py");
    let out = Command::new(python()).arg(script).arg(file).output().expect("python runs");
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!("check_pftrace.py printed no JSON ({e}):\n{text}\n{}", String::from_utf8_lossy(&out.stderr))
    })
}

/// Every command that writes takes `-o`/`--output`, and `--out` (the old spelling of `demo`,
/// `record` and `recover`) still works.
#[test]
fn every_writing_command_takes_the_same_output_flags() {
    let dir = scratch("output-flags");
    for flag in ["-o", "--output", "--out"] {
        let out = dir.join(format!("demo{flag}"));
        let r = phosphor(
            "output-flags-demo",
            &["demo", "--threads", "1", "--events", "200", flag, out.to_str().unwrap()],
        );
        assert!(r.status.success(), "demo {flag}: {}", stderr(&r));
        assert!(out.join("trace.phos").exists(), "demo {flag}");
    }
    let trace = dir.join("demo-o/trace.phos");
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../phosphor-format/tests/data/golden-v1.2.phtrace");
    for (cmd, target, extra) in [
        ("convert", dir.join("c.json"), &["--to", "chrome"][..]),
        ("flamegraph", dir.join("f.svg"), &[][..]),
        ("recover", dir.join("r.phos"), &[][..]),
    ] {
        for flag in ["-o", "--output", "--out"] {
            let input = if cmd == "recover" { &golden } else { &trace };
            let mut args = vec![cmd, input.to_str().unwrap()];
            args.extend_from_slice(extra);
            args.extend_from_slice(&[flag, target.to_str().unwrap()]);
            let r = phosphor("output-flags-cmd", &args);
            // `recover` refuses a trace file (it wants a ring file) after parsing its flags.
            if cmd == "recover" {
                assert!(stderr(&r).contains("trace file already"), "{cmd} {flag}: {}", stderr(&r));
            } else {
                assert!(r.status.success(), "{cmd} {flag}: {}", stderr(&r));
                assert!(target.exists(), "{cmd} {flag}");
                std::fs::remove_file(&target).unwrap();
            }
        }
    }
    let r = phosphor("output-flags-record", &["record", "--help"]);
    let help = String::from_utf8_lossy(&r.stdout).into_owned();
    assert!(help.contains("--output") && help.contains("--out"), "{help}");
}

/// A monotonic clock of one nanosecond per tick from origin 0: the clock of the small trace files
/// the tests write.
pub fn nanosecond_clock() -> phosphor::format::file::ClockInfo {
    phosphor::format::file::ClockInfo::monotonic(0, 0)
}

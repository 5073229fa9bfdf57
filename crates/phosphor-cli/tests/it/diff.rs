//! `phosphor diff` on traces written by a real program (the `diff_workload` example, a scope
//! spinning to a deadline): a 3× slower run fails its gate, two runs of one workload do not, and
//! bad input exits 2 naming the file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

use crate::cli::{phosphor, scratch, stderr, stdout};

/// Steps per run: enough for a p99 to be bounded from above (past about 1,100).
const STEPS: &str = "2000";

/// The gates CI would set.
const GATES: [&str; 8] =
    ["--fail-on", "p50>+10%", "--fail-on", "p90>+10%", "--fail-on", "p99>+10%", "--fail-on", "count>+0"];

/// Runs the workload, spinning `spin_us` per step, into `out`.
fn workload(out: &Path, spin_us: &str, extra: &[&str]) {
    // `cargo test` builds the package's examples next to the test binary's directory.
    let exe = std::env::current_exe().unwrap();
    let example = exe.parent().unwrap().parent().unwrap().join("examples/diff_workload");
    assert!(
        example.exists(),
        "{} is built by a whole `cargo test` (or `cargo build --example diff_workload`)",
        example.display()
    );
    let r = Command::new(example)
        .arg(out)
        .args(["--spin-us", spin_us, "--steps", STEPS])
        .args(extra)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
}

/// Traces shared by the tests: two runs at 5 µs a step, one at 15 µs with a `setup` scope.
struct Traces {
    base: PathBuf,
    again: PathBuf,
    slow: PathBuf,
}

fn traces() -> &'static Traces {
    static TRACES: OnceLock<Traces> = OnceLock::new();
    TRACES.get_or_init(|| {
        let dir = scratch("diff-traces");
        let t = Traces {
            base: dir.join("base.phos"),
            again: dir.join("again.phos"),
            slow: dir.join("slow.phos"),
        };
        workload(&t.base, "5", &[]);
        workload(&t.again, "5", &[]);
        workload(&t.slow, "15", &["--setup"]);
        t
    })
}

fn diff(test: &str, base: &Path, new: &Path, args: &[&str]) -> Output {
    let mut all = vec!["diff", base.to_str().unwrap(), new.to_str().unwrap()];
    all.extend_from_slice(args);
    phosphor(test, &all)
}

fn json(out: &Output) -> Value {
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

#[test]
fn a_three_times_slower_step_fails_its_gates_and_is_named() {
    let t = traces();
    let out = diff("diff-3x", &t.base, &t.slow, &GATES);
    let report = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{report}{}", stderr(&out));
    assert!(report.contains("REGRESSION: run/step (scope) past p50>+10%"), "{report}");
    assert!(report.contains("REGRESSION: run/step (scope) past p90>+10%"), "{report}");
    assert!(report.lines().any(|l| l.starts_with("REGRESSED") && l.contains("run/step")), "{report}");
    // Without a gate, the same report and status 0.
    let out = diff("diff-3x-report", &t.base, &t.slow, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("nothing can regress"), "{}", stdout(&out));
}

/// Two runs of one program differ by noise (and more so under load: run this test with busy
/// loops on every core), which a rank test on 2,000 durations may well find significant: the
/// gates compare the quantiles at their confidence bounds, so noise does not regress.
#[test]
fn two_runs_of_one_workload_do_not_regress() {
    let t = traces();
    for (test, a, b) in [("diff-same", &t.base, &t.again), ("diff-same-back", &t.again, &t.base)] {
        let out = diff(test, a, b, &GATES);
        assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
        assert!(stdout(&out).contains("no regression past the gates"), "{}", stdout(&out));
    }
    // And two more runs, written now.
    // (Not the scratch directory of the command, which `phosphor` empties.)
    let dir = scratch("diff-same-fresh-files");
    let (a, b) = (dir.join("a.phos"), dir.join("b.phos"));
    workload(&a, "5", &[]);
    workload(&b, "5", &[]);
    let out = diff("diff-same-fresh", &a, &b, &GATES);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
}

#[test]
fn json_lists_new_paths_and_the_path_globs_restrict_the_rows() {
    let t = traces();
    let v = json(&diff("diff-json", &t.base, &t.slow, &["--json", "--fail-on", "p50>+50%"]));
    assert_eq!(v["schema"], "phosphor-diff/1");
    assert_eq!(v["base"]["file"], t.base.to_str().unwrap());
    assert_eq!(v["fail_on"][0], "p50>+50%");
    assert_eq!(v["regressed"], true);
    let rows = v["rows"].as_array().unwrap();
    let row = |path: &str| rows.iter().find(|r| r["path"] == path).unwrap_or_else(|| panic!("{path}: {v}"));
    assert_eq!(row("setup")["status"], "new");
    assert!(row("setup")["base"].is_null() && row("setup")["test"].is_null());
    let step = row("run/step");
    assert_eq!((step["status"].as_str(), step["type"].as_str()), (Some("both"), Some("scope")));
    assert_eq!(step["base"]["count"], 2000);
    assert_eq!(step["test"]["method"], "rank-binned");
    assert_eq!(step["test"]["direction"], "slower");
    assert_eq!(step["regressions"][0], "p50>+50%");
    let rel = step["change"]["p50_ns"]["relative"].as_f64().unwrap();
    assert!(rel > 1.5, "a 3x slower step: {rel}");

    let v =
        json(&diff("diff-json-path", &t.base, &t.slow, &["--json", "--path", "run/*", "--path", "nothing"]));
    let paths: Vec<&str> =
        v["rows"].as_array().unwrap().iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["run/step"]);
    // Gone: the same diff the other way round.
    let v = json(&diff("diff-json-gone", &t.slow, &t.base, &["--json", "--path", "setup"]));
    assert_eq!(v["rows"][0]["status"], "gone");
    assert_eq!(v["regressed"], false);
}

#[test]
fn a_bad_gate_exits_2_with_what_was_expected() {
    let t = traces();
    for bad in ["p95>+10%", "p99>10", "p99<+10%", "count>+1ms"] {
        let out = diff("diff-bad-gate", &t.base, &t.again, &["--fail-on", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = stderr(&out);
        assert!(err.contains(&format!("bad --fail-on {bad:?}")) && err.contains("METRIC>+AMOUNT"), "{err}");
    }
}

#[test]
fn a_missing_or_corrupt_file_exits_2_naming_it_and_the_offset() {
    let t = traces();
    let missing = scratch("diff-missing-files").join("nope.phos");
    let out = diff("diff-missing", &t.base, &missing, &GATES);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(&format!("{}: cannot open", missing.display())), "{}", stderr(&out));

    let bytes = std::fs::read(&t.base).unwrap();
    let corrupt = scratch("diff-corrupt-files").join("cut.phos");
    std::fs::write(&corrupt, &bytes[..bytes.len() / 2]).unwrap();
    let out = diff("diff-corrupt", &corrupt, &t.again, &GATES);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{}: at byte ", corrupt.display())), "{err}");
    let offset: u64 = err.split("at byte ").nth(1).unwrap().split(':').next().unwrap().parse().unwrap();
    assert!(offset > 0 && offset <= bytes.len() as u64 / 2, "{err}");
    assert!(stdout(&out).is_empty(), "no report of part of a run");
}

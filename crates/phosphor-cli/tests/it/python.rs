//! The Python module (`crates/phosphor-py`): builds its wheel with maturin, installs it into the
//! tests' Python environment and runs its pytest suite, which drives this crate's `phosphor`
//! binary (conversion, statistics, logs, `call`). No Python is a failure, not a skip.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// `$PHOSPHOR_PYTHON`, else the interpreter `scripts/python-env.sh` sets up (with maturin and
/// pytest, from `scripts/requirements-test.txt`).
fn python() -> String {
    if let Ok(p) = std::env::var("PHOSPHOR_PYTHON") {
        return p;
    }
    let out = Command::new("bash").arg(Path::new(ROOT).join("scripts/python-env.sh")).output().unwrap();
    assert!(out.status.success(), "scripts/python-env.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().last().expect("an interpreter path").trim().to_owned()
}

fn run(what: &str, cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    print!("{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn the_python_module_builds_and_passes_its_pytest_suite() {
    let python = python();
    // A target directory of its own: the module is not a workspace member, and this test runs
    // while `cargo test` holds the workspace's.
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let wheels = scratch.join("pywheels");
    let _ = std::fs::remove_dir_all(&wheels);
    run(
        "maturin build",
        Command::new(&python)
            .args(["-m", "maturin", "build", "--locked", "-q", "-i", &python, "-m"])
            .arg(Path::new(ROOT).join("crates/phosphor-py/Cargo.toml"))
            .arg("--out")
            .arg(&wheels)
            .env("CARGO_TARGET_DIR", scratch.join("pyext"))
            // maturin builds the dev profile (no `--release`). Without debug info: nothing here
            // reads the module's (the suite checks the traces it writes through the CLI), and its
            // 45 crates build in about 10% less CPU than with CI's line tables (cargo then also
            // strips the module; the `.so` is 6.6 MB instead of 16 MB).
            .env("CARGO_PROFILE_DEV_DEBUG", "0"),
    );
    let wheel = std::fs::read_dir(&wheels)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .expect("maturin wrote a wheel");
    run(
        "pip install",
        Command::new(&python)
            .args(["-m", "pip", "install", "-q", "--force-reinstall", "--no-deps"])
            .arg(&wheel),
    );
    run(
        "pytest",
        Command::new(&python)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .arg(Path::new(ROOT).join("crates/phosphor-py/tests"))
            .env("PHOSPHOR_CLI", env!("CARGO_BIN_EXE_phosphor"))
            .env("PHOSPHOR_SCRIPTS", Path::new(ROOT).join("scripts")),
    );
}

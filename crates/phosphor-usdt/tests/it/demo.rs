//! The example `usdt_demo`, compiled once for all test processes, and the external tools the
//! tests run.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The example `usdt_demo`, optimised (`release`) or not, with debug information.
///
/// It is compiled here with `rustc` directly (the crate has no dependencies): `cargo build
/// --example` would also build the crate's dev-dependencies, in a target directory of its own
/// (the outer `cargo test` holds the lock of the usual one), which takes half a minute. The output
/// directory is named by a hash of the sources, the profile and the compiler, and is made whole by
/// a rename, so test processes running at once (nextest) share one build.
pub fn demo(release: bool) -> &'static Path {
    static DEBUG: OnceLock<PathBuf> = OnceLock::new();
    static RELEASE: OnceLock<PathBuf> = OnceLock::new();
    let cell = if release { &RELEASE } else { &DEBUG };
    cell.get_or_init(|| build(release))
}

fn build(release: bool) -> PathBuf {
    // From this file's crate or from phosphor-cli's tests: both are beside phosphor-usdt.
    let usdt = Path::new(env!("CARGO_MANIFEST_DIR")).join("../phosphor-usdt");
    let lib = usdt.join("src/lib.rs");
    let example = usdt.join("examples/usdt_demo.rs");
    // Next to the cargo running the tests, the rustc of the same toolchain.
    let rustc = std::env::var_os("CARGO")
        .map(|c| Path::new(&c).with_file_name("rustc"))
        .filter(|r| r.exists())
        .unwrap_or_else(|| "rustc".into());
    let profile: &[&str] =
        if release { &["-C", "opt-level=3", "-C", "debuginfo=1"] } else { &["-C", "debuginfo=2"] };

    let mut hasher = DefaultHasher::new();
    let version = Command::new(&rustc).arg("-vV").output().expect("rustc runs").stdout;
    (version, profile).hash(&mut hasher);
    let mut sources: Vec<PathBuf> = std::fs::read_dir(usdt.join("src"))
        .expect("phosphor-usdt/src")
        .map(|e| e.unwrap().path())
        .chain([example.clone()])
        .collect();
    sources.sort();
    for s in &sources {
        std::fs::read(s).expect("a source file").hash(&mut hasher);
    }
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("usdt-demo");
    let dir = root.join(format!("{:016x}", hasher.finish()));
    let binary = dir.join("usdt_demo");
    if binary.exists() {
        return binary;
    }

    let tmp = root.join(format!("tmp-{}-{release}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).expect("a scratch directory");
    let rustc_cmd = || {
        let mut c = Command::new(&rustc);
        c.args(["--edition", "2021"]).args(profile);
        c
    };
    run(rustc_cmd()
        .args(["--crate-type", "rlib", "--crate-name", "phosphor_usdt"])
        .arg(&lib)
        .arg("--out-dir")
        .arg(&tmp));
    let extern_arg = format!("phosphor_usdt={}", tmp.join("libphosphor_usdt.rlib").display());
    run(rustc_cmd()
        .args(["--crate-name", "usdt_demo"])
        .arg(&example)
        .arg("--extern")
        .arg(extern_arg)
        .arg("-o")
        .arg(tmp.join("usdt_demo")));
    // Another process may have finished first; its build is as good as this one.
    if std::fs::rename(&tmp, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    assert!(binary.exists(), "{} was not built", binary.display());
    binary
}

/// Runs a build step; its errors fail the test.
fn run(c: &mut Command) {
    let out = c.output().expect("rustc runs");
    assert!(out.status.success(), "building usdt_demo failed:\n{}", String::from_utf8_lossy(&out.stderr));
}

/// Runs an external tool the tests need; a missing tool fails the test with a clear message.
pub fn tool(name: &str, args: &[&str]) -> Output {
    match Command::new(name).args(args).output() {
        Ok(out) => out,
        Err(e) => panic!(
            "cannot run `{name}` ({e}): the USDT tests need gdb and readelf (binutils) installed \
             (apt-get install gdb binutils; .ci/run does it)"
        ),
    }
}

/// Runs `gdb -batch` on `program` with the commands `ex` (each an `-ex`), and returns what gdb
/// and the program printed, stdout then stderr.
pub fn gdb(program: &Path, ex: &[&str]) -> String {
    let mut args = vec!["-batch", "-nx", "-ex", "set debuginfod enabled off", "-ex", "set width 0"];
    for e in ex {
        args.extend(["-ex", e]);
    }
    let program = program.to_str().unwrap();
    args.push(program);
    let out = tool("gdb", &args);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "gdb failed:\n{text}");
    text
}

/// What the program printed on the line that starts with `label`, after it.
pub fn line_after<'a>(text: &'a str, label: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(label))
        .unwrap_or_else(|| panic!("no line starting with {label:?} in:\n{text}"))
        .trim()
}

//! The `usdt` feature: every callsite is also a USDT probe. Builds `examples/usdt_bridge.rs` with
//! the feature (in a target directory of the tests' own, so the workspace's build keeps it off)
//! and runs it under `gdb -batch`, which lists the probes, stops at them, reads their arguments,
//! and (through the probe's semaphore) makes the callsite evaluate its arguments for the probe
//! although no trace is running.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The example, built once per test process, as the only program of a package of its own (made in
/// the tests' scratch folder, with the workspace's Cargo.lock, so the same versions) whose one
/// dependency is phosphor with `usdt`: built as phosphor's example, it would build all of
/// phosphor's dev-dependencies too (tokio, divan, the exporter, ...), 120 crates on a clean
/// machine. Its target folder is tests/it/groups.rs's, which builds phosphor's dependencies with
/// the same features: they are built once for both.
fn program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let scratch = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let pkg = scratch.join("usdt-bridge-package");
        std::fs::create_dir_all(&pkg).expect("the package's folder");
        let manifest = format!(
            "[package]\nname = \"usdt-bridge\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
             [workspace]\n\n[[bin]]\nname = \"usdt_bridge\"\npath = '{}'\n\n\
             [dependencies]\nphosphor = {{ path = '{}', features = [\"usdt\"] }}\n",
            root.join("examples/usdt_bridge.rs").display(),
            root.display()
        );
        std::fs::write(pkg.join("Cargo.toml"), manifest).expect("the package's manifest");
        std::fs::copy(root.join("../../Cargo.lock"), pkg.join("Cargo.lock"))
            .expect("the workspace's Cargo.lock");
        let target = scratch.join("compile-out");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        // Not --locked: cargo drops the lock's entries this package does not use, and keeps the
        // versions of the rest.
        let out = Command::new(cargo)
            .args(["build", "-q", "--manifest-path"])
            .arg(pkg.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&target)
            .output()
            .expect("cargo runs");
        assert!(
            out.status.success(),
            "building the example failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        target.join("debug/usdt_bridge")
    })
}

fn gdb(commands: &[&str]) -> String {
    let mut cmd = Command::new("gdb");
    cmd.args(["-batch", "-nx", "-ex", "set debuginfod enabled off", "-ex", "set width 0"]);
    for c in commands {
        cmd.args(["-ex", c]);
    }
    let out: Output = cmd.arg(program()).output().unwrap_or_else(|e| {
        panic!("gdb could not run ({e}); install it (apt-get install gdb), as .ci/run does")
    });
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "gdb failed:\n{text}");
    text
}

#[test]
fn every_kind_of_callsite_is_a_probe_named_by_its_category_and_name() {
    let text = gdb(&["info probes"]);
    let mut probes: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.first() == Some(&"stap")).then(|| (f[1], f[2]))
        })
        .collect();
    probes.sort_unstable();
    assert_eq!(
        probes,
        [
            ("phosphor", "app__work"),
            ("phosphor", "db_sql__query__select"),
            ("phosphor", "mem__heap"),
            ("phosphor", "sync__state")
        ],
        "{text}"
    );
}

#[test]
fn an_attached_tool_gets_the_arguments_with_no_trace_running() {
    let text = gdb(&[
        "break -probe-stap phosphor:db_sql__query__select",
        "break -probe-stap phosphor:mem__heap",
        "break -probe-stap phosphor:app__work",
        "run",
        "printf \"instant %lu %ld\\n\", $_probe_arg0, $_probe_arg1",
        "continue",
        "printf \"scope %u\\n\", $_probe_arg0",
        "continue",
        "printf \"counter %#lx\\n\", $_probe_arg0",
        "continue",
        "printf \"instant %lu %ld\\n\", $_probe_arg0, $_probe_arg1",
        "delete",
        "continue",
    ]);
    let lines: Vec<&str> =
        text.lines().filter(|l| l.starts_with("instant ") || l.starts_with("scope ")).collect();
    // The last line: the scope's argument was evaluated for the probe (once, while gdb's
    // breakpoint held its semaphore), though Phosphor itself was not tracing.
    assert_eq!(
        lines,
        ["instant 0 -5", "scope 7", "instant 1 -6", "scope arguments evaluated 1 times"],
        "{text}"
    );
    let counter = format!("counter {:#x}", 4096.5f64.to_bits());
    assert!(text.contains(&counter), "a float argument is its bits: {counter}\n{text}");
}

#[test]
fn with_no_tool_attached_nothing_is_evaluated() {
    let out = Command::new(program()).output().expect("the example runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "scope arguments evaluated 0 times");
}

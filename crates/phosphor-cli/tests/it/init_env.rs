//! `phosphor::init()`: tracing switched on by `PHOSPHOR` and `PHOSPHOR_*`, checked from outside
//! as a user runs it: the `init_env` example in a child process, each way a program ends, and
//! what it leaves (the file's events counted: written + lost == emitted, exactly).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use phosphor::format::file::Reader;

/// Events the example emits: four threads × 10,000 × (a scope and an instant).
const EMITTED: u64 = 80_000;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("setup").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn example() -> Command {
    // `cargo test` builds the package's examples next to the test binary's directory.
    let exe = std::env::current_exe().unwrap();
    let mut c = Command::new(exe.parent().unwrap().parent().unwrap().join("examples/init_env"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PHOSPHOR") {
            c.env_remove(k);
        }
    }
    c
}

fn run(dir: &Path, vars: &[(&str, &str)], ending: &str) -> Output {
    let out = example().current_dir(dir).envs(vars.iter().copied()).arg(ending).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("recorded 80000"), "{out:?}");
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The events of a whole trace file, by name.
fn count(path: &Path) -> (u64, u64) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = Reader::new(&bytes[..]).unwrap();
    let (mut scopes, mut instants) = (0, 0);
    r.for_each_event(|e| match e.callsite.name.as_ref() {
        "iteration" => scopes += 1,
        "tick" => instants += 1,
        _ => {}
    })
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (scopes, instants)
}

/// `(events, lost)` from the line the program prints at the end.
fn reported(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("phosphor: trace written to"))
        .unwrap_or_else(|| panic!("{stderr}"));
    let tail = line.rsplit_once(": ").unwrap().1;
    let nums: Vec<u64> = tail
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    (nums[0], nums[1])
}

fn check_whole_file(path: &Path, err: &str) {
    let (scopes, instants) = count(path);
    let (events, lost) = reported(err);
    assert_eq!(scopes + instants, events, "the file holds what the line says: {err}");
    assert_eq!(events + lost, EMITTED, "written + lost == emitted: {err}");
    assert_eq!(lost, 0, "a 64 MiB buffer for 80,000 events loses none: {err}");
}

#[test]
fn a_file_when_main_returns() {
    let dir = scratch("return");
    let out = run(&dir, &[("PHOSPHOR", "trace.phos")], "return");
    assert!(out.status.success(), "{out:?}");
    check_whole_file(&dir.join("trace.phos"), &stderr(&out));
}

#[test]
fn a_file_when_the_program_calls_exit() {
    let dir = scratch("exit");
    let out = run(&dir, &[("PHOSPHOR", "file:out/t-{pid}.phos")], "exit");
    // The folder must exist: a file that cannot be created is said, and the program still runs.
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(stderr(&out).contains("not tracing to out/t-{pid}.phos"), "{}", stderr(&out));
    std::fs::create_dir(dir.join("out")).unwrap();
    let out =
        example().current_dir(&dir).env("PHOSPHOR", "file:out/t-{pid}.phos").arg("exit").output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let files: Vec<_> = std::fs::read_dir(dir.join("out")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("t-") && name[2..name.len() - 5].parse::<u32>().is_ok(),
        "{{pid}} replaced: {name}"
    );
    check_whole_file(&files[0], &stderr(&out));
}

#[test]
fn a_ring_dumped_on_panic() {
    let dir = scratch("panic");
    let out = run(&dir, &[("PHOSPHOR", "ring:crash.phos"), ("PHOSPHOR_SIZE", "1M")], "panic");
    assert_eq!(out.status.code(), Some(101), "{out:?}");
    let (scopes, instants) = count(&dir.join("crash.phos"));
    // A 1 MiB ring cannot hold 80,000 events: the newest are kept, the rest counted overwritten.
    assert!(scopes > 0 && instants > 0 && scopes + instants < EMITTED, "{scopes} {instants}");
}

#[test]
fn a_ring_dumped_on_sigusr2_while_running() {
    let dir = scratch("signal");
    let mut child = example()
        .current_dir(&dir)
        .envs([("PHOSPHOR", "ring:live.phos"), ("PHOSPHOR_QUIET", "1")])
        .arg("sleep")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "recorded 80000");
    // SAFETY: kill with a pid of our own child and a valid signal.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGUSR2) }, 0);
    let path = dir.join("live.phos");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(Instant::now() < deadline, "no dump after SIGUSR2");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    child.wait().unwrap();
    // The dump is renamed into place whole: every event of the example is in it (64 MiB ring).
    assert_eq!(count(&path), (EMITTED / 2, EMITTED / 2), "{err}");
}

#[test]
fn a_stream_to_a_recording_server() {
    let dir = scratch("tcp");
    let received = dir.join("received");
    let server = crate::record::Server::start("127.0.0.1:0", &received);
    let out = run(&dir, &[("PHOSPHOR", &format!("tcp:{}", server.addr))], "return");
    assert!(out.status.success(), "{out:?}");
    server.ended();
    let files: Vec<_> = std::fs::read_dir(&received).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    check_whole_file(&files[0], &stderr(&out));
}

#[test]
fn nothing_when_unset_or_off() {
    for vars in [vec![], vec![("PHOSPHOR", "0")], vec![("PHOSPHOR", ""), ("PHOSPHOR_SIZE", "1G")]] {
        let dir = scratch("off");
        let out = run(&dir, &vars, "return");
        assert!(out.status.success(), "{out:?}");
        assert_eq!(stderr(&out), "", "{vars:?}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "{vars:?} wrote a file");
    }
}

#[test]
fn a_bad_setting_is_said_and_the_program_runs_untraced() {
    let dir = scratch("bad");
    let out = run(&dir, &[("PHOSPHOR", "trace.phos"), ("PHOSPHOR_SIZE", "lots")], "return");
    assert!(out.status.success(), "{out:?}");
    let err = stderr(&out);
    assert!(err.contains("PHOSPHOR_SIZE=\"lots\"") && err.contains("not tracing"), "{err}");
    assert!(!dir.join("trace.phos").exists());
    let out = run(&dir, &[("PHOSPHOR", "tcp:no-such-host.invalid:7878")], "return");
    assert!(out.status.success(), "{out:?}");
    assert!(stderr(&out).contains("no-such-host.invalid:7878"), "{}", stderr(&out));
}

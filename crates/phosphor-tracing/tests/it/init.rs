//! `phosphor_tracing::init()` from outside: the `tracing_init` example run with and without
//! `PHOSPHOR`, its file read back.

use std::path::{Path, PathBuf};
use std::process::Command;

fn example(dir: &Path) -> Command {
    // `cargo test` builds the package's examples next to the test binary's directory.
    let exe = std::env::current_exe().unwrap();
    let mut c = Command::new(exe.parent().unwrap().parent().unwrap().join("examples/tracing_init"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PHOSPHOR") {
            c.env_remove(k);
        }
    }
    c.current_dir(dir);
    c
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tracing-init").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn init_records_tracing_spans_and_events_when_phosphor_is_set() {
    let dir = scratch("on");
    let out = example(&dir).env("PHOSPHOR", "shop.phos").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let bytes = std::fs::read(dir.join("shop.phos")).unwrap();
    let mut r = phosphor::format::file::Reader::new(&bytes[..]).unwrap();
    let (mut enters, mut messages) = (0, Vec::new());
    r.for_each_event(|e| match (e.callsite.name.as_ref(), e.phase()) {
        ("handle", phosphor::Phase::Begin) => enters += 1,
        (_, phosphor::Phase::Log) if e.callsite.category == "shop" => {
            messages.push(phosphor::format::logfmt::event_message(e))
        }
        _ => {}
    })
    .unwrap();
    assert_eq!(enters, 100, "{}", String::from_utf8_lossy(&out.stderr));
    // The global log's own path (the subscriber names it as a link-time constant): each event's
    // field, in order, as the program passed it.
    let want: Vec<String> = (0..100).map(|i| format!("handled i={i}")).collect();
    assert_eq!(messages, want);
}

#[test]
fn init_does_nothing_when_phosphor_is_unset() {
    let dir = scratch("off");
    let out = example(&dir).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

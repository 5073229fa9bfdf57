//! The outputs in the clients people use: the demo's Chrome JSON loaded into speedscope's own
//! built page (the npm package) in headless Chromium, as `speedscope trace.json` does. No browser
//! is a failure, not a skip: `scripts/browser-env.sh` installs one (CI runs it).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cli::{phosphor, scratch, stderr};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// `$PHOSPHOR_BROWSER_ENV`, else the directory `scripts/browser-env.sh` sets up.
fn browser_env() -> PathBuf {
    if let Ok(p) = std::env::var("PHOSPHOR_BROWSER_ENV") {
        return p.into();
    }
    let out = Command::new("bash").arg(Path::new(ROOT).join("scripts/browser-env.sh")).output().unwrap();
    assert!(out.status.success(), "scripts/browser-env.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().last().expect("a directory").trim().into()
}

/// What speedscope made of `profile`.
fn speedscope(profile: &Path) -> serde_json::Value {
    let env = browser_env();
    let out = Command::new("node")
        .arg(env.join("speedscope-check.mjs"))
        .arg(profile)
        .arg("300")
        .output()
        .expect("node runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the check failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The demo's JSON (4 workers of 20,000 events: scopes nested four deep, lock waits and holds
/// that touch, begin/end pairs with arguments, zero-length slices) imports with no frame closed out
/// of order. It once gave 2,400 "Tried to end X when Y was on the top of the stack" warnings: ends
/// added as floats landed a hair after their parent's or after the next slice's start.
#[test]
fn the_demos_chrome_json_loads_in_speedscope_with_no_mis_nested_frame() {
    let dir = scratch("browser-speedscope");
    let out = phosphor(
        "browser-speedscope-demo",
        &["demo", "--threads", "4", "--events", "20000", "-o", dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let r = speedscope(&dir.join("trace.json"));
    assert_eq!(r["errors"], serde_json::json!([]), "{r}");
    assert_eq!(r["loaded"], true, "{r}");
    assert_eq!(r["mis_nesting"], 0, "{r}");
}

//! The system context on the page, in headless Chromium (`scripts/browser/view-system-check.mjs`),
//! on `phosphor_craft::system`'s trace. No browser is a failure, not a skip:
//! `scripts/browser-env.sh` installs one (CI runs it), as for the CLI's browser tests.

use std::path::{Path, PathBuf};
use std::process::Command;

use phosphor_craft::system::system_trace;
use serde_json::{json, Value};

use crate::server::tests::start;

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

/// Serves `trace` and runs the browser check `script` (in `scripts/browser/`) on its page: the
/// script's JSON answer, after checking that the script succeeded and saw no page error.
pub(crate) fn check_page(trace: &[u8], script: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.phos");
    std::fs::write(&path, trace).unwrap();
    let addr = start(&[path]);
    let shot = dir.path().join("page.png");
    let out = Command::new("node")
        .arg(browser_env().join(script))
        .arg(format!("http://{addr}/"))
        .arg(&shot)
        .arg("120")
        .output()
        .expect("node runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{script}: {text}\n{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{script}: {e}: {text}"));
    assert_eq!(r["errors"], json!([]), "{script}: {r}");
    r
}

#[test]
fn the_page_draws_the_off_cpu_band_names_a_samples_function_and_details_a_slices_cpu_time() {
    let r = check_page(&system_trace().unwrap(), "view-system-check.mjs");
    // One blocked interval, four samples; the blocked colour (#e07b24) at 35 ms, none at 85 ms.
    let band = &r["band"];
    assert_eq!((band["blocked"].as_u64(), band["samples"].as_u64()), (Some(1), Some(4)), "{r}");
    assert_eq!(band["at35"], json!([0xe0, 0x7b, 0x24, 255]), "{r}");
    assert_eq!(band["at85"][3], 0, "nothing drawn on the CPU: {r}");
    // The sample at 70 ms: app+0x3000, called from app+0x2000.
    let tip = r["tip"].as_str().unwrap();
    assert!(tip.contains("CPU sample at 70.0 ms") && tip.contains("app+0x3000\napp+0x2000"), "{r}");
    let d = &r["details"];
    assert_eq!(d["on CPU"], "50.0 ms", "{r}");
    assert_eq!(d["off CPU"], "50.0 ms (blocked 50.0 ms, preempted 0 ns)", "{r}");
    assert_eq!((&d["switches"], &d["CPU samples"]), (&json!("1"), &json!("4")), "{r}");
    assert_eq!(d["allocations"], "1,000 (64,000 bytes)", "{r}");
    assert!(r["labels"].as_array().unwrap().iter().any(|l| l == "heap live bytes"), "{r}");
    assert!(r["group"].as_str().unwrap().contains("system: 2 switches, 4 CPU samples"), "{r}");
    // The two `scope_alloc` instants are data, not drawn: the track draws its slices' items and
    // the band's (1 interval and 4 samples), no point.
    let main = r["drawn"].as_array().unwrap().iter().find(|t| t["name"] == "main").unwrap();
    assert_eq!(main["drawn"], 2 + 1 + 4, "{r}");
}

//! The outputs in the clients people use: the demo's Chrome JSON loaded into speedscope's own
//! built page (the npm package) in headless Chromium, as `speedscope trace.json` does. No browser
//! is a failure, not a skip: `scripts/browser-env.sh` installs one (CI runs it).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cli::{phosphor, scratch, stderr};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// `$PHOSPHOR_BROWSER_ENV`, else the directory `scripts/browser-env.sh` sets up.
pub fn browser_env() -> PathBuf {
    if let Ok(p) = std::env::var("PHOSPHOR_BROWSER_ENV") {
        return p.into();
    }
    let out = Command::new("bash").arg(Path::new(ROOT).join("scripts/browser-env.sh")).output().unwrap();
    assert!(out.status.success(), "scripts/browser-env.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().last().expect("a directory").trim().into()
}

/// Runs the check `script` of `scripts/browser` with `args` in node, and gives the one JSON
/// object it prints.
pub fn check(script: &str, args: &[&std::ffi::OsStr]) -> serde_json::Value {
    let out = Command::new("node").arg(browser_env().join(script)).args(args).output().expect("node runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{script} failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// What speedscope made of `profile`.
fn speedscope(profile: &Path) -> serde_json::Value {
    check("speedscope-check.mjs", &[profile.as_os_str(), "300".as_ref()])
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

/// The viewer's page (`phosphor view`) in headless Chromium, driven as a person would
/// (`scripts/browser/view-check.mjs`): every thread is named, W zooms and D pans the visible
/// window, a click on the demo's one `join` slice shows the duration `phosphor stats` has for it,
/// and a search for `iteration` finds as many as `phosphor stats` counts and steps to the next.
/// No console error; a screenshot is left in the scratch folder for a person to look at.
#[test]
fn the_viewer_page_names_threads_zooms_pans_shows_a_clicked_slice_and_searches_as_stats_counts() {
    use crate::view::{get, start_viewer};

    let dir = scratch("browser-view");
    let out = phosphor(
        "browser-view-demo",
        &["demo", "--threads", "2", "--events", "5000", "-o", dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (_viewer, host) = start_viewer(&dir, "browser-view-cache");
    let (_, list) = get(&host, "/api/traces");
    let trace = &list["traces"][0];
    let threads = trace["threads"].as_array().unwrap();
    let main = threads.iter().find(|t| t["name"] == "main").expect("a main thread");
    let tid = main["tid"].as_u64().unwrap();
    let (start, end) = (trace["start_ns"].as_i64().unwrap(), trace["end_ns"].as_i64().unwrap());
    let (_, w) = get(&host, &format!("/api/slices?trace=0&tid={tid}&start={start}&end={end}&px=1600"));
    let join = &w["levels"][0][0];
    assert_eq!(w["names"][join[2].to_string()], "join", "{w}");

    let stats =
        phosphor("browser-view-stats", &["stats", "--json", dir.join("trace.phos").to_str().unwrap()]);
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    let kind =
        stats["kinds"].as_array().unwrap().iter().find(|k| k["path"] == serde_json::json!(["join"])).unwrap();
    assert_eq!(kind["count"], 1);
    let want = kind["durations"]["total_ns"].as_u64().unwrap();
    let iterations: u64 = stats["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["path"].as_array().unwrap().last().unwrap().as_str().unwrap().contains("iteration"))
        .map(|k| k["count"].as_u64().unwrap())
        .sum();
    assert!(iterations > 100, "{iterations}");

    let shot = dir.join("viewer.png");
    let slice = serde_json::json!({"tid": tid, "level": 0, "start": join[0], "end": join[1]});
    let url = format!("http://{host}/");
    let r = check(
        "view-check.mjs",
        &[url.as_ref(), slice.to_string().as_ref(), "iteration".as_ref(), shot.as_os_str(), "120".as_ref()],
    );
    assert_eq!(r["errors"], serde_json::json!([]), "{r}");
    for t in threads {
        let name = t["name"].as_str().unwrap();
        assert!(r["labels"].as_array().unwrap().iter().any(|l| l == name), "no {name} in {r}");
    }
    // The demo's async items have a track, drawn.
    let drawn = r["drawn"].as_array().unwrap();
    let item =
        drawn.iter().find(|t| t["name"] == "item (async)").unwrap_or_else(|| panic!("no async track: {r}"));
    assert!(item["drawn"].as_u64().unwrap() > 0, "{r}");
    let span = |v: &serde_json::Value| v[1].as_f64().unwrap() - v[0].as_f64().unwrap();
    let zoomed = &r["zoomed"];
    assert!(span(&zoomed["after"]) < 0.6 * span(&zoomed["before"]), "{r}");
    let panned = &r["panned"];
    assert!(panned["after"][0].as_f64().unwrap() > panned["before"][0].as_f64().unwrap(), "{r}");
    assert_eq!(r["clicked"]["name"], "join", "{r}");
    assert_eq!(r["clicked"]["duration_ns"].as_u64(), Some(want), "{r}");
    let searched = &r["searched"];
    assert_eq!(searched["total"].as_u64(), Some(iterations), "{r}");
    assert_eq!(searched["at"], format!("1 of {iterations}"), "{r}");
    assert_eq!(searched["selected"], "iteration", "{r}");
    assert_eq!(searched["next"], format!("2 of {iterations}"), "{r}");
    // The workers' log "{} reached iteration {} (checksum {:#x})", found by its format string,
    // shows its message formatted.
    let log = searched["log"].as_str().unwrap();
    assert!(log.contains(" reached iteration ") && !log.contains('{'), "{r}");
    // The statistics panel of the whole trace has `phosphor stats`' figures for each scope path.
    let shown = r["stats"].as_array().unwrap();
    let scopes = stats["paths"].as_array().unwrap().iter().filter(|k| k["type"] == "scope");
    let mut checked = 0;
    for k in scopes {
        let path: Vec<&str> = k["path"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
        let row = shown
            .iter()
            .find(|r| r["path"] == path.join("/"))
            .unwrap_or_else(|| panic!("no {path:?} in {r}"));
        assert_eq!(row["count"], k["count"], "{path:?}");
        assert_eq!(row["total_ns"], k["durations"]["total_ns"], "{path:?}");
        checked += 1;
    }
    assert!(checked >= 8, "{checked} paths");
    // Its row `batch/iteration`: the histogram holds every one, the slowest is the longest.
    let iteration = stats["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["path"] == serde_json::json!(["batch", "iteration"]))
        .unwrap();
    assert_eq!(r["kind"]["count"], iteration["count"], "{r}");
    assert_eq!(r["kind"]["slowest_ns"], iteration["durations"]["max_ns"], "{r}");
    assert_eq!(r["kind"]["listed"], 20, "{r}");
    // The flame graph: its roots add up to the outermost paths' time, and it draws a box a path.
    let roots: u64 = stats["paths"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["path"].as_array().unwrap().len() == 1 && k["durations"].is_object())
        .map(|k| k["durations"]["total_ns"].as_u64().unwrap())
        .sum();
    assert_eq!(r["flame"]["total_ns"].as_u64(), Some(roots), "{r}");
    assert!(r["flame"]["boxes"].as_u64().unwrap() > 8, "{r}");
    assert!(std::fs::metadata(&shot).unwrap().len() > 10_000, "a screenshot of the page");
}

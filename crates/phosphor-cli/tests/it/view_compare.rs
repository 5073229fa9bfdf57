//! `phosphor view BASE NEW --compare` (issue 39's comparison): `/api/compare` serves `phosphor
//! diff BASE NEW --json`'s rows, and the page (`scripts/browser/view-compare.mjs`, headless
//! Chromium) shows them, the significant changes marked, each row opening the slowest occurrences
//! of its path in both traces, each of those selecting its slice of its trace on the timeline.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use phosphor::format::file::Trailer;
use phosphor::format::{Phase, Record};
use phosphor_craft::{callsite, monotonic, records, ChunkStream, TraceWriter};
use serde_json::{json, Value};

use crate::browser::check;
use crate::cli::{phosphor, scratch, stderr, stdout};
use crate::view::{get, wait_indexed};

const ID: u32 = phosphor::format::FIRST_CALLSITE_ID;

/// A running `phosphor view --compare`, killed when dropped.
struct Viewer(Child);

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `phosphor view --compare base new` (indexes in the scratch folder `cache`); gives the
/// server and its `127.0.0.1:PORT` once both traces are indexed.
fn start(base: &Path, new: &Path, cache: &str) -> (Viewer, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_phosphor"))
        .args(["view", "--no-open", "--compare", "--cache"])
        .arg(scratch(cache))
        .args([base, new])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let viewer = Viewer(child);
    let url = lines.next().expect("a first line").unwrap();
    let host = url.strip_prefix("http://").and_then(|h| h.strip_suffix('/')).expect("http://HOST:PORT/");
    wait_indexed(host);
    (viewer, host.to_owned())
}

/// `/api/compare` once the server has compared the traces (asked again while it computes).
fn compared(host: &str) -> Value {
    for _ in 0..6000 {
        let (status, c) = get(host, "/api/compare");
        assert_eq!(status, 200, "{c}");
        match c["state"].as_str() {
            Some("ready") => return c,
            Some("computing") => std::thread::sleep(std::time::Duration::from_millis(20)),
            _ => panic!("{c}"),
        }
    }
    panic!("{host}: not compared after 2 minutes")
}

/// `phosphor diff --json base new`.
fn diff_json(test: &str, base: &Path, new: &Path) -> Value {
    let out = phosphor(test, &["diff", "--json", base.to_str().unwrap(), new.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// Two runs of `phosphor demo`, of 3,000 and 6,000 events a worker: the compare panel's rows are
/// `phosphor diff --json`'s, row for row, in its order (one computation: `phosphor_export`'s).
#[test]
fn view_compare_serves_the_rows_phosphor_diff_prints() {
    let dir = scratch("view-compare-demo");
    let run = |name: &str, events: &str| -> PathBuf {
        let out_dir = dir.join(name);
        let out = phosphor(
            &format!("view-compare-demo-{name}"),
            &["demo", "--threads", "2", "--events", events, "-o", out_dir.to_str().unwrap()],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        out_dir.join("trace.phos")
    };
    let (base, new) = (run("base", "3000"), run("new", "6000"));
    let (_viewer, host) = start(&base, &new, "view-compare-demo-cache");
    let c = compared(&host);
    let d = diff_json("view-compare-demo-diff", &base, &new);
    assert!(d["rows"].as_array().unwrap().len() > 8, "{d}");
    assert_eq!(c["rows"], d["rows"]);
    assert_eq!(c["rows_total"], d["rows_total"]);
    assert_eq!(c["significance"], d["significance"]);
    assert_eq!((&c["base"]["events"], &c["new"]["events"]), (&d["base"]["events"], &d["new"]["events"]));
    assert_eq!((&c["base"]["trace"], &c["new"]["trace"]), (&json!(0), &json!(1)));
    // A scope's row names the path `/api/kind` takes; its count there is the row's.
    let rows = c["rows"].as_array().unwrap();
    let k = rows.iter().position(|r| r["path"] == "batch/iteration").expect("batch/iteration");
    assert_eq!(c["kinds"][k], json!({"type": "scope", "path": ["batch", "iteration"]}));
    for (side, n) in [("base", 0), ("new", 1)] {
        let (_, kind) =
            get(&host, &format!("/api/kind?trace={n}&type=scope&path=%5B%22batch%22%2C%22iteration%22%5D"));
        assert_eq!(kind["count"], rows[k][side]["count"], "{side}: {kind}");
    }
    // The async row `item`: its slices, found on the async tracks of its name, as many as it counts.
    let item = rows.iter().position(|r| r["type"] == "async").expect("an async row");
    assert_eq!(c["kinds"][item], json!({"type": "async", "path": ["item"]}));
    for (side, n) in [("base", 0), ("new", 1)] {
        let (_, kind) = get(&host, &format!("/api/kind?trace={n}&type=async&path=%5B%22item%22%5D"));
        assert_eq!(kind["count"], rows[item][side]["count"], "{side}: {kind}");
        assert_eq!(kind["slowest"][0]["duration_ns"], rows[item][side]["max_ns"], "{side}: {kind}");
        assert!(kind["slowest"][0]["async"].is_u64(), "{kind}");
    }
    // Rows of instants and logs have no durations, nor occurrences to list.
    for (r, k) in rows.iter().zip(c["kinds"].as_array().unwrap()) {
        let durations = ["scope", "lock_wait", "lock_held", "async"].contains(&r["type"].as_str().unwrap());
        assert_eq!(k.is_null(), !durations, "{r} {k}");
    }
}

/// `--compare` takes two traces, BASE and NEW: one, or three (a folder of three), is an error
/// that says so, before anything is served.
#[test]
fn view_compare_needs_exactly_two_traces() {
    let dir = scratch("view-compare-count");
    for name in ["a", "b", "c"] {
        trace(&dir.join(format!("{name}.phos")), 10, 1_000, 1_000, "last");
    }
    let one = phosphor(
        "view-compare-one",
        &["view", "--no-open", "--compare", dir.join("a.phos").to_str().unwrap()],
    );
    let three = phosphor("view-compare-three", &["view", "--no-open", "--compare", dir.to_str().unwrap()]);
    for (out, n) in [(one, 1), (three, 3)] {
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let e = stderr(&out);
        assert!(
            e.contains("--compare compares exactly two traces, BASE and NEW")
                && e.contains(&format!("given {n}")),
            "{e}"
        );
        assert!(stdout(&out).is_empty(), "served: {}", stdout(&out));
    }
}

/// A trace of `frames` 50 µs `frame`s (a few ns apart) on thread `main`, each holding a `step` of
/// `step_ns` (a few ns apart) and starting an async `load` of `load_ns` (a few ns apart), then one
/// slice named `last`.
fn trace(path: &Path, frames: u64, step_ns: u64, load_ns: u64, last: &str) {
    let mut w = TraceWriter::new(Vec::new(), monotonic(), "compare").unwrap();
    w.strings(&["craft", "", "view_compare.rs"]).unwrap();
    let sites = [
        ("frame", Phase::Complete),
        ("step", Phase::Complete),
        (last, Phase::Complete),
        ("load", Phase::AsyncBegin),
        ("load", Phase::AsyncEnd),
    ];
    let first = w.strings(&sites.map(|s| s.0)).unwrap();
    w.callsites(sites.iter().enumerate().map(|(i, s)| callsite(ID + i as u32, s.1, first + i as u32)))
        .unwrap();
    let main = w.string("main").unwrap();
    w.threads([(1, main)]).unwrap();
    let t0 = 1_000_000;
    // Each event with the time it is recorded at: a complete slice's end.
    let mut events: Vec<(u64, Vec<Record>)> = Vec::new();
    for k in 0..frames {
        let at = t0 + k * 100_000;
        let step = step_ns + (k % 7) * 10;
        events.push((at + 1_000 + step, records::complete(at + 1_000, ID + 1, step).to_vec()));
        let frame = 50_000 + (k % 5) * 10;
        events.push((at + frame, records::complete(at, ID, frame).to_vec()));
        let load = at + 2_000;
        events.push((load, records::async_edge(load, ID + 3, k).to_vec()));
        let end = load + load_ns + (k % 3) * 10;
        events.push((end, records::async_edge(end, ID + 4, k).to_vec()));
    }
    let last = t0 + frames * 100_000;
    events.push((last + 20_000, records::complete(last, ID + 2, 20_000).to_vec()));
    events.sort_by_key(|e| e.0);
    let mut stream = ChunkStream::new(1);
    for (_, e) in events {
        stream.push(&mut w, &e).unwrap();
    }
    stream.flush(&mut w).unwrap();
    std::fs::write(path, w.finish(Trailer::default()).unwrap()).unwrap();
}

/// Whether a CSS colour is a red: red well above green and blue.
fn reddish(colour: &Value) -> bool {
    let [r, g, b] = rgb(colour);
    r >= 140 && r >= 2 * g.max(b)
}

/// Whether a CSS colour is a green: green well above red and blue.
fn greenish(colour: &Value) -> bool {
    let [r, g, b] = rgb(colour);
    g >= 100 && g >= 2 * r.max(b)
}

/// A CSS colour's `[r, g, b]` (`rgb(r, g, b)`).
fn rgb(colour: &Value) -> [u32; 3] {
    let text = colour.as_str().unwrap_or_default();
    let v: Vec<u32> = text
        .trim_start_matches("rgb(")
        .trim_end_matches(')')
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .collect();
    v.try_into().unwrap_or_else(|_| panic!("not rgb(r, g, b): {colour}"))
}

/// The page: the panel opens by itself with the diff's rows; `frame/step`, three times as long in
/// NEW, is marked slower (▲, in red), the async `load`, half as long, faster (▼, in green);
/// `frame`, alike, is not marked; `old` reads `gone`, `added` `new`; the p50 column sorts by its
/// change; a click on `frame/step` lists its slowest occurrences in BASE and in NEW, and a click on
/// one selects that slice of that trace; likewise an async slice of `load`, on its async track.
#[test]
fn view_compare_page_marks_significant_rows_and_opens_both_sides_occurrences() {
    let dir = scratch("view-compare-page-files");
    let (base, new) = (dir.join("base.phos"), dir.join("new.phos"));
    trace(&base, 300, 10_000, 40_000, "old");
    trace(&new, 300, 30_000, 20_000, "added");
    let (_viewer, host) = start(&base, &new, "view-compare-page-cache");
    let want = diff_json("view-compare-page-diff", &base, &new);
    let shots = scratch("view-compare-page");
    let url = format!("http://{host}/");
    let params = json!({"row": "frame/step", "async_row": "load"}).to_string();
    let r = check("view-compare.mjs", &[url.as_ref(), params.as_ref(), shots.as_os_str(), "120".as_ref()]);
    assert_eq!(r["errors"], json!([]), "{r}");
    assert_eq!(r["button_hidden"], false, "{r}");
    assert!(r["head"].as_str().unwrap().contains("2 changed significantly"), "{r}");

    // The rows, in the diff's order.
    let rows = r["rows"].as_array().unwrap();
    let paths: Vec<&Value> = rows.iter().map(|x| &x["path"]).collect();
    let want_paths: Vec<&Value> = want["rows"].as_array().unwrap().iter().map(|x| &x["path"]).collect();
    assert_eq!(paths, want_paths, "{r}");
    let row = |p: &str| rows.iter().find(|x| x["path"] == p).unwrap_or_else(|| panic!("no {p}: {r}"));
    let step = row("frame/step");
    assert_eq!(
        (step["significant"].as_bool(), step["direction"].as_str()),
        (Some(true), Some("slower")),
        "{step}"
    );
    assert_eq!(step["mark"], "▲", "{step}");
    assert!(step["classes"].as_array().unwrap().contains(&json!("slower")), "{step}");
    assert!(reddish(&step["mark_colour"]), "{step}");
    assert!(step["p"].as_str().unwrap().ends_with(" slower"), "{step}");
    // p50 30.03 µs against 10.03 µs: +199.4%, as `phosphor diff` writes it.
    let p50 = &want["rows"].as_array().unwrap().iter().find(|x| x["path"] == "frame/step").unwrap()["change"]
        ["p50_ns"];
    let rel = format!("{:+.1}%", 100.0 * p50["relative"].as_f64().unwrap());
    assert_eq!(step["changes"][2], json!(rel), "{step}");
    let frame = row("frame");
    assert_eq!((frame["significant"].as_bool(), frame["mark"].as_str()), (Some(false), Some("")), "{frame}");
    assert!(!reddish(&frame["mark_colour"]) && !reddish(&frame["name_colour"]), "{frame}");
    assert!(reddish(&step["name_colour"]), "{step}");
    assert_eq!(
        (row("old")["mark"].as_str(), row("added")["mark"].as_str()),
        (Some("gone"), Some("new")),
        "{r}"
    );
    // The async `load`, half as long in NEW: significant, faster (▼, in green).
    let load = row("load");
    assert_eq!((load["direction"].as_str(), load["mark"].as_str()), (Some("faster"), Some("▼")), "{load}");
    assert!(greenish(&load["mark_colour"]) && !reddish(&load["mark_colour"]), "{load}");

    // Sorted by the change of p50, largest first: `added` (new), `frame/step` (+199%), then the others;
    // the other way round on a second click; `#` gives the diff's order back.
    let order = |k: &str| -> Vec<String> {
        r[k].as_array().unwrap().iter().map(|x| x["path"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(order("sorted_p50")[..2], ["added", "frame/step"], "{r}");
    assert_eq!(order("sorted_p50").last().map(String::as_str), Some("old"), "{r}");
    assert_eq!(order("sorted_p50_again").last().map(String::as_str), Some("added"), "{r}");
    assert_eq!(r["diff_order"], json!(want_paths), "{r}");

    // `frame/step`'s occurrences: the slowest 20 of each side, longest first, each as `phosphor diff` measured.
    let o = &r["occurrences"];
    assert_eq!(o["open"], "frame/step", "{o}");
    assert_eq!(o["rows_after"].as_u64(), Some(rows.len() as u64), "the table stays: {o}");
    let want_step = want["rows"].as_array().unwrap().iter().find(|x| x["path"] == "frame/step").unwrap();
    for (side, trace) in [("base", 0), ("new", 1)] {
        let s = &o[side];
        assert_eq!(s["trace"], trace, "{o}");
        assert!(s["head"].as_str().unwrap().contains("300,"), "{s}");
        let listed = s["listed"].as_array().unwrap();
        assert_eq!(listed.len(), 20, "{s}");
        assert_eq!(listed[0]["duration_ns"], want_step[side]["max_ns"], "{s}");
        let durations: Vec<u64> = listed.iter().map(|l| l["duration_ns"].as_u64().unwrap()).collect();
        assert!(durations.windows(2).all(|w| w[0] >= w[1]), "{durations:?}");
    }
    // A click on an occurrence selects that slice, of that trace, shown in the window.
    for (click, side, trace) in [("new_click", "new", 1), ("base_click", "base", 0)] {
        let c = &r[click];
        assert_eq!(c["selected"]["trace"], trace, "{c}");
        assert_eq!(c["selected"]["index"], o[side]["listed"][0]["index"], "{c}");
        assert_eq!(c["details"], "step", "{c}");
        assert_eq!(c["duration_ns"], o[side]["listed"][0]["duration_ns"], "{c}");
        let (s, v) = (&c["selected"], &c["view"]);
        assert!(v["start"].as_f64() <= s["start"].as_f64() && v["end"].as_f64() >= s["end"].as_f64(), "{c}");
    }
    // The async row's occurrences: NEW's slowest `load`, selected on its async track.
    let a = &r["async_occurrences"];
    assert_eq!(a["open"], "load", "{a}");
    assert_eq!(a["new"]["listed"].as_array().unwrap().len(), 20, "{a}");
    let want_load = want["rows"].as_array().unwrap().iter().find(|x| x["path"] == "load").unwrap();
    assert_eq!(a["new"]["listed"][0]["duration_ns"], want_load["new"]["max_ns"], "{a}");
    let c = &r["async_click"];
    assert_eq!(c["selected"]["trace"], 1, "{c}");
    assert_eq!(c["selected"]["index"], a["new"]["listed"][0]["index"], "{c}");
    assert_eq!(c["details"], "load", "{c}");
    assert!(
        c["rows"].as_array().unwrap().iter().any(|row| row[0] == "track"),
        "an async slice's details: {c}"
    );
    assert!(std::fs::metadata(shots.join("compare.png")).unwrap().len() > 10_000, "a screenshot");
}

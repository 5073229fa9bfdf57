//! The viewer's side panels (issue 39, defects 5, 6, 8 and 9) in headless Chromium
//! (`scripts/browser/view-panels.mjs`), on two crafted traces served at once: `main` (a 100 ms
//! `batch` holding two `iteration`s that each hold a `step`, a lock's wait and hold, an async
//! track of three `fetch`es, and a `worker` thread) and `other` (one `load`).

use std::path::{Path, PathBuf};

use phosphor::format::file::Trailer;
use phosphor::format::{Phase, Record};
use phosphor_craft::{callsite, monotonic, records, ChunkStream, TraceWriter};
use serde_json::{json, Value};

use crate::browser::check;
use crate::cli::scratch;
use crate::view::start_viewer;

const ID: u32 = phosphor::format::FIRST_CALLSITE_ID;
const T0: u64 = 1_000_000;
const LONG: &str = "deserialize_every_record_of_the_input_file_twice";

/// A thread: its tid, its name and its events as (callsite, start in µs, duration in µs; an async
/// edge's duration is its async id).
type Thread<'a> = (u32, &'a str, Vec<(u32, u64, u64)>);

/// A trace of `callsites` (name, phase) and `threads`.
fn trace(path: &Path, callsites: &[(&str, Phase)], threads: &[Thread]) {
    let mut w = TraceWriter::new(Vec::new(), monotonic(), "panels").unwrap();
    w.strings(&["craft", "", "view_panels.rs"]).unwrap();
    let names: Vec<&str> = callsites.iter().map(|c| c.0).collect();
    let first = w.strings(&names).unwrap();
    w.callsites(callsites.iter().enumerate().map(|(i, c)| callsite(ID + i as u32, c.1, first + i as u32)))
        .unwrap();
    let thread_names: Vec<(u32, u32)> = threads.iter().map(|t| (t.0, w.string(t.1).unwrap())).collect();
    w.threads(thread_names).unwrap();
    for (tid, _, events) in threads {
        // Each event where it is recorded: a complete slice at its end.
        let mut recs: Vec<(u64, Vec<Record>)> = events
            .iter()
            .map(|&(k, us, dur)| {
                let at = T0 + us * 1000;
                match callsites[k as usize].1 {
                    Phase::AsyncBegin | Phase::AsyncEnd => {
                        (at, records::async_edge(at, ID + k, dur).to_vec())
                    }
                    _ => (at + dur * 1000, records::complete(at, ID + k, dur * 1000).to_vec()),
                }
            })
            .collect();
        recs.sort_by_key(|r| r.0);
        let mut stream = ChunkStream::new(*tid);
        for (_, e) in recs {
            stream.push(&mut w, &e).unwrap();
        }
        stream.flush(&mut w).unwrap();
    }
    std::fs::write(path, w.finish(Trailer::default()).unwrap()).unwrap();
}

/// The two traces in folder `dir` of their own (each test writes its own: they run at once).
/// Times and durations are in µs.
fn panel_traces(dir: &str) -> PathBuf {
    let folder = scratch(dir);
    let callsites = [
        ("batch", Phase::Complete),
        ("iteration", Phase::Complete),
        ("step", Phase::Complete),
        ("queue.wait", Phase::LockWait),
        ("queue.held", Phase::LockHeld),
        ("fetch", Phase::AsyncBegin),
        ("fetch", Phase::AsyncEnd),
        ("parse", Phase::Complete),
        (LONG, Phase::Complete),
        ("tick", Phase::Complete),
    ];
    let main = vec![
        (0, 0, 100_000),
        (1, 20_000, 30_000),
        (2, 21_000, 10_000),
        (1, 55_000, 2_000),
        (2, 55_500, 500),
        (3, 60_000, 1_000),
        (4, 61_000, 4_000),
        (5, 1_000, 1),
        (5, 2_000, 2),
        (6, 80_000, 1),
        (5, 3_000, 3),
        (6, 81_000, 2),
        (6, 82_000, 3),
    ];
    let worker = vec![(1, 40_000, 5_000), (7, 50_000, 20_000), (8, 75_000, 20_000)];
    // 1,500 `tick`s of 20 µs, one every 60 µs: more than a search lists.
    let ticker = (0..1500).map(|k| (9, k * 60, 20)).collect();
    let threads = [(1, "main", main), (2, "worker", worker), (3, "ticker", ticker)];
    trace(&folder.join("a-main.phos"), &callsites, &threads);
    trace(&folder.join("b-other.phos"), &[("load", Phase::Complete)], &[(7, "loader", vec![(0, 0, 50_000)])]);
    folder
}

/// Runs the checks `checks` on a viewer of the two traces, at two pixels per CSS pixel.
fn run(name: &str, checks: &[&str]) -> Value {
    let dir = panel_traces(&format!("{name}-files"));
    let (_viewer, host) = start_viewer(&dir, &format!("{name}-cache"));
    let params = json!({"checks": checks, "dpr": 2}).to_string();
    let shots = scratch(name);
    let url = format!("http://{host}/");
    let r = check("view-panels.mjs", &[url.as_ref(), params.as_ref(), shots.as_os_str(), "120".as_ref()]);
    assert_eq!(r["errors"], json!([]), "{r}");
    r
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Defect 5: a hit is shown centred on the trace (it was centred at the old zoom, half the window
/// before the trace) and selected; every hit in view is ticked on its track (none was); an async
/// hit names its track and selects its slice (it read "thread 9" and selected nothing); the list
/// gives times to the nanosecond (it gave "20.0 ms"); hits past those listed are ticked too.
#[test]
fn search_hits_are_centred_selected_ticked_on_their_tracks_and_async_hits_name_their_track() {
    let r = run("view-panels-search", &["search"]);
    let s = &r["search"];
    let a = &s["async"];
    assert_eq!(a["details"], "fetch", "{s}");
    assert_eq!(a["selected"], a["hit"]["index"], "{s}");
    let first = a["first"].as_str().unwrap();
    assert!(first.contains("fetch") && !first.contains("thread"), "{first:?}");
    let it = &s["iteration"];
    let (hit, view, span) = (&it["hit"], &it["view"], &it["span"]);
    assert_eq!(hit["name"], "iteration", "{s}");
    let len = f(&view["end"]) - f(&view["start"]);
    let mid = (f(&hit["start_ns"]) + f(&hit["end_ns"])) / 2.0;
    assert!(((f(&view["start"]) + f(&view["end"])) / 2.0 - mid).abs() <= 0.01 * len, "not centred: {s}");
    assert!(f(&view["start"]) >= f(&span[0]) - 1.0, "the window starts before the trace: {s}");
    assert!(f(&view["end"]) >= f(&hit["end_ns"]), "{s}");
    assert_eq!(it["selected"], hit["index"], "{s}");
    assert_eq!(it["details"], "iteration", "{s}");
    // `iteration` at 20 ms and 55 ms on `main`, at 40 ms on `worker`: all in the window.
    assert_eq!(it["ticks"], json!({"main": 2, "worker": 1}), "{s}");
    // "20.000 000 ms": to the nanosecond.
    let li = it["first"].as_str().unwrap();
    assert!(li.starts_with("20.000\u{2009}000 ms"), "{li:?}");
    // Of 1,500 `tick`s, 1,000 listed: the ticks reach the last one (they stopped at the listed).
    let t = &s["ticks"];
    assert_eq!((t["listed"].as_u64(), t["total"].as_u64()), (Some(1000), Some(1500)), "{s}");
    assert!((f(&t["last"]) - f(&t["want"])).abs() <= 3.0, "{s}");
    assert!(f(&t["ticks"]) >= 1.0, "{s}");
    assert_eq!(t["cleared"], "0", "an empty search left its ticks: {s}");
}

/// Defect 6: with a range selected, the panel header shows it with "zoom to" and "clear", the
/// statistics are of the range, "zoom to" shows it, "clear" (and Esc) give the whole trace's
/// statistics and flame graph again (they stayed limited to the range until a reload).
#[test]
fn a_range_is_shown_over_the_panels_zoomed_to_and_cleared_and_the_panels_follow_it() {
    let r = run("view-panels-range", &["range"]);
    let g = &r["range"];
    let whole = g["whole"].as_u64().unwrap();
    assert!(g["bar"].as_str().unwrap_or("").starts_with("range "), "{g}");
    assert!(g["ranged"]["range"].as_str().is_some_and(|s| !s.is_empty()), "{g}");
    assert!(g["ranged"]["slices"].as_u64().unwrap() < whole, "{g}");
    let (sel, view) = (&g["zoomed"]["selection"], &g["zoomed"]["view"]);
    let (a, b) = (f(&sel[0]), f(&sel[1]));
    assert!(
        f(&view["start"]) <= a
            && f(&view["end"]) >= b
            && f(&view["end"]) - f(&view["start"]) <= 1.3 * (b - a),
        "{g}"
    );
    assert_eq!(g["cleared"]["selection"], Value::Null, "{g}");
    assert_eq!(g["cleared"]["range"], "", "{g}");
    assert_eq!(g["cleared"]["slices"].as_u64(), Some(whole), "{g}");
    assert_eq!(g["cleared"]["bar_hidden"], true, "{g}");
    assert!(g["flame_ranged"].as_str().unwrap_or("").contains("the range"), "{g}");
    assert!(g["flame_after_esc"].as_str().unwrap_or("").contains("everything"), "{g}");
}

/// Defect 8: the statistics table fits its panel (it clipped `max`), names a lock's rows `queue
/// (wait)` and `queue (held)` (it showed `queue lock_held`) and has a trace column with two traces
/// open; the histogram is readable (it was 400 × 90 with two labels): a time axis with ticks,
/// counts, p50, p90 and p99 marked, at the screen's pixel ratio.
#[test]
fn the_statistics_fit_name_locks_and_traces_and_the_histogram_has_axes_and_percentiles() {
    let r = run("view-panels-table", &["table"]);
    let t = &r["table"];
    assert!(f(&t["scroll_width"]) <= f(&t["client_width"]), "the table is clipped: {t}");
    let names: Vec<&str> = t["names"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(names.contains(&"queue (wait)") && names.contains(&"queue (held)"), "{names:?}");
    assert_eq!(t["heads"][0], "trace", "{t}");
    let h = &t["histogram"];
    assert!(f(&h["css_width"]) >= 300.0 && f(&h["css_height"]) >= 150.0, "{h}");
    assert!((f(&h["width"]) - 2.0 * f(&h["css_width"])).abs() <= 2.0, "{h}");
    let texts: Vec<&str> = h["texts"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    for p in ["p50 ", "p90 ", "p99 "] {
        assert!(texts.iter().any(|x| x.starts_with(p)), "no {p:?} in {texts:?}");
    }
    let times = texts.iter().filter(|x| x.ends_with("s") && !x.starts_with('p')).count();
    assert!(times >= 2, "time ticks: {texts:?}");
    assert!(texts.contains(&"0"), "count ticks: {texts:?}");
    assert!(f(&h["scroll_width"]) <= f(&h["client_width"]), "the histogram is clipped: {h}");
}

/// Defect 8: the flame graph is interactive (it was a static 420 × 80 picture): crisp at the
/// screen's pixel ratio, inner frames labelled (a name that does not fit cut with an ellipsis),
/// a hover giving a frame's name, total and self time and count, a click zooming into a frame (a
/// click on it again or on a frame above zooming back out), as wide as the panels once they are
/// widened (their splitter), a thread picked alone, and the search's matches highlighted.
#[test]
fn the_flame_graph_labels_hovers_zooms_picks_a_thread_and_highlights_the_search() {
    let r = run("view-panels-flame", &["flame"]);
    let g = &r["flame"];
    assert!((f(&g["width"]) - 2.0 * f(&g["css_width"])).abs() <= 2.0, "{g}");
    let texts = |k: &str| -> Vec<String> {
        g[k].as_array()
            .unwrap_or_else(|| panic!("no {k}: {g}"))
            .iter()
            .map(|t| t.as_str().unwrap().to_owned())
            .collect()
    };
    let whole = texts("texts");
    assert!(whole.iter().any(|t| t == "iteration"), "{whole:?}");
    assert!(whole.iter().any(|t| t.ends_with('…') && LONG.starts_with(t.trim_end_matches('…'))), "{whole:?}");
    let tip = g["tip"].as_str().unwrap_or("");
    for want in ["iteration", "total 32.000\u{2009}000 ms", "self 21.500\u{2009}000 ms", "count 2"] {
        assert!(tip.contains(want), "no {want:?} in {tip:?}");
    }
    assert_eq!(g["zoomed"]["focus"], "iteration", "{g}");
    assert!(texts("zoomed_texts").iter().any(|t| t == "step"), "{g}");
    // The frame zoomed into, clicked again: its parent; the top frame: all of it.
    assert_eq!(g["up"], "batch", "{g}");
    assert_eq!(g["unzoomed"], "", "{g}");
    // The panels' splitter dragged 300 px left: the graph 300 px wider.
    assert!((f(&g["widened"]) - f(&g["css_width"]) - 300.0).abs() <= 4.0, "{g}");
    let worker = texts("worker_texts");
    assert!(worker.iter().any(|t| t == "parse") && !worker.iter().any(|t| t == "batch"), "{worker:?}");
    assert_eq!(g["matches"], "2", "{g}");
}

/// Defect 9: a panel's computation past 100 ms shows "computing…" and dims the old results (it
/// showed nothing meanwhile), and an answer overtaken by a newer request is dropped, not shown as
/// current. A search (seconds on a big trace) says so meanwhile.
#[test]
fn slow_panels_show_progress_and_an_overtaken_answer_is_dropped() {
    let r = run("view-panels-busy", &["busy"]);
    let b = &r["busy"];
    assert!(b["busy"].as_str().unwrap_or("").contains("computing"), "{b}");
    assert_eq!(b["stale"], true, "{b}");
    assert_eq!(b["after"]["range"], "", "the range's late answer was shown: {b}");
    assert_eq!(b["after"]["busy"], false, "{b}");
    assert_eq!(b["after"]["slices"], b["whole"], "{b}");
    // A search: "searching…" in its box meanwhile, then where its first hit is.
    assert_eq!(b["search"]["at"], "searching…", "{b}");
    assert_eq!(b["search"]["after"], "1 of 3", "{b}");
}

/// The endpoints behind the panels: a row's exact p50, p90 and p99 (`/api/kind`), one thread's
/// table and a lock's row names (`/api/stats`), an async hit's track and every hit of a window as
/// pixel columns (`/api/search`).
#[test]
fn the_panels_endpoints_give_percentiles_one_threads_rows_async_hits_and_window_ticks() {
    let dir = panel_traces("view-panels-api-files");
    let (_viewer, host) = start_viewer(&dir, "view-panels-api-cache");
    let (_, list) = crate::view::get(&host, "/api/traces");
    let main = list["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["file"].as_str().unwrap().contains("a-main"))
        .unwrap();
    let (n, origin) = (main["trace"].as_u64().unwrap(), main["start_ns"].as_i64().unwrap());
    let path = "%5B%22batch%22%2C%22iteration%22%5D";
    let (status, k) = crate::view::get(&host, &format!("/api/kind?trace={n}&type=scope&path={path}"));
    assert_eq!(status, 200, "{k}");
    // Durations 2 ms and 30 ms: the nearest rank.
    assert_eq!(
        (k["p50_ns"].as_u64(), k["p90_ns"].as_u64(), k["p99_ns"].as_u64()),
        (Some(2_000_000), Some(30_000_000), Some(30_000_000)),
        "{k}"
    );
    let (_, one) = crate::view::get(&host, &format!("/api/stats?trace={n}&tid=2"));
    let mut names: Vec<&str> =
        one["rows"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["deserialize_every_record_of_the_input_file_twice", "iteration", "parse"], "{one}");
    let (_, all) = crate::view::get(&host, "/api/stats");
    let locks: Vec<&str> = all["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"] != "scope")
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(locks.len(), 2, "{all}");
    assert!(locks.contains(&"queue (wait)") && locks.contains(&"queue (held)"), "{all}");
    let (status, bad) = crate::view::get(&host, &format!("/api/stats?trace={n}"));
    assert_eq!(status, 400, "{bad}");
    let (_, s) = crate::view::get(&host, "/api/search?q=fetch&limit=1");
    assert_eq!(s["hits"][0]["async"], 0, "{s}");
    // The 1,500 ticks over 100 px of 90 ms: each column of 0.9 ms holds 15; one run of them all.
    let (start, end) = (origin, origin + 90_000_000);
    let (_, w) = crate::view::get(&host, &format!("/api/search?q=tick&start={start}&end={end}&px=100"));
    let ticks = w["ticks"].as_array().unwrap();
    assert_eq!(ticks.len(), 1, "{w}");
    assert_eq!(ticks[0]["runs"], json!([[0, 99]]), "{w}");
    // 0.5 ms from 30.01 ms at 500 px (1 µs each): the tick at 30.06 ms (20 µs: columns 50 to 70) and
    // those at 30.12, 30.18, ...; the one at 30.00 ms ends at 30.02 ms, inside: columns 0 to 10.
    let (start, end) = (origin + 30_010_000, origin + 30_510_000);
    let (_, w) = crate::view::get(&host, &format!("/api/search?q=tick&start={start}&end={end}&px=500"));
    let runs = &w["ticks"][0]["runs"];
    assert_eq!(runs[0], json!([0, 10]), "{w}");
    assert_eq!(runs[1], json!([50, 70]), "{w}");
    assert_eq!(runs.as_array().unwrap().len(), 9, "{w}");
}

//! Issue 39's level of detail that never lies: on a demo trace, 50 random windows at each of
//! three widths, and every slice at least a pixel wide at that scale is given by `/api/slices` as
//! an item of its own (never inside a merged run); for some of the windows, loaded in headless
//! Chromium from a link to them (`scripts/browser/view-windows.mjs`), it is drawn by itself, with
//! its name or its name cut with an ellipsis (or none where not even a letter fits). The truth is
//! the trace's slices as `phosphor demo` writes them in Chrome JSON, not the viewer's index.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use phosphor_craft::Rng;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::browser::check;
use crate::cli::{phosphor, scratch, stderr};
use crate::view::{get, start_viewer};

/// The canvas widths, in CSS pixels.
const WIDTHS: [u32; 3] = [400, 1200, 2400];
/// Random windows per width, asked of the API (200 a width made 3,600 requests and checked
/// 637,000 slices a pixel wide, against the 5,000 the test asks for, in 13 s of the test's 37).
const WINDOWS: usize = 50;
/// Of them, the first few per width loaded in the browser.
const IN_BROWSER: usize = 5;
/// The narrowest window, in ns.
const NARROWEST: f64 = 2_000.0;

/// One event of the Chrome JSON, as far as the check needs it.
#[derive(Deserialize)]
struct ChromeEvent {
    ph: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    ts: f64,
    #[serde(default)]
    dur: f64,
    #[serde(default)]
    tid: Value,
    #[serde(default)]
    id: Value,
    #[serde(default)]
    id2: Value,
    #[serde(default)]
    cat: String,
}

#[derive(Deserialize)]
struct Chrome {
    #[serde(rename = "traceEvents")]
    events: Vec<ChromeEvent>,
}

/// Where a slice is drawn: a thread (by tid) or an async track (by name).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum TrackKey {
    Thread(u64),
    Async(String),
}

/// A track's slices (start and end in ns from the Chrome JSON's zero, name), in classes by the
/// power of two of their duration, each sorted by start: the slices of a window at least some
/// duration long are found by a binary search a class.
#[derive(Default)]
struct Truth {
    classes: Vec<Vec<(i64, i64, String)>>,
}

impl Truth {
    fn add(&mut self, start: i64, end: i64, name: String) {
        let d = end - start;
        if d <= 0 {
            return;
        }
        let c = 63 - d.leading_zeros() as usize;
        if self.classes.len() <= c {
            self.classes.resize_with(c + 1, Vec::new);
        }
        self.classes[c].push((start, end, name));
    }

    fn sort(&mut self) {
        for c in &mut self.classes {
            c.sort();
        }
    }

    /// The slices that meet `[s, e]` (ns, shifted by `shift`) and last at least `min` ns.
    fn wide(&self, s: f64, e: f64, min: f64, shift: i64) -> Vec<(i64, i64, &str)> {
        let mut out = Vec::new();
        for (c, list) in self.classes.iter().enumerate() {
            let longest = (1i64 << (c + 1)) - 1;
            if (longest as f64) < min {
                continue;
            }
            let from = list.partition_point(|t| ((t.0 + shift) as f64) < s - longest as f64);
            for t in &list[from..] {
                let (a, b) = (t.0 + shift, t.1 + shift);
                if a as f64 > e {
                    break;
                }
                if b as f64 >= s && (b - a) as f64 >= min {
                    out.push((a, b, t.2.as_str()));
                }
            }
        }
        out
    }
}

/// A Chrome JSON time (µs, exact to the nanosecond once rounded) in ns.
fn ns(us: f64) -> i64 {
    (us * 1000.0).round() as i64
}

/// The demo's slices from its Chrome JSON: complete events and begin/end pairs by thread, async
/// begin/end pairs by name and id.
fn truth(json: &Path) -> BTreeMap<TrackKey, Truth> {
    let text = std::fs::read(json).unwrap();
    let doc: Chrome = serde_json::from_slice(&text).unwrap();
    let mut tracks: BTreeMap<TrackKey, Truth> = BTreeMap::new();
    let mut open: BTreeMap<u64, Vec<(i64, String)>> = BTreeMap::new();
    let mut open_async: BTreeMap<(String, String), Vec<(i64, bool)>> = BTreeMap::new();
    for e in doc.events {
        let tid = e.tid.as_u64().unwrap_or(u64::MAX);
        match e.ph.as_str() {
            "X" => {
                let start = ns(e.ts);
                tracks.entry(TrackKey::Thread(tid)).or_default().add(start, start + ns(e.dur), e.name);
            }
            "B" => open.entry(tid).or_default().push((ns(e.ts), e.name)),
            "E" => {
                let (start, name) = open.get_mut(&tid).and_then(Vec::pop).expect("an end after its begin");
                tracks.entry(TrackKey::Thread(tid)).or_default().add(start, ns(e.ts), name);
            }
            // An async slice's begin and end, by name and id (the file need not list the begin
            // first): paired once all are read.
            "b" | "e" => {
                let id = if e.id.is_null() { e.id2.to_string() } else { e.id.to_string() };
                let begin = e.ph == "b";
                open_async.entry((e.name, format!("{}/{id}", e.cat))).or_default().push((ns(e.ts), !begin));
            }
            _ => {}
        }
    }
    for ((name, _), mut edges) in open_async {
        // By time, a begin before an end at the same time; each end closes the last begin.
        edges.sort();
        let mut begins = Vec::new();
        for (t, end) in edges {
            if !end {
                begins.push(t);
            } else {
                let start = begins.pop().expect("an async end after its begin");
                tracks.entry(TrackKey::Async(name.clone())).or_default().add(start, t, String::new());
            }
        }
    }
    for t in tracks.values_mut() {
        t.sort();
    }
    tracks
}

/// The viewer's tracks: their query (`tid=N` or `async=A`) by key.
fn tracks_of(trace: &Value) -> Vec<(TrackKey, String)> {
    let mut out = Vec::new();
    for t in trace["threads"].as_array().unwrap() {
        let tid = t["tid"].as_u64().unwrap();
        out.push((TrackKey::Thread(tid), format!("tid={tid}")));
    }
    for a in trace["asyncs"].as_array().unwrap() {
        let name = a["name"].as_str().unwrap().to_owned();
        out.push((TrackKey::Async(name), format!("async={}", a["async"])));
    }
    out
}

/// The individual slices of an `/api/slices` answer (start, end, name), and how many runs.
fn items(answer: &Value) -> (HashSet<(i64, i64, String)>, usize) {
    let (mut slices, mut runs) = (HashSet::new(), 0);
    for level in answer["levels"].as_array().unwrap() {
        for it in level.as_array().unwrap() {
            let n = it[2].as_i64().unwrap();
            if n < 0 {
                runs += 1;
                // A run names its dominant name, one of the answer's.
                let name = &answer["names"][it[4].to_string()];
                assert!(name.is_string(), "a run without a dominant name: {it} in {}", answer["names"]);
                continue;
            }
            let name = answer["names"][n.to_string()].as_str().unwrap().to_owned();
            slices.insert((it[0].as_i64().unwrap(), it[1].as_i64().unwrap(), name));
        }
    }
    (slices, runs)
}

/// Whether an async truth (no name: the track's) matches an item.
fn found(set: &HashSet<(i64, i64, String)>, key: &TrackKey, (a, b, name): (i64, i64, &str)) -> bool {
    match key {
        TrackKey::Thread(_) => set.contains(&(a, b, name.to_owned())),
        TrackKey::Async(n) => set.contains(&(a, b, n.clone())),
    }
}

#[test]
fn every_slice_a_pixel_wide_is_its_own_item_and_drawn_by_itself_in_random_windows() {
    let dir = scratch("view-windows");
    let out = phosphor(
        "view-windows-demo",
        &["demo", "--threads", "3", "--events", "60000", "-o", dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let truth = truth(&dir.join("trace.json"));
    let (_viewer, host) = start_viewer(&dir.join("trace.phos"), "view-windows-cache");
    let (_, list) = get(&host, "/api/traces");
    let trace = &list["traces"][0];
    let (t0, t1) = (trace["start_ns"].as_i64().unwrap(), trace["end_ns"].as_i64().unwrap());
    let tracks = tracks_of(trace);
    for (key, _) in &tracks {
        assert!(truth.contains_key(key), "{key:?} is not in the Chrome JSON");
    }

    // The Chrome JSON's zero on the viewer's timeline: from the demo's one `join` slice (the
    // main thread's first), whose start and end must both agree.
    let main = trace["threads"].as_array().unwrap().iter().find(|t| t["name"] == "main").unwrap();
    let main_tid = main["tid"].as_u64().unwrap();
    let (_, whole) = get(&host, &format!("/api/slices?trace=0&tid={main_tid}&start={t0}&end={t1}&px=100"));
    let join = &whole["levels"][0][0];
    assert_eq!(whole["names"][join[2].to_string()], "join", "{whole}");
    let mut joins = truth[&TrackKey::Thread(main_tid)].wide(f64::MIN, f64::MAX, 0.0, 0);
    joins.retain(|t| t.2 == "join");
    assert_eq!(joins.len(), 1, "{joins:?}");
    let shift = join[0].as_i64().unwrap() - joins[0].0;
    assert_eq!(join[1].as_i64().unwrap() - joins[0].1, shift, "the join slice's end does not agree: {join}");

    let mut rng = Rng(0x39_1dd5_eed5);
    let span = (t1 - t0) as f64;
    let mut windows: BTreeMap<u32, Vec<(i64, i64)>> = BTreeMap::new();
    let (mut checked, mut runs, mut requests) = (0usize, 0usize, 0usize);
    for &px in &WIDTHS {
        for _ in 0..WINDOWS {
            // A length from 2 µs to the whole trace, evenly on a log scale; anywhere in it.
            let len = (NARROWEST * (span / NARROWEST).powf(rng.unit())).min(span).max(1.0) as i64;
            let s = t0 + ((t1 - t0 - len) as f64 * rng.unit()) as i64;
            let e = s + len;
            windows.entry(px).or_default().push((s, e));
            let min = len as f64 / f64::from(px);
            for (key, q) in &tracks {
                let (status, answer) =
                    get(&host, &format!("/api/slices?trace=0&{q}&start={s}&end={e}&px={px}"));
                assert_eq!(status, 200, "{answer}");
                requests += 1;
                let (set, n) = items(&answer);
                runs += n;
                for t in truth[key].wide(s as f64, e as f64, min, shift) {
                    assert!(
                        found(&set, key, t),
                        "{key:?}: {t:?} ({} px wide at {px} px for [{s}, {e}]) is not an item of its own",
                        (t.1 - t.0) as f64 / min,
                    );
                    checked += 1;
                }
            }
        }
    }
    // Not vacuous: many slices a pixel wide checked, and many runs merged around them.
    assert!(checked > 5_000 && runs > 5_000, "{checked} slices checked, {runs} runs, {requests} requests");

    // On the canvas.
    let url = format!("http://{host}/");
    let (mut drawn, mut labelled_runs) = (0usize, 0usize);
    for &px in &WIDTHS {
        let mine: Vec<(i64, i64)> =
            windows[&px].iter().take(IN_BROWSER).map(|&(s, e)| (s - t0, e - t0)).collect();
        let params = scratch(&format!("view-windows-{px}")).join("params.json");
        std::fs::write(&params, json!({"width": px, "windows": mine}).to_string()).unwrap();
        let r = check("view-windows.mjs", &[url.as_ref(), params.as_os_str(), "300".as_ref()]);
        assert_eq!(r["errors"], json!([]), "{}", &r.to_string()[..r.to_string().len().min(4000)]);
        let shown = r["windows"].as_array().unwrap();
        assert_eq!(shown.len(), mine.len());
        for w in shown {
            drawn += check_drawn(w, &truth, &tracks, trace, shift);
            for t in w["tracks"].as_array().unwrap() {
                labelled_runs += t["run_labels"].as_array().unwrap().len();
            }
        }
    }
    assert!(drawn > 300, "{drawn} slices checked on the canvas");
    // Some runs wide enough to say what they hold were drawn, and checked.
    assert!(labelled_runs > 0, "no run labelled in any window");
}

/// Checks one window the page drew: every slice of the truth a pixel wide at its scale is drawn
/// by itself with its label, as wide as the label lets it be. Gives how many were checked.
fn check_drawn(
    w: &Value,
    truth: &BTreeMap<TrackKey, Truth>,
    tracks: &[(TrackKey, String)],
    trace: &Value,
    shift: i64,
) -> usize {
    let f = |v: &Value| v.as_f64().unwrap();
    let (v0, v1) = (f(&w["view"][0]), f(&w["view"][1]));
    let mut checked = 0;
    for t in w["tracks"].as_array().unwrap() {
        let key = if t["kind"] == "thread" {
            TrackKey::Thread(t["tid"].as_u64().unwrap())
        } else {
            let a = t["async"].as_u64().unwrap() as usize;
            TrackKey::Async(trace["asyncs"][a]["name"].as_str().unwrap().to_owned())
        };
        assert!(tracks.iter().any(|k| k.0 == key), "{key:?}");
        let width = f(&t["width"]);
        let min = (v1 - v0) / width;
        let slices = t["slices"].as_array().unwrap();
        for want in truth[&key].wide(v0, v1, min, shift) {
            let name = match &key {
                TrackKey::Thread(_) => want.2.to_owned(),
                TrackKey::Async(n) => n.clone(),
            };
            let d = slices
                .iter()
                .find(|d| {
                    d[1].as_i64() == Some(want.0) && d[2].as_i64() == Some(want.1) && d[3] == name.as_str()
                })
                .unwrap_or_else(|| panic!("{key:?}: {want:?} not drawn by itself in {w}", w = short(w)));
            // Its label: the name, or the name cut with an ellipsis, or none where not even a
            // letter and the ellipsis fit in the part on screen (less 3 px margins).
            let label = d[6].as_str().unwrap();
            let visible = f(&d[5]).min(width) - f(&d[4]).max(0.0);
            let ok = label == name
                || label.strip_suffix('…').is_some_and(|cut| !cut.is_empty() && name.starts_with(cut))
                || (label.is_empty() && (visible <= 8.0 || visible - 6.0 < f(&d[7])));
            assert!(ok, "{key:?}: {want:?} drawn {visible:.1} px wide with label {label:?}");
            checked += 1;
        }
        // A run says how many slices it holds and its dominant name (one of the track's).
        for run in t["run_labels"].as_array().unwrap() {
            let (name, count, label) =
                (run[3].as_str().unwrap(), run[4].as_u64().unwrap(), run[5].as_str().unwrap());
            assert!(!name.is_empty() && count >= 2, "{run}");
            let text = format!("{} slices, mostly {name}", group(count));
            let cut = label.strip_suffix('…').unwrap_or(label);
            assert!(!cut.is_empty() && text.starts_with(cut), "run label {label:?}, not a start of {text:?}");
        }
    }
    checked
}

/// `n` with commas between groups of three digits (as the page writes counts).
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A window's answer, cut to be read in a failure.
fn short(w: &Value) -> String {
    let text = w.to_string();
    text[..text.len().min(3000)].to_owned()
}

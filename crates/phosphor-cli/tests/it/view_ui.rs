//! The viewer's timeline page as a Perfetto or Tracy user drives it (issue 39), in headless
//! Chromium (`scripts/browser/view-ui.mjs`), on a crafted trace whose every time is known: two
//! threads named `worker`, a 3.25 µs `iteration` at 45.3 ms with a u64 and an i64 argument past
//! 2^53, a counter, 48 overlapping async slices, and a slice whose name is too long for it.

use std::path::PathBuf;

use phosphor::format::file::Trailer;
use phosphor::format::{ArgType, Meta, Phase, Record};
use phosphor_craft::{callsite, monotonic, records, ChunkStream, TraceWriter};
use serde_json::{json, Value};

use crate::browser::check;
use crate::cli::scratch;
use crate::view::{get, start_viewer};

const ID: u32 = phosphor::format::FIRST_CALLSITE_ID;
const MS: u64 = 1_000_000;
/// The first tick of every thread (the trace starts there: the timeline's 0).
const T0: u64 = 1_000_000;
/// The 3.25 µs slice, from the trace's start.
const ITERATION: (u64, u64) = (45_300_000, 45_303_250);
const CHECKSUM: u64 = 10_482_063_840_709_898_622;
const OFFSET: i64 = -9_007_199_254_740_993;
const LONG: &str = "a_slice_name_far_too_long_to_fit_in_its_box_of_a_hundred_pixels";
/// The counter's samples: (ms from the start, value).
const COUNTER: [(u64, f64); 4] = [(10, 0.0), (30, 10.0), (50, 5.0), (70, 10.0)];

/// The crafted trace, in folder `dir` of its own (each test writes its own: they run at once).
fn ui_trace(dir: &str) -> PathBuf {
    let names =
        ["batch", "iteration", "iteration", LONG, "queue depth", "fetch", "fetch", "iteration", "tick"];
    let phases = [
        Phase::Complete,
        Phase::Begin,
        Phase::End,
        Phase::Complete,
        Phase::Counter,
        Phase::AsyncBegin,
        Phase::AsyncEnd,
        Phase::Complete,
        Phase::Complete,
    ];
    let mut w = TraceWriter::new(Vec::new(), monotonic(), "ui").unwrap();
    // Strings 0 to 2 are the category, the empty string and the file, as `callsite` wants.
    w.strings(&["craft", "", "view_ui.rs"]).unwrap();
    let first = w.strings(&names).unwrap();
    let worker = w.string("worker").unwrap();
    let ticker = w.string("ticker").unwrap();
    let (checksum, offset) = (w.string("checksum").unwrap(), w.string("offset").unwrap());
    w.callsites((0..names.len() as u32).map(|i| {
        let mut c = callsite(ID + i, phases[i as usize], first + i);
        if i == 1 {
            c.strings[2] = checksum;
            c.strings[3] = offset;
        }
        c
    }))
    .unwrap();
    w.threads([(1, worker), (2, worker), (3, ticker)]).unwrap();
    // Each thread's events in the order they are recorded: a complete slice at its end.
    let at = |ms: u64| T0 + ms * MS;
    let mut one: Vec<(u64, Vec<Record>)> = vec![
        (at(100), records::complete(at(0), ID, 100 * MS).to_vec()),
        (at(12), records::complete(at(10), ID + 3, 2 * MS).to_vec()),
        (
            T0 + ITERATION.0,
            vec![Record::new(
                T0 + ITERATION.0,
                ID + 1,
                Meta::new(0, ArgType::U64, ArgType::I64),
                [CHECKSUM, OFFSET as u64],
            )],
        ),
        (T0 + ITERATION.1, records::end(T0 + ITERATION.1, ID + 2).to_vec()),
    ];
    for (ms, v) in COUNTER {
        one.push((at(ms), records::counter(at(ms), ID + 4, v).to_vec()));
    }
    // 48 async slices open at once: 48 lanes.
    for k in 0..48u64 {
        one.push((at(1) + k * 10_000, records::async_edge(at(1) + k * 10_000, ID + 5, k + 1).to_vec()));
        one.push((at(90) - k * 10_000, records::async_edge(at(90) - k * 10_000, ID + 6, k + 1).to_vec()));
    }
    one.sort_by_key(|(t, _)| *t);
    let two: Vec<(u64, Vec<Record>)> = vec![
        (at(30), records::complete(at(20), ID + 7, 10 * MS).to_vec()),
        (at(95), records::complete(at(5), ID, 90 * MS).to_vec()),
    ];
    // A slice of 60 µs every 100 µs, all along.
    let three = (0..1000u64)
        .map(|k| {
            (at(0) + k * 100_000 + 60_000, records::complete(at(0) + k * 100_000, ID + 8, 60_000).to_vec())
        })
        .collect();
    for (tid, events) in [(1, one), (2, two), (3, three)] {
        let mut stream = ChunkStream::new(tid);
        for (_, e) in events {
            stream.push(&mut w, &e).unwrap();
        }
        stream.flush(&mut w).unwrap();
    }
    let bytes = w.finish(Trailer::default()).unwrap();
    let path = scratch(dir).join("ui.phos");
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The viewer of the crafted trace; the trace's start on the page's timeline.
struct Setup {
    _viewer: crate::view::Viewer,
    url: String,
    origin: i64,
    end: i64,
}

fn setup(cache: &str) -> Setup {
    let path = ui_trace(&format!("{cache}-files"));
    let (viewer, host) = start_viewer(&path, cache);
    let (_, list) = get(&host, "/api/traces");
    let t = &list["traces"][0];
    Setup {
        _viewer: viewer,
        url: format!("http://{host}/"),
        origin: t["start_ns"].as_i64().unwrap(),
        end: t["end_ns"].as_i64().unwrap(),
    }
}

impl Setup {
    /// The parameters of the checks `checks`: where each crafted slice is on the timeline.
    fn params(&self, checks: &[&str], dpr: u32) -> Value {
        let t = |ns: u64| self.origin + ns as i64;
        json!({
            "checks": checks,
            "dpr": dpr,
            "slice": {"tid": 1, "level": 1, "start": t(ITERATION.0), "end": t(ITERATION.1)},
            "long": {"tid": 1, "level": 1, "start": t(10 * MS), "end": t(12 * MS)},
            "colors": {"tid": 2, "batch": [t(5 * MS), t(95 * MS)], "iteration": [t(20 * MS), t(30 * MS)]},
            "counter_at": t(20 * MS),
            "span": [self.origin, self.end],
            "search": "iteration",
            "ticker": 3,
        })
    }

    fn run(&self, name: &str, checks: &[&str], dpr: u32) -> Value {
        let shots = scratch(name);
        let params = self.params(checks, dpr).to_string();
        let r =
            check("view-ui.mjs", &[self.url.as_ref(), params.as_ref(), shots.as_os_str(), "120".as_ref()]);
        assert_eq!(r["errors"], json!([]), "{r}");
        r
    }
}

/// A label's time in ns: "45.3005 ms", "+1.5 µs", "45.300 000 ms" (spaces inside ignored),
/// exactly (decimal digits, not floats).
fn parse_ns(label: &str) -> i64 {
    let text: String = label.chars().filter(|c| !c.is_whitespace()).collect();
    let (unit, digits) = [("ns", 1i64), ("µs", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000)]
        .iter()
        .find_map(|&(u, k)| text.strip_suffix(u).map(|d| (k, d.to_owned())))
        .unwrap_or_else(|| panic!("no unit in {label:?}"));
    let (neg, digits) = match digits.strip_prefix('-') {
        Some(d) => (true, d.to_owned()),
        None => (false, digits.trim_start_matches('+').to_owned()),
    };
    let (whole, frac) = digits.split_once('.').unwrap_or((&digits, ""));
    let scale = unit.to_string().len() - 1;
    assert!(frac.len() <= scale, "{label:?} finer than a nanosecond");
    let frac = format!("{frac:0<scale$}");
    let ns = whole.parse::<i64>().unwrap() * unit + if scale > 0 { frac.parse::<i64>().unwrap() } else { 0 };
    if neg {
        -ns
    } else {
        ns
    }
}

/// Every tick label of a ruler distinct, and each at the x of the time it reads (within 2 px).
fn check_ruler(r: &Value, what: &str) {
    let offset = r["offset"].as_str().filter(|o| !o.is_empty());
    let base = offset.map_or(0, parse_ns);
    let ticks: Vec<(&str, f64)> = r["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["text"].as_str().unwrap(), t["x"].as_f64().unwrap()))
        .filter(|(text, _)| Some(*text) != offset)
        .collect();
    assert!(ticks.len() >= 3, "{what}: {r}");
    let mut labels: Vec<&str> = ticks.iter().map(|t| t.0).collect();
    labels.sort();
    labels.dedup();
    assert_eq!(labels.len(), ticks.len(), "{what}: tick labels repeat: {r}");
    let (start, end) = (r["view"][0].as_f64().unwrap(), r["view"][1].as_f64().unwrap());
    let (origin, width) = (r["origin"].as_f64().unwrap(), r["width"].as_f64().unwrap());
    for (text, x) in ticks {
        let t = parse_ns(text) + if text.starts_with('+') { base } else { 0 };
        let want = (origin + t as f64 - start) / (end - start) * width;
        // The label is drawn 3 px right of its tick.
        assert!((x - 3.0 - want).abs() <= 2.0, "{what}: {text:?} at x {x}, its time is at {want}: {r}");
    }
}

/// Defect 2: every zoom's ticks read distinct, correct times (they read "45.3 ms" each at 3 µs),
/// and the details give the slice's start, end and duration to the nanosecond (they gave "start
/// 45.3 ms" and no end).
#[test]
fn the_ruler_reads_distinct_exact_ticks_at_every_zoom_and_details_give_start_end_and_duration() {
    let s = setup("view-ui-ruler-cache");
    let r = s.run("view-ui-ruler", &["ruler"], 1);
    let r = &r["ruler"];
    check_ruler(&r["whole"], "the whole trace");
    check_ruler(&r["micro"], "a 4.25 µs window");
    check_ruler(&r["nano"], "a 20 ns window");
    let rows = &r["details"]["rows"];
    assert_eq!(r["details"]["name"], "iteration", "{r}");
    let row = |k: &str| parse_ns(rows[k].as_str().unwrap_or_else(|| panic!("no {k} in {r}")));
    assert_eq!(row("start"), ITERATION.0 as i64, "{r}");
    assert_eq!(row("end"), ITERATION.1 as i64, "{r}");
    assert_eq!(row("duration"), (ITERATION.1 - ITERATION.0) as i64, "{r}");
}

/// Defect 3: a u64 and an i64 argument past 2^53 shown with every digit (10482063840709898622
/// was shown as 10482063840709898000).
#[test]
fn sixty_four_bit_arguments_past_two_to_the_53_are_shown_exactly() {
    let s = setup("view-ui-args-cache");
    let r = s.run("view-ui-args", &["args"], 1);
    let rows = &r["args"]["rows"];
    assert_eq!(rows["checksum"], CHECKSUM.to_string(), "{r}");
    assert_eq!(rows["offset"], OFFSET.to_string(), "{r}");
}

/// Defect 4: the ruler as wide as the tracks beside their scrollbar (it was 15 px wider, so its
/// times drifted from theirs), and a range shift-dragged on a track tinted on the ruler where it
/// was dragged.
#[test]
fn the_ruler_lines_up_with_the_tracks_and_their_selection_beside_the_scrollbar() {
    let s = setup("view-ui-align-cache");
    let r = s.run("view-ui-align", &["align"], 1);
    let a = &r["align"];
    let f = |v: &Value, i: usize| v[i].as_f64().unwrap();
    // The async track's 48 lanes overflow the page: the tracks have a scrollbar.
    assert!(a["scrollbar"].as_f64().unwrap() > 0.0, "{r}");
    assert!((f(&a["ruler"], 0) - f(&a["track"], 0)).abs() <= 0.5, "{r}");
    assert!((f(&a["ruler"], 1) - f(&a["track"], 1)).abs() <= 0.5, "{r}");
    assert!(a["band"].is_array(), "no band on the ruler: {r}");
    for i in 0..2 {
        assert!((f(&a["band"], i) - f(&a["dragged"], i)).abs() <= 1.5, "{r}");
    }
}

/// Defect 12: W and ctrl+wheel zoom about the pointer (W zoomed about the centre, the wheel
/// zoomed), the plain wheel scrolls the tracks, keys after a search drive the view (they typed
/// into the box), `?` lists the keys, F fits the selected slice or range and Esc clears it, the
/// view stays near the trace however far it is zoomed out or panned, 0 shows it all, M marks a
/// range, and a drag draws what is known at once (it left a blank strip until the mouse paused).
#[test]
fn keys_and_wheel_follow_perfetto_zoom_about_the_pointer_fit_reset_clear_and_stay_on_the_trace() {
    let s = setup("view-ui-nav-cache");
    let r = s.run("view-ui-nav", &["nav"], 1);
    let n = &r["nav"];
    let f = |v: &Value| v.as_f64().unwrap();
    let len = |v: &Value| f(&v["end"]) - f(&v["start"]);
    for k in ["w", "ctrl_wheel"] {
        let z = &n[k];
        assert!(len(&z["after"]) < 0.95 * len(&z["before"]), "{k}: {n}");
        // The time under the pointer moved by less than a pixel's worth (1,600 px wide at most).
        let moved = (f(&z["under"][0]) - f(&z["under"][1])).abs();
        assert!(
            moved <= len(&z["before"]) / 1600.0,
            "{k} moved the time under the pointer by {moved} ns: {n}"
        );
    }
    assert_eq!(n["wheel"]["before"], n["wheel"]["after"], "the wheel changed the window: {n}");
    assert!(f(&n["wheel"]["scrolled"][1]) > f(&n["wheel"]["scrolled"][0]), "the wheel scrolled nothing: {n}");
    let a = &n["after_search"];
    assert_eq!(a["box"], "iteration", "{n}");
    assert_ne!(a["focused"], "search", "{n}");
    assert!(len(&a["after"]) < 0.95 * len(&a["before"]), "W after a search: {n}");
    let help = n["help"].as_str().unwrap_or_else(|| panic!("no list of keys: {n}"));
    assert!(help.contains("Esc") && help.contains("W / S"), "{n}");
    assert_eq!(n["help_after_esc"], false, "{n}");
    // F: the slice fills the view, a tenth on either side.
    let (s0, s1) = (f(&n["fit"]["slice"][0]), f(&n["fit"]["slice"][1]));
    let v = &n["fit"]["view"];
    assert!(f(&v["start"]) <= s0 && f(&v["end"]) >= s1 && len(v) <= 1.3 * (s1 - s0), "{n}");
    assert_eq!(n["cleared"]["selected"], Value::Null, "{n}");
    assert_eq!(n["cleared"]["details"], Value::Null, "{n}");
    // The same for a range (issue 39's defect 6: it could not be zoomed to or cleared).
    let (r0, r1) = (f(&n["fit_range"]["range"][0]), f(&n["fit_range"]["range"][1]));
    let v = &n["fit_range"]["view"];
    assert!(f(&v["start"]) <= r0 && f(&v["end"]) >= r1 && len(v) <= 1.3 * (r1 - r0), "{n}");
    assert_eq!(n["range_cleared"], Value::Null, "{n}");
    // M marked the range: kept after Esc, tinted orange across the middle of the ruler.
    assert_eq!(n["marks"]["marks"], json!([n["fit_range"]["range"]]), "{n}");
    assert!(f(&n["marks"]["orange"]) > 0.9, "{n}");
    let (t0, t1) = (f(&n["far"]["span"][0]), f(&n["far"]["span"][1]));
    let far = &n["far"]["view"];
    assert!(f(&far["start"]) >= t0 - 0.1 * (t1 - t0) && f(&far["end"]) <= t1 + 0.1 * (t1 - t0), "{n}");
    let reset = &n["reset"];
    assert!(f(&reset["start"]) <= t0 && f(&reset["end"]) >= t1 && len(reset) <= 1.1 * (t1 - t0), "{n}");
    assert_eq!(n["drag"]["blank"], 0, "blank columns while dragging: {n}");
    assert!(n["drag"]["cols"].as_u64().unwrap() > 40, "{n}");
}

/// Defect 7: a hovered slice's tooltip (full name, duration, self time, arguments); the counter
/// drawn as steps (a ramp crossed the middle between two samples), its tooltip its value; the
/// 48-lane async track collapses to one row and back; a name too long for its slice ends in an
/// ellipsis; `batch` and `iteration` far apart in colour (they were 15° apart in hue); the two
/// `worker` threads told apart by their tid.
#[test]
fn slices_have_tooltips_counters_steps_tracks_collapse_names_fit_colours_differ_threads_differ() {
    let s = setup("view-ui-draw-cache");
    let r = s.run("view-ui-draw", &["draw"], 1);
    let d = &r["draw"];
    let labels: Vec<&str> = d["labels"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert!(labels.contains(&"worker (tid 1)") && labels.contains(&"worker (tid 2)"), "{d}");
    let tip = d["tip"].as_str().unwrap();
    for want in ["iteration", "duration 3.250 µs", "self 3.250 µs", "checksum 10482063840709898622"] {
        assert!(tip.contains(want), "no {want:?} in the tooltip {tip:?}");
    }
    // Between the samples 0 (at 10 ms) and 10 (at 30 ms) the line is at 0: the canvas's bottom.
    let h = d["counter"]["height"].as_f64().unwrap();
    let rows = d["counter"]["rows"].as_array().unwrap();
    assert!(!rows.is_empty(), "{d}");
    assert!(rows.iter().all(|y| y.as_f64().unwrap() >= h - 6.0), "not a step: {d}");
    // Hovered there, it says its value since 10 ms.
    assert_eq!(d["counter"]["tip"], "queue depth\n0 since 10.000\u{2009}000 ms", "{d}");
    let c = &d["collapse"];
    assert_eq!(c["before"].as_f64(), Some(48.0 * 18.0), "{d}");
    assert_eq!(c["collapsed"].as_f64(), Some(18.0), "{d}");
    assert_eq!(c["after"], c["before"], "{d}");
    let long = d["long"].as_array().unwrap();
    assert!(!long.is_empty(), "the long name is not drawn: {d}");
    for t in long {
        let text = t["text"].as_str().unwrap();
        let cut = text.strip_suffix('…').unwrap_or_else(|| panic!("{text:?} has no ellipsis"));
        assert!(LONG.starts_with(cut) && cut.len() >= 4, "{text:?}");
        assert!(t["width"].as_f64().unwrap() <= 100.0, "{t}");
    }
    let rgb = |k: &str| -> Vec<f64> { (0..3).map(|i| d["colors"][k][i].as_f64().unwrap()).collect() };
    let (b, i) = (rgb("batch"), rgb("iteration"));
    let dist = b.iter().zip(&i).map(|(x, y)| (x - y) * (x - y)).sum::<f64>().sqrt();
    assert!(dist > 60.0, "batch {b:?} and iteration {i:?} are {dist:.0} apart");
}

/// Defect 7: on a screen of two pixels per CSS pixel every canvas has two (it had one: blurry),
/// and a click still finds the slice under it.
#[test]
fn canvases_are_crisp_on_a_hidpi_screen_and_clicks_still_find_their_slice() {
    let s = setup("view-ui-hidpi-cache");
    let r = s.run("view-ui-hidpi", &["hidpi"], 2);
    let h = &r["hidpi"];
    assert_eq!(h["dpr"], 2, "{h}");
    for c in h["sizes"].as_array().unwrap() {
        let f = |k: &str| c[k].as_f64().unwrap();
        assert!((f("width") - 2.0 * f("css_width")).abs() <= 2.0, "{c}");
        assert!((f("height") - 2.0 * f("css_height")).abs() <= 2.0, "{c}");
    }
    assert_eq!(h["clicked"], "iteration", "{h}");
}

/// Defect 7: the heap track's values in KiB (they were raw bytes: "40000").
#[test]
fn heap_values_are_shown_in_kib() {
    let path = scratch("view-ui-heap-files").join("system.phos");
    std::fs::write(&path, phosphor_craft::system::system_trace().unwrap()).unwrap();
    let (_viewer, host) = start_viewer(&path, "view-ui-heap-cache");
    let params = json!({"checks": ["heap"]}).to_string();
    let shots = scratch("view-ui-heap");
    let url = format!("http://{host}/");
    let r = check("view-ui.mjs", &[url.as_ref(), params.as_ref(), shots.as_os_str(), "120".as_ref()]);
    assert_eq!(r["errors"], json!([]), "{r}");
    let texts: Vec<&str> = r["heap"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    // Live bytes 0, 40,000 (39.1 KiB) and 51,200 (50 KiB).
    assert!(texts.contains(&"0 B"), "{texts:?}");
    assert!(texts.iter().any(|t| ["39.1 KiB", "50 KiB"].contains(t)), "{texts:?}");
    assert!(texts.iter().all(|t| t.ends_with(" B") || t.ends_with(" KiB")), "{texts:?}");
}

/// The URL holds the window, the selected slice and the selected range: opened in a new page it
/// shows the same (it held nothing: the new page showed the whole trace, nothing selected).
#[test]
fn a_link_to_the_page_reopens_its_window_slice_and_range() {
    let s = setup("view-ui-url-cache");
    let r = s.run("view-ui-url", &["url"], 1);
    let u = &r["url"];
    let (before, after) = (&u["before"], &u["after"]);
    assert_eq!(before["name"], "iteration", "{u}");
    assert_eq!(after["name"], "iteration", "{u}");
    assert_eq!(after["selected"], before["selected"], "{u}");
    for k in ["view", "selection"] {
        for i in 0..2 {
            let (a, b) = (before[k][i].as_f64(), after[k][i].as_f64());
            assert!(matches!((a, b), (Some(a), Some(b)) if (a - b).abs() <= 1.0), "{k}: {u}");
        }
    }
}

/// Defect 10: traces recorded at different moments (here three runs 300 ms apart on one boot)
/// each start at the view's zero, one above another, and say so; they were placed on one clock,
/// the runs thin lines in a view of more than 600 ms.
#[test]
fn traces_of_different_moments_are_placed_from_their_own_starts() {
    use phosphor::{trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig};
    let dir = scratch("view-ui-placement-files");
    let mut longest = 0i64;
    for k in 0..3 {
        if k > 0 {
            // The gap between the runs: what placing them on one clock would show.
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        let log = TraceLog::new(TraceLogConfig::default()).unwrap();
        // From before `start` (the trace's clock origin is taken in it) to after `stop`: all a
        // run's trace can span, however long the machine's load makes `start` and `stop` take.
        let begun = std::time::Instant::now();
        log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
        {
            trace_scope!(log: &log, "run", "work");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        log.stop();
        longest = longest.max(begun.elapsed().as_nanos() as i64);
        log.take_trace().unwrap().save(dir.join(format!("run{k}.phos"))).unwrap();
    }
    let (_viewer, host) = start_viewer(&dir, "view-ui-placement-cache");
    let (_, list) = get(&host, "/api/traces");
    let placed: Vec<&str> =
        list["traces"].as_array().unwrap().iter().map(|t| t["placed"].as_str().unwrap()).collect();
    assert!(placed[1..].iter().all(|p| p.contains("own start")), "{list}");
    let params = json!({"checks": ["placement"]}).to_string();
    let shots = scratch("view-ui-placement");
    let url = format!("http://{host}/");
    let r = check("view-ui.mjs", &[url.as_ref(), params.as_ref(), shots.as_os_str(), "120".as_ref()]);
    assert_eq!(r["errors"], json!([]), "{r}");
    let p = &r["placement"];
    let span = p["span"][1].as_f64().unwrap() - p["span"][0].as_f64().unwrap();
    // One run's length (from its clock's origin, in `start`), not the 600 ms of the runs and
    // their gaps on one clock; 1% and a microsecond for the trace clock's calibration and rounding.
    assert!(span <= longest as f64 * 1.01 + 1e3, "span {span} ns, longest run {longest} ns: {r}");
    let groups: Vec<&str> = p["groups"].as_array().unwrap().iter().map(|g| g.as_str().unwrap()).collect();
    assert_eq!(groups.len(), 3, "{r}");
    assert!(groups[1..].iter().all(|g| g.contains("placed from its own start")), "{groups:?}");
}

/// The brightness (0 to 255, the mean of the channels) of a CSS colour `rgb(r, g, b)` or `#rrggbb`.
fn brightness(css: &str) -> f64 {
    let channels: Vec<f64> = if let Some(hex) = css.strip_prefix('#') {
        (0..3).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap() as f64).collect()
    } else {
        let inner = css.trim_start_matches("rgba(").trim_start_matches("rgb(").trim_end_matches(')');
        inner.split(',').take(3).map(|c| c.trim().parse().unwrap()).collect()
    };
    channels.iter().sum::<f64>() / 3.0
}

/// Dark and light themes (issue 39's want): the button turns the page and its canvases' own
/// texts (the ruler's) dark or light, the choice is kept over a reload, and until one is chosen
/// the system's preference decides.
#[test]
fn the_theme_button_turns_the_page_and_its_canvases_dark_and_back_and_the_choice_is_kept() {
    let s = setup("view-ui-theme-cache");
    let r = s.run("view-ui-theme", &["theme"], 1);
    let t = &r["theme"];
    let looks = |k: &str| {
        let v = &t[k];
        let bg = brightness(v["background"].as_str().unwrap());
        let label = brightness(v["label"].as_str().unwrap());
        let ruler: Vec<f64> =
            v["ruler"].as_array().unwrap().iter().map(|c| brightness(c.as_str().unwrap())).collect();
        assert!(!ruler.is_empty(), "{k}: no ruler text: {t}");
        (v["theme"].as_str().unwrap().to_owned(), bg, label, ruler)
    };
    for (k, want) in
        [("first", "light"), ("dark", "dark"), ("reloaded", "dark"), ("light", "light"), ("system", "dark")]
    {
        let (theme, bg, label, ruler) = looks(k);
        assert_eq!(theme, want, "{k}: {t}");
        if want == "dark" {
            assert!(bg < 60.0 && label > 150.0 && ruler.iter().all(|&c| c > 150.0), "{k}: {t}");
        } else {
            assert!(bg > 200.0 && label < 100.0 && ruler.iter().all(|&c| c < 100.0), "{k}: {t}");
        }
    }
}

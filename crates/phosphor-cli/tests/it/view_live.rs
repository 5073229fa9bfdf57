//! The live viewer's page (`phosphor record --view`) in headless Chromium, issue 39 defect 11:
//! a waiting notice before the first program connects, turning into the timeline when one does;
//! a slice's arguments, search and statistics while recording, saying what part of the recording
//! they cover; panels marked stale as data comes, and computed again once the trace is indexed.
//! The traced program is this test process; `scripts/browser/view-live.mjs` says when it is to
//! connect or stop. Every wait polls a condition with a generous deadline, never a sleep.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use phosphor::stream::{Sink, StreamConfig};
use phosphor::{
    trace_begin, trace_counter, trace_end, trace_instant, trace_scope, BufferMode, TraceConfig, TraceLog,
    TraceLogConfig,
};
use serde_json::Value;

use crate::cli::{phosphor, scratch};
use crate::live_view::{Recorder, DEADLINE};
use crate::view::get;

/// Events each frame emits: a begin, two complete scopes, a counter, an instant and an end.
const EVENTS_PER_FRAME: u64 = 6;

/// The traced program: two threads of frames (`n` their number, an argument) holding an
/// `update` holding a `step` (`k`), streamed to the recorder.
struct Program {
    log: Arc<TraceLog>,
    go: Arc<AtomicBool>,
    frames: Arc<AtomicU64>,
    workers: Vec<std::thread::JoinHandle<()>>,
}

impl Program {
    fn start(rec: &Recorder) -> Program {
        let log = TraceLog::new(TraceLogConfig::default()).unwrap();
        log.start(TraceConfig::new(BufferMode::Stream, 8 << 20)).unwrap();
        log.open_stream(StreamConfig::new(Sink::Tcp(rec.addr))).unwrap();
        let go = Arc::new(AtomicBool::new(true));
        let frames = Arc::new(AtomicU64::new(0));
        let workers = (0..2)
            .map(|w| {
                let (log, go, frames) = (log.clone(), go.clone(), frames.clone());
                std::thread::Builder::new()
                    .name(format!("live-{w}"))
                    .spawn(move || {
                        let mut n = 0u64;
                        while go.load(Ordering::Relaxed) {
                            trace_begin!(log: &log, "live", "frame", "n" => n);
                            {
                                trace_scope!(log: &log, "live", "update");
                                trace_scope!(log: &log, "live", "step", "k" => n * 7);
                                std::hint::black_box(n);
                                std::thread::sleep(Duration::from_micros(300));
                            }
                            trace_counter!(log: &log, "live", "frames", n);
                            trace_instant!(log: &log, "live", "tick");
                            trace_end!(log: &log, "live", "frame");
                            n += 1;
                            // Relaxed: a count read after the threads are joined.
                            frames.fetch_add(1, Ordering::Relaxed);
                            std::thread::sleep(Duration::from_micros(200));
                        }
                    })
                    .unwrap()
            })
            .collect();
        Program { log, go, frames, workers }
    }

    /// Stops emitting (the connection stays open); gives the events emitted.
    fn pause(&mut self) -> u64 {
        self.go.store(false, Ordering::Relaxed);
        for w in self.workers.drain(..) {
            w.join().unwrap();
        }
        EVENTS_PER_FRAME * self.frames.load(Ordering::Relaxed)
    }

    /// Ends the recording: the connection closes, the file is complete.
    fn stop(&mut self) {
        self.pause();
        self.log.stop();
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        self.go.store(false, Ordering::Relaxed);
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// `scripts/browser/view-live.mjs SCENARIO` on the viewer at `host`, running: its lines.
fn script(scenario: &str, host: &str, shot: &std::path::Path) -> (Child, Receiver<String>) {
    let mut child = Command::new("node")
        .arg(crate::browser::browser_env().join("view-live.mjs"))
        .args([scenario, &format!("http://{host}/")])
        .arg(shot)
        // Its waits end before ours (`next`).
        .arg("200")
        .stdout(Stdio::piped())
        .spawn()
        .expect("node runs");
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in stdout.lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    (child, lines)
}

/// The script's next JSON line: its `{"step": step}` line (or its result, if it ended early).
fn next(lines: &Receiver<String>, step: Option<&str>) -> Value {
    let deadline = Instant::now() + 2 * DEADLINE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = lines.recv_timeout(left).unwrap_or_else(|e| {
            panic!("no line {step:?} from view-live.mjs ({e}: it ended, or took too long)")
        });
        let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
        match step {
            Some(s) if v["step"] == s => return v,
            // The result: the last line, or an early one after a failure.
            _ if v.get("errors").is_some() => return v,
            _ => {}
        }
    }
}

/// The number of `name` in `phosphor stats --json`'s paths of `file` ending in it.
fn stats_count(file: &std::path::Path, path: &[&str]) -> u64 {
    let out = phosphor("view-live-stats", &["stats", "--json", file.to_str().unwrap()]);
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    let want = serde_json::json!(path);
    stats["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["path"] == want)
        .map_or(0, |k| k["count"].as_u64().unwrap())
}

#[test]
fn live_page_waits_for_a_program_naming_its_address_then_shows_it_without_a_reload() {
    let dir = scratch("view-live-waiting");
    let rec = Recorder::start_with(&dir.join("out"), &[]);
    let (mut node, lines) = script("waiting", &rec.host, &dir.join("live.png"));
    let waiting = next(&lines, Some("waiting"));
    assert!(waiting.get("errors").is_none(), "the page showed no waiting notice: {waiting}");
    let mut program = Program::start(&rec);
    let r = next(&lines, None);
    let _ = node.wait();
    program.stop();
    assert_eq!(r["errors"], serde_json::json!([]), "{r}");
    let notice = r["waiting"].as_str().unwrap();
    let port = rec.addr.port().to_string();
    assert!(
        notice.contains(&format!("127.0.0.1:{port}")),
        "the notice names the recorder's address: {notice}"
    );
    assert!(notice.to_lowercase().contains("waiting for a traced program"), "{notice}");
    assert_eq!(r["waiting_after"], Value::Null, "the notice is gone once a program connected: {r}");
    assert_eq!(r["not_reloaded"], true, "{r}");
    assert!(r["group"].as_str().unwrap().contains("live"), "{r}");
}

#[test]
fn live_page_gives_arguments_search_and_statistics_while_recording() {
    let dir = scratch("view-live-recording");
    // A live view of 20,000 records: the oldest are dropped while the program runs, so that the
    // answers cover the newest part of the recording and say so.
    let rec = Recorder::start_with(&dir.join("out"), &["--view-records", "20000"]);
    let mut program = Program::start(&rec);
    rec.wait_for("older records dropped from the live view", |t| {
        t["state"] == "live" && t["live"]["dropped"].as_u64() > Some(0)
    });
    // The program pauses (still connected): the live view then holds a fixed set, read to the end.
    let emitted = program.pause();
    let t =
        rec.wait_for("every event read", |t| t["state"] == "live" && t["events"].as_u64() == Some(emitted));
    assert_eq!(t["live"]["connected"], true);
    let (status, api) = get(&rec.host, "/api/search?q=step&limit=1");
    assert_eq!(status, 200, "{api}");
    let (mut node, lines) = script("recording", &rec.host, &dir.join("live.png"));
    let r = next(&lines, None);
    let _ = node.wait();
    program.stop();
    assert_eq!(r["errors"], serde_json::json!([]), "{r}");

    // The clicked frame's argument, as the program gave it.
    let rows = &r["details"]["rows"];
    let n: u64 = rows["n"].as_str().unwrap_or_else(|| panic!("no argument n: {r}")).parse().unwrap();
    assert!(n < emitted / EVENTS_PER_FRAME, "{r}");
    assert!(rows.get("event").is_none(), "{r}");

    // The search finds every `step` the live view holds, the first one selected with its argument.
    let total = api["total"].as_u64().unwrap();
    assert!(total > 0, "{api}");
    assert_eq!(r["search"]["total"].as_u64(), Some(total), "{r}");
    assert_eq!(r["search"]["at"], format!("1 of {total}"), "{r}");
    assert!(r["search_selected"]["rows"]["k"].is_string(), "{r}");
    let head = r["search"]["head"].as_str().unwrap();
    assert!(head.contains("live") && head.contains("last"), "the search says what it covers: {head}");

    // The statistics of what the live view holds: as many steps as the search found, under
    // frame / update; the histogram of that row counts them all.
    let stats = &r["stats"];
    let row = stats["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["path"] == "frame/update/step")
        .unwrap_or_else(|| panic!("no frame/update/step row: {r}"));
    assert_eq!(row["count"].as_u64(), Some(total), "{r}");
    let head = stats["head"].as_str().unwrap();
    assert!(head.contains("live") && head.contains("last"), "the statistics say what they cover: {head}");
    assert_eq!(r["kind"]["count"].as_u64(), Some(total), "{r}");
    assert_eq!(r["kind"]["listed"], 20, "{r}");
    assert!(r["kind"]["head"].as_str().unwrap().contains("last"), "the histogram says what it covers: {r}");
}

#[test]
fn live_panels_are_marked_stale_as_data_comes_and_computed_again_once_indexed() {
    let dir = scratch("view-live-stale");
    let out = dir.join("out");
    let rec = Recorder::start_with(&out, &[]);
    let mut program = Program::start(&rec);
    rec.wait_for("a live trace with slices", |t| {
        t["state"] == "live"
            && t["threads"].as_array().is_some_and(|ts| ts.iter().any(|th| th["slices"].as_u64() > Some(3)))
    });
    let (mut node, lines) = script("stale", &rec.host, &dir.join("live.png"));
    let end = next(&lines, Some("end"));
    assert!(end.get("errors").is_none(), "{end}");
    program.stop();
    let r = next(&lines, None);
    let _ = node.wait();
    assert_eq!(r["errors"], serde_json::json!([]), "{r}");

    // While recording: stale, then refreshed with more.
    let count = |s: &Value| {
        s["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["path"] == "frame/update/step")
            .map(|row| row["count"].as_u64().unwrap())
    };
    let before = count(&r["stats_live"]).unwrap_or_else(|| panic!("no step row while live: {r}"));
    let after = count(&r["stats_refreshed"]).unwrap();
    assert!(after > before, "refreshed: {before} -> {after}: {r}");
    assert!(r["stale_note"].as_str().unwrap().contains("refresh"), "{r}");
    assert!(r["details_live"]["rows"]["n"].is_string(), "{r}");

    // Once indexed: the statistics are `phosphor stats`' own, and the details come from the index.
    let file = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "phos"))
        .unwrap();
    let want = stats_count(&file, &["frame", "update", "step"]);
    assert!(want >= after, "{want} {after}");
    assert_eq!(count(&r["stats_indexed"]), Some(want), "{r}");
    assert_eq!(r["details_indexed"]["name"], "frame", "{r}");
    assert_eq!(r["details_indexed"]["rows"]["n"], r["details_live"]["rows"]["n"], "{r}");
    assert_eq!(r["details_indexed"]["rows"]["start"], r["details_live"]["rows"]["start"], "{r}");
    assert_eq!(r["not_reloaded"], true, "{r}");
}

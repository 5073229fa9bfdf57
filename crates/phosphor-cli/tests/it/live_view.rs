//! `phosphor record --view`: the viewer runs beside the recorder and shows each connection live
//! while its file is written, then from its index once the connection ends. The traced program is
//! this test process, streaming to the recorder; nothing is timed, every wait polls with a
//! generous deadline, so that it passes on a loaded machine.

use std::path::Path;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use phosphor::stream::{Sink, StreamConfig};
use phosphor::{
    trace_begin, trace_counter, trace_end, trace_instant, trace_scope, BufferMode, TraceConfig, TraceLog,
    TraceLogConfig,
};
use serde_json::Value;

use crate::cli::{phosphor, scratch};
use crate::view::get;

pub(crate) const DEADLINE: Duration = Duration::from_secs(120);

/// A running `phosphor record --view`: the recorder's address and the viewer's host.
pub(crate) struct Recorder {
    child: Child,
    pub(crate) addr: std::net::SocketAddr,
    pub(crate) host: String,
    pub(crate) lines: std::sync::mpsc::Receiver<String>,
}

impl Recorder {
    fn start(out: &Path) -> Recorder {
        Recorder::start_with(out, &[])
    }

    /// `phosphor record --view` writing into `out`, with `extra` arguments.
    pub(crate) fn start_with(out: &Path, extra: &[&str]) -> Recorder {
        let (child, lines) = crate::cli::spawn_lines(
            Command::new(env!("CARGO_BIN_EXE_phosphor"))
                .args(["record", "--listen", "127.0.0.1:0", "--view", "127.0.0.1:0", "--no-open"])
                .args(extra)
                .arg("--out")
                .arg(out),
        );
        let first = lines.recv_timeout(DEADLINE).expect("the address");
        let addr = first.strip_prefix("listening on ").expect("listening on ADDR").parse().unwrap();
        let second = lines.recv_timeout(DEADLINE).expect("the viewer's URL");
        let url = second.strip_prefix("view ").expect("view URL");
        let host = url.strip_prefix("http://").and_then(|h| h.strip_suffix('/')).expect("http://HOST/");
        assert!(host.starts_with("127.0.0.1:"), "{url}");
        Recorder { child, addr, host: host.to_owned(), lines }
    }

    /// `GET /api/traces`'s first trace, once there is one that `ok` accepts.
    pub(crate) fn wait_for(&self, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let (status, list) = get(&self.host, "/api/traces");
            assert_eq!(status, 200, "{list}");
            assert_eq!(list["live"], true);
            assert_eq!(list["done"], false, "a live viewer is never done: more may connect");
            if let Some(t) = list["traces"].get(0).filter(|t| ok(t)) {
                return t.clone();
            }
            assert!(Instant::now() < deadline, "{what}: not after {DEADLINE:?}: {list}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The slices a trace's threads hold, in all.
fn slices(t: &Value) -> u64 {
    t["threads"].as_array().map_or(0, |ts| ts.iter().map(|th| th["slices"].as_u64().unwrap_or(0)).sum())
}

#[test]
fn record_with_view_shows_a_program_live_then_indexed_with_what_stats_counts() {
    let dir = scratch("live-view");
    let out = dir.join("out");
    let rec = Recorder::start(&out);
    let (status, list) = get(&rec.host, "/api/traces");
    assert_eq!(status, 200);
    assert_eq!(list["traces"].as_array().map(Vec::len), Some(0), "{list}");

    // The traced program: two threads of frames (a begin and an end) holding steps (complete
    // events, which arrive after the steps inside them), and a counter.
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Stream, 8 << 20)).unwrap();
    let stream = log.open_stream(StreamConfig::new(Sink::Tcp(rec.addr))).unwrap();
    let go = Arc::new(AtomicBool::new(true));
    let frames = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..2).map(|w| frame_worker(w, &log, &go, &frames)).collect();

    // The connection shows up live, with both threads, and its slices keep coming while the
    // program runs.
    let t = rec.wait_for("a live trace with two threads", |t| {
        t["state"] == "live"
            && t["threads"]
                .as_array()
                .is_some_and(|ts| ts.iter().filter(|th| th["slices"].as_u64() > Some(0)).count() >= 2)
    });
    assert_eq!(t["pid"], std::process::id());
    assert_eq!(t["live"]["connected"], true);
    let first = slices(&t);
    let t = rec.wait_for("more slices while the program runs", |t| t["state"] == "live" && slices(t) > first);
    assert_eq!(t["counters"][0]["name"], "frames");
    check_newest_window(&rec, &t);

    // The program stops emitting: the live model catches up with every slice it emitted
    // (quiet threads' events are sent on within a few milliseconds), while still connected.
    go.store(false, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(log.stats().dropped.total(), 0, "nothing dropped at this pace");
    let emitted = 3 * frames.load(Ordering::Relaxed);
    let t = rec.wait_for("every slice, live", |t| t["state"] == "live" && slices(t) == emitted);
    assert_eq!(t["live"]["dropped"], 0);
    assert_eq!(t["live"]["skipped"], 0);
    let names: Vec<&str> =
        t["threads"].as_array().unwrap().iter().filter_map(|th| th["name"].as_str()).collect();
    assert!(names.contains(&"live-0") && names.contains(&"live-1"), "{names:?}");

    // The connection ends: the file is complete, and `phosphor stats` counts as many slices.
    log.stop();
    assert_eq!(log.stream_stats(stream).unwrap().events_dropped, 0);
    let line = rec.lines.recv_timeout(DEADLINE).expect("the connection's line");
    assert!(line.contains("complete"), "{line}");
    let file = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "phos"))
        .unwrap();
    assert_eq!(stats_slices(&file), emitted);

    // Then it is indexed beside the file and served from the index, with the same slices.
    let t = rec.wait_for("the trace indexed", |t| t["state"] == "ready");
    assert_eq!(slices(&t), emitted);
    assert!(file.with_extension("phos.phview").is_file());
}

/// Worker `w` of the traced program: frames (a begin and an end) holding steps (complete events,
/// which arrive after the steps inside them), a counter and an instant, until `go` is false,
/// counted in `frames`.
fn frame_worker(
    w: usize,
    log: &Arc<TraceLog>,
    go: &Arc<AtomicBool>,
    frames: &Arc<AtomicU64>,
) -> std::thread::JoinHandle<()> {
    let (log, go, frames) = (log.clone(), go.clone(), frames.clone());
    std::thread::Builder::new()
        .name(format!("live-{w}"))
        .spawn(move || {
            let mut n = 0u64;
            while go.load(Ordering::Relaxed) {
                trace_begin!(log: &log, "live", "frame");
                {
                    trace_scope!(log: &log, "live", "update");
                    trace_scope!(log: &log, "live", "step");
                    std::hint::black_box(n);
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
}

/// The slices `phosphor stats` counts in `file` (scopes, lock waits and holds).
fn stats_slices(file: &Path) -> u64 {
    let stats = phosphor("live-view-stats", &["stats", "--json", file.to_str().unwrap()]);
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    stats["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| ["scope", "lock_wait", "lock_held"].contains(&k["type"].as_str().unwrap()))
        .map(|k| k["count"].as_u64().unwrap())
        .sum()
}

/// A window of the newest data of live trace `t`: frames hold updates hold steps, three levels,
/// within bounds; samples, points, and a slice's details from what the live view holds.
fn check_newest_window(rec: &Recorder, t: &Value) {
    let (start, end) = (t["start_ns"].as_i64().unwrap(), t["end_ns"].as_i64().unwrap());
    assert!(end > start, "{t}");
    let tid = t["threads"].as_array().unwrap().iter().find(|th| th["slices"].as_u64() > Some(0)).unwrap()
        ["tid"]
        .clone();
    let px = 400;
    let (status, w) =
        get(&rec.host, &format!("/api/slices?trace=0&tid={tid}&start={start}&end={end}&px={px}"));
    assert_eq!(status, 200, "{w}");
    let levels = w["levels"].as_array().unwrap();
    assert!(levels.len() >= 3, "{w}");
    for level in levels {
        assert!(level.as_array().unwrap().len() <= 2 * (px + 1) + 2);
    }
    let names: Vec<&str> = w["names"].as_object().unwrap().values().filter_map(Value::as_str).collect();
    for name in ["frame", "update", "step"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let (status, samples) =
        get(&rec.host, &format!("/api/samples?trace=0&counter=0&start={start}&end={end}&px={px}"));
    assert_eq!(status, 200, "{samples}");
    assert!(!samples["samples"].as_array().unwrap().is_empty());
    let (status, points) =
        get(&rec.host, &format!("/api/points?trace=0&tid={tid}&start={start}&end={end}&px={px}"));
    assert_eq!(status, 200, "{points}");
    assert!(points["names"].as_object().unwrap().values().any(|n| n == "tick"), "{points}");
    // A slice's details, from what the live view holds: a step's path (a merged run's fourth
    // field numbers its first slice).
    let step = &levels[2][0];
    let (status, details) = get(&rec.host, &format!("/api/slice?trace=0&index={}", step[3]));
    assert_eq!(status, 200, "{details}");
    assert_eq!(details["live"], true);
    assert_eq!(details["path"], serde_json::json!(["frame", "update", "step"]), "{details}");
}

#[test]
fn live_view_page_in_a_browser_follows_the_newest_data_until_zoomed_and_resumes_on_follow() {
    let dir = scratch("live-view-browser");
    let rec = Recorder::start(&dir.join("out"));
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Stream, 8 << 20)).unwrap();
    log.open_stream(StreamConfig::new(Sink::Tcp(rec.addr))).unwrap();
    let go = Arc::new(AtomicBool::new(true));
    let worker = {
        let (log, go) = (log.clone(), go.clone());
        std::thread::spawn(move || {
            while go.load(Ordering::Relaxed) {
                trace_scope!(log: &log, "live", "frame");
                trace_scope!(log: &log, "live", "update");
                trace_scope!(log: &log, "live", "step");
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let shot = dir.join("live-view.png");
    let url = format!("http://{}/", rec.host);
    let r = crate::browser::check("live-check.mjs", &[url.as_ref(), shot.as_os_str()]);
    go.store(false, Ordering::Relaxed);
    worker.join().unwrap();
    log.stop();
    assert_eq!(r["errors"], serde_json::json!([]), "{r}");
    assert_eq!(r["follow_button"], true, "{r}");
    assert_eq!(r["moved"], true, "{r}");
    assert!(r["group"].as_str().unwrap().contains("live"), "{r}");
    assert_eq!(r["after_zoom"], false, "{r}");
    assert_eq!(r["after_button"], true, "{r}");
}

#[test]
fn record_serves_the_viewer_on_loopback_unless_told_otherwise() {
    let dir = scratch("live-view-refuse");
    let out = dir.join("out");
    let run = phosphor(
        "live-view-refuse",
        &[
            "record",
            "--listen",
            "127.0.0.1:0",
            "--view",
            "0.0.0.0:0",
            "--no-open",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(run.status.code(), Some(2));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("not a loopback address") && err.contains("--any-address"), "{err}");
}

//! `phosphor view`: indexes the traces, prints its URL first, and answers the viewer's API with
//! what `phosphor stats` counts.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::cli::{phosphor, scratch, stderr};

/// A running `phosphor view`, killed when dropped.
pub struct Viewer(Child);

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET path` from `host` (`127.0.0.1:port`): the status and the body as JSON.
pub fn get(host: &str, path: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(host).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    (
        head.split_whitespace().nth(1).unwrap().parse().unwrap(),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

/// Starts `phosphor view` on `traces` (its indexes cached in the scratch folder `cache`): the
/// server, and the `127.0.0.1:PORT` it printed first.
pub fn start_viewer(traces: &Path, cache: &str) -> (Viewer, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_phosphor"))
        .args(["view", "--no-open", "--cache"])
        .arg(scratch(cache))
        .arg(traces)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let viewer = Viewer(child);
    let url = lines.next().expect("a first line").unwrap();
    let host = url.strip_prefix("http://").and_then(|h| h.strip_suffix('/')).expect("http://HOST:PORT/");
    assert!(host.starts_with("127.0.0.1:"), "{url}");
    wait_indexed(host);
    (viewer, host.to_owned())
}

/// Waits until the server at `host` has indexed every trace (it serves before): each trace's
/// `state` goes from `scanning` to `indexing` to `ready`, never back.
pub fn wait_indexed(host: &str) {
    let order = ["scanning", "indexing", "ready"];
    let mut at: BTreeMap<u64, usize> = BTreeMap::new();
    for _ in 0..6000 {
        let (status, list) = get(host, "/api/traces");
        assert_eq!(status, 200, "{list}");
        for t in list["traces"].as_array().unwrap() {
            let state = t["state"].as_str().unwrap();
            let now = order.iter().position(|o| *o == state).unwrap_or_else(|| panic!("{t}"));
            let before = at.insert(t["trace"].as_u64().unwrap(), now).unwrap_or(0);
            assert!(now >= before, "{t} after {}", order[before]);
        }
        if list["done"] == true {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("{host}: not indexed after 2 minutes");
}

#[test]
fn view_serves_every_thread_and_as_many_slices_as_stats_counts() {
    let dir = scratch("view-files").join("out");
    let out = phosphor(
        "view-demo",
        &["demo", "--threads", "2", "--events", "5000", "--out", dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (_viewer, host) = start_viewer(&dir, "view-cache");
    let host = host.as_str();
    let (status, list) = get(host, "/api/traces");
    assert_eq!(status, 200);
    let trace = &list["traces"][0];
    assert_eq!(trace["file"], "trace.phos");
    let served: BTreeMap<String, u64> = trace["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_owned(), t["slices"].as_u64().unwrap()))
        .collect();

    // `phosphor stats`: the slices of each thread are its timed kinds' counts.
    let stats = phosphor("view-stats", &["stats", "--json", dir.join("trace.phos").to_str().unwrap()]);
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    let mut counted: BTreeMap<String, u64> = BTreeMap::new();
    for k in stats["kinds"].as_array().unwrap() {
        if ["scope", "lock_wait", "lock_held"].contains(&k["type"].as_str().unwrap()) {
            *counted.entry(k["thread"].as_str().unwrap().to_owned()).or_default() +=
                k["count"].as_u64().unwrap();
        }
    }
    served
        .iter()
        .filter(|(_, &n)| n > 0)
        .for_each(|(name, n)| assert_eq!(counted.get(name), Some(n), "{name}"));
    assert_eq!(served.values().filter(|&&n| n > 0).count(), counted.len(), "{served:?} {counted:?}");

    // The demo's async items: paired as `phosphor stats` pairs them, on at most 48 lanes (the
    // demo holds at most 48 in flight).
    let items = &trace["asyncs"][0];
    assert_eq!(items["name"], "item");
    let pairs =
        stats["async"].as_array().unwrap().iter().find(|a| a["name"] == "item").unwrap()["pairs"].clone();
    assert_eq!(items["slices"], pairs);
    assert!(items["lanes"].as_u64().unwrap() <= 48, "{items}");

    // A window of the whole trace, 1,600 pixels wide: every slice of a worker, a pixel at a time.
    let (start, end) = (trace["start_ns"].as_i64().unwrap(), trace["end_ns"].as_i64().unwrap());
    let worker = trace["threads"].as_array().unwrap().iter().find(|t| t["name"] == "worker-0").unwrap();
    let tid = worker["tid"].as_u64().unwrap();
    let path = format!("/api/slices?trace=0&tid={tid}&start={start}&end={end}&px=1600");
    let (status, window) = get(host, &path);
    assert_eq!(status, 200, "{window}");
    let mut total = 0;
    for level in window["levels"].as_array().unwrap() {
        let items = level.as_array().unwrap();
        assert!(items.len() <= 2 * 1601 + 2, "{} items", items.len());
        total += items.iter().map(|i| i[2].as_i64().unwrap().min(0).unsigned_abs().max(1)).sum::<u64>();
    }
    assert_eq!(total, worker["slices"].as_u64().unwrap());

    // The overview shown while indexing (from the chunks' headers): every event read, spread
    // over the pixels (each rounded to a tenth).
    let (status, o) = get(host, &format!("/api/overview?trace=0&start={start}&end={end}&px=1600"));
    assert_eq!(status, 200, "{o}");
    let sums: Vec<f64> = o["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["events"].as_array().unwrap().iter().map(|e| e.as_f64().unwrap()).sum())
        .collect();
    let events = trace["events"].as_f64().unwrap();
    assert!(
        (sums.iter().sum::<f64>() - events).abs() <= 0.05 * 1601.0 * sums.len() as f64,
        "{sums:?} of {events}"
    );
    // The index was kept beside the trace (its folder can be written), and is used again.
    assert!(dir.join("trace.phos.phview").is_file());
}

#[test]
fn view_refuses_other_addresses_and_folders_without_traces() {
    let empty = scratch("view-empty");
    let out =
        phosphor("view-refuse", &["view", "--no-open", "--listen", "0.0.0.0:0", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a loopback address"), "{}", stderr(&out));
    let out = phosphor("view-refuse", &["view", "--no-open", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no .phos trace files"), "{}", stderr(&out));
}

#[test]
fn view_puts_the_traces_of_a_folder_on_one_timeline_a_process_group_each() {
    let dir = scratch("view-two");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["first", "second"] {
        let out_dir = scratch(&format!("view-two-{name}"));
        let out = phosphor(
            &format!("view-two-{name}"),
            &["demo", "--threads", "1", "--events", "2000", "--out", out_dir.to_str().unwrap()],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        std::fs::copy(out_dir.join("trace.phos"), dir.join(format!("{name}.phos"))).unwrap();
    }
    let (_viewer, host) = start_viewer(&dir, "view-two-cache");
    let (status, list) = get(&host, "/api/traces");
    assert_eq!(status, 200, "{list}");
    let traces = list["traces"].as_array().unwrap();
    let files: Vec<&str> = traces.iter().map(|t| t["file"].as_str().unwrap()).collect();
    assert_eq!(files, ["first.phos", "second.phos"]);
    // Recorded one after the other, so each from its own start (`--align auto`: they share no
    // moment), one above the other on one axis of time since their start.
    let offsets: Vec<i64> = traces.iter().map(|t| t["offset_ns"].as_i64().unwrap()).collect();
    assert_eq!(offsets, [0, 0], "{list}");
    assert!(traces[1]["placed"].as_str().unwrap().contains("own start"), "{list}");
    // Each is asked for by its number; both have their own threads and slices.
    for (n, t) in traces.iter().enumerate() {
        assert_eq!(t["trace"], n);
        assert!(t["pid"].as_u64().is_some() && t["process"].is_string(), "{t}");
        let worker = t["threads"].as_array().unwrap().iter().find(|th| th["name"] == "worker-0").unwrap();
        let (start, end) = (t["start_ns"].as_i64().unwrap(), t["end_ns"].as_i64().unwrap());
        let path = format!("/api/slices?trace={n}&tid={}&start={start}&end={end}&px=800", worker["tid"]);
        let (status, w) = get(&host, &path);
        assert_eq!(status, 200, "{w}");
        assert!(!w["levels"][0].as_array().unwrap().is_empty(), "{w}");
    }
    let (status, _) = get(&host, "/api/slices?trace=2&tid=1&start=0&end=1&px=1");
    assert_eq!(status, 404);
}

#[test]
fn view_index_only_builds_the_index_once_and_exits() {
    let dir = scratch("view-index-only-files").join("out");
    let out = phosphor(
        "view-index-only-demo",
        &["demo", "--threads", "1", "--events", "2000", "--out", dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let trace = dir.join("trace.phos");
    let args = ["view", "--index-only", trace.to_str().unwrap()];
    let first = phosphor("view-index-only", &args);
    assert!(first.status.success(), "{}", stderr(&first));
    let text = String::from_utf8_lossy(&first.stdout).into_owned();
    let index = dir.join("trace.phos.phview");
    assert!(text.contains(" events, ") && text.trim_end().ends_with(index.to_str().unwrap()), "{text}");
    let built = std::fs::metadata(&index).unwrap().modified().unwrap();
    // Again: the index is checked and kept, not built again.
    let again = phosphor("view-index-only-again", &args);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(String::from_utf8_lossy(&again.stdout), text);
    assert_eq!(std::fs::metadata(&index).unwrap().modified().unwrap(), built);
}

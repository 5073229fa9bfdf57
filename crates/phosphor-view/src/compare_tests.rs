use std::fs::File;
use std::io::BufReader;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use phosphor_export::{DiffOptions, DiffSide, TraceDiff};
use phosphor_format::file::Reader;
use phosphor_format::Phase;
use serde_json::{json, Value};

use crate::server::tests::get;
use crate::server::{serve, Traces};
use crate::tests::{write_trace, ID};
use crate::{open, BuildOptions};

/// A trace of 200 `frame`s of 5 µs (a few ns apart), each holding a `step` of `step_ns` (a few
/// ns apart), and then one slice named `last`.
fn frames(path: &Path, step_ns: u64, last: &str) {
    let sites = [("frame", Phase::Complete), ("step", Phase::Complete), (last, Phase::Complete)];
    let mut events = Vec::new();
    for k in 0..200u64 {
        let at = k * 10_000;
        events.push(phosphor_craft::records::complete(at + 100, ID + 1, step_ns + (k % 5) * 10).to_vec());
        events.push(phosphor_craft::records::complete(at, ID, 5_000 + (k % 7) * 10).to_vec());
    }
    events.push(phosphor_craft::records::complete(2_000_000, ID + 2, 500).to_vec());
    write_trace(path, &sites, &[(1, events)]);
}

/// Serves the traces at `paths`, indexed, comparing the first two if `compare`.
fn start(paths: &[PathBuf], compare: bool) -> SocketAddr {
    let indexes =
        paths.iter().map(|p| (p.clone(), open(p, None, &BuildOptions::default()).unwrap())).collect();
    let traces = Arc::new(Traces::ready(indexes));
    if compare {
        traces.compare(0, 1).unwrap();
        assert!(traces.compare(0, 1).is_err(), "compared twice");
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || serve(traces, listener));
    addr
}

/// `/api/compare`, asked again while it is computed.
fn ready(addr: SocketAddr) -> Value {
    for _ in 0..12_000 {
        let (status, c) = get(addr, "/api/compare");
        assert_eq!(status, 200, "{c}");
        match c["state"].as_str() {
            Some("ready") => return c,
            Some("computing") => std::thread::sleep(std::time::Duration::from_millis(10)),
            _ => panic!("{c}"),
        }
    }
    panic!("not compared in 2 minutes")
}

fn side(path: &Path) -> DiffSide {
    let reader = Reader::new(BufReader::new(File::open(path).unwrap())).unwrap();
    DiffSide::from_reader(reader).unwrap()
}

#[test]
fn compare_serves_the_diffs_rows_each_with_the_path_that_kind_takes_on_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = (dir.path().join("base.phos"), dir.path().join("new.phos"));
    frames(&base, 1_000, "old");
    frames(&new, 3_000, "added");
    let addr = start(&[base.clone(), new.clone()], true);
    let c = ready(addr);
    assert_eq!(c["base"], json!({"trace": 0, "file": "base.phos", "events": 401}), "{c}");
    assert_eq!(c["new"], json!({"trace": 1, "file": "new.phos", "events": 401}), "{c}");

    // The rows are those of the diff of the two files.
    let diff = TraceDiff::new(&side(&base), &side(&new), &DiffOptions::default());
    // (Both read from JSON text: a float read back may differ in its last bit from the value.)
    let want: Value = serde_json::from_str(&serde_json::to_string(&diff.json_rows()).unwrap()).unwrap();
    assert_eq!(c["rows"], want);
    assert_eq!(c["rows_total"], 4, "{c}");
    let at = |path: &str| c["rows"].as_array().unwrap().iter().position(|r| r["path"] == path).unwrap();
    // Steps three times as long: significant, slower; the frames alike: not significant.
    let step = at("frame/step");
    assert_eq!(c["rows"][step]["test"]["significant"], true, "{c}");
    assert_eq!(c["rows"][step]["test"]["direction"], "slower", "{c}");
    assert_eq!(c["rows"][at("frame")]["test"]["significant"], false, "{c}");
    assert_eq!(c["rows"][at("old")]["status"], "gone", "{c}");
    assert_eq!(c["rows"][at("added")]["status"], "new", "{c}");

    // Each row's path as `/api/kind` takes it gives that row's slices in each trace.
    let kind = &c["kinds"][step];
    assert_eq!(*kind, json!({"type": "scope", "path": ["frame", "step"]}), "{c}");
    let names = serde_json::to_string(&kind["path"]).unwrap();
    let q = |n: usize| format!("/api/kind?trace={n}&type=scope&path={}", names.replace('"', "%22"));
    let (status, b) = get(addr, &q(0));
    assert_eq!(status, 200, "{b}");
    let (_, n) = get(addr, &q(1));
    assert_eq!((b["count"].as_u64(), n["count"].as_u64()), (Some(200), Some(200)), "{b} {n}");
    assert_eq!(b["slowest"][0]["duration_ns"], c["rows"][step]["base"]["max_ns"], "{b}");
    assert_eq!(n["slowest"][0]["duration_ns"], c["rows"][step]["new"]["max_ns"], "{n}");
}

#[test]
fn compare_is_off_unless_two_traces_are_compared() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.phos"), dir.path().join("b.phos"));
    frames(&a, 1_000, "old");
    frames(&b, 1_000, "old");
    let addr = start(&[a.clone(), b.clone()], false);
    let (status, c) = get(addr, "/api/compare");
    assert_eq!(status, 200, "{c}");
    assert_eq!((c["state"].as_str(), c["rows"].as_array().map(Vec::len)), (Some("off"), Some(0)), "{c}");
    let indexes = [&a, &b].map(|p| (p.to_path_buf(), open(p, None, &BuildOptions::default()).unwrap()));
    let traces = Arc::new(Traces::ready(indexes.into()));
    for (x, y) in [(0, 0), (0, 2), (2, 1)] {
        let e = traces.compare(x, y).unwrap_err();
        assert!(e.contains("cannot compare"), "{e}");
    }
}

#[test]
fn a_trace_damaged_part_way_is_not_compared_and_the_error_names_it_and_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = (dir.path().join("damaged.phos"), dir.path().join("new.phos"));
    frames(&base, 1_000, "old");
    frames(&new, 3_000, "added");
    // Cut inside its events: the viewer shows what is before the damage, `phosphor diff` refuses.
    let bytes = std::fs::read(&base).unwrap();
    std::fs::write(&base, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let addr = start(&[base, new], true);
    for _ in 0..12_000 {
        let (status, c) = get(addr, "/api/compare");
        if status == 200 && c["state"] == "computing" {
            std::thread::sleep(std::time::Duration::from_millis(10));
            continue;
        }
        assert_eq!(status, 500, "{c}");
        let e = c["error"].as_str().unwrap();
        assert!(e.contains("damaged.phos") && e.contains("byte") && e.contains("cannot be compared"), "{e}");
        return;
    }
    panic!("not compared in 2 minutes")
}

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};

use phosphor_format::Phase;
use serde_json::Value;

use super::{serve, Traces};
use crate::tests::{write_trace, ID};
use crate::{open, BuildOptions};

/// Serves the traces at `paths` on a free loopback port.
pub(crate) fn start(paths: &[std::path::PathBuf]) -> SocketAddr {
    let indexes =
        paths.iter().map(|p| (p.clone(), open(p, None, &BuildOptions::default()).unwrap())).collect();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || serve(std::sync::Arc::new(Traces::ready(indexes)), listener));
    addr
}

/// `GET path`: the status and the body as JSON.
pub(crate) fn get(addr: SocketAddr, path: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

#[test]
fn the_api_lists_traces_and_answers_windows_within_its_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.phos");
    let sites = [("outer", Phase::Complete), ("inner", Phase::Complete), ("load", Phase::Counter)];
    let mut events = Vec::new();
    for k in 0..1000u64 {
        events.push(phosphor_craft::records::complete(k * 100 + 10, ID + 1, 20).to_vec());
        events.push(phosphor_craft::records::complete(k * 100, ID, 90).to_vec());
        events.push(phosphor_craft::records::counter(k * 100, ID + 2, k as f64).to_vec());
    }
    write_trace(&path, &sites, &[(3, events)]);
    let addr = start(&[path]);

    let (status, list) = get(addr, "/api/traces");
    assert_eq!(status, 200);
    let t = &list["traces"][0];
    assert_eq!(t["threads"][0]["tid"], 3);
    assert_eq!(t["threads"][0]["slices"], 2000);
    assert_eq!(t["counters"][0]["name"], "load");
    assert_eq!((t["start_ns"].as_i64(), t["end_ns"].as_i64()), (Some(0), Some(99_990)));

    // The whole trace in 100 pixels: each level merged to about a run a pixel.
    let (status, w) = get(addr, "/api/slices?trace=0&tid=3&start=0&end=100000&px=100");
    assert_eq!(status, 200);
    let levels = w["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2);
    for level in levels {
        let items = level.as_array().unwrap();
        assert!(items.len() <= 202, "{}", items.len());
        let count: i64 =
            items.iter().map(|i| if i[2].as_i64().unwrap() < 0 { -i[2].as_i64().unwrap() } else { 1 }).sum();
        assert_eq!(count, 1000);
    }
    // Zoomed in: whole slices, named.
    let (_, w) = get(addr, "/api/slices?trace=0&tid=3&start=0&end=99&px=1000");
    let first = &w["levels"][0][0];
    assert_eq!((first[0].as_i64(), first[1].as_i64()), (Some(0), Some(90)));
    assert_eq!(w["names"][first[2].as_u64().unwrap().to_string()], "outer");
    let (status, d) = get(addr, &format!("/api/slice?trace=0&index={}", first[3]));
    assert_eq!(status, 200);
    assert_eq!(
        (d["name"].as_str(), d["duration_ns"].as_u64(), d["level"].as_u64()),
        (Some("outer"), Some(90), Some(0))
    );
    // Its self time: 90 ns less the 20 of the one slice inside it; the inner one's path.
    assert_eq!((d["self_ns"].as_u64(), d["children"].as_u64()), (Some(70), Some(1)));
    assert_eq!(d["path"], serde_json::json!(["outer"]));
    let inner = &w["levels"][1][0];
    let (_, d) = get(addr, &format!("/api/slice?trace=0&index={}", inner[3]));
    assert_eq!(d["path"], serde_json::json!(["outer", "inner"]));
    assert_eq!((d["self_ns"].as_u64(), d["children"].as_u64()), (Some(20), Some(0)));

    let (_, s) = get(addr, "/api/samples?trace=0&counter=0&start=0&end=99999&px=10");
    let samples = s["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 10);
    assert_eq!(samples.iter().map(|s| s[2].as_u64().unwrap()).sum::<u64>(), 1000);

    // Bad requests name what is wrong; nothing panics.
    for (path, want) in [
        ("/api/slices?trace=5&tid=3&start=0&end=10&px=10", 404),
        ("/api/slices?trace=0&tid=9&start=0&end=10&px=10", 404),
        ("/api/slices?trace=0&tid=3&start=0&end=10&px=0", 400),
        ("/api/slices?trace=0&tid=3&start=0&end=10&px=100000", 400),
        ("/api/slices?trace=0&tid=3&start=10&end=0&px=10", 400),
        ("/api/slice?trace=0&index=99999999", 404),
        ("/api/samples?trace=0&counter=4&start=0&end=10&px=10", 404),
    ] {
        let (status, body) = get(addr, path);
        assert_eq!(status, want, "{path}: {body}");
    }
    let (status, _) = get(addr, "/api/slices?trace=0&tid=3");
    assert_eq!(status, 400);
}

#[test]
fn a_search_counts_every_match_and_lists_the_earliest_from_a_time_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.phos");
    let sites = [("Frame", Phase::Complete), ("frame_end", Phase::Instant), ("other", Phase::Complete)];
    let mut events = Vec::new();
    for k in 0..500u64 {
        events.push(phosphor_craft::records::complete(k * 100, ID, 50).to_vec());
        events.push(phosphor_craft::records::instant(k * 100 + 60, ID + 1).to_vec());
        events.push(phosphor_craft::records::complete(k * 100 + 70, ID + 2, 10).to_vec());
    }
    write_trace(&path, &sites, &[(3, events)]);
    let addr = start(&[path]);

    // Text matches in either case: both names with "frame".
    let (status, r) = get(addr, "/api/search?q=FRAME&limit=10");
    assert_eq!(status, 200);
    assert_eq!(r["total"], 1000);
    let hits = r["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 10);
    let starts: Vec<i64> = hits.iter().map(|h| h["start_ns"].as_i64().unwrap()).collect();
    assert_eq!(starts, [0, 60, 100, 160, 200, 260, 300, 360, 400, 460]);
    assert_eq!((hits[1]["kind"].as_str(), hits[1]["name"].as_str()), (Some("point"), Some("frame_end")));
    assert_eq!(r["next_after"], 500);
    // From a time on.
    let (_, r) = get(addr, "/api/search?q=FRAME&limit=2&after=49960");
    let starts: Vec<i64> =
        r["hits"].as_array().unwrap().iter().map(|h| h["start_ns"].as_i64().unwrap()).collect();
    assert_eq!(starts, [49960]);
    assert_eq!(r["next_after"], serde_json::Value::Null);
    // A glob matches whole names, as written.
    let (_, r) = get(addr, "/api/search?q=F*e");
    assert_eq!(r["total"], 500);
    let (_, r) = get(addr, "/api/search?q=nothing*");
    assert_eq!((r["total"].as_u64(), r["hits"].as_array().unwrap().len()), (Some(0), 0));
    let (status, _) = get(addr, "/api/search?q=");
    assert_eq!(status, 400);
}

#[test]
fn the_statistics_of_the_whole_trace_are_those_of_phosphor_stats() {
    use crate::tests::{tree, Rng};
    use phosphor_export::{EventType, TraceStats};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.phos");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    tree(&mut Rng(11), 0, 1_000_000, 4, &mut a);
    tree(&mut Rng(12), 0, 1_000_000, 4, &mut b);
    let sites = [("p", Phase::Complete), ("q", Phase::Complete), ("r", Phase::Complete)];
    write_trace(&path, &sites, &[(1, a), (2, b)]);
    let file = std::fs::read(&path).unwrap();
    let want = TraceStats::from_reader(phosphor_format::file::Reader::new(file.as_slice()).unwrap()).unwrap();
    let addr = start(&[path]);

    let (status, r) = get(addr, "/api/stats?limit=5000");
    assert_eq!(status, 200);
    let rows = r["rows"].as_array().unwrap();
    let scopes: Vec<_> = want.paths().iter().filter(|k| k.event_type == EventType::Scope).collect();
    assert!(scopes.len() > 20, "{} paths", scopes.len());
    assert_eq!(rows.len(), scopes.len());
    for k in scopes {
        let names: Vec<&str> = k.path.segments().collect();
        let row = rows
            .iter()
            .find(|r| r["path"] == serde_json::json!(names))
            .unwrap_or_else(|| panic!("no {names:?}"));
        let d = k.durations.unwrap();
        assert_eq!(row["count"].as_u64(), Some(k.count), "{names:?}");
        for (key, v) in
            [("total_ns", d.total_ns), ("p50_ns", d.p50_ns), ("p99_ns", d.p99_ns), ("max_ns", d.max_ns)]
        {
            assert_eq!(row[key].as_u64(), Some(v), "{names:?} {key}");
        }
    }
    // A range: only the slices that start in it.
    let (_, r) = get(addr, "/api/stats?start=0&end=99999");
    let counted = r["slices"].as_u64().unwrap();
    assert!(counted > 0 && counted < want.paths().iter().map(|k| k.count).sum::<u64>(), "{counted}");
    let (status, _) = get(addr, "/api/stats?start=10&end=0");
    assert_eq!(status, 400);
}

#[test]
fn a_points_details_are_read_again_from_the_trace_a_logs_message_formatted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.phos");
    let sites = [("load {} of {}", Phase::Log), ("note", Phase::Instant)];
    // Enough events for several chunks: the details come from the right one.
    let mut events = Vec::new();
    for k in 0..400u64 {
        events.push(phosphor_craft::records::log(k * 10, ID, &[k, 7]));
        events.push(phosphor_craft::records::with_string(k * 10 + 5, ID + 1, &format!("hello {k}"), None));
    }
    write_trace(&path, &sites, &[(1, events)]);
    let addr = start(&[path]);
    let (_, w) = get(addr, "/api/points?trace=0&tid=1&start=3000&end=3009&px=100");
    let points = w["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{w}");
    let (status, log) = get(addr, &format!("/api/point?trace=0&index={}", points[0][2]));
    assert_eq!(status, 200);
    assert_eq!(log["event"]["message"], "load 300 of 7", "{log}");
    assert_eq!(log["event"]["level"], "info");
    assert_eq!(
        (log["event"]["file"].as_str(), log["event"]["line"].as_u64()),
        (Some("test.rs"), Some(u64::from(ID)))
    );
    let (_, note) = get(addr, &format!("/api/point?trace=0&index={}", points[1][2]));
    assert_eq!(note["event"]["args"][0][1], "hello 300", "{note}");
    assert_eq!(note["event"]["message"], serde_json::Value::Null);
    let (status, _) = get(addr, "/api/point?trace=0&index=999999");
    assert_eq!(status, 404);
}

#[test]
fn a_trace_of_thousands_of_threads_lists_its_busiest_and_says_how_many() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.phos");
    let sites = [("work", Phase::Complete)];
    // 3,000 threads: thread k has k % 7 + 1 slices; the busiest (7 slices) are listed first.
    let threads: Vec<(u32, Vec<Vec<phosphor_format::Record>>)> = (0..3000u32)
        .map(|k| {
            let events = (0..u64::from(k % 7 + 1))
                .map(|j| phosphor_craft::records::complete(j * 10, ID, 5).to_vec())
                .collect();
            (k + 1, events)
        })
        .collect();
    write_trace(&path, &sites, &threads);
    // Served as `phosphor view` serves: the overview scanned, then the index built.
    let traces = std::sync::Arc::new(Traces::open(vec![path]).unwrap());
    traces.index_all(None, &BuildOptions::default(), |_, what| panic!("{what}"));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || serve(traces, listener));
    let (status, list) = get(addr, "/api/traces");
    assert_eq!(status, 200);
    let t = &list["traces"][0];
    assert_eq!(t["threads_total"], 3000);
    let listed = t["threads"].as_array().unwrap();
    assert_eq!(listed.len(), super::MAX_TRACKS);
    // The busiest: every thread of 7, 6 and 5 slices (429 + 429 + 429 = 1,287 > 1,024), none of
    // fewer than 5; in tid order.
    assert!(listed.iter().all(|th| th["slices"].as_u64().unwrap() >= 5), "{t}");
    let tids: Vec<u64> = listed.iter().map(|th| th["tid"].as_u64().unwrap()).collect();
    assert!(tids.windows(2).all(|w| w[0] < w[1]));
    // The overview gives the same threads.
    let (status, o) = get(addr, "/api/overview?trace=0&start=0&end=100&px=10");
    assert_eq!(status, 200, "{o}");
    let otids: Vec<u64> =
        o["threads"].as_array().unwrap().iter().map(|th| th["tid"].as_u64().unwrap()).collect();
    assert_eq!(otids.len(), super::MAX_TRACKS);
}

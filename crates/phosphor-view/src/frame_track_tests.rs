//! `GET /api/frames`: the frame track's frames are those `phosphor stats` measures.

use std::time::{Duration, Instant};

use phosphor::{trace_frame, BufferMode, TraceConfig, TraceLog, TraceLogConfig};
use phosphor_export::TraceStats;
use serde_json::Value;

use crate::server::tests::{get, start};

/// Records `n` frame marks, frame k busy for about (k % 4 + 1) × 200 µs; gives the trace's bytes.
fn record_frames(n: u32) -> Vec<u8> {
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    for k in 0..n {
        trace_frame!(log: &log);
        let until = Instant::now() + Duration::from_micros(200 * u64::from(k % 4 + 1));
        while Instant::now() < until {}
    }
    trace_frame!(log: &log);
    log.stop();
    log.take_trace().unwrap().write_to(Vec::new()).unwrap()
}

/// Every frame entry of the answer's first set as (start, duration, number), runs left out.
fn frames_of(answer: &Value) -> Vec<(i64, u64, u64)> {
    answer["sets"][0]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e.as_array().unwrap().len() == 3)
        .map(|e| (e[0].as_i64().unwrap(), e[1].as_u64().unwrap(), e[2].as_u64().unwrap()))
        .collect()
}

#[test]
fn the_frames_are_those_phosphor_stats_measures_and_merge_when_zoomed_out() {
    let bytes = record_frames(40);
    let stats = TraceStats::from_bytes(&bytes).unwrap();
    let set = &stats.frames[0];
    let d = set.durations.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("frames.phos");
    std::fs::write(&path, &bytes).unwrap();
    let addr = start(std::slice::from_ref(&path));
    let (_, list) = get(addr, "/api/traces");
    let (t0, t1) =
        (list["traces"][0]["start_ns"].as_i64().unwrap(), list["traces"][0]["end_ns"].as_i64().unwrap());

    // Zoomed in enough for every frame to be a pixel wide: every frame, in order.
    let (status, a) = get(addr, &format!("/api/frames?trace=0&start={t0}&end={t1}&px=8000"));
    assert_eq!(status, 200, "{a}");
    let s = &a["sets"][0];
    assert_eq!(s["name"], "frame");
    assert_eq!(s["count"].as_u64(), Some(d.samples));
    assert_eq!(
        (s["p50_ns"].as_u64(), s["p99_ns"].as_u64(), s["max_ns"].as_u64()),
        (Some(d.p50_ns), Some(d.p99_ns), Some(d.max_ns))
    );
    let frames = frames_of(&a);
    assert_eq!(frames.len(), 40);
    assert!(frames.iter().enumerate().all(|(k, f)| f.2 == k as u64));
    assert_eq!(frames.iter().map(|f| f.1).sum::<u64>(), d.total_ns);
    // The slowest frames `phosphor stats` lists have the same durations here, and the same
    // starts but for the trace's place on the shared timeline.
    let place: Vec<i64> = set.slowest.iter().map(|s| frames[s.number as usize].0 - s.start_ns).collect();
    assert!(!place.is_empty() && place.iter().all(|&p| p == place[0]), "{place:?}");
    assert!(set.slowest.iter().all(|s| frames[s.number as usize].1 == s.dur_ns));

    // A window on one frame gives it, with its neighbours at most touching it.
    let (s7, d7, _) = frames[7];
    let (_, a) = get(addr, &format!("/api/frames?trace=0&start={s7}&end={}&px=500", s7 + d7 as i64));
    assert!(frames_of(&a).contains(&frames[7]), "{a}");
    assert!(frames_of(&a).len() <= 3);

    // Zoomed out to 4 pixels: runs of frames, few entries, every frame counted once.
    let (_, a) = get(addr, &format!("/api/frames?trace=0&start={t0}&end={t1}&px=4"));
    let entries = a["sets"][0]["frames"].as_array().unwrap().clone();
    assert!(entries.len() <= 9, "{entries:?}");
    let counted: i64 = entries
        .iter()
        .map(|e| if e.as_array().unwrap().len() == 3 { 1 } else { -e[2].as_i64().unwrap() })
        .sum();
    assert_eq!(counted, 40);
    let longest =
        entries
            .iter()
            .map(|e| {
                if e.as_array().unwrap().len() == 3 {
                    e[1].as_u64().unwrap()
                } else {
                    e[4].as_u64().unwrap()
                }
            })
            .max();
    assert_eq!(longest, Some(d.max_ns));

    // Bad windows are refused.
    assert_eq!(get(addr, &format!("/api/frames?trace=0&start={t1}&end={t0}&px=4")).0, 400);
    assert_eq!(get(addr, &format!("/api/frames?trace=0&start={t0}&end={t1}&px=0")).0, 400);
}

#[test]
fn a_trace_without_frames_has_no_frame_set() {
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    phosphor::trace_instant!(log: &log, "app", "frame");
    log.stop();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.phos");
    log.take_trace().unwrap().save(&path).unwrap();
    let addr = start(&[path]);
    let (status, a) = get(addr, "/api/frames?trace=0&start=0&end=1000000000000000000&px=100");
    assert_eq!(status, 200);
    assert_eq!(a["sets"].as_array().map(Vec::len), Some(0), "{a}");
}

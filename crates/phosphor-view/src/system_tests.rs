//! The system context's API on `phosphor_craft::system`'s trace, whose figures are known.

use phosphor_craft::system::{system_trace, TID};
use phosphor_format::file::{ClockInfo, ClockKind};
use phosphor_format::system::{Switch, SwitchKind, SystemBatch};
use serde_json::{json, Value};

use crate::server::tests::{get, start};
use crate::system::SystemView;
use crate::traces::Place;

const MS: i64 = 1_000_000;

/// Serves the crafted trace; gives the address and the trace's start on the shared timeline.
fn serve_crafted() -> (std::net::SocketAddr, i64, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("system.phos");
    std::fs::write(&path, system_trace().unwrap()).unwrap();
    let addr = start(&[path]);
    let (status, list) = get(addr, "/api/traces");
    assert_eq!(status, 200);
    // The trace's first event is at CLOCK_MONOTONIC 0.
    let origin = list["traces"][0]["start_ns"].as_i64().unwrap();
    (addr, origin, dir)
}

#[test]
fn the_system_summary_counts_what_the_blocks_held() {
    let (addr, _, _dir) = serve_crafted();
    let (status, s) = get(addr, "/api/system?trace=0");
    assert_eq!(status, 200);
    assert_eq!(s["present"], true);
    assert_eq!((s["switches"].as_u64(), s["samples"].as_u64()), (Some(2), Some(4)));
    assert_eq!((s["intervals"].as_u64(), s["heap"].as_u64()), (Some(1), Some(3)));
    assert_eq!((s["dropped"].as_u64(), s["threads"].clone()), (Some(0), json!([TID])));
}

#[test]
fn a_window_gives_the_off_cpu_interval_and_the_samples_whole_when_zoomed_in() {
    let (addr, o, _dir) = serve_crafted();
    let url = format!("/api/context?trace=0&tid={TID}&start={o}&end={}&px=1000", o + 100 * MS);
    let (status, w) = get(addr, &url);
    assert_eq!(status, 200);
    assert_eq!(w["intervals"], json!([[o + 10 * MS, o + 60 * MS, 0]]), "blocked from 10 to 60 ms");
    let at = |ms: i64, k: usize| json!([o + ms * MS, k]);
    assert_eq!(w["samples"], json!([at(5, 0), at(70, 1), at(75, 2), at(92, 3)]));
    // Another thread has none.
    let (_, none) = get(addr, &format!("/api/context?trace=0&tid=7&start={o}&end={}&px=10", o + MS));
    assert_eq!(none, json!({ "intervals": [], "samples": [] }));
}

#[test]
fn a_coarse_window_merges_what_is_narrower_than_a_pixel() {
    let (addr, o, _dir) = serve_crafted();
    // One pixel of 200 ms: the 50 ms interval is narrower.
    let url = format!("/api/context?trace=0&tid={TID}&start={o}&end={}&px=1", o + 200 * MS);
    let (_, w) = get(addr, &url);
    assert_eq!(w["intervals"], json!([[o, o + 200 * MS, -1, 50 * MS, 0]]));
    assert_eq!(w["samples"], json!([[o, o + 200 * MS, -4, 0]]));
}

#[test]
fn a_sample_stack_is_symbolized_innermost_first() {
    let (addr, _, _dir) = serve_crafted();
    let (status, s) = get(addr, &format!("/api/stack?trace=0&tid={TID}&index=1"));
    assert_eq!(status, 200);
    let functions: Vec<&str> =
        s["frames"].as_array().unwrap().iter().map(|f| f["function"].as_str().unwrap()).collect();
    // The mapped file does not exist: the addresses are named by their offsets in it.
    assert_eq!(functions, ["app+0x3000", "app+0x2000"]);
    let (status, _) = get(addr, &format!("/api/stack?trace=0&tid={TID}&index=4"));
    assert_eq!(status, 404);
}

#[test]
fn a_slice_details_give_its_cpu_time_switches_samples_and_allocations() {
    let (addr, o, _dir) = serve_crafted();
    let (_, w) = get(addr, &format!("/api/slices?trace=0&tid={TID}&start={o}&end={}&px=1000", o + 100 * MS));
    let details = |level: usize| {
        let index = &w["levels"][level][0][3];
        get(addr, &format!("/api/slice?trace=0&index={index}")).1
    };
    let work = details(0);
    assert_eq!(work["name"], "work");
    let ms = |n: u64| n * MS as u64;
    assert_eq!(
        work["system"],
        json!({
            "on_cpu_ns": ms(50), "off_cpu_ns": ms(50), "preempted_ns": 0, "blocked_ns": ms(50),
            "switches": 1, "samples": 4, "allocations": { "allocs": 1000, "bytes": 64000 },
        })
    );
    let inner = details(1);
    assert_eq!(inner["name"], "inner");
    assert_eq!(
        inner["system"],
        json!({
            "on_cpu_ns": ms(18), "off_cpu_ns": 0, "preempted_ns": 0, "blocked_ns": 0,
            "switches": 0, "samples": 2, "allocations": { "allocs": 200, "bytes": 12800 },
        })
    );
}

#[test]
fn the_heap_track_gives_the_live_bytes() {
    let (addr, o, _dir) = serve_crafted();
    let (_, h) = get(addr, &format!("/api/heap?trace=0&start={o}&end={}&px=1000", o + 101 * MS));
    let last: Vec<&Value> = h["samples"].as_array().unwrap().iter().map(|s| &s[5]).collect();
    assert_eq!(last, [&json!(0), &json!(40_000), &json!(64_000 - 12_800)]);
}

#[test]
fn a_window_over_many_narrow_intervals_is_bounded_by_its_pixels() {
    let clock = ClockInfo::monotonic(0, 0);
    let place = Place::new(clock, 0);
    // 100,000 intervals of 3 ns every 10 ns, every other one preempted.
    let mut v = SystemView::default();
    let switches = (0..100_000u64)
        .flat_map(|k| {
            let out = if k % 2 == 0 { SwitchKind::Out } else { SwitchKind::Preempted };
            [
                Switch { tid: 1, time_ns: k * 10, cpu: 0, kind: out },
                Switch { tid: 1, time_ns: k * 10 + 3, cpu: 0, kind: SwitchKind::In },
            ]
        })
        .collect();
    v.add(&SystemBatch { switches, ..SystemBatch::default() });
    v.finish(1_000_000);
    let w = serde_json::to_value(v.window(&place, 1, 0, 1_000_000, 100)).unwrap();
    let items = w["intervals"].as_array().unwrap();
    assert!(items.len() <= 202, "{}", items.len());
    let count: i64 =
        items.iter().map(|i| if i[2].as_i64().unwrap() < 0 { -i[2].as_i64().unwrap() } else { 1 }).sum();
    assert_eq!(count, 100_000, "each interval counted once");
    let off: u64 = items.iter().map(|i| i[3].as_u64().unwrap()).sum();
    let preempted: u64 = items.iter().map(|i| i[4].as_u64().unwrap()).sum();
    assert_eq!((off, preempted), (300_000, 150_000));
}

#[test]
fn past_the_cap_switches_and_samples_are_counted_not_kept() {
    let clock = ClockInfo::monotonic(0, 0);
    let place = Place::new(clock, 0);
    let mut v = SystemView::with_cap(10);
    let kinds = [SwitchKind::Out, SwitchKind::In];
    let switches =
        (0..30u64).map(|k| Switch { tid: 1, time_ns: k * 10, cpu: 0, kind: kinds[k as usize % 2] });
    v.add(&SystemBatch { switches: switches.collect(), ..SystemBatch::default() });
    v.finish(1_000);
    let s = serde_json::to_value(v.summary(&place, &[1])).unwrap();
    // The first 10 switches kept: 5 intervals; 20 counted as dropped.
    assert_eq!((s["switches"].as_u64(), s["intervals"].as_u64()), (Some(30), Some(5)));
    assert_eq!((s["dropped"].as_u64(), s["max_kept"].as_u64()), (Some(20), Some(10)));
}

#[test]
fn preempted_and_blocked_intervals_keep_their_kind_and_a_tsc_trace_is_placed_by_its_origin() {
    // A TSC clock of 2 ns a tick whose origin is CLOCK_MONOTONIC 1,000, placed at 500 on the
    // shared timeline: monotonic time t is at 500 + (t − 1,000).
    let clock = ClockInfo {
        kind: ClockKind::Tsc,
        ns_per_tick: 2.0,
        origin_ticks: 7,
        origin_monotonic_ns: 1_000,
        origin_wall_ns: 0,
        fallback_reason: None,
    };
    let place = Place::new(clock, 500);
    let mut v = SystemView::default();
    let w = |time_ns, kind| Switch { tid: 1, time_ns, cpu: 0, kind };
    let switches = vec![
        w(2_000, SwitchKind::Preempted),
        w(2_400, SwitchKind::In),
        w(3_000, SwitchKind::Out),
        w(3_100, SwitchKind::In),
    ];
    v.add(&SystemBatch { switches, ..SystemBatch::default() });
    v.finish(10_000);
    let got = serde_json::to_value(v.window(&place, 1, 1_500, 2_700, 1_200)).unwrap();
    assert_eq!(got["intervals"], json!([[1_500, 1_900, 1], [2_500, 2_600, 0]]));
    let f = v.figures(1, 2_100, 3_050);
    assert_eq!((f.off_ns, f.preempted_ns, f.switches), (300 + 50, 300, 1));
}

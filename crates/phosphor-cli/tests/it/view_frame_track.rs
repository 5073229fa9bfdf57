//! The viewer's frame track (issue 41, part 4) in headless Chromium
//! (`scripts/browser/view-frametrack.mjs`), on the trace the `frames` example records: the track
//! shows the frames `phosphor stats` measures, and clicking one shows its interval.

use serde_json::Value;

use crate::browser::check;
use crate::cli::{phosphor, scratch, stdout};
use crate::view::{get, start_viewer};

/// The page's frame entries that are single frames: (start, duration, number).
fn single(entries: &Value) -> Vec<(i64, u64, u64)> {
    entries
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e.as_array().unwrap().len() == 3)
        .map(|e| (e[0].as_f64().unwrap() as i64, e[1].as_u64().unwrap(), e[2].as_u64().unwrap()))
        .collect()
}

#[test]
fn the_frame_track_shows_the_frames_phosphor_stats_measures_and_a_click_zooms_to_one() {
    let dir = scratch("view-frame-track");
    let file = dir.join("frames.phos");
    // `cargo test` builds the package's examples next to the test binary's directory.
    let exe = std::env::current_exe().unwrap();
    let example = exe.parent().unwrap().parent().unwrap().join("examples/frames");
    let run = std::process::Command::new(example).arg(&file).output().unwrap();
    assert!(run.status.success(), "{run:?}");
    let out = phosphor("view-frame-track-stats", &["stats", file.to_str().unwrap(), "--json"]);
    assert!(out.status.success());
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let set = doc["frames"].as_array().unwrap().iter().find(|s| s["name"] == "frame").unwrap().clone();
    let durations = &set["durations"];
    let slowest = &set["slowest"][0];
    let number = slowest["number"].as_u64().unwrap();

    let (_viewer, host) = start_viewer(&file, "view-frame-track-cache");
    let url = format!("http://{host}/");
    let shot = dir.join("view-frame-track.png");
    let r = check(
        "view-frametrack.mjs",
        &[url.as_ref(), "frame".as_ref(), number.to_string().as_ref(), shot.as_os_str(), "120".as_ref()],
    );
    assert_eq!(r["errors"], serde_json::json!([]), "{r}");
    // A row per set, the frame set's every frame drawn (60 frames at the page's width are wider
    // than a pixel), with the durations `phosphor stats` reports.
    let rows = r["rows"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["frame", "physics"], "{r}");
    assert_eq!(rows[0]["count"], durations["samples"]);
    let frames = single(&rows[0]["frames"]);
    assert_eq!(frames.len() as u64, durations["samples"].as_u64().unwrap(), "{r}");
    assert!(frames.iter().enumerate().all(|(k, f)| f.2 == k as u64));
    assert_eq!(frames.iter().map(|f| f.1).sum::<u64>(), durations["total_ns"].as_u64().unwrap());
    assert_eq!(frames.iter().map(|f| f.1).max(), durations["max_ns"].as_u64());
    assert_eq!(frames.iter().map(|f| f.1).min(), durations["min_ns"].as_u64());
    for s in set["slowest"].as_array().unwrap() {
        assert_eq!(frames[s["number"].as_u64().unwrap() as usize].1, s["dur_ns"].as_u64().unwrap(), "{s}");
    }
    // The hover names the frame and its duration; the slowest is flagged.
    let tip = r["tip"].as_str().unwrap();
    assert!(tip.starts_with(&format!("frame {number}: ")) && tip.ends_with("(slow)"), "{tip}");
    // The click shows exactly the frame's interval, and the track then draws that frame.
    let (start, dur, _) = frames[number as usize];
    assert_eq!(dur, slowest["dur_ns"].as_u64().unwrap());
    let view = (r["view"][0].as_f64().unwrap(), r["view"][1].as_f64().unwrap());
    assert_eq!(view, (start as f64, (start + dur as i64) as f64), "{r}");
    assert!(single(&r["zoomed"]).contains(&frames[number as usize]), "{r}");
    // The API gives the same frame at the same place.
    let (_, a) = get(&host, &format!("/api/frames?trace=0&start={start}&end={}&px=100", start + dur as i64));
    assert!(single(&a["sets"][0]["frames"]).contains(&frames[number as usize]), "{a}");
    assert!(shot.is_file());
}

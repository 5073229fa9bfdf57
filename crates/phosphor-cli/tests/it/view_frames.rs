//! Issue 39's frames (`scripts/browser/view-frames.mjs`, headless Chromium): a tall track's new
//! data is drawn a band of levels a frame, tracks out of sight are neither drawn nor asked for
//! before those in sight, and however pans and zooms and answers interleave, once the page is
//! idle every track in sight shows exactly what drawing it whole at once shows.

use serde_json::{json, Value};

use crate::browser::check;
use crate::cli::{phosphor, scratch, stderr};
use crate::view::start_viewer;

/// The demo (3 workers: a thread track of a few levels each, an async track of many lanes taller
/// than the box, two counters below it) in a box of 600 × 420 CSS pixels.
fn frames(moves: Value) -> Value {
    let dir = scratch("view-frames");
    let out = phosphor(
        "view-frames-demo",
        &["demo", "--threads", "3", "--events", "60000", "-o", dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (_viewer, host) = start_viewer(&dir.join("trace.phos"), "view-frames-cache");
    let params = scratch("view-frames-params").join("params.json");
    std::fs::write(&params, json!({"width": 600, "height": 420, "moves": moves}).to_string()).unwrap();
    let url = format!("http://{host}/");
    let r = check("view-frames.mjs", &[url.as_ref(), params.as_os_str(), "300".as_ref()]);
    assert_eq!(r["errors"], json!([]), "{}", &r.to_string()[..r.to_string().len().min(4000)]);
    r
}

#[test]
fn frames_draw_a_band_each_tracks_out_of_sight_wait_and_the_picture_at_rest_is_the_whole_redraw() {
    // Pans and zooms a frame apart, both ways, while answers come.
    let mut moves = Vec::new();
    for i in 0..24 {
        moves.push(match i % 6 {
            0 | 1 => json!(["pan", 0.04]),
            2 => json!(["zoom", 0.7]),
            3 => json!(["pan", -0.05]),
            4 => json!(["zoom", 1.3]),
            _ => json!(["pan", 0.5]),
        });
    }
    let r = frames(json!(moves));
    let short = || r.to_string()[..r.to_string().len().min(3000)].to_owned();

    // Tracks wholly out of sight have their answers but drew nothing.
    let unseen = r["unseen"].as_array().unwrap();
    assert!(!unseen.is_empty(), "every track was in sight: {}", short());
    for t in unseen {
        assert_eq!(t["drawn"], 0, "{t} was drawn out of sight");
        assert_eq!(t["logged"], Value::Null, "{t} was drawn out of sight");
    }

    // After a pan, every track in sight was asked for before any out of sight.
    let o = &r["order"];
    let asked: Vec<&str> = o["asked"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let near: Vec<&str> = o["in_sight"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let far: Vec<&str> = o["out_of_sight"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let first_far = asked.iter().position(|k| far.contains(k)).expect("the tracks out of sight asked for");
    let last_near = asked.iter().rposition(|k| near.contains(k)).expect("the tracks in sight asked for");
    assert!(last_near < first_far, "a track out of sight asked for before one in sight: {o}");

    // With a budget of nothing, each frame that drew new data drew one band; the tall track took
    // many frames.
    let work = r["work"].as_array().unwrap();
    assert!(work.len() > 20, "{} frames drew new data: {}", work.len(), short());
    assert!(work.iter().all(|n| n == 1), "a frame drew more than one band: {work:?}");

    // At rest, every track's rows in sight (the box scrolled over all of them) are what drawing
    // it whole gives, pixel for pixel and item for item.
    let compared = r["compared"].as_array().unwrap();
    let kinds: Vec<&str> = compared.iter().map(|c| c["kind"].as_str().unwrap()).collect();
    for kind in ["thread", "async", "counter"] {
        assert!(kinds.contains(&kind), "no {kind} track compared: {}", short());
    }
    for kind in ["thread", "async"] {
        let painted: u64 =
            compared.iter().filter(|c| c["kind"] == kind).map(|c| c["painted"].as_u64().unwrap()).sum();
        assert!(painted > 1000, "the {kind} tracks drew nearly nothing: {}", short());
    }
    for c in compared {
        assert_eq!(c["differ"], 0, "drawn in parts, it differs from drawn whole: {c}");
        assert_eq!(c["logs_differ"], false, "drawn in parts, it drew other items than drawn whole: {c}");
    }
    // Both with one band a frame and with the page's own budget.
    for how in ["one band a frame", "the page's budget"] {
        assert!(compared.iter().any(|c| c["how"] == how), "nothing compared with {how}: {}", short());
    }
    // The tall async track was compared at more than one place of the box.
    assert!(compared.iter().filter(|c| c["kind"] == "async").count() > 1, "{}", short());
}

//! The system context in Perfetto, checked by the official protos (`scripts/check_pftrace.py`):
//! `phosphor_craft::system`'s trace, whose figures are known.

use phosphor_craft::system::system_trace;
use phosphor_format::file::Reader;
use serde_json::{json, Value as Json};

use super::checker::{check, named, slices};
use crate::perfetto::write_perfetto;

const MS: u64 = 1_000_000;

fn exported() -> Json {
    let bytes = system_trace().unwrap();
    let mut out = Vec::new();
    write_perfetto(Reader::new(&bytes[..]).unwrap(), &mut out).unwrap();
    check(&out)
}

#[test]
fn a_thread_switched_out_gets_a_blocked_slice_on_its_off_cpu_track() {
    let doc = exported();
    let off = named(&doc, "track", "off-CPU");
    assert_eq!(off.len(), 1);
    assert_eq!(slices(off[0]), [("blocked".to_string(), 10 * MS, Some(50 * MS), 0)]);
    let thread = super::checker::thread(&doc, 101);
    assert_eq!(off[0]["parent"], thread["uuid"], "under the thread's track");
}

#[test]
fn cpu_samples_are_perf_samples_with_interned_stacks_outermost_first() {
    let doc = exported();
    let samples: Vec<(u64, u64, Json)> = doc["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["ts"].as_u64().unwrap(), s["tid"].as_u64().unwrap(), s["stack"].clone()))
        .collect();
    let path = "/nonexistent/phosphor-craft/app";
    let f = |name: &str| format!("{name} @ {path}");
    assert_eq!(
        samples,
        [
            (5 * MS, 101, json!([f("app+0x2000"), f("app+0x1000")])),
            (70 * MS, 101, json!([f("app+0x2000"), f("app+0x3000")])),
            (75 * MS, 101, json!([f("app+0x2000"), f("app+0x3000")])),
            (92 * MS, 101, json!([f("app+0x1000")])),
        ]
    );
}

#[test]
fn heap_totals_are_a_counter_of_live_bytes_and_scope_allocations_are_arguments_of_their_slice() {
    let doc = exported();
    let heap = named(&doc, "counter", "heap live bytes");
    assert_eq!(heap[0]["counter"], json!([[0, 0], [50 * MS, 40_000], [100 * MS, 51_200]]));
    let thread = super::checker::thread(&doc, 101);
    let work = super::checker::slice(thread, "work");
    assert_eq!(work["args"], json!({"allocs": ["uint", 1000], "bytes": ["uint", 64000]}));
    let inner = super::checker::slice(thread, "inner");
    assert_eq!(inner["args"], json!({"allocs": ["uint", 200], "bytes": ["uint", 12800]}));
    // No instant is left for the allocation events themselves.
    assert!(slices(thread).iter().all(|s| s.0 != "scope_alloc"), "{:?}", slices(thread));
}

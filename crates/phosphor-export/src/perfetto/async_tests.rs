//! Tests of the async layout through the whole export (the plan's own tests are in
//! `plan_tests.rs`), and of names carried by the events (`dyn`) in Perfetto and Chrome output.

use phosphor_format::file::{CallsiteInfo, Trailer};
use phosphor_format::{pack_static_str, ArgType};
use serde_json::{json, Value as Json};

use super::checker::{check, named, slice, slices, thread, tracks};
use super::tests::{callsite, chunk, ev, export, file, plain, Part, T0};
use super::*;

/// A file laid out as the demo's: `n` async slices named `item`, `open` of them open at once
/// (slice `i` runs from `10 i` to `10 (i + open) - 5`), begun on thread 1 and ended on thread 2,
/// whose chunk (every end) comes first in the file.
pub(super) fn async_file(n: u64, open: u64) -> Vec<u8> {
    let cs = vec![
        callsite(16, "item", Phase::AsyncBegin, ["", ""]),
        callsite(17, "item", Phase::AsyncEnd, ["", ""]),
    ];
    let a = |ts, id, cs| ev(ts, cs, &[id], &[], &[], false);
    let ends = (0..n).map(|i| a(10 * (i + open) - 5, i, 17)).collect();
    let begins = (0..n).map(|i| a(10 * i, i, 16)).collect();
    file(vec![Part::Callsites(cs), chunk(2, ends), chunk(1, begins)], &[], &Trailer::default())
}

fn export_planned(bytes: &[u8], plan: AsyncPlan) -> (Vec<u8>, ExportSummary) {
    let mut out = Vec::new();
    let summary = write_perfetto_planned(Reader::new(bytes).unwrap(), plan, &mut out).unwrap();
    (out, summary)
}

/// Checks that every slice of every `item` track is closed, `dur` long, and that there are `n`.
fn assert_items(doc: &Json, n: usize, dur: u64) -> usize {
    let items = named(doc, "track", "item");
    let mut all: Vec<_> = items.iter().flat_map(|t| slices(t)).collect();
    assert_eq!(all.len(), n);
    assert!(all.iter().all(|s| s.2 == Some(dur) && s.3 == 0), "every slice closed, at depth 0");
    all.sort();
    assert_eq!(all[0], ("item".to_owned(), T0, Some(dur), 0));
    items.len()
}

#[test]
fn a_planned_export_puts_ends_written_before_their_begins_on_as_many_lanes_as_are_open_at_once() {
    let bytes = async_file(500, 3);
    let plan = AsyncPlan::from_reader(Reader::new(&bytes[..]).unwrap());
    assert_eq!((plan.lanes(), plan.async_events(), plan.overflowed()), (3, 1000, false));
    let (pf, summary) = export_planned(&bytes, plan);
    assert!(!summary.async_unplanned);
    let doc = check(&pf);
    assert_eq!(assert_items(&doc, 500, 25), 3, "three open at once: three lanes");
    let process = &tracks(&doc, "process")[0]["uuid"];
    assert!(named(&doc, "track", "item").iter().all(|t| &t["parent"] == process));

    // In one pass, each end found first takes a lane of its own: a track per slice.
    let (pf, r) = export(&bytes);
    r.unwrap();
    assert_eq!(assert_items(&check(&pf), 500, 25), 500);
}

#[test]
fn async_events_past_an_overflowed_plan_are_laid_out_in_one_pass_and_counted() {
    let bytes = async_file(20, 2);
    let mut reader = Reader::new(&bytes[..]).unwrap();
    let clock = reader.header().clock.clone();
    let plan = AsyncPlan::build(&mut reader, &clock, 10);
    assert!(plan.overflowed());
    let (pf, summary) = export_planned(&bytes, plan);
    assert!(summary.async_unplanned);
    let doc = check(&pf);
    assert_items(&doc, 20, 15);
    let process = tracks(&doc, "process")[0];
    // Every async event.
    assert_eq!(slice(process, "trace summary")["args"]["async_events_unplanned"], json!(["uint", 40]));
}

#[test]
fn a_plan_of_a_shorter_file_covers_its_events_and_the_rest_go_on_lanes_of_their_own() {
    // The plan read a file that ended (cut) before its second chunk; the export reads it whole.
    let whole = async_file(50, 2);
    let plan_of = |bytes: &[u8]| Reader::new(bytes).ok().map(AsyncPlan::from_reader);
    assert_eq!(plan_of(&whole).unwrap().lanes(), 2);
    let short = (1..whole.len())
        .filter_map(|cut| plan_of(&whole[..cut]))
        .find(|p| p.async_events() == 50)
        .expect("a cut after the first chunk");
    let (pf, summary) = export_planned(&whole, short);
    assert!(summary.async_unplanned);
    let doc = check(&pf);
    let process = tracks(&doc, "process")[0];
    let unplanned = &slice(process, "trace summary")["args"]["async_events_unplanned"];
    assert_eq!(*unplanned, json!(["uint", 50]), "the begins, which the plan never saw");
    // The ends, planned, close nothing on their lanes; the begins, on lanes of their own, stay
    // open: drawn wrong, but never on a slice of another.
    for t in named(&doc, "track", "item") {
        let ss = slices(t);
        assert!(ss.iter().all(|s| s.2.is_none()), "{t:#}");
    }
}

/// A `dyn` callsite: its name is the source text of the expression; each event's is argument 0.
fn dyn_callsite(id: u32, phase: Phase) -> CallsiteInfo {
    let mut c = callsite(id, "STAGES[(item.id % 3) as usize]", phase, ["", "n"]);
    c.dynamic_name = true;
    c
}

fn dyn_file() -> Vec<u8> {
    use ArgType::*;
    let name = |i: usize, len: usize| (StaticStr, pack_static_str(i, len).0);
    let statics = ["stage.decode", "mutex.a", "job.x"];
    let cs = vec![
        dyn_callsite(16, Phase::Complete),
        dyn_callsite(17, Phase::LockWait),
        dyn_callsite(18, Phase::AsyncBegin),
        dyn_callsite(19, Phase::AsyncEnd),
        dyn_callsite(20, Phase::Instant),
    ];
    let events = vec![
        ev(10, 16, &[5], &[name(0, 12), (U64, 7)], &[], false),
        ev(20, 17, &[3], &[name(1, 7)], &[], false),
        ev(30, 18, &[9], &[name(2, 5)], &[], false),
        ev(40, 19, &[9], &[name(2, 5)], &[], false),
        // A hostile event of a `dyn` callsite without its name: it has only the callsite's.
        plain(50, 20, &[]),
    ];
    file(vec![Part::Callsites(cs), chunk(1, events)], &statics, &Trailer::default())
}

#[test]
fn events_named_at_run_time_show_their_own_name_never_the_callsites_source_text() {
    let bytes = dyn_file();
    let plan = AsyncPlan::from_reader(Reader::new(&bytes[..]).unwrap());
    let (pf, _) = export_planned(&bytes, plan);
    let doc = check(&pf);
    let t = thread(&doc, 1);
    assert_eq!(slice(t, "stage.decode")["args"], json!({"n": ["uint", 7]}), "argument 0 is the name");
    assert_eq!(slices(t)[1], ("mutex.a (wait)".to_owned(), T0 + 20, Some(3), 0));
    let job = named(&doc, "track", "job.x");
    assert_eq!(job.len(), 1, "the async lane is named as its slices");
    assert_eq!(slices(job[0]), [("job.x".to_owned(), T0 + 30, Some(10), 0)]);
    // The source text names only the event that carries no name, and is interned nowhere else.
    let source = b"STAGES[(item.id % 3) as usize]";
    let uses = pf.windows(source.len()).filter(|w| w == source).count();
    assert_eq!(uses, 1, "once: the name of the event without its own");
    assert_eq!(slices(t)[2].0, "STAGES[(item.id % 3) as usize]");

    let mut json = Vec::new();
    crate::chrome::write_chrome_json(Reader::new(&bytes[..]).unwrap(), &mut json).unwrap();
    let doc: Json = serde_json::from_slice(&json).unwrap();
    let mut names: Vec<&str> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] != "M")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    // In any order: the thread's slices are written once their nesting is known, after the
    // async events written as read.
    names.sort_unstable();
    assert_eq!(names, ["STAGES[(item.id % 3) as usize]", "job.x", "job.x", "mutex.a (wait)", "stage.decode"]);
}

/// The plan decodes only chunks that can hold an async event: the async callsites of a callsites
/// block that comes after chunks (and after other chunks without any) are still planned, and a
/// file with no async callsite plans nothing, as the export then lays out nothing.
#[test]
fn the_plan_finds_async_callsites_defined_after_chunks_and_in_chunks_mixed_with_others() {
    let plain_cs = vec![callsite(20, "work", Phase::Instant, ["", ""])];
    let async_cs = vec![
        callsite(16, "item", Phase::AsyncBegin, ["", ""]),
        callsite(17, "item", Phase::AsyncEnd, ["", ""]),
    ];
    let a = |ts, id, cs| ev(ts, cs, &[id], &[], &[], false);
    let work = |ts| ev(ts, 20, &[], &[], &[], false);
    let bytes = file(
        vec![
            Part::Callsites(plain_cs.clone()),
            chunk(1, (0..50).map(work).collect()),
            Part::Callsites(async_cs),
            chunk(2, (0..40).map(work).collect()),
            chunk(1, vec![work(100), a(100, 1, 16), work(101), a(110, 2, 16), work(120)]),
            chunk(2, vec![a(150, 1, 17), a(160, 2, 17)]),
        ],
        &[],
        &Trailer::default(),
    );
    let plan = AsyncPlan::from_reader(Reader::new(&bytes[..]).unwrap());
    assert_eq!((plan.lanes(), plan.async_events(), plan.overflowed()), (2, 4, false));
    let (pf, summary) = export_planned(&bytes, plan);
    assert!(!summary.async_unplanned);
    assert_eq!(named(&check(&pf), "track", "item").len(), 2);

    let none = file(
        vec![Part::Callsites(plain_cs), chunk(1, (0..50).map(work).collect())],
        &[],
        &Trailer::default(),
    );
    let plan = AsyncPlan::from_reader(Reader::new(&none[..]).unwrap());
    assert_eq!((plan.lanes(), plan.async_events()), (0, 0));
}

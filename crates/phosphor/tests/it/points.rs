//! Instrumentation points: the linker-gathered listing, run-time rules, and dynamic points.
//!
//! Rules are process-wide, so each test uses categories and names of its own and never calls
//! `points::reset` (which would undo the rules of tests running beside it).

use phosphor::points::{self, Point, PointKind, PointSelector};
use phosphor::{trace_counter, trace_instant, trace_scope, BufferMode, ErrorKind, Phase, TraceConfig};

use crate::support::{events, started, stop_and_take};

fn names(trace: &phosphor::Trace) -> Vec<String> {
    events(trace).iter().map(|e| e.callsite.name.to_owned()).collect()
}

/// Never called: its callsites exist only in the binary.
#[allow(dead_code)]
fn never_runs() {
    trace_instant!("points.never", "pt-never-ran");
    trace_scope!("points.never", "pt-never-ran-scope");
    trace_counter!("points.never", "pt-never-ran-counter", 1u32);
}

#[test]
fn a_callsite_that_never_ran_is_listed_with_its_kind_file_and_line() {
    let all = points::list();
    let find = |name: &str| {
        all.iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("{name} is not listed among {} points", all.len()))
    };
    let instant = find("pt-never-ran");
    assert_eq!(
        (instant.category, instant.kind, instant.phase),
        ("points.never", PointKind::Event, Phase::Instant)
    );
    assert!(instant.file.ends_with("points.rs"), "{}", instant.file);
    assert!(instant.line > 0);
    assert!(instant.enabled, "no rule disables it");
    assert_eq!(find("pt-never-ran-scope").kind, PointKind::Interval);
    assert_eq!(find("pt-never-ran-counter").kind, PointKind::Counter);
    // Ids are distinct and stable between listings.
    let mut ids: Vec<u32> = all.iter().map(|p| p.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), all.len());
    assert!(points::list().iter().any(|p| p.id == instant.id && p.name == "pt-never-ran"));
}

#[test]
fn disabling_by_name_glob_takes_effect_on_a_running_trace_at_the_next_event() {
    let log = started(TraceConfig::new(BufferMode::Fixed, 1 << 16));
    let emit = |tag: u32| {
        trace_instant!(log: &log, "points.rt", "pt-rt-kept", "tag" => tag);
        trace_instant!(log: &log, "points.rt", "pt-rt-muted", "tag" => tag);
    };
    emit(1);
    let matched = points::disable(PointSelector::Name("pt-rt-mu*".into()));
    assert_eq!(matched, 1, "the glob selects exactly the one callsite");
    emit(2);
    assert_eq!(points::enable(PointSelector::Name("pt-rt-muted".into())), 1);
    emit(3);
    let trace = stop_and_take(&log);
    assert_eq!(names(&trace), ["pt-rt-kept", "pt-rt-muted", "pt-rt-kept", "pt-rt-kept", "pt-rt-muted"]);
}

#[test]
fn disabling_by_category_glob_and_by_id() {
    let log = started(TraceConfig::new(BufferMode::Fixed, 1 << 16));
    let emit = || {
        trace_instant!(log: &log, "points.cat.a", "pt-cat-a");
        trace_instant!(log: &log, "points.cat.b", "pt-cat-b");
        trace_instant!(log: &log, "points.id", "pt-by-id");
    };
    emit();
    assert_eq!(points::disable("category=points.cat.*".parse().unwrap()), 2);
    let id = points::list().iter().find(|p| p.name == "pt-by-id").map(|p| p.id).unwrap();
    assert_eq!(points::disable(PointSelector::Id(id)), 1);
    let listed = points::list();
    assert!(!listed.iter().find(|p| p.name == "pt-cat-a").unwrap().enabled);
    assert!(!listed.iter().find(|p| p.id == id).unwrap().enabled);
    emit();
    let trace = stop_and_take(&log);
    assert_eq!(names(&trace), ["pt-cat-a", "pt-cat-b", "pt-by-id"]);
}

#[test]
fn a_rule_also_applies_to_points_created_after_it() {
    points::disable(PointSelector::Name("pt-late-*".into()));
    let p = Point::new("points.late", "pt-late-dyn", PointKind::Event).unwrap();
    assert!(!points::list().iter().find(|i| i.id == p.id()).unwrap().enabled);
}

#[test]
fn selectors_parse_and_bad_ones_say_why() {
    assert_eq!("net*".parse::<PointSelector>().unwrap(), PointSelector::Category("net*".into()));
    assert_eq!("name = recv".parse::<PointSelector>().unwrap(), PointSelector::Name("recv".into()));
    assert_eq!("id=42".parse::<PointSelector>().unwrap(), PointSelector::Id(42));
    for bad in ["id=x", "colour=red", "name=", ""] {
        let e = bad.parse::<PointSelector>().unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::InvalidPointSelector { .. }), "{bad}: {e}");
        assert!(e.to_string().contains(&format!("{bad:?}")), "{e}");
    }
}

#[test]
fn a_dynamic_point_created_twice_is_the_same_point_and_records_like_a_static_one() {
    let a = Point::new("points.dyn", &format!("pt-dyn-{}", 7), PointKind::Event).unwrap();
    let b = Point::new("points.dyn", "pt-dyn-7", PointKind::Event).unwrap();
    assert_eq!(a.id(), b.id());
    let c = Point::new("points.dyn", "pt-dyn-7", PointKind::Counter).unwrap();
    assert_ne!(a.id(), c.id(), "another kind is another point");
    let listed = points::list();
    let info = listed.iter().find(|p| p.id == a.id()).unwrap();
    assert_eq!((info.name, info.file, info.kind), ("pt-dyn-7", "<dynamic>", PointKind::Event));
    let span = Point::new("points.dyn", "pt-dyn-span", PointKind::Interval).unwrap();
    let log = started(TraceConfig::new(BufferMode::Fixed, 1 << 16));
    a.instant_in(&log);
    c.counter_in(&log, 5u32);
    a.counter_in(&log, 6u32); // wrong kind: nothing
    {
        let _g = span.scope_in(&log);
        b.instant_in(&log);
    }
    let trace = stop_and_take(&log);
    let evs = events(&trace);
    let got: Vec<(u32, &str, Phase)> = evs.iter().map(|e| (e.id, e.callsite.name, e.phase())).collect();
    assert_eq!(
        got,
        [
            (a.id(), "pt-dyn-7", Phase::Instant),
            (c.id(), "pt-dyn-7", Phase::Counter),
            (a.id(), "pt-dyn-7", Phase::Instant),
            (span.id(), "pt-dyn-span", Phase::Complete),
        ]
    );
    assert_eq!(evs[1].arg("value"), Some(phosphor::ArgValue::U64(5)));
    assert!(evs[3].duration.is_some());
    assert!(matches!(
        Point::new("points.dyn", "pt-dyn-sum", PointKind::Sum).unwrap_err().kind(),
        ErrorKind::UnsupportedDynamicPoint { .. }
    ));
}

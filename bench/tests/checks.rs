//! The harness's recorded-count checks, with small batches: every scenario records what it emits
//! (or, where nothing should be recorded, nothing). No timing is asserted.
//!
//! All of them share one process, as in the harness: one test owns the global Phosphor log, one
//! installs the tracing subscriber, and `tracing` with no subscriber runs in a child process.

use std::path::Path;
use std::process::Command;

use phosphor_bench::child::{self, Spawned};
use phosphor_bench::limit::{self, Reference};
use phosphor_bench::peers::chrome::{self, Chrome};
use phosphor_bench::peers::fastrace::LocalSpans;
use phosphor_bench::peers::puffin::Scopes;
use phosphor_bench::peers::tracing_off::TracingOff;
use phosphor_bench::phos::{self, Kind, Phos};
use phosphor_bench::scaling::{run_threads, Work};
use phosphor_bench::scenario::Scenario;

const BENCH: &str = env!("CARGO_BIN_EXE_phosphor-bench");
const RSS: &str = env!("CARGO_BIN_EXE_phosphor-bench-rss");

fn assert_checked(s: &mut dyn Scenario) {
    let c = s.check();
    assert!(c.ok(), "{}: {}", s.info().id, c.summary());
}

#[test]
fn every_phosphor_scenario_records_what_it_emits_and_the_timed_trace_accounts_for_all() {
    phos::start_session();
    let mut scenarios: Vec<Phos> = Kind::ALL.iter().map(|&k| Phos::new(k, 1_000)).collect();
    for s in &mut scenarios {
        for _ in 0..3 {
            let sample = s.run(2_000);
            assert_eq!(sample.events, 2_000);
        }
    }
    run_threads(Work::PhosInstant, 2, 2_000);
    let session = phos::stop_session();
    assert!(session.ok(), "{session}");
    for s in &mut scenarios {
        assert_checked(s);
    }
    let c = phos::check(Kind::Instant, 1_000);
    assert_eq!((c.emitted, c.expected, c.recorded), (3_000, 3_000, 3_000));
    let mem = c.footprint.memory.expect("bytes per event in memory");
    assert!((32.0..33.0).contains(&mem), "an instant event takes one 32-byte record, plus extents: {mem}");
    let disabled = phos::check(Kind::Disabled, 1_000);
    assert_eq!((disabled.expected, disabled.recorded), (0, 0), "{}", disabled.summary());
}

#[test]
fn the_limit_loop_stores_every_record() {
    let mut s = Reference::new(limit::Kind::Limit);
    s.run(5_000);
    assert_checked(&mut s);
    let mut clock = Reference::new(limit::Kind::InstantNow);
    clock.run(100);
    assert!(clock.check().not_applicable);
}

#[test]
fn fastrace_spans_reach_the_reporter_with_the_root_refreshed() {
    let mut s = LocalSpans::burst();
    for _ in 0..3 {
        s.run(12_000);
    }
    let c = s.check();
    assert!(c.ok(), "{}", c.summary());
    assert_eq!(c.recorded, 36_000, "more than fastrace's 10,240 spans per root would have been dropped");
}

#[test]
fn puffin_scopes_reach_the_frame_sink_at_top_level_and_nested() {
    for nested in [false, true] {
        let mut s = Scopes::new(nested);
        s.run(3_000);
        s.run(2_000);
        let c = s.check();
        assert!(c.ok(), "{}", c.summary());
        assert_eq!(c.recorded, 5_000);
    }
}

#[test]
fn tracing_chrome_writes_every_span_and_event_with_its_arguments() {
    let mut spans = Chrome::new(true, true);
    let mut events = Chrome::new(false, true);
    chrome::capture();
    spans.run(300);
    events.run(200);
    assert_checked(&mut spans);
    assert_checked(&mut events);
    let json = chrome::captured();
    let count = |pat: &str| json.matches(pat).count();
    assert_eq!(count(r#""ph":"B""#), 300, "span begins");
    assert_eq!(count(r#""ph":"E""#), 300, "span ends");
    assert_eq!(count(r#""ph":"i""#), 200, "events");
    assert_eq!(count(r#""b":"7""#), 200, "arguments serialized");
}

#[test]
fn tracing_without_a_subscriber_runs_in_a_child_process_that_records_nothing() {
    let out = child::run(Path::new(BENCH), "tracing-off-span", 1_000, 2).expect("the child runs");
    assert_eq!(out.samples.len(), 2);
    let c = out.check.expect("a check line");
    assert!(c.ok(), "{}", c.summary());
    assert_eq!((c.emitted, c.recorded), (2_000, 0));

    let mut s = Spawned::new(TracingOff::info(false), BENCH.into(), 1);
    assert_eq!(s.run_round(500, 3).len(), 3);
    assert_checked(&mut s);
}

#[test]
fn tracing_chrome_with_its_defaults_runs_in_a_child_and_writes_every_event() {
    let mut s = Spawned::new(Chrome::info(false, false), BENCH.into(), 1);
    s.run_round(300, 2);
    let c = s.check();
    assert!(c.ok(), "{}", c.summary());
    assert_eq!(c.recorded, 600);
}

#[test]
fn a_phosphor_scenario_in_a_child_checks_its_own_trace() {
    let out = child::run(Path::new(BENCH), "phos-scope", 2_000, 1).expect("the child runs");
    assert!(out.check.as_ref().is_some_and(|c| c.ok()), "{out:?}");
    assert!(out.other.iter().any(|l| l.starts_with("session ") && l.ends_with('✓')), "{out:?}");
}

#[test]
fn the_rss_program_reports_every_figure_and_accounts_for_its_trace() {
    let run = |args: &[&str]| {
        let out = Command::new(RSS).args(args).output().expect("phosphor-bench-rss runs");
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("ASCII output")
    };
    for mode in ["idle", "baseline"] {
        let out = run(&[mode]);
        for key in ["r0.rss", "r1.rss", "r2.rss", "r2.anon", "r2.file"] {
            assert!(out.lines().any(|l| l.starts_with(&format!("{key} "))), "{mode}: no {key} in {out}");
        }
    }
    let out = run(&["callsites", "100"]);
    assert!(out.contains("callsites 100"), "{out}");
    let out = run(&["tracing"]);
    let get = |k: &str| -> u64 {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{k} ")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {k} in {out}"))
    };
    assert_eq!(get("recorded") + get("overwritten"), get("emitted"));
    assert_eq!(get("dropped"), get("overwritten"), "the Ring's overwrites are the only drops");
}

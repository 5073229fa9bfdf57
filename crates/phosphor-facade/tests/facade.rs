//! The facade in the mode this build has: with `enable`, its macros record into Phosphor as the
//! `trace_*!` macros do; without it, they record nothing, evaluate nothing, and leave no
//! variable unused. CI runs this file both ways (`cargo test -p phosphor-facade` and with
//! `--features enable`).

#![deny(unused)]

use std::sync::atomic::{AtomicU32, Ordering};

use phosphor::{BufferMode, TraceConfig, TraceLog};

static EVALUATED: AtomicU32 = AtomicU32::new(0);

/// An argument whose evaluation is counted.
fn counted(v: u32) -> u32 {
    EVALUATED.fetch_add(1, Ordering::Relaxed);
    v
}

/// A library function instrumented through the facade, with every macro and syntax.
fn library(rows: u32, label: &'static str) {
    phosphor_facade::scope!("db", "query", "rows" => counted(rows));
    phosphor_facade::instant!("db", "cache_miss");
    phosphor_facade::instant!("db", dyn phosphor::Static(label), "n" => counted(1));
    phosphor_facade::counter!("db", "pool_size", counted(8));
    phosphor_facade::begin!("db", "fetch");
    phosphor_facade::end!("db", "fetch");
    phosphor_facade::log!(info, "db", "{} rows for {}", counted(rows), label);
}

#[test]
fn the_macros_record_exactly_when_enabled() {
    let log = TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    let before = EVALUATED.load(Ordering::Relaxed);
    for i in 0..10 {
        library(i, "label");
    }
    let evaluated = EVALUATED.load(Ordering::Relaxed) - before;
    log.stop();
    let trace = log.take_trace().unwrap();
    let db = trace.events().map(|e| e.unwrap()).filter(|e| e.callsite.category == "db").count();
    if phosphor_facade::ENABLED {
        // A scope, two instants, a counter, a begin, an end and a log per call.
        assert_eq!(db, 70);
        assert_eq!(evaluated, 40);
    } else {
        assert_eq!(db, 0, "a disabled facade records nothing");
        assert_eq!(evaluated, 0, "a disabled facade evaluates no argument");
    }
}

#[test]
fn the_crate_has_no_dependency_unless_enabled() {
    let manifest = include_str!("../Cargo.toml");
    let deps = manifest.split("[dependencies]").nth(1).unwrap().split("\n[").next().unwrap();
    let lines: Vec<&str> =
        deps.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("phosphor ") && lines[0].contains("optional = true"), "{lines:?}");
}

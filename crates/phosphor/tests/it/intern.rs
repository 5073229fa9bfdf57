//! Interned dynamic strings: stored like static strings, once per file, with counted fallbacks.

use phosphor::format::file::{Reader, Value};
use phosphor::{
    intern, intern_stats, trace_instant, trace_log, trace_scope, ArgValue, BufferMode, Interned, TraceConfig,
};

use crate::support::{events, started, stop_and_take};

#[test]
fn an_interned_argument_costs_one_record_and_is_written_once_per_file() {
    let log = started(TraceConfig::new(BufferMode::Fixed, 1 << 16));
    let paths: Vec<String> = (0..3).map(|i| format!("/interned/users/{i}")).collect();
    for round in 0..10u32 {
        for p in &paths {
            trace_instant!(log: &log, "intern", "request", "path" => intern(p), "round" => round);
        }
    }
    let trace = stop_and_take(&log);
    let records: usize = trace.chunks().map(|c| c.records.len()).sum();
    assert_eq!(records, 30, "one record per event: no string copied");
    let evs = events(&trace);
    assert_eq!(evs[4].arg("path"), Some(ArgValue::Str("/interned/users/1")));
    let mut bytes = Vec::new();
    trace.write_to(&mut bytes).unwrap();
    let mut r = Reader::new(&bytes[..]).unwrap();
    let mut seen = 0;
    r.for_each_event(|e| {
        if let Some(Value::Str(s)) = e.arg("path") {
            assert!(s.starts_with("/interned/users/"));
            seen += 1;
        }
    })
    .unwrap();
    assert_eq!(seen, 30);
    let copies = r.strings().iter().filter(|s| s.starts_with("/interned/users/")).count();
    assert_eq!(copies, 3, "each distinct string once in the file");
}

#[test]
fn a_string_too_long_to_intern_is_copied_into_the_event_and_counted() {
    let long = "z".repeat(phosphor::MAX_INTERNED_BYTES + 1);
    let before = intern_stats().fallbacks;
    let i = intern(&long);
    assert!(matches!(i, Interned::Inline(_)));
    assert!(intern_stats().fallbacks > before);
    let log = started(TraceConfig::new(BufferMode::Fixed, 1 << 16));
    trace_instant!(log: &log, "intern", "long", "s" => i);
    let trace = stop_and_take(&log);
    let evs = events(&trace);
    let Some(ArgValue::Str(s)) = evs[0].arg("s") else { panic!("{:?}", evs[0]) };
    assert_eq!(s.len(), phosphor::format::MAX_DYN_STR_BYTES, "copied, and cut like any dynamic string");
    assert!(evs[0].truncated);
}

#[test]
fn dynamic_names_and_log_parameters_can_be_interned() {
    let log = started(TraceConfig::new(BufferMode::Fixed, 1 << 16));
    let op = String::from("interned-op");
    {
        trace_scope!(log: &log, "intern", dyn &op);
        trace_log!(log: &log, info, "intern", "op {} by {}", intern(&op), 7u32);
    }
    let trace = stop_and_take(&log);
    let evs = events(&trace);
    assert_eq!(evs[1].name(), "interned-op");
    assert_eq!(evs[0].params.iter().collect::<Vec<_>>(), [ArgValue::Str("interned-op"), ArgValue::U64(7)]);
    let records: usize = trace.chunks().map(|c| c.records.len()).sum();
    assert_eq!(records, 3, "the scope is one record and the log two (three words), no string bytes");
}

//! Deferred-format logs and data values: what `trace_log!` and `trace_data!` record, the run-time
//! level filter, and the round trip through a trace file.

use phosphor::format::file::Reader;
use phosphor::{
    trace_data, trace_log, trace_scope, ArgValue, BufferMode, Level, PString, Phase, Static, TraceConfig,
};

use crate::support::{events, started, stop_and_take};

fn fixed() -> TraceConfig {
    TraceConfig::new(BufferMode::Fixed, 1 << 16)
}

#[test]
fn a_log_records_its_level_format_string_and_packed_parameters() {
    let log = started(fixed());
    let (uid, host) = (42u32, String::from("db-7.example"));
    trace_log!(log: &log, info, "logs", "user {} from {} after {:.1} ms ({}, {})", uid, &host, 12.5f64, true, Static("fresh"));
    trace_log!(log: &log, error, "logs", "no parameters");
    trace_log!(log: &log, debug, "logs", "one {}", -3i64);
    let trace = stop_and_take(&log);
    let evs = events(&trace);
    assert_eq!(evs.len(), 3);
    let e = &evs[0];
    assert_eq!((e.phase(), e.callsite.level, e.callsite.category), (Phase::Log, Some(Level::Info), "logs"));
    assert_eq!(e.callsite.name, "user {} from {} after {:.1} ms ({}, {})");
    let params: Vec<ArgValue<'_>> = e.params.iter().collect();
    assert_eq!(
        params,
        [
            ArgValue::U64(42),
            ArgValue::Str("db-7.example"),
            ArgValue::F64(12.5),
            ArgValue::Bool(true),
            ArgValue::Str("fresh")
        ]
    );
    assert_eq!(e.args, [None, None], "a log's values are parameters, not arguments");
    assert!(evs[1].params.is_empty());
    assert_eq!(evs[1].callsite.level, Some(Level::Error));
    assert_eq!(evs[2].params.iter().collect::<Vec<_>>(), [ArgValue::I64(-3)]);
}

#[test]
fn three_int_parameters_take_two_records_and_one_takes_one() {
    let log = started(fixed());
    trace_log!(log: &log, info, "logs", "{} {} {}", 1u64, 2u64, 3u64);
    trace_log!(log: &log, info, "logs", "{}", 1u64);
    trace_log!(log: &log, info, "logs", "{} {} {} {} {}", -1i8, 2.5f32, false, Static("s"), u64::MAX);
    let trace = stop_and_take(&log);
    let records: usize = trace.chunks().map(|c| c.records.len()).sum();
    assert_eq!(records, 5, "two, one, and two records (five scalars fill one continuation record)");
    assert_eq!(trace.stats().recorded, 3);
    let evs = events(&trace);
    assert_eq!(
        evs[0].params.iter().collect::<Vec<_>>(),
        [ArgValue::U64(1), ArgValue::U64(2), ArgValue::U64(3)]
    );
    assert_eq!(
        evs[2].params.iter().collect::<Vec<_>>(),
        [
            ArgValue::I64(-1),
            ArgValue::F64(2.5),
            ArgValue::Bool(false),
            ArgValue::Str("s"),
            ArgValue::U64(u64::MAX)
        ]
    );
}

#[test]
fn sixteen_parameters_and_long_strings_are_kept_within_the_budget_and_flagged() {
    let log = started(fixed());
    let long = "é".repeat(300); // 600 bytes: cut at 256, then by the 2,048-byte budget
    let s = long.as_str();
    trace_log!(log: &log, trace, "logs", "{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}",
        s, s, s, s, s, s, s, s, s, s, s, s, 1u8, 2u8, 3u8, 4u8);
    let trace = stop_and_take(&log);
    let evs = events(&trace);
    let e = &evs[0];
    assert!(e.truncated);
    let params: Vec<ArgValue<'_>> = e.params.iter().collect();
    assert_eq!(params.len(), 16);
    let kept: usize = params.iter().map(|p| if let ArgValue::Str(s) = p { s.len() } else { 0 }).sum();
    assert!(kept <= phosphor::MAX_LOG_STR_BYTES && kept > phosphor::MAX_LOG_STR_BYTES - 2, "{kept}");
    // Every kept string is a whole number of chars, at most 256 bytes.
    for p in &params[..12] {
        let ArgValue::Str(s) = p else { panic!("{p:?}") };
        assert!(s.len() <= 256 && s.chars().all(|c| c == 'é'), "{}", s.len());
    }
    assert_eq!(params[12..], [ArgValue::U64(1), ArgValue::U64(2), ArgValue::U64(3), ArgValue::U64(4)]);
}

#[test]
fn the_run_time_level_filter_keeps_that_level_and_more_severe() {
    let log = started(fixed().log_level(Level::Warn));
    for i in 0..2u32 {
        trace_log!(log: &log, error, "levels", "e{}", i);
        trace_log!(log: &log, warn, "levels", "w{}", i);
        trace_log!(log: &log, info, "levels", "i{}", i);
        trace_log!(log: &log, trace, "levels", "t{}", i);
    }
    let trace = stop_and_take(&log);
    let levels: Vec<Option<Level>> = events(&trace).iter().map(|e| e.callsite.level).collect();
    assert_eq!(levels, [Some(Level::Error), Some(Level::Warn), Some(Level::Error), Some(Level::Warn)]);
    assert_eq!(trace.stats().recorded, 4);
}

#[test]
fn data_values_are_recorded_inside_their_scope() {
    let log = started(fixed());
    {
        trace_scope!(log: &log, "data", "flush");
        trace_data!(log: &log, "data", "queue_len", 17usize);
        trace_data!(log: &log, "data", "ratio", 0.25f64);
    }
    let trace = stop_and_take(&log);
    let evs = events(&trace);
    let got: Vec<(&str, Phase)> = evs.iter().map(|e| (e.name(), e.phase())).collect();
    assert_eq!(got, [("queue_len", Phase::Data), ("ratio", Phase::Data), ("flush", Phase::Complete)]);
    assert_eq!(evs[0].arg("value"), Some(ArgValue::U64(17)));
    assert_eq!(evs[1].arg("value"), Some(ArgValue::F64(0.25)));
    assert!(evs[2].ts <= evs[0].ts, "the values fall inside the scope");
}

#[test]
fn logs_data_and_run_time_names_survive_a_trace_file() {
    const NAME: PString = phosphor::pstr!("op-named");
    let log = started(fixed());
    trace_log!(log: &log, warn, "file", "{} of {} from {}", 3u32, 4i64, Static("static-host"));
    trace_log!(log: &log, info, "file", "dynamic {}", "dyn-host");
    trace_data!(log: &log, "file", "depth", 5u32);
    phosphor::trace_instant!(log: &log, "file", dyn NAME, "n" => 1u8);
    let trace = stop_and_take(&log);
    let mut bytes = Vec::new();
    trace.write_to(&mut bytes).unwrap();
    let mut r = Reader::new(&bytes[..]).unwrap();
    assert_eq!(r.version(), (1, phosphor::format::file::FORMAT_MINOR));
    let mut seen = Vec::new();
    r.for_each_event(|e| {
        let params: Vec<String> = e.params.iter().map(|v| format!("{v:?}")).collect();
        seen.push(format!(
            "{:?} {:?} {} dyn={} [{}] {:?}",
            e.phase(),
            e.callsite.level,
            e.callsite.name,
            e.callsite.dynamic_name,
            params.join(", "),
            e.arg("name").or(e.arg("value"))
        ));
    })
    .unwrap();
    assert_eq!(
        seen,
        [
            "Log Some(Warn) {} of {} from {} dyn=false [U64(3), I64(4), Str(\"static-host\")] None",
            "Log Some(Info) dynamic {} dyn=false [Str(\"dyn-host\")] None",
            "Data None depth dyn=false [] Some(U64(5))",
            "Instant None NAME dyn=true [] Some(Str(\"op-named\"))",
        ]
    );
}

//! Configuration: errors of the control API, category filters, the instance limit, and the global
//! log (the only test in this binary that touches it).

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use phosphor::{
    trace_complete, trace_counter, trace_instant, trace_lock_guard, trace_scope, ArgValue, BufferMode,
    ClockKind, ErrorKind, ThreadPolicy, TraceConfig, TraceLog, TraceLogConfig, MAX_LOGS,
};

use crate::support::{events, new_log, stop_and_take};

#[test]
fn a_buffer_smaller_than_one_chunk_is_rejected_with_buffer_too_small() {
    let log = new_log(TraceLogConfig::default());
    for size in [0, 1, 4095] {
        let err = log.start(TraceConfig::new(BufferMode::Fixed, size)).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::BufferTooSmall { size, chunk: 4096 });
        assert!(!log.is_enabled(), "a rejected start starts nothing");
    }
    let err = log.start(TraceConfig::new(BufferMode::Ring, 100)).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::BufferTooSmall { size: 100, .. }));
    // One chunk is enough, and sizes round down to whole chunks.
    log.start(TraceConfig::new(BufferMode::Fixed, 3 * 4096 + 4095)).unwrap();
    trace_instant!(log: &log, "cfg", "ok");
    let trace = stop_and_take(&log);
    assert_eq!(trace.stats().chunks_total, 3);
    assert_eq!(trace.stats().recorded, 1);
}

#[test]
fn configuring_a_log_that_was_created_with_a_config_fails_with_already_configured() {
    let log = new_log(TraceLogConfig::default());
    let err = log.configure(TraceLogConfig::new().clock(ClockKind::Monotonic)).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::AlreadyConfigured(_)), "{err}");
    assert_eq!(log.clock_kind(), ClockKind::Tsc, "the rejected configuration changed nothing");
}

#[test]
fn an_empty_pool_is_rejected_with_empty_pool() {
    let err = TraceLog::new(TraceLogConfig::new().pool_tenants(0)).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::EmptyPool);
}

#[test]
fn a_pool_with_more_tenants_than_writer_streams_is_rejected() {
    let max = phosphor::MAX_POOL_TENANTS;
    assert!(TraceLog::new(TraceLogConfig::new().pool_tenants(max)).is_ok());
    let err = TraceLog::new(TraceLogConfig::new().pool_tenants(max + 1)).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::PoolTooLarge { requested: max + 1, max });
}

#[test]
fn a_category_filter_with_a_lone_dash_is_rejected() {
    let err = TraceConfig::new(BufferMode::Fixed, 4096).categories("net,-").unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidCategoryFilter { spec, .. } if spec == "net,-"), "{err}");
}

/// The same callsites for every log: each log's filter decides which of them it records.
fn record_categories(log: &TraceLog, m: &Mutex<u32>) {
    trace_instant!(log: log, "net", "net");
    trace_instant!(log: log, "net.io", "net.io");
    trace_instant!(log: log, "net.verbose", "net.verbose");
    trace_instant!(log: log, "network", "network");
    trace_instant!(log: log, "db", "db");
    trace_counter!(log: log, "db.pool", "db.pool", 3u32);
    {
        trace_scope!(log: log, "nettle", "nettle");
    }
    let mut g = trace_lock_guard!(log: log, "net.verbose", "lock", m.lock().unwrap());
    *g += 1;
}

#[test]
fn category_filters_include_and_exclude_the_right_callsites_per_log() {
    let nets = new_log(TraceLogConfig::default());
    let dbs = new_log(TraceLogConfig::default());
    let everything = new_log(TraceLogConfig::default());
    let m = Mutex::new(0);
    // Recorded once before any start, so the callsites are registered while no filter applies.
    record_categories(&nets, &m);
    nets.start(TraceConfig::new(BufferMode::Fixed, 64 << 10).categories("net*,-net.verbose").unwrap())
        .unwrap();
    dbs.start(TraceConfig::new(BufferMode::Fixed, 64 << 10).categories(" db* ").unwrap()).unwrap();
    everything.start(TraceConfig::new(BufferMode::Fixed, 64 << 10).categories("-nothing").unwrap()).unwrap();
    for log in [&nets, &dbs, &everything] {
        record_categories(log, &m);
    }
    assert_eq!(*m.lock().unwrap(), 4, "the lock guard works whether or not it records");
    let cats = |log: &TraceLog| {
        let t = stop_and_take(log);
        assert_eq!(t.stats().dropped.total(), 0, "filtered events are not drops");
        assert_eq!(t.stats().recorded, events(&t).len() as u64);
        events(&t).iter().map(|e| e.callsite.name.to_owned()).collect::<BTreeSet<_>>()
    };
    let set = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(cats(&nets), set(&["net", "net.io", "network", "nettle"]));
    assert_eq!(cats(&dbs), set(&["db", "db.pool"]));
    assert_eq!(
        cats(&everything),
        set(&[
            "net",
            "net.io",
            "net.verbose",
            "network",
            "db",
            "db.pool",
            "nettle",
            "lock.wait",
            "lock.held"
        ])
    );
}

#[test]
fn a_new_trace_applies_its_own_category_filter_to_already_registered_callsites() {
    let log = new_log(TraceLogConfig::default());
    let m = Mutex::new(0);
    log.start(TraceConfig::new(BufferMode::Fixed, 64 << 10).categories("db").unwrap()).unwrap();
    record_categories(&log, &m);
    let first = stop_and_take(&log);
    log.start(TraceConfig::new(BufferMode::Fixed, 64 << 10).categories("net.verbose").unwrap()).unwrap();
    record_categories(&log, &m);
    let second = stop_and_take(&log);
    let names = |t| events(t).iter().map(|e| e.callsite.name).collect::<Vec<_>>();
    assert_eq!(names(&first), ["db"]);
    assert_eq!(names(&second), ["net.verbose", "lock.wait", "lock.held"]);
}

#[test]
fn more_than_32_logs_cannot_exist_at_once() {
    assert_eq!(MAX_LOGS, 32);
    let mut logs = Vec::new();
    let mut failure = None;
    for _ in 0..40 {
        match TraceLog::new(TraceLogConfig::default()) {
            Ok(log) => logs.push(log),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let created = logs.len();
    drop(logs); // give the slots back at once: other tests are waiting for them
    let err = failure.expect("40 logs were created although at most 31 independent ones may exist");
    assert_eq!(err.kind(), &ErrorKind::TooManyInstances { max: 32 });
    assert!(created < MAX_LOGS, "{created} independent logs existed beside the global one");
    // The slots came back.
    let log = new_log(TraceLogConfig::default());
    log.start(TraceConfig::new(BufferMode::Fixed, 4096)).unwrap();
    trace_instant!(log: &log, "cfg", "after_the_limit");
    assert_eq!(stop_and_take(&log).stats().recorded, 1);
}

/// The only test of this binary that touches the global log.
#[test]
fn the_global_log_is_configured_once_and_records_through_the_plain_macros() {
    let global = TraceLog::global();
    global
        .configure(TraceLogConfig::new().clock(ClockKind::Monotonic).thread_policy(ThreadPolicy::Pool))
        .unwrap();
    let err = global.configure(TraceLogConfig::default()).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::AlreadyConfigured(_)), "{err}");
    assert_eq!(global.clock_kind(), ClockKind::Monotonic);
    trace_instant!("global", "before_start");
    global.start(TraceConfig::new(BufferMode::Fixed, 64 << 10)).unwrap();
    let err = global.start(TraceConfig::new(BufferMode::Fixed, 64 << 10)).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::AlreadyRunning);
    phosphor::register_thread();
    let start = phosphor::now();
    trace_instant!("global", "hello", "n" => 1u64);
    {
        trace_scope!("global", "scope");
    }
    trace_counter!("global", "count", 2i64);
    trace_complete!("global", "done", start, Duration::from_micros(10));
    global.stop();
    trace_instant!("global", "after_stop");
    let trace = global.take_trace().unwrap();
    assert_eq!(trace.clock().kind, ClockKind::Monotonic);
    let ev = events(&trace);
    assert_eq!(ev.iter().map(|e| e.callsite.name).collect::<Vec<_>>(), ["hello", "scope", "count", "done"]);
    assert_eq!(ev[0].arg("n"), Some(ArgValue::U64(1)));
    assert!(ev.iter().all(|e| e.tid == phosphor::current_thread_id()));
    assert_eq!(ev[3].ts, start);
    assert_eq!(ev[3].duration, Some(10_000), "monotonic ticks are nanoseconds");
    assert_eq!(trace.stats().dropped.total(), 0);
}

#[test]
fn a_scope_left_open_across_a_restart_obeys_the_new_traces_category_filter() {
    let log = new_log(TraceLogConfig::default());
    let open_scope = |log: &TraceLog, then: &mut dyn FnMut()| {
        trace_scope!(log: log, "net", "long_scope");
        then();
    };
    log.start(TraceConfig::new(BufferMode::Fixed, 64 << 10).categories("net").unwrap()).unwrap();
    open_scope(&log, &mut || {}); // registers the callsite while "net" is traced
    let first = stop_and_take(&log);
    assert_eq!(events(&first).len(), 1);
    log.start(TraceConfig::new(BufferMode::Fixed, 64 << 10).categories("net").unwrap()).unwrap();
    open_scope(&log, &mut || {
        // The scope is open: restart with a filter that excludes "net".
        log.stop();
        log.start(TraceConfig::new(BufferMode::Fixed, 64 << 10).categories("db").unwrap()).unwrap();
        trace_instant!(log: &log, "net", "net_instant_inside");
    });
    let second = stop_and_take(&log);
    let got: Vec<(&str, &str)> =
        events(&second).iter().map(|e| (e.callsite.category, e.callsite.name)).collect();
    assert!(got.is_empty(), "a trace of \"db\" recorded {got:?}");
}

#[test]
fn arguments_of_a_callsite_whose_category_is_not_traced_are_never_evaluated() {
    let log = new_log(TraceLogConfig::default());
    log.start(TraceConfig::new(BufferMode::Fixed, 64 << 10).categories("on").unwrap()).unwrap();
    let mut evaluated = 0;
    for _ in 0..3 {
        trace_instant!(log: &log, "off", "never", "v" => {
            evaluated += 1;
            1u64
        });
    }
    let trace = stop_and_take(&log);
    assert_eq!(trace.stats().recorded, 0);
    assert_eq!(evaluated, 0, "the macros document that arguments are evaluated only when enabled");
}

//! The `log` bridge: deferred and formatted messages, levels and targets, filters, and no
//! allocation per record once a call has been seen. `log` has one logger per process, so the
//! tests share it and take turns.

use std::sync::{Mutex, OnceLock};

use phosphor::{ArgValue, BufferMode, Event, Level, Phase, Trace, TraceConfig, TraceLog, TraceLogConfig};

/// The system allocator, counting allocations per thread.
#[global_allocator]
static GLOBAL: phosphor_testalloc::Counting = phosphor_testalloc::Counting;

/// The log the process's logger records into, and the lock the tests take turns with.
fn shared() -> (&'static TraceLog, std::sync::MutexGuard<'static, ()>) {
    static LOG: OnceLock<&'static TraceLog> = OnceLock::new();
    static TURN: Mutex<()> = Mutex::new(());
    let log = *LOG.get_or_init(|| {
        let log: &'static TraceLog = Box::leak(Box::new(TraceLog::new(TraceLogConfig::default()).unwrap()));
        phosphor_log::init(log, log::LevelFilter::Debug).unwrap();
        log
    });
    (log, TURN.lock().unwrap_or_else(|e| e.into_inner()))
}

fn run(log: &TraceLog, categories: &str, level: Level, f: impl FnOnce()) -> Trace {
    let config =
        TraceConfig::new(BufferMode::Fixed, 8 << 20).categories(categories).unwrap().log_level(level);
    log.start(config).unwrap();
    f();
    log.stop();
    let trace = log.take_trace().unwrap();
    assert_eq!(trace.stats().dropped.total(), 0);
    trace
}

#[test]
fn a_record_is_a_log_of_its_level_and_target_deferred_when_it_can_be() {
    let (log, _turn) = shared();
    let trace = run(log, "*", Level::Trace, || {
        log::info!(target: "app", "server started on {{port}}");
        log::warn!(target: "app::net", "{} retries left", std::hint::black_box(3));
        log::error!("default target");
    });
    let evs: Vec<Event<'_>> = trace.events().map(Result::unwrap).collect();
    assert_eq!(evs.len(), 3);
    let started = &evs[0];
    assert_eq!(
        (started.phase(), started.callsite.level, started.callsite.category),
        (Phase::Log, Some(Level::Info), "app")
    );
    assert_eq!(started.params.len(), 0, "a message without arguments is the format string itself");
    assert_eq!(started.message(), "server started on {port}");
    let retries = &evs[1];
    assert_eq!((retries.callsite.name, retries.callsite.level), ("{}", Some(Level::Warn)));
    assert_eq!(retries.params.iter().collect::<Vec<_>>(), [ArgValue::Str("3 retries left")]);
    assert_eq!(retries.message(), "3 retries left");
    assert_eq!(evs[2].callsite.category, module_path!());
    assert!(evs[1].callsite.file.ends_with("it.rs") && evs[1].callsite.line > 0);
}

#[test]
fn phosphor_and_log_levels_and_categories_filter() {
    let (log, _turn) = shared();
    let trace = run(log, "keep*", Level::Info, || {
        log::info!(target: "keep", "kept");
        log::debug!(target: "keep", "below phosphor's level");
        log::trace!(target: "keep", "below log's max level");
        log::error!(target: "drop", "not a phosphor category");
    });
    let got: Vec<String> = trace.events().map(|e| e.unwrap().message()).collect();
    assert_eq!(got, ["kept"]);
}

#[test]
fn a_record_made_at_run_time_takes_the_slow_path_and_is_kept() {
    let (log, _turn) = shared();
    let trace = run(log, "*", Level::Trace, || {
        let file = String::from("generated.rs");
        log::logger().log(
            &log::Record::builder()
                .args(format_args!("built {}", 1))
                .level(log::Level::Info)
                .target("runtime")
                .file(Some(&file))
                .line(Some(9))
                .build(),
        );
    });
    let evs: Vec<Event<'_>> = trace.events().map(Result::unwrap).collect();
    assert_eq!(evs.len(), 1);
    assert_eq!(
        (evs[0].message(), evs[0].callsite.file, evs[0].callsite.line),
        ("built 1".into(), "generated.rs", 9)
    );
}

#[test]
fn a_seen_call_does_not_allocate() {
    let (log, _turn) = shared();
    let trace = run(log, "*", Level::Trace, || {
        let emit = |i: u32| {
            log::info!(target: "alloc", "fixed message");
            log::info!(target: "alloc", "formatted {i} {}", i * 2);
        };
        emit(0);
        let before = phosphor_testalloc::allocations();
        for i in 1..=1000 {
            emit(i);
        }
        assert_eq!(phosphor_testalloc::allocations() - before, 0, "allocations in 2000 records");
    });
    assert_eq!(trace.events().count(), 2002);
}

//! The `tracing` layer: what events and spans become, filters, truncation, allocation, and async
//! spans on a multi-threaded tokio runtime. One binary, with a per-thread counting allocator.

mod init;
mod scalars;
mod subscriber;

use std::collections::BTreeMap;
use std::sync::Arc;

use phosphor::{ArgValue, BufferMode, Event, Level, Phase, Trace, TraceConfig, TraceLog, TraceLogConfig};
use phosphor_tracing::PhosphorLayer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::prelude::*;

/// The system allocator, counting allocations per thread.
#[global_allocator]
static GLOBAL: phosphor_testalloc::Counting = phosphor_testalloc::Counting;

use phosphor_testalloc::allocations;

/// A running trace of `categories` in a log of its own, leaked so that the layer can hold it.
fn started(categories: &str, level: Level) -> &'static TraceLog {
    let log: Arc<TraceLog> = TraceLog::new(TraceLogConfig::default()).unwrap();
    let config =
        TraceConfig::new(BufferMode::Fixed, 16 << 20).categories(categories).unwrap().log_level(level);
    log.start(config).unwrap();
    Box::leak(Box::new(log))
}

fn stop(log: &TraceLog) -> Trace {
    log.stop();
    let trace = log.take_trace().unwrap();
    assert_eq!(trace.stats().dropped.total(), 0);
    trace
}

fn events(trace: &Trace) -> Vec<Event<'_>> {
    trace.events().map(Result::unwrap).collect()
}

#[test]
fn an_event_is_a_log_of_its_level_and_target_with_typed_parameters() {
    let log = started("*", Level::Trace);
    let subscriber = tracing_subscriber::registry().with(PhosphorLayer::new(log));
    tracing::subscriber::with_default(subscriber, || {
        tracing::warn!(target: "app::auth", user = "ada", n = 3u64, delta = -2i64, ok = true, ratio = 0.5, "logged in after {} tries", 7);
        tracing::info!(target: "app", "plain");
        tracing::debug!(target: "app", list = ?vec![1, 2], "debug value");
    });
    let trace = stop(log);
    let evs = events(&trace);
    assert_eq!(evs.len(), 3);
    let e = &evs[0];
    assert_eq!(
        (e.phase(), e.callsite.level, e.callsite.category),
        (Phase::Log, Some(Level::Warn), "app::auth")
    );
    assert_eq!(e.callsite.name, "{} user={} n={} delta={} ok={} ratio={}");
    let params: Vec<ArgValue<'_>> = e.params.iter().collect();
    assert_eq!(
        params,
        [
            ArgValue::Str("logged in after 7 tries"),
            ArgValue::Str("ada"),
            ArgValue::U64(3),
            ArgValue::I64(-2),
            ArgValue::Bool(true),
            ArgValue::F64(0.5),
        ]
    );
    assert!(!e.truncated);
    assert_eq!(e.message(), "logged in after 7 tries user=ada n=3 delta=-2 ok=true ratio=0.5");
    assert_eq!(evs[1].message(), "plain");
    assert_eq!((evs[1].callsite.level, evs[1].callsite.category), (Some(Level::Info), "app"));
    assert_eq!(evs[2].message(), "debug value list=[1, 2]");
    assert!(evs[0].callsite.file.ends_with("main.rs") && evs[0].callsite.line > 0);
}

#[test]
fn more_fields_than_parameters_are_cut_and_flagged() {
    let log = started("*", Level::Trace);
    let subscriber = tracing_subscriber::registry().with(PhosphorLayer::new(log));
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!(
            target: "wide", f0 = 0, f1 = 1, f2 = 2, f3 = 3, f4 = 4, f5 = 5, f6 = 6, f7 = 7, f8 = 8, f9 = 9,
            f10 = 10, f11 = 11, f12 = 12, f13 = 13, f14 = 14, f15 = 15, f16 = 16, f17 = 17, "wide"
        );
        let span = tracing::info_span!(target: "wide", "three", a = 1, b = "two", c = 3.0);
        drop(span);
    });
    let trace = stop(log);
    let evs = events(&trace);
    let wide = evs.iter().find(|e| e.phase() == Phase::Log).unwrap();
    assert_eq!(wide.params.len(), 16, "the message and 15 fields");
    assert!(wide.truncated);
    assert!(wide.callsite.name.starts_with("{} f0={} f1={}") && wide.callsite.name.ends_with("f14={}"));
    let span = evs.iter().find(|e| e.phase() == Phase::AsyncBegin).unwrap();
    assert_eq!((span.arg("a"), span.arg("b")), (Some(ArgValue::I64(1)), Some(ArgValue::Str("two"))));
    assert!(span.truncated, "the third field is not kept");
}

#[test]
fn a_span_is_an_async_slice_for_its_life_and_a_slice_per_enter() {
    let log = started("*", Level::Trace);
    let subscriber = tracing_subscriber::registry().with(PhosphorLayer::new(log));
    let tid = phosphor::current_thread_id();
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!(target: "db", "query", table = "users", rows = 10u64);
        for _ in 0..2 {
            let _entered = span.enter();
            tracing::info!(target: "db", "inside");
        }
    });
    let trace = stop(log);
    let evs = events(&trace);
    let kinds: Vec<(Phase, &str)> = evs.iter().map(|e| (e.phase(), e.callsite.name)).collect();
    assert_eq!(
        kinds,
        [
            (Phase::AsyncBegin, "query"),
            (Phase::Begin, "query"),
            (Phase::Log, "{}"),
            (Phase::End, "query"),
            (Phase::Begin, "query"),
            (Phase::Log, "{}"),
            (Phase::End, "query"),
            (Phase::AsyncEnd, "query"),
        ]
    );
    let begin = &evs[0];
    assert_eq!(
        (begin.arg("table"), begin.arg("rows")),
        (Some(ArgValue::Str("users")), Some(ArgValue::U64(10)))
    );
    assert!(!begin.truncated);
    assert_eq!(begin.async_id, evs[7].async_id);
    assert!(evs.iter().all(|e| e.tid == tid && e.callsite.category == "db"));
}

#[test]
fn phosphor_and_tracing_filters_both_apply() {
    // Phosphor: categories `app*` at level info. tracing: `app::noisy` off, the rest at debug.
    let log = started("app*", Level::Info);
    let targets = Targets::new().with_target("app::noisy", LevelFilter::OFF).with_default(LevelFilter::DEBUG);
    let layer = PhosphorLayer::new(log).with_filter(targets);
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
        tracing::info!(target: "app::core", "kept");
        tracing::debug!(target: "app::core", "below phosphor's level");
        tracing::trace!(target: "app::core", "below tracing's level");
        tracing::error!(target: "app::noisy", "off in tracing");
        tracing::error!(target: "other", "not a phosphor category");
        let _s = tracing::info_span!(target: "other", "span of another category").entered();
    });
    let trace = stop(log);
    let evs = events(&trace);
    let got: Vec<String> = evs.iter().map(Event::message).collect();
    assert_eq!(got, ["kept"]);
}

#[test]
fn an_event_of_a_seen_callsite_does_not_allocate() {
    let log = started("*", Level::Trace);
    let subscriber = tracing_subscriber::registry().with(PhosphorLayer::new(log));
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!(target: "alloc", "work");
        let emit = |i: u64| {
            let _e = span.enter();
            tracing::info!(target: "alloc", i, ratio = i as f64 / 2.0, name = "fixed", "event {}", i);
        };
        emit(0); // the callsites are seen, the buffers grow
        let before = allocations();
        for i in 1..=1000 {
            emit(i);
        }
        assert_eq!(allocations() - before, 0, "allocations in 1000 events");
    });
    let trace = stop(log);
    assert_eq!(events(&trace).iter().filter(|e| e.phase() == Phase::Log).count(), 1001);
}

#[test]
fn instrumented_futures_on_a_multi_threaded_runtime_keep_one_slice_per_span() {
    use tracing::Instrument;
    let log = started("rt", Level::Trace);
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(PhosphorLayer::new(log)));
    let rt = {
        let dispatch = dispatch.clone();
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .on_thread_start(move || {
                // Each worker records through the same subscriber.
                std::mem::forget(tracing::dispatcher::set_default(&dispatch));
            })
            .build()
            .unwrap()
    };
    const TASKS: u64 = 16;
    tracing::dispatcher::with_default(&dispatch, || {
        rt.block_on(async {
            let tasks: Vec<_> = (0..TASKS)
                .map(|i| {
                    tokio::spawn(
                        async move {
                            for _ in 0..3 {
                                tokio::task::yield_now().await;
                            }
                        }
                        .instrument(tracing::info_span!(target: "rt", "task", i)),
                    )
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
        })
    });
    drop(rt);
    let trace = stop(log);
    let evs = events(&trace);
    let mut per_span: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    let (mut enters, mut exits) = (0, 0);
    for e in &evs {
        match e.phase() {
            Phase::AsyncBegin => per_span.entry(e.async_id.unwrap()).or_default().0 += 1,
            Phase::AsyncEnd => per_span.entry(e.async_id.unwrap()).or_default().1 += 1,
            Phase::Begin => enters += 1,
            Phase::End => exits += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    // Span ids are reused once a span closes, so count lives, not ids.
    let lives: usize = per_span.values().map(|(b, _)| b).sum();
    let ends: usize = per_span.values().map(|(_, e)| e).sum();
    assert_eq!((lives, ends), (TASKS as usize, TASKS as usize), "one async slice per span");
    assert_eq!(enters, exits);
    assert!(enters >= 4 * TASKS as usize, "a slice per poll: {enters}");
}

#[test]
fn without_lifetimes_a_span_is_only_its_enter_and_exit_slices() {
    let log = started("*", Level::Trace);
    let layer = PhosphorLayer::new(log).with_span_lifetimes(false);
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
        let span = tracing::info_span!(target: "db", "query", table = "users");
        let _entered = span.enter();
    });
    let trace = stop(log);
    let kinds: Vec<Phase> = events(&trace).iter().map(|e| e.phase()).collect();
    assert_eq!(kinds, [Phase::Begin, Phase::End]);
}

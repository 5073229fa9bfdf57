//! `PhosphorSubscriber`, Phosphor's own `tracing` subscriber (no `Registry`): what it records,
//! its directives, span lifetimes when asked, the current span, and no allocation per event or
//! span of a seen callsite.

use std::collections::BTreeMap;

use phosphor::{Level, Phase};
use phosphor_tracing::{Directives, PhosphorSubscriber};

use super::{allocations, events, started, stop};

#[test]
fn events_and_spans_are_recorded_as_by_the_layer() {
    let log = started("*", Level::Trace);
    tracing::subscriber::with_default(PhosphorSubscriber::new(log), || {
        let span = tracing::info_span!(target: "db", "query", table = "users");
        for i in 0..2u64 {
            let _entered = span.enter();
            tracing::info!(target: "db", i, "inside");
        }
    });
    let trace = stop(log);
    let evs = events(&trace);
    let kinds: Vec<(Phase, &str)> = evs.iter().map(|e| (e.phase(), e.callsite.name)).collect();
    // Lifetimes off by default: a span is its enter/exit slices.
    assert_eq!(
        kinds,
        [
            (Phase::Begin, "query"),
            (Phase::Log, "{} i={}"),
            (Phase::End, "query"),
            (Phase::Begin, "query"),
            (Phase::Log, "{} i={}"),
            (Phase::End, "query"),
        ]
    );
    assert_eq!(evs[4].message(), "inside i=1");
}

#[test]
fn directives_decide_per_callsite() {
    let log = started("*", Level::Trace);
    let directives = Directives::parse("warn,app=debug,app::noisy=off").unwrap();
    tracing::subscriber::with_default(PhosphorSubscriber::new(log).with_directives(directives), || {
        tracing::debug!(target: "app::core", "kept: debug of app");
        tracing::trace!(target: "app::core", "below app's level");
        tracing::error!(target: "app::noisy", "off");
        tracing::warn!(target: "lib", "kept: warn of the rest");
        tracing::info!(target: "lib", "below the rest's level");
        let _s = tracing::debug_span!(target: "lib", "a span below the level").entered();
    });
    let trace = stop(log);
    let got: Vec<String> = events(&trace).iter().map(phosphor::Event::message).collect();
    assert_eq!(got, ["kept: debug of app", "kept: warn of the rest"]);
}

#[test]
fn with_lifetimes_a_span_is_an_async_slice_closed_by_its_last_handle() {
    let log = started("*", Level::Trace);
    let subscriber = PhosphorSubscriber::new(log).with_span_lifetimes(true);
    tracing::subscriber::with_default(subscriber, || {
        for n in 0..3u64 {
            let span = tracing::info_span!(target: "life", "request", n);
            let copy = span.clone();
            drop(span.enter());
            drop(span);
            // Still open through its copy.
            tracing::info!(target: "life", "between");
            drop(copy.enter());
        }
    });
    let trace = stop(log);
    let evs = events(&trace);
    let mut lives: BTreeMap<u64, Vec<Phase>> = BTreeMap::new();
    for e in evs.iter().filter(|e| matches!(e.phase(), Phase::AsyncBegin | Phase::AsyncEnd)) {
        lives.entry(e.async_id.unwrap()).or_default().push(e.phase());
    }
    // Three lives; an id may be used again once its span is closed (its box freed), as a
    // `Registry` reuses its slots, so each id's phases alternate, begin first.
    assert_eq!(lives.values().map(Vec::len).sum::<usize>(), 6, "{lives:?}");
    for phases in lives.values() {
        assert!(phases.chunks(2).all(|p| p == [Phase::AsyncBegin, Phase::AsyncEnd]), "{lives:?}");
    }
    // Each span's end comes after the event recorded while only its copy held it.
    let order: Vec<Phase> =
        evs.iter().map(|e| e.phase()).filter(|p| *p != Phase::Begin && *p != Phase::End).collect();
    assert_eq!(&order[..3], &[Phase::AsyncBegin, Phase::Log, Phase::AsyncEnd]);
}

#[test]
fn the_current_span_is_the_innermost_entered() {
    let log = started("*", Level::Trace);
    tracing::subscriber::with_default(PhosphorSubscriber::new(log), || {
        assert!(tracing::Span::current().is_none());
        let outer = tracing::info_span!(target: "cur", "outer");
        let _o = outer.enter();
        {
            let inner = tracing::info_span!(target: "cur", "inner");
            let _i = inner.enter();
            assert_eq!(tracing::Span::current().metadata().map(|m| m.name()), Some("inner"));
        }
        assert_eq!(tracing::Span::current().metadata().map(|m| m.name()), Some("outer"));
    });
    stop(log);
}

#[test]
fn events_and_spans_of_seen_callsites_do_not_allocate() {
    let log = started("*", Level::Trace);
    tracing::subscriber::with_default(PhosphorSubscriber::new(log), || {
        let emit = |i: u64| {
            let _s = tracing::info_span!(target: "alloc", "work").entered();
            tracing::info!(target: "alloc", i, ratio = i as f64 / 2.0, name = "fixed", "event {}", i);
        };
        emit(0); // the callsites are seen, the buffers grow
        let before = allocations();
        for i in 1..=1000 {
            emit(i);
        }
        assert_eq!(allocations() - before, 0, "allocations in 1000 spans and events");
    });
    let trace = stop(log);
    assert_eq!(events(&trace).iter().filter(|e| e.phase() == Phase::Log).count(), 1001);
}

#[test]
fn spans_exited_out_of_order_are_each_ended_and_the_current_span_follows() {
    for lifetimes in [false, true] {
        let log = started("*", Level::Trace);
        let subscriber = PhosphorSubscriber::new(log).with_span_lifetimes(lifetimes);
        tracing::subscriber::with_default(subscriber, || {
            let a = tracing::info_span!(target: "ooo", "a");
            let b = tracing::info_span!(target: "ooo", "b");
            let ea = a.enter();
            let eb = b.enter();
            // `a` leaves first: `b` stays the current span, then none is.
            drop(ea);
            assert_eq!(tracing::Span::current().metadata().map(|m| m.name()), Some("b"));
            drop(eb);
            assert!(tracing::Span::current().is_none());
        });
        let trace = stop(log);
        let got: Vec<(Phase, &str)> = events(&trace)
            .iter()
            .filter(|e| matches!(e.phase(), Phase::Begin | Phase::End))
            .map(|e| (e.phase(), e.callsite.name))
            .collect();
        assert_eq!(
            got,
            [(Phase::Begin, "a"), (Phase::Begin, "b"), (Phase::End, "a"), (Phase::End, "b")],
            "lifetimes: {lifetimes}"
        );
    }
}

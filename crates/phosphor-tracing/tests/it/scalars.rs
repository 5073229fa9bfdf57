//! Events whose fields are all scalars are written straight into the record's parameters (no
//! slots, no values array): the same parameters, types and order as the general path, which a
//! string or a `Debug` value still takes. A message is formatted, and recorded by reference when
//! it is the text its callsite had first.

use phosphor::{ArgValue, Level, Phase};
use phosphor_tracing::{PhosphorLayer, PhosphorSubscriber};
use tracing_subscriber::prelude::*;

use super::{events, started, stop};

/// Runs `run` with Phosphor's `Layer` over a `Registry` (`layer`) or its own `Subscriber`, on `log`.
fn run_under(layer: bool, log: &'static phosphor::TraceLog, run: impl FnOnce()) {
    if layer {
        tracing::subscriber::with_default(tracing_subscriber::registry().with(PhosphorLayer::new(log)), run);
    } else {
        tracing::subscriber::with_default(PhosphorSubscriber::new(log), run);
    }
}

fn params<'a>(e: &phosphor::Event<'a>) -> Vec<ArgValue<'a>> {
    e.params.iter().collect()
}

#[test]
fn scalar_fields_keep_their_types_and_their_order_in_either_subscriber() {
    for layer in [true, false] {
        let log = started("*", Level::Trace);
        let run = || {
            for i in 0..3u64 {
                tracing::info!(target: "num", b = i, a = -(i as i64), ok = i % 2 == 0, r = i as f64 / 2.0);
            }
            tracing::info!(target: "num", one = 1u64, two = 2i64, three = 3u64, four = 4i64, five = false);
        };
        run_under(layer, log, run);
        let trace = stop(log);
        let evs = events(&trace);
        assert_eq!(evs.len(), 4, "layer: {layer}");
        for (i, e) in evs[..3].iter().enumerate() {
            assert_eq!((e.phase(), e.callsite.name), (Phase::Log, "b={} a={} ok={} r={}"));
            assert_eq!(
                params(e),
                [
                    ArgValue::U64(i as u64),
                    ArgValue::I64(-(i as i64)),
                    ArgValue::Bool(i % 2 == 0),
                    ArgValue::F64(i as f64 / 2.0)
                ]
            );
            assert!(!e.truncated);
        }
        assert_eq!(
            params(&evs[3]),
            [ArgValue::U64(1), ArgValue::I64(2), ArgValue::U64(3), ArgValue::I64(4), ArgValue::Bool(false)]
        );
        assert_eq!(evs[1].message(), "b=1 a=-1 ok=false r=0.5");
    }
}

#[test]
fn a_string_or_debug_field_among_scalars_is_recorded_by_the_general_path() {
    let log = started("*", Level::Trace);
    tracing::subscriber::with_default(PhosphorSubscriber::new(log), || {
        tracing::info!(target: "mix", n = 1u64, s = "text", big = 1u128 << 100);
        tracing::info!(target: "mix", n = 2u64, d = ?Some(3));
        // Six scalars: more than the in-place form holds, still typed.
        tracing::info!(target: "mix", f0 = 0u64, f1 = 1u64, f2 = 2u64, f3 = 3u64, f4 = 4u64, f5 = 5u64);
    });
    let trace = stop(log);
    let evs = events(&trace);
    assert_eq!(
        params(&evs[0]),
        [ArgValue::U64(1), ArgValue::Str("text"), ArgValue::Str("1267650600228229401496703205376")]
    );
    assert_eq!(params(&evs[1]), [ArgValue::U64(2), ArgValue::Str("Some(3)")]);
    assert_eq!(params(&evs[2]), (0..6).map(ArgValue::U64).collect::<Vec<_>>());
}

#[test]
fn a_field_without_a_value_is_an_empty_parameter() {
    let log = started("*", Level::Trace);
    tracing::subscriber::with_default(PhosphorSubscriber::new(log), || {
        tracing::info!(target: "gap", a = 1u64, b = tracing::field::Empty, c = 3u64);
    });
    let trace = stop(log);
    let evs = events(&trace);
    assert_eq!(evs[0].message(), "a=1 b= c=3");
    assert_eq!(params(&evs[0])[0], ArgValue::U64(1));
    assert_eq!(params(&evs[0])[2], ArgValue::U64(3));
}

#[test]
fn a_message_is_each_events_own_whether_it_repeats_or_changes() {
    for layer in [true, false] {
        let log = started("*", Level::Trace);
        let run = || {
            for i in 0..4u64 {
                // The same message every time: kept once, then recorded by reference.
                tracing::info!(target: "msg", a = i, b = 7u64, "ev");
                // A message that changes from the second event on: each event keeps its own.
                tracing::info!(target: "msg", a = i, "pass {}", i.min(1) + i / 3);
                // A message too long to keep (the general path cuts it), the same every time.
                tracing::info!(target: "msg", n = i, "{}", "x".repeat(300));
                // The kept text, then (a callsite's first other message sends it to the general
                // path) a text it starts with, or one that starts with it.
                let [x, y] = if i == 0 { ["a", "b"] } else { ["a", ""] };
                tracing::info!(target: "msg", n = i, "{x}{y}");
                let [x, y] = if i == 0 { ["a", "b"] } else { ["ab", "c"] };
                tracing::info!(target: "msg", n = i, "{x}{y}");
            }
        };
        run_under(layer, log, run);
        let trace = stop(log);
        let evs = events(&trace);
        assert_eq!(evs.len(), 20, "layer: {layer}");
        let long = "x".repeat(300);
        for i in 0..4u64 {
            let at = 5 * i as usize;
            let [same, changing, long_one, shorter, longer] = std::array::from_fn(|k| &evs[at + k]);
            assert_eq!(
                params(same),
                [ArgValue::Str("ev"), ArgValue::U64(i), ArgValue::U64(7)],
                "layer: {layer}"
            );
            assert_eq!(same.message(), format!("ev a={i} b=7"));
            let pass = i.min(1) + i / 3;
            assert_eq!(params(changing), [ArgValue::Str(&format!("pass {pass}")), ArgValue::U64(i)]);
            let cut = &long[..phosphor::format::MAX_DYN_STR_BYTES];
            assert_eq!(params(long_one), [ArgValue::Str(cut), ArgValue::U64(i)]);
            assert!(!same.truncated && !changing.truncated && long_one.truncated);
            let [short_text, long_text] = if i == 0 { ["ab", "ab"] } else { ["a", "abc"] };
            assert_eq!(params(shorter), [ArgValue::Str(short_text), ArgValue::U64(i)], "layer: {layer}");
            assert_eq!(params(longer), [ArgValue::Str(long_text), ArgValue::U64(i)], "layer: {layer}");
        }
    }
}

/// An event of a callsite of its own, `10 t + u` of 300: of target `many<t><u>`, with `i = 10 t + u`.
macro_rules! callsite {
    ($t:literal $u:literal) => {
        (|| tracing::info!(target: concat!("many", stringify!($t), stringify!($u)), i = ($t * 10 + $u) as u64))
            as fn()
    };
}

macro_rules! row {
    ($t:literal) => {
        [
            callsite!($t 0), callsite!($t 1), callsite!($t 2), callsite!($t 3), callsite!($t 4),
            callsite!($t 5), callsite!($t 6), callsite!($t 7), callsite!($t 8), callsite!($t 9),
        ]
    };
}

#[test]
fn callsites_that_share_a_slot_of_the_front_table_each_record_as_themselves() {
    // 300 callsites in turn, three rounds: more than the event table's 256 slots, so some share
    // a slot and each round finds slots taken by another callsite.
    let callsites: Vec<fn()> = [
        row!(0),
        row!(1),
        row!(2),
        row!(3),
        row!(4),
        row!(5),
        row!(6),
        row!(7),
        row!(8),
        row!(9),
        row!(10),
        row!(11),
        row!(12),
        row!(13),
        row!(14),
        row!(15),
        row!(16),
        row!(17),
        row!(18),
        row!(19),
        row!(20),
        row!(21),
        row!(22),
        row!(23),
        row!(24),
        row!(25),
        row!(26),
        row!(27),
        row!(28),
        row!(29),
    ]
    .concat();
    for layer in [true, false] {
        let log = started("*", Level::Trace);
        let run = || {
            for _round in 0..3 {
                callsites.iter().for_each(|emit| emit());
            }
        };
        run_under(layer, log, run);
        let trace = stop(log);
        let evs = events(&trace);
        assert_eq!(evs.len(), 3 * callsites.len(), "layer: {layer}");
        for (k, e) in evs.iter().enumerate() {
            let j = (k % callsites.len()) as u64;
            assert_eq!(e.callsite.category, format!("many{}{}", j / 10, j % 10), "layer: {layer}");
            assert_eq!(params(e), [ArgValue::U64(j)], "layer: {layer}");
        }
    }
}

//! Points made at run time for bridges (`Point::custom`), their recording with run-time values,
//! and the lock-free `SiteCache`.

use std::sync::Arc;

use phosphor::bridge::{PointSpec, SiteCache, Value};
use phosphor::points::Point;
use phosphor::{ArgValue, BufferMode, Level, Phase, TraceConfig};

use crate::support::{events, started, stop_and_take};

fn config() -> TraceConfig {
    TraceConfig::new(BufferMode::Fixed, 8 << 20).categories("bridge*").unwrap()
}

#[test]
fn a_custom_point_is_made_once_per_spec_and_checked() {
    let spec = PointSpec {
        arg_names: ["a", "b"],
        file: "x.rs",
        line: 3,
        ..PointSpec::new("bridge", "p", Phase::Instant)
    };
    let p = Point::custom(&spec).unwrap();
    assert_eq!(Point::custom(&spec).unwrap().id(), p.id(), "the same spec, the same point");
    let other = Point::custom(&PointSpec { arg_names: ["a", "c"], ..spec }).unwrap();
    assert_ne!(other.id(), p.id(), "other argument names, another point");
    let e = Point::custom(&PointSpec::new("bridge", "log", Phase::Log)).unwrap_err();
    assert!(e.to_string().contains("log without a level"), "{e}");
    let e = Point::custom(&PointSpec::new("bridge", "held", Phase::LockHeld)).unwrap_err();
    assert!(e.to_string().contains("lock"), "{e}");
    assert!(Point::custom(&PointSpec::new("bridge", "depth", Phase::Data)).is_ok());
}

#[test]
fn custom_points_record_run_time_values_of_every_type() {
    let log = started(config());
    let spec = |name, phase| PointSpec { arg_names: ["x", "y"], ..PointSpec::new("bridge", name, phase) };
    let instant = Point::custom(&spec("i", Phase::Instant)).unwrap();
    let begin = Point::custom(&spec("a", Phase::AsyncBegin)).unwrap();
    let complete = Point::custom(&spec("c", Phase::Complete)).unwrap();
    let logp = Point::custom(&PointSpec {
        level: Some(Level::Warn),
        ..PointSpec::new("bridge", "{} {} {}", Phase::Log)
    })
    .unwrap();
    assert!(instant.enabled_in(&log));
    let text = String::from("copied");
    instant.record_in(&log, 0, 0, [Some(Value::I64(-4)), Some(Value::Str(&text))], false);
    instant.record_in(&log, 0, 0, [Some(Value::F64(0.5)), None], true);
    begin.record_in(&log, 77, 0, [Some(Value::Static("static")), Some(Value::Bool(true))], false);
    let start = log.now();
    complete.record_in(&log, 0, start, [Some(Value::U64(9)), None], false);
    logp.log_in(&log, &[Value::U64(1), Value::Str("two"), Value::F64(3.0)], false);
    let many = [Value::U64(5); 20];
    logp.log_in(&log, &many, false);
    // A log point's `record_in`, and an instant's `log_in`, record nothing.
    logp.record_in(&log, 0, 0, [None, None], false);
    instant.log_in(&log, &many, false);
    let trace = stop_and_take(&log);
    let evs = events(&trace);
    assert_eq!(evs.len(), 6);
    assert_eq!((evs[0].arg("x"), evs[0].arg("y")), (Some(ArgValue::I64(-4)), Some(ArgValue::Str("copied"))));
    assert!(!evs[0].truncated);
    assert_eq!((evs[1].arg("x"), evs[1].arg("y"), evs[1].truncated), (Some(ArgValue::F64(0.5)), None, true));
    assert_eq!((evs[2].phase(), evs[2].async_id), (Phase::AsyncBegin, Some(77)));
    assert_eq!(
        (evs[2].arg("x"), evs[2].arg("y")),
        (Some(ArgValue::Str("static")), Some(ArgValue::Bool(true)))
    );
    assert_eq!((evs[3].phase(), evs[3].arg("x")), (Phase::Complete, Some(ArgValue::U64(9))));
    assert!(evs[3].duration.is_some());
    let params: Vec<ArgValue<'_>> = evs[4].params.iter().collect();
    assert_eq!(params, [ArgValue::U64(1), ArgValue::Str("two"), ArgValue::F64(3.0)]);
    assert_eq!(evs[4].callsite.level, Some(Level::Warn));
    assert_eq!((evs[5].params.len(), evs[5].truncated), (16, true), "16 kept of 20, flagged");
}

#[test]
fn a_full_site_cache_says_so_and_keeps_what_it_has() {
    let cache: SiteCache<u32> = SiteCache::new(1);
    for k in 1..=64usize {
        assert_eq!(cache.insert(k * 8, || k as u32), Some(&(k as u32)));
    }
    assert_eq!(cache.insert(65 * 8, || 65), None, "64 slots, all taken");
    assert_eq!(cache.get(65 * 8), None);
    for k in 1..=64usize {
        assert_eq!(cache.get(k * 8), Some(&(k as u32)));
        assert_eq!(cache.insert(k * 8, || 0), Some(&(k as u32)), "an existing key keeps its value");
    }
}

#[test]
fn threads_inserting_the_same_keys_all_get_the_one_value_of_each() {
    const KEYS: usize = 2000;
    let cache: Arc<SiteCache<(usize, usize)>> = Arc::new(SiteCache::new(KEYS));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let cache = cache.clone();
            std::thread::spawn(move || {
                // Each thread walks the keys in another order (multipliers prime to KEYS).
                (0..KEYS)
                    .map(|i| (i * [1, 3, 7, 9][t]) % KEYS + 1)
                    .map(|k| {
                        let v = cache.insert(k * 16, || (k, t)).expect("room for every key");
                        assert_eq!(v.0, k);
                        (k, v as *const (usize, usize) as usize)
                    })
                    .collect::<std::collections::HashMap<_, _>>()
            })
        })
        .collect();
    let seen: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    for k in 1..=KEYS {
        let first = seen[0][&k];
        assert!(seen.iter().all(|s| s[&k] == first), "key {k} has one value");
        assert_eq!(cache.get(k * 16).map(|v| v as *const _ as usize), Some(first));
    }
}

//! Triggered dumps: a slow scope, a value past a threshold or a severe log makes the flight
//! recorder dump the events around it to `DIR/trigger-{n}.phos`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use phosphor::format::file::{Reader, Value};
use phosphor::trigger::{PostWindow, Trigger, TriggerStatus};
use phosphor::{
    trace_counter, trace_data, trace_instant, trace_log, trace_scope, BufferMode, ErrorKind, TraceConfig,
    TraceLog,
};

use crate::support::{new_log, stop_and_take};

fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("triggers").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn ring(dir: &Path) -> TraceConfig {
    TraceConfig::new(BufferMode::Ring, 1 << 20).trigger_dir(dir)
}

fn started(config: TraceConfig) -> Arc<TraceLog> {
    let log = new_log(phosphor::TraceLogConfig::default());
    log.start(config).expect("start");
    log
}

/// Waits (a generous deadline, never a fixed sleep) until the log's trigger status satisfies `ok`.
fn wait_for(log: &TraceLog, what: &str, ok: impl Fn(&TriggerStatus) -> bool) -> TriggerStatus {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = log.triggers();
        if ok(&s) {
            return s;
        }
        assert!(Instant::now() < deadline, "{what}: still {s:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// `(category, name, trigger arg, seq arg, duration)` of every event of a dump file.
type Row = (String, String, Option<u64>, Option<u64>, Option<u64>);

fn read_dump(path: &Path) -> Vec<Row> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = Reader::new(&bytes[..]).unwrap();
    let mut out = Vec::new();
    r.for_each_event(|e| {
        let u = |k: &str| match e.arg(k) {
            Some(Value::U64(v)) => Some(v),
            _ => None,
        };
        out.push((
            e.callsite.category.to_string(),
            e.callsite.name.to_string(),
            u("trigger"),
            u("i"),
            e.duration,
        ));
    })
    .unwrap_or_else(|e| panic!("{} reads to its end: {e}", path.display()));
    assert!(r.trailer().is_some(), "{} is a whole file", path.display());
    out
}

fn is_marker(r: &Row) -> bool {
    r.0 == "phosphor" && r.1 == "trigger"
}

#[test]
fn a_slow_scope_dumps_once_per_firing_until_the_rate_limit_and_the_rest_are_counted() {
    let dir = fresh_dir("rate");
    let config = ring(&dir)
        .trigger("trig.rate/slow>1ms".parse().unwrap())
        .post_window(PostWindow::Events(20))
        .dumps_per_minute(3);
    let log = started(config);
    let mut seq = 0u64;
    for round in 0..5u64 {
        for _ in 0..10 {
            trace_instant!(log: &log, "trig.rate", "before", "i" => seq);
            seq += 1;
        }
        {
            trace_scope!(log: &log, "trig.rate", "slow");
            std::thread::sleep(Duration::from_millis(3));
        }
        for _ in 0..30 {
            trace_instant!(log: &log, "trig.rate", "after", "i" => seq);
            seq += 1;
        }
        let dumps = (round as usize + 1).min(3);
        wait_for(&log, "the round's dump", |s| s.dumps.len() == dumps && !s.pending);
    }
    let s = log.triggers();
    assert_eq!((s.fired, s.merged, s.rate_limited, s.failed), (5, 0, 2, 0), "{s:?}");
    assert_eq!(s.armed.len(), 1);
    for (n, d) in s.dumps.iter().enumerate() {
        assert_eq!(d.path, dir.join(format!("trigger-{}.phos", n + 1)));
        assert_eq!(d.trigger, 1);
        let rows = read_dump(&d.path);
        assert_eq!(rows.len() as u64, d.events);
        // The ring holds the whole test, so dump n has the markers of firings 1 to n.
        let marker = rows.iter().rposition(is_marker).expect("the firing is marked");
        assert_eq!(rows.iter().filter(|r| is_marker(r)).count(), n + 1, "one marker per firing so far");
        assert_eq!(rows[marker].2, Some(1), "the marker names trigger 1");
        // The slow scope is there, closed just before its marker, with the events around it.
        assert_eq!(rows[marker - 1].1, "slow");
        assert!(rows[marker - 1].4.is_some());
        let since = rows[..marker].iter().rposition(is_marker).map_or(0, |m| m + 1);
        let before = rows[since..marker].iter().filter(|r| r.1 == "before").count();
        let after = rows[marker..].iter().filter(|r| r.1 == "after").count();
        assert!(before >= 10, "dump {n}: {before} events before");
        assert!(after >= 20, "dump {n}: {after} events after: the window is 20 events");
    }
    let trace = stop_and_take(&log);
    let markers = trace.events().filter(|e| e.as_ref().unwrap().callsite.name == "trigger").count();
    assert_eq!(markers as u64, s.marked(), "firings that were not rate-limited are marked");
}

#[test]
fn a_fast_scope_never_fires_and_a_slow_one_of_the_same_callsite_does() {
    let dir = fresh_dir("fast");
    let log = started(ring(&dir).trigger(Trigger::slower_than("trig.fast", "s*", Duration::from_millis(50))));
    let scope = |slow: bool| {
        trace_scope!(log: &log, "trig.fast", "scope");
        if slow {
            std::thread::sleep(Duration::from_millis(60));
        }
    };
    for _ in 0..2000 {
        scope(false);
    }
    assert_eq!(log.triggers().fired, 0);
    scope(true);
    let s = wait_for(&log, "the slow scope's dump", |s| s.dumps.len() == 1);
    assert_eq!(s.fired, 1);
    log.stop();
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "one file, no temporary left");
}

#[test]
fn a_complete_event_given_its_duration_fires_a_scope_trigger() {
    let dir = fresh_dir("complete");
    let log = started(
        ring(&dir).trigger("trig.complete/c>1ms".parse().unwrap()).post_window(PostWindow::Events(1)),
    );
    let start = log.now();
    phosphor::trace_complete!(log: &log, "trig.complete", "c", start, Duration::from_micros(900));
    assert_eq!(log.triggers().fired, 0);
    phosphor::trace_complete!(log: &log, "trig.complete", "c", start, Duration::from_millis(2));
    let s = wait_for(&log, "the slice's dump", |s| s.dumps.len() == 1);
    assert_eq!(s.fired, 1);
}

#[test]
fn a_counter_or_data_value_past_its_threshold_fires() {
    let dir = fresh_dir("value");
    let config = ring(&dir)
        .trigger("trig.value/depth>5".parse().unwrap())
        .trigger("trig.value/ratio>0.5".parse().unwrap())
        .post_window(PostWindow::Events(1));
    let log = started(config);
    for v in 0..=5u64 {
        trace_counter!(log: &log, "trig.value", "depth", v);
        trace_data!(log: &log, "trig.value", "ratio", v as f64 / 10.0);
    }
    assert_eq!(log.triggers().fired, 0, "at the threshold is not past it");
    trace_counter!(log: &log, "trig.value", "depth", 6u64);
    let s = wait_for(&log, "the counter's dump", |s| s.dumps.len() == 1 && !s.pending);
    assert_eq!(s.dumps[0].trigger, 1);
    trace_data!(log: &log, "trig.value", "ratio", 0.75f64);
    let s = wait_for(&log, "the data value's dump", |s| s.dumps.len() == 2);
    assert_eq!(s.dumps[1].trigger, 2);
    assert_eq!(s.fired, 2);
    let rows = read_dump(&s.dumps[1].path);
    assert!(rows.iter().any(|r| is_marker(r) && r.2 == Some(2)));
}

#[test]
fn a_log_at_or_above_the_level_fires() {
    let dir = fresh_dir("log");
    let log =
        started(ring(&dir).trigger("trig.log/log>=warn".parse().unwrap()).post_window(PostWindow::Events(1)));
    trace_log!(log: &log, info, "trig.log", "fine {}", 1u32);
    trace_log!(log: &log, debug, "trig.log", "fine {}", 2u32);
    trace_log!(log: &log, error, "trig.other", "another category {}", 3u32);
    assert_eq!(log.triggers().fired, 0);
    trace_log!(log: &log, warn, "trig.log", "careful {}", 4u32);
    let s = wait_for(&log, "the warning's dump", |s| s.dumps.len() == 1 && !s.pending);
    trace_log!(log: &log, error, "trig.log", "broken {}", 5u32);
    let s2 = wait_for(&log, "the error's dump", |s| s.dumps.len() == 2);
    assert_eq!((s.fired, s2.fired), (1, 2));
}

#[test]
fn a_post_trigger_window_in_time_waits_that_long_and_holds_the_events_after() {
    let dir = fresh_dir("time");
    let window = Duration::from_millis(200);
    let log =
        started(ring(&dir).trigger("trig.time/x>1".parse().unwrap()).post_window(PostWindow::Time(window)));
    trace_counter!(log: &log, "trig.time", "x", 2u64);
    let fired = Instant::now();
    let mut i = 0u64;
    while log.triggers().dumps.is_empty() {
        trace_instant!(log: &log, "trig.time", "after", "i" => i);
        i += 1;
        std::thread::sleep(Duration::from_micros(200));
        assert!(fired.elapsed() < Duration::from_secs(60), "no dump");
    }
    assert!(fired.elapsed() >= window, "dumped after {:?}", fired.elapsed());
    let rows = read_dump(&log.triggers().dumps[0].path);
    assert!(rows.iter().filter(|r| r.1 == "after").count() >= 2);
}

#[test]
fn triggers_are_armed_and_disarmed_on_a_running_trace() {
    let dir = fresh_dir("arm");
    let log = started(TraceConfig::new(BufferMode::Ring, 1 << 20));
    let e = log.arm_trigger("trig.arm/x>1".parse().unwrap()).unwrap_err();
    assert!(e.to_string().contains("no directory"), "{e}");
    let n = log.arm_trigger_into("trig.arm/x>1".parse().unwrap(), Some(&dir)).unwrap();
    let m = log.arm_trigger("trig.arm/y>1".parse().unwrap()).unwrap();
    assert_eq!((n, m), (1, 2));
    assert!(log.disarm_trigger(n));
    assert!(!log.disarm_trigger(n), "already disarmed");
    trace_counter!(log: &log, "trig.arm", "x", 5u64);
    assert_eq!(log.triggers().fired, 0, "disarmed");
    trace_counter!(log: &log, "trig.arm", "y", 5u64);
    assert_eq!(log.triggers().fired, 1);
    assert_eq!(log.disarm_all_triggers(), 1);
    assert!(log.triggers().armed.is_empty());
    log.stop();
    assert_eq!(log.triggers().dumps.len(), 1, "the pending window was dumped at stop");
}

#[test]
fn triggers_need_a_ring_buffer_and_a_directory() {
    let dir = fresh_dir("modes");
    let log = new_log(phosphor::TraceLogConfig::default());
    let t: Trigger = "a/b>1ms".parse().unwrap();
    for mode in [BufferMode::Fixed, BufferMode::Stream] {
        let e = log.start(TraceConfig::new(mode, 1 << 16).trigger_dir(&dir).trigger(t.clone())).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Trigger(_)), "{e}");
        assert!(e.to_string().contains("Ring"), "{e}");
    }
    let e = log.start(TraceConfig::new(BufferMode::Ring, 1 << 16).trigger(t.clone())).unwrap_err();
    assert!(e.to_string().contains("no directory"), "{e}");
    assert!(!log.is_enabled(), "a failed start leaves no trace running");
    let e = "db/query>2 weeks".parse::<Trigger>().unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::TriggerSpec { .. }), "{e}");
}

#[test]
fn every_event_is_recorded_or_counted_while_triggers_fire_on_many_threads() {
    let dir = fresh_dir("stress");
    // 256 chunks, about 32,000 events: the 80,000 scopes overwrite it (counted), and a window
    // of 300 events still holds its marker, though under load the dump may come late.
    let config = TraceConfig::new(BufferMode::Ring, 1 << 20)
        .trigger_dir(&dir)
        .trigger("trig.stress/work>200us".parse().unwrap())
        .post_window(PostWindow::Events(300))
        .dumps_per_minute(1000);
    let log = started(config);
    let threads = 4u64;
    let per_thread = 20_000u64;
    std::thread::scope(|s| {
        for t in 0..threads {
            let log = &log;
            s.spawn(move || {
                for i in 0..per_thread {
                    trace_scope!(log: log, "trig.stress", "work", "i" => i);
                    if i % 2000 == t * 7 {
                        std::thread::sleep(Duration::from_micros(300));
                    }
                }
            });
        }
    });
    wait_for(&log, "the last window", |s| !s.pending && s.dumps.len() as u64 >= 1);
    let status = log.triggers();
    let trace = stop_and_take(&log);
    let stats = trace.stats();
    assert!(status.fired >= threads * 10, "{status:?}");
    assert_eq!(status.failed, 0);
    let emitted = threads * per_thread + log.triggers().marked();
    assert_eq!(stats.recorded + stats.dropped.total(), emitted, "{stats}");
    assert_eq!(stats.dropped.total(), stats.dropped.overwritten, "only the ring's overwrites: {stats}");
    for d in &status.dumps {
        let rows = read_dump(&d.path);
        assert_eq!(rows.len() as u64, d.events);
    }
}

//! Tests of `TraceStats` on traces recorded by independent `TraceLog`s.

use std::sync::Arc;
use std::time::Duration;

use phosphor::{
    trace_async_begin, trace_async_end, trace_begin, trace_complete, trace_counter, trace_end, trace_instant,
    trace_lock_guard, trace_scope, BufferMode, ClockKind, Phase, Trace, TraceConfig, TraceLog,
    TraceLogConfig,
};

use super::*;
use crate::{format_count, MismatchKind};

fn record(clock: ClockKind, buffer: usize, body: impl FnOnce(&Arc<TraceLog>)) -> Trace {
    let log = TraceLog::new(TraceLogConfig::new().clock(clock)).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, buffer)).unwrap();
    body(&log);
    log.stop();
    log.take_trace().unwrap()
}

#[test]
fn events_are_counted_per_thread_and_per_kind() {
    let mut worker_tid = 0;
    let trace = record(ClockKind::Tsc, 1 << 20, |log| {
        for i in 0..3u32 {
            trace_instant!(log: log, "test", "tick", "i" => i);
        }
        for _ in 0..2 {
            trace_scope!(log: log, "test", "work");
        }
        worker_tid = std::thread::scope(|s| {
            s.spawn(|| {
                phosphor::set_thread_name("stats-test-worker");
                for v in 0..5u64 {
                    trace_counter!(log: log, "test", "depth", v);
                }
                phosphor::current_thread_id()
            })
            .join()
            .unwrap()
        });
    });
    let stats = TraceStats::from_trace(&trace).unwrap();

    assert_eq!(stats.events, 10);
    assert_eq!(stats.recorded, 10);
    assert_eq!(stats.drops.total(), 0);
    let main = stats.thread(phosphor::current_thread_id()).unwrap();
    assert_eq!(main.events, 5);
    let worker = stats.thread(worker_tid).unwrap();
    assert_eq!(worker.events, 5);
    assert_eq!(worker.name.as_deref(), Some("stats-test-worker"));
    assert_eq!(stats.threads.len(), 2);

    let counts: Vec<_> =
        stats.kinds.iter().map(|k| (k.name, k.phase, k.count, k.durations.is_some())).collect();
    assert_eq!(
        counts,
        [
            ("depth", Phase::Counter, 5, false),
            ("tick", Phase::Instant, 3, false),
            ("work", Phase::Complete, 2, true),
        ]
    );
    assert_eq!(stats.mismatch_count, 0);
}

#[test]
fn durations_are_in_nanoseconds_with_exact_percentiles() {
    // The monotonic clock ticks in nanoseconds, so the durations come back exactly.
    let trace = record(ClockKind::Monotonic, 1 << 20, |log| {
        let start = log.now();
        for us in (1..=100).rev() {
            trace_complete!(log: log, "test", "job", start, Duration::from_micros(us));
        }
    });
    let stats = TraceStats::from_trace(&trace).unwrap();
    let d = stats.kind("test", "job", Phase::Complete).unwrap().durations.unwrap();
    assert_eq!(d.samples, 100);
    assert_eq!(d.min_ns, 1_000);
    assert_eq!(d.mean_ns, 50_500);
    assert_eq!(d.p50_ns, 50_000);
    assert_eq!(d.p99_ns, 99_000);
    assert_eq!(d.max_ns, 100_000);
    assert_eq!(d.total_ns, 5_050_000);
}

#[test]
fn tsc_durations_convert_to_nanoseconds() {
    let trace = record(ClockKind::Tsc, 1 << 20, |log| {
        trace_complete!(log: log, "test", "job", log.now(), Duration::from_millis(3));
    });
    let stats = TraceStats::from_trace(&trace).unwrap();
    let d = stats.kind("test", "job", Phase::Complete).unwrap().durations.unwrap();
    // Ticks and back lose at most a tick or two to rounding.
    assert!(d.max_ns.abs_diff(3_000_000) < 10, "{d:?}");
}

#[test]
fn mismatched_and_unclosed_begins_are_reported() {
    let trace = record(ClockKind::Monotonic, 1 << 20, |log| {
        trace_end!(log: log, "test", "stray");
        trace_begin!(log: log, "test", "outer");
        trace_begin!(log: log, "test", "inner");
        trace_end!(log: log, "test", "outer");
        trace_end!(log: log, "test", "outer");
        trace_begin!(log: log, "test", "left");
    });
    let stats = TraceStats::from_trace(&trace).unwrap();
    let kinds: Vec<_> = stats.mismatches.iter().map(|m| m.kind.clone()).collect();
    assert_eq!(
        kinds,
        [
            MismatchKind::EndWithoutBegin { end: "stray" },
            MismatchKind::WrongName { open: "inner", end: "outer" },
            MismatchKind::LeftOpen { open: "left" },
        ]
    );
    assert_eq!(stats.mismatch_count, 3);
    assert_eq!(stats.thread(phosphor::current_thread_id()).unwrap().mismatches, 3);
    assert!(stats.mismatches.windows(2).all(|w| w[0].at_ns <= w[1].at_ns));
    // The one matching pair ("outer" with the second end) gives the only begin duration.
    assert_eq!(stats.kind("test", "outer", Phase::Begin).unwrap().durations.unwrap().samples, 1);
    assert_eq!(stats.kind("test", "inner", Phase::Begin).unwrap().durations, None);
    let report = stats.mismatch_report().to_string();
    assert!(report.contains("3 mismatched"), "{report}");
    assert!(report.contains(r#"end "outer" closes the open begin "inner""#), "{report}");
}

#[test]
fn matched_begin_end_pairs_have_durations() {
    let trace = record(ClockKind::Monotonic, 1 << 20, |log| {
        trace_begin!(log: log, "test", "phase");
        std::thread::sleep(Duration::from_millis(2));
        trace_end!(log: log, "test", "phase");
    });
    let stats = TraceStats::from_trace(&trace).unwrap();
    let d = stats.kind("test", "phase", Phase::Begin).unwrap().durations.unwrap();
    assert_eq!(d.samples, 1);
    assert!(d.min_ns >= 2_000_000, "{d:?}");
    assert_eq!(stats.kind("test", "phase", Phase::End).unwrap().durations, None);
    assert_eq!(stats.mismatch_count, 0);
    assert!(stats.span_ns >= 2_000_000);
}

#[test]
fn async_slices_pair_across_threads() {
    let trace = record(ClockKind::Monotonic, 1 << 20, |log| {
        trace_async_begin!(log: log, "test", "request", 7u64);
        trace_async_begin!(log: log, "test", "request", 8u64);
        std::thread::sleep(Duration::from_millis(1));
        std::thread::scope(|s| {
            s.spawn(|| trace_async_end!(log: log, "test", "request", 7u64));
        });
        trace_async_end!(log: log, "test", "request", 9u64);
    });
    let stats = TraceStats::from_trace(&trace).unwrap();
    let d = stats.kind("test", "request", Phase::AsyncBegin).unwrap().durations.unwrap();
    assert_eq!(d.samples, 1);
    assert!(d.min_ns >= 1_000_000, "{d:?}");
    assert_eq!(stats.async_unended, 1, "id 8 never ends");
    assert_eq!(stats.async_unbegun, 1, "id 9 never began");
}

#[test]
fn lock_wait_and_held_are_kinds_with_durations() {
    let trace = record(ClockKind::Monotonic, 1 << 20, |log| {
        let m = std::sync::Mutex::new(0);
        for _ in 0..4 {
            let mut g = trace_lock_guard!(log: log, "test", "m", m.lock().unwrap());
            **g += 1;
        }
    });
    let stats = TraceStats::from_trace(&trace).unwrap();
    for (name, phase) in [("m.wait", Phase::LockWait), ("m.held", Phase::LockHeld)] {
        let k = stats.kind("test", name, phase).unwrap();
        assert_eq!(k.count, 4);
        assert_eq!(k.durations.unwrap().samples, 4);
    }
}

#[test]
fn drops_are_reported_by_reason() {
    // One 4 KiB chunk holds 127 records; the rest find the Fixed buffer full.
    let trace = record(ClockKind::Tsc, 4096, |log| {
        for i in 0..1000u32 {
            trace_instant!(log: log, "test", "flood", "i" => i);
        }
    });
    let stats = TraceStats::from_trace(&trace).unwrap();
    assert!(stats.recorded > 0 && stats.recorded < 1000, "{}", stats.recorded);
    assert_eq!(stats.events, stats.recorded);
    assert_eq!(stats.drops.buffer_full, 1000 - stats.recorded);
    assert_eq!(stats.recorded + stats.drops.total(), 1000);
    let line = stats.drops_summary().to_string();
    assert!(line.contains(&format!("buffer_full {}", format_count(1000 - stats.recorded))), "{line}");
}

#[test]
fn the_rendering_lists_threads_kinds_and_durations() {
    let trace = record(ClockKind::Monotonic, 1 << 20, |log| {
        let start = log.now();
        trace_complete!(log: log, "render", "step", start, Duration::from_micros(42));
    });
    let stats = TraceStats::from_trace(&trace).unwrap();
    let text = stats.to_string();
    assert!(text.contains("1 recorded, 0 dropped"), "{text}");
    let row = text.lines().find(|l| l.contains("step")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[..4], ["render", "step", "complete", "1"], "{row}");
    assert!(row.contains("42.0 µs"), "{row}");
    assert!(text.contains("every end closes"), "{text}");
}

#[test]
fn nearest_rank_percentiles_pick_real_values() {
    assert_eq!(nearest_rank(1, 50), 0);
    assert_eq!(nearest_rank(1, 99), 0);
    assert_eq!(nearest_rank(2, 50), 0);
    assert_eq!(nearest_rank(100, 50), 49);
    assert_eq!(nearest_rank(100, 99), 98);
    assert_eq!(nearest_rank(1000, 99), 989);
    let mut ticks = [5, 1, 3];
    let d = DurationStats::from_ticks(&mut ticks, |t| t * 2).unwrap();
    assert_eq!((d.min_ns, d.mean_ns, d.p50_ns, d.p99_ns, d.max_ns), (2, 6, 6, 10, 10));
    assert_eq!(DurationStats::from_ticks(&mut [], |t| t), None);
}

//! Aggregate points: `trace_sum!` and `trace_histogram!` add in process, and the trace (and its
//! file) carries their snapshots.

use phosphor::format::file::{AggregateKind, Reader};
use phosphor::format::hist::quantile;
use phosphor::points::{self, PointKind};
use phosphor::{trace_histogram, trace_sum, BufferMode, TraceConfig};

use crate::support::{started, stop_and_take};

#[test]
fn sums_and_histograms_are_snapshotted_into_the_trace_and_its_file() {
    let log = started(TraceConfig::new(BufferMode::Fixed, 1 << 16).categories("agg.*").unwrap());
    for i in 1..=1000u64 {
        trace_sum!(log: &log, "agg.net", "agg-bytes", 3 * i);
        trace_histogram!(log: &log, "agg.net", "agg-latency", i);
        trace_sum!(log: &log, "agg-off-category", "agg-ignored", 1); // a category not traced
    }
    let trace = stop_and_take(&log);
    assert_eq!(trace.stats().recorded, 0, "aggregates write no events");
    let name = |id: u32| trace.callsite(id).unwrap().name;
    let mut got: Vec<_> = trace.aggregates().iter().map(|a| (name(a.callsite), a.kind.clone())).collect();
    got.sort_by_key(|(n, _)| *n);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].1, AggregateKind::Sum { count: 1000, sum: 3 * 500_500 });
    let AggregateKind::Histogram { count, sum, min, max, ref buckets } = got[1].1 else { panic!("{got:?}") };
    assert_eq!((got[1].0, count, sum, min, max), ("agg-latency", 1000, 500_500, 1, 1000));
    let p50 = quantile(buckets, 0.5).unwrap();
    assert!((470..=532).contains(&p50), "p50 {p50}");

    let mut bytes = Vec::new();
    trace.write_to(&mut bytes).unwrap();
    let mut r = Reader::new(&bytes[..]).unwrap();
    while r.next_block().unwrap().is_some() {}
    assert_eq!(r.aggregates(), trace.aggregates());

    let listed = points::list();
    let kind = |n: &str| listed.iter().find(|p| p.name == n).unwrap().kind;
    assert_eq!((kind("agg-bytes"), kind("agg-latency")), (PointKind::Sum, PointKind::Histogram));
}

#[test]
fn each_trace_carries_what_its_aggregates_counted_during_it() {
    let log = started(TraceConfig::new(BufferMode::Fixed, 1 << 16).categories("agg2").unwrap());
    let add = |log: &phosphor::TraceLog| trace_sum!(log: log, "agg2", "agg2-count", 1);
    add(&log);
    add(&log);
    let first = stop_and_take(&log);
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 16).categories("agg2").unwrap()).unwrap();
    add(&log);
    let second = stop_and_take(&log);
    let kinds = |t: &phosphor::Trace| t.aggregates().iter().map(|a| a.kind.clone()).collect::<Vec<_>>();
    assert_eq!(kinds(&first), [AggregateKind::Sum { count: 2, sum: 2 }]);
    assert_eq!(kinds(&second), [AggregateKind::Sum { count: 1, sum: 1 }]);
}

//! Statistics with system context, on `phosphor_craft::system`'s trace, whose figures are known.

use std::sync::Arc;

use phosphor_craft::system::{report_row, system_trace, STATS_STATUS, STATS_WORK_ROW};
use phosphor_format::file::Reader;

use crate::symbolize::Symbolizer;
use crate::system::SystemContext;
use crate::{StatsBuilder, TraceStats};

const MS: u64 = 1_000_000;

fn stats(with_context: bool) -> TraceStats {
    let bytes = system_trace().unwrap();
    let reader = Reader::new(&bytes[..]).unwrap();
    let mut builder = StatsBuilder::new(&reader.header().clock);
    if with_context {
        let mut ctx = SystemContext::read(Reader::new(&bytes[..]).unwrap()).unwrap();
        ctx.name_leaves(&mut Symbolizer::offline());
        builder = builder.system(Arc::new(ctx));
    }
    builder.read(reader).unwrap()
}

#[test]
fn a_scope_switched_out_for_50_of_its_100_ms_is_50_ms_on_and_50_ms_off_the_cpu_with_its_allocations() {
    let s = stats(true);
    let work = s.path(&["work"]).unwrap().system.as_deref().cloned().unwrap();
    assert_eq!((work.on_cpu_ns, work.off_cpu_ns, work.preempted_ns, work.switches), (50 * MS, 50 * MS, 0, 1));
    assert_eq!((work.allocs, work.alloc_bytes, work.alloc_scopes), (1000, 64_000, 1));
    assert_eq!(work.samples, 4);
    assert_eq!(work.functions, [("app+0x1000".to_string(), 2), ("app+0x3000".to_string(), 2)]);

    let inner = s.path(&["work", "inner"]).unwrap().system.as_deref().cloned().unwrap();
    assert_eq!((inner.on_cpu_ns, inner.off_cpu_ns, inner.switches), (18 * MS, 0, 0));
    assert_eq!((inner.allocs, inner.alloc_bytes), (200, 12_800));
    assert_eq!(inner.functions, [("app+0x3000".to_string(), 2)]);

    // The allocation events are bookkeeping, not kinds of their own.
    assert_eq!(s.paths().len(), 2, "{:?}", s.paths().iter().map(|k| k.path_string()).collect::<Vec<_>>());
    let summary = s.system.as_ref().unwrap();
    assert!(summary.switches);
    assert_eq!((summary.counts.switches, summary.counts.samples, summary.counts.heap), (2, 4, 3));
}

#[test]
fn without_the_context_the_allocations_still_count_and_no_cpu_time_is_claimed() {
    let s = stats(false);
    assert!(s.system.is_none());
    let work = s.path(&["work"]).unwrap().system.as_deref().cloned().unwrap();
    assert_eq!((work.allocs, work.alloc_bytes), (1000, 64_000));
    assert_eq!((work.on_cpu_ns, work.off_cpu_ns, work.samples), (0, 0, 0));
}

#[test]
fn the_text_report_has_the_status_line_and_the_system_table() {
    let s = stats(true);
    let text = s.report(Default::default()).to_string();
    assert!(text.contains(STATS_STATUS), "{text}");
    assert_eq!(report_row(&text, "work").as_deref(), Some(&STATS_WORK_ROW[..]), "{text}");
}

#[test]
fn the_json_has_the_system_summary_and_each_kinds_system() {
    let s = stats(true);
    let mut out = Vec::new();
    s.write_json(&mut out, Default::default()).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["system"]["status"]["samples"], "on");
    assert_eq!(v["system"]["counts"]["switches"], 2);
    let work =
        v["paths"].as_array().unwrap().iter().find(|k| k["path"] == serde_json::json!(["work"])).unwrap();
    assert_eq!(work["system"]["off_cpu_ns"], 50 * MS);
    assert_eq!(work["system"]["alloc_bytes"], 64_000);
    assert_eq!(work["system"]["functions"][0]["function"], "app+0x1000");
}

#[test]
fn a_scope_alloc_whose_scope_was_lost_is_not_given_to_the_scope_before_it() {
    use phosphor_craft::system::callsite;
    use phosphor_format::file::{Header, Trailer, Writer};
    use phosphor_format::system::{PHOSPHOR_CATEGORY, SCOPE_ALLOC_ARGS, SCOPE_ALLOC_NAME};
    use phosphor_format::{ArgType, Meta, Phase, Record};

    let bytes = system_trace().unwrap();
    let header = Header { ..Reader::new(&bytes[..]).unwrap().header().clone() };
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    w.write_callsites(&[
        callsite(16, "app", "step", Phase::Complete, ["", ""]),
        callsite(17, PHOSPHOR_CATEGORY, SCOPE_ALLOC_NAME, Phase::Instant, SCOPE_ALLOC_ARGS),
    ])
    .unwrap();
    let complete =
        |start: u64, dur: u64| Record::new(start, 16, Meta::new(1, ArgType::None, ArgType::None), [dur, 0]);
    let alloc =
        |ts: u64, a: u64, b: u64| Record::new(ts, 17, Meta::new(0, ArgType::U64, ArgType::U64), [a, b]);
    // The first step's counts follow it; the second step was lost (a ring overwrote it, say), and
    // its counts, stamped with its end at 50 ms, follow the first step in the stream.
    let records = [complete(0, 10 * MS), alloc(10 * MS, 3, 192), alloc(50 * MS, 5, 320)];
    w.write_chunk(101, 0, &records, |_, _| "").unwrap();
    let file = w.finish(&Trailer { recorded: 3, ..Trailer::default() }).unwrap();
    let reader = Reader::new(&file[..]).unwrap();
    let s = StatsBuilder::new(&reader.header().clock).read(reader).unwrap();
    let step = s.path(&["step"]).unwrap().system.as_deref().cloned().unwrap();
    assert_eq!((step.allocs, step.alloc_bytes, step.alloc_scopes), (3, 192, 1));
}

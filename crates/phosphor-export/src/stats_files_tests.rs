use phosphor_format::file::{CallsiteInfo, Reader, Trailer, Writer};
use phosphor_format::{Phase, Record};

use super::*;
use crate::test_files::{clock, header, slice};

const WORK: u32 = 16;
const INNER: u32 = 17;

fn callsite(id: u32, name: &str) -> CallsiteInfo {
    CallsiteInfo {
        id,
        category: "t".into(),
        name: name.into(),
        phase: Phase::Complete,
        arg_names: [String::new(), String::new()],
        file: "stats_files_tests.rs".into(),
        line: id,
        name_hash: 0,
        level: None,
        dynamic_name: false,
        flow: false,
    }
}

/// A file of process `pid` on a clock of `ns_per_tick`: thread `tid` (named `name`) records
/// `records`; the trailer says `recorded` and `dropped` buffer-full events.
fn file(pid: u32, ns_per_tick: f64, tid: u32, name: &str, records: &[Record], dropped: u64) -> Vec<u8> {
    let mut h = header(clock(ns_per_tick));
    h.pid = pid;
    h.process_name = format!("p{pid}");
    let mut w = Writer::new(Vec::new(), &h).unwrap();
    w.write_callsites(&[callsite(WORK, "work"), callsite(INNER, "inner")]).unwrap();
    w.write_thread_names([(tid, name)]).unwrap();
    w.write_chunk(tid, 0, records, |_, _| "").unwrap();
    let mut t = Trailer { recorded: records.len() as u64, ..Trailer::default() };
    t.dropped.buffer_full = dropped;
    w.finish(&t).unwrap()
}

#[test]
fn paths_add_up_across_files_and_each_files_threads_stay_apart() {
    // Both files have a thread 5: one `work` holding an `inner` (the inner one arrives first).
    let a = file(10, 1.0, 5, "main", &[slice(INNER, 110, 20), slice(WORK, 100, 50)], 1);
    // The second file's clock ticks at 2 ns: its `work` lasts 30 ticks, 60 ns.
    let b = file(20, 2.0, 5, "main", &[slice(INNER, 10, 5), slice(WORK, 0, 30)], 2);
    let mut s = FilesStats::new();
    s.add_file(Reader::new(&a[..]).unwrap(), 0).unwrap();
    s.add_file(Reader::new(&b[..]).unwrap(), 1_000).unwrap();
    let stats = s.finish();

    let work = stats.path(&["work"]).expect("work across both files");
    assert_eq!(work.count, 2);
    assert_eq!(work.durations.unwrap().total_ns, 50 + 60, "each file's own clock");
    assert_eq!(stats.path(&["work", "inner"]).unwrap().count, 2);

    let threads: Vec<(u32, Option<&str>, u64)> =
        stats.threads.iter().map(|t| (t.tid, t.name.as_deref(), t.events)).collect();
    assert_eq!(threads, [(5, Some("p10/10 main"), 2), (u32::MAX, Some("p20/20 main"), 2)]);
    assert_eq!(stats.kinds.iter().filter(|k| k.path_string() == "work").count(), 2, "a kind per thread");

    // From the first file's first start (100 ns) to the second's last end (1,000 + 60 ns).
    assert_eq!(stats.span_ns, 1_060 - 100);
    assert_eq!(stats.recorded, Some(4));
    assert_eq!(stats.drops.as_ref().map(|d| d.buffer_full), Some(3));
}

#[test]
fn a_damaged_file_counts_what_came_before_it_and_the_statistics_say_they_are_incomplete() {
    let a = file(10, 1.0, 5, "main", &[slice(WORK, 100, 50)], 0);
    let b = file(20, 1.0, 6, "w", &[slice(WORK, 0, 30)], 0);
    let mut s = FilesStats::new();
    s.add_file(Reader::new(&a[..]).unwrap(), 0).unwrap();
    let cut = &b[..b.len() - 10];
    let e = s.add_file(Reader::new(cut).unwrap(), 0).unwrap_err();
    assert!(e.offset() > 0 && e.offset() <= cut.len() as u64, "{e}");
    let stats = s.finish();
    assert!(!stats.complete);
    assert_eq!(stats.path(&["work"]).unwrap().count, 2, "the damaged file's chunk came whole");
}

//! Every shape, at a small size, is a file the reader reads whole: the events the trailer counts,
//! no error.

use phosphor_format::file::{ring, Reader};

use crate::shapes::{Backwards, Shape};

/// Reads `bytes` to the end; returns the events read.
fn read_all(bytes: &[u8]) -> u64 {
    let mut r = Reader::new(bytes).expect("a header");
    let mut events = 0u64;
    r.for_each_event(|_| events += 1).expect("a valid file");
    assert_eq!(r.trailer().expect("a trailer").recorded, events);
    events
}

#[test]
fn every_shape_writes_a_file_the_reader_reads_whole() {
    let shapes = [
        (Shape::HugeCallsiteName { bytes: 100_000, callsites: 5, events: 3 }, 3),
        (Shape::HugeThreadName { bytes: 100_000, threads: 5, events: 3 }, 3),
        (Shape::UnclosedBegins { depth: 300 }, 300),
        (Shape::NestedScopes { depth: 300 }, 602),
        (Shape::BackwardTimestamps { events: 1_000, order: Backwards::Decreasing }, 1_000),
        (Shape::BackwardTimestamps { events: 1_000, order: Backwards::Alternating }, 1_000),
        (Shape::ClockRate { ns_per_tick: f64::NAN }, 78),
        (Shape::ManyCallsites { callsites: 10_000 }, 10_000),
        (Shape::ManyThreads { threads: 5_000 }, 5_000),
        (Shape::TinyChunks { chunks: 1_000 }, 1_000),
        (Shape::HugeArgs { events: 50 }, 50),
        (Shape::LogWidthBomb { repeats: 10, events: 3 }, 3),
        (Shape::DeepLongNames { depth: 50, name_bytes: 1_000 }, 100),
        (Shape::LogsOutOfOrder { threads: 3, logs: 500, params: 16 }, 1_500),
        (Shape::LogsOutOfOrder { threads: 2, logs: 100, params: 0 }, 200),
        (Shape::AsyncsWaiting { slices: 1_000 }, 3_000),
    ];
    for (shape, events) in shapes {
        let bytes = shape.write(Vec::new()).unwrap();
        assert_eq!(read_all(&bytes), events, "{shape:?}");
    }
}

#[test]
fn a_huge_string_is_written_once_however_many_entries_name_it() {
    let bytes =
        Shape::HugeCallsiteName { bytes: 1 << 20, callsites: 100, events: 100 }.write(Vec::new()).unwrap();
    assert!(bytes.len() < (1 << 20) + 100 * 100, "{}", bytes.len());
    let mut r = Reader::new(&bytes[..]).unwrap();
    r.for_each_event(|e| assert_eq!(e.callsite.name.len(), 1 << 20)).unwrap();
    assert_eq!(r.callsites().count(), 100);
}

#[test]
fn a_repeated_string_is_the_string_repeated() {
    let clock = crate::monotonic();
    let mut w = crate::TraceWriter::new(Vec::new(), clock, "p").unwrap();
    assert_eq!(w.repeated_string("ab", 3_000_001).unwrap(), 0);
    assert_eq!(w.string("next").unwrap(), 1);
    let bytes = w.finish(Default::default()).unwrap();
    let mut r = Reader::new(&bytes[..]).unwrap();
    while r.next_block().unwrap().is_some() {}
    assert_eq!(r.strings()[0], "ab".repeat(1_500_000));
    assert_eq!(&r.strings()[1], "next");
}

#[test]
fn the_ring_file_recovers_into_a_trace_of_every_chunk() {
    let ring = crate::write_ring(Vec::new(), 20, 300).unwrap();
    let trace = ring::recover(&ring).unwrap();
    assert_eq!(read_all(&trace), 20 * 127);
}

#[test]
fn the_catalog_names_each_case_once() {
    for scale in [crate::Scale::Test, crate::Scale::Bench] {
        let cases = crate::catalog(scale);
        let mut names: Vec<_> = cases.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), cases.len());
    }
}

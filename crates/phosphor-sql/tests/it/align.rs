//! Several files on one timeline, as `phosphor convert` puts them (`phosphor_sql::align`): the
//! same boot's `CLOCK_MONOTONIC` as it is; another machine's moved by the wall clocks, with a
//! warning naming it; every table's times moved alike.

use std::path::Path;

use phosphor_format::file::{CallsiteInfo, ClockInfo, ClockKind, Header, Trailer, Writer};
use phosphor_format::{Meta, Phase, Record};
use phosphor_sql::{align, Output, Session, TraceSource};

use crate::files::scratch;

fn header(pid: u32, mono: u64, wall: u64, boot: [u8; 16], host: &str) -> Header {
    Header {
        clock: ClockInfo {
            kind: ClockKind::Monotonic,
            ns_per_tick: 1.0,
            origin_ticks: mono,
            origin_monotonic_ns: mono,
            origin_wall_ns: wall,
            fallback_reason: None,
        },
        pid,
        process_name: format!("p{pid}"),
        boot_id: Some(boot),
        host_name: Some(host.to_owned()),
    }
}

/// A file with instant `mark` at `ticks` and a complete scope `work` of 1 µs from there.
fn crafted(path: &Path, header: &Header, ticks: u64) {
    let site = |id: u32, name: &str, phase: Phase| CallsiteInfo {
        id,
        category: "align".into(),
        name: name.into(),
        phase,
        arg_names: [String::new(), String::new()],
        file: "align.rs".into(),
        line: 1,
        name_hash: 0,
        level: None,
        dynamic_name: false,
        flow: false,
    };
    let mut w = Writer::new(Vec::new(), header).unwrap();
    w.write_callsites(&[site(16, "mark", Phase::Instant), site(17, "work", Phase::Complete)]).unwrap();
    let records = [Record::new(ticks, 16, Meta(0), [0; 2]), Record::new(ticks, 17, Meta(0), [1_000, 0])];
    w.write_chunk(1, 0, &records, |_, _| "").unwrap();
    std::fs::write(path, w.finish(&Trailer { recorded: 2, ..Trailer::default() }).unwrap()).unwrap();
}

fn rows(sources: &[TraceSource], query: &str) -> String {
    let session = Session::new(sources, None).expect("a session");
    let mut out = Vec::new();
    session.run(query, Output::Csv, &mut out).expect("the query runs");
    String::from_utf8(out).unwrap()
}

#[test]
fn files_of_two_machines_share_one_timeline_by_their_wall_clocks_with_a_warning() {
    let dir = scratch("align");
    let (a, b) = (dir.join("a.phos"), dir.join("b.phos"));
    // A: CLOCK_MONOTONIC 1 s at the wall's 100 s; B, another machine: 5 s at 101 s. Each marks
    // its origin, so B's mark is 1 s after A's: at 2 s on A's CLOCK_MONOTONIC.
    crafted(&a, &header(10, 1_000_000_000, 100_000_000_000, [1; 16], "alpha"), 1_000_000_000);
    crafted(&b, &header(20, 5_000_000_000, 101_000_000_000, [2; 16], "beta"), 5_000_000_000);
    let mut sources = vec![TraceSource::new(&a), TraceSource::new(&b)];
    let warning = align(&mut sources).expect("both open").expect("a warning");
    assert!(warning.contains(&b.display().to_string()) && warning.contains("beta"), "{warning}");
    assert_eq!(sources[1].shift_ns, -3_000_000_000);
    let query = "SELECT pid, ts FROM instants UNION ALL SELECT pid, ts FROM slices ORDER BY pid, ts";
    assert_eq!(rows(&sources, query), "pid,ts\n10,1000000000\n10,1000000000\n20,2000000000\n20,2000000000\n");
    // A file alone is on its own clock.
    assert_eq!(
        rows(
            &sources[1..2].iter().map(|s| TraceSource::new(&s.path)).collect::<Vec<_>>(),
            "SELECT ts FROM instants"
        ),
        "ts\n5000000000\n"
    );

    // The same boot: CLOCK_MONOTONIC as it is, whatever the wall clocks say, and no warning.
    crafted(&b, &header(20, 5_000_000_000, 101_000_000_000, [1; 16], "alpha"), 5_000_000_000);
    let mut sources = vec![TraceSource::new(&a), TraceSource::new(&b)];
    assert_eq!(align(&mut sources).expect("both open"), None);
    assert_eq!(
        rows(&sources, "SELECT pid, ts FROM instants ORDER BY pid"),
        "pid,ts\n10,1000000000\n20,5000000000\n"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_file_that_does_not_open_is_named_by_align() {
    let dir = scratch("align-missing");
    let mut sources = vec![TraceSource::new(dir.join("nothing.phos"))];
    let e = align(&mut sources).unwrap_err();
    assert!(e.to_string().contains("nothing.phos"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

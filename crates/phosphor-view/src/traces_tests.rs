use phosphor_format::file::{Trailer, Writer};

use super::*;

/// A trace file with nothing in it, its origin at `mono` on CLOCK_MONOTONIC and `wall` on the
/// wall clock, of boot `boot`.
fn empty_trace(path: &Path, mono: u64, wall: u64, boot: Option<[u8; 16]>) {
    let header = Header {
        clock: ClockInfo {
            kind: ClockKind::Monotonic,
            ns_per_tick: 1.0,
            origin_ticks: mono,
            origin_monotonic_ns: mono,
            origin_wall_ns: wall,
            fallback_reason: None,
        },
        pid: 1,
        process_name: "t".into(),
        boot_id: boot,
        host_name: None,
    };
    let w = Writer::new(Vec::new(), &header).unwrap();
    std::fs::write(path, w.finish(&Trailer::default()).unwrap()).unwrap();
}

fn offsets(paths: &[PathBuf]) -> Vec<i64> {
    Traces::open(paths.to_vec()).unwrap().slots().map(|s| s.place().offset_ns).collect()
}

#[test]
fn before_their_spans_are_known_traces_of_one_boot_share_its_clock_and_no_trace_is_placed_by_the_wall_clock()
{
    let dir = std::env::temp_dir().join(format!("phosphor-view-traces-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("a.phos"), dir.join("b.phos"));
    // The wall clock was stepped by 5 s between the two starts; CLOCK_MONOTONIC says 2 µs.
    empty_trace(&a, 1_000, 50_000_000_000, Some([3; 16]));
    empty_trace(&b, 3_000, 55_000_002_000, Some([3; 16]));
    assert_eq!(offsets(&[a.clone(), b.clone()]), [0, 2_000]);
    // Without boot ids (files before format 1.5) nothing says they were recorded together: each
    // from its own start, not 5 s apart by the wall clock (issue 39's defect 10).
    empty_trace(&a, 1_000, 50_000_000_000, None);
    empty_trace(&b, 3_000, 55_000_002_000, None);
    assert_eq!(offsets(&[a, b]), [0, 0]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Starts recording with `log`, and records one scope.
fn start(log: &phosphor::TraceLog) {
    use phosphor::{trace_scope, BufferMode, TraceConfig};
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    trace_scope!(log: log, "t", "work");
}

fn placed(paths: &[PathBuf], how: Align) -> Vec<(i64, PlacedBy)> {
    let traces = Traces::open_aligned(paths.to_vec(), how).unwrap();
    let cache = paths[0].parent().unwrap().join("cache");
    traces.index_all(Some(&cache), &BuildOptions::default(), |s, e| panic!("{}: {e}", s.path.display()));
    // A trace's own place is the one it is served with.
    for s in traces.slots() {
        assert_eq!(s.trace().unwrap().offset_ns(), s.place().offset_ns);
    }
    traces.slots().map(|s| (s.place().offset_ns, s.placed_by())).collect()
}

#[test]
fn once_scanned_traces_of_one_moment_share_the_clock_and_traces_of_other_moments_start_at_zero() {
    use phosphor::{TraceLog, TraceLogConfig};
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = (0..3).map(|k| dir.path().join(format!("{k}.phos"))).collect();
    // Two recordings at one moment (the second starts and stops inside the first), then one
    // after both have ended.
    let (a, b, c) = (
        TraceLog::new(TraceLogConfig::default()).unwrap(),
        TraceLog::new(TraceLogConfig::default()).unwrap(),
        TraceLog::new(TraceLogConfig::default()).unwrap(),
    );
    start(&a);
    std::thread::sleep(std::time::Duration::from_millis(2));
    start(&b);
    b.stop();
    b.take_trace().unwrap().save(&paths[1]).unwrap();
    {
        use phosphor::trace_scope;
        trace_scope!(log: &a, "t", "later");
    }
    a.stop();
    a.take_trace().unwrap().save(&paths[0]).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2));
    start(&c);
    c.stop();
    c.take_trace().unwrap().save(&paths[2]).unwrap();

    let auto = placed(&paths, Align::Auto);
    assert_eq!(auto[0], (0, PlacedBy::First));
    // The second on the first's clock: at least the 2 ms the first ran before it started.
    assert!(auto[1].0 >= 2_000_000, "{auto:?}");
    assert_eq!(auto[1].1, PlacedBy::Monotonic { with: 0 });
    assert_eq!(auto[2], (0, PlacedBy::OwnStart));
    // On one clock, the third after both.
    let clock = placed(&paths, Align::Clock);
    assert_eq!(clock[1].0, auto[1].0);
    assert!(clock[2].0 > clock[1].0 + 2_000_000, "{clock:?}");
    // Indexes opened ready (`Traces::ready`) are placed alike.
    let indexes = paths
        .iter()
        .map(|p| {
            (p.clone(), crate::open(p, Some(&dir.path().join("cache")), &BuildOptions::default()).unwrap())
        })
        .collect();
    let ready: Vec<i64> = Traces::ready(indexes).slots().map(|s| s.place().offset_ns).collect();
    assert_eq!(ready, [0, auto[1].0, 0]);
}

/// A window's edges in ticks take every tick whose time, as answered (rounded to the nanosecond),
/// falls in it: with ticks shorter than a nanosecond, a slice ending on a tick that reads as the
/// window's start was left out (seen in `view_windows`' random windows).
#[test]
fn window_edges_in_ticks_take_every_tick_that_reads_as_inside() {
    for (rate, origin, offset) in
        [(0.385188, 23_232_521_047_698u64, 0i64), (0.1, 7, -5), (2.5, 100, 3), (1.0, 9, 0)]
    {
        let place = Place::new(
            ClockInfo {
                kind: ClockKind::Tsc,
                ns_per_tick: rate,
                origin_ticks: origin,
                origin_monotonic_ns: 0,
                origin_wall_ns: 0,
                fallback_reason: None,
            },
            offset,
        );
        for tick in (origin..origin + 20_000).chain([origin + 1_342_177_280_000, origin + 17]) {
            let ns = place.ns(tick);
            // A window starting at the tick's time takes it; so does one ending there.
            let start = place.ticks(ns, false);
            assert!(start <= tick, "rate {rate}: tick {tick} reads as {ns}, the window starts at {start}");
            // No further than a tick (and the rounding) away.
            let slack = 1 + rate.ceil() as i64;
            assert!(place.ns(start) >= ns - slack, "rate {rate}: a start no further back than needed");
            let end = place.ticks(ns, true);
            assert!(end >= tick, "rate {rate}: tick {tick} reads as {ns}, the window ends at {end}");
            assert!(place.ns(end) <= ns + slack, "rate {rate}: an end no further on than needed");
        }
    }
}

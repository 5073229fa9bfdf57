//! Tests of the folded stacks and flame graphs, on small files built here and on the v1 golden file.

use phosphor_format::file::{CallsiteInfo, Reader, Trailer, Writer};
use phosphor_format::{Phase, Record};

use super::*;
use crate::test_files::{clock, header, mark, slice};

const GOLDEN: &[u8] = include_bytes!("../../phosphor-format/tests/data/golden-v1.phtrace");

fn callsite(id: u32, name: &str, phase: Phase) -> CallsiteInfo {
    CallsiteInfo {
        id,
        category: "test".into(),
        name: name.into(),
        phase,
        arg_names: [String::new(), String::new()],
        file: "folded_tests.rs".into(),
        line: 1,
        name_hash: 0,
        level: None,
        dynamic_name: false,
        flow: false,
    }
}

/// A file on a nanosecond clock from origin 0, one chunk per `(tid, records)`; thread 1 is `main`.
fn file(callsites: &[CallsiteInfo], chunks: &[(u32, Vec<Record>)]) -> Vec<u8> {
    let header = header(clock(1.0));
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    w.write_callsites(callsites).unwrap();
    for (seq, (tid, records)) in chunks.iter().enumerate() {
        w.write_chunk(*tid, seq as u64, records, |_, _| "").unwrap();
    }
    w.write_thread_names([(1, "main")]).unwrap();
    w.finish(&Trailer::default()).unwrap()
}

fn folded_text(bytes: &[u8]) -> String {
    let mut out = Vec::new();
    write_folded(Reader::new(bytes).unwrap(), &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

const OUTER: u32 = 16;
const FRAME_BEGIN: u32 = 17;
const FRAME_END: u32 = 18;
const MID: u32 = 19;
const LEAF: u32 = 20;
const OTHER: u32 = 21;
const LOCK: u32 = 22;
const INSTANT: u32 = 23;

fn callsites() -> Vec<CallsiteInfo> {
    vec![
        callsite(OUTER, "outer", Phase::Complete),
        callsite(FRAME_BEGIN, "frame", Phase::Begin),
        callsite(FRAME_END, "frame", Phase::End),
        callsite(MID, "mid", Phase::Complete),
        callsite(LEAF, "leaf", Phase::Complete),
        callsite(OTHER, "other", Phase::Complete),
        callsite(LOCK, "queue", Phase::LockWait),
        callsite(INSTANT, "tick", Phase::Instant),
    ]
}

#[test]
fn nested_complete_and_begin_end_slices_fold_into_exact_self_times() {
    // Thread 1 (main): outer [0, 200) > frame [0, 100) > mid [5, 45) > leaf [10, 20) and
    // leaf [25, 35); frame > other [50, 60). Complete events are written at their end, children
    // first. Thread 2 (unnamed): a lock wait [0, 7) then a slice [100, 110), both roots.
    let main = vec![
        mark(FRAME_BEGIN, 0),
        slice(LEAF, 10, 10),
        mark(INSTANT, 22),
        slice(LEAF, 25, 10),
        slice(MID, 5, 40),
        slice(OTHER, 50, 10),
        mark(FRAME_END, 100),
        slice(OUTER, 0, 200),
    ];
    let other = vec![slice(LOCK, 0, 7), slice(OTHER, 100, 10)];
    let text = folded_text(&file(&callsites(), &[(1, main), (2, other)]));
    assert_eq!(
        text,
        "main;outer 100\n\
         main;outer;frame 50\n\
         main;outer;frame;mid 20\n\
         main;outer;frame;mid;leaf 20\n\
         main;outer;frame;other 10\n\
         thread 2;other 10\n\
         thread 2;queue (wait) 7\n"
    );
}

#[test]
fn a_complete_event_inside_an_open_begin_slice_gets_its_prefix_even_if_it_never_closes() {
    let main = vec![mark(FRAME_END, 1), mark(FRAME_BEGIN, 10), slice(LEAF, 20, 5), slice(MID, 15, 30)];
    let text = folded_text(&file(&callsites(), &[(1, main)]));
    // The end with nothing open is ignored; the open frame has no duration of its own.
    assert_eq!(text, "main;frame;mid 25\nmain;frame;mid;leaf 5\n");
}

#[test]
fn slices_split_across_chunks_still_nest() {
    let first = vec![mark(FRAME_BEGIN, 0), slice(LEAF, 10, 10)];
    let second = vec![slice(LEAF, 30, 10), mark(FRAME_END, 50)];
    let text = folded_text(&file(&callsites(), &[(1, first), (1, second)]));
    assert_eq!(text, "main;frame 30\nmain;frame;leaf 20\n");
}

#[test]
fn the_golden_file_folds_to_the_committed_snapshot() {
    let (folded, error) = fold(Reader::new(GOLDEN).unwrap());
    assert!(error.is_none(), "{error:?}");
    let s = &folded.summary;
    assert_eq!((s.chunks, s.events, s.threads, s.complete), (3, 10, 2, true));
    assert!(!folded.stacks.is_empty());
    insta::assert_snapshot!("golden_v1_folded", folded.lines().collect::<Vec<_>>().join("\n"));
}

#[test]
fn the_flame_graph_is_an_svg_naming_every_frame() {
    let main = vec![slice(LEAF, 10, 10), slice(MID, 5, 40), slice(OUTER, 0, 200)];
    let mut out = Vec::new();
    let summary =
        write_flamegraph(Reader::new(&file(&callsites(), &[(1, main)])[..]).unwrap(), &mut out, "test")
            .unwrap();
    assert_eq!(summary.events, 3);
    let svg = String::from_utf8(out).unwrap();
    assert!(svg.starts_with("<?xml") || svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
    assert!(svg.trim_end().ends_with("</svg>"));
    for name in ["main", "outer", "mid", "leaf"] {
        assert!(svg.contains(name), "{name} is not in the SVG");
    }
}

#[test]
fn a_truncated_file_folds_what_was_read_then_names_the_offset() {
    let header = Reader::new(GOLDEN).unwrap().header().clone();
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    w.write_callsites(&callsites()).unwrap();
    w.write_chunk(1, 0, &[slice(LEAF, 10, 10)], |_, _| "").unwrap();
    let first_end = w.offset();
    w.write_chunk(1, 1, &[slice(MID, 100, 10)], |_, _| "").unwrap();
    let second_end = w.offset();
    let bytes = w.finish(&Trailer::default()).unwrap();
    // Cut into the second chunk.
    let cut = &bytes[..(first_end + second_end) as usize / 2];
    let mut out = Vec::new();
    let err = write_folded(Reader::new(cut).unwrap(), &mut out).unwrap_err();
    assert!(err.offset().is_some(), "{err}");
    let Error::Read { exported, .. } = &err else { panic!("{err:?}") };
    assert_eq!(exported.chunks, 1);
    // The golden clock: 0.5 ns per tick, from origin tick 1000 (so the slice starts before it).
    assert_eq!(String::from_utf8(out).unwrap(), "thread 1;leaf 5\n");
}

#[test]
fn a_flame_graph_of_a_file_damaged_before_its_first_stack_names_the_offset() {
    let header = Reader::new(GOLDEN).unwrap().header().clone();
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    w.write_callsites(&callsites()).unwrap();
    let chunk_start = w.offset();
    w.write_chunk(1, 0, &[slice(LEAF, 10, 10)], |_, _| "").unwrap();
    let bytes = w.finish(&Trailer::default()).unwrap();
    // Cut inside the only chunk: nothing to draw. inferno's own error ("No stack counts found")
    // lost the read error, with its offset, that says why.
    let cut = &bytes[..chunk_start as usize + 12];
    let err = write_flamegraph(Reader::new(cut).unwrap(), Vec::new(), "t").unwrap_err();
    let Error::Read { offset, exported, .. } = &err else { panic!("{err:?}") };
    assert_eq!((*offset, exported.chunks), (chunk_start, 0), "{err}");
}

#[test]
fn durations_that_sum_past_u64_saturate_instead_of_overflowing() {
    // A corrupt (or fuzzed) file: sibling slices of the same path whose durations sum past
    // u64::MAX, and interlaced children that sum past their parent.
    let huge = u64::MAX / 2 + 1;
    let main =
        vec![slice(LEAF, 0, huge), slice(LEAF, 1, huge), slice(LEAF, 2, huge), slice(MID, 0, u64::MAX)];
    let folded = folded_text(&file(&callsites(), &[(1, main)]));
    assert!(folded.contains(&format!("main;mid;leaf {}", u64::MAX)), "{folded}");
}

/// `depth` nested begin/end pairs of `frame` on thread 1: level j spans `[j, 2·depth − 1 − j]`,
/// so each has a self time of 2 ns but the innermost, 1 ns.
fn nested_frames(depth: u64) -> Vec<u8> {
    let begins = (0..depth).map(|i| mark(FRAME_BEGIN, i));
    let ends = (0..depth).map(|k| mark(FRAME_END, depth + k));
    file(&callsites(), &[(1, begins.chain(ends).collect())])
}

#[test]
fn stacks_deeper_than_the_cap_fold_under_one_marker_frame_and_are_counted() {
    let depth = crate::DEFAULT_MAX_DEPTH as u64;
    let (folded, failure) = fold(Reader::new(nested_frames(1000).as_slice()).unwrap());
    assert!(failure.is_none());
    // One line per level down to the cap, then the 744 deeper frames together by name.
    assert_eq!(folded.stacks.len() as u64, depth + 1);
    assert_eq!(u64::from(folded.summary.truncated), 1000 - depth);
    let (deepest, ns) = folded.stacks.iter().max_by_key(|(s, _)| s.len()).unwrap();
    let frames: Vec<&str> = deepest.split(';').collect();
    assert_eq!(frames.len() as u64, 1 + depth + 2, "{deepest}");
    assert_eq!(frames[1 + depth as usize..], ["[deeper than 256]", "frame"]);
    assert_eq!(*ns, 2 * (1000 - depth - 1) + 1);
    // Nothing is lost: the self times add up to the outermost frame's duration.
    assert_eq!(folded.stacks.iter().map(|(_, ns)| ns).sum::<u64>(), 2 * 1000 - 1);
}

#[test]
fn a_flame_graph_of_stacks_deeper_than_the_cap_says_so_in_its_subtitle() {
    let mut svg = Vec::new();
    let summary =
        write_flamegraph(Reader::new(nested_frames(300).as_slice()).unwrap(), &mut svg, "t").unwrap();
    assert_eq!(summary.truncated as usize, 300 - crate::DEFAULT_MAX_DEPTH);
    let svg = String::from_utf8(svg).unwrap();
    assert!(svg.contains("44 slices nested deeper than 256 are drawn by name under [deeper than 256]"));
}

/// A file of `callsites` and `chunks` of thread ids and records, with these thread names.
fn named_file(callsites: &[CallsiteInfo], names: &[(u32, &str)], chunks: &[(u32, Vec<Record>)]) -> Vec<u8> {
    let mut w = Writer::new(Vec::new(), &header(clock(1.0))).unwrap();
    w.write_callsites(callsites).unwrap();
    w.write_thread_names(names.iter().copied()).unwrap();
    for (seq, (tid, records)) in chunks.iter().enumerate() {
        w.write_chunk(*tid, seq as u64, records, |_, _| "").unwrap();
    }
    w.finish(&Trailer::default()).unwrap()
}

#[test]
fn stacks_come_in_the_order_of_their_text_though_it_is_never_made_to_sort_them() {
    // Names that are prefixes of others, followed by bytes below and above `;`.
    let names = ["f", "f2", "f 3", "f!", "fa", "g", "f\t", "f;x"];
    let sites: Vec<CallsiteInfo> =
        names.iter().enumerate().map(|(i, n)| callsite(16 + i as u32, n, Phase::Complete)).collect();
    let mut chunks = Vec::new();
    for tid in [1, 2, 3, 4, 10] {
        let mut records = Vec::new();
        let mut at = 0;
        for outer in 0..names.len() as u32 {
            for inner in 0..names.len() as u32 {
                records.push(slice(16 + inner, at + 2, 3));
                records.push(slice(16 + outer, at, 10 + u64::from(tid)));
                at += 100;
            }
        }
        chunks.push((tid, records));
    }
    // Thread 4 has thread 1's name; 3 and 10 have none ("thread 3", "thread 10").
    let bytes = named_file(&sites, &[(1, "a"), (2, "a b"), (4, "a")], &chunks);
    let (folded, _) = fold(Reader::new(bytes.as_slice()).unwrap());
    assert!(folded.stacks.len() > 300);
    assert!(folded.stacks.windows(2).all(|w| w[0] <= w[1]), "{:#?}", folded.stacks);
    assert!(folded.stacks.iter().any(|(s, _)| s == "thread 10;f_x;f\t"));
}

#[test]
fn a_flame_graph_of_the_frames_it_can_draw_is_the_flame_graph_of_every_frame() {
    // Under `big`: 5,000 frames of 1 ns each, too narrow to draw (under 0.01% of the total),
    // among two wide ones; on thread 2, a thread too narrow to draw.
    let mut sites = vec![callsite(16, "big", Phase::Complete), callsite(17, "leaf_2500x", Phase::Complete)];
    sites.extend((0..5000).map(|i| callsite(100 + i, &format!("leaf_{i:04}"), Phase::Complete)));
    let mut main: Vec<Record> = (0..5000).map(|i| slice(100 + i, 10 + 100 * u64::from(i), 1)).collect();
    main.push(slice(17, 600_000, 50_000));
    main.push(slice(16, 0, 1_000_000));
    main.push(slice(17, 1_000_000, 20_000));
    let bytes = named_file(&sites, &[(1, "main"), (2, "tiny")], &[(1, main), (2, vec![slice(100, 5, 3)])]);
    let (stacks, _, _) = stacks(Reader::new(bytes.as_slice()).unwrap());
    let draw = |lines: &mut dyn Iterator<Item = &str>| {
        let mut options = inferno::flamegraph::Options::default();
        options.hash = true;
        let mut svg = Vec::new();
        inferno::flamegraph::from_lines(&mut options, lines, &mut svg).unwrap();
        String::from_utf8(svg).unwrap()
    };
    let every: Vec<String> = stacks.to_vec().iter().map(|(s, ns)| format!("{s} {ns}")).collect();
    let drawable = stacks.flame_lines(inferno::flamegraph::Options::default().min_width, usize::MAX).unwrap();
    assert_eq!(every.len(), 5004);
    assert!(drawable.lines().count() < 80, "{drawable}");
    assert_eq!(draw(&mut drawable.lines()), draw(&mut every.iter().map(String::as_str)));
}

/// `depth` nested begin/end pairs on thread 1, each of its own name of `name_bytes` bytes (level
/// j's name starts with j), each with a self time of 2 ns but the innermost, 1 ns.
fn nested_long_names(depth: u32, name_bytes: usize) -> Vec<u8> {
    let mut sites = Vec::new();
    for j in 0..depth {
        let name = format!("{j:06}{}", "n".repeat(name_bytes - 6));
        sites.push(callsite(100 + 2 * j, &name, Phase::Begin));
        sites.push(callsite(101 + 2 * j, &name, Phase::End));
    }
    let d = u64::from(depth);
    let begins = (0..depth).map(|j| mark(100 + 2 * j, u64::from(j)));
    let ends = (0..depth).rev().map(|j| mark(101 + 2 * j, 2 * d - 1 - u64::from(j)));
    file(&sites, &[(1, begins.chain(ends).collect())])
}

#[test]
fn names_longer_than_the_limit_are_folded_cut_and_counted() {
    let (folded, failure) = fold(Reader::new(nested_long_names(20, 2000).as_slice()).unwrap());
    assert!(failure.is_none());
    assert_eq!(folded.summary.names_cut, 20);
    assert_eq!(folded.stacks.len(), 20);
    for (stack, _) in &folded.stacks {
        for frame in stack.split(';').skip(1) {
            assert!(frame.len() <= MAX_NAME_BYTES + crate::NAME_CUT_MARK.len(), "{}", frame.len());
            assert!(frame.ends_with(crate::NAME_CUT_MARK));
        }
    }
    // Cut names stay apart where they differ before the cut: 20 levels, 20 frames deep.
    assert_eq!(folded.stacks.iter().map(|(s, _)| s.split(';').count()).max(), Some(21));
}

#[test]
fn a_flame_graph_too_big_to_hold_merges_its_narrowest_frames_and_says_so() {
    // Spelled out, these stacks take 600 × 258 frames of 515 bytes: 80 MB, over the budget.
    let bytes = nested_long_names(600, 600);
    let mut svg = Vec::new();
    let summary = write_flamegraph(Reader::new(bytes.as_slice()).unwrap(), &mut svg, "t").unwrap();
    assert_eq!(summary.names_cut, 600);
    let svg = String::from_utf8(svg).unwrap();
    assert!(svg.contains("600 names longer than 512 bytes are cut"), "{}", &svg[..2000]);
    let note = svg.find("frames narrower than ").expect("the subtitle says frames were merged");
    let note = &svg[note..svg[note..].find('<').map_or(svg.len(), |end| note + end)];
    assert!(note.ends_with("% are not drawn, to keep the graph&apos;s text under 32 MiB"), "{note}");
    // The outermost frames, the widest, are still drawn.
    assert!(svg.contains("000000nnn"));
}

#[test]
fn a_lock_named_at_run_time_folds_under_its_name_with_the_phase() {
    let text = folded_text(&crate::test_files::lock_trace_file());
    let frames: Vec<&str> =
        text.lines().map(|l| l.rsplit_once(' ').unwrap().0.split(';').next_back().unwrap()).collect();
    assert_eq!(frames, ["shard-1 (held)", "shard-1 (wait)", "table (held)", "table (wait)"], "{text}");
}

//! The system tables (`switches`, `off_cpu`, `samples`, `frames`, `heap`, `mappings`) and
//! `allocations`: their rows against what the traces were made of, and the per-scope figures
//! of SQL joins against `phosphor stats`' (off-CPU time blocked and preempted, switches, CPU
//! samples by leaf function, allocations per path).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
#[cfg(feature = "engine")]
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, UInt64Type};
use arrow::record_batch::RecordBatch;
use phosphor_craft::system as craft;
#[cfg(feature = "engine")]
use phosphor_export::symbolize::Symbolizer;
#[cfg(feature = "engine")]
use phosphor_export::system::SystemContext;
#[cfg(feature = "engine")]
use phosphor_export::{StatsBuilder, TraceStats};
use phosphor_format::file::Reader;
use phosphor_format::system::{SampleKind, SwitchKind};
use phosphor_sql::{read_from, Table};

use crate::system_files::{app, crafted, Crafted, MAPPED_PATH};

/// The rows of `table` read from `bytes` in batches of `batch_rows`, as one batch per read batch.
fn batches(bytes: &[u8], table: Table, batch_rows: usize) -> Vec<RecordBatch> {
    crate::slices::batches(bytes, table, batch_rows)
}

/// Column `name` of every batch, as text (`NULL` as "∅"), one string per row.
fn text(batches: &[RecordBatch], name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for b in batches {
        let col = b.column_by_name(name).unwrap_or_else(|| panic!("column {name}"));
        let col: ArrayRef = cast(col, &DataType::Utf8).unwrap();
        let col = col.as_string::<i32>();
        out.extend((0..col.len()).map(|i| {
            if col.is_null(i) {
                "∅".to_owned()
            } else {
                col.value(i).to_owned()
            }
        }));
    }
    out
}

/// Column `name` of every batch as `u64` (`NULL` as `None`).
fn numbers(batches: &[RecordBatch], name: &str) -> Vec<Option<u64>> {
    let mut out = Vec::new();
    for b in batches {
        let col = cast(b.column_by_name(name).unwrap(), &DataType::UInt64).unwrap();
        let col = col.as_primitive::<UInt64Type>();
        out.extend((0..col.len()).map(|i| (!col.is_null(i)).then(|| col.value(i))));
    }
    out
}

fn all(batches: &[RecordBatch], name: &str) -> Vec<u64> {
    numbers(batches, name).into_iter().map(|n| n.expect("not null")).collect()
}

const MS: u64 = 1_000_000;

#[test]
fn the_crafted_system_trace_makes_rows_of_its_known_figures() {
    let bytes = craft::system_trace().unwrap();
    let switches = batches(&bytes, Table::Switches, 100);
    assert_eq!(text(&switches, "thread"), ["main", "main"]);
    assert_eq!(all(&switches, "tid"), [101, 101]);
    assert_eq!(all(&switches, "ts"), [10 * MS, 60 * MS]);
    assert_eq!(text(&switches, "kind"), ["blocked", "in"]);
    assert_eq!(numbers(&switches, "cpu"), [Some(0), Some(0)]);

    let off = batches(&bytes, Table::OffCpu, 100);
    assert_eq!(
        (all(&off, "ts"), all(&off, "end_ts"), all(&off, "dur")),
        (vec![10 * MS], vec![60 * MS], vec![50 * MS])
    );
    assert_eq!(text(&off, "reason"), ["blocked"]);

    let samples = batches(&bytes, Table::Samples, 3);
    assert_eq!(all(&samples, "id"), [1, 2, 3, 4]);
    assert_eq!(all(&samples, "ts"), [5 * MS, 70 * MS, 75 * MS, 92 * MS]);
    assert_eq!(text(&samples, "kind"), ["cpu"; 4]);
    assert_eq!(numbers(&samples, "bytes"), [None; 4]);
    assert_eq!(text(&samples, "leaf"), ["app+0x1000", "app+0x3000", "app+0x3000", "app+0x1000"]);
    assert_eq!(all(&samples, "stack_depth"), [2, 2, 2, 1]);
    let stacks = all(&samples, "stack_id");
    assert_eq!((stacks[1], stacks.len()), (stacks[2], 4), "one stack, one number");
    assert!(stacks[0] != stacks[1] && stacks[0] != stacks[3] && stacks[1] != stacks[3], "{stacks:?}");

    // Each distinct stack's frames once, leaf first; a return address is named by its own
    // offset (looked up one byte before it, in the call).
    let frames = batches(&bytes, Table::Frames, 100);
    let rows: Vec<(u64, u64, u64, String, u64, String)> = (0..all(&frames, "stack_id").len())
        .map(|i| {
            (
                all(&frames, "stack_id")[i],
                all(&frames, "depth")[i],
                all(&frames, "address_index")[i],
                text(&frames, "function")[i].clone(),
                all(&frames, "address")[i],
                text(&frames, "module")[i].clone(),
            )
        })
        .collect();
    let m = craft::MAPPED_PATH.to_owned();
    assert_eq!(
        rows,
        [
            (stacks[0], 0, 0, "app+0x1000".into(), craft::LEAF_A, m.clone()),
            (stacks[0], 1, 1, "app+0x2000".into(), craft::CALLER, m.clone()),
            (stacks[1], 0, 0, "app+0x3000".into(), craft::LEAF_B, m.clone()),
            (stacks[1], 1, 1, "app+0x2000".into(), craft::CALLER, m.clone()),
            (stacks[3], 0, 0, "app+0x1000".into(), craft::LEAF_A, m.clone()),
        ]
    );
    assert_eq!(text(&frames, "file"), ["∅"; 5]);
    assert_eq!(text(&frames, "inlined"), ["false"; 5]);

    let heap = batches(&bytes, Table::Heap, 100);
    assert_eq!(all(&heap, "ts"), [0, 50 * MS, 100 * MS]);
    assert_eq!(text(&heap, "live_bytes"), ["0", "40000", "51200"]);
    assert_eq!(all(&heap, "frees"), [0, 0, 200]);

    let mappings = batches(&bytes, Table::Mappings, 100);
    assert_eq!(text(&mappings, "path"), [craft::MAPPED_PATH]);
    assert_eq!(all(&mappings, "start_address"), [craft::MAPPING_START]);
    assert_eq!(text(&mappings, "build_id"), ["42".repeat(20)]);

    // Each scope's allocations, with its slice.
    let allocs = batches(&bytes, Table::Allocations, 100);
    let slices = batches(&bytes, Table::Slices, 100);
    let slice_of: HashMap<u64, String> = all(&slices, "id").into_iter().zip(text(&slices, "path")).collect();
    let mut got: Vec<(String, u64, u64, u64)> = (0..allocs.iter().map(RecordBatch::num_rows).sum())
        .map(|i| {
            let id = all(&allocs, "slice_id")[i];
            assert_eq!(slice_of[&id], text(&allocs, "path")[i], "the slice's path");
            (
                text(&allocs, "path")[i].clone(),
                all(&allocs, "ts")[i],
                all(&allocs, "allocs")[i],
                all(&allocs, "bytes")[i],
            )
        })
        .collect();
    got.sort();
    assert_eq!(got, [("work".into(), 0, 1000, 64_000), ("work/inner".into(), 62 * MS, 200, 12_800)]);
    assert_eq!(text(&allocs, "thread"), ["main", "main"]);
}

#[test]
fn the_system_rows_are_the_switches_samples_and_intervals_written() {
    for seed in 1..=4 {
        let c = crafted(seed);
        // Small batches: rows cross batch boundaries.
        let switches = batches(&c.bytes, Table::Switches, 7);
        let (tid, ts) = (all(&switches, "tid"), all(&switches, "ts"));
        let (kinds, cpu) = (text(&switches, "kind"), numbers(&switches, "cpu"));
        let mut got: Vec<(u64, u64, String, Option<u64>)> =
            (0..tid.len()).map(|i| (tid[i], ts[i], kinds[i].clone(), cpu[i])).collect();
        assert_eq!(got.len(), switches.iter().map(RecordBatch::num_rows).sum::<usize>());
        let kind = |k| match k {
            SwitchKind::Out => "blocked",
            SwitchKind::Preempted => "preempted",
            SwitchKind::In => "in",
        };
        let mut expected: Vec<(u64, u64, String, Option<u64>)> = c
            .switches
            .iter()
            .map(|s| {
                (
                    u64::from(s.tid),
                    s.time_ns,
                    kind(s.kind).to_owned(),
                    (s.cpu != u32::MAX).then_some(u64::from(s.cpu)),
                )
            })
            .collect();
        got.sort();
        expected.sort();
        assert_eq!(got, expected, "seed {seed}");

        let off = batches(&c.bytes, Table::OffCpu, 5);
        let n = off.iter().map(RecordBatch::num_rows).sum::<usize>();
        let (ends, durs, starts) = (numbers(&off, "end_ts"), numbers(&off, "dur"), all(&off, "ts"));
        let (tids, reasons) = (all(&off, "tid"), text(&off, "reason"));
        let mut got: Vec<(u32, u64, Option<u64>, bool)> = (0..n)
            .map(|i| {
                assert_eq!(durs[i], ends[i].map(|e| e - starts[i]));
                (tids[i] as u32, starts[i], ends[i], reasons[i] == "preempted")
            })
            .collect();
        got.sort();
        let mut expected = c.off.clone();
        expected.sort();
        assert_eq!(got, expected, "seed {seed}");
        assert!(expected.iter().any(|o| o.2.is_none()) && expected.iter().any(|o| o.3), "the trace has both");

        check_samples_and_frames(&c, seed);

        // Each scope's allocation counts, on its own row with its thread, start and path.
        let allocs = batches(&c.bytes, Table::Allocations, 3);
        let (tids, ts, paths) = (all(&allocs, "tid"), all(&allocs, "ts"), text(&allocs, "path"));
        let (counts, bytes) = (all(&allocs, "allocs"), all(&allocs, "bytes"));
        let mut got: Vec<(u64, u64, String, u64, u64)> =
            (0..tids.len()).map(|i| (tids[i], ts[i], paths[i].clone(), counts[i], bytes[i])).collect();
        got.sort();
        let mut expected: Vec<(u64, u64, String, u64, u64)> = c
            .scopes
            .iter()
            .filter_map(|s| {
                let (a, b) = s.allocs?;
                Some((u64::from(s.tid), s.start, s.path.to_owned(), a, b))
            })
            .collect();
        expected.sort();
        assert_eq!(got, expected, "seed {seed}");
        assert!(c.scopes.iter().any(|s| s.allocs.is_none()), "some scopes have no counts");
        // And the slices are the scopes written (the `scope_alloc` events none of them).
        let slices = batches(&c.bytes, Table::Slices, 50);
        let (tids, ts, durs, paths) =
            (all(&slices, "tid"), all(&slices, "ts"), all(&slices, "dur"), text(&slices, "path"));
        let mut got: Vec<(u64, u64, u64, String)> =
            (0..tids.len()).map(|i| (tids[i], ts[i], durs[i], paths[i].clone())).collect();
        got.sort();
        let mut expected: Vec<(u64, u64, u64, String)> = c
            .scopes
            .iter()
            .map(|s| (u64::from(s.tid), s.start, s.end - s.start, s.path.to_owned()))
            .collect();
        expected.sort();
        assert_eq!(got, expected, "seed {seed}");

        let heap = batches(&c.bytes, Table::Heap, 2);
        assert_eq!(all(&heap, "ts"), c.heap.iter().map(|h| h.time_ns).collect::<Vec<_>>());
        let live: Vec<String> = c.heap.iter().map(|h| h.live_bytes().to_string()).collect();
        assert_eq!(text(&heap, "live_bytes"), live);
    }
}

/// A sample row's kind, bytes, stack id, leaf and stack depth.
type SampleCells = (String, Option<u64>, u64, String, u64);

fn check_samples_and_frames(c: &Crafted, seed: u64) {
    let samples = batches(&c.bytes, Table::Samples, 9);
    let n = samples.iter().map(RecordBatch::num_rows).sum::<usize>();
    assert_eq!(n, c.samples.len());
    let ids = all(&samples, "id");
    assert_eq!(ids, (1..=n as u64).collect::<Vec<_>>(), "numbered in file order");
    // By (tid, time): kind, bytes, stack, leaf, depth.
    let mut rows: HashMap<(u64, u64), SampleCells> = HashMap::new();
    let (tids, ts, kinds) = (all(&samples, "tid"), all(&samples, "ts"), text(&samples, "kind"));
    let (bytes, stacks) = (numbers(&samples, "bytes"), all(&samples, "stack_id"));
    let (leaves, depths) = (text(&samples, "leaf"), all(&samples, "stack_depth"));
    for i in 0..n {
        let key = (tids[i], ts[i]);
        let row = (kinds[i].clone(), bytes[i], stacks[i], leaves[i].clone(), depths[i]);
        assert!(rows.insert(key, row).is_none());
    }
    let frames = batches(&c.bytes, Table::Frames, 4);
    let mut by_stack: BTreeMap<u64, Vec<(u64, u64, String, u64)>> = BTreeMap::new();
    let (stacks, depths, addresses) =
        (all(&frames, "stack_id"), all(&frames, "depth"), all(&frames, "address"));
    let (functions, places) = (text(&frames, "function"), all(&frames, "address_index"));
    assert!(text(&frames, "module").iter().all(|m| m == MAPPED_PATH));
    for i in 0..stacks.len() {
        let row = (depths[i], addresses[i], functions[i].clone(), places[i]);
        by_stack.entry(stacks[i]).or_default().push(row);
    }
    let mut stack_of: HashMap<Vec<u64>, u64> = HashMap::new();
    for s in &c.samples {
        let (kind, bytes, stack, leaf, depth) = &rows[&(u64::from(s.tid), s.time_ns)];
        match s.kind {
            SampleKind::Cpu => assert_eq!((kind.as_str(), *bytes), ("cpu", None)),
            SampleKind::Allocation { bytes: b } => {
                assert_eq!((kind.as_str(), *bytes), ("allocation", Some(b)))
            }
        }
        assert_eq!(*leaf, app(s.frames[0]), "seed {seed}");
        assert_eq!(*depth, s.frames.len() as u64);
        // One number per distinct stack, whose frames are the stack's, leaf first.
        assert_eq!(*stack_of.entry(s.frames.clone()).or_insert(*stack), *stack, "seed {seed}");
        let expected: Vec<(u64, u64, String, u64)> =
            s.frames.iter().enumerate().map(|(i, &a)| (i as u64, a, app(a), i as u64)).collect();
        assert_eq!(by_stack[stack], expected);
    }
    assert_eq!(by_stack.len(), stack_of.len(), "each stack's frames once");
}

/// The statistics of `bytes` with its system context, as `phosphor stats` reads a file.
#[cfg(feature = "engine")]
pub fn stats(bytes: &[u8]) -> TraceStats {
    let mut ctx = SystemContext::read(Reader::new(bytes).unwrap()).unwrap();
    ctx.name_leaves(&mut Symbolizer::new());
    let reader = Reader::new(bytes).unwrap();
    StatsBuilder::new(&reader.header().clock).system(Arc::new(ctx)).read(reader).unwrap()
}

/// The tables of `bytes` in a session, from a file in the scratch folder.
#[cfg(feature = "engine")]
pub fn session(bytes: &[u8], test: &str) -> phosphor_sql::Session {
    let dir = crate::files::scratch(test);
    let file = dir.join("t.phos");
    std::fs::write(&file, bytes).unwrap();
    phosphor_sql::Session::new(&[phosphor_sql::TraceSource::new(&file)], None).expect("a session")
}

/// Rows of a query as text, each row's cells joined by `|`, sorted.
#[cfg(feature = "engine")]
pub fn query(session: &phosphor_sql::Session, sql: &str) -> Vec<String> {
    let batches = session.query(sql).unwrap_or_else(|e| panic!("{e}\n{sql}"));
    let mut rows = Vec::new();
    for b in &batches {
        let cols: Vec<Vec<String>> =
            b.schema().fields().iter().map(|f| text(std::slice::from_ref(b), f.name())).collect();
        for i in 0..b.num_rows() {
            rows.push(cols.iter().map(|c| c[i].as_str()).collect::<Vec<_>>().join("|"));
        }
    }
    rows.sort();
    rows
}

/// docs/SQL.md's query: time blocked and preempted per path.
#[cfg(feature = "engine")]
pub const OFF_CPU_PER_PATH: &str = "
SELECT s.path,
       count(DISTINCT s.id) AS slices,
       coalesce(sum(CASE WHEN o.reason IS NOT NULL
                         THEN least(s.ts + s.dur, coalesce(o.end_ts, s.ts + s.dur)) - greatest(s.ts, o.ts) END), 0) AS off_cpu,
       coalesce(sum(CASE WHEN o.reason = 'blocked'
                         THEN least(s.ts + s.dur, coalesce(o.end_ts, s.ts + s.dur)) - greatest(s.ts, o.ts) END), 0) AS blocked,
       coalesce(sum(CASE WHEN o.reason = 'preempted'
                         THEN least(s.ts + s.dur, coalesce(o.end_ts, s.ts + s.dur)) - greatest(s.ts, o.ts) END), 0) AS preempted
FROM slices s
LEFT JOIN off_cpu o
  ON o.trace = s.trace AND o.tid = s.tid AND o.ts < s.ts + s.dur AND (o.end_ts IS NULL OR o.end_ts > s.ts)
WHERE s.dur IS NOT NULL
GROUP BY s.path";

#[cfg(feature = "engine")]
#[test]
fn off_cpu_time_per_scope_by_sql_equals_the_statistics_and_the_switches_written() {
    for seed in 1..=3 {
        let c = crafted(seed);
        let s = stats(&c.bytes);
        let session = session(&c.bytes, &format!("off-cpu-{seed}"));
        let got = query(&session, OFF_CPU_PER_PATH);
        let from_stats: Vec<String> = {
            let mut rows: Vec<String> = s
                .paths()
                .iter()
                .map(|k| {
                    let sys = k.system.as_deref().cloned().unwrap_or_default();
                    let blocked = sys.off_cpu_ns - sys.preempted_ns;
                    format!(
                        "{}|{}|{}|{blocked}|{}",
                        k.path_string(),
                        k.count,
                        sys.off_cpu_ns,
                        sys.preempted_ns
                    )
                })
                .collect();
            rows.sort();
            rows
        };
        assert_eq!(got, from_stats, "seed {seed}");
        // And as the switches written say, scope by scope.
        let mut truth: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
        for sc in &c.scopes {
            let e = truth.entry(sc.path).or_default();
            e.0 += 1;
            for &(tid, start, end, preempted) in &c.off {
                let overlap = end.unwrap_or(u64::MAX).min(sc.end).saturating_sub(start.max(sc.start));
                if tid == sc.tid {
                    e.1 += overlap;
                    e.2 += if preempted { overlap } else { 0 };
                }
            }
        }
        let mut truth: Vec<String> =
            truth.iter().map(|(p, (n, off, pre))| format!("{p}|{n}|{off}|{}|{pre}", off - pre)).collect();
        truth.sort();
        assert_eq!(got, truth, "seed {seed}");
        assert!(truth.iter().all(|r| !r.contains("|0|0|0")), "every path was off the CPU: {truth:?}");

        // Switches out inside each scope, as the statistics count them.
        let got = query(
            &session,
            "SELECT s.path, count(w.ts) FROM slices s LEFT JOIN switches w
               ON w.trace = s.trace AND w.tid = s.tid AND w.kind <> 'in' AND w.ts >= s.ts AND w.ts < s.ts + s.dur
             GROUP BY s.path",
        );
        let mut expected: Vec<String> = s
            .paths()
            .iter()
            .map(|k| format!("{}|{}", k.path_string(), k.system.as_ref().map_or(0, |x| x.switches)))
            .collect();
        expected.sort();
        assert_eq!(got, expected, "seed {seed}");
    }
}

/// docs/SQL.md's query: CPU samples per leaf function inside the scopes of one path.
#[cfg(feature = "engine")]
pub const SAMPLES_PER_LEAF: &str = "
SELECT s.path, sm.leaf, count(*) AS samples
FROM slices s
JOIN samples sm ON sm.trace = s.trace AND sm.tid = s.tid AND sm.ts >= s.ts AND sm.ts < s.ts + s.dur
WHERE sm.kind = 'cpu'
GROUP BY s.path, sm.leaf";

#[cfg(feature = "engine")]
#[test]
fn cpu_samples_per_function_inside_a_scope_by_sql_equal_the_statistics() {
    let c = crafted(5);
    let s = stats(&c.bytes);
    let session = session(&c.bytes, "samples-per-function");
    let got = query(&session, SAMPLES_PER_LEAF);
    let mut expected = Vec::new();
    for k in s.paths() {
        let sys = k.system.as_deref().cloned().unwrap_or_default();
        // At most 3 leaves: the statistics' top functions are all of them.
        assert_eq!(sys.functions.iter().map(|f| f.1).sum::<u64>(), sys.samples);
        expected.extend(sys.functions.iter().map(|(f, n)| format!("{}|{f}|{n}", k.path_string())));
    }
    expected.sort();
    assert!(expected.len() >= 4, "{expected:?}");
    assert_eq!(got, expected);

    // Samples whose stack holds a function anywhere, inside `frame` scopes: through `frames`.
    let got = query(
        &session,
        "SELECT f.function, count(DISTINCT sm.id) FROM slices s
           JOIN samples sm ON sm.trace = s.trace AND sm.tid = s.tid AND sm.ts >= s.ts AND sm.ts < s.ts + s.dur
           JOIN frames f ON f.trace = sm.trace AND f.stack_id = sm.stack_id
         WHERE s.name = 'frame' AND sm.kind = 'cpu'
         GROUP BY f.function",
    );
    let mut truth: BTreeMap<String, u64> = BTreeMap::new();
    for sm in c.samples.iter().filter(|x| x.kind == SampleKind::Cpu) {
        let inside = c.scopes.iter().any(|sc| {
            sc.path == "frame" && sc.tid == sm.tid && sc.start <= sm.time_ns && sm.time_ns < sc.end
        });
        if inside {
            let mut names: Vec<String> = sm.frames.iter().map(|&a| app(a)).collect();
            names.dedup();
            for n in names {
                *truth.entry(n).or_default() += 1;
            }
        }
    }
    let truth: Vec<String> = truth.iter().map(|(f, n)| format!("{f}|{n}")).collect();
    assert!(truth.len() >= 4, "{truth:?}");
    assert_eq!(got, truth);
}

/// docs/SQL.md's query: allocations per path.
#[cfg(feature = "engine")]
pub const ALLOCATIONS_PER_PATH: &str =
    "SELECT path, count(*), sum(allocs), sum(bytes) FROM allocations GROUP BY path";

#[cfg(feature = "engine")]
#[test]
fn allocations_per_path_by_sql_equal_the_statistics_and_the_counts_written() {
    let c = crafted(6);
    let s = stats(&c.bytes);
    let session = session(&c.bytes, "allocations");
    let got = query(&session, ALLOCATIONS_PER_PATH);
    let mut expected: Vec<String> = s
        .paths()
        .iter()
        .filter_map(|k| {
            let sys = k.system.as_deref()?;
            (sys.alloc_scopes > 0).then(|| {
                format!("{}|{}|{}|{}", k.path_string(), sys.alloc_scopes, sys.allocs, sys.alloc_bytes)
            })
        })
        .collect();
    expected.sort();
    assert_eq!(got, expected);
    let mut truth: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
    for sc in &c.scopes {
        if let Some((a, b)) = sc.allocs {
            let e = truth.entry(sc.path).or_default();
            *e = (e.0 + 1, e.1 + a, e.2 + b);
        }
    }
    let mut truth: Vec<String> = truth.iter().map(|(p, (n, a, b))| format!("{p}|{n}|{a}|{b}")).collect();
    truth.sort();
    assert_eq!(got, truth);
    // Each row's slice is the scope it counts.
    let orphans = query(
        &session,
        "SELECT count(*) FROM allocations a LEFT JOIN slices s ON s.trace = a.trace AND s.id = a.slice_id
         WHERE s.id IS NULL OR s.path <> a.path OR s.ts <> a.ts OR s.tid <> a.tid",
    );
    assert_eq!(orphans, ["0"]);
}

#[test]
fn a_damaged_system_block_is_an_error_naming_the_file_and_the_byte_never_a_panic() {
    let c = crafted(7);
    let tables = [
        Table::Switches,
        Table::OffCpu,
        Table::Samples,
        Table::Frames,
        Table::Allocations,
        Table::Heap,
        Table::Mappings,
    ];
    let mut errors = 0;
    // Cuts and flipped bytes all over the file, the system blocks' among them.
    for at in (64..c.bytes.len()).step_by(97) {
        for damaged in [c.bytes[..at].to_vec(), {
            let mut b = c.bytes.clone();
            b[at] ^= 0x5a;
            b
        }] {
            let Ok(reader) = Reader::new(&damaged[..]) else { continue };
            let r = read_from(reader, Path::new("damaged.phos"), "t", &tables, 16, |_, _| Ok(()));
            if let Err(e) = r {
                let text = e.to_string();
                assert!(text.contains("damaged.phos") && text.contains("byte"), "{text}");
                errors += 1;
            }
        }
    }
    assert!(errors > 10, "{errors}");
}

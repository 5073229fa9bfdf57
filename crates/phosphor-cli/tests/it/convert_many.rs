//! `phosphor convert A B …` and `phosphor convert DIR`: several trace files on one timeline, a
//! process per file; from two real processes (same boot: `CLOCK_MONOTONIC`), from crafted headers
//! of two machines (the wall clock, with a warning), and from the old golden files.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use phosphor::format::file::{CallsiteInfo, ClockInfo, Header, Reader, Trailer, Writer};
use phosphor::format::{Meta, Phase, Record};
use serde_json::Value;

use crate::cli::{check_pftrace, phosphor, scratch, stderr, stdout};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../phosphor-format/tests/data");

/// `phosphor convert FILES… --to TO -o OUT`, as test `test`.
fn convert(test: &str, files: &[&str], to: &str, out: &str) -> std::process::Output {
    phosphor(test, &[&["convert"], files, &["--to", to, "-o", out]].concat())
}

/// The child of `two_processes_recorded_one_after_the_other_share_one_time_axis`: records
/// `first`, then (as process `a`) says so and waits for a line on stdin, then records `last` and
/// saves the trace where `PHOSPHOR_TEST_MERGE_OUT` says.
#[test]
#[ignore = "run as a child process by two_processes_recorded_one_after_the_other_share_one_time_axis"]
fn merge_child() {
    use phosphor::{trace_instant, BufferMode, TraceConfig, TraceLog, TraceLogConfig};
    let out = std::env::var_os("PHOSPHOR_TEST_MERGE_OUT").expect("run by the parent test");
    let log = TraceLog::new(TraceLogConfig::new().clock(phosphor::ClockKind::Monotonic)).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    trace_instant!(log: &log, "merge", "first");
    if std::env::var("PHOSPHOR_TEST_MERGE_WAIT").is_ok() {
        println!("recorded");
        std::io::stdout().flush().unwrap();
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).unwrap();
    }
    trace_instant!(log: &log, "merge", "last");
    log.stop();
    log.take_trace().unwrap().save(out).unwrap();
}

/// Runs `merge_child` saving to `out`; with `wait`, returns it running once it has recorded
/// `first` (it records `last` and exits after a line on its stdin).
fn child(out: &Path, wait: bool) -> std::process::Child {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--ignored", "--exact", "convert_many::merge_child", "--test-threads=1", "--nocapture"])
        .env("PHOSPHOR_TEST_MERGE_OUT", out)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    if wait {
        c.env("PHOSPHOR_TEST_MERGE_WAIT", "1");
    }
    let mut child = c.spawn().unwrap();
    if wait {
        let stdout = std::io::BufReader::new(child.stdout.as_mut().unwrap());
        // The test harness prints its `test … ... ` before the child's line, on the same line.
        assert!(
            stdout.lines().any(|l| l.unwrap().ends_with("recorded")),
            "the child recorded its first event"
        );
    }
    child
}

/// `(name, absolute CLOCK_MONOTONIC ns)` of every event of a trace file, and its pid.
fn events_of(file: &Path) -> (u32, Vec<(String, i64)>) {
    let bytes = std::fs::read(file).unwrap();
    let mut r = Reader::new(&bytes[..]).unwrap();
    let clock = r.header().clock.clone();
    let pid = r.header().pid;
    let mut events = Vec::new();
    r.for_each_event(|e| {
        events.push((
            e.callsite.name.to_string(),
            clock.origin_monotonic_ns as i64 + clock.since_origin_ns(e.ts),
        ))
    })
    .unwrap();
    (pid, events)
}

/// An instant on the merged timeline: `(pid, name, ts in ns)`.
type Instant = (i64, String, i64);

/// The instants of a checked Perfetto trace: `(pid of their thread, name, ts)`.
fn perfetto_instants(result: &Value) -> Vec<Instant> {
    let mut out = Vec::new();
    for t in result["tracks"].as_array().unwrap() {
        for s in t["slices"].as_array().into_iter().flatten() {
            if s["type"] == "instant" && s["category"] == "merge" {
                out.push((
                    t["pid"].as_i64().unwrap(),
                    s["name"].as_str().unwrap().to_owned(),
                    s["ts"].as_i64().unwrap(),
                ));
            }
        }
    }
    out.sort_by_key(|e| e.2);
    out
}

/// The instants of a Chrome JSON document: `(pid, name, ts in ns)`, and its process names by pid.
fn chrome_instants(doc: &[u8]) -> (Vec<Instant>, Vec<(i64, String)>) {
    let doc: Value = serde_json::from_slice(doc).expect("valid JSON");
    let mut instants = Vec::new();
    let mut processes = Vec::new();
    for e in doc["traceEvents"].as_array().unwrap() {
        let pid = e["pid"].as_i64().unwrap();
        if e["name"] == "process_name" {
            processes.push((pid, e["args"]["name"].as_str().unwrap().to_owned()));
        } else if e["ph"] == "i" && e["cat"] == "merge" {
            let ns = (e["ts"].as_f64().unwrap() * 1000.0).round() as i64;
            instants.push((pid, e["name"].as_str().unwrap().to_owned(), ns));
        }
    }
    instants.sort_by_key(|e| e.2);
    (instants, processes)
}

#[test]
fn two_processes_recorded_one_after_the_other_share_one_time_axis() {
    let dir = scratch("merge-processes-files");
    let (a, b) = (dir.join("a.phos"), dir.join("b.phos"));
    // A records `first`, then B runs whole, then A records `last`.
    let mut first = child(&a, true);
    assert!(child(&b, false).wait().unwrap().success());
    writeln!(first.stdin.as_mut().unwrap()).unwrap();
    assert!(first.wait().unwrap().success());
    let (pid_a, events_a) = events_of(&a);
    let (pid_b, events_b) = events_of(&b);
    assert_ne!(pid_a, pid_b);

    let pftrace = dir.join("merged.pftrace");
    let out = convert(
        "merge-processes",
        &[a.to_str().unwrap(), b.to_str().unwrap()],
        "perfetto",
        pftrace.to_str().unwrap(),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    if std::path::Path::new("/proc/sys/kernel/random/boot_id").exists() {
        assert!(!err.contains("warning"), "one boot: CLOCK_MONOTONIC, no skew warning: {err}");
    }
    assert!(err.contains("from 2 files"), "{err}");
    let result = check_pftrace(&pftrace);
    assert_eq!(result["ok"], true, "{result}");
    let processes: Vec<i64> = result["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "process")
        .map(|t| t["pid"].as_i64().unwrap())
        .collect();
    assert_eq!(processes, [i64::from(pid_a), i64::from(pid_b)], "a process track per file");
    // One boot: each event at its own CLOCK_MONOTONIC time, exactly, so B's inside A's.
    let got = perfetto_instants(&result);
    let named = |pid: u32, events: &[(String, i64)], name: &str| {
        (i64::from(pid), name.to_owned(), events.iter().find(|e| e.0 == name).unwrap().1)
    };
    let want = vec![
        named(pid_a, &events_a, "first"),
        named(pid_b, &events_b, "first"),
        named(pid_b, &events_b, "last"),
        named(pid_a, &events_a, "last"),
    ];
    assert_eq!(got, want);

    // Chrome JSON: the same order and the same differences, from the earliest origin.
    let json = dir.join("merged.json");
    let out = convert(
        "merge-processes",
        &[a.to_str().unwrap(), b.to_str().unwrap()],
        "chrome",
        json.to_str().unwrap(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (instants, processes) = chrome_instants(&std::fs::read(&json).unwrap());
    let names: Vec<(i64, &str)> = instants.iter().map(|e| (e.0, e.1.as_str())).collect();
    assert_eq!(
        names,
        [
            (i64::from(pid_a), "first"),
            (i64::from(pid_b), "first"),
            (i64::from(pid_b), "last"),
            (i64::from(pid_a), "last")
        ]
    );
    let want_first = want[0].2;
    for (got, want) in instants.iter().zip(&want) {
        assert_eq!(got.2 - instants[0].2, want.2 - want_first, "{got:?} vs {want:?}");
    }
    assert_eq!(processes.len(), 2, "a process_name per file: {processes:?}");
}

fn header(pid: u32, mono: u64, wall: u64, boot: Option<[u8; 16]>, host: Option<&str>) -> Header {
    Header {
        clock: ClockInfo::monotonic(mono, wall),
        pid,
        process_name: format!("p{pid}"),
        boot_id: boot,
        host_name: host.map(String::from),
    }
}

/// A file with instant `mark` (category `merge`) at `ticks` (nanoseconds on its CLOCK_MONOTONIC).
fn crafted(path: &Path, header: &Header, ticks: u64) {
    let mut w = Writer::new(Vec::new(), header).unwrap();
    w.write_callsites(&[CallsiteInfo {
        id: 16,
        category: "merge".into(),
        name: "mark".into(),
        phase: Phase::Instant,
        arg_names: [String::new(), String::new()],
        file: "convert_many.rs".into(),
        line: 1,
        name_hash: 0,
        level: None,
        dynamic_name: false,
        flow: false,
    }])
    .unwrap();
    w.write_chunk(1, 0, &[Record::new(ticks, 16, Meta(0), [0; 2])], |_, _| "").unwrap();
    std::fs::write(path, w.finish(&Trailer { recorded: 1, ..Trailer::default() }).unwrap()).unwrap();
}

#[test]
fn files_of_two_machines_are_aligned_by_their_wall_clocks_with_a_warning() {
    let dir = scratch("merge-machines-files");
    let (a, b) = (dir.join("a.phos"), dir.join("b.phos"));
    // A: CLOCK_MONOTONIC 1 s at the wall's 100 s; B, another machine: 5 s at 101 s. Each marks
    // its origin, so B's mark is 1 s after A's: at 2 s on A's CLOCK_MONOTONIC.
    crafted(&a, &header(10, 1_000_000_000, 100_000_000_000, Some([1; 16]), Some("alpha")), 1_000_000_000);
    crafted(&b, &header(20, 5_000_000_000, 101_000_000_000, Some([2; 16]), Some("beta")), 5_000_000_000);
    let pftrace = dir.join("m.pftrace");
    let out = convert(
        "merge-machines",
        &[a.to_str().unwrap(), b.to_str().unwrap()],
        "perfetto",
        pftrace.to_str().unwrap(),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("warning") && err.contains("CLOCK_REALTIME"), "{err}");
    assert!(err.contains(&format!("{} (beta", b.display())) && err.contains("another machine"), "{err}");
    let result = check_pftrace(&pftrace);
    assert_eq!(result["ok"], true, "{result}");
    let got = perfetto_instants(&result);
    assert_eq!(got, [(10, "mark".into(), 1_000_000_000), (20, "mark".into(), 2_000_000_000)]);

    // The same boot id: CLOCK_MONOTONIC as it is, whatever the wall clocks say.
    crafted(&b, &header(20, 5_000_000_000, 101_000_000_000, Some([1; 16]), Some("alpha")), 5_000_000_000);
    let out = convert(
        "merge-machines",
        &[a.to_str().unwrap(), b.to_str().unwrap()],
        "chrome",
        dir.join("m.json").to_str().unwrap(),
    );
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    let (instants, _) = chrome_instants(&std::fs::read(dir.join("m.json")).unwrap());
    assert_eq!(instants, [(10, "mark".into(), 0), (20, "mark".into(), 4_000_000_000)]);
}

#[test]
fn the_old_golden_files_still_convert_one_and_merged_with_a_warning() {
    let dir = scratch("merge-golden-files");
    let v14 = PathBuf::from(GOLDEN).join("golden-v1.4.phtrace");
    let v15 = PathBuf::from(GOLDEN).join("golden-v1.5.phtrace");
    for to in ["perfetto", "chrome"] {
        let file = dir.join(format!("m.{to}"));
        let out = convert(
            "merge-golden",
            &[v14.to_str().unwrap(), v15.to_str().unwrap()],
            to,
            file.to_str().unwrap(),
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("no boot id"), "1.4 has no boot id: the wall clock, said: {err}");
        if to == "perfetto" {
            let result = check_pftrace(&file);
            assert_eq!(result["ok"], true, "{result}");
            assert_eq!(result["sequences"], serde_json::json!([1, 2]));
        } else {
            let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
            let files = doc["otherData"]["files"].as_array().expect("a files list");
            let versions: Vec<&str> = files.iter().map(|f| f["format_version"].as_str().unwrap()).collect();
            assert_eq!(versions, ["1.4", "1.5"]);
            // One pid, two processes: the second file's is moved.
            assert_ne!(files[0]["pid"], files[1]["pid"]);
        }
    }
    // Folded stacks take one file.
    let out = phosphor(
        "merge-golden",
        &["convert", v14.to_str().unwrap(), v15.to_str().unwrap(), "--to", "folded"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--to folded takes one trace file"), "{}", stderr(&out));
}

#[test]
fn a_record_folder_converts_its_trace_files_sorted_by_name_and_says_which() {
    let dir = scratch("merge-dir-files");
    let rec = dir.join("rec");
    std::fs::create_dir_all(&rec).unwrap();
    crafted(&rec.join("b-2-1.phos"), &header(2, 2_000, 1_002_000, Some([1; 16]), None), 2_000);
    crafted(&rec.join("a-1-1.phos"), &header(1, 1_000, 1_001_000, Some([1; 16]), None), 1_000);
    std::fs::write(rec.join("notes.txt"), "not a trace").unwrap();
    let out = phosphor("merge-dir", &["convert", rec.to_str().unwrap(), "--to", "chrome"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("taking 2 trace file(s): a-1-1.phos, b-2-1.phos"), "{err}");
    let (instants, processes) = chrome_instants(&out.stdout);
    assert_eq!(processes, [(1, "p1".into()), (2, "p2".into())], "in name order");
    assert_eq!(instants, [(1, "mark".into(), 0), (2, "mark".into(), 1_000)]);
    let _ = stdout(&out);
}

#[test]
fn a_damaged_file_among_several_is_named_with_its_offset_and_the_others_are_converted() {
    let dir = scratch("merge-damaged-files");
    let (a, b) = (dir.join("a.phos"), dir.join("b.phos"));
    crafted(&a, &header(1, 1_000, 1_001_000, Some([1; 16]), None), 1_000);
    crafted(&b, &header(2, 2_000, 1_002_000, Some([1; 16]), None), 2_000);
    // B loses the end of its trailer: its chunk came whole before the damage.
    let bytes = std::fs::read(&b).unwrap();
    std::fs::write(&b, &bytes[..bytes.len() - 60]).unwrap();
    let json = dir.join("m.json");
    let out = convert(
        "merge-damaged",
        &[b.to_str().unwrap(), a.to_str().unwrap()],
        "chrome",
        json.to_str().unwrap(),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("converting {} stopped early", b.display())), "{err}");
    assert!(err.contains("byte"), "the offset: {err}");
    let (instants, _) = chrome_instants(&std::fs::read(&json).unwrap());
    assert_eq!(instants.iter().map(|e| e.0).collect::<Vec<_>>(), [1, 2], "B's chunk, then A: {instants:?}");
}

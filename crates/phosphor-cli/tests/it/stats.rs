//! `phosphor stats` on the files `phosphor demo` writes, whole, cut short, or missing: tables,
//! JSON, `--top` and `--sort`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cli::{count, phosphor, scratch, stderr, stdout};

/// Runs a small demo; returns its output directory (holding `trace.phos`). Its scratch directory
/// is `TEST-files`: running the binary in the scratch directory of `test` empties that one.
fn demo(test: &str) -> PathBuf {
    demo_with(test, &[])
}

/// [`demo`] with `extra` arguments.
fn demo_with(test: &str, extra: &[&str]) -> PathBuf {
    let dir = scratch(&format!("{test}-files")).join("out");
    let out = phosphor(
        &format!("{test}-demo"),
        &[&["demo", "--threads", "2", "--events", "5000", "--out", dir.to_str().unwrap()], extra].concat(),
    );
    assert!(out.status.success(), "{:?}\n{}\n{}", out.status, stdout(&out), stderr(&out));
    dir
}

fn stats(test: &str, file: &Path, args: &[&str]) -> std::process::Output {
    phosphor(&format!("{test}-stats"), &[&["stats", file.to_str().unwrap()], args].concat())
}

/// What `phosphor info` counts as the events of `file`.
fn info_events(test: &str, file: &Path) -> u64 {
    count(&stdout(&phosphor(&format!("{test}-info"), &["info", file.to_str().unwrap()])), "events")
}

/// The section of `report` that starts with the line starting with `title`, up to a blank line,
/// without the note on percentiles under a table.
fn section<'a>(report: &'a str, title: &str) -> Vec<&'a str> {
    let start = report.find(&format!("\n{title}")).unwrap_or_else(|| panic!("no {title:?} in:\n{report}"));
    let lines = report[start + 1..].lines().take_while(|l| !l.is_empty());
    lines.filter(|l| !l.starts_with("  (p50 and p99")).collect()
}

/// The JSON `phosphor stats --json` prints for `file` with `args`.
fn json(test: &str, file: &Path, args: &[&str]) -> Value {
    let out = stats(test, file, &[&["--json"], args].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("the output is valid JSON")
}

#[test]
fn stats_prints_threads_and_kinds_by_path_per_thread_and_across_threads() {
    let file = demo("stats-text").join("trace.phos");
    let out = stats("stats-text", &file, &[]);
    let report = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{report}\n{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    assert!(report.starts_with(&format!("{}: statistics", file.display())), "{report}");
    assert_eq!(count(&report, "events"), info_events("stats-text", &file), "{report}");

    let threads = section(&report, "threads (");
    for name in ["main", "sink", "worker-0", "worker-1"] {
        assert!(threads.iter().any(|l| l.split_whitespace().nth(1) == Some(name)), "no {name}:\n{report}");
    }
    // The default: the top 20 by total time, per thread (thread, path, type, count, total, ...)…
    let by_thread = section(&report, "kinds by thread (top 20 of ");
    assert_eq!(by_thread.len(), 22, "title, header, 20 rows:\n{report}");
    assert!(
        by_thread.iter().any(|l| l.split_whitespace().take(3).eq(["worker-1", "batch/iteration", "scope"])),
        "{report}"
    );
    // …and across threads, where every scope of the demo has its full path.
    let across = section(&report, "kinds across threads (");
    for path in
        ["batch", "batch/iteration", "batch/iteration/transform/hash", "drain/consume", "queue (wait)"]
    {
        // A lock's name holds a space (`queue (wait)`): the path is the line's start.
        let starts = |l: &&str| l.trim_start().strip_prefix(path).is_some_and(|rest| rest.starts_with(' '));
        assert!(across.iter().any(starts), "no {path}:\n{report}");
    }
    // Scopes have durations (`path type count 1.23 ms …`); instants and counters do not. A path
    // may hold spaces (a log's format string, such as the sink's "sink is behind: {} items in one
    // drain", which the demo logs only when its sink falls behind): the cells after it are found
    // from the header's `type` column.
    let header = across[1];
    let type_col = header[..header.find(" type").expect("a type column") + 1].chars().count();
    for row in &across[2..] {
        let rest: String = row.chars().skip(type_col).collect();
        let cells: Vec<&str> = rest.split_whitespace().collect();
        let timed = ["scope", "lock_wait", "lock_held"].contains(&cells[0]);
        assert_eq!(cells.len(), if timed { 14 } else { 2 }, "{row}");
        assert!(!timed || ["ns", "µs", "ms", "s"].contains(&cells[3]), "{row}");
    }
    assert!(report.contains("every scope nests"), "{report}");
    assert!(section(&report, "async slices (1)").iter().any(|l| l.starts_with("   item")), "{report}");
}

#[test]
fn stats_json_has_the_documented_fields_and_counts_every_event() {
    let file = demo("stats-json").join("trace.phos");
    let v = json("stats-json", &file, &[]);
    assert_eq!(v["schema"], "phosphor-stats/1");
    assert_eq!(v["complete"], true);
    assert_eq!(v["events"].as_u64(), Some(info_events("stats-json", &file)));
    assert_eq!(v["recorded"], v["events"]);
    assert_eq!(v["dropped"]["total"], 0);
    assert_eq!(v["lost_chunks"], 0);
    assert_eq!(v["percentiles"]["relative_error"], 0.001);
    let threads = v["threads"].as_array().unwrap();
    let per_thread: u64 = threads.iter().map(|t| t["events"].as_u64().unwrap()).sum();
    assert_eq!(Some(per_thread), v["events"].as_u64());

    // Without --top, every kind; each per-thread kind names its thread.
    let kinds = v["kinds"].as_array().unwrap();
    assert_eq!(kinds.len() as u64, v["kinds_total"].as_u64().unwrap());
    for k in kinds {
        assert!(k["tid"].is_u64() && k["thread"].is_string() && k["count"].as_u64().unwrap() > 0, "{k}");
        assert!(k["path"].as_array().is_some_and(|p| !p.is_empty()), "{k}");
        let d = &k["durations"];
        match k["type"].as_str().unwrap() {
            "scope" | "lock_wait" | "lock_held" => {
                let ns = |f: &str| d[f].as_u64().unwrap_or_else(|| panic!("{f} in {k}"));
                assert!(ns("min_ns") <= ns("p50_ns") && ns("p50_ns") <= ns("p99_ns"), "{k}");
                assert!(ns("p99_ns") <= ns("max_ns") && ns("mean_ns") <= ns("max_ns"), "{k}");
                assert_eq!(ns("samples"), k["count"].as_u64().unwrap(), "{k}");
                assert!(d["exact_percentiles"].is_boolean());
            }
            "instant" | "counter" | "log" => assert!(d.is_null(), "{k}"),
            other => panic!("type {other}"),
        }
    }
    // The paths add the threads up.
    let iteration = |k: &&Value| k["path"] == serde_json::json!(["batch", "iteration"]);
    let per_thread: u64 = kinds.iter().filter(iteration).map(|k| k["count"].as_u64().unwrap()).sum();
    let paths = v["paths"].as_array().unwrap();
    let across = paths.iter().find(iteration).expect("batch/iteration across threads");
    assert_eq!(across["count"].as_u64(), Some(per_thread));
    assert!(across.get("tid").is_none());
    assert_eq!(v["async"][0]["name"], "item");
    assert_eq!(v["problems"]["count"], 0);
    assert!(v["problems"]["examples"].as_array().unwrap().is_empty());
}

#[test]
fn top_and_sort_choose_and_order_the_rows() {
    let file = demo("stats-top").join("trace.phos");
    for (sort, field) in [("count", "count"), ("max", "max_ns"), ("total", "total_ns")] {
        let v = json("stats-top", &file, &["--top", "5", "--sort", sort]);
        assert_eq!(v["sort"], sort);
        let key =
            |k: &Value| if field == "count" { k["count"].as_u64() } else { k["durations"][field].as_u64() };
        for list in ["kinds", "paths"] {
            let rows: Vec<u64> = v[list].as_array().unwrap().iter().map(|k| key(k).unwrap_or(0)).collect();
            assert_eq!(rows.len(), 5, "{list} by {sort}");
            assert!(rows.windows(2).all(|w| w[0] >= w[1]), "{list} by {sort}: {rows:?}");
        }
        // The largest of them all comes first.
        let all = json("stats-top", &file, &["--sort", sort]);
        let best = all["paths"].as_array().unwrap().iter().filter_map(key).max();
        assert_eq!(key(&v["paths"][0]), best, "{sort}");
    }
    let out = stats("stats-top", &file, &["--top", "3", "--sort", "count"]);
    let report = stdout(&out);
    let across = section(&report, "kinds across threads (top 3 of ");
    assert_eq!(across.len(), 5, "title, header, 3 rows:\n{report}");
    let counts: Vec<u64> = across[2..]
        .iter()
        .map(|l| l.split_whitespace().nth(2).unwrap().replace(',', "").parse().unwrap())
        .collect();
    assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{report}");
    let bad = stats("stats-top", &file, &["--sort", "sideways"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("sideways"), "{}", stderr(&bad));
}

#[test]
fn stats_of_a_truncated_file_prints_the_part_before_the_damage_then_names_it_and_exits_2() {
    // Plain blocks: half of this small file holds whole chunks (a compressed group is read whole
    // or not at all, and its first group is more than half of it).
    let dir = demo_with("stats-truncated", &["--compression", "none"]);
    let whole = std::fs::read(dir.join("trace.phos")).unwrap();
    let cut = dir.join("cut.phos");
    std::fs::write(&cut, &whole[..whole.len() / 2 + 1000]).unwrap();

    let out = stats("stats-truncated", &cut, &[]);
    assert_eq!(out.status.code(), Some(2));
    let (report, err) = (stdout(&out), stderr(&out));
    assert!(err.contains(cut.to_str().unwrap()) && err.contains("ends inside"), "{err}");
    let offset: u64 = err.split("at byte ").nth(1).unwrap().split(':').next().unwrap().parse().unwrap();
    assert!(offset > 0 && offset <= whole.len() as u64 / 2 + 1000, "{err}");
    assert!(report.contains(&format!("INCOMPLETE: read up to byte {offset};")), "{report}");
    let events = count(&report, "events");
    assert_eq!(events, info_events("stats-truncated", &cut), "{report}");
    assert!(events > 0 && events < info_events("stats-truncated-whole", &dir.join("trace.phos")));
    assert!(report.contains("no trailer was read"), "{report}");

    let out = stats("stats-truncated-json", &cut, &["--json"]);
    assert_eq!(out.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&out.stdout).expect("whole JSON before the error");
    assert_eq!((v["complete"].as_bool(), v["events"].as_u64()), (Some(false), Some(events)));
    assert!(v["recorded"].is_null() && v["dropped"].is_null());
    assert!(stderr(&out).contains(&format!("at byte {offset}")), "{}", stderr(&out));
}

#[test]
fn stats_of_a_missing_file_or_not_a_trace_exits_2_naming_it() {
    let out = phosphor("stats-missing", &["stats", "no/such/trace.phos"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no/such/trace.phos"), "{}", stderr(&out));
    assert!(out.stdout.is_empty());

    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let out = stats("stats-not-a-trace", &manifest, &["--json"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(manifest.to_str().unwrap()) && err.contains("magic"), "{err}");
    assert!(out.stdout.is_empty());
}

/// `(path, type) -> count` of a `--json` document's paths.
fn path_counts(j: &Value) -> std::collections::BTreeMap<(String, String), u64> {
    j["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let path: Vec<&str> = k["path"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
            ((path.join("/"), k["type"].as_str().unwrap().to_owned()), k["count"].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn stats_of_two_files_add_paths_up_and_keep_each_files_threads_apart() {
    let a = demo("stats-two-a").join("trace.phos");
    let b = demo("stats-two-b").join("trace.phos");
    let (ja, jb) = (json("stats-two-a", &a, &[]), json("stats-two-b", &b, &[]));
    let out = phosphor("stats-two", &["stats", a.to_str().unwrap(), b.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap();
    assert_eq!(n(&j, "events"), n(&ja, "events") + n(&jb, "events"));
    assert_eq!(n(&j, "recorded"), n(&ja, "recorded") + n(&jb, "recorded"));
    // Every path counts both files' events.
    let (ca, cb) = (path_counts(&ja), path_counts(&jb));
    let merged = path_counts(&j);
    assert!(!merged.is_empty());
    for (key, count) in &merged {
        let want = ca.get(key).copied().unwrap_or(0) + cb.get(key).copied().unwrap_or(0);
        assert_eq!(*count, want, "{key:?}");
    }
    // Each file's threads are rows of their own, named by process and pid.
    let names = |v: &Value| -> Vec<String> {
        v["threads"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str().map(String::from)).collect()
    };
    let threads = names(&j);
    assert_eq!(threads.len(), names(&ja).len() + names(&jb).len(), "{threads:?}");
    let mains: Vec<&String> = threads.iter().filter(|t| t.ends_with(" main")).collect();
    assert_eq!(mains.len(), 2, "a main thread per file: {threads:?}");
    assert_ne!(mains[0], mains[1], "told apart by their pids");
    assert!(mains.iter().all(|m| m.contains('/')), "process/pid thread: {threads:?}");

    // The tables name both files.
    let out = phosphor("stats-two", &["stats", a.to_str().unwrap(), b.to_str().unwrap()]);
    let report = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(report.starts_with("statistics of 2 Phosphor trace files as one trace:"), "{report}");
    assert!(report.contains(a.to_str().unwrap()) && report.contains(b.to_str().unwrap()), "{report}");
}

#[test]
fn stats_of_two_files_name_the_damaged_one_with_its_offset() {
    let a = demo("stats-two-cut").join("trace.phos");
    let cut = a.with_file_name("cut.phos");
    let bytes = std::fs::read(&a).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let out = phosphor("stats-two-cut", &["stats", a.to_str().unwrap(), cut.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("reading {} stopped early", cut.display())) && err.contains("byte"),
        "{err}"
    );
    assert!(stdout(&out).contains("INCOMPLETE"), "{}", stdout(&out));
}

/// `trace_frame!` marks read back by `phosphor stats`: the frames are the intervals between the
/// file's marks (checked against the marks read here), per set, with the slowest listed.
#[test]
fn frames_are_the_intervals_between_frame_marks() {
    let dir = scratch("stats-frames");
    let file = dir.join("frames.phos");
    // `cargo test` builds the package's examples next to the test binary's directory.
    let exe = std::env::current_exe().unwrap();
    let example = exe.parent().unwrap().parent().unwrap().join("examples/frames");
    let run = std::process::Command::new(example).arg(&file).output().unwrap();
    assert!(run.status.success(), "{run:?}");

    // The marks, straight from the file.
    let bytes = std::fs::read(&file).unwrap();
    let mut reader = phosphor::format::file::Reader::new(&bytes[..]).unwrap();
    let clock = reader.header().clock.clone();
    let mut marks: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
    reader
        .for_each_event(|e| {
            if e.callsite.category == phosphor::format::system::FRAME_CATEGORY {
                marks.entry(e.callsite.name.to_string()).or_default().push(e.ts);
            }
        })
        .unwrap();
    assert_eq!(marks.keys().collect::<Vec<_>>(), ["frame", "physics"]);
    assert_eq!((marks["frame"].len(), marks["physics"].len()), (61, 120));

    let out = stats("stats-frames", &file, &["--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let sets = doc["frames"].as_array().unwrap();
    assert_eq!(sets.len(), 2);
    for set in sets {
        let name = set["name"].as_str().unwrap();
        let ts = &marks[name];
        let ns = |ticks: u64| clock.ticks_to_ns(ticks);
        let mut frames: Vec<(u64, u64)> =
            ts.windows(2).enumerate().map(|(i, w)| (ns(w[1] - w[0]), i as u64)).collect();
        assert_eq!(set["marks"], ts.len() as u64);
        assert_eq!(set["durations"]["samples"], frames.len() as u64);
        let (min, max) =
            (frames.iter().map(|f| f.0).min().unwrap(), frames.iter().map(|f| f.0).max().unwrap());
        // Within a nanosecond: the tools round each end to the timeline once.
        for (key, want) in [("min_ns", min), ("max_ns", max)] {
            let got = set["durations"][key].as_u64().unwrap();
            assert!(got.abs_diff(want) <= 1, "{name} {key}: {got} vs {want}");
        }
        frames.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let slowest: Vec<u64> =
            set["slowest"].as_array().unwrap().iter().map(|f| f["number"].as_u64().unwrap()).collect();
        assert_eq!(slowest.len(), 10);
        assert_eq!(slowest[0], frames[0].1, "{name}: the slowest frame");
    }
    let text = stdout(&stats("stats-frames-text", &file, &[]));
    let table = section(&text, "frames (2 sets");
    assert!(table.iter().any(|l| l.trim_start().starts_with("frame ")), "{table:?}");
    assert!(text.contains("  slowest frame: #"), "{text}");
}

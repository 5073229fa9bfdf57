//! Agreement (issue 38): every output of a trace tells the same story. For each input, the
//! thread slices that have a duration (scopes, lock waits and holds) are added up per thread and
//! path (the names of the enclosing slices of the same thread, outermost first, then the slice's
//! own) into a count and a total duration in nanoseconds, and these must be equal, path for path,
//! to those of `phosphor stats --json` (its "kinds" of type scope, lock_wait and lock_held):
//!
//! * Perfetto, as trace processor builds it: `scripts/check_pftrace.py --paths` (the official
//!   protos; each track's events sorted by time, ties in stream order, an end closes the innermost
//!   open slice), its thread tracks only;
//! * Chrome JSON, as speedscope builds it: `scripts/replay_chrome.py` (speedscope 1.25.0's import
//!   redone: `X` events by time then longer first, begins and ends in two queues, an `E` closing
//!   the top frame of its name), each frame's duration rounded to the nanosecond;
//! * OTLP spans (`convert --to otlp`, decoded with the official messages): the spans carrying a
//!   `thread.id` and no `phosphor.async_id`, their path the chain of their parents' names;
//! * the viewer's statistics (`phosphor view`, `GET /api/stats`), per path across threads,
//!   against the statistics' `paths` (all threads together).
//!
//! Async slices are compared per name: the pairs, their total nanoseconds, the begins never ended
//! and the ends never begun, against the statistics' "async" (paired by the model's one rule,
//! `phosphor_model::asyncs`): in Perfetto, the async lanes as trace processor replays them (a
//! slice left open is never ended, an end that closes nothing never begun); in Chrome JSON, the
//! `b`/`e` events as trace processor's JSON importer pairs them (`replay_chrome.py`); in the
//! viewer's index, its async tracks (a slice flagged unclosed is never ended; an end never begun is
//! a point); in OTLP, the spans with a `phosphor.async_id` (pairs only: a half alone is no span).
//!
//! Instants and logs are marks, not compared: they have no duration, speedscope drops them, and
//! a log is named by its message in Perfetto and Chrome but by its format in the statistics.
//! Thread slices left open have no duration and are left out of every output's figures; a reader's complaints of slices left open or ends with
//! nothing open count against an output only when the statistics found the file balanced.
//!
//! The inputs: the demo, every golden file, crafted traces full of equal timestamps, and random
//! crafted traces from fixed seeds. A test reports every disagreement of every input it reads
//! (per output, the paths that differ with both sides' figures) before it fails.

mod craft;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use phosphor_otlp::Span;

use crate::cli::{phosphor, python, scratch, stderr, stdout};

/// Per (thread, path): count and total nanoseconds.
type Paths = BTreeMap<(u64, Vec<String>), (u64, u64)>;

/// Per async name: pairs, their total nanoseconds, begins never ended, ends never begun.
type Asyncs = BTreeMap<String, [u64; 4]>;

/// The figures of one output of one input, and what its reader complained of: `complaints`
/// always count against it; `unbalanced` (slices left open, ends with nothing open, speedscope's
/// warnings) only when the statistics found the file's scopes balanced.
#[derive(Default)]
struct Output {
    paths: Paths,
    complaints: Vec<String>,
    unbalanced: Vec<String>,
    asyncs: Asyncs,
    /// Only the pairs of `asyncs` are known (OTLP: a half alone is no span).
    pairs_only: bool,
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts").join(name)
}

fn run(test: &str, args: &[&str]) -> std::process::Output {
    let out = phosphor(test, args);
    assert!(out.status.success(), "phosphor {args:?}: {}", stderr(&out));
    out
}

/// `phosphor stats --json` of `file`: its kinds of scopes and locks, per thread and path (those
/// left open, without a duration, are left out, as in the other outputs); `unbalanced` lists its
/// scope problems.
fn stats(test: &str, file: &Path) -> Output {
    let out = run(test, &["stats", "--json", file.to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("stats --json is JSON");
    let mut paths = Paths::new();
    for k in doc["kinds"].as_array().unwrap() {
        if !matches!(k["type"].as_str(), Some("scope" | "lock_wait" | "lock_held")) {
            continue;
        }
        let path = k["path"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_owned()).collect();
        let Some(total) = k["durations"]["total_ns"].as_u64() else { continue };
        let e = paths.entry((k["tid"].as_u64().unwrap(), path)).or_default();
        e.0 += k["count"].as_u64().unwrap();
        e.1 += total;
    }
    let unbalanced =
        doc["problems"]["examples"].as_array().unwrap().iter().map(|p| p["message"].to_string()).collect();
    let mut asyncs = Asyncs::new();
    for a in doc["async"].as_array().unwrap() {
        let figures = [
            a["pairs"].as_u64().unwrap(),
            a["durations"]["total_ns"].as_u64().unwrap_or(0),
            a["unended"].as_u64().unwrap(),
            a["unbegun"].as_u64().unwrap(),
        ];
        asyncs.insert(a["name"].as_str().unwrap().to_owned(), figures);
    }
    Output { paths, unbalanced, asyncs, ..Output::default() }
}

/// Reads a script's `[[name, pairs, total_ns, unended, unbegun]]` list.
fn script_asyncs(list: &serde_json::Value) -> Asyncs {
    let mut asyncs = Asyncs::new();
    for a in list.as_array().unwrap() {
        let n = |i: usize| a[i].as_u64().unwrap();
        asyncs.insert(a[0].as_str().unwrap().to_owned(), [n(1), n(2), n(3), n(4)]);
    }
    asyncs
}

/// Reads the `[[path], count, total]` lists of a script's JSON threads.
fn script_paths(threads: &serde_json::Value) -> Paths {
    let mut paths = Paths::new();
    for t in threads.as_array().unwrap() {
        let tid = t["tid"].as_u64().unwrap();
        for s in t["slices"].as_array().unwrap() {
            let path = s[0].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_owned()).collect();
            let e = paths.entry((tid, path)).or_default();
            e.0 += s[1].as_u64().unwrap();
            e.1 += s[2].as_u64().unwrap();
        }
    }
    paths
}

/// Runs a script under the test interpreter on `files`; one JSON line per file.
fn python_lines(name: &str, args: &[&str], files: &[PathBuf]) -> Vec<serde_json::Value> {
    let out = Command::new(python()).arg(script(name)).args(args).args(files).output().expect("python runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}: {e} in {l}")))
        .collect();
    assert_eq!(lines.len(), files.len(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    lines
}

/// The Perfetto exports of `files`, replayed as trace processor builds them.
fn perfetto(test: &str, files: &[PathBuf]) -> Vec<Output> {
    let outs: Vec<PathBuf> = files.iter().map(|f| f.with_extension("agree.pftrace")).collect();
    for (f, o) in files.iter().zip(&outs) {
        run(test, &["convert", f.to_str().unwrap(), "--to", "perfetto", "-o", o.to_str().unwrap()]);
    }
    python_lines("check_pftrace.py", &["--paths"], &outs)
        .into_iter()
        .map(|r| {
            let complaints =
                r["errors"].as_array().unwrap().iter().map(|e| format!("invalid: {e}")).collect();
            let mut unbalanced = Vec::new();
            for t in r["threads"].as_array().unwrap() {
                for key in ["open", "unmatched_ends"] {
                    if t[key].as_u64() != Some(0) {
                        unbalanced.push(format!("tid {}: {key} {}", t["tid"], t[key]));
                    }
                }
            }
            let asyncs = script_asyncs(&r["asyncs"]);
            Output { paths: script_paths(&r["threads"]), complaints, unbalanced, asyncs, pairs_only: false }
        })
        .collect()
}

/// The Chrome JSON exports of `files`, replayed as speedscope builds them.
fn chrome(test: &str, files: &[PathBuf]) -> Vec<Output> {
    let outs: Vec<PathBuf> = files.iter().map(|f| f.with_extension("agree.json")).collect();
    for (f, o) in files.iter().zip(&outs) {
        run(test, &["convert", f.to_str().unwrap(), "--to", "chrome", "-o", o.to_str().unwrap()]);
    }
    python_lines("replay_chrome.py", &[], &outs)
        .into_iter()
        .map(|r| {
            let mut unbalanced = Vec::new();
            for t in r["threads"].as_array().unwrap() {
                if t["open"].as_u64() != Some(0) || t["warnings"].as_u64() != Some(0) {
                    unbalanced.push(format!(
                        "tid {}: {} frames left open, {} speedscope warnings, e.g. {}",
                        t["tid"], t["open"], t["warnings"], t["examples"]
                    ));
                }
            }
            let asyncs = script_asyncs(&r["asyncs"]);
            Output { paths: script_paths(&r["threads"]), unbalanced, asyncs, ..Output::default() }
        })
        .collect()
}

/// The OTLP spans of `file`'s threads, per thread and chain of parents.
fn otlp(test: &str, file: &Path) -> Output {
    let pb = file.with_extension("agree.pb");
    run(test, &["convert", file.to_str().unwrap(), "--to", "otlp", "-o", pb.to_str().unwrap()]);
    let req = phosphor_otlp::request::from_protobuf(&std::fs::read(&pb).unwrap()).expect("OTLP decodes");
    let spans: Vec<Span> =
        req.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans).collect();
    let attr = |s: &Span, key: &str| s.attributes.iter().find(|a| a.key == key).cloned();
    let tid = |s: &Span| -> Option<u64> {
        use opentelemetry_proto::tonic::common::v1::any_value::Value;
        // Async slices are not a thread's; a begin never ended is not a closed slice (it only
        // names what it holds, as in the statistics).
        if attr(s, "phosphor.async_id").is_some() || attr(s, "phosphor.unclosed").is_some() {
            return None;
        }
        match attr(s, "thread.id")?.value?.value? {
            Value::IntValue(t) => Some(t as u64),
            _ => None,
        }
    };
    let by_id: BTreeMap<&[u8], &Span> = spans.iter().map(|s| (s.span_id.as_slice(), s)).collect();
    let (mut paths, mut complaints, mut asyncs) = (Paths::new(), Vec::new(), Asyncs::new());
    for s in spans.iter().filter(|s| attr(s, "phosphor.async_id").is_some()) {
        let a = asyncs.entry(s.name.clone()).or_default();
        a[0] += 1;
        a[1] += s.end_time_unix_nano - s.start_time_unix_nano;
    }
    let thread = |s: &Span| -> Option<u64> {
        use opentelemetry_proto::tonic::common::v1::any_value::Value;
        match attr(s, "thread.id")?.value?.value? {
            Value::IntValue(t) => Some(t as u64),
            _ => None,
        }
    };
    for s in &spans {
        let Some(t) = tid(s) else { continue };
        let mut path = vec![s.name.clone()];
        let mut at = s;
        while let Some(p) = by_id.get(at.parent_span_id.as_slice()) {
            if thread(p) != Some(t) || attr(p, "phosphor.async_id").is_some() {
                break;
            }
            path.push(p.name.clone());
            at = p;
        }
        if !at.parent_span_id.is_empty() && !by_id.contains_key(at.parent_span_id.as_slice()) {
            complaints.push(format!("span {:?} has a parent that is not in the file", s.name));
        }
        path.reverse();
        let e = paths.entry((t, path)).or_default();
        e.0 += 1;
        e.1 += s.end_time_unix_nano - s.start_time_unix_nano;
    }
    complaints.truncate(5);
    Output { paths, complaints, asyncs, pairs_only: true, ..Output::default() }
}

/// `phosphor stats --json` of `file`, all threads together (its "paths"), under thread 0.
fn stats_across(test: &str, file: &Path) -> Output {
    let out = run(test, &["stats", "--json", file.to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("stats --json is JSON");
    let mut paths = Paths::new();
    for k in doc["paths"].as_array().unwrap() {
        if !matches!(k["type"].as_str(), Some("scope" | "lock_wait" | "lock_held")) {
            continue;
        }
        let path = k["path"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_owned()).collect();
        let Some(total) = k["durations"]["total_ns"].as_u64() else { continue };
        let e = paths.entry((0, path)).or_default();
        e.0 += k["count"].as_u64().unwrap();
        e.1 += total;
    }
    Output { paths, ..Output::default() }
}

/// The viewer's statistics of `file` (`phosphor view`, `GET /api/stats`), under thread 0.
fn viewer(file: &Path, cache: &str) -> Output {
    let (_viewer, host) = crate::view::start_viewer(file, cache);
    let (status, doc) = crate::view::get(&host, "/api/stats?limit=1000000");
    assert_eq!(status, 200, "{doc}");
    let mut paths = Paths::new();
    for r in doc["rows"].as_array().unwrap() {
        let path = r["path"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_owned()).collect();
        let e = paths.entry((0, path)).or_default();
        e.0 += r["count"].as_u64().unwrap();
        e.1 += r["total_ns"].as_u64().unwrap();
    }
    Output { paths, ..Output::default() }
}

/// The async slices of `file`'s viewer index (built into `cache`), per name: on its async tracks,
/// the slices (flagged unclosed: never ended; else pairs, measured on the model's timeline), and
/// the points of ends never begun on the threads (those named as async slices are: `names`).
fn viewer_asyncs(file: &Path, cache: &str, names: &Asyncs) -> Output {
    use phosphor::format::file::Reader;
    use phosphor_view::records::{point_kinds, slice_flags};
    let dir = scratch(cache);
    let index =
        phosphor_view::open(file, Some(&dir), &phosphor_view::BuildOptions::default()).expect("indexes");
    let header = Reader::new(std::fs::File::open(file).unwrap()).unwrap().header().clone();
    // The model's timeline (`phosphor_model::timeline`): the ticks themselves on a nanosecond
    // clock, else the nanoseconds since the origin, rounded per timestamp.
    let clock = header.clock;
    let timeline = |t: u64| if clock.ns_per_tick == 1.0 { t as i64 } else { clock.since_origin_ns(t) };
    let mut asyncs = Asyncs::new();
    for track in &index.asyncs {
        let a = asyncs.entry(index.name(track.tid).to_owned()).or_default();
        for &(first, count) in &track.levels {
            for i in first..first + count {
                let s = index.get_slice(i).unwrap();
                if s.flags & slice_flags::UNCLOSED != 0 {
                    a[2] += 1;
                } else {
                    a[0] += 1;
                    a[1] += (timeline(s.end) - timeline(s.start)) as u64;
                }
            }
        }
    }
    let window =
        phosphor_view::Window::new(index.meta.start_ticks, index.meta.end_ticks.saturating_add(1), u32::MAX);
    for thread in &index.threads {
        for p in index.points_in(thread, window) {
            let phosphor_view::PointItem::Point(_, p) = p else { continue };
            let name = index.name(p.name);
            if p.kind == point_kinds::END_WITHOUT_BEGIN && names.contains_key(name) {
                asyncs.entry(name.to_owned()).or_default()[3] += 1;
            }
        }
    }
    Output { asyncs, ..Output::default() }
}

fn show(path: &[String]) -> String {
    path.join("/")
}

/// What differs between `want` (the statistics) and `got` (output `what`), as report lines.
fn compare(what: &str, want: &Output, got: &Output) -> Vec<String> {
    let mut keys: Vec<&(u64, Vec<String>)> = want.paths.keys().chain(got.paths.keys()).collect();
    keys.sort();
    keys.dedup();
    let fig = |v: Option<&(u64, u64)>| v.map_or("-".to_owned(), |(c, d)| format!("{c} / {d} ns"));
    let differ: Vec<String> = keys
        .iter()
        .filter(|k| want.paths.get(k) != got.paths.get(k))
        .map(|k| {
            let (w, g) = (want.paths.get(k), got.paths.get(k));
            format!("    tid {} {}: stats {}, {what} {}", k.0, show(&k.1), fig(w), fig(g))
        })
        .collect();
    let mut complaints = got.complaints.clone();
    if want.unbalanced.is_empty() {
        complaints.extend(got.unbalanced.iter().cloned());
    }
    let mut lines = Vec::new();
    let mut names: Vec<&String> = want.asyncs.keys().chain(got.asyncs.keys()).collect();
    names.sort();
    names.dedup();
    let width = if got.pairs_only { 2 } else { 4 };
    for name in names {
        let (w, g) = (
            want.asyncs.get(name).copied().unwrap_or_default(),
            got.asyncs.get(name).copied().unwrap_or_default(),
        );
        if w[..width] != g[..width] {
            lines.push(format!(
                "  {what}: async {name:?} (pairs, total ns, unended, unbegun): stats {:?}, {what} {:?}",
                w,
                &g[..width]
            ));
        }
    }
    if !differ.is_empty() || !complaints.is_empty() {
        let counts = |p: &Paths| p.values().map(|v| v.0).sum::<u64>();
        lines.push(format!(
            "  {what}: {} of {} (thread, path)s differ; slices: stats {}, {what} {}",
            differ.len(),
            keys.len(),
            counts(&want.paths),
            counts(&got.paths)
        ));
        const SHOWN: usize = 25;
        lines.extend(differ.iter().take(SHOWN).cloned());
        if differ.len() > SHOWN {
            lines.push(format!("    … and {} more", differ.len() - SHOWN));
        }
        lines.extend(complaints.iter().map(|c| format!("    {what} reader: {c}")));
    }
    lines
}

/// Compares every output of each of `inputs` (name, file) with its statistics; returns the
/// report of the inputs that disagree, empty if all agree.
fn disagreements(test: &str, inputs: &[(String, PathBuf)]) -> String {
    let files: Vec<PathBuf> = inputs.iter().map(|(_, f)| f.clone()).collect();
    let (pf, ch) = (perfetto(test, &files), chrome(test, &files));
    let mut report = String::new();
    let mut failing = 0;
    for (i, (name, file)) in inputs.iter().enumerate() {
        let want = stats(test, file);
        assert!(!want.paths.is_empty(), "{name}: no slices in the statistics");
        let mut lines = compare("perfetto", &want, &pf[i]);
        lines.extend(compare("chrome", &want, &ch[i]));
        lines.extend(compare("otlp", &want, &otlp(test, file)));
        let cache = format!("{test}-view-{i}");
        let across = Output { asyncs: want.asyncs.clone(), ..stats_across(test, file) };
        let mut seen = viewer(file, &cache);
        seen.asyncs = viewer_asyncs(file, &format!("{cache}-index"), &want.asyncs).asyncs;
        lines.extend(compare("viewer", &across, &seen));
        if !lines.is_empty() {
            failing += 1;
            report.push_str(&format!("{name}:\n{}\n", lines.join("\n")));
        }
    }
    if failing > 0 {
        report.insert_str(0, &format!("{failing} of {} inputs disagree:\n", inputs.len()));
    }
    report
}

#[track_caller]
fn assert_agree(test: &str, inputs: &[(String, PathBuf)]) {
    let report = disagreements(test, inputs);
    assert!(report.is_empty(), "{report}");
}

#[test]
fn the_demo_reads_the_same_in_every_output() {
    let dir = scratch("agree-demo-files");
    let mut inputs = Vec::new();
    for clock in ["tsc", "monotonic"] {
        let out = dir.join(clock);
        let args =
            ["demo", "--threads", "2", "--events", "3000", "--clock", clock, "-o", out.to_str().unwrap()];
        run("agree-demo", &args);
        inputs.push((format!("demo (--clock {clock})"), out.join("trace.phos")));
    }
    assert_agree("agree-demo", &inputs);
}

#[test]
fn every_golden_file_reads_the_same_in_every_output() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../phosphor-format/tests/data");
    let mut inputs: Vec<(String, PathBuf)> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "phtrace"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 10, "{inputs:?}");
    // The outputs are written next to the input: copies in the scratch directory.
    let dir = scratch("agree-golden-files");
    for (name, file) in &mut inputs {
        let copy = dir.join(&*name);
        std::fs::copy(&*file, &copy).unwrap();
        *file = copy;
    }
    assert_agree("agree-golden", &inputs);
}

/// Writes each crafted thread list as a file in `dir`, keeping those with slices (some random
/// seeds give only instants).
fn write_all(
    test: &str,
    dir: &Path,
    clock: f64,
    cases: Vec<(String, craft::Threads)>,
) -> Vec<(String, PathBuf)> {
    cases
        .into_iter()
        .enumerate()
        .map(|(i, (name, threads))| {
            let file = dir.join(format!("case-{i}.phos"));
            std::fs::write(&file, craft::file(craft::clock(clock), &threads)).unwrap();
            (name, file)
        })
        .filter(|(_, file)| !stats(test, file).paths.is_empty())
        .collect()
}

#[test]
fn crafted_traces_full_of_equal_timestamps_read_the_same_in_every_output() {
    let dir = scratch("agree-crafted-files");
    let cases =
        craft::cases().into_iter().map(|(name, events)| (name.to_owned(), vec![(1, events)])).collect();
    assert_agree("agree-crafted", &write_all("agree-crafted", &dir, 1.0, cases));
}

/// On a clock of a fraction of a nanosecond per tick, durations are converted as timestamps are.
#[test]
fn crafted_traces_on_a_clock_of_fractional_nanoseconds_read_the_same_in_every_output() {
    let dir = scratch("agree-fraction-files");
    let mut cases: Vec<(String, craft::Threads)> = Vec::new();
    for seed in 0..8 {
        // Ticks of 0.385187 ns, as the demo's TSC: a grid of 40 ticks is about 15 ns.
        cases.push((format!("random seed {seed}, 0.385187 ns per tick"), craft::random(seed)));
    }
    cases.extend(
        craft::cases().into_iter().map(|(n, e)| (format!("{n}, 0.385187 ns per tick"), vec![(1, e)])),
    );
    assert_agree("agree-fraction", &write_all("agree-fraction", &dir, 0.385187, cases));
}

#[test]
fn crafted_async_slices_read_the_same_in_every_output() {
    let dir = scratch("agree-async-files");
    let cases = craft::async_cases().into_iter().map(|(name, threads)| (name.to_owned(), threads)).collect();
    let inputs = write_all("agree-async", &dir, 1.0, cases);
    assert_eq!(inputs.len(), craft::async_cases().len());
    assert_agree("agree-async", &inputs);
}

/// The property: random trees of begin/end pairs, complete events, locks and instants on a grid
/// coarse enough that most starts and ends tie, from fixed seeds.
#[test]
fn random_crafted_traces_read_the_same_in_every_output() {
    let dir = scratch("agree-random-files");
    let cases = (0..96).map(|seed| (format!("random seed {seed}"), craft::random(seed))).collect();
    let inputs = write_all("agree-random", &dir, 1.0, cases);
    assert!(inputs.len() >= 80, "{} of 96 seeds gave slices", inputs.len());
    assert_agree("agree-random", &inputs);
}

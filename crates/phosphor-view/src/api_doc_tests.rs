//! The examples of `docs/VIEW-API.md` against the server's answers (issue 39: the JSON API is
//! typed, and its documentation is checked). Each ```json example under a `GET /api/...` heading
//! is matched against the answer of a real trace with the conventions the document states under
//! "Examples": the same keys, of the same JSON types, recursively. A field added to, renamed in
//! or removed from either the answer or the document fails this test, and so does a new example
//! that no case here covers.

use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use phosphor::{
    trace_async_begin, trace_async_end, trace_complete, trace_counter, trace_frame, trace_future, trace_log,
    trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig,
};
use serde_json::{json, Map, Value};

use crate::server::tests::{get, start};
use crate::server::{serve, Traces};
use crate::BuildOptions;

const DOC: &str = include_str!("../../../docs/VIEW-API.md");

/// One ```json example of the document: under which heading, its place among that section's
/// examples, and the keys the lines after it say may be absent or null.
#[derive(Debug)]
struct Example {
    heading: String,
    nth: usize,
    value: Value,
    absent: Vec<String>,
    nullable: Vec<String>,
}

/// The labels of the lists of keys under an example.
const LABELS: [&str; 2] = ["May be absent:", "May be null:"];

/// The names in backquotes on `line` after `label`.
fn listed(line: &str, label: &str) -> Vec<String> {
    let Some(at) = line.find(label) else { return Vec::new() };
    line[at + label.len()..].split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

/// Every ```json example of the document, parsed (an example that is not JSON fails here).
fn examples() -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    let (mut heading, mut nth, mut block): (String, usize, Option<String>) = (String::new(), 0, None);
    let mut label = None;
    for (k, line) in DOC.lines().enumerate() {
        if let Some(text) = block.as_mut() {
            if line.trim_start().starts_with("```") {
                let value = serde_json::from_str(text)
                    .unwrap_or_else(|e| panic!("VIEW-API.md line {}: {heading}: not JSON: {e}", k + 1));
                out.push(Example { heading: heading.clone(), nth, value, absent: vec![], nullable: vec![] });
                nth += 1;
                block = None;
            } else {
                text.push_str(line);
                text.push('\n');
            }
        } else if line.starts_with('#') {
            heading = line.trim_start_matches('#').trim().to_owned();
            (nth, label) = (0, None);
        } else if line.trim_start().starts_with("```json") {
            (block, label) = (Some(String::new()), None);
        } else if let Some(last) = out.last_mut().filter(|e| e.heading == heading) {
            // A "May be ..." paragraph may run on over lines, to a blank one.
            if line.trim().is_empty() {
                label = None;
            } else if let Some(l) = LABELS.into_iter().find(|l| line.contains(l)) {
                label = Some(l);
            }
            match label {
                Some(l) if line.contains(l) => {
                    last.absent.extend(listed(line, "May be absent:"));
                    last.nullable.extend(listed(line, "May be null:"));
                }
                Some(l) => {
                    let list = if l == LABELS[0] { &mut last.absent } else { &mut last.nullable };
                    list.extend(listed(&format!("{l} {line}"), l));
                }
                None => {}
            }
        }
    }
    out
}

/// Where `got` differs in shape from the example `doc` (at `at`, a key named `key`), into `errors`.
fn compare(doc: &Value, got: &Value, at: &str, key: &str, ex: &Example, errors: &mut Vec<String>) {
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    if doc.is_null() || (got.is_null() && ex.nullable.iter().any(|n| n == key)) {
        return;
    }
    if kind(doc) != kind(got) {
        errors.push(format!("{at}: the document has a {}, the answer a {}: {got}", kind(doc), kind(got)));
        return;
    }
    match (doc, got) {
        (Value::Object(d), Value::Object(g)) => object(d, g, at, ex, errors),
        (Value::Array(d), Value::Array(g)) if !d.is_empty() => {
            for (i, item) in g.iter().enumerate() {
                let at = format!("{at}[{i}]");
                let mut first = None;
                let matched = d.iter().any(|candidate| {
                    let mut e = Vec::new();
                    if is_tuple(candidate)
                        && candidate.as_array().map(Vec::len) != item.as_array().map(Vec::len)
                    {
                        e.push(format!("{at}: {item} has not the length of the document's {candidate}"));
                    } else if is_tuple(candidate) {
                        let (c, g) = (candidate.as_array().unwrap(), item.as_array().unwrap());
                        for (j, (c, g)) in c.iter().zip(g).enumerate() {
                            compare(c, g, &format!("{at}[{j}]"), key, ex, &mut e);
                        }
                    } else {
                        compare(candidate, item, &at, key, ex, &mut e);
                    }
                    let ok = e.is_empty();
                    first.get_or_insert(e);
                    ok
                });
                if !matched {
                    errors.extend(first.unwrap_or_default());
                }
            }
        }
        _ => {}
    }
}

/// An array of plain values (no array or object) as an item of an array: a tuple, matched place
/// by place.
fn is_tuple(v: &Value) -> bool {
    v.as_array().is_some_and(|a| a.iter().all(|x| !x.is_array() && !x.is_object()))
}

fn object(d: &Map<String, Value>, g: &Map<String, Value>, at: &str, ex: &Example, errors: &mut Vec<String>) {
    // A map from numbers (`names`): any numbers, each value of the example's shape.
    if !d.is_empty() && d.keys().all(|k| k.parse::<u64>().is_ok()) {
        let shape = d.values().next().unwrap();
        for (k, v) in g {
            if k.parse::<u64>().is_err() {
                errors.push(format!("{at}: key {k:?} is not a number"));
            }
            compare(shape, v, &format!("{at}.{k}"), k, ex, errors);
        }
        return;
    }
    let open = d.contains_key("...");
    for (k, v) in d.iter().filter(|(k, _)| *k != "...") {
        match g.get(k) {
            Some(got) => compare(v, got, &format!("{at}.{k}"), k, ex, errors),
            None if ex.absent.contains(k) => {}
            None => errors.push(format!("{at}: the answer has no {k:?}, which the document gives")),
        }
    }
    if !open {
        for k in g.keys().filter(|k| !d.contains_key(*k)) {
            errors.push(format!("{at}: the answer has {k:?}, which the document does not give"));
        }
    }
}

/// The example's shape errors against `got`.
fn check(ex: &Example, got: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    compare(&ex.value, got, "", "", ex, &mut errors);
    errors
}

/// Pending `n` times, then ready.
struct Yields(u32);

impl Future for Yields {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        Poll::Pending
    }
}

/// A trace recorded by the runtime: nested scopes with arguments, logs, a counter, async slices
/// and a future's flow.
fn record(path: &Path) {
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    for k in 0..20u64 {
        trace_async_begin!(log: &log, "demo", "item", k);
        {
            trace_scope!(log: &log, "demo", "batch", "batch" => k);
            {
                trace_scope!(log: &log, "demo", "iteration", "checksum" => 10482063840709898622u64);
                trace_log!(log: &log, info, "demo", "load {} of {}", 300 + k, 7u32);
            }
            trace_counter!(log: &log, "demo", "queue_depth", k);
        }
        trace_async_end!(log: &log, "demo", "item", k);
        trace_frame!(log: &log);
    }
    let mut cx = Context::from_waker(Waker::noop());
    let mut f = Box::pin(trace_future!(log: &log, "demo", "fetch", Yields(2)));
    for _ in 0..3 {
        let _ = f.as_mut().poll(&mut cx);
    }
    drop(f);
    log.stop();
    log.take_trace().unwrap().save(path).unwrap();
}

/// Two tokio tasks as `phosphor::tokio`'s hooks record them: an async slice each (id: the task's),
/// two polls each (`task`, `wait_ns`).
fn record_tasks(path: &Path) {
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    for id in 1..=2u64 {
        trace_async_begin!(log: &log, "tokio", "src/server.rs:42", id);
        for _ in 0..2 {
            let start = log.now();
            trace_complete!(log: &log, "tokio", "src/server.rs:42", start, std::time::Duration::from_micros(2),
                "task" => id, "wait_ns" => 1000u64);
        }
        trace_async_end!(log: &log, "tokio", "src/server.rs:42", id);
    }
    log.stop();
    log.take_trace().unwrap().save(path).unwrap();
}

/// `GET path`, which must answer 200.
fn ok(addr: SocketAddr, path: &str) -> Value {
    let (status, v) = get(addr, path);
    assert_eq!(status, 200, "{path}: {v}");
    v
}

/// Serves `paths` as `phosphor view` does: scanned, then indexed (so that the overview is kept).
fn serve_scanned(paths: Vec<std::path::PathBuf>, compare: bool) -> SocketAddr {
    let traces = Arc::new(Traces::open(paths).unwrap());
    traces.index_all(None, &BuildOptions::default(), |_, why| panic!("{why}"));
    if compare {
        traces.compare(0, 1).unwrap();
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || serve(traces, listener));
    addr
}

/// An answer an example is checked against: its heading, its place among the heading's
/// examples, and the answer.
type Answer = (&'static str, usize, Value);

/// The answers the examples are checked against, by (heading, place among its examples).
fn answers() -> Vec<Answer> {
    let dir = tempfile::tempdir().unwrap();
    let (mut out, served) = served_answers(dir.path());
    out.extend(indexing_answers(dir.path()));
    out.extend(more_answers(&served));
    out.push(tasks_answer(dir.path()));
    out.extend(long_poll_answers(dir.path()));
    out.extend(system_answers(dir.path()));
    out
}

/// Where [`served_answers`] served two traces, and what further answers ask of them.
struct Served {
    addr: SocketAddr,
    /// The first trace's whole time, as a query's `trace`, `start` and `end`.
    window: String,
    /// A slice named `iteration`.
    iteration: Value,
}

/// The answers of two recorded traces, served indexed and compared.
fn served_answers(dir: &std::path::Path) -> (Vec<Answer>, Served) {
    let (path, other) = (dir.join("app.phos"), dir.join("new.phos"));
    record(&path);
    record(&other);
    let addr = serve_scanned(vec![path, other], true);
    let list = ok(addr, "/api/traces");
    let t = &list["traces"][0];
    let (s, e) = (t["start_ns"].as_i64().unwrap(), t["end_ns"].as_i64().unwrap());
    let tid = t["threads"][0]["tid"].as_u64().unwrap();
    let window = format!("trace=0&start={s}&end={e}");
    let slices = ok(addr, &format!("/api/slices?{window}&tid={tid}&px=4000"));
    let names = &slices["names"];
    let named = |level: usize, name: &str| {
        slices["levels"][level].as_array().unwrap().iter().find(|i| names[i[2].to_string()] == name).unwrap()
            [3]
        .clone()
    };
    let iteration = named(1, "iteration");
    let fetch = named(0, "fetch");
    let points = ok(addr, &format!("/api/points?{window}&tid={tid}&px=4000"));
    let log_point = points["points"].as_array().unwrap().iter().find(|p| p[3] == 1).unwrap()[2].clone();
    let slice = ok(addr, &format!("/api/slice?trace=0&index={iteration}"));
    // Asked again while the two files are read (at most 2 minutes).
    let mut compared = ok(addr, "/api/compare");
    for _ in 0..12_000 {
        if compared["state"] != "computing" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        compared = ok(addr, "/api/compare");
    }
    assert_eq!(compared["state"], "ready");
    let path = "%5B%22batch%22%2C%22iteration%22%5D";
    let out = vec![
        ("`GET /api/traces`", 0, list.clone()),
        (
            "While indexing: `state`, and `GET /api/overview`",
            1,
            ok(addr, &format!("/api/overview?{window}&px=50")),
        ),
        ("`GET /api/slices?trace=T&tid=N&start=S&end=E&px=P[&from=L]`", 0, slices.clone()),
        (
            "`GET /api/slices?trace=T&tid=N&start=S&end=E&px=P[&from=L]`",
            0,
            ok(addr, &format!("/api/slices?{window}&tid={tid}&px=3")),
        ),
        ("`GET /api/points?trace=T&tid=N&start=S&end=E&px=P`", 0, points),
        (
            "`GET /api/points?trace=T&tid=N&start=S&end=E&px=P`",
            0,
            ok(addr, &format!("/api/points?{window}&tid={tid}&px=2")),
        ),
        ("`GET /api/point?trace=T&index=I`", 0, ok(addr, &format!("/api/point?trace=0&index={log_point}"))),
        (
            "`GET /api/samples?trace=T&counter=C&start=S&end=E&px=P`",
            0,
            ok(addr, &format!("/api/samples?{window}&counter=0&px=5")),
        ),
        ("`GET /api/slice?trace=T&index=I`", 0, slice.clone()),
        ("`GET /api/slice?trace=T&index=I`", 1, slice["event"].clone()),
        ("`GET /api/flow?trace=T&index=I`", 0, ok(addr, &format!("/api/flow?trace=0&index={fetch}"))),
        ("`GET /api/search?q=Q[&after=NS][&limit=N]`", 0, ok(addr, "/api/search?q=iter&limit=5")),
        (
            "`GET /api/search?q=Q&start=S&end=E&px=N`: every hit in a window",
            0,
            ok(addr, &format!("/api/search?q=*a*&start={s}&end={e}&px=100")),
        ),
        ("`GET /api/stats[?start=S&end=E][&limit=N][&trace=T&tid=N]`", 0, ok(addr, "/api/stats")),
        (
            "`GET /api/kind?trace=T&path=P&type=Y[&start=S&end=E]`",
            0,
            ok(addr, &format!("/api/kind?trace=0&type=scope&path={path}")),
        ),
        ("`GET /api/compare`: two traces compared (`phosphor view BASE NEW --compare`)", 0, compared),
    ];
    (out, Served { addr, window, iteration })
}

/// The answers of a trace being indexed: its scan's threads, and its overview.
fn indexing_answers(dir: &std::path::Path) -> [Answer; 2] {
    let scanned = dir.join("scanned.phos");
    record(&scanned);
    let traces = Arc::new(Traces::open(vec![scanned]).unwrap());
    traces.scan_only();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let indexing = listener.local_addr().unwrap();
    std::thread::spawn(move || serve(traces, listener));
    let listed = ok(indexing, "/api/traces");
    assert_eq!(listed["traces"][0]["state"], "indexing", "{listed}");
    let (ss, se) = (&listed["traces"][0]["start_ns"], &listed["traces"][0]["end_ns"]);
    let heading = "While indexing: `state`, and `GET /api/overview`";
    let overview = ok(indexing, &format!("/api/overview?trace=0&start={ss}&end={se}&px=50"));
    [(heading, 1, overview), (heading, 0, listed)]
}

/// More answers of the traces [`served_answers`] served: a slice in no flow, async slices, frames.
fn more_answers(served: &Served) -> Vec<Answer> {
    let Served { addr, window, iteration } = served;
    let addr = *addr;
    let mut out = Vec::new();
    // A slice in no flow.
    out.push((
        "`GET /api/flow?trace=T&index=I`",
        0,
        ok(addr, &format!("/api/flow?trace=0&index={iteration}")),
    ));
    // An async slice, and an async row's occurrences.
    let async_slices = ok(addr, &format!("/api/slices?{window}&async=0&px=4000"));
    let first_async = async_slices["levels"][0][0][3].clone();
    out.push((
        "`GET /api/slice?trace=T&index=I`",
        0,
        ok(addr, &format!("/api/slice?trace=0&index={first_async}")),
    ));
    out.push((
        "`GET /api/kind?trace=T&path=P&type=Y[&start=S&end=E]`",
        0,
        ok(addr, "/api/kind?trace=0&type=async&path=%5B%22item%22%5D"),
    ));
    // The frame track: 20 marks, 19 frames; at 4 pixels, runs and perhaps a frame.
    let frames = ok(addr, &format!("/api/frames?{window}&px=4"));
    assert_eq!(frames["sets"][0]["count"], 19, "{frames}");
    out.push(("`GET /api/frames?trace=T&start=S&end=E&px=P`: the frame track", 0, frames));
    out
}

/// The answer of tokio tasks: a trace of task events as `phosphor::tokio` writes them.
fn tasks_answer(dir: &std::path::Path) -> Answer {
    let tasks = dir.join("tasks.phos");
    record_tasks(&tasks);
    let task_addr = start(&[tasks]);
    let answer = ok(task_addr, "/api/tasks?trace=0");
    assert_eq!(
        (&answer["tasks"][0]["spawned"], &answer["tasks"][0]["polls"]),
        (&json!(2), &json!(4)),
        "{answer}"
    );
    ("`GET /api/tasks?trace=T`: tokio tasks by name", 0, answer)
}

/// The answers of long polls: the tasks of a crafted trace with a long poll holding CPU samples
/// (`long_poll_tests.rs`), and the stacks of its samples.
fn long_poll_answers(dir: &std::path::Path) -> Vec<Answer> {
    let path = dir.join("long-poll.phos");
    std::fs::write(&path, crate::long_poll_tests::long_poll_trace(true)).unwrap();
    let addr = start(&[path]);
    let tasks = ok(addr, "/api/tasks?trace=0");
    let p = &tasks["long_polls"][0];
    let (s, d) = (p["start_ns"].as_i64().unwrap(), p["dur_ns"].as_i64().unwrap());
    let tid = p["tid"].clone();
    let stacks = ok(addr, &format!("/api/stacks?trace=0&tid={tid}&start={s}&end={}", s + d));
    assert_eq!(stacks["samples"], p["system"]["samples"], "{stacks}");
    vec![
        ("`GET /api/tasks?trace=T`: tokio tasks by name", 0, tasks),
        ("`GET /api/stacks?trace=T&tid=N&start=S&end=E`", 0, stacks),
    ]
}

/// The answers of the system context, on the crafted trace whose figures are known.
fn system_answers(dir: &std::path::Path) -> Vec<Answer> {
    let sys = dir.join("system.phos");
    std::fs::write(&sys, phosphor_craft::system::system_trace().unwrap()).unwrap();
    let addr = start(&[sys]);
    let o = ok(addr, "/api/traces")["traces"][0]["start_ns"].as_i64().unwrap();
    let stid = phosphor_craft::system::TID;
    let ms = 1_000_000;
    let sw = format!("trace=0&start={o}&end={}", o + 101 * ms);
    let work = ok(addr, &format!("/api/slices?{sw}&tid={stid}&px=1000"))["levels"][0][0][3].clone();
    let work = ok(addr, &format!("/api/slice?trace=0&index={work}"));
    vec![
        ("`GET /api/slice?trace=T&index=I`", 2, json!({ "system": work["system"] })),
        ("`GET /api/system?trace=T`", 0, ok(addr, "/api/system?trace=0")),
        (
            "`GET /api/context?trace=T&tid=N&start=S&end=E&px=P`",
            0,
            ok(addr, &format!("/api/context?{sw}&tid={stid}&px=1000")),
        ),
        (
            "`GET /api/context?trace=T&tid=N&start=S&end=E&px=P`",
            0,
            ok(addr, &format!("/api/context?{sw}&tid={stid}&px=1")),
        ),
        (
            "`GET /api/stack?trace=T&tid=N&index=I`",
            0,
            ok(addr, &format!("/api/stack?trace=0&tid={stid}&index=1")),
        ),
        ("`GET /api/heap?trace=T&start=S&end=E&px=P`", 0, ok(addr, &format!("/api/heap?{sw}&px=1000"))),
    ]
}

const LIVE: &str = "Live traces (`phosphor record --view`)";

/// The endpoints that need an index: a live trace answers them 503 (`## Errors`).
const NEED_AN_INDEX: [&str; 9] = [
    "/api/overview",
    "/api/flow",
    "/api/system",
    "/api/context",
    "/api/stack",
    "/api/stacks",
    "/api/heap",
    "/api/frames",
    "/api/tasks",
];

/// The answers of a live trace (`phosphor record --view`): a recorded file served as the recorder
/// serves the file it writes, kept live (its handle held) while it is asked. Each endpoint that
/// answers for a live trace is checked against the same example as an index's answer.
fn live_answers(dir: &Path) -> Vec<(&'static str, usize, Value)> {
    let path = dir.join("live.phos");
    record(&path);
    // Its events, counted by an index of a copy (the live file's own is made once it ends).
    let copy = dir.join("live-copy.phos");
    std::fs::copy(&path, &copy).unwrap();
    let events = crate::open(&copy, None, &BuildOptions::default()).unwrap().meta.events;
    let file = std::fs::File::open(&path).unwrap();
    let header = phosphor_format::file::Reader::new(file).unwrap().header().clone();
    let traces = Arc::new(Traces::live(crate::LiveOptions::default()));
    let handle = traces.add_live(path, &header).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || serve(traces, listener));
    // Until the live view has taken in every event (at most 2 minutes).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let list = loop {
        let list = ok(addr, "/api/traces");
        if list["traces"][0]["events"] == events {
            break list;
        }
        assert!(std::time::Instant::now() < deadline, "the live view read too little: {list}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let t = &list["traces"][0];
    assert_eq!(t["state"], "live", "{list}");
    let (s, e) = (t["start_ns"].as_i64().unwrap(), t["end_ns"].as_i64().unwrap());
    let tid = t["threads"][0]["tid"].as_u64().unwrap();
    let window = format!("trace=0&start={s}&end={e}");
    let slices = ok(addr, &format!("/api/slices?{window}&tid={tid}&px=4000"));
    // A slice alone in its item (not a run): its number is the live view's.
    let slice =
        slices["levels"][1].as_array().unwrap().iter().find(|i| i[2].as_i64() >= Some(0)).unwrap()[3].clone();
    let async_slices = ok(addr, &format!("/api/slices?{window}&async=0&px=4000"));
    let async_slice = async_slices["levels"][0][0][3].clone();
    let points = ok(addr, &format!("/api/points?{window}&tid={tid}&px=4000"));
    let log_point = points["points"].as_array().unwrap().iter().find(|p| p[3] == 1).unwrap()[2].clone();
    let slice = ok(addr, &format!("/api/slice?trace=0&index={slice}"));
    assert_eq!(slice["live"], true, "{slice}");
    let path = "%5B%22batch%22%2C%22iteration%22%5D";
    let top =
        json!({ "done": list["done"], "live": list["live"], "listening": list["listening"], "traces": [] });
    let mut out = vec![
        ("`GET /api/traces`", 0, top),
        (LIVE, 0, t.clone()),
        ("`GET /api/slices?trace=T&tid=N&start=S&end=E&px=P[&from=L]`", 0, slices.clone()),
        (
            "`GET /api/slices?trace=T&tid=N&start=S&end=E&px=P[&from=L]`",
            0,
            ok(addr, &format!("/api/slices?{window}&tid={tid}&px=3")),
        ),
        ("`GET /api/slices?trace=T&tid=N&start=S&end=E&px=P[&from=L]`", 0, async_slices.clone()),
        ("`GET /api/points?trace=T&tid=N&start=S&end=E&px=P`", 0, points),
        (
            "`GET /api/points?trace=T&tid=N&start=S&end=E&px=P`",
            0,
            ok(addr, &format!("/api/points?{window}&tid={tid}&px=2")),
        ),
        ("`GET /api/point?trace=T&index=I`", 0, ok(addr, &format!("/api/point?trace=0&index={log_point}"))),
        (
            "`GET /api/samples?trace=T&counter=C&start=S&end=E&px=P`",
            0,
            ok(addr, &format!("/api/samples?{window}&counter=0&px=5")),
        ),
        ("`GET /api/slice?trace=T&index=I`", 0, slice.clone()),
        ("`GET /api/slice?trace=T&index=I`", 1, slice["event"].clone()),
        ("`GET /api/slice?trace=T&index=I`", 0, ok(addr, &format!("/api/slice?trace=0&index={async_slice}"))),
        (
            "`GET /api/search?q=Q&start=S&end=E&px=N`: every hit in a window",
            0,
            ok(addr, &format!("/api/search?q=*a*&start={s}&end={e}&px=100")),
        ),
        (
            "`GET /api/compare`: two traces compared (`phosphor view BASE NEW --compare`)",
            0,
            ok(addr, "/api/compare"),
        ),
    ];
    // The answers that say what they cover of each live trace.
    for (heading, query) in [
        ("`GET /api/search?q=Q[&after=NS][&limit=N]`", "/api/search?q=iter&limit=5".to_owned()),
        ("`GET /api/stats[?start=S&end=E][&limit=N][&trace=T&tid=N]`", "/api/stats".to_owned()),
        (
            "`GET /api/kind?trace=T&path=P&type=Y[&start=S&end=E]`",
            format!("/api/kind?trace=0&type=scope&path={path}"),
        ),
    ] {
        let answer = ok(addr, &query);
        assert_eq!(answer["live"].as_array().map(Vec::len), Some(1), "{query}: {answer}");
        out.push((LIVE, 1, json!({ "live": answer["live"] })));
        out.push((heading, 0, answer));
    }
    for route in NEED_AN_INDEX {
        let (status, v) = get(addr, &format!("{route}?{window}&tid={tid}&px=10&index=0"));
        assert_eq!(status, 503, "{route}: {v}");
        assert!(v.as_object().is_some_and(|o| o.len() == 1 && o["error"].is_string()), "{route}: {v}");
    }
    drop(handle);
    out
}

/// The routes of the server's API, as its route table (`server.rs`) lists them.
fn routes() -> Vec<&'static str> {
    let table = include_str!("server.rs");
    let routes: Vec<&str> = table
        .split(".route(\"")
        .skip(1)
        .filter_map(|r| r.split('"').next())
        .filter(|r| r.starts_with("/api/"))
        .collect();
    assert!(routes.len() >= 16, "the route table was not found in server.rs: {routes:?}");
    routes
}

/// The route a heading of the document is about (`GET /api/...`), if any.
fn route_of(heading: &str) -> Option<&str> {
    let at = heading.find("GET /api/")? + 4;
    let rest = &heading[at..];
    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '/' || c == '_')).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The examples no trace gives: checked elsewhere or by hand.
const NOT_CHECKED: [(&str, usize, &str); 0] = [];

#[test]
fn every_example_of_the_api_document_has_the_shape_of_the_servers_answer() {
    let examples = examples();
    let file_answers = answers();
    let dir = tempfile::tempdir().unwrap();
    let live = live_answers(dir.path());
    let mut errors = Vec::new();
    // Every route is answered, and checked, in both modes (a live trace answers 503 where an
    // index is needed, checked in `live_answers`).
    for route in routes() {
        let covered = |answers: &[(&str, usize, Value)]| answers.iter().any(|a| route_of(a.0) == Some(route));
        if !covered(&file_answers) {
            errors.push(format!("{route}: no answer of an indexed trace is checked"));
        }
        if !covered(&live) && !NEED_AN_INDEX.contains(&route) {
            errors.push(format!("{route}: no answer of a live trace is checked"));
        }
    }
    let answers: Vec<_> = file_answers.into_iter().chain(live).collect();
    for ex in &examples {
        let skipped = NOT_CHECKED.iter().any(|&(h, n, _)| h == ex.heading && n == ex.nth);
        let got: Vec<&Value> =
            answers.iter().filter(|(h, n, _)| *h == ex.heading && *n == ex.nth).map(|a| &a.2).collect();
        if got.is_empty() && !skipped {
            errors.push(format!("{} (example {}): no answer checks it", ex.heading, ex.nth + 1));
        }
        for answer in got {
            for e in check(ex, answer) {
                errors.push(format!("{} (example {}): {e}", ex.heading, ex.nth + 1));
            }
        }
    }
    for (h, n, _) in &answers {
        if !examples.iter().any(|ex| ex.heading == *h && ex.nth == *n) {
            errors.push(format!("{h} (example {}): the document has no such example", n + 1));
        }
    }
    assert!(errors.is_empty(), "docs/VIEW-API.md and the API differ:\n{}", errors.join("\n"));
}

#[test]
fn the_shape_check_finds_a_key_added_renamed_removed_or_of_another_type() {
    let ex = Example {
        heading: String::new(),
        nth: 0,
        value: json!({"a": 1, "b": [[1, "x"]], "c": {"d": null}, "e": 2, "names": {"3": "x"}}),
        absent: vec!["e".into()],
        nullable: vec!["a".into()],
    };
    let good = json!({"a": null, "b": [[2, "y"]], "c": {"d": "z"}, "names": {"7": "q"}});
    assert_eq!(check(&ex, &good), Vec::<String>::new());
    for bad in [
        json!({"a": 1, "b": [], "c": {"d": 1}, "names": {}, "f": 0}),
        json!({"b": [], "c": {"d": 1}, "names": {}}),
        json!({"a": 1, "b": [], "c": {"dd": 1}, "names": {}}),
        json!({"a": "1", "b": [], "c": {"d": 1}, "names": {}}),
        json!({"a": 1, "b": [[1, 2]], "c": {"d": 1}, "names": {}}),
        json!({"a": 1, "b": [[1, "x", 3]], "c": {"d": 1}, "names": {}}),
        json!({"a": 1, "b": [], "c": {"d": 1}, "names": {"x": "q"}}),
    ] {
        assert!(!check(&ex, &bad).is_empty(), "{bad}");
    }
}

#[test]
fn every_route_of_the_server_has_a_typed_answer_and_a_documented_one() {
    let typed = crate::api::answers();
    let headings: Vec<&str> =
        DOC.lines().filter(|l| l.starts_with('#')).map(|l| l.trim_start_matches('#').trim()).collect();
    let mut errors = Vec::new();
    let routes = routes();
    for route in &routes {
        match typed.iter().find(|(r, _)| r == route) {
            None => errors.push(format!("{route}: no type in api::answers")),
            Some((_, ty)) if ty.contains("serde_json") => {
                errors.push(format!("{route}: answered with {ty}, not a type of its own"))
            }
            Some(_) => {}
        }
        if !headings.iter().any(|h| route_of(h) == Some(route)) {
            errors.push(format!("{route}: no heading of docs/VIEW-API.md documents it"));
        }
    }
    for (route, _) in &typed {
        if !routes.contains(route) {
            errors.push(format!("{route}: in api::answers but not in the route table"));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn a_list_of_keys_that_may_be_null_is_read_over_all_its_lines() {
    let examples = examples();
    let compared = examples.iter().find(|e| e.heading.starts_with("`GET /api/compare`")).unwrap();
    for key in ["kinds", "test", "base", "new"] {
        assert!(compared.nullable.iter().any(|k| k == key), "{key}: {:?}", compared.nullable);
    }
}

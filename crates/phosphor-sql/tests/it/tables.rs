//! `args`, `async_slices` and `flows` against what was recorded and against the statistics'
//! and the exporters' pairing: arguments typed as recorded and joined to their slice, async
//! slices paired per name as `phosphor stats` pairs them, and each instrumented future's polls
//! linked in time order, with the flow ids the Chrome JSON writer gives them.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use arrow::array::{Array, AsArray};
use arrow::datatypes::{Float64Type, Int64Type, UInt32Type, UInt64Type};
use arrow::record_batch::RecordBatch;
use phosphor::{
    trace_async_begin, trace_async_end, trace_future, trace_instant, trace_scope, BufferMode, TraceConfig,
    TraceLog, TraceLogConfig,
};
use phosphor_export::TraceStats;
use phosphor_format::file::Reader;
use phosphor_sql::Table;

use crate::slices::batches;

/// Column `name` of row `i` as a `u64`, `None` if null.
pub fn u64_at(b: &RecordBatch, name: &str, i: usize) -> Option<u64> {
    let c = b.column_by_name(name).unwrap_or_else(|| panic!("column {name}"));
    if c.is_null(i) {
        return None;
    }
    Some(match c.data_type() {
        arrow::datatypes::DataType::UInt32 => u64::from(c.as_primitive::<UInt32Type>().value(i)),
        _ => c.as_primitive::<UInt64Type>().value(i),
    })
}

/// Column `name` of row `i` as an `i64`, `None` if null.
pub fn i64_at(b: &RecordBatch, name: &str, i: usize) -> Option<i64> {
    let c = b.column_by_name(name).unwrap();
    (!c.is_null(i)).then(|| c.as_primitive::<Int64Type>().value(i))
}

/// Column `name` of row `i` as text, `None` if null.
pub fn str_at(b: &RecordBatch, name: &str, i: usize) -> Option<String> {
    let c = b.column_by_name(name).unwrap();
    (!c.is_null(i)).then(|| c.as_string::<i32>().value(i).to_owned())
}

/// Every row of `table` read from `bytes` (in small batches), as the batches and row numbers.
pub fn rows(bytes: &[u8], table: Table) -> Vec<(RecordBatch, usize)> {
    batches(bytes, table, 7)
        .into_iter()
        .flat_map(|b| (0..b.num_rows()).map(move |i| (b.clone(), i)))
        .collect()
}

fn log() -> std::sync::Arc<TraceLog> {
    let log = TraceLog::new(TraceLogConfig::default()).expect("a log");
    log.start(TraceConfig::new(BufferMode::Fixed, 8 << 20)).expect("started");
    log
}

fn take(log: &TraceLog) -> Vec<u8> {
    log.stop();
    log.take_trace().expect("a trace").write_to(Vec::new()).expect("written")
}

#[test]
fn args_are_each_slice_and_instant_argument_typed_and_join_their_row_by_id() {
    let log = log();
    for n in 0..5u64 {
        trace_scope!(log: &log, "app", "job", "n" => n, "delta" => -(n as i64));
        {
            trace_scope!(log: &log, "app", "step", "ratio" => n as f64 / 4.0, "ok" => n % 2 == 0);
            trace_instant!(log: &log, "app", "mark", "who" => format!("w{n}"));
        }
    }
    let bytes = take(&log);

    // The slices and instants, read on their own (a query reads each table apart): by id.
    let mut names: HashMap<u64, (String, String)> = HashMap::new();
    for (b, i) in rows(&bytes, Table::Slices) {
        names.insert(u64_at(&b, "id", i).unwrap(), ("slice".into(), str_at(&b, "name", i).unwrap()));
    }
    for (b, i) in rows(&bytes, Table::Instants) {
        let id = u64_at(&b, "id", i).unwrap();
        assert!(
            names.insert(id, ("instant".into(), str_at(&b, "name", i).unwrap())).is_none(),
            "one id space"
        );
    }
    assert_eq!(names.len(), 15);

    // Per owner (its name, kind) and key: the values, typed.
    let mut got: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (b, i) in rows(&bytes, Table::Args) {
        let (kind, name) = &names[&u64_at(&b, "slice_id", i).unwrap()];
        assert_eq!(kind, &str_at(&b, "kind", i).unwrap());
        let ty = str_at(&b, "value_type", i).unwrap();
        let value = match ty.as_str() {
            "int" => i64_at(&b, "int_value", i).unwrap().to_string(),
            "uint" => u64_at(&b, "uint_value", i).unwrap().to_string(),
            "real" => {
                b.column_by_name("real_value").unwrap().as_primitive::<Float64Type>().value(i).to_string()
            }
            "bool" => b.column_by_name("bool_value").unwrap().as_boolean().value(i).to_string(),
            "string" => str_at(&b, "string_value", i).unwrap(),
            other => panic!("{other}"),
        };
        // Exactly one value column is set.
        let set = ["int_value", "uint_value", "real_value", "string_value", "bool_value"]
            .iter()
            .filter(|c| !b.column_by_name(c).unwrap().is_null(i))
            .count();
        assert_eq!(set, 1);
        got.entry((name.clone(), format!("{}:{ty}", str_at(&b, "key", i).unwrap()))).or_default().push(value);
    }
    let expect = |v: Vec<String>| {
        let mut v = v;
        v.sort();
        v
    };
    for v in got.values_mut() {
        v.sort();
    }
    let want: BTreeMap<(String, String), Vec<String>> = [
        (("job".into(), "n:uint".into()), expect((0..5).map(|n| n.to_string()).collect())),
        (("job".into(), "delta:int".into()), expect((0..5).map(|n: i64| (-n).to_string()).collect())),
        (
            ("step".into(), "ratio:real".into()),
            expect((0..5).map(|n| (n as f64 / 4.0).to_string()).collect()),
        ),
        (("step".into(), "ok:bool".into()), expect((0..5).map(|n| (n % 2 == 0).to_string()).collect())),
        (("mark".into(), "who:string".into()), expect((0..5).map(|n| format!("w{n}")).collect())),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);
}

/// A future that is pending `n` times before it is ready (waking itself each time).
struct Yield(u32);

impl Future for Yield {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Polls `f` until it is ready; returns how many polls it took.
fn block_on<F: Future>(f: F) -> u32 {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    let mut polls = 1;
    while f.as_mut().poll(&mut cx).is_pending() {
        polls += 1;
    }
    polls
}

/// A trace of async slices across threads (some never ended, some never begun) and of
/// instrumented futures; and per future task, the polls it took, by thread.
pub fn asyncs_trace() -> (Vec<u8>, Vec<u32>) {
    let log = log();
    let mut polls = Vec::new();
    std::thread::scope(|s| {
        let log = &log;
        let a = s.spawn(move || {
            for id in 0..6u64 {
                trace_async_begin!(log: log, "net", "request", id, "size" => id * 10);
            }
            trace_async_begin!(log: log, "net", "orphan", 99u64);
            (1..4u32).map(|n| block_on(trace_future!(log: log, "rt", "task", Yield(n)))).collect::<Vec<_>>()
        });
        let p = a.join().unwrap();
        polls.extend(p);
        s.spawn(move || {
            for id in 0..6u64 {
                trace_async_end!(log: log, "net", "request", id);
            }
            trace_async_end!(log: log, "net", "stray", 7u64);
            polls_on_this_thread(log)
        })
        .join()
        .map(|p| polls.extend(p))
        .unwrap();
    });
    (take(&log), polls)
}

fn polls_on_this_thread(log: &TraceLog) -> Vec<u32> {
    vec![block_on(trace_future!(log: log, "rt", "task", Yield(5)))]
}

#[test]
fn async_slices_pair_per_name_as_the_statistics_pair_them() {
    let (bytes, _) = asyncs_trace();
    let stats = TraceStats::from_bytes(&bytes).unwrap();
    // Per name: (pairs, their total ns, begins never ended, ends never begun).
    let mut want: BTreeMap<String, (u64, u64, u64, u64)> = BTreeMap::new();
    for a in &stats.asyncs {
        let d = a.durations.as_ref();
        want.insert(
            a.name.clone(),
            (d.map_or(0, |d| d.samples), d.map_or(0, |d| d.total_ns), a.unended, a.unbegun),
        );
    }
    assert!(want.len() >= 4, "{want:?}");
    let mut got: BTreeMap<String, (u64, u64, u64, u64)> = BTreeMap::new();
    let mut ids = Vec::new();
    for (b, i) in rows(&bytes, Table::AsyncSlices) {
        ids.push(u64_at(&b, "id", i).unwrap());
        let e = got.entry(str_at(&b, "name", i).unwrap()).or_default();
        match str_at(&b, "state", i).unwrap().as_str() {
            "complete" => {
                e.0 += 1;
                e.1 += i64_at(&b, "dur", i).unwrap() as u64;
                assert!(u64_at(&b, "begin_tid", i).is_some() && u64_at(&b, "end_tid", i).is_some());
            }
            "unended" => {
                e.2 += 1;
                assert_eq!((i64_at(&b, "dur", i), u64_at(&b, "end_tid", i)), (None, None));
            }
            "unbegun" => {
                e.3 += 1;
                assert_eq!((i64_at(&b, "dur", i), u64_at(&b, "begin_tid", i)), (None, None));
            }
            other => panic!("{other}"),
        }
    }
    assert_eq!(got, want);
    // The requests began on one thread and ended on another, with their begin's arguments.
    let requests: Vec<(RecordBatch, usize)> = rows(&bytes, Table::AsyncSlices)
        .into_iter()
        .filter(|(b, i)| str_at(b, "name", *i).as_deref() == Some("request"))
        .collect();
    assert_eq!(requests.len(), 6);
    for (b, i) in &requests {
        assert_ne!(u64_at(b, "begin_tid", *i), u64_at(b, "end_tid", *i));
        let id = u64_at(b, "async_id", *i).unwrap();
        assert_eq!(str_at(b, "arguments", *i), Some(format!("{{\"size\":{}}}", id * 10)));
    }
    ids.sort_unstable();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>(), "ids of their own, from 1");
}

/// A row of `flows`: from slice, from ts, to slice, to ts, flow id.
type Link = (Option<u64>, i64, Option<u64>, i64, u64);

#[test]
fn flows_link_each_futures_begin_polls_and_end_in_time_order_with_the_writers_flow_ids() {
    let (bytes, polls) = asyncs_trace();
    // The futures' async slices, by id.
    let mut futures: HashMap<u64, (u64, i64, i64)> = HashMap::new();
    for (b, i) in rows(&bytes, Table::AsyncSlices) {
        if b.column_by_name("future").unwrap().as_boolean().value(i) {
            let ts = i64_at(&b, "ts", i).unwrap();
            let end = ts + i64_at(&b, "dur", i).expect("each future ended");
            futures.insert(u64_at(&b, "id", i).unwrap(), (u64_at(&b, "async_id", i).unwrap(), ts, end));
        }
    }
    assert_eq!(futures.len(), polls.len());
    // The polls are slices named like the future, their argument `task` the async id.
    let mut poll_slices: HashMap<u64, (u64, i64)> = HashMap::new();
    for (b, i) in rows(&bytes, Table::Slices) {
        if str_at(&b, "name", i).as_deref() == Some("task") {
            let task: u64 = str_at(&b, "arguments", i)
                .unwrap()
                .trim_start_matches("{\"task\":")
                .trim_end_matches('}')
                .parse()
                .unwrap();
            poll_slices.insert(u64_at(&b, "id", i).unwrap(), (task, i64_at(&b, "ts", i).unwrap()));
        }
    }
    assert_eq!(poll_slices.len() as u32, polls.iter().sum::<u32>());

    // Per async slice: its links, from and to, in order.
    let mut chains: BTreeMap<u64, Vec<Link>> = BTreeMap::new();
    for (b, i) in rows(&bytes, Table::Flows) {
        let a = u64_at(&b, "async_slice_id", i).expect("each flow has its async slice");
        let link = (
            u64_at(&b, "from_slice_id", i),
            i64_at(&b, "from_ts", i).unwrap(),
            u64_at(&b, "to_slice_id", i),
            i64_at(&b, "to_ts", i).unwrap(),
            u64_at(&b, "flow_id", i).unwrap(),
        );
        assert_eq!(u64_at(&b, "async_id", i), Some(futures[&a].0));
        chains.entry(a).or_default().push(link);
    }
    assert_eq!(chains.len(), futures.len());
    let mut flow_ids = Vec::new();
    for (a, links) in &mut chains {
        let (task, begin, end) = futures[a];
        links.sort_by_key(|l| (l.1, l.3));
        // begin → poll → ... → poll → end: one link more than the polls.
        let polled: Vec<u64> = links.iter().filter_map(|l| l.2).collect();
        assert_eq!(links.len(), polled.len() + 1);
        assert_eq!((links[0].0, links[0].1), (None, begin), "from the begin");
        let last = links.last().unwrap();
        assert_eq!((last.2, last.3), (None, end), "to the end");
        for w in links.windows(2) {
            assert_eq!(w[0].2, w[1].0, "each link starts where the last ended");
            assert!(w[0].3 <= w[1].3);
        }
        for p in &polled {
            assert_eq!(poll_slices[p].0, task, "a poll of this task");
        }
        assert!(links.iter().all(|l| l.4 == links[0].4), "one flow id");
        flow_ids.push(links[0].4);
    }
    let mut counts: Vec<u32> = chains.values().map(|l| l.len() as u32 - 1).collect();
    let mut polls = polls;
    counts.sort_unstable();
    polls.sort_unstable();
    assert_eq!(counts, polls, "every poll recorded, linked once");

    // The Chrome JSON writer binds each future's events with the same flow ids.
    let mut json = Vec::new();
    phosphor_export::chrome::write_chrome_json(Reader::new(&bytes[..]).unwrap(), &mut json).unwrap();
    let json = String::from_utf8(json).unwrap();
    let mut written: Vec<u64> = json
        .split("\"bind_id\":\"0x")
        .skip(1)
        .map(|s| u64::from_str_radix(&s[..s.find('"').unwrap()], 16).unwrap())
        .collect();
    written.sort_unstable();
    written.dedup();
    flow_ids.sort_unstable();
    assert_eq!(written, flow_ids);
}

#[test]
fn an_instants_slice_id_is_the_enclosing_slices_id_though_each_table_is_read_apart() {
    // A query reads each table in a pass of its own: the ids must not depend on the tables read.
    let bytes = crate::files::recorded(2, 30);
    let mut slices: HashMap<u64, (String, i64, i64)> = HashMap::new();
    for (b, i) in rows(&bytes, Table::Slices) {
        let (ts, dur) = (i64_at(&b, "ts", i).unwrap(), i64_at(&b, "dur", i).unwrap());
        slices.insert(u64_at(&b, "id", i).unwrap(), (str_at(&b, "path", i).unwrap(), ts, ts + dur));
    }
    let mut contacts = 0;
    for (b, i) in rows(&bytes, Table::Instants) {
        let parent = &slices[&u64_at(&b, "slice_id", i).expect("inside a slice")];
        let (path, ts) = (str_at(&b, "path", i).unwrap(), i64_at(&b, "ts", i).unwrap());
        assert_eq!(format!("{}/contact", parent.0), path);
        assert!(parent.1 <= ts && ts <= parent.2);
        contacts += 1;
    }
    // Per thread, `frame % 4` contacts a frame (`recorded`).
    assert_eq!(contacts, 2 * (0..30).map(|f| f % 4).sum::<usize>());
}

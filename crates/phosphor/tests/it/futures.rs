//! Instrumented futures (`trace_future!`): one async slice per task, a poll slice per poll on the
//! thread that ran it, each linked to its task by id; on a multi-threaded tokio runtime, and moved
//! between threads by hand.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use phosphor::{trace_future, ArgValue, BufferMode, Event, Phase, TraceConfig, TraceLog};

use crate::support::{events, started, stop_and_take};

fn config(categories: &str) -> TraceConfig {
    TraceConfig::new(BufferMode::Fixed, 8 << 20).categories(categories).unwrap()
}

/// What a trace says about each task: its begin and end (with `cancelled`), and its polls'
/// threads.
#[derive(Debug, Default)]
struct Task {
    begins: usize,
    ends: Vec<bool>,
    poll_threads: Vec<u32>,
    first_begin: u64,
    early_polls: usize,
}

fn tasks(evs: &[Event<'_>], name: &str) -> BTreeMap<u64, Task> {
    let mut tasks: BTreeMap<u64, Task> = BTreeMap::new();
    let mut polls = Vec::new();
    for e in evs.iter().filter(|e| e.callsite.name == name) {
        match e.callsite.phase {
            Phase::AsyncBegin => {
                let t = tasks.entry(e.async_id.unwrap()).or_default();
                t.begins += 1;
                t.first_begin = e.ts;
            }
            Phase::AsyncEnd => {
                let cancelled = matches!(e.args[0], Some(("cancelled", ArgValue::Bool(true))));
                tasks.entry(e.async_id.unwrap()).or_default().ends.push(cancelled);
            }
            Phase::Complete => {
                assert!(e.callsite.flow, "a poll is flagged as a flow");
                let Some(("task", ArgValue::U64(id))) = e.args[0] else {
                    panic!("a poll names its task: {e:?}")
                };
                polls.push((id, e.tid, e.ts));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    for (id, tid, ts) in polls {
        let t = tasks.get_mut(&id).unwrap_or_else(|| panic!("poll of unknown task {id}"));
        t.poll_threads.push(tid);
        t.early_polls += usize::from(ts < t.first_begin);
    }
    tasks
}

/// Yields `n` times, waking itself, so that each yield is one more poll.
struct YieldTimes(u32);

impl Future for YieldTimes {
    type Output = u32;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        if self.0 == 0 {
            return Poll::Ready(7);
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[test]
fn a_task_on_a_multi_threaded_runtime_is_one_async_slice_with_a_slice_per_poll() {
    let log = started(config("rt"));
    let leaked: &'static Arc<TraceLog> = Box::leak(Box::new(log.clone()));
    let log_ref: &'static TraceLog = leaked;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().unwrap();
    const TASKS: u64 = 24;
    const YIELDS: u32 = 5;
    let results: Vec<u32> = rt.block_on(async move {
        let handles: Vec<_> = (0..TASKS)
            .map(|_| {
                tokio::spawn(trace_future!(log: log_ref, "rt", "worker", async move {
                    let mut sum = 0;
                    for _ in 0..YIELDS {
                        tokio::task::yield_now().await;
                        sum += 1;
                    }
                    sum
                }))
            })
            .collect();
        // One more, cancelled: a timeout drops it before its sleep ends.
        let slow = trace_future!(log: log_ref, "rt", "worker", tokio::time::sleep(Duration::from_secs(30)));
        assert!(tokio::time::timeout(Duration::from_millis(5), slow).await.is_err());
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await.unwrap());
        }
        out
    });
    drop(rt);
    assert_eq!(results, vec![YIELDS; TASKS as usize]);
    let trace = stop_and_take(&log);
    let evs = events(&trace);
    let tasks = tasks(&evs, "worker");
    assert_eq!(tasks.len(), TASKS as usize + 1, "one async slice per task");
    let mut cancelled = 0;
    for (id, t) in &tasks {
        assert_eq!(t.begins, 1, "task {id}");
        assert_eq!(t.ends.len(), 1, "task {id} ends once");
        assert_eq!(t.early_polls, 0, "task {id}'s polls come after its begin");
        if t.ends[0] {
            cancelled += 1;
            assert!(!t.poll_threads.is_empty());
        } else {
            // A yield is one poll more than the yields (the last one returns Ready).
            assert_eq!(t.poll_threads.len(), YIELDS as usize + 1, "task {id}");
        }
    }
    assert_eq!(cancelled, 1, "the timed-out future's slice ends cancelled");
    assert_eq!(trace.stats().dropped.total(), 0);
}

#[test]
fn a_future_moved_to_another_thread_keeps_its_slice_and_polls_there() {
    let log = started(config("moved"));
    let leaked: &'static Arc<TraceLog> = Box::leak(Box::new(log.clone()));
    let log_ref: &'static TraceLog = leaked;
    let mut fut = Box::pin(trace_future!(log: log_ref, "moved", "hop", YieldTimes(3)));
    let id = fut.task_id();
    assert_ne!(id, 0);
    let mut cx = Context::from_waker(std::task::Waker::noop());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    let here = phosphor::current_thread_id();
    let there = std::thread::spawn(move || {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        loop {
            if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                assert_eq!(v, 7);
                assert_eq!(fut.task_id(), 0, "the slice is closed once the future is done");
                return phosphor::current_thread_id();
            }
        }
    })
    .join()
    .unwrap();
    let trace = stop_and_take(&log);
    let evs = events(&trace);
    let tasks = tasks(&evs, "hop");
    let t = &tasks[&id];
    assert_eq!((t.begins, t.ends.as_slice()), (1, &[false][..]));
    assert_eq!(t.poll_threads, [here, there, there, there]);
    let threads: BTreeSet<u32> = t.poll_threads.iter().copied().collect();
    assert_eq!(threads.len(), 2);
}

#[test]
fn an_untraced_category_records_nothing_and_the_future_still_runs() {
    let log = started(config("something-else"));
    let leaked: &'static Arc<TraceLog> = Box::leak(Box::new(log.clone()));
    let log_ref: &'static TraceLog = leaked;
    let mut fut = Box::pin(trace_future!(log: log_ref, "quiet", "task", YieldTimes(2)));
    assert_eq!(fut.task_id(), 0);
    let mut cx = Context::from_waker(std::task::Waker::noop());
    let mut polls = 0;
    while fut.as_mut().poll(&mut cx).is_pending() {
        polls += 1;
    }
    assert_eq!(polls, 2);
    let trace = stop_and_take(&log);
    assert_eq!(events(&trace).len(), 0);
}

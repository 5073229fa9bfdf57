//! Flows in the index: an instrumented future's async slice and its polls, linked.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use phosphor::{trace_future, BufferMode, TraceConfig, TraceLog, TraceLogConfig};

use crate::flows::member_kinds;
use crate::{open, BuildOptions};

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

#[test]
fn a_futures_polls_and_its_async_slice_make_one_flow_in_time_order() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.phos");
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    // Two tasks of one name, polled in turn: 3 polls and 2 polls.
    let mut a = Box::pin(trace_future!(log: &log, "test", "fetch", Yields(2)));
    let mut b = Box::pin(trace_future!(log: &log, "test", "fetch", Yields(1)));
    for _ in 0..3 {
        let _ = a.as_mut().poll(&mut cx);
        let _ = b.as_mut().poll(&mut cx);
    }
    drop((a, b));
    log.stop();
    log.take_trace().unwrap().save(&path).unwrap();

    let index = open(&path, None, &BuildOptions::default()).unwrap();
    // Members by (name, id, time): task a's begin, 3 polls, end; then task b's.
    let members: Vec<_> = (0..index.flow_count()).map(|i| index.flow(i)).collect();
    let kinds: Vec<u8> = members.iter().map(|m| m.kind).collect();
    use member_kinds::{BEGIN, END, POLL};
    assert_eq!(kinds, [BEGIN, POLL, POLL, POLL, END, BEGIN, POLL, POLL, END], "{members:?}");
    assert!(members.windows(2).all(|w| w[0].key() < w[1].key()));
    // Each member is found by the event it was recorded at.
    for m in &members {
        assert_eq!(index.flow_by_event(m.event), Some(*m));
    }
    assert_eq!(index.flow_by_event(u64::MAX >> 8), None);
    // The polls are slices of the thread, their begins the async slices.
    let thread = &index.threads[0];
    let polls: u64 = thread.levels.iter().map(|l| l.1).sum();
    assert_eq!(polls, 5);
    assert_eq!(index.asyncs[0].levels.iter().map(|l| l.1).sum::<u64>(), 2);
    let first_poll = index.slices_in(thread, crate::Window::new(0, u64::MAX / 2, 100))[0]
        .iter()
        .map(|it| match *it {
            crate::SliceItem::Slice(i, _) => i,
            crate::SliceItem::Merged { first, .. } => first,
        })
        .next()
        .unwrap();
    drop(index);

    // Through the API: the flow of task a's first poll, from its begin to its end.
    let addr = crate::server::tests::start(&[path]);
    let (status, f) = crate::server::tests::get(addr, &format!("/api/flow?trace=0&index={first_poll}"));
    assert_eq!(status, 200, "{f}");
    assert_eq!(f["name"], "fetch");
    let m = f["members"].as_array().unwrap();
    let kinds: Vec<&str> = m.iter().map(|m| m["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["begin", "poll", "poll", "poll", "end"], "{f}");
    // The begin and the end are the one async slice; the polls are slices of the thread, in time
    // order, the first the one asked about.
    assert_eq!((m[0]["async"].as_u64(), m[0]["index"].clone()), (Some(0), m[4]["index"].clone()));
    assert_eq!(m[1]["index"].as_u64(), Some(first_poll));
    let starts: Vec<i64> = m[1..4].iter().map(|p| p["start_ns"].as_i64().unwrap()).collect();
    assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:?}");
    assert!(m[1..4].iter().all(|p| p["tid"].is_u64() && p["async"].is_null()), "{f}");
    // The async slice asks for the same flow.
    let (_, g) = crate::server::tests::get(addr, &format!("/api/flow?trace=0&index={}", m[0]["index"]));
    assert_eq!(g["members"], f["members"]);
    // A slice of no flow has none; a slice that is not there is a 404.
    let (status, none) = crate::server::tests::get(addr, "/api/flow?trace=0&index=999999");
    assert_eq!(status, 404, "{none}");
}

//! Flows on the viewer's page: an instrumented future polled on two threads, its async slice and
//! its polls linked by arrows when a poll is clicked, in headless Chromium
//! (`scripts/browser/view-flow.mjs`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use phosphor::{trace_future, BufferMode, TraceConfig, TraceLog, TraceLogConfig};

use crate::browser::check;
use crate::cli::scratch;
use crate::view::{get, start_viewer};

/// Pending `n` times, then ready.
struct Yields(u32);

impl Future for Yields {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        std::thread::sleep(std::time::Duration::from_micros(200));
        Poll::Pending
    }
}

#[test]
fn a_clicked_poll_shows_arrows_through_its_futures_async_slice_and_polls_on_two_threads() {
    let dir = scratch("view-flow");
    let path = dir.join("flow.phos");
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20)).unwrap();
    // One task: polled once here, twice on another thread, once more here (it completes then).
    let mut cx = Context::from_waker(Waker::noop());
    let mut task = Box::pin(trace_future!(log: &log, "test", "fetch", Yields(3)));
    assert!(task.as_mut().poll(&mut cx).is_pending());
    let mut task = std::thread::scope(|s| {
        s.spawn(|| {
            let mut cx = Context::from_waker(Waker::noop());
            assert!(task.as_mut().poll(&mut cx).is_pending());
            assert!(task.as_mut().poll(&mut cx).is_pending());
            task
        })
        .join()
        .unwrap()
    });
    assert!(task.as_mut().poll(&mut cx).is_ready());
    drop(task);
    log.stop();
    log.take_trace().unwrap().save(&path).unwrap();

    let (_viewer, host) = start_viewer(&path, "view-flow-cache");
    let (_, list) = get(&host, "/api/traces");
    let trace = &list["traces"][0];
    // The first poll: the first slice of the thread that polled first.
    let (start, end) = (trace["start_ns"].as_i64().unwrap(), trace["end_ns"].as_i64().unwrap());
    let threads = trace["threads"].as_array().unwrap();
    let (poll, tid) = threads
        .iter()
        .filter_map(|t| {
            let path = format!("/api/slices?trace=0&tid={}&start={start}&end={end}&px=4000", t["tid"]);
            let (_, w) = get(&host, &path);
            let first = w["levels"][0].as_array()?.first()?.clone();
            Some((first, t["tid"].as_u64().unwrap()))
        })
        .min_by_key(|(s, _)| s[0].as_i64().unwrap())
        .expect("a poll");
    let (_, flow) = get(&host, &format!("/api/flow?trace=0&index={}", poll[3]));
    let members = flow["members"].as_array().unwrap();
    let kinds: Vec<&str> = members.iter().map(|m| m["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["begin", "poll", "poll", "poll", "poll", "end"], "{flow}");

    let slice = serde_json::json!({"tid": tid, "level": 0, "start": poll[0], "end": poll[1]});
    let shot = dir.join("view-flow.png");
    let url = format!("http://{host}/");
    let r =
        check("view-flow.mjs", &[url.as_ref(), slice.to_string().as_ref(), shot.as_os_str(), "120".as_ref()]);
    assert_eq!(r["errors"], serde_json::json!([]), "{r}");
    assert_eq!(r["name"], "fetch", "{r}");
    // Begin → 4 polls → end: five arrows, every member on a track of the page.
    assert_eq!(r["arrows"], 5, "{r}");
    assert_eq!(r["flow"].as_str().unwrap_or(""), format!("fetch #{}: 4 polls", flow["id"]), "{r}");
    assert!(shot.is_file());
}

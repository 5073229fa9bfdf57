//! The instrumented work: every macro, in both groups. Values used only by the instrumentation
//! (`n`, `bytes`, `id`, `start`) must not warn when it is compiled out (`#![deny(warnings)]`).

use std::sync::Mutex;
use std::time::Duration;

use phosphor::{
    pstr, trace_async_begin, trace_async_end, trace_begin, trace_complete, trace_counter, trace_data,
    trace_end, trace_histogram, trace_instant, trace_lock_guard, trace_log, trace_scope, trace_sum,
};

/// `#[phosphor::trace]` in the net group: a scope.
#[phosphor::trace(group = net, category = "cgo.net", name = "cgo-net-9f2c1-attr", args(n))]
fn attr_net(n: u64) -> u64 {
    n + 1
}

/// `#[phosphor::trace]` in the net group: an async slice, with a slice per poll.
#[phosphor::trace(group = net, category = "cgo.net", name = "cgo-net-9f2c1-attr-async", args(n))]
async fn attr_net_async(n: u64) -> u64 {
    n + 2
}

/// `#[phosphor::trace]` in the disk group: a scope.
#[phosphor::trace(group = disk, category = "cgo.disk", name = "cgo-disk-4be07-attr", args(n))]
fn attr_disk(n: u64) -> u64 {
    n + 1
}

/// `#[phosphor::trace]` in the disk group: an async slice, with a slice per poll.
#[phosphor::trace(group = disk, category = "cgo.disk", name = "cgo-disk-4be07-attr-async", args(n))]
async fn attr_disk_async(n: u64) -> u64 {
    n + 2
}

/// Runs a future that is ready at its first poll.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match std::pin::pin!(f).poll(&mut cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => unreachable!("the future is ready at once"),
    }
}

/// Emits 21 events in the net group (and 21 in the disk group when it is compiled in), plus a sum
/// and a histogram in each; and two logs outside the groups, a `warn` and an `info`.
pub fn run(n: u64) {
    assert_eq!((attr_net(n), block_on(attr_net_async(n))), (n + 1, n + 2));
    assert_eq!((attr_disk(n), block_on(attr_disk_async(n))), (n + 1, n + 2));
    let m = Mutex::new(0u64);
    let bytes = n * 100;
    let id = n + 1;
    {
        trace_scope!(group: net, "cgo.net", "cgo-net-9f2c1-scope", "n" => n);
        trace_instant!(group: net, "cgo.net", "cgo-net-9f2c1-instant", "bytes" => bytes);
        trace_counter!(group: net, "cgo.net", "cgo-net-9f2c1-counter", bytes);
        trace_data!(group: net, "cgo.net", "cgo-net-9f2c1-data", bytes);
        trace_begin!(group: net, "cgo.net", "cgo-net-9f2c1-begin");
        trace_end!(group: net, "cgo.net", "cgo-net-9f2c1-begin");
        trace_async_begin!(group: net, "cgo.net", "cgo-net-9f2c1-async", id);
        trace_async_end!(group: net, "cgo.net", "cgo-net-9f2c1-async", id);
        let start = phosphor::now();
        trace_complete!(group: net, "cgo.net", "cgo-net-9f2c1-complete", start, Duration::from_nanos(5));
        trace_log!(group: net, info, "cgo.net", "cgo-net-9f2c1-log {} bytes", bytes);
        trace_sum!(group: net, "cgo.net", "cgo-net-9f2c1-sum", bytes);
        trace_histogram!(group: net, "cgo.net", "cgo-net-9f2c1-histogram", bytes);
        let mut g = trace_lock_guard!(group: net, "cgo.net", "cgo-net-9f2c1-lock", m.lock().unwrap());
        *g += 1;
        drop(g);
        let mut g = trace_lock_guard!(group: net, "cgo.net", "cgo-net-9f2c1-lock-args", m.lock().unwrap(), "n" => n, "id" => id);
        *g += 1;
        drop(g);
        let mut g = trace_lock_guard!(group: net, "cgo.net", dyn pstr!("cgo-net-9f2c1-dyn-lock"), m.lock().unwrap(), "n" => n);
        *g += 1;
        let log = phosphor::TraceLog::global();
        trace_instant!(group: net, log: log, "cgo.net", "cgo-net-9f2c1-logged", "n" => n);
    }
    // Outside any group: only the compile-time level limit decides (feature `max-level-warn`).
    trace_log!(warn, "cgo.level", "cgo-level-warn-51d3 {}", n);
    trace_log!(info, "cgo.level", "cgo-level-info-8a6e {}", n);
    {
        trace_scope!(group: disk, "cgo.disk", "cgo-disk-4be07-scope", "n" => n);
        trace_instant!(group: disk, "cgo.disk", "cgo-disk-4be07-instant", "bytes" => bytes);
        trace_counter!(group: disk, "cgo.disk", "cgo-disk-4be07-counter", bytes);
        trace_data!(group: disk, "cgo.disk", "cgo-disk-4be07-data", bytes);
        trace_begin!(group: disk, "cgo.disk", "cgo-disk-4be07-begin");
        trace_end!(group: disk, "cgo.disk", "cgo-disk-4be07-begin");
        trace_async_begin!(group: disk, "cgo.disk", "cgo-disk-4be07-async", id);
        trace_async_end!(group: disk, "cgo.disk", "cgo-disk-4be07-async", id);
        let start = phosphor::now();
        trace_complete!(group: disk, "cgo.disk", "cgo-disk-4be07-complete", start, Duration::from_nanos(5));
        trace_log!(group: disk, info, "cgo.disk", "cgo-disk-4be07-log {} bytes", bytes);
        trace_sum!(group: disk, "cgo.disk", "cgo-disk-4be07-sum", bytes);
        trace_histogram!(group: disk, "cgo.disk", "cgo-disk-4be07-histogram", bytes);
        let mut g = trace_lock_guard!(group: disk, "cgo.disk", "cgo-disk-4be07-lock", m.lock().unwrap());
        *g += 1;
        drop(g);
        let mut g = trace_lock_guard!(group: disk, "cgo.disk", "cgo-disk-4be07-lock-args", m.lock().unwrap(), "n" => n, "id" => id);
        *g += 1;
        drop(g);
        let mut g = trace_lock_guard!(group: disk, "cgo.disk", dyn pstr!("cgo-disk-4be07-dyn-lock"), m.lock().unwrap(), "n" => n);
        *g += 1;
        let log = phosphor::TraceLog::global();
        trace_instant!(group: disk, log: log, "cgo.disk", "cgo-disk-4be07-logged", "n" => n);
    }
}

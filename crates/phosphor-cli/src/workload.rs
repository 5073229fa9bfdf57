//! The demo's instrumented workload: a small producer/consumer pipeline.
//!
//! Each worker thread loops over iterations: a `trace_scope!` per iteration with `parse` and
//! `transform` (itself holding `hash`) nested inside, a slow `flush` now and then, batches of
//! iterations bracketed by `trace_begin!`/`trace_end!`, `trace_instant!` checkpoints with
//! arguments (one a dynamic string), and every few iterations an item handed to the sink through a
//! shared queue: an async slice (`trace_async_begin!` here, `trace_async_end!` on the sink), the
//! queue's `Mutex` taken under `trace_lock_guard!`, and its depth sampled with `trace_counter!`.
//! The pipeline is bounded, as real ones are: at most [`MAX_IN_FLIGHT`] items handed off and not
//! yet consumed; a worker that finds it full yields until the sink makes room (shedding the item
//! instead left a few hundred of the 20k demo's 3,884 items when the sink was starved of CPU). So
//! the items' async slices, which Perfetto draws on a lane per slice open at once, take at most
//! about that many lanes (without the bound the sink fell thousands of items behind, and the full
//! demo needed 4,215).
//! Issue 5's points are there too: `trace_log!` messages at several levels (formatted only by the
//! tools), `trace_data!` values inside scopes, a `trace_sum!` and a `trace_histogram!` (aggregated
//! in process, no events), and scopes named at run time (`dyn`, from `PString`s).
//!
//! Every thread counts each event it emits, so the demo can check the recorder's accounting:
//! every emitted event is either recorded or counted as dropped.

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use phosphor::{
    pstr, trace_async_begin, trace_async_end, trace_begin, trace_counter, trace_data, trace_end,
    trace_histogram, trace_instant, trace_lock_guard, trace_log, trace_scope, trace_sum, PString, Static,
};

/// The stages a consumed item goes through, chosen at run time: `dyn` scope names.
const STAGES: [PString; 3] = [pstr!("stage.decode"), pstr!("stage.validate"), pstr!("stage.store")];

/// What one thread emitted.
#[derive(Debug)]
pub struct ThreadReport {
    /// Its id in the trace.
    pub tid: u32,
    /// Events it emitted, its `phosphor/scope_alloc` events included.
    pub emitted: u64,
    /// Of those, the `phosphor/scope_alloc` events the runtime wrote after its scopes (with
    /// allocations counted, `demo --system`).
    pub scope_allocs: u64,
}

impl ThreadReport {
    /// The calling thread's report: its own `n` events, and its `scope_alloc` events since
    /// `scope_allocs_before`.
    fn new(n: u64, scope_allocs_before: u64) -> ThreadReport {
        let scope_allocs = phosphor::alloc::scope_alloc_events() - scope_allocs_before;
        ThreadReport { tid: phosphor::current_thread_id(), emitted: n + scope_allocs, scope_allocs }
    }
}

/// Iterations per `batch` begin/end pair.
const BATCH: u64 = 16;
/// An item goes to the sink every this many iterations.
const HANDOFF_EVERY: u64 = 4;
/// The most items handed off and not yet consumed. Below Perfetto's 64 lanes with room to spare:
/// the clock reads of one item's end and the next one's begin, on two threads, are not ordered
/// by the counter that links them (a time-stamp counter read is not ordered by a locked
/// instruction), so a few may overlap by nanoseconds.
const MAX_IN_FLIGHT: usize = 48;

struct Item {
    id: u64,
    value: u64,
}

/// The queue between the workers and the sink.
struct Queue {
    items: Mutex<VecDeque<Item>>,
    /// Workers that pushed their last item.
    finished: AtomicUsize,
    /// Items a worker has claimed room for and the sink has not finished: at most
    /// [`MAX_IN_FLIGHT`].
    in_flight: AtomicUsize,
}

/// Runs `workers` workers, each emitting at least `events` events, plus the sink; returns what
/// every thread (the calling one included) emitted.
pub fn run(workers: usize, events: u64) -> Vec<ThreadReport> {
    phosphor::set_thread_name("main");
    // The main thread's `scope_alloc` events before this run are not this run's.
    let scope_allocs_before = phosphor::alloc::scope_alloc_events();
    let mut main = 0;
    trace_instant!("demo", "start", "workers" => workers, "events_per_worker" => events);
    main += 1;
    let queue = Queue {
        items: Mutex::new(VecDeque::new()),
        finished: AtomicUsize::new(0),
        in_flight: AtomicUsize::new(0),
    };
    let mut reports = std::thread::scope(|s| {
        let sink = s.spawn(|| sink(&queue, workers));
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                s.spawn({
                    let q = &queue;
                    move || worker(w, events, q)
                })
            })
            .collect();
        trace_scope!("demo", "join");
        main += 1;
        let mut reports: Vec<ThreadReport> =
            handles.into_iter().map(|h| h.join().expect("worker panicked")).collect();
        reports.push(sink.join().expect("sink panicked"));
        reports
    });
    reports.push(ThreadReport::new(main, scope_allocs_before));
    reports
}

fn worker(index: usize, target: u64, queue: &Queue) -> ThreadReport {
    let name = format!("worker-{index}");
    phosphor::set_thread_name(&name);
    let mut n = 0u64;
    let mut i = 0u64;
    let mut state = 0x9e37_79b9_7f4a_7c15 ^ index as u64;
    while n < target {
        if i % BATCH == 0 {
            trace_begin!("demo", "batch", "first" => i);
            n += 1;
        }
        {
            trace_scope!("demo", "iteration", "i" => i);
            n += 1;
            let bytes = 64 + (state % 192);
            let parsed = {
                trace_scope!("demo", "parse", "bytes" => bytes);
                n += 1;
                spin(&mut state, bytes as u32 / 4)
            };
            let hashed = {
                trace_scope!("demo", "transform");
                n += 1;
                let h = {
                    trace_scope!("demo", "hash");
                    n += 1;
                    spin(&mut state, 24) ^ parsed
                };
                h.rotate_left(7)
            };
            if i % 256 == 255 {
                trace_scope!("demo", "flush", "pending" => i % 1024);
                n += 1;
                trace_data!("demo", "flush_pending", i % 1024);
                n += 1;
                spin(&mut state, 2_000);
            }
            if i % 64 == 0 {
                trace_instant!("demo", "checkpoint", "iteration" => i, "checksum" => hashed);
                n += 1;
            }
            if i % 1024 == 0 {
                trace_instant!("demo", "status", "worker" => name.as_str(), "state" => Static("running"));
                n += 1;
                trace_log!(
                    info,
                    "demo",
                    "{} reached iteration {} (checksum {:#x})",
                    name.as_str(),
                    i,
                    hashed
                );
                n += 1;
            }
            if i % 512 == 511 {
                trace_log!(debug, "demo", "{} parsed {} bytes, state {:016x}", name.as_str(), bytes, state);
                n += 1;
            }
            trace_sum!("demo", "bytes_parsed", bytes);
            trace_histogram!("demo", "parse_bytes", bytes);
            if i % HANDOFF_EVERY == 0 {
                // Room for one more item, else wait for the sink. Relaxed: the counter only bounds
                // a number (an increment that finds it full is undone, so only an item that found
                // room is ever in flight); the items themselves pass through the mutex, which
                // orders them.
                while queue.in_flight.fetch_add(1, Ordering::Relaxed) >= MAX_IN_FLIGHT {
                    queue.in_flight.fetch_sub(1, Ordering::Relaxed);
                    std::thread::yield_now();
                }
                let id = ((index as u64) << 40) | i;
                trace_async_begin!("demo", "item", id, "worker" => index);
                n += 1;
                let mut q = trace_lock_guard!(
                    "demo",
                    "queue",
                    queue.items.lock().unwrap_or_else(PoisonError::into_inner)
                );
                n += 2; // wait now, held when `q` drops
                q.push_back(Item { id, value: hashed });
                trace_counter!("demo", "queue_depth", q.len());
                n += 1;
            }
        }
        if i % BATCH == BATCH - 1 {
            trace_end!("demo", "batch");
            n += 1;
        }
        i += 1;
    }
    if i % BATCH != 0 {
        trace_end!("demo", "batch");
        n += 1;
    }
    // Release: pairs with the sink's Acquire load, so the sink that sees every worker finished
    // also sees every item pushed.
    queue.finished.fetch_add(1, Ordering::Release);
    ThreadReport::new(n, 0)
}

fn sink(queue: &Queue, workers: usize) -> ThreadReport {
    phosphor::set_thread_name("sink");
    let mut n = 0u64;
    let mut batch = VecDeque::new();
    let mut state = 1u64;
    loop {
        // Acquire: see `worker`. Loaded before the drain, so a drain that finds nothing after
        // every worker finished is the last one.
        let all_done = queue.finished.load(Ordering::Acquire) == workers;
        {
            let mut q = trace_lock_guard!(
                "demo",
                "queue",
                queue.items.lock().unwrap_or_else(PoisonError::into_inner)
            );
            n += 2;
            std::mem::swap(&mut *q, &mut batch);
            trace_counter!("demo", "queue_depth", q.len());
            n += 1;
        }
        if batch.is_empty() {
            if all_done {
                break;
            }
            // Not long: a worker that finds the pipeline full waits for the sink.
            std::thread::sleep(Duration::from_micros(50));
            continue;
        }
        trace_scope!("demo", "drain", "items" => batch.len());
        n += 1;
        if batch.len() > MAX_IN_FLIGHT / 2 {
            trace_log!(warn, "demo", "sink is behind: {} items in one drain", batch.len());
            n += 1;
        }
        for item in batch.drain(..) {
            trace_scope!("demo", "consume", "id" => item.id);
            n += 1;
            trace_scope!("demo", dyn STAGES[(item.id % 3) as usize]);
            n += 1;
            black_box(spin(&mut state, 8) ^ item.value);
            trace_async_end!("demo", "item", item.id);
            n += 1;
            // Relaxed: see `worker`.
            queue.in_flight.fetch_sub(1, Ordering::Relaxed);
        }
    }
    ThreadReport::new(n, 0)
}

/// Some arithmetic the optimiser cannot remove: `rounds` steps of xorshift64.
fn spin(state: &mut u64, rounds: u32) -> u64 {
    let mut x = *state;
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = black_box(x);
    }
    *state = x;
    x
}

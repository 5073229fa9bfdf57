//! `tracing` instrumentation recorded by several layers, side by side in one run: Phosphor's
//! (`PhosphorLayer`, `PhosphorSubscriber`), `tracing-chrome` and `tracing-perfetto` (and with the `peers`
//! feature Tracy's and tracing-perfetto-sdk's, below), next to the limit loop and to
//! Phosphor's own macro.
//!
//! The workloads are the ones of `phosphor-bench`: an event with two integer fields
//! (`tracing::info!(a, b)`), and a span created, entered, exited and closed
//! (`info_span!("scope").entered()`, dropped at once). Each bench installs its layer as this
//! thread's default subscriber (`tracing::subscriber::set_default`), so every layer pays the same
//! scoped-dispatch lookup (`event_phosphor_subscriber_global` alone measures the global default,
//! as programs install a subscriber: `phosphor_tracing::init()`, `.init()`). Arguments are recorded by all three (`include_args(true)` for
//! tracing-chrome, `with_debug_annotations(true)` for tracing-perfetto). Both peers write into a
//! sink that counts what it is given and throws the bytes away.
//!
//! `event_noop_layer` and `span_noop_layer` run a layer that does nothing: the cost of `tracing`'s
//! macros, dispatch and span registry, which every layer pays before it records anything. The
//! `floor_*` benches are the floor of a subscriber of its own (`support/floor.rs`): one that does
//! nothing with an event, one that only visits its fields, one that visits them and records two
//! with `trace_log!` at a fixed callsite; `_global` as the global default (one
//! subscriber per process: a `_global` bench is skipped, with a note, when another's subscriber
//! was installed first; run it alone then, e.g. `layers limit_loop floor_visit_event_global`).
//!
//! What is measured is the calling thread's time. tracing-chrome also spends its writer thread's
//! time formatting JSON, which is not in its figure here (`phosphor-bench` measures process CPU);
//! tracing-perfetto encodes and writes on the calling thread; Phosphor has no thread of its own.
//!
//! Before divan starts, `main` checks every layer's recorded count for 10,000 events and 10,000
//! spans: no figure is quoted for a layer that lost events. Phosphor records four events per span
//! (its life as an async slice, and the enter/exit slice), tracing-chrome two, tracing-perfetto one
//! message holding the begin and end.
//!
//! With the `peers` feature, `tracing-tracy` runs too (Tracy's C++ client, built with its `enable`
//! feature only: no system tracing, sampling or broadcast). With no viewer connected, Tracy's client
//! keeps every event in memory until one connects: its figure is the cost of queueing, and its
//! memory grows with every event (2 M events and 2 M spans in this run). It offers no count of what
//! it queued, so its recorded count is not checked.
//!
//! With the `peers` feature, `tracing-perfetto-sdk-layer`'s `NativeLayer` runs too (the Rust
//! writer of Perfetto packets, without the C++ SDK that its `sdk` feature adds; an empty trace
//! config): it encodes on the calling thread, one track event per event and two per span, whose
//! count is checked by reading the packets back.
//!
//! Run with `cargo bench -p phosphor-tracing --bench layers` (add `--features peers` for Tracy and
//! tracing-perfetto-sdk; its build needs `protoc`);
//! BENCHMARKS.md has the figures.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use divan::Bencher;
use phosphor::{BufferMode, TraceConfig, TraceLog, TraceLogConfig};
use phosphor_limit::limit_step;
use phosphor_tracing::{PhosphorLayer, PhosphorSubscriber};
use tracing_subscriber::layer::SubscriberExt;

#[path = "support/floor.rs"]
mod floor;

/// Events per divan sample.
const SAMPLE_SIZE: u32 = 10_000;
/// Samples per bench: 2 M events (tracing-chrome's channel holds what its writer has not written).
const SAMPLE_COUNT: u32 = 200;
/// The global trace's Ring buffer.
const RING_BYTES: usize = 64 << 20;

/// What a peer's sink was given: writes and line breaks.
#[derive(Clone, Default)]
struct Sink {
    writes: Arc<AtomicU64>,
    lines: Arc<AtomicU64>,
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // Relaxed: tallies read after the writer is flushed or the calls have returned.
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.lines.fetch_add(buf.iter().filter(|&&b| b == b'\n').count() as u64, Ordering::Relaxed);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Sink {
    type Writer = Sink;
    fn make_writer(&'a self) -> Sink {
        self.clone()
    }
}

fn event(i: u64) {
    tracing::info!(a = i as i64, b = 7u64);
}

/// An event with a message, as most code writes them (`info!(a, b, "ev")`).
fn event_msg(i: u64) {
    tracing::info!(a = i as i64, b = 7u64, "ev");
}

fn span() {
    let _s = tracing::info_span!("scope").entered();
}

/// A layer that does nothing: what `tracing` and its registry cost before any layer works.
struct NoopLayer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for NoopLayer {}

fn noop_subscriber() -> impl tracing::Subscriber + Send + Sync {
    tracing_subscriber::registry().with(NoopLayer)
}

fn phosphor_subscriber(log: &'static TraceLog) -> impl tracing::Subscriber + Send + Sync {
    tracing_subscriber::registry().with(PhosphorLayer::new(log))
}

fn chrome_subscriber(sink: Sink) -> (impl tracing::Subscriber + Send + Sync, tracing_chrome::FlushGuard) {
    let (layer, guard) = tracing_chrome::ChromeLayerBuilder::new().writer(sink).include_args(true).build();
    (tracing_subscriber::registry().with(layer), guard)
}

fn perfetto_subscriber(sink: Sink) -> impl tracing::Subscriber + Send + Sync {
    let layer = tracing_perfetto::PerfettoLayer::new(sink).with_debug_annotations(true);
    tracing_subscriber::registry().with(layer)
}

/// One `event(i)` per iteration, `i` counting up, under the subscriber already set.
fn bench_events(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        event(i);
    });
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn limit_loop(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        limit_step(i, 7);
    });
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn phosphor_macro_instant(bencher: Bencher) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        phosphor::trace_instant!("layers", "instant", "a" => i as i64, "b" => 7u64);
    });
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn event_noop_layer(bencher: Bencher) {
    let _d = tracing::subscriber::set_default(noop_subscriber());
    bench_events(bencher);
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn span_noop_layer(bencher: Bencher) {
    let _d = tracing::subscriber::set_default(noop_subscriber());
    bencher.bench_local(span);
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn event_phosphor_layer(bencher: Bencher) {
    let _d = tracing::subscriber::set_default(phosphor_subscriber(TraceLog::global()));
    bench_events(bencher);
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn event_phosphor_subscriber(bencher: Bencher) {
    let _d = tracing::subscriber::set_default(PhosphorSubscriber::new(TraceLog::global()));
    bench_events(bencher);
}

/// The subscriber as `phosphor_tracing::init()` (and `.init()` of a `tracing_subscriber`
/// registry) installs it: the global default, which `tracing` finds without the thread-local
/// lookup a scoped default costs. A process has one global default: it stays set for the benches
/// after this one, whose scoped defaults override it (see [`install_global`]).
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn event_phosphor_subscriber_global(bencher: Bencher) {
    if !install_global("event_phosphor_subscriber_global", || {
        tracing::Dispatch::new(PhosphorSubscriber::new(TraceLog::global()))
    }) {
        return;
    }
    bench_events(bencher);
}

/// The bench whose subscriber is the process's global default (set once, by the first `*_global`
/// bench that runs).
static GLOBAL: OnceLock<&'static str> = OnceLock::new();

/// Makes `make()` the global default for bench `name`: false (and the bench is skipped, with a
/// note) when another bench's subscriber already is. Run such a bench in a process of its own
/// then: `layers limit_loop floor_visit_event_global`.
fn install_global(name: &'static str, make: impl FnOnce() -> tracing::Dispatch) -> bool {
    let installed = *GLOBAL.get_or_init(|| {
        tracing::dispatcher::set_global_default(make()).expect("only install_global sets the global default");
        name
    });
    if installed != name {
        eprintln!("{name}: skipped, the global default is {installed}'s (one per process): run it alone");
    }
    installed == name
}

/// The floor (`support/floor.rs`): a subscriber that does nothing with the event.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn floor_empty_event(bencher: Bencher) {
    let _d = tracing::subscriber::set_default(floor::Empty);
    bench_events(bencher);
}

/// The floor: a subscriber that only visits the event's fields.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn floor_visit_event(bencher: Bencher) {
    let _d = tracing::subscriber::set_default(floor::Visiting);
    bench_events(bencher);
}

/// The floor: a subscriber that visits the event's fields and records two with `trace_log!`.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn floor_record_event(bencher: Bencher) {
    let _d = tracing::subscriber::set_default(floor::Recording);
    bench_events(bencher);
}

/// [`floor_record_event`] with the subscriber as the global default.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn floor_record_event_global(bencher: Bencher) {
    if !install_global("floor_record_event_global", || tracing::Dispatch::new(floor::Recording)) {
        return;
    }
    bench_events(bencher);
}

/// [`floor_empty_event`] with the subscriber as the global default.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn floor_empty_event_global(bencher: Bencher) {
    if !install_global("floor_empty_event_global", || tracing::Dispatch::new(floor::Empty)) {
        return;
    }
    bench_events(bencher);
}

/// [`floor_visit_event`] with the subscriber as the global default.
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn floor_visit_event_global(bencher: Bencher) {
    if !install_global("floor_visit_event_global", || tracing::Dispatch::new(floor::Visiting)) {
        return;
    }
    bench_events(bencher);
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn event_msg_phosphor_layer(bencher: Bencher) {
    let _d = tracing::subscriber::set_default(phosphor_subscriber(TraceLog::global()));
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        event_msg(i);
    });
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn event_msg_phosphor_subscriber(bencher: Bencher) {
    let _d = tracing::subscriber::set_default(PhosphorSubscriber::new(TraceLog::global()));
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(1);
        event_msg(i);
    });
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn event_tracing_chrome(bencher: Bencher) {
    let (sub, guard) = chrome_subscriber(Sink::default());
    let _d = tracing::subscriber::set_default(sub);
    bench_events(bencher);
    drop(guard);
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn event_tracing_perfetto(bencher: Bencher) {
    let _d = tracing::subscriber::set_default(perfetto_subscriber(Sink::default()));
    bench_events(bencher);
}

#[cfg(feature = "peers")]
fn tracy_subscriber() -> impl tracing::Subscriber + Send + Sync {
    tracing_subscriber::registry().with(tracing_tracy::TracyLayer::default())
}

#[cfg(feature = "peers")]
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn event_tracing_tracy(bencher: Bencher) {
    let _d = tracing::subscriber::set_default(tracy_subscriber());
    bench_events(bencher);
}

#[cfg(feature = "peers")]
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn span_tracing_tracy(bencher: Bencher) {
    let _d = tracing::subscriber::set_default(tracy_subscriber());
    bencher.bench_local(span);
}

/// tracing-perfetto-sdk's `NativeLayer` writing into `sink`, and the layer (to flush it).
#[cfg(feature = "peers")]
fn perfetto_sdk_subscriber<W>(
    sink: W,
) -> (impl tracing::Subscriber + Send + Sync, tracing_perfetto_sdk_layer::NativeLayer<W>)
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Clone + Send + Sync + 'static,
{
    let layer = tracing_perfetto_sdk_layer::NativeLayer::from_config_bytes(&[], sink)
        .build()
        .expect("tracing-perfetto-sdk's layer");
    (tracing_subscriber::registry().with(layer.clone()), layer)
}

#[cfg(feature = "peers")]
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn event_tracing_perfetto_sdk(bencher: Bencher) {
    let (sub, _layer) = perfetto_sdk_subscriber(Sink::default());
    let _d = tracing::subscriber::set_default(sub);
    bench_events(bencher);
}

#[cfg(feature = "peers")]
#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn span_tracing_perfetto_sdk(bencher: Bencher) {
    let (sub, _layer) = perfetto_sdk_subscriber(Sink::default());
    let _d = tracing::subscriber::set_default(sub);
    bencher.bench_local(span);
}

/// A writer that keeps every byte (the recorded-count check of tracing-perfetto-sdk).
#[cfg(feature = "peers")]
#[derive(Clone, Default)]
struct Keep(Arc<std::sync::Mutex<Vec<u8>>>);

#[cfg(feature = "peers")]
impl Write for Keep {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(feature = "peers")]
impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Keep {
    type Writer = Keep;
    fn make_writer(&'a self) -> Keep {
        self.clone()
    }
}

/// The `TracePacket`s of a Perfetto trace (field 1 of `Trace`, repeated) and, among them, those
/// holding a `TrackEvent` (field 11 of `TracePacket`). Panics on bytes that are not such a trace.
#[cfg(feature = "peers")]
fn count_packets(trace: &[u8]) -> (u64, u64) {
    fn varint(b: &[u8], at: &mut usize) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = b[*at];
            *at += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
        }
        v
    }
    let (mut at, mut packets, mut track_events) = (0, 0, 0);
    while at < trace.len() {
        assert_eq!(varint(trace, &mut at), (1 << 3) | 2, "a packet at byte {at}");
        let len = varint(trace, &mut at) as usize;
        let packet = &trace[at..at + len];
        at += len;
        packets += 1;
        let mut i = 0;
        while i < packet.len() {
            let key = varint(packet, &mut i);
            match key & 7 {
                0 => {
                    varint(packet, &mut i);
                }
                1 => i += 8,
                2 => i += varint(packet, &mut i) as usize,
                5 => i += 4,
                other => panic!("wire type {other} in a packet"),
            }
            track_events += u64::from(key >> 3 == 11);
        }
    }
    (packets, track_events)
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn span_phosphor_layer(bencher: Bencher) {
    let _d = tracing::subscriber::set_default(phosphor_subscriber(TraceLog::global()));
    bencher.bench_local(span);
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn span_phosphor_layer_no_lifetimes(bencher: Bencher) {
    let layer = PhosphorLayer::new(TraceLog::global()).with_span_lifetimes(false);
    let _d = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    bencher.bench_local(span);
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn span_phosphor_subscriber(bencher: Bencher) {
    let _d = tracing::subscriber::set_default(PhosphorSubscriber::new(TraceLog::global()));
    bencher.bench_local(span);
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn span_phosphor_subscriber_lifetimes(bencher: Bencher) {
    let subscriber = PhosphorSubscriber::new(TraceLog::global()).with_span_lifetimes(true);
    let _d = tracing::subscriber::set_default(subscriber);
    bencher.bench_local(span);
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn span_tracing_chrome(bencher: Bencher) {
    let (sub, guard) = chrome_subscriber(Sink::default());
    let _d = tracing::subscriber::set_default(sub);
    bencher.bench_local(span);
    drop(guard);
}

#[divan::bench(sample_size = SAMPLE_SIZE, sample_count = SAMPLE_COUNT)]
fn span_tracing_perfetto(bencher: Bencher) {
    let _d = tracing::subscriber::set_default(perfetto_subscriber(Sink::default()));
    bencher.bench_local(span);
}

/// Checks that each layer records every event and span of a run of 10,000 (see the module docs).
fn check_recorded_counts() {
    const N: u64 = 10_000;
    let run = |f: &dyn Fn()| {
        for _ in 0..N {
            f();
        }
    };
    // Phosphor: into a log of its own, with a buffer that keeps everything.
    let log: &'static TraceLog = Box::leak(Box::new(TraceLog::new(TraceLogConfig::default()).unwrap()));
    log.start(TraceConfig::new(BufferMode::Fixed, 64 << 20)).unwrap();
    tracing::subscriber::with_default(phosphor_subscriber(log), || {
        run(&|| event(1));
        run(&span);
    });
    log.stop();
    let stats = log.stats();
    assert_eq!((stats.recorded, stats.dropped.total()), (N + 4 * N, 0), "Phosphor layer");
    println!("check: Phosphor layer recorded {N} events and {N} spans (4 events each), 0 dropped");

    // Phosphor's own subscriber: spans as enter/exit (2 events), then with lifetimes (4).
    log.start(TraceConfig::new(BufferMode::Fixed, 64 << 20)).unwrap();
    tracing::subscriber::with_default(PhosphorSubscriber::new(log), || {
        run(&|| event(1));
        run(&|| event_msg(1));
        run(&span);
    });
    tracing::subscriber::with_default(PhosphorSubscriber::new(log).with_span_lifetimes(true), || run(&span));
    log.stop();
    let stats = log.stats();
    assert_eq!((stats.recorded, stats.dropped.total()), (2 * N + 2 * N + 4 * N, 0), "Phosphor subscriber");
    println!(
        "check: Phosphor subscriber recorded {N} + {N} events and {N} + {N} spans (2, 4 events), 0 dropped"
    );

    let sink = Sink::default();
    let (sub, guard) = chrome_subscriber(sink.clone());
    tracing::subscriber::with_default(sub, || {
        run(&|| event(1));
        run(&span);
    });
    drop(guard); // flushes and joins the writer
                 // One line per entry, plus the array's brackets and the thread-name entry.
    let lines = sink.lines.load(Ordering::Relaxed);
    assert!(lines >= N + 2 * N, "tracing-chrome wrote {lines} lines");
    println!("check: tracing-chrome wrote {lines} JSON lines for {N} events and {N} spans (2 each)");

    let sink = Sink::default();
    tracing::subscriber::with_default(perfetto_subscriber(sink.clone()), || {
        run(&|| event(1));
        run(&span);
    });
    let writes = sink.writes.load(Ordering::Relaxed);
    assert_eq!(writes, 2 * N, "tracing-perfetto");
    println!("check: tracing-perfetto wrote {writes} messages for {N} events and {N} spans (1 each)");

    #[cfg(feature = "peers")]
    {
        let keep = Keep::default();
        let (sub, layer) = perfetto_sdk_subscriber(keep.clone());
        tracing::subscriber::with_default(sub, || {
            run(&|| event(1));
            run(&span);
        });
        let wait = std::time::Duration::from_secs(10);
        layer.flush(wait, wait).expect("tracing-perfetto-sdk's flush");
        let bytes = keep.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let (packets, track_events) = count_packets(&bytes);
        assert_eq!(track_events, N + 2 * N, "tracing-perfetto-sdk ({packets} packets)");
        println!(
            "check: tracing-perfetto-sdk wrote {track_events} track events for {N} events and {N} spans \
             (1, 2 each) in {packets} packets"
        );
    }
}

/// CPU time of `clock` (`CLOCK_THREAD_CPUTIME_ID`, `CLOCK_PROCESS_CPUTIME_ID`), in ns.
fn cpu_ns(clock: libc::clockid_t) -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid, writable timespec; the clocks are ones Linux always has.
    unsafe { libc::clock_gettime(clock, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// The calling thread's and the whole process's CPU time per operation of `work` (100,000 events
/// or spans, after as many to warm up) under `dispatch`, `finish` included in the process's (a
/// peer's flush, which waits for its writer thread).
fn cpu_per_op(name: &str, what: &str, dispatch: tracing::Dispatch, work: fn(), finish: impl FnOnce()) {
    const N: u64 = 100_000;
    let (t0, t1, p0) = tracing::dispatcher::with_default(&dispatch, || {
        for _ in 0..N {
            work();
        }
        let (t0, p0) = (cpu_ns(libc::CLOCK_THREAD_CPUTIME_ID), cpu_ns(libc::CLOCK_PROCESS_CPUTIME_ID));
        for _ in 0..N {
            work();
        }
        (t0, cpu_ns(libc::CLOCK_THREAD_CPUTIME_ID), p0)
    });
    drop(dispatch);
    finish();
    let p1 = cpu_ns(libc::CLOCK_PROCESS_CPUTIME_ID);
    println!(
        "cpu: {name:<18} {what:<5} calling thread {:>7.1} ns, process {:>7.1} ns",
        (t1 - t0) as f64 / N as f64,
        (p1 - p0) as f64 / N as f64
    );
}

/// Calling-thread and process CPU of each subscriber (see [`cpu_per_op`]).
fn measure_cpu() {
    use tracing::Dispatch;
    let log = TraceLog::global();
    for (what, work) in [("event", (|| event(1)) as fn()), ("span", span)] {
        cpu_per_op("PhosphorSubscriber", what, Dispatch::new(PhosphorSubscriber::new(log)), work, || {});
        cpu_per_op("PhosphorLayer", what, Dispatch::new(phosphor_subscriber(log)), work, || {});
        let (sub, guard) = chrome_subscriber(Sink::default());
        cpu_per_op("tracing-chrome", what, Dispatch::new(sub), work, || drop(guard));
        cpu_per_op(
            "tracing-perfetto",
            what,
            Dispatch::new(perfetto_subscriber(Sink::default())),
            work,
            || {},
        );
        #[cfg(feature = "peers")]
        cpu_per_op("tracing-tracy", what, Dispatch::new(tracy_subscriber()), work, || {});
        #[cfg(feature = "peers")]
        {
            let (sub, layer) = perfetto_sdk_subscriber(Sink::default());
            let wait = std::time::Duration::from_secs(10);
            cpu_per_op("tracing-perfetto-sdk", what, Dispatch::new(sub), work, || {
                let _ = layer.flush(wait, wait);
            });
        }
    }
}

fn main() {
    check_recorded_counts();
    let config = TraceConfig::new(BufferMode::Ring, RING_BYTES).categories("-off").unwrap();
    TraceLog::global().start(config).unwrap();
    measure_cpu();
    divan::main();
    let log = TraceLog::global();
    log.stop();
    let s = log.stats();
    println!(
        "global trace: {} recorded, {} overwritten by the Ring, other drops {}",
        s.recorded,
        s.dropped.overwritten,
        s.dropped.total() - s.dropped.overwritten
    );
    assert_eq!(s.dropped.total(), s.dropped.overwritten, "only the Ring's overwrites");
}

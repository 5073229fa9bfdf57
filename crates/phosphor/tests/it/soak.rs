//! The soak test of issue 17 (§7): two threads log flat out while the main thread, in a loop,
//! dumps a Ring trace, streams a trace to a file (the collector flushing every 5 ms by itself),
//! forks children that stop the trace they inherit and trace afresh, and stops and restarts
//! traces under the writers' feet. After every trace `recorded + dropped == emitted` exactly
//! (in Stream mode `+ saturation markers`, which `recorded` counts).
//!
//! The long run is ignored: `PHOSPHOR_SOAK_SECS=60 cargo test -p phosphor --test it soak -- --ignored
//! --nocapture` (30 s by default); `a_short_soak_*` runs the same for 2 s every time. Both run the
//! soak in a process of their own, because it forks (see `hardening::run_alone`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use phosphor::stream::{Sink, StreamConfig};
use phosphor::{trace_instant, BufferMode, Stats, TraceConfig, TraceLog, TraceLogConfig};

use crate::hardening::{
    alone, assert_only_overwrites, fork_and_check, read_trace_file, run_alone, saturation_markers,
    scratch_file,
};
use crate::support::{events, new_log, stop_and_take};

/// What the writers and the main thread share to pause and resume the writers.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
    /// The writers' fast check, mirrored from `state.run`.
    run: AtomicBool,
}

#[derive(Default)]
struct GateState {
    run: bool,
    exit: bool,
    /// Writers waiting at the gate.
    paused: usize,
    /// Events that passed their check, handed in by the writers as they pause.
    emitted: u64,
}

/// Writer threads that log flat out while the gate is open. Pausing them is a handshake, not a
/// sleep: once [`Writers::pause`] returns, every writer is waiting and has handed in its count, so
/// the count is exact and no event is in flight.
struct Writers {
    gate: Arc<Gate>,
    threads: Vec<JoinHandle<()>>,
}

impl Writers {
    /// `n` writers into `log`, paused.
    fn spawn(log: &Arc<TraceLog>, n: usize) -> Writers {
        let gate = Arc::new(Gate::default());
        let threads = (0..n as u64)
            .map(|t| {
                let (log, gate) = (log.clone(), gate.clone());
                std::thread::spawn(move || writer(&log, &gate, t))
            })
            .collect();
        let w = Writers { gate, threads };
        w.pause();
        w
    }

    fn resume(&self) {
        let mut s = self.gate.state.lock().unwrap();
        s.run = true;
        // Relaxed: the writers' hint; the count goes through the mutex.
        self.gate.run.store(true, Ordering::Relaxed);
        self.gate.changed.notify_all();
    }

    /// Stops the writers and returns the events that passed their check since the last pause.
    fn pause(&self) -> u64 {
        let mut s = self.gate.state.lock().unwrap();
        s.run = false;
        // Relaxed: as in `resume`.
        self.gate.run.store(false, Ordering::Relaxed);
        while s.paused < self.threads.len() {
            s = self.gate.changed.wait(s).unwrap();
        }
        std::mem::take(&mut s.emitted)
    }

    fn finish(self) {
        self.gate.state.lock().unwrap().exit = true;
        self.gate.changed.notify_all();
        for t in self.threads {
            t.join().unwrap();
        }
    }
}

fn writer(log: &TraceLog, gate: &Gate, t: u64) {
    let mut n = 0u64;
    loop {
        // Relaxed: see `Writers::resume`.
        if !gate.run.load(Ordering::Relaxed) {
            let mut s = gate.state.lock().unwrap();
            s.emitted += std::mem::take(&mut n);
            s.paused += 1;
            gate.changed.notify_all();
            while !s.run && !s.exit {
                s = gate.changed.wait(s).unwrap();
            }
            if s.exit {
                return;
            }
            s.paused -= 1;
        }
        for _ in 0..64 {
            // The argument runs only when the callsite passed its check (the macros' contract):
            // `n` counts exactly the events the recorder must account for, across restarts too.
            trace_instant!(log: log, "soak", "soak-tick", "t" => t, "n" => { n += 1; n });
        }
    }
}

/// The soak's running figures.
#[derive(Default)]
struct Soak {
    traces: u64,
    emitted: u64,
    forks: u64,
    dumps: u64,
    /// Drops the log counted after the last trace's figures were taken (events that raced its
    /// stop): the next trace reports them, and they must be subtracted there.
    carried: u64,
}

impl Soak {
    /// Checks a finished trace whose writers were paused before `stop`: exact accounting, and
    /// nothing left to carry (no event can have raced the stop).
    fn check(&mut self, log: &TraceLog, what: &str, s: &Stats, emitted: u64, markers: u64) {
        assert_eq!(
            s.recorded + s.dropped.total() - self.carried,
            emitted + markers,
            "{what} (trace {}): recorded + dropped == emitted + markers ({emitted} + {markers}), \
             with {} carried from the trace before:\n{s}",
            self.traces,
            self.carried
        );
        assert_eq!(log.stats().dropped, s.dropped, "{what}: no late drop, the writers were paused");
        self.carried = 0;
        self.traces += 1;
        self.emitted += emitted;
    }

    /// A Ring trace: dumps at 5 ms intervals, a fork, then a stop with the writers paused.
    fn ring(&mut self, log: &TraceLog, w: &Writers) {
        log.start(TraceConfig::new(BufferMode::Ring, 1 << 20)).unwrap();
        w.resume();
        let path = scratch_file("soak-dump.phos");
        for d in 0..5 {
            std::thread::sleep(Duration::from_millis(5)); // the dumps' rhythm
                                                          // On a loaded machine the writers may not have run yet: the first dump waits for
                                                          // their first event (a Ring keeps its events, so the later dumps have it too).
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            let mut snap = log.snapshot().unwrap();
            while snap.stats().recorded == 0 && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
                snap = log.snapshot().unwrap();
            }
            assert!(snap.stats().recorded > 0, "dump {d} is empty after a minute of running writers");
            if d == 0 {
                snap.save(path.path()).unwrap();
                let file = read_trace_file(path.path());
                assert!(file.trailer);
                assert_eq!(file.events, snap.stats().recorded, "a saved dump reads back whole");
            }
            self.dumps += 1;
        }
        drop(path);
        self.fork(log);
        let emitted = w.pause();
        let trace = stop_and_take(log);
        let s = trace.stats();
        assert_eq!(events(&trace).len() as u64, s.recorded);
        // Events that raced the last restart's stop are counted (as `stopping`) after its figures
        // were taken, so this trace reports them (`carried`); nothing else but overwrites.
        let mut own = s.clone();
        assert!(own.dropped.stopping >= self.carried, "the carried drops are `stopping` ones: {s}");
        own.dropped.stopping -= self.carried;
        assert_only_overwrites(&own, "a Ring trace with dumps and a fork");
        self.check(log, "ring", s, emitted, 0);
    }

    /// A Stream trace to a file, with a fork, then a stop with the writers paused; the file is
    /// read back.
    fn stream(&mut self, log: &TraceLog, w: &Writers) {
        log.start(TraceConfig::new(BufferMode::Stream, 8 << 20)).unwrap();
        let path = scratch_file("soak-stream.phos");
        let id = log.open_stream(StreamConfig::new(Sink::File(path.path().to_owned()))).unwrap();
        w.resume();
        // Long enough for the collector's own flushes (every 5 ms) to run many times.
        std::thread::sleep(Duration::from_millis(40));
        self.fork(log);
        std::thread::sleep(Duration::from_millis(20));
        let emitted = w.pause();
        log.stop();
        let s = log.stats();
        assert_eq!(s.dropped.stopping, 0, "nothing was under way when the trace stopped: {s}");
        let stream = log.stream_stats(id).unwrap();
        let file = read_trace_file(path.path());
        assert!(file.trailer, "the stream's file is whole (a child wrote nothing into it)");
        assert_eq!(stream.events_dropped, 0, "{stream:?}");
        assert_eq!(file.events, stream.events_written);
        assert_eq!(file.events, s.recorded, "open from the start, the file has every recorded event");
        assert_eq!(file.lost_chunks, 0);
        let markers = saturation_markers(&s);
        assert_eq!(file.markers, markers);
        self.check(log, "stream", &s, emitted, markers);
    }

    /// Ten traces stopped and restarted while the writers log: events race the stops. Each trace
    /// is whole, and over the ten (with what the last stop left to count) the figures add up.
    fn restarts(&mut self, log: &TraceLog, w: &Writers) {
        let mut accounted = 0;
        let mut last = 0;
        w.resume();
        for k in 0..10 {
            let mode = if k % 2 == 0 { BufferMode::Fixed } else { BufferMode::Ring };
            log.start(TraceConfig::new(mode, 256 << 10)).unwrap();
            std::thread::sleep(Duration::from_millis(1));
            let trace = stop_and_take(log);
            let s = trace.stats();
            assert_eq!(events(&trace).len() as u64, s.recorded, "restart {k}: {s}");
            accounted += s.recorded + s.dropped.total();
            last = s.dropped.total();
            self.traces += 1;
        }
        let emitted = w.pause();
        // The writers are paused, so every event that raced the last stop has been counted.
        let late = log.stats().dropped.total() - last;
        assert_eq!(
            accounted - self.carried + late,
            emitted,
            "ten restarts under the writers: recorded + dropped ({accounted}, {} of them carried from \
             the trace before) + late drops ({late}) == emitted",
            self.carried
        );
        self.carried = late;
        self.emitted += emitted;
    }

    fn fork(&mut self, log: &TraceLog) {
        if let Err(e) = fork_and_check(log) {
            panic!("fork {} of the soak: {e}", self.forks + 1);
        }
        self.forks += 1;
    }
}

/// The soak itself, for `PHOSPHOR_TEST_SOAK_SECS` seconds; run by the two tests below.
#[test]
#[ignore = "run alone, in a process of its own, by the soak tests"]
fn soak_child() {
    if !alone() {
        return;
    }
    let secs: f64 = std::env::var("PHOSPHOR_TEST_SOAK_SECS").unwrap().parse().unwrap();
    let log = new_log(TraceLogConfig::default());
    let writers = Writers::spawn(&log, 2);
    let mut soak = Soak::default();
    let t0 = Instant::now();
    let mut cycles = 0;
    while cycles == 0 || t0.elapsed().as_secs_f64() < secs {
        soak.ring(&log, &writers);
        soak.stream(&log, &writers);
        soak.restarts(&log, &writers);
        cycles += 1;
    }
    writers.finish();
    println!(
        "soak: {cycles} cycles in {:.1} s: {} traces, {} events emitted, {} dumps, {} forks",
        t0.elapsed().as_secs_f64(),
        soak.traces,
        soak.emitted,
        soak.dumps,
        soak.forks
    );
}

fn soak(secs: f64) {
    let limit = Duration::from_secs_f64(secs) + Duration::from_secs(120);
    run_alone("soak::soak_child", &[("PHOSPHOR_TEST_SOAK_SECS", secs.to_string())], limit);
}

/// The long soak (see the module docs).
#[test]
#[ignore = "30 s by default; run by hand (see the module docs)"]
fn soak_with_dumps_streams_forks_and_restarts_for_phosphor_soak_secs() {
    let secs = std::env::var("PHOSPHOR_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(30.0);
    soak(secs);
}

#[test]
fn a_short_soak_with_dumps_streams_forks_and_restarts_adds_up() {
    soak(2.0);
}

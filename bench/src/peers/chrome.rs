//! `tracing` 0.1 with `tracing-chrome` 0.7: a span entered and exited, and an event with two
//! integer fields, written as Chrome JSON by tracing-chrome's writer thread into a sink.
//!
//! The subscriber is the process's global default (a `Registry` with the `ChromeLayer`), installed
//! once, as an application would. Arguments are serialized (`include_args(true)`; tracing-chrome
//! leaves them out by default), because Phosphor records its arguments too. The event is also
//! measured with tracing-chrome's defaults, arguments left out, in a child process (a process has
//! one global subscriber).
//!
//! tracing-chrome sends every span enter, exit and event over an unbounded channel to its writer
//! thread, which can fall far behind. After each batch the harness asks the writer to flush and
//! waits until the sink has received one JSON entry per message; the batch's process CPU runs
//! until then. The sink counts entries by their line breaks (tracing-chrome writes one entry per
//! line) and throws the bytes away, so the disk is not measured.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use tracing_chrome::{ChromeLayerBuilder, FlushGuard};
use tracing_subscriber::layer::SubscriberExt;

use super::{Drain, DRAIN_TIMEOUT};
use crate::scenario::{Check, Footprint, Group, Info, Sample, Scenario};
use crate::sys::process_cpu_ns;

/// Entries the writer has written (line breaks seen by the sink).
static ENTRIES: Drain = Drain::new();
/// Bytes the writer has written.
static BYTES: AtomicU64 = AtomicU64::new(0);
/// Whether the sink keeps a copy of what it is given, for the tests.
static CAPTURE_ON: AtomicBool = AtomicBool::new(false);
static CAPTURED: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Where tracing-chrome's writer thread writes.
struct CountingSink;

impl Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // Relaxed: tallies; `ENTRIES.add` orders them for the waiter.
        BYTES.fetch_add(buf.len() as u64, Ordering::Relaxed);
        if CAPTURE_ON.load(Ordering::Relaxed) {
            CAPTURED.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(buf);
        }
        let lines = count_newlines(buf);
        if lines > 0 {
            ENTRIES.add(lines);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Line breaks in `buf`, counted 64 bytes at a time so that the compiler vectorizes it: the
/// sink's own cost is part of the writer thread's, and should stay small next to it.
fn count_newlines(buf: &[u8]) -> u64 {
    let chunks = buf.chunks_exact(64);
    let tail = chunks.remainder().iter().filter(|&&b| b == b'\n').count() as u64;
    chunks.map(|c| u64::from(c.iter().fold(0u8, |n, &b| n + u8::from(b == b'\n')))).sum::<u64>() + tail
}

/// The writer's flush guard, and the entries the writer must have written once drained.
struct Writer {
    guard: FlushGuard,
    expected: u64,
}

static WRITER: OnceLock<Mutex<Writer>> = OnceLock::new();

/// The writer, once [`setup`] has installed it.
fn writer() -> &'static Mutex<Writer> {
    WRITER.get().expect("chrome::setup ran")
}

/// Installs the global subscriber (once per process), serializing arguments or not. Only the
/// calling thread may emit tracing events afterwards: every other thread's first event adds a
/// thread-name entry.
///
/// # Panics
/// If it was installed already with the other `args` setting.
pub fn setup(args: bool) {
    static ARGS: OnceLock<bool> = OnceLock::new();
    assert_eq!(*ARGS.get_or_init(|| args), args, "one global subscriber per process");
    WRITER.get_or_init(|| {
        let (layer, guard) = ChromeLayerBuilder::new().writer(CountingSink).include_args(args).build();
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
            .expect("no other tracing subscriber is installed in the harness");
        // The first span of this thread writes a thread-name entry, then its begin and end: after
        // this, the count of entries is exact.
        span_batch(1);
        let w = Writer { guard, expected: 3 };
        w.guard.flush();
        ENTRIES.wait_for(w.expected, DRAIN_TIMEOUT);
        Mutex::new(w)
    });
}

/// Makes the sink keep a copy of everything written from now on (for the tests).
pub fn capture() {
    CAPTURE_ON.store(true, Ordering::Relaxed);
}

/// What the sink kept since [`capture`].
pub fn captured() -> String {
    String::from_utf8_lossy(&CAPTURED.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
}

/// `n` spans entered and exited (`info_span!` + `entered()`, dropped at once).
#[inline(never)]
pub fn span_batch(n: u64) {
    for _ in 0..n {
        let _span = tracing::info_span!("scope").entered();
    }
}

/// `n` events with two integer fields.
#[inline(never)]
pub fn event_batch(n: u64) {
    for i in 0..n {
        tracing::info!(a = i as i64, b = 7u64);
    }
}

/// A tracing-chrome scenario.
#[derive(Debug)]
pub struct Chrome {
    info: Info,
    span: bool,
    emitted: u64,
    recorded: u64,
    bytes: u64,
    timed_out: bool,
}

impl Chrome {
    /// The table entry of spans or events, with arguments serialized or not.
    pub fn info(span: bool, args: bool) -> Info {
        match (span, args) {
            (true, _) => Info {
                id: "chrome-span",
                label: "tracing + tracing-chrome span enter/exit (no fields)",
                group: Group::Peer,
                vs: Some("phos-scope"),
                note: "",
            },
            (false, true) => Info {
                id: "chrome-event",
                label: "tracing + tracing-chrome event, 2 int fields, args serialized",
                group: Group::Peer,
                vs: Some("phos-instant"),
                note: "",
            },
            (false, false) => Info {
                id: "chrome-event-noargs",
                label: "tracing + tracing-chrome event, 2 int fields, args left out (its default)",
                group: Group::Peer,
                vs: Some("phos-instant"),
                note: "runs in a child process, which installs a subscriber that leaves arguments out",
            },
        }
    }

    /// Spans (`span`) or events, with arguments serialized or not, installing the subscriber.
    pub fn new(span: bool, args: bool) -> Chrome {
        setup(args);
        Chrome { info: Chrome::info(span, args), span, emitted: 0, recorded: 0, bytes: 0, timed_out: false }
    }

    /// JSON entries per event: a begin and an end per span.
    fn entries_per_event(&self) -> u64 {
        if self.span {
            2
        } else {
            1
        }
    }
}

impl Scenario for Chrome {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&mut self, n: u64) -> Sample {
        let mut w = writer().lock().unwrap_or_else(|p| p.into_inner());
        let per = self.entries_per_event();
        let entries0 = ENTRIES.get();
        // Relaxed: a tally; the drain wait orders it.
        let bytes0 = BYTES.load(Ordering::Relaxed);
        let cpu0 = process_cpu_ns();
        let t0 = Instant::now();
        if self.span {
            span_batch(n);
        } else {
            event_batch(n);
        }
        let wall_ns = t0.elapsed().as_nanos() as u64;
        self.emitted += n;
        w.expected += per * n;
        w.guard.flush();
        self.timed_out |= !ENTRIES.wait_for(w.expected, DRAIN_TIMEOUT);
        let cpu_ns = process_cpu_ns() - cpu0;
        self.recorded += (ENTRIES.get() - entries0) / per;
        self.bytes += BYTES.load(Ordering::Relaxed) - bytes0;
        // A timed-out batch leaves the writer behind: count from where it is now.
        w.expected = w.expected.max(ENTRIES.get());
        Sample { events: n, wall_ns, cpu_ns }
    }

    fn check(&mut self) -> Check {
        let disk = (self.recorded > 0).then(|| self.bytes as f64 / self.recorded as f64);
        let check =
            Check::new(self.emitted, self.emitted, self.recorded, "JSON entries the writer thread wrote")
                .with_footprint(Footprint { memory: None, disk });
        if self.timed_out {
            return check.with_problem("a batch did not drain in time");
        }
        check
    }
}

#[cfg(test)]
mod tests {
    use super::count_newlines;

    #[test]
    fn newlines_are_counted_across_the_vectorized_blocks_and_the_tail() {
        let mut buf = vec![b'x'; 200];
        for i in [0, 63, 64, 127, 150, 199] {
            buf[i] = b'\n';
        }
        assert_eq!(count_newlines(&buf), 6);
        assert_eq!(count_newlines(&[b'\n'; 64 * 3 + 5]), 197);
        assert_eq!(count_newlines(b""), 0);
    }
}

//! fastrace 0.7 (with its `enable` feature; without it every call does nothing): a `LocalSpan`
//! under a root span, reported to a reporter that counts spans and drops them.
//!
//! fastrace keeps at most 10,240 local spans per root and drops the rest silently, so the root is
//! refreshed every [`SPANS_PER_ROOT`] spans; the root's creation and submission are part of the
//! cost. Spans reach the reporter through fastrace's collector thread; after each batch
//! `fastrace::flush()` hands everything still queued to the reporter, and the batch's process CPU
//! runs until the reporter has counted every span.

use std::sync::Once;
use std::time::Instant;

use fastrace::collector::{Config, Reporter, SpanContext, SpanRecord};
use fastrace::local::LocalSpan;
use fastrace::Span;

use super::{Drain, DRAIN_TIMEOUT};
use crate::scenario::{Check, Group, Info, Sample, Scenario};
use crate::sys::process_cpu_ns;

/// Local spans per root span.
pub const SPANS_PER_ROOT: u64 = 1_000;
/// The measured spans' name (the roots are named `root` and not counted).
pub const SPAN_NAME: &str = "span";

/// Spans named [`SPAN_NAME`] that reached the reporter.
static REPORTED: Drain = Drain::new();

/// Counts the measured spans it receives, then drops them.
struct CountingReporter;

impl Reporter for CountingReporter {
    fn report(&mut self, spans: Vec<SpanRecord>) {
        let n = spans.iter().filter(|s| s.name == SPAN_NAME).count() as u64;
        if n > 0 {
            REPORTED.add(n);
        }
    }
}

/// Installs the counting reporter (once per process).
pub fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| fastrace::set_reporter(CountingReporter, Config::default()));
}

/// `n` local spans (a multiple of [`SPANS_PER_ROOT`]), under a fresh root every
/// [`SPANS_PER_ROOT`].
#[inline(never)]
pub fn local_span_batch(n: u64) {
    for _ in 0..n / SPANS_PER_ROOT {
        let root = Span::root("root", SpanContext::random());
        let _parent = root.set_local_parent();
        for _ in 0..SPANS_PER_ROOT {
            let _span = LocalSpan::enter_with_local_parent(SPAN_NAME);
        }
    }
}

/// The fastrace scenario.
#[derive(Debug)]
pub struct LocalSpans {
    info: Info,
    emitted: u64,
    recorded: u64,
    timed_out: bool,
}

impl LocalSpans {
    /// The scenario, with the reporter installed.
    pub fn new() -> LocalSpans {
        setup();
        LocalSpans {
            info: Info {
                id: "fastrace",
                label: "fastrace `LocalSpan` (root every 1,000, null reporter)",
                group: Group::Peer,
                vs: Some("phos-scope"),
                note: "",
            },
            emitted: 0,
            recorded: 0,
            timed_out: false,
        }
    }
}

impl Default for LocalSpans {
    fn default() -> Self {
        LocalSpans::new()
    }
}

impl Scenario for LocalSpans {
    fn info(&self) -> &Info {
        &self.info
    }

    fn granule(&self) -> u64 {
        SPANS_PER_ROOT
    }

    fn run(&mut self, n: u64) -> Sample {
        assert_eq!(n % SPANS_PER_ROOT, 0, "fastrace batches are whole roots");
        let before = REPORTED.get();
        let cpu0 = process_cpu_ns();
        let t0 = Instant::now();
        local_span_batch(n);
        let wall_ns = t0.elapsed().as_nanos() as u64;
        self.emitted += n;
        fastrace::flush();
        self.timed_out |= !REPORTED.wait_for(before + n, DRAIN_TIMEOUT);
        let cpu_ns = process_cpu_ns() - cpu0;
        self.recorded += REPORTED.get() - before;
        Sample { events: n, wall_ns, cpu_ns }
    }

    fn check(&mut self) -> Check {
        let check = Check::new(self.emitted, self.emitted, self.recorded, "spans counted at the reporter");
        if self.timed_out {
            return check.with_problem("a batch did not drain in time");
        }
        check
    }
}

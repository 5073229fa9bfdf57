//! fastrace 0.7 (with its `enable` feature; without it every call does nothing): a `LocalSpan`
//! under a root span, reported to a reporter that counts spans and drops them.
//!
//! fastrace keeps at most 10,240 local spans per root and drops the rest silently, so the root is
//! refreshed every [`SPANS_PER_ROOT`] spans; the root's creation and submission are part of the
//! cost. Spans reach the reporter through fastrace's collector thread; after each batch
//! `fastrace::flush()` hands everything still queued to the reporter, and the batch's process CPU
//! runs until the reporter has counted every span.
//!
//! The length of a batch matters. The collector wakes when its queue is half full (about every
//! 1.3 M spans at one root per 1,000) or every second, and it is slower than a loop that does
//! nothing but record spans, so its backlog grows through a batch. A batch of a few hundred
//! thousand spans is a burst that the collector handles only after the loop, while the calling
//! thread has both CPUs and the allocator to itself: on the 2-vCPU VM it costs the calling thread
//! about 25 to 35 ns per span. Batches of [`STEADY_BATCH`] spans let the collector run alongside
//! the loop, as it does in a program that keeps recording, and cost the calling thread 60 to 95 ns
//! (PEERS.md's 71 ns). Both are measured: [`LocalSpans::steady`] is the figure the targets use,
//! [`LocalSpans::burst`] is shown for information.

use std::sync::Once;
use std::time::Instant;

use fastrace::collector::{Config, Reporter, SpanContext, SpanRecord};
use fastrace::local::LocalSpan;
use fastrace::Span;

use super::{Drain, DRAIN_TIMEOUT};
use crate::scenario::{Check, Group, Info, Sample, Scenario};
use crate::sys::process_cpu_ns;

/// The smallest batch of the steady scenario, in spans: more than two collector cycles.
pub const STEADY_BATCH: u64 = 3_000_000;

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
        // Free the records before saying they arrived: freeing millions of them is fastrace's
        // work too, and must neither escape the batch's CPU time nor overlap the next scenario.
        drop(spans);
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
    min_batch: u64,
    emitted: u64,
    recorded: u64,
    timed_out: bool,
}

impl LocalSpans {
    /// Batches of at least [`STEADY_BATCH`] spans, with the collector running alongside.
    pub fn steady() -> LocalSpans {
        LocalSpans::new(
            Info {
                id: "fastrace",
                label: "fastrace `LocalSpan` (root every 1,000, null reporter), 3 M-span batches",
                group: Group::Peer,
                vs: Some("phos-scope"),
                note: "the collector runs alongside the loop, as in a program that keeps recording",
            },
            STEADY_BATCH,
        )
    }

    /// Batches as long as the other scenarios' (a few hundred thousand spans): bursts.
    pub fn burst() -> LocalSpans {
        LocalSpans::new(
            Info {
                id: "fastrace-burst",
                label: "fastrace `LocalSpan`, short batches (bursts)",
                group: Group::Peer,
                vs: Some("phos-scope"),
                note: "for information: the collector takes the spans only after the loop",
            },
            0,
        )
    }

    fn new(info: Info, min_batch: u64) -> LocalSpans {
        setup();
        LocalSpans { info, min_batch, emitted: 0, recorded: 0, timed_out: false }
    }
}

impl Scenario for LocalSpans {
    fn info(&self) -> &Info {
        &self.info
    }

    fn granule(&self) -> u64 {
        SPANS_PER_ROOT
    }

    fn min_batch(&self) -> u64 {
        self.min_batch
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

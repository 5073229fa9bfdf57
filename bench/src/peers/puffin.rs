//! puffin 0.20: a scope with profiling on, at the top level and nested in a frame scope.
//!
//! A top-level scope locks puffin's global profiler and copies the thread name when it closes; a
//! scope nested in another only appends to the thread's stream, so the two differ a lot and both
//! are measured. Profiling needs `set_scopes_on(true)`, and the scopes reach the frame sinks only
//! at `GlobalProfiler::new_frame()`, called every [`SCOPES_PER_FRAME`] scopes and counted in the
//! cost. The check counts the scopes in the frames a sink receives.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

use puffin::GlobalProfiler;

use crate::scenario::{timed, Check, Footprint, Group, Info, Sample, Scenario};

/// Scopes per frame.
pub const SCOPES_PER_FRAME: u64 = 1_000;

/// Scopes in the frames the sink received.
static SCOPES: AtomicU64 = AtomicU64::new(0);
/// Bytes of scope stream in those frames.
static STREAM_BYTES: AtomicU64 = AtomicU64::new(0);

/// Turns profiling on and adds the counting sink (once per process).
pub fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        puffin::set_scopes_on(true);
        GlobalProfiler::lock().add_sink(Box::new(|frame| {
            let meta = frame.meta();
            // Relaxed: tallies, read on the thread that called `new_frame`, which runs the sinks.
            SCOPES.fetch_add(meta.num_scopes as u64, Ordering::Relaxed);
            STREAM_BYTES.fetch_add(meta.num_bytes as u64, Ordering::Relaxed);
        }));
    });
}

/// `n` top-level scopes (a multiple of [`SCOPES_PER_FRAME`]), with a new frame every
/// [`SCOPES_PER_FRAME`].
#[inline(never)]
pub fn top_level_batch(n: u64) {
    for _ in 0..n / SCOPES_PER_FRAME {
        for _ in 0..SCOPES_PER_FRAME {
            puffin::profile_scope!("scope");
        }
        GlobalProfiler::lock().new_frame();
    }
}

/// `n` scopes nested in a `frame` scope of [`SCOPES_PER_FRAME`], with a new frame after each.
#[inline(never)]
pub fn nested_batch(n: u64) {
    for _ in 0..n / SCOPES_PER_FRAME {
        {
            puffin::profile_scope!("frame");
            for _ in 0..SCOPES_PER_FRAME {
                puffin::profile_scope!("scope");
            }
        }
        GlobalProfiler::lock().new_frame();
    }
}

/// A puffin scenario.
#[derive(Debug)]
pub struct Scopes {
    info: Info,
    nested: bool,
    emitted: u64,
    /// Scopes of this scenario's batches that reached the sink (frame scopes not counted).
    recorded: u64,
    /// All scopes of its batches that reached the sink, and their stream bytes.
    scopes: u64,
    bytes: u64,
}

impl Scopes {
    /// Top-level scopes, or scopes nested in a frame scope.
    pub fn new(nested: bool) -> Scopes {
        setup();
        let (id, label) = if nested {
            ("puffin-nested", "puffin scope nested in a frame scope (`new_frame` every 1,000)")
        } else {
            ("puffin-top", "puffin scope, top level (`new_frame` every 1,000)")
        };
        Scopes {
            info: Info { id, label, group: Group::Peer, vs: Some("phos-scope"), note: "" },
            nested,
            emitted: 0,
            recorded: 0,
            scopes: 0,
            bytes: 0,
        }
    }
}

impl Scenario for Scopes {
    fn info(&self) -> &Info {
        &self.info
    }

    fn granule(&self) -> u64 {
        SCOPES_PER_FRAME
    }

    fn run(&mut self, n: u64) -> Sample {
        assert_eq!(n % SCOPES_PER_FRAME, 0, "puffin batches are whole frames");
        self.emitted += n;
        let batch = if self.nested { nested_batch } else { top_level_batch };
        // Relaxed: the sinks run inside `new_frame`, on this thread.
        let (scopes0, bytes0) = (SCOPES.load(Ordering::Relaxed), STREAM_BYTES.load(Ordering::Relaxed));
        let sample = timed(n, || batch(n));
        let scopes = SCOPES.load(Ordering::Relaxed) - scopes0;
        self.scopes += scopes;
        self.bytes += STREAM_BYTES.load(Ordering::Relaxed) - bytes0;
        // The frame scopes are in the frames too.
        let frames = if self.nested { n / SCOPES_PER_FRAME } else { 0 };
        self.recorded += scopes.saturating_sub(frames);
        sample
    }

    fn check(&mut self) -> Check {
        let memory = (self.scopes > 0).then(|| self.bytes as f64 / self.scopes as f64);
        Check::new(self.emitted, self.emitted, self.recorded, "scopes in the frames a sink received")
            .with_footprint(Footprint { memory, disk: None })
    }
}

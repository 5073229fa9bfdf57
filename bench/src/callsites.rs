//! 10,000 registered callsites against 10, without generating 10,000 macro expansions.
//!
//! A `trace_instant!` expands to a `static Callsite`, `check`, and `emit`. Here the callsites are
//! built at run time and leaked (so they are `'static`, as the macro's are), and one loop sends
//! each event through `check` and `emit` exactly as the macro does, but to the next callsite of a
//! slice in turn. The 10-callsite and 10,000-callsite scenarios run the same loop over slices of
//! different length, so the only difference between them is the number of callsites the events
//! touch: 10 state words that stay in L1, or 10,000 spread over about a megabyte.
//!
//! What this leaves out: in a real program each callsite has its own copy of the inlined hot
//! path, so 10,000 sites also cost instruction-cache misses, as any instrumentation does. The
//! registry itself is off the hot path (registration happens once per callsite, under a lock),
//! and `TraceLog::start` and `stop` walk every registered callsite; [`start_stop_us`] measures
//! that.

use std::sync::OnceLock;
use std::time::Instant;

use phosphor::__macro_support::{check, emit, Callsite, CallsiteMeta, Now, Phase};
use phosphor::{BufferMode, TraceConfig, TraceLog};

/// Callsites in the small set.
pub const FEW: usize = 10;
/// Callsites in the large set.
pub const MANY: usize = 10_000;
/// Name prefix of every leaked callsite (what the verification counts).
pub const PREFIX: &str = "site-";

/// The two sets of leaked callsites.
#[derive(Debug)]
pub struct Sites {
    /// [`FEW`] callsites.
    pub few: Vec<&'static Callsite>,
    /// [`MANY`] callsites.
    pub many: Vec<&'static Callsite>,
}

/// The leaked callsites, built and registered on first use.
pub fn sites() -> &'static Sites {
    static SITES: OnceLock<Sites> = OnceLock::new();
    SITES.get_or_init(|| {
        let make = |set: &str, k: usize| -> &'static Callsite {
            let name: &'static str = Box::leak(format!("{PREFIX}{set}-{k}").into_boxed_str());
            let meta = CallsiteMeta::new("bench", name, Phase::Instant, ["a", "b"], file!(), k as u32);
            Box::leak(Box::new(Callsite::new(meta)))
        };
        let sites = Sites {
            few: (0..FEW).map(|k| make("few", k)).collect(),
            many: (0..MANY).map(|k| make("many", k)).collect(),
        };
        // A callsite registers on its first check, traced or not; do it now so that no timed
        // batch pays for it.
        let log = TraceLog::global();
        for &cs in sites.few.iter().chain(&sites.many) {
            let _ = check(log, cs);
        }
        sites
    })
}

/// `n` instant events with two integer arguments, each on the next callsite of `sites` in turn:
/// the code `trace_instant!("bench", …, "a" => i as i64, "b" => 7u64)` expands to, with the
/// callsite taken from the slice.
#[inline(never)]
pub fn rotate_batch(sites: &[&'static Callsite], n: u64) {
    let log = TraceLog::global();
    let mut k = 0;
    for i in 0..n {
        let cs = sites[k];
        k += 1;
        if k == sites.len() {
            k = 0;
        }
        if let Some(state) = check(log, cs) {
            emit(log, cs, state, Now, [], i as i64, 7u64);
        }
    }
}

/// Median wall time of `TraceLog::start` + `stop` on the global log with a 64 KiB buffer, in µs,
/// over `reps` runs (after one discarded run, which calibrates the clock the first time). Both
/// walk every registered callsite. The global log must not be tracing.
pub fn start_stop_us(reps: usize) -> f64 {
    let log = TraceLog::global();
    let mut times = Vec::with_capacity(reps);
    for rep in 0..=reps {
        let t0 = Instant::now();
        log.start(TraceConfig::new(BufferMode::Fixed, 64 << 10)).expect("the global log is idle");
        log.stop();
        let dt = t0.elapsed().as_secs_f64() * 1e6;
        drop(log.take_trace());
        if rep > 0 {
            times.push(dt);
        }
    }
    crate::stats::median(&mut times)
}

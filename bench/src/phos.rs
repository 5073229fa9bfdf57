//! Phosphor's scenarios, the trace they record into while timed, and the check of what they
//! recorded.
//!
//! **While timed**, every Phosphor scenario records into one trace on the global log: a 64 MiB
//! Ring buffer whose category filter excludes `off`, filled once over before the first batch so
//! that events land in mapped pages and reused chunks, as in a long-running trace (the same setup
//! as `crates/phosphor/benches/hot_path.rs`). When the rounds are over, [`stop_session`] checks
//! Phosphor's accounting for the whole run: every emitted event was recorded or overwritten by the
//! Ring, and nothing else was dropped.
//!
//! **The check of each scenario** ([`check`]) then runs its batch function twice more, with `n`
//! and `2n` events, into a Fixed buffer large enough to keep every event, decodes each trace, and
//! counts the events of that scenario whose payload is right (argument values, durations). The
//! difference between the two traces gives the bytes per event in memory (chunks used) and on
//! disk (the trace file `Trace::write_to` produces), without their fixed parts.

use std::hint::black_box;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use phosphor::format::chunk::CHUNK_BYTES;
use phosphor::{ArgValue, BufferMode, Phase, Stats, TraceConfig, TraceLog};

use crate::callsites;
use crate::scenario::{timed, Check, Footprint, Group, Info, Sample, Scenario};

/// The timed trace's Ring buffer, and the buffer of the memory benchmark.
pub const RING_BYTES: usize = 64 << 20;
/// The category filter of every Phosphor trace here: `off` is the disabled category.
pub const FILTER: &str = "-off";

/// Events that passed their enabled check on the global log during the session.
static EMITTED: AtomicU64 = AtomicU64::new(0);

/// Adds `n` to the session's emitted count.
pub fn count_emitted(n: u64) {
    // Relaxed: a tally, read after the threads that add to it have been joined.
    EMITTED.fetch_add(n, Ordering::Relaxed);
}

/// `n` instant events with two integer arguments.
#[inline(never)]
pub fn instant_batch(n: u64) {
    for i in 0..n {
        phosphor::trace_instant!("bench", "instant", "a" => i as i64, "b" => 7u64);
    }
}

/// `n` scopes: two clock reads, one complete event each.
#[inline(never)]
pub fn scope_batch(n: u64) {
    for _ in 0..n {
        phosphor::trace_scope!("bench", "scope");
    }
}

/// `n` counter samples.
#[inline(never)]
pub fn counter_batch(n: u64) {
    for i in 0..n {
        phosphor::trace_counter!("bench", "counter", i);
    }
}

/// The dynamic string of [`dynstr_batch`]: 10 bytes, copied into a continuation record.
pub const DYN_STR: &str = "request-42";

/// `n` instant events with a dynamic (copied) 10-byte string argument.
#[inline(never)]
pub fn dynstr_batch(n: u64) {
    let s: &str = black_box(DYN_STR);
    for _ in 0..n {
        phosphor::trace_instant!("bench", "dyn_str", "s" => s);
    }
}

/// `n` instant events in a category the trace excludes: the enabled check and nothing else.
#[inline(never)]
pub fn disabled_batch(n: u64) {
    for i in 0..n {
        phosphor::trace_instant!("off", "disabled", "a" => i as i64, "b" => 7u64);
    }
}

/// Starts the timed trace on the global log and fills its Ring once over.
pub fn start_session() {
    let config = TraceConfig::new(BufferMode::Ring, RING_BYTES).categories(FILTER).expect("a valid filter");
    TraceLog::global().start(config).expect("the global log is idle");
    let warm = (RING_BYTES / 32) as u64;
    instant_batch(warm);
    count_emitted(warm);
}

/// The accounting of the timed trace.
#[derive(Clone, Debug)]
pub struct SessionCheck {
    /// Events emitted into it (warm-up, timed batches, scaling threads).
    pub emitted: u64,
    /// Its statistics at stop.
    pub stats: Stats,
}

impl SessionCheck {
    /// Every event recorded or overwritten by the Ring, and no other drop.
    pub fn ok(&self) -> bool {
        let d = &self.stats.dropped;
        self.stats.recorded + d.total() == self.emitted && d.total() == d.overwritten
    }
}

impl std::fmt::Display for SessionCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = &self.stats.dropped;
        write!(
            f,
            "{} emitted = {} recorded + {} overwritten by the Ring; other drops {}: {}",
            self.emitted,
            self.stats.recorded,
            d.overwritten,
            d.total() - d.overwritten,
            if self.ok() { "✓" } else { "✗ MISMATCH" }
        )
    }
}

/// Stops the timed trace and checks its accounting.
pub fn stop_session() -> SessionCheck {
    let log = TraceLog::global();
    log.stop();
    drop(log.take_trace());
    // Relaxed: every thread that added to it has been joined.
    SessionCheck { emitted: EMITTED.load(Ordering::Relaxed), stats: log.stats() }
}

/// A Phosphor workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// [`instant_batch`].
    Instant,
    /// [`scope_batch`].
    Scope,
    /// [`counter_batch`].
    Counter,
    /// [`dynstr_batch`].
    DynStr,
    /// [`disabled_batch`].
    Disabled,
    /// Instants rotating over [`callsites::FEW`] callsites.
    FewSites,
    /// Instants rotating over [`callsites::MANY`] callsites.
    ManySites,
}

impl Kind {
    /// Every workload, in table order.
    pub const ALL: [Kind; 7] = [
        Kind::Instant,
        Kind::Scope,
        Kind::Counter,
        Kind::DynStr,
        Kind::Disabled,
        Kind::FewSites,
        Kind::ManySites,
    ];

    /// Runs `n` events of this workload on the global log.
    pub fn batch(self, n: u64) {
        match self {
            Kind::Instant => instant_batch(n),
            Kind::Scope => scope_batch(n),
            Kind::Counter => counter_batch(n),
            Kind::DynStr => dynstr_batch(n),
            Kind::Disabled => disabled_batch(n),
            Kind::FewSites => callsites::rotate_batch(&callsites::sites().few, n),
            Kind::ManySites => callsites::rotate_batch(&callsites::sites().many, n),
        }
    }

    fn records(self) -> bool {
        self != Kind::Disabled
    }

    fn info(self) -> Info {
        let (id, label, note) = match self {
            Kind::Instant => ("phos-instant", "Phosphor instant, 2 int args", ""),
            Kind::Scope => ("phos-scope", "Phosphor scope (2 clock reads, 1 complete event)", ""),
            Kind::Counter => ("phos-counter", "Phosphor counter", ""),
            Kind::DynStr => ("phos-dynstr", "Phosphor instant, 10-byte dynamic string", ""),
            Kind::Disabled => ("phos-disabled", "Phosphor disabled category", ""),
            Kind::FewSites => (
                "phos-10-sites",
                "Phosphor instant rotating over 10 callsites",
                "callsites built at run time; same check/emit path as the macro",
            ),
            Kind::ManySites => (
                "phos-10k-sites",
                "Phosphor instant rotating over 10,000 callsites",
                "callsites built at run time; same check/emit path as the macro",
            ),
        };
        Info { id, label, group: Group::Phosphor, vs: None, note }
    }

    /// Whether `e` is one of this workload's events, with the payload the batch gave it (`i` is
    /// the event's position in the batch).
    fn is_own(self, e: &phosphor::Event<'_>, i: u64) -> bool {
        let cs = e.callsite;
        let int_args = || e.arg("a") == Some(ArgValue::I64(i as i64)) && e.arg("b") == Some(ArgValue::U64(7));
        match self {
            Kind::Instant => cs.name == "instant" && cs.phase == Phase::Instant && int_args(),
            Kind::Scope => cs.name == "scope" && cs.phase == Phase::Complete && e.duration.is_some(),
            Kind::Counter => {
                cs.name == "counter" && cs.phase == Phase::Counter && e.arg("value") == Some(ArgValue::U64(i))
            }
            Kind::DynStr => {
                cs.name == "dyn_str" && e.arg("s") == Some(ArgValue::Str(DYN_STR)) && !e.truncated
            }
            Kind::Disabled => cs.name == "disabled",
            Kind::FewSites | Kind::ManySites => cs.name.starts_with(callsites::PREFIX) && int_args(),
        }
    }
}

/// What [`verify`] found.
#[derive(Clone, Debug)]
pub struct Verified {
    /// Events emitted.
    pub emitted: u64,
    /// The scenario's events found in the trace with the right payload, in order.
    pub recorded: u64,
    /// Bytes of the chunks the trace used.
    pub memory: u64,
    /// Bytes of its trace file.
    pub disk: u64,
    /// The trace's statistics.
    pub stats: Stats,
    /// Drops, or events other than the scenario's.
    pub problem: Option<String>,
}

/// Runs `n` events of `kind` into a fresh Fixed trace on the global log (which must be idle),
/// decodes it, and counts the events that carry the right payload, in order. Also measures the
/// chunks the trace used and the size of its trace file.
pub fn verify(kind: Kind, n: u64) -> Verified {
    let log = TraceLog::global();
    // Up to two records per event (the dynamic string's continuation), one chunk in 128 of
    // extents, and a chunk per thread that might still hold one.
    let bytes = (n as usize * 64 * 129 / 127 + 64 * CHUNK_BYTES).next_multiple_of(CHUNK_BYTES);
    let config = TraceConfig::new(BufferMode::Fixed, bytes).categories(FILTER).expect("a valid filter");
    log.start(config).expect("the global log is idle");
    kind.batch(n);
    log.stop();
    let trace = log.take_trace().expect("a stopped trace");
    let stats = trace.stats().clone();
    let mut own = 0u64;
    let mut decoded = 0u64;
    for e in trace.events() {
        let e = e.expect("Phosphor's own traces decode");
        decoded += 1;
        if kind.is_own(&e, own) {
            own += 1;
        }
    }
    let mut file = ByteCount(0);
    trace.write_to(&mut file).expect("writing to a counter cannot fail");
    let problem = (stats.dropped.total() != 0 || decoded != own || stats.recorded != decoded).then(|| {
        format!("{} dropped, {decoded} decoded, {} counted recorded", stats.dropped.total(), stats.recorded)
    });
    Verified {
        emitted: n,
        recorded: own,
        memory: stats.chunks_loaned * CHUNK_BYTES as u64,
        disk: file.0,
        stats,
        problem,
    }
}

/// The check of `kind`: [`verify`] with `n` and with `2n` events. The bytes per event are the
/// difference of the two traces over `n`, so the fixed parts (the file's header and callsite
/// table, a partly filled last chunk) cancel out.
pub fn check(kind: Kind, n: u64) -> Check {
    let a = verify(kind, n);
    let b = verify(kind, 2 * n);
    let expected = if kind.records() { 3 * n } else { 0 };
    let check = Check::new(
        3 * n,
        expected,
        a.recorded + b.recorded,
        format!("decoded from Fixed traces of {n} and {}", 2 * n),
    );
    let check = if kind.records() {
        check.with_footprint(Footprint {
            memory: Some((b.memory as f64 - a.memory as f64) / n as f64),
            disk: Some((b.disk as f64 - a.disk as f64) / n as f64),
        })
    } else {
        check
    };
    match a.problem.or(b.problem) {
        Some(p) => check.with_problem(p),
        None => check,
    }
}

/// A `Write` that counts bytes.
struct ByteCount(u64);

impl Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A Phosphor workload as a scenario. Its batches need the session running ([`start_session`]);
/// its check needs it stopped.
#[derive(Debug)]
pub struct Phos {
    info: Info,
    kind: Kind,
    verify_events: u64,
}

impl Phos {
    /// The scenario of `kind`, checked with a verification run of `verify_events` events.
    pub fn new(kind: Kind, verify_events: u64) -> Phos {
        if matches!(kind, Kind::FewSites | Kind::ManySites) {
            callsites::sites();
        }
        Phos { info: kind.info(), kind, verify_events }
    }
}

impl Scenario for Phos {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&mut self, n: u64) -> Sample {
        if self.kind.records() {
            count_emitted(n);
        }
        let kind = self.kind;
        timed(n, || kind.batch(n))
    }

    fn check(&mut self) -> Check {
        check(self.kind, self.verify_events)
    }
}

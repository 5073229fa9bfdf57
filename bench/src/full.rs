//! The whole run, in order: what each step measures and why it comes where it does.
//!
//! 1. `start` + `stop` cost while few callsites exist (before the 10,000 are built).
//! 2. The timed Phosphor trace starts (64 MiB Ring, filled once); every scenario is built (the
//!    peers install their reporter, sink and subscriber; the 10,010 run-time callsites register).
//! 3. The timed rounds, then the scaling rounds, all recording into that one trace.
//! 4. The trace stops and its accounting is checked; then every scenario's own check (Phosphor's
//!    verification runs need the global log idle).
//! 5. `start` + `stop` again, now with 10,000 more callsites registered.
//! 6. Memory, in `phosphor-bench-rss` processes.
//! 7. Instruction counts under callgrind, last, so that its two busy processes do not disturb
//!    the timings.

use std::collections::HashMap;
use std::time::Instant;

use crate::catalog::{self, Options, IDS};
use crate::report::Results;
use crate::run::{self, Plan};
use crate::scaling::{self, Work};
use crate::scenario::Scenario;
use crate::{callsites, instr, memory, phos, sys};

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Fewer and shorter rounds; no callgrind unless `instr` says so.
    pub quick: bool,
    /// Rounds, instead of the default.
    pub rounds: Option<usize>,
    /// Count instructions with callgrind.
    pub instr: bool,
    /// The command line, for the report.
    pub command: String,
}

/// Thread counts of the scaling runs.
pub const THREADS: [usize; 4] = [1, 2, 4, 16];

fn progress(msg: &str) {
    eprintln!("[phosphor-bench] {msg}");
}

/// Runs everything and returns the figures.
pub fn run(cfg: &Config) -> Results {
    let t0 = Instant::now();
    let load_start = sys::load_average();
    let plan = if cfg.quick {
        Plan { rounds: cfg.rounds.unwrap_or(5), batches: 3, batch_ns: 2e6 }
    } else {
        Plan { rounds: cfg.rounds.unwrap_or(21), batches: 3, batch_ns: 8e6 }
    };
    let scaling_rounds = if cfg.quick { 3 } else { plan.rounds.div_ceil(2) };
    let reps = if cfg.quick { 2 } else { 5 };
    let exe = std::env::current_exe().expect("the harness's own path");

    progress("start + stop cost, few callsites");
    let start_stop_few = callsites::start_stop_us(if cfg.quick { 20 } else { 100 });

    progress("starting the timed Phosphor trace (64 MiB Ring, filled once)");
    phos::start_session();
    let opts =
        Options { verify_events: if cfg.quick { 20_000 } else { 100_000 }, children_of: Some(exe.clone()) };
    let mut scenarios: Vec<Box<dyn Scenario>> =
        IDS.iter().map(|id| catalog::make(id, &opts).expect("every id in IDS is known")).collect();

    let measured = run::measure(&mut scenarios, plan, progress);

    // Each thread runs three single-thread batches, so that thread start-up skew stays small.
    let events = |id: &str| 3 * measured.iter().find(|m| m.info.id == id).map_or(100_000, |m| m.batch_events);
    let works = [
        (Work::Limit, events("limit")),
        (Work::PhosInstant, events("phos-instant")),
        (Work::PhosInstantSmallRing, events("phos-instant")),
    ];
    let scaling = scaling::measure(&works, &THREADS, scaling_rounds, progress);
    let small_ring = scaling::stop_small_ring();

    progress("stopping the timed trace; checking every scenario");
    let session = phos::stop_session();
    let checks: HashMap<&'static str, _> = scenarios.iter_mut().map(|s| (s.info().id, s.check())).collect();

    progress("start + stop cost, 10,000 more callsites");
    let start_stop_many = callsites::start_stop_us(if cfg.quick { 20 } else { 100 });

    progress("memory");
    let memory = memory::measure(reps);

    let instr = if !cfg.instr {
        Err("not run (`--quick` or `--no-instr`)".to_string())
    } else if !instr::available() {
        Err("valgrind is not installed".to_string())
    } else {
        let dir = instr::default_dir();
        // The burst differs from the steady fastrace scenario only in its batch length, which
        // callgrind does not see.
        let ids: Vec<&'static str> = IDS.iter().copied().filter(|&id| id != "fastrace-burst").collect();
        Ok(instr::measure(&exe, &dir, &ids, cfg.quick, 2, progress).into_iter().collect())
    };

    Results {
        machine: sys::machine(),
        commit: sys::commit(),
        load: (load_start, sys::load_average()),
        plan,
        scaling_rounds,
        command: cfg.command.clone(),
        measured,
        checks,
        session,
        small_ring,
        instr,
        scaling,
        start_stop_us: (start_stop_few, start_stop_many),
        memory,
        seconds: t0.elapsed().as_secs_f64(),
    }
}

/// `--scenario ID --iters N --batches S`: runs one scenario here and prints its samples and
/// check (see `child`). Returns whether every check passed.
pub fn child(id: &str, iters: u64, batches: usize) -> Result<bool, String> {
    let opts = Options { verify_events: 10_000, children_of: None };
    let session = catalog::needs_session(id);
    if session {
        phos::start_session();
    }
    let mut s = catalog::make(id, &opts).ok_or_else(|| format!("unknown scenario `{id}` (try --list)"))?;
    for _ in 0..batches {
        let sample = s.run(iters.next_multiple_of(s.granule()));
        println!("{}", crate::child::sample_line(&sample));
    }
    let mut ok = true;
    if session {
        let sc = phos::stop_session();
        println!("session {sc}");
        ok &= sc.ok();
    }
    let check = s.check();
    println!("{}", crate::child::check_line(&check));
    Ok(ok && check.ok())
}

/// `--instr-only`: the instruction counts of `ids` alone, as a Markdown table.
pub fn instr_table(ids: &[&'static str], quick: bool) -> String {
    if !instr::available() {
        return "valgrind is not installed\n".into();
    }
    let exe = std::env::current_exe().expect("the harness's own path");
    let results = instr::measure(&exe, &instr::default_dir(), ids, quick, 2, progress);
    let mut out = String::from(
        "| scenario | N | instructions/event, calling thread | all threads |\n|---|---:|---:|---:|\n",
    );
    for (id, r) in results {
        let n = instr::events_for(id, quick);
        match r {
            Ok(i) => out += &format!("| {id} | {n} | {:.1} | {:.1} |\n", i.calling, i.all),
            Err(e) => out += &format!("| {id} | {n} | failed: {e} | |\n"),
        }
    }
    out
}

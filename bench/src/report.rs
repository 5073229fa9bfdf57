//! The printed report: Markdown tables, ready for BENCHMARKS.md.

use std::collections::HashMap;
use std::fmt::Write;

use crate::instr::Instr;
use crate::memory::Memory;
use crate::phos::SessionCheck;
use crate::run::{Measured, Plan};
use crate::scaling::{ScalePoint, Work};
use crate::scenario::{Check, Group};

/// Everything one run measured.
#[derive(Debug)]
pub struct Results {
    /// `sys::machine()`.
    pub machine: String,
    /// `sys::commit()`.
    pub commit: String,
    /// Load average when the run started and ended.
    pub load: (String, String),
    /// The timed rounds' plan.
    pub plan: Plan,
    /// Rounds of the scaling runs.
    pub scaling_rounds: usize,
    /// The command line that reproduces the run.
    pub command: String,
    /// Every scenario's figures, in table order.
    pub measured: Vec<Measured>,
    /// Every scenario's check, by id.
    pub checks: HashMap<&'static str, Check>,
    /// The timed Phosphor trace's accounting.
    pub session: SessionCheck,
    /// The small-ring log's accounting (scaling), if it was used: whether it holds, and the figures.
    pub small_ring: Option<(bool, String)>,
    /// Instructions per event, by id, or why there are none.
    pub instr: Result<HashMap<&'static str, Result<Instr, String>>, String>,
    /// The scaling runs.
    pub scaling: Vec<ScalePoint>,
    /// `start` + `stop` in µs with few callsites registered and with 10,000 more.
    pub start_stop_us: (f64, f64),
    /// Resident memory.
    pub memory: Memory,
    /// Wall time of the whole run, s.
    pub seconds: f64,
}

/// A time in ns with three significant digits.
pub fn ns(x: f64) -> String {
    if !x.is_finite() {
        "—".into()
    } else if x < 1.0 {
        format!("{x:.3}")
    } else if x < 10.0 {
        format!("{x:.2}")
    } else if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// A ratio with three significant digits.
pub fn times(x: f64) -> String {
    if !x.is_finite() {
        "—".into()
    } else if x < 10.0 {
        format!("{x:.3}")
    } else if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

fn kib(bytes: f64) -> String {
    format!("{:.0} KiB", bytes / 1024.0)
}

impl Results {
    /// A scenario's figures, if its recorded-count check passed (and, for Phosphor's, the timed
    /// trace's accounting): no figure is quoted otherwise.
    fn get(&self, id: &str) -> Option<&Measured> {
        let m = self.measured.iter().find(|m| m.info.id == id)?;
        let checked = self.checks.get(id).is_some_and(Check::ok);
        let session = m.info.group != Group::Phosphor || self.session.ok();
        (checked && session).then_some(m)
    }

    fn instr_of(&self, id: &str) -> String {
        match &self.instr {
            Err(_) => "—".into(),
            Ok(map) => match map.get(id) {
                None => "—".into(),
                Some(Err(_)) => "failed".into(),
                Some(Ok(i)) if (i.all - i.calling).abs() < 0.5 => format!("{:.1}", i.calling),
                Some(Ok(i)) => format!("{:.1} / {:.1}", i.calling, i.all),
            },
        }
    }

    /// The whole report.
    pub fn render(&self) -> String {
        let mut o = String::new();
        self.header(&mut o);
        self.main_table(&mut o);
        self.scaling_table(&mut o);
        self.callsite_table(&mut o);
        self.memory_table(&mut o);
        self.targets(&mut o);
        o
    }

    fn header(&self, o: &mut String) {
        let p = &self.plan;
        let _ = writeln!(o, "# phosphor-bench: Phosphor, the limit loop and the peers, side by side\n");
        let _ = writeln!(o, "- Machine: {}.", self.machine);
        let _ = writeln!(o, "- Code: commit {}. Command: `{}`.", self.commit, self.command);
        let _ = writeln!(
            o,
            "- Load average (1, 5, 15 min): {} at the start, {} at the end; the run took {:.0} s.",
            self.load.0, self.load.1, self.seconds
        );
        let _ = writeln!(
            o,
            "- Method: {} rounds; every round runs every scenario (order rotated each round) as {} batches of \
             about {:.0} ms, and keeps the batches' median. Figures are medians over the rounds; ratios are \
             medians of the per-round ratios. Nothing is pinned. Instructions: callgrind, (Ir(2N) − Ir(N)) / N, \
             calling thread / all threads where they differ.\n",
            p.rounds,
            p.batches,
            p.batch_ns / 1e6
        );
    }

    fn main_table(&self, o: &mut String) {
        let _ = writeln!(o, "## Cost per event, one thread\n");
        let _ = writeln!(
            o,
            "| scenario | ns/event | range over rounds | × limit loop | process CPU ns/event | \
             × Phosphor (thread / process CPU) | instructions/event | recorded / expected |"
        );
        let _ = writeln!(o, "|---|---:|---:|---:|---:|---|---:|---|");
        let limit = self.get("limit");
        let mut last_group = None;
        for m in &self.measured {
            if last_group == Some(Group::Phosphor) && m.info.group != Group::Phosphor {
                // `trace_log!` is not among this run's scenarios; its row says where it is measured.
                let _ = writeln!(
                    o,
                    "| Phosphor log, 3 params | not run here: `log_3_ints` in the divan and callgrind tables | | | | | | |"
                );
            }
            last_group = Some(m.info.group);
            let check =
                self.checks.get(m.info.id).map(Check::summary).unwrap_or_else(|| "not checked".into());
            if self.get(m.info.id).is_none() {
                let _ =
                    writeln!(o, "| {} | not quoted: the check failed | | | | | | {check} |", m.info.label);
                continue;
            }
            let (lo, hi) = m.wall_range();
            let x_limit = limit.map(|l| times(m.wall_ratio(l))).unwrap_or_default();
            let vs = m
                .info
                .vs
                .and_then(|id| self.get(id).map(|p| (id, p)))
                .map(|(id, p)| format!("{} / {} (vs `{id}`)", times(m.wall_ratio(p)), times(m.cpu_ratio(p))))
                .unwrap_or_default();
            let _ = writeln!(
                o,
                "| {} | {} | {}–{} | {} | {} | {} | {} | {} |",
                m.info.label,
                ns(m.wall()),
                ns(lo),
                ns(hi),
                x_limit,
                ns(m.cpu()),
                vs,
                self.instr_of(m.info.id),
                check
            );
        }
        let _ = writeln!(o);
        let _ = writeln!(o, "- Timed Phosphor trace (64 MiB Ring, warm): {}.", self.session);
        for m in &self.measured {
            if !m.info.note.is_empty() {
                let _ = writeln!(o, "- {}: {}.", m.info.label, m.info.note);
            }
        }
        if let Err(why) = &self.instr {
            let _ = writeln!(o, "- No instruction counts: {why}.");
        } else if let Ok(map) = &self.instr {
            for (id, r) in map {
                if let Err(e) = r {
                    let _ = writeln!(o, "- callgrind failed for `{id}`: {e}");
                }
            }
        }
        let _ = writeln!(
            o,
            "- \"× Phosphor\" divides the peer's figure by the Phosphor scenario doing the same work, in the \
             same round: above 1 means Phosphor is cheaper. Process CPU counts every thread until the \
             tracer has taken in the batch (fastrace's collector, tracing-chrome's writer).\n"
        );
    }

    fn scaling_table(&self, o: &mut String) {
        if self.scaling.is_empty() {
            return;
        }
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
        let _ = writeln!(
            o,
            "## Scaling: the same work on 1, 2, 4 and 16 threads ({} rounds)\n",
            self.scaling_rounds
        );
        let _ = writeln!(
            o,
            "| workload | threads | events per thread | M events/s, all threads | × 1 thread | thread CPU ns/event |"
        );
        let _ = writeln!(o, "|---|---:|---:|---:|---:|---:|");
        for p in &self.scaling {
            let base = self.scaling.iter().find(|b| b.work == p.work && b.threads == 1);
            let over =
                if p.threads > cpus { format!(" (oversubscribed: {cpus} CPUs)") } else { String::new() };
            let _ = writeln!(
                o,
                "| {} | {}{} | {} | {:.1} | {} | {} |",
                p.work.label(),
                p.threads,
                over,
                p.events,
                p.throughput() / 1e6,
                base.map(|b| times(p.speedup(b))).unwrap_or_default(),
                ns(p.thread_cpu())
            );
        }
        let _ = writeln!(
            o,
            "\nThroughput is every thread's events over the wall time from the first thread's start to the \
             last thread's end. With more threads than CPUs a thread waits for a CPU, so the cost per event is \
             quoted in thread CPU time. The 64 MiB Ring is the timed trace's; the 256 KiB Ring is an \
             independent log's, which stays in the caches, so the two Phosphor rows tell the cost of writing \
             to memory from what the threads cost each other."
        );
        if let Some((ok, figures)) = &self.small_ring {
            let _ =
                writeln!(o, "The 256 KiB Ring's log: {figures}: {}.", if *ok { "✓" } else { "✗ MISMATCH" });
        }
        let _ = writeln!(o);
    }

    fn callsite_table(&self, o: &mut String) {
        let (Some(few), Some(many)) = (self.get("phos-10-sites"), self.get("phos-10k-sites")) else { return };
        let _ = writeln!(o, "## 10,000 registered callsites against 10\n");
        let _ = writeln!(o, "| | 10 callsites | 10,000 callsites | ratio |");
        let _ = writeln!(o, "|---|---:|---:|---:|");
        let _ = writeln!(
            o,
            "| instant event, ns (events rotate over the callsites) | {} | {} | {} |",
            ns(few.wall()),
            ns(many.wall()),
            times(many.wall_ratio(few))
        );
        let _ = writeln!(
            o,
            "| instructions/event | {} | {} | |",
            self.instr_of("phos-10-sites"),
            self.instr_of("phos-10k-sites")
        );
        let (a, b) = self.start_stop_us;
        let _ = writeln!(
            o,
            "| `TraceLog::start` + `stop` (64 KiB buffer), µs | {a:.1} (before the 10,000 registered) | {b:.1} | {} |",
            times(b / a)
        );
        let _ = writeln!(
            o,
            "\nThe 10,000 callsites are built at run time and driven through the macro's own `check` and \
             `emit`; the hot path does not look callsites up, so the difference is where their state words \
             sit in the cache. A program with 10,000 macro sites would also pay for 10,000 copies of the \
             inlined code in the instruction cache, which this does not show.\n"
        );
    }

    fn memory_table(&self, o: &mut String) {
        let _ = writeln!(o, "## Memory\n");
        let _ = writeln!(o, "| what | measured | requirement |");
        let _ = writeln!(o, "|---|---|---|");
        match &self.memory.idle {
            Ok(i) => {
                let _ = writeln!(
                    o,
                    "| RSS growth of a program that links Phosphor and never traces: 10 untraced callsites of \
                     every kind run 1,000 times on the main thread, then on a second thread; minus the same \
                     program without the macros (median of {} runs) | main thread {}; both threads {} \
                     (anonymous {}, file-backed code {}; largest of the runs {}) | < 100 KB |",
                    i.reps,
                    kib(i.main_thread),
                    kib(i.two_threads),
                    kib(i.anon),
                    kib(i.file),
                    kib(i.two_threads_max)
                );
                let _ = writeln!(
                    o,
                    "| … each further callsite, once run (registered even when not tracing) | {:.0} bytes \
                     (`size_of::<Callsite>()` = {:.0}) | |",
                    i.per_callsite, i.callsite_size
                );
            }
            Err(e) => {
                let _ = writeln!(o, "| RSS of a program that links Phosphor and never traces | not measured: {e} | < 100 KB |");
            }
        }
        match &self.memory.tracing {
            Ok(t) => {
                let _ = writeln!(
                    o,
                    "| RSS growth while tracing into a {:.0} MiB Ring (4 threads, wrapped twice) | {:.1} MiB = \
                     {:.1}% of the buffer (peak {:.1}%; after `stop` with the trace kept {:.1}%, dropped \
                     {:.1}%){} | ≤ 110% |",
                    t.buffer / 1048576.0,
                    t.running / 1048576.0,
                    100.0 * t.running / t.buffer,
                    100.0 * t.peak / t.buffer,
                    100.0 * t.stopped_kept / t.buffer,
                    100.0 * t.dropped / t.buffer,
                    if t.accounted { "" } else { "; ✗ accounting mismatch" }
                );
            }
            Err(e) => {
                let _ =
                    writeln!(o, "| RSS while tracing with a 64 MiB buffer | not measured: {e} | ≤ 110% |");
            }
        }
        let mut mem = Vec::new();
        let mut disk = Vec::new();
        for m in &self.measured {
            if let Some(c) = self.checks.get(m.info.id) {
                if let Some(b) = c.footprint.memory {
                    mem.push(format!("{}: {b:.1}", m.info.id));
                }
                if let Some(b) = c.footprint.disk {
                    disk.push(format!("{}: {b:.1}", m.info.id));
                }
            }
        }
        let _ = writeln!(o, "| bytes/event in memory | {} | |", mem.join("; "));
        let _ = writeln!(o, "| bytes/event on disk | {} | |", disk.join("; "));
        let _ = writeln!(
            o,
            "| conversion throughput and peak memory against trace size | `scripts/bench-convert.sh 1 10 100` | |"
        );
        let _ = writeln!(
            o,
            "\nRSS is `VmRSS` from `/proc/self/status`, read inside `phosphor-bench-rss`, a program that \
             links Phosphor and none of the peers. Anonymous memory is private to the process (heap, \
             thread-local blocks, statics written); file-backed pages are code and read-only data mapped \
             from the binary, shared with the page cache, and vary by up to 64 KiB from run to run because \
             the kernel maps the pages around each fault. Phosphor's bytes per event in memory are the \
             chunks used × 4 KiB (a chunk holds 127 records), on disk the trace file `Trace::write_to` \
             writes, both as the difference between traces of N and 2N events. puffin's figure is its \
             scope stream; tracing-chrome's is the JSON it writes.\n"
        );
    }

    /// The targets' table: the recording cost against the limit loop, against the peers, then
    /// scaling and memory; each row's verdict; and whether every scenario's count was checked.
    fn targets(&self, o: &mut String) {
        let _ = writeln!(o, "## Targets (issue 4)\n");
        let _ = writeln!(o, "| target | measured | verdict |");
        let _ = writeln!(o, "|---|---:|---|");
        let rows = self.limit_rows().into_iter().chain(self.peer_rows()).chain(self.scaling_memory_rows());
        for row in rows {
            target_row(o, row);
        }
        let all_checked = self.checks.values().all(Check::ok)
            && self.session.ok()
            && self.small_ring.as_ref().is_none_or(|(ok, _)| *ok);
        let _ = writeln!(
            o,
            "| every scenario's recorded count checked | {} | {} |",
            if all_checked { "all ✓" } else { "some ✗" },
            if all_checked { "met" } else { "**missed**" }
        );
    }

    /// The targets on the cost of a call against the limit loop.
    fn limit_rows(&self) -> [Row; 3] {
        let limit = self.get("limit");
        let vs_limit = |id: &str| Some(self.get(id)?.wall_ratio(limit?));
        let x = |name, value, bound| Row { name, value, bound, unit: "×", void: None };
        [
            x("instant ≤ 1.2× limit loop", vs_limit("phos-instant"), Bound::AtMost(1.2)),
            x("scope ≤ 2.05× limit loop", vs_limit("phos-scope"), Bound::AtMost(2.05)),
            x("disabled ≤ 0.1× limit loop", vs_limit("phos-disabled"), Bound::AtMost(0.1)),
        ]
    }

    /// The targets against the peers (fastrace, puffin, tracing-chrome), on the calling thread and
    /// in process CPU.
    fn peer_rows(&self) -> Vec<Row> {
        let vs = |peer: &str, phos: &str, cpu: bool| {
            let (a, b) = (self.get(peer)?, self.get(phos)?);
            Some(if cpu { a.cpu_ratio(b) } else { a.wall_ratio(b) })
        };
        let x = |name, value, bound| Row { name, value, bound, unit: "×", void: None };
        vec![
            x(
                "≥ 3× cheaper than fastrace LocalSpan (3 M-span batches), calling thread",
                vs("fastrace", "phos-scope", false),
                Bound::AtLeast(3.0),
            ),
            x(
                "≥ 6× cheaper than fastrace (3 M-span batches), process CPU",
                vs("fastrace", "phos-scope", true),
                Bound::AtLeast(6.0),
            ),
            x(
                "(fastrace in short bursts, calling thread)",
                vs("fastrace-burst", "phos-scope", false),
                Bound::Info,
            ),
            x(
                "(fastrace in short bursts, process CPU)",
                vs("fastrace-burst", "phos-scope", true),
                Bound::Info,
            ),
            x(
                "≥ 4× cheaper than puffin scope, top level",
                vs("puffin-top", "phos-scope", false),
                Bound::AtLeast(4.0),
            ),
            x(
                "≥ 4× cheaper than puffin scope, nested",
                vs("puffin-nested", "phos-scope", false),
                Bound::AtLeast(4.0),
            ),
            x(
                "≥ 20× cheaper than tracing-chrome span, calling thread",
                vs("chrome-span", "phos-scope", false),
                Bound::AtLeast(20.0),
            ),
            x(
                "≥ 50× cheaper than tracing-chrome span, process CPU",
                vs("chrome-span", "phos-scope", true),
                Bound::AtLeast(50.0),
            ),
            x(
                "≥ 20× cheaper than tracing-chrome event (args serialized), calling thread",
                vs("chrome-event", "phos-instant", false),
                Bound::AtLeast(20.0),
            ),
            x(
                "≥ 50× cheaper than tracing-chrome event (args serialized), process CPU",
                vs("chrome-event", "phos-instant", true),
                Bound::AtLeast(50.0),
            ),
            x(
                "≥ 20× cheaper than tracing-chrome event (its defaults: args left out), calling thread",
                vs("chrome-event-noargs", "phos-instant", false),
                Bound::AtLeast(20.0),
            ),
            x(
                "≥ 50× cheaper than tracing-chrome event (its defaults: args left out), process CPU",
                vs("chrome-event-noargs", "phos-instant", true),
                Bound::AtLeast(50.0),
            ),
        ]
    }

    /// The targets on two threads' throughput and on memory (idle, and tracing into 64 MiB).
    fn scaling_memory_rows(&self) -> Vec<Row> {
        let speedup = |work: Work| {
            let at = |t: usize| self.scaling.iter().find(|p| p.work == work && p.threads == t);
            Some(at(2)?.speedup(at(1)?))
        };
        let idle = self.memory.idle.as_ref().ok().map(|i| i.two_threads.max(i.main_thread) / 1000.0);
        let tracing = self.memory.tracing.as_ref().ok().map(|t| 100.0 * t.running.max(t.peak) / t.buffer);
        let x = |name, value, bound| Row { name, value, bound, unit: "×", void: None };
        // The scaling target means something only if the machine gave the limit loop two CPUs.
        let limit_two = speedup(Work::Limit);
        let scaling_void = limit_two.filter(|&l| l < 1.8).map(|l| {
            format!(
                "inconclusive: the limit loop itself reached only {}× (two whole CPUs were not free)",
                times(l)
            )
        });
        vec![
            Row {
                void: scaling_void,
                ..x(
                    "2 threads ≥ 1.8× one thread's throughput",
                    speedup(Work::PhosInstant),
                    Bound::AtLeast(1.8),
                )
            },
            x("(… into a 256 KiB Ring, cached)", speedup(Work::PhosInstantSmallRing), Bound::Info),
            x("(… the limit loop's own, for reference)", limit_two, Bound::Info),
            Row { unit: " KB", ..x("not tracing: RSS < 100 KB", idle, Bound::AtMost(100.0)) },
            Row {
                unit: "%",
                ..x(
                    "tracing, 64 MiB buffer: RSS ≤ 110% of the buffer (running or peak)",
                    tracing,
                    Bound::AtMost(110.0),
                )
            },
        ]
    }
}

/// One row of the targets' table: what was measured, and whether it met its bound.
fn target_row(o: &mut String, row: Row) {
    let Row { name, value, bound, unit, void } = row;
    let (measured, verdict) = match value.filter(|x| x.is_finite()) {
        None => ("—".into(), "not measured".to_string()),
        Some(x) => {
            let verdict = void.unwrap_or_else(|| {
                match bound {
                    Bound::AtMost(b) if x <= b => "met",
                    Bound::AtLeast(b) if x >= b => "met",
                    Bound::Info => "",
                    _ => "**missed**",
                }
                .into()
            });
            (format!("{}{unit}", times(x)), verdict)
        }
    };
    let _ = writeln!(o, "| {name} | {measured} | {verdict} |");
}

/// A target of the issue: what it bounds, and how.
struct Row {
    name: &'static str,
    value: Option<f64>,
    bound: Bound,
    unit: &'static str,
    /// Why the bound cannot be judged in this run, if it cannot.
    void: Option<String>,
}

/// How a measured value meets its target.
enum Bound {
    AtMost(f64),
    AtLeast(f64),
    /// Shown for information.
    Info,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::RoundFig;
    use crate::scenario::Info;

    fn measured(id: &'static str, group: Group, wall: f64) -> Measured {
        Measured {
            info: Info { id, label: id, group, vs: None, note: "" },
            batch_events: 1000,
            rounds: vec![RoundFig { wall, cpu: wall }; 3],
        }
    }

    #[test]
    fn a_scenario_whose_check_failed_is_not_quoted() {
        let mut checks = HashMap::new();
        checks.insert("limit", Check::new(10, 10, 10, "counted"));
        checks.insert("phos-instant", Check::new(10, 10, 9, "decoded"));
        let r = Results {
            machine: "m".into(),
            commit: "c".into(),
            load: ("0".into(), "0".into()),
            plan: Plan { rounds: 3, batches: 1, batch_ns: 1e6 },
            scaling_rounds: 0,
            command: "cmd".into(),
            measured: vec![
                measured("limit", Group::Reference, 9.6),
                measured("phos-instant", Group::Phosphor, 9.7),
            ],
            checks,
            session: SessionCheck { emitted: 0, stats: Default::default() },
            small_ring: None,
            instr: Err("skipped".into()),
            scaling: Vec::new(),
            start_stop_us: (1.0, 2.0),
            memory: Memory { idle: Err("skipped".into()), tracing: Err("skipped".into()) },
            seconds: 1.0,
        };
        let text = r.render();
        assert!(text.contains("| limit | 9.60 |"), "{text}");
        assert!(text.contains("| phos-instant | not quoted: the check failed |"), "{text}");
        assert!(text.contains("| instant ≤ 1.2× limit loop | — | not measured |"), "{text}");
        assert!(text.contains("some ✗"), "{text}");
    }
}

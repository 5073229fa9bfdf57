//! `phosphor demo`: trace the workload of `workload.rs` with the global `TraceLog`, save the trace
//! as `trace.phos` in the output directory (`demo-out/` unless `--out` says otherwise), and print
//! the accounting (emitted = recorded + dropped) and the statistics `phosphor stats` computes from
//! the saved file; then convert the file to a Perfetto trace, `trace.pftrace`, and to Chrome JSON,
//! `trace.json`, and draw a flame graph of its self time, `flame.svg`, next to it.
//!
//! With `--trigger SPEC` (repeatable, e.g. `'demo/flush>5us'`), the trace is a Ring buffer with
//! those triggers armed: each firing dumps the events around it to `trigger-N.phos` in the output
//! directory (at most 6 a minute), and the report lists the dumps.
//!
//! With `--system`, the trace also collects the system context (issue 23, `docs/SYSTEM.md`): the
//! threads' context switches, CPU samples at 999 Hz and the allocation counts, and the report
//! says how many of each it holds, or why the system refused them.
//!
//! The trace file (and the trigger dumps) are saved compressed with zstd level 1 unless
//! `--compression` says otherwise (`none` writes a file that readers of format 1.6 read).

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::{Args, ValueEnum};
use phosphor::format::system::{Availability, SystemBatch};
use phosphor::{BufferMode, ClockKind, TraceConfig, TraceLog, TraceLogConfig};
use phosphor_export::{format_count, format_drops, format_ns, StatsBuilder, TableOptions};

use crate::common::format_bytes;
use crate::convert;
use crate::progress;
use crate::workload;

/// Options of `phosphor demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Worker threads producing events (a sink thread consumes their items).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
    /// Events each worker emits, rounded up to a whole iteration.
    #[arg(long, default_value_t = 200_000)]
    events: u64,
    /// What the buffer does when it is full: stop recording (fixed), or overwrite the oldest
    /// events (ring, a flight recorder).
    #[arg(long, value_enum, default_value_t = Mode::Fixed)]
    mode: Mode,
    /// Trace buffer size in MiB.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    buffer_mib: u32,
    /// The clock that stamps events.
    #[arg(long, value_enum, default_value_t = Clock::Tsc)]
    clock: Clock,
    /// Directory for the trace file, `trace.phos`, its Perfetto trace, `trace.pftrace`, its Chrome
    /// JSON, `trace.json`, and its flame graph, `flame.svg` (created if needed).
    #[arg(
        short = 'o',
        long = "output",
        visible_alias = "out",
        value_name = "DIR",
        default_value = "demo-out"
    )]
    out: PathBuf,
    /// Arms a trigger (repeatable): `CATEGORY/NAME>DURATION` (a slow scope, e.g. `demo/flush>5us`),
    /// `CATEGORY/NAME>VALUE` (a counter or data value), `log>=LEVEL`. Records into a Ring buffer
    /// and dumps the events around each firing to `trigger-N.phos` in the output directory.
    #[arg(long = "trigger", value_name = "SPEC")]
    triggers: Vec<String>,
    /// Also records the system context: every thread's context switches, CPU samples with call
    /// stacks at 999 Hz, and allocation counts (where the system allows them; the report says
    /// why not otherwise).
    #[arg(long)]
    system: bool,
    /// How the saved files' blocks are compressed: none, lz4, zstd (level 1) or zstd:LEVEL.
    #[arg(long, value_name = "CODEC", default_value_t = phosphor::DEFAULT_SAVE_COMPRESSION)]
    compression: phosphor::Compression,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Mode {
    Fixed,
    Ring,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Clock {
    /// The time-stamp counter, where it is invariant (else monotonic).
    Tsc,
    Monotonic,
    Realtime,
}

/// Runs the demo and writes its report to `out`. Its steps: the trace's configuration, the
/// recording (the workload traced, the trace saved), the statistics read back from the file, then
/// the report (the accounting, the tables, the files written from the trace).
pub fn run(args: &DemoArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let (config, mode_name) = configure(args)?;
    let run = record(args, config, mode_name)?;
    // The statistics come from the saved file, as `phosphor stats` computes them.
    let computing = Instant::now();
    let mut builder = StatsBuilder::new(&run.clock);
    if let Some(context) = crate::common::system_context(&run.path)? {
        builder = builder.system(std::sync::Arc::new(context));
    }
    let stats = builder
        .read(progress::open(&run.path, "reading back")?)
        .map_err(|e| e.source.with_path(&run.path))
        .context("reading back the saved trace")?;
    let stats_time = computing.elapsed();

    let problems = write_accounting(out, args, &run, &stats, stats_time)?;
    write_tables(out, &stats)?;
    write_files(out, args, &run, &stats)?;
    if !args.triggers.is_empty() {
        write_triggers(out, &run.triggered)?;
    }
    out.flush()?;

    if !problems.is_empty() {
        bail!("the trace does not account for every event: {}", problems.join("; "));
    }
    Ok(())
}

/// Step 1: the trace's configuration (buffer, triggers, system context, compression), and the
/// buffer mode's name.
fn configure(args: &DemoArgs) -> anyhow::Result<(TraceConfig, &'static str)> {
    let (mode, mode_name) = match args.mode {
        // Triggers dump from a Ring buffer: the flight recorder.
        _ if !args.triggers.is_empty() => (BufferMode::Ring, "ring"),
        Mode::Fixed => (BufferMode::Fixed, "fixed"),
        Mode::Ring => (BufferMode::Ring, "ring"),
    };
    let mut triggers = Vec::new();
    for spec in &args.triggers {
        triggers
            .push(spec.parse::<phosphor::trigger::Trigger>().with_context(|| format!("--trigger {spec:?}"))?);
    }
    let buffer_bytes =
        usize::try_from(u64::from(args.buffer_mib) << 20).context("--buffer-mib is too large")?;
    let mut config = triggers
        .into_iter()
        .fold(TraceConfig::new(mode, buffer_bytes), TraceConfig::trigger)
        .compression(args.compression);
    if args.system {
        config = config.context_switches(true).cpu_samples(999).allocations(true);
    }
    if !args.triggers.is_empty() {
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("creating the output directory {}", args.out.display()))?;
        remove_old_dumps(&args.out)?;
        config = config.trigger_dir(&args.out);
    }
    Ok((config, mode_name))
}

/// What the recording left: the workload's threads, the triggers, and the saved file.
struct Recorded {
    mode_name: &'static str,
    threads: Vec<workload::ThreadReport>,
    wall: Duration,
    triggered: phosphor::trigger::TriggerStatus,
    path: PathBuf,
    save_time: Duration,
    size: u64,
    clock: phosphor::format::ClockInfo,
    system: Option<Vec<String>>,
}

/// Step 2: the workload traced with the global `TraceLog`, and the trace saved (before anything
/// is checked: the file is what one would look at next).
fn record(args: &DemoArgs, config: TraceConfig, mode_name: &'static str) -> anyhow::Result<Recorded> {
    let clock = match args.clock {
        Clock::Tsc => ClockKind::Tsc,
        Clock::Monotonic => ClockKind::Monotonic,
        Clock::Realtime => ClockKind::Realtime,
    };
    let log = TraceLog::global();
    log.configure(TraceLogConfig::new().clock(clock)).context("configuring the global TraceLog")?;
    log.start(config).with_context(|| format!("starting a {mode_name} trace of {} MiB", args.buffer_mib))?;

    let started = Instant::now();
    let threads = workload::run(usize::from(args.threads), args.events);
    let wall = started.elapsed();
    let armed = log.triggers().armed;
    log.stop();
    let mut triggered = log.triggers();
    triggered.armed = armed;
    let trace = log.take_trace().context("the stopped TraceLog kept no trace")?;

    let path = args.out.join("trace.phos");
    let saving = Instant::now();
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating the output directory {}", args.out.display()))?;
    trace.save(&path).context("saving the trace")?;
    let save_time = saving.elapsed();
    let size =
        std::fs::metadata(&path).with_context(|| format!("{}: cannot read its size", path.display()))?.len();
    let clock = trace.clock().clone();
    let system = trace.system().map(system_summary);
    Ok(Recorded { mode_name, threads, wall, triggered, path, save_time, size, clock, system })
}

/// Step 3: the report's head and its accounting (emitted = recorded + dropped, overall and per
/// thread); the problems found.
fn write_accounting(
    out: &mut impl Write,
    args: &DemoArgs,
    run: &Recorded,
    stats: &phosphor_export::TraceStats,
    stats_time: Duration,
) -> anyhow::Result<Vec<String>> {
    let (threads, triggered, clock) = (&run.threads, &run.triggered, &run.clock);
    // The trigger markers are events the recorder wrote.
    let emitted: u64 = threads.iter().map(|t| t.emitted).sum::<u64>() + triggered.marked();
    let recorded = stats.recorded.unwrap_or(0);
    let drops = stats.drops.clone().unwrap_or_default();
    let dropped = drops.total();
    let clock_name = match clock.kind {
        ClockKind::Tsc => "TSC",
        ClockKind::Monotonic => "monotonic",
        ClockKind::Realtime => "realtime",
    };
    let clock_note = match &clock.fallback_reason {
        Some(reason) => format!(" (not the TSC: {reason})"),
        None => String::new(),
    };

    writeln!(
        out,
        "phosphor demo: {} worker{} + 1 sink, {} events per worker, {} buffer of {} MiB, {clock_name} clock{clock_note}",
        args.threads,
        if args.threads == 1 { "" } else { "s" },
        format_count(args.events),
        run.mode_name,
        args.buffer_mib,
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "  wall time   {} (workload), {} (saving), {} (statistics, read from the file)",
        format_duration(run.wall),
        format_duration(run.save_time),
        format_duration(stats_time)
    )?;
    writeln!(
        out,
        "  rate        {:.1} M events/s across {} threads",
        per_second(emitted, run.wall) / 1e6,
        threads.len()
    )?;
    writeln!(out, "  emitted     {}", format_count(emitted))?;
    if !args.triggers.is_empty() {
        writeln!(out, "              (of which {} trigger markers)", format_count(triggered.marked()))?;
    }
    let scope_allocs: u64 = threads.iter().map(|t| t.scope_allocs).sum();
    if scope_allocs > 0 {
        writeln!(
            out,
            "              (of which {} scope_alloc, one after each scope)",
            format_count(scope_allocs)
        )?;
    }
    writeln!(out, "  recorded    {}", format_count(recorded))?;
    writeln!(out, "  dropped     {}", format_drops(&drops))?;
    for (i, line) in run.system.iter().flatten().enumerate() {
        writeln!(out, "  {:<11} {line}", if i == 0 { "system" } else { "" })?;
    }
    let mut problems = Vec::new();
    if recorded + dropped == emitted {
        writeln!(out, "  accounting  recorded + dropped == emitted: no unexplained loss")?;
    } else {
        writeln!(
            out,
            "  accounting  MISMATCH: recorded + dropped = {}, emitted = {}",
            format_count(recorded + dropped),
            format_count(emitted)
        )?;
        problems.push(format!(
            "recorded + dropped differs from emitted by {}",
            emitted.abs_diff(recorded + dropped)
        ));
    }
    if stats.events != recorded {
        writeln!(out, "  decoding    MISMATCH: {} events read from the file", format_count(stats.events))?;
        problems.push("the file holds a different number of events than the trace recorded".into());
    }
    if dropped == 0 {
        write_per_thread(out, args, run, stats, &mut problems)?;
    }
    Ok(problems)
}

/// Without drops every thread's events must all be there, and the trigger markers on the threads
/// that fired them: the `per thread` line.
fn write_per_thread(
    out: &mut impl Write,
    args: &DemoArgs,
    run: &Recorded,
    stats: &phosphor_export::TraceStats,
    problems: &mut Vec<String>,
) -> anyhow::Result<()> {
    let recorded_by = |tid: u32| stats.thread(tid).map_or(0, |s| s.events);
    let markers: u64 = run.threads.iter().map(|t| recorded_by(t.tid).saturating_sub(t.emitted)).sum();
    let short: Vec<String> = run
        .threads
        .iter()
        .filter(|t| {
            let r = recorded_by(t.tid);
            r < t.emitted || (r > t.emitted && markers != run.triggered.marked())
        })
        .map(|t| format!("tid {}", t.tid))
        .collect();
    if short.is_empty() {
        let plus = if args.triggers.is_empty() { "" } else { " (and the trigger markers it wrote)" };
        writeln!(out, "  per thread  every thread's recorded events equal what it emitted{plus}")?;
    } else {
        writeln!(out, "  per thread  MISMATCH: recorded differs from emitted on {}", short.join(", "))?;
        problems.push(format!("recorded differs from emitted on {}", short.join(", ")));
    }
    Ok(())
}

/// Step 4: the statistics' tables (threads, kinds, the system's, async slices, scope checks).
fn write_tables(out: &mut impl Write, stats: &phosphor_export::TraceStats) -> anyhow::Result<()> {
    writeln!(out)?;
    writeln!(out, "threads ({})", stats.threads.len())?;
    write!(out, "{}", stats.threads_table())?;
    writeln!(out)?;
    let options = TableOptions::default();
    writeln!(
        out,
        "kinds across threads ({}) over {} of trace",
        options.heading(stats.paths().len()),
        format_ns(stats.span_ns)
    )?;
    write!(out, "{}", stats.kinds_table(options, true))?;
    // The scopes against what the system saw during them (with --system).
    write!(out, "{}", stats.system_report(options))?;
    if !stats.asyncs.is_empty() {
        writeln!(out)?;
        writeln!(out, "async slices ({})", stats.asyncs.len())?;
        write!(out, "{}", stats.asyncs_table())?;
    }
    writeln!(out)?;
    writeln!(out, "scope checks")?;
    write!(out, "{}", stats.problem_report())?;
    Ok(())
}

/// Step 5: the files: the trace file, then the viewers' files converted from it as `phosphor
/// convert` would (Perfetto, Chrome JSON, the flame graphs).
fn write_files(
    out: &mut impl Write,
    args: &DemoArgs,
    run: &Recorded,
    stats: &phosphor_export::TraceStats,
) -> anyhow::Result<()> {
    let (path, size) = (&run.path, run.size);
    let recorded = stats.recorded.unwrap_or(0);
    writeln!(out)?;
    let per_event = if recorded == 0 {
        String::new()
    } else {
        format!(", {:.1} bytes per event", size as f64 / recorded as f64)
    };
    writeln!(
        out,
        "trace file  {} ({}{per_event}, {}), written in {}",
        path.display(),
        format_bytes(size),
        args.compression,
        format_duration(run.save_time)
    )?;
    writeln!(out, "            (per thread and path: phosphor stats {})", path.display())?;
    let pftrace = args.out.join("trace.pftrace");
    let converted = convert::to_file(path, convert::Format::Perfetto, &pftrace)
        .with_context(|| format!("converting {} to a Perfetto trace", path.display()))?;
    writeln!(
        out,
        "perfetto    {} ({}), written in {}",
        pftrace.display(),
        format_bytes(converted.bytes),
        format_duration(converted.time)
    )?;
    let json = args.out.join("trace.json");
    let converted = convert::to_file(path, convert::Format::Chrome, &json)
        .with_context(|| format!("converting {} to Chrome JSON", path.display()))?;
    writeln!(
        out,
        "chrome json {} ({}), written in {}",
        json.display(),
        format_bytes(converted.bytes),
        format_duration(converted.time)
    )?;
    let svg = args.out.join("flame.svg");
    let drawn = crate::flamegraph::to_file(path, &svg)
        .with_context(|| format!("drawing {} as a flame graph", path.display()))?;
    writeln!(
        out,
        "flame graph {} ({}), written in {}",
        svg.display(),
        format_bytes(drawn.bytes),
        format_duration(drawn.time)
    )?;
    if stats.system.as_ref().is_some_and(|s| s.counts.samples > 0) {
        let svg = args.out.join("flame-samples.svg");
        let drawing = Instant::now();
        let mut said = Vec::new();
        crate::flamegraph::run(
            &crate::flamegraph::FlamegraphArgs::samples_with_scopes(path.clone(), svg.clone()),
            &mut said,
        )
        .with_context(|| format!("drawing the CPU samples of {} as a flame graph", path.display()))?;
        let bytes = std::fs::metadata(&svg).map(|m| m.len()).unwrap_or(0);
        writeln!(
            out,
            "samples     {} ({}), written in {}: the CPU samples' stacks under the scopes open",
            svg.display(),
            format_bytes(bytes),
            format_duration(drawing.elapsed())
        )?;
    }
    Ok(())
}

/// Removes the `trigger-N.phos` files of an earlier run, so the directory shows this run's only.
fn remove_old_dumps(dir: &std::path::Path) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry.with_context(|| format!("reading {}", dir.display()))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("trigger-") && name.ends_with(".phos") {
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    Ok(())
}

/// The triggers' report: what fired, and each dump with its events and the trigger that opened it.
fn write_triggers(out: &mut impl Write, s: &phosphor::trigger::TriggerStatus) -> anyhow::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "triggers    fired {}, merged into a pending dump {}, rate-limited {}, failed {}",
        format_count(s.fired),
        format_count(s.merged),
        format_count(s.rate_limited),
        format_count(s.failed)
    )?;
    let spec = |n: u32| s.armed.iter().find(|(k, _)| *k == n).map_or(String::new(), |(_, t)| t.to_string());
    for d in &s.dumps {
        writeln!(
            out,
            "            {} ({} events), trigger {} {}",
            d.path.display(),
            format_count(d.events),
            d.trigger,
            spec(d.trigger)
        )?;
    }
    if s.dumps.is_empty() {
        writeln!(out, "            no dump: nothing met a trigger's condition")?;
    }
    Ok(())
}

/// The report's lines on the system context: what was collected of each source, or why not, and
/// what was lost.
fn system_summary(b: &SystemBatch) -> Vec<String> {
    let status = b.status.clone().unwrap_or_default();
    let source = |what: &str, a: &Availability, collected: String| match a {
        Availability::Off => None,
        Availability::On => Some(collected),
        Availability::Unavailable(why) => Some(format!("{what} unavailable: {why}")),
    };
    let mut lines: Vec<String> = [
        source(
            "context switches",
            &status.switches,
            format!("{} context switches", format_count(b.switches.len() as u64)),
        ),
        source(
            "CPU samples",
            &status.samples,
            format!(
                "{} CPU samples at {} Hz, {} executable mappings",
                format_count(b.samples.len() as u64),
                status.sample_hz,
                b.mappings.len()
            ),
        ),
        source(
            "allocations",
            &status.allocations,
            match b.heap.last() {
                Some(h) => format!(
                    "{} allocations, {} bytes ({} heap counter readings)",
                    format_count(h.allocs),
                    format_count(h.alloc_bytes),
                    format_count(b.heap.len() as u64)
                ),
                None => "allocations: no heap counter read".to_owned(),
            },
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    if status.kernel_lost + status.dropped > 0 || status.threads_missed > 0 {
        lines.push(format!(
            "lost: {} records by the kernel (rings full), {} past the store's bounds, {} threads not watched",
            format_count(status.kernel_lost),
            format_count(status.dropped),
            status.threads_missed
        ));
    }
    lines
}

fn format_duration(d: Duration) -> String {
    format_ns(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn per_second(events: u64, wall: Duration) -> f64 {
    events as f64 / wall.as_secs_f64().max(1e-9)
}

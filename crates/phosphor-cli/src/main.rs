//! The `phosphor` command-line tool.
//!
//! Argument parsing and printing only: what a library user would want lives in `phosphor` (the
//! recorder) and `phosphor-export` (statistics and output formats). Errors print with their
//! context chain (`{:#}`) and exit with status 2; a closed stdout (`phosphor demo | head`) is a
//! normal end, status 0.

mod call;
mod common;
mod convert;
mod demo;
mod diff;
mod flamegraph;
mod info;
mod logs;
#[cfg(test)]
mod modules_tests;
mod probes;
mod progress;
mod record;
mod recover;
mod sql;
mod stats;
mod view;
mod workload;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Counts allocations per thread, so that `phosphor demo --system` can show each scope's
/// (`docs/ALLOC.md`); about 3 ns an allocation, which the tools' own work does not notice.
#[global_allocator]
static ALLOCATOR: phosphor::alloc::Traced<std::alloc::System> =
    phosphor::alloc::Traced::new(std::alloc::System);

/// Phosphor: a low-overhead in-process event tracer, and the tools for its traces.
#[derive(Debug, Parser)]
#[command(name = "phosphor", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Trace a multi-threaded instrumented workload in this process and print its statistics.
    Demo(demo::DemoArgs),
    /// Describe a trace file: header, threads, callsites, events, time span, drops, size. A
    /// truncated or corrupt file shows everything before the damage, then the error.
    Info(info::InfoArgs),
    /// Convert a trace file into a viewer's format (`--to perfetto`: Perfetto protobuf; `--to
    /// chrome`: Chrome trace event JSON; `--to folded`: folded stacks of self time in nanoseconds;
    /// `--to otlp`: OpenTelemetry spans, one protobuf `ExportTraceServiceRequest`; `--to otlp-json`:
    /// OTLP JSON Lines, a request per line, with `--min-duration`, `--roots-only`, `--path`,
    /// `--slowest` to select spans), to stdout or to `-o OUT`. Several files (or a `phosphor record` folder) make one timeline, a
    /// process per file. A truncated or corrupt file gives a whole document holding every chunk
    /// before the damage, then the error.
    Convert(convert::ConvertArgs),
    /// Draw a trace file as an SVG flame graph of self time (`-o OUT.svg`), from its folded stacks
    /// (`convert --to folded`). A truncated or corrupt file gives the graph of everything before
    /// the damage, then the error.
    Flamegraph(flamegraph::FlamegraphArgs),
    /// Statistics of a trace file per scope path and thread (count, total, min, mean, p50, p99,
    /// max duration), events per thread, drops, lost chunks, and scope checks (ends without a
    /// begin or of another name, begins left open, interlaced scopes). Tables, or `--json`. A
    /// truncated or corrupt file gives the statistics of everything before the damage, then the
    /// error. Several files (or a folder) count as one trace, each file's threads apart.
    Stats(stats::StatsArgs),
    /// Compare two trace files path by path (count, total, p50, p90, p99, max; their change and a
    /// rank test of significance), for CI: `--fail-on 'p99>+10%'` exits with status 1 if a path
    /// regressed past it (significantly, at the confidence bounds: noise does not regress), 2 on
    /// an error. Paths in one file only are listed as new or gone. A table, or `--json`.
    Diff(diff::DiffArgs),
    /// Print the deferred-format logs of a trace file (`trace_log!`), formatted now: one line per
    /// log in file order (time, level, thread, category, message), or `--json` lines; filter with
    /// `--level` and `--category`. A truncated or corrupt file prints every log before the damage,
    /// then the error.
    Logs(logs::LogsArgs),
    /// Rebuild a trace file from the ring file of a file-backed trace (`TraceConfig::file_backed`)
    /// that a dead process left behind, even one killed with SIGKILL: every committed event, with
    /// its callsites and clock (`-o OUT`).
    Recover(recover::RecoverArgs),
    /// Receive traces streamed over TCP by traced programs (a datastream with `Sink::Tcp`): one
    /// trace file per connection in --out, named by process name, pid and time. With --view ADDR,
    /// also serve the viewer, showing each connection live as it is recorded. Loopback only
    /// unless --any-address.
    Record(record::RecordArgs),
    /// Run a command in a running program (`phosphor::control`): TARGET is its pid, its control
    /// socket, or `host:port` of its TCP control port (with `--token`); the command is one quoted argument, e.g. 'trace.dump path=/tmp/now.phos'. Prints
    /// the answer; a rejected or failed command exits with status 2.
    Call(call::CallArgs),
    /// List the running programs with a control socket (pid and socket); stale sockets are removed.
    Ls,
    /// List the USDT probes (SystemTap SDT notes) of an ELF file, or of every ELF object a running
    /// process has mapped (with run-time addresses and semaphore counts): provider, name, sites
    /// (inlined copies counted once), address, semaphore and argument specs. Tables, or `--json`.
    /// Malformed notes are skipped and counted; a file that is not ELF is an error.
    Probes(probes::ProbesArgs),
    /// Serve the viewer's API for trace files or folders of them (a `phosphor record` folder) on a
    /// local HTTP server: each trace is indexed once (the index is kept beside it, or in a cache
    /// folder), then any window of any size is answered in about one item per pixel. The URL is the
    /// first line on stdout. Loopback only unless --any-address.
    View(view::ViewArgs),
    /// SQL over the trace model's tables (`slices`, `instants`, `counters`, `logs`, `threads`,
    /// `args`, `async_slices`, `flows`, `processes`, `drops`, `problems`, `switches`, `off_cpu`,
    /// `samples`, `frames`, `allocations`, `heap`, `mappings`; docs/SQL.md) of trace files, folders
    /// of them, or a folder of Parquet tables: `phosphor sql FILE 'SELECT path, count(*) FROM
    /// slices GROUP BY path'`. A table, `--csv`, `--json` or `-o FILE`; without a query, a prompt.
    /// Needs a build with `--features sql`.
    Sql(sql::SqlArgs),
}

/// Blocks of at least this many bytes are mapped on their own, so that they go back to the
/// system once freed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: i32 = 1 << 20;

fn main() -> ExitCode {
    // The reading commands build large tables in phases (a million callsites' statistics: the
    // reader's tables, then the kinds, then the tables of kinds), freeing each before the next.
    // By default glibc raises its threshold for mapping a block on its own to 32 MiB after the
    // first such block is freed, and then keeps the blocks below it in its heap once freed: a
    // phase's freed tables stayed resident through the next (15 MiB more at the peak of `stats` on
    // a file of a million callsites). A fixed threshold also turns that raising off.
    // And no fastbins (M_MXFAST 0): the reading pipelines free on one thread what another
    // allocated (an event's packed arguments, made by the reader, freed where the tables are made),
    // and every later request of a large block (a batch's column) first walked all the small blocks
    // freed into fastbins (`malloc_consolidate`; malloc and free were 15% of the nesting thread's
    // time in `convert --to parquet`). Without them `convert --to parquet` took 0.8 to 0.93 times
    // the wall and CPU, `stats` and `sql` the same (bench/results/2026-12-07b-convert.md);
    // per-thread caches still serve the small blocks a thread frees and allocates again.
    // SAFETY: `mallopt` only sets parameters of glibc's allocator; it is called before any other
    // thread exists, and the values are ones glibc documents: M_MMAP_THRESHOLD at most 32 MiB,
    // M_MXFAST from 0 (no fastbins) to 160 bytes.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_MXFAST, 0);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args, &mut io::BufWriter::new(stdout())),
        Command::Info(args) => info::run(&args, &mut io::BufWriter::new(stdout())),
        // The exporter buffers its output itself.
        Command::Convert(args) => convert::run(&args, stdout(), &mut io::stderr()),
        Command::Flamegraph(args) => flamegraph::run(&args, &mut io::stderr()),
        Command::Stats(args) => stats::run(&args, &mut io::BufWriter::new(stdout())),
        Command::Diff(args) => match diff::run(&args, &mut io::BufWriter::new(stdout())) {
            // A regression, named in the report: status 1.
            Ok(true) => return ExitCode::from(1),
            other => other.map(|_| ()),
        },
        Command::Logs(args) => logs::run(&args, &mut io::BufWriter::new(stdout()), &mut io::stderr()),
        Command::Recover(args) => recover::run(&args, &mut io::BufWriter::new(stdout())),
        Command::Record(args) => record::run(&args),
        Command::Call(args) => call::run(&args, &mut io::BufWriter::new(stdout())),
        Command::Ls => call::ls(&mut io::BufWriter::new(stdout())),
        Command::Probes(args) => probes::run(&args, &mut io::BufWriter::new(stdout())),
        Command::View(args) => view::run(&args, &mut io::BufWriter::new(stdout())),
        Command::Sql(args) => sql::run(&args, &mut io::BufWriter::new(stdout()), &mut io::stderr()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_stdout_closed(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // Nothing useful is left to do if stderr is closed too.
            let _ = writeln!(io::stderr(), "phosphor: {}", message(&e));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes, `: `-separated, leaving out a cause whose text the message already
/// holds (a file error shows its I/O error in its own text, and has it as its source too).
fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// Whether `e` comes from writing to a closed standard output (`phosphor stats f | head`): the
/// reader has gone, which is not our failure. Any other broken pipe (a control socket the program
/// closed, a sink) is an error like any other: it must not pass for success.
fn is_stdout_closed(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .and_then(|io| io.get_ref())
            .is_some_and(|inner| inner.is::<StdoutClosed>())
            || c.is::<StdoutClosed>()
    })
}

/// The marker a write to a closed standard output carries, so that `main` can tell it from other
/// broken pipes.
#[derive(Debug)]
struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard output was closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Standard output, whose broken pipe is marked [`StdoutClosed`].
struct Stdout(io::StdoutLock<'static>);

fn stdout() -> Stdout {
    Stdout(io::stdout().lock())
}

fn mark(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        io::Error::new(io::ErrorKind::BrokenPipe, StdoutClosed)
    } else {
        e
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(mark)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf).map_err(mark)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(mark)
    }
}

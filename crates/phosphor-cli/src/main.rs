//! The `phosphor` command-line tool.
//!
//! Argument parsing and printing only: what a library user would want lives in `phosphor` (the
//! recorder) and `phosphor-export` (statistics and output formats). Errors print with their
//! context chain (`{:#}`) and exit with status 2; a closed stdout (`phosphor demo | head`) is a
//! normal end, status 0.

mod call;
mod convert;
mod demo;
mod flamegraph;
mod info;
mod logs;
mod probes;
mod progress;
mod record;
mod recover;
mod stats;
mod workload;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    /// chrome`: Chrome trace event JSON; `--to folded`: folded stacks of self time in nanoseconds),
    /// to stdout or to `-o OUT`. A truncated or corrupt file gives a whole document holding every
    /// chunk before the damage, then the error.
    Convert(convert::ConvertArgs),
    /// Draw a trace file as an SVG flame graph of self time (`-o OUT.svg`), from its folded stacks
    /// (`convert --to folded`). A truncated or corrupt file gives the graph of everything before
    /// the damage, then the error.
    Flamegraph(flamegraph::FlamegraphArgs),
    /// Statistics of a trace file per scope path and thread (count, total, min, mean, p50, p99,
    /// max duration), events per thread, drops, lost chunks, and scope checks (ends without a
    /// begin or of another name, begins left open, interlaced scopes). Tables, or `--json`. A
    /// truncated or corrupt file gives the statistics of everything before the damage, then the
    /// error.
    Stats(stats::StatsArgs),
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
    /// trace file per connection in --out, named by process name, pid and time. Loopback only
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args, &mut io::BufWriter::new(io::stdout().lock())),
        Command::Info(args) => info::run(&args, &mut io::BufWriter::new(io::stdout().lock())),
        // The exporter buffers its output itself.
        Command::Convert(args) => convert::run(&args, io::stdout().lock(), &mut io::stderr()),
        Command::Flamegraph(args) => flamegraph::run(&args, &mut io::stderr()),
        Command::Stats(args) => stats::run(&args, &mut io::BufWriter::new(io::stdout().lock())),
        Command::Logs(args) => logs::run(&args, &mut io::BufWriter::new(io::stdout().lock())),
        Command::Recover(args) => recover::run(&args, &mut io::BufWriter::new(io::stdout().lock())),
        Command::Record(args) => record::run(&args),
        Command::Call(args) => call::run(&args, &mut io::BufWriter::new(io::stdout().lock())),
        Command::Ls => call::ls(&mut io::BufWriter::new(io::stdout().lock())),
        Command::Probes(args) => probes::run(&args, &mut io::BufWriter::new(io::stdout().lock())),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // Nothing useful is left to do if stderr is closed too.
            let _ = writeln!(io::stderr(), "phosphor: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Whether `e` comes from writing to a closed pipe: the reader has gone, which is not our failure.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<io::Error>().is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe))
}

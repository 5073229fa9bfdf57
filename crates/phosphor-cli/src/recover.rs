//! `phosphor recover RING -o OUT`: turns the ring file of a file-backed trace
//! (`TraceConfig::file_backed`), left behind by a process that died (even of `SIGKILL`), into a
//! trace file: every committed event, its callsites and its clock. Static string arguments lived
//! in the dead process and come back as `<static string>`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

/// Options of `phosphor recover`.
#[derive(Debug, Args)]
pub struct RecoverArgs {
    /// The ring file.
    ring: PathBuf,
    /// The trace file to write.
    #[arg(short = 'o', long = "output", visible_alias = "out", value_name = "OUT")]
    out: PathBuf,
}

/// Runs `phosphor recover`; reports what it recovered on `out`.
pub fn run(args: &RecoverArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let ring = std::fs::read(&args.ring).with_context(|| format!("{}: cannot read", args.ring.display()))?;
    if ring.starts_with(&phosphor::format::file::MAGIC) {
        anyhow::bail!("{}: this is a trace file already, not a ring file", args.ring.display());
    }
    let trace = phosphor::format::file::ring::recover(&ring).map_err(|e| e.with_path(&args.ring))?;
    std::fs::write(&args.out, &trace).with_context(|| format!("{}: cannot write", args.out.display()))?;
    // Read back: the events recovered. An error here is about the file just written.
    let mut events = 0u64;
    phosphor::format::file::Reader::new(&trace[..])
        .and_then(|mut r| r.for_each_event(|_| events += 1))
        .map_err(|e| e.with_path(&args.out))
        .with_context(|| format!("reading back the trace recovered from {}", args.ring.display()))?;
    writeln!(out, "{}: {events} events recovered from {}", args.out.display(), args.ring.display())?;
    Ok(out.flush()?)
}

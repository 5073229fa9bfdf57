//! `phosphor diff BASE NEW [--fail-on SPEC]... [--path GLOB]... [--json] [--top N]`: two trace
//! files compared path by path (`phosphor_export::diff`), and a gate for CI.
//!
//! Both files are read at once, each on its own thread, so a diff takes about the time `phosphor
//! stats` takes on the larger one. Exit status: 0 when no row is past a `--fail-on` gate (always,
//! without one), 1 when one is (named in the last lines), 2 on an error (a file missing, or
//! unreadable at a byte offset: the message names the file and the offset).

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Args;
use phosphor::format::file::Reader;
use phosphor_export::{DiffOptions, DiffSide, FailOn, TraceDiff};

use crate::progress;

/// Options of `phosphor diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The base trace file (the reference run).
    base: PathBuf,
    /// The new trace file (the run under test).
    new: PathBuf,
    /// Exit with status 1 if a path's METRIC grew past AMOUNT: `METRIC>+AMOUNT`, METRIC one of
    /// count, total, p50, p90, p99, max; AMOUNT a percentage (`p99>+10%`), a duration (`p50>+2ms`,
    /// `+500us`, `+300ns`, `+1s`) or, for count, a number. Quantiles are compared at their
    /// confidence bounds, and durations must also differ significantly (rank test): noise does
    /// not regress. Repeatable.
    #[arg(long = "fail-on", value_name = "SPEC")]
    fail_on: Vec<FailOn>,
    /// Only the paths (names joined by `/`) that match this glob (`*`, `?`). Repeatable: a path
    /// that matches any is kept.
    #[arg(long, value_name = "GLOB")]
    path: Vec<String>,
    /// Print one JSON object (schema `phosphor-diff/1`, docs/DIFF.md) instead of a table.
    #[arg(long)]
    json: bool,
    /// Show the first N rows, largest change first [default: all].
    #[arg(long, value_name = "N")]
    top: Option<usize>,
}

/// Runs `phosphor diff`, writes the report to `out`, and says whether a row regressed.
pub fn run(args: &DiffArgs, out: &mut impl Write) -> anyhow::Result<bool> {
    let (base, new) = std::thread::scope(|s| {
        // One progress bar (two would draw over each other): the base's, read as fast as the new.
        let base = s.spawn(|| {
            let reader = progress::open(&args.base, "reading both traces")?;
            side(&args.base, reader)
        });
        let new = File::open(&args.new)
            .with_context(|| format!("{}: cannot open", args.new.display()))
            .and_then(|f| {
                Reader::new(BufReader::with_capacity(1 << 16, f))
                    .map(Reader::read_ahead)
                    .map_err(|e| e.with_path(&args.new).into())
            })
            .and_then(|reader| side(&args.new, reader));
        (base.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), new)
    });
    let (base, new) = (base?, new?);
    let options = DiffOptions { paths: args.path.clone(), fail_on: args.fail_on.clone() };
    let diff = TraceDiff::new(&base, &new, &options);
    let names = [args.base.display().to_string(), args.new.display().to_string()];
    let names = [names[0].as_str(), names[1].as_str()];
    if args.json {
        diff.write_json(&mut *out, names, args.top)?;
    } else {
        diff.write_table(&mut *out, names, args.top)?;
    }
    out.flush()?;
    Ok(!diff.regressions().is_empty())
}

fn side(path: &Path, reader: Reader<impl Read>) -> anyhow::Result<DiffSide> {
    DiffSide::from_reader(reader)
        .map_err(|e| anyhow::Error::new(e.with_path(path)))
        .with_context(|| format!("{} cannot be compared", path.display()))
}

//! `phosphor stats FILE|DIR… [--json] [--top N] [--sort total|count|max]`: statistics of a trace
//! file by scope path and thread, computed by `phosphor_export::TraceStats` in one streaming pass.
//!
//! Several files (or a folder's `.phos` files) give the statistics of them all as one trace
//! (`phosphor_export::FilesStats`): paths add up across the files, each file's threads are rows of
//! their own named `process/pid thread`, and times are placed on one timeline as `convert` places
//! them (a skew warning on stderr when files were aligned through the wall clock).
//!
//! Tables by default: the totals (events, drops, lost chunks, span), threads, the kinds per thread
//! and across threads (the top 20 by total time unless `--top`/`--sort` say otherwise), async
//! slices, and the scope checks. `--json` prints the same as one JSON object (the schema is in
//! `phosphor_export`'s `stats_json.rs`; every kind unless `--top` is given). A truncated or
//! corrupt file prints the statistics of everything before the damage, then the error names the
//! file and the byte offset (exit status 2).
//!
//! A file with system context (format 1.6) is read twice: its system blocks first, then the
//! statistics, which ask them about each scope (on- and off-CPU time, switches, samples and their
//! symbolized leaf functions; allocations come from the scopes' own events).

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use std::sync::Arc;

use phosphor_export::{format_count, FilesStats, SortBy, StatsBuilder, TableOptions};

use crate::common::system_context;
use crate::progress;

/// Options of `phosphor stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The trace files (written by `Trace::save`, `phosphor demo` or `phosphor record`), or folders
    /// of them; several are counted as one trace, a process per file.
    #[arg(required = true, value_name = "FILE|DIR")]
    files: Vec<PathBuf>,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    json: bool,
    /// Show the first N kinds in each table [default: 20; with --json, all].
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// Order the kinds by total time, count or longest duration, largest first.
    #[arg(long, value_enum, default_value_t = Sort::Total)]
    sort: Sort,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Sort {
    Total,
    Count,
    Max,
}

/// Rows of each kinds table unless `--top` says otherwise.
const DEFAULT_TOP: usize = 20;

/// Runs `phosphor stats` and writes the statistics to `out`.
pub fn run(args: &StatsArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let files = crate::common::inputs(&args.files, &mut std::io::stderr())?;
    let [path] = files.as_slice() else {
        return run_many(args, &files, out);
    };
    let reader = progress::open(path, "reading")?;
    let mut builder = StatsBuilder::new(&reader.header().clock);
    if let Some(context) = system_context(path)? {
        builder = builder.system(Arc::new(context));
    }
    let (stats, failure) = match builder.read(reader) {
        Ok(stats) => (stats, None),
        Err(e) => (*e.partial, Some(e.source)),
    };
    let sort = sort_by(args.sort);
    if args.json {
        stats.write_json(&mut *out, TableOptions { sort, top: args.top })?;
    } else {
        writeln!(out, "{}: statistics of a Phosphor trace file", path.display())?;
        if let Some(e) = &failure {
            writeln!(
                out,
                "  INCOMPLETE: read up to byte {}; what follows is the part before it",
                e.offset()
            )?;
        }
        writeln!(out)?;
        write!(out, "{}", stats.report(TableOptions { sort, top: Some(args.top.unwrap_or(DEFAULT_TOP)) }))?;
    }
    out.flush()?;
    match failure {
        None => Ok(()),
        Some(e) => Err(anyhow::Error::new(e.with_path(path)).context(format!(
            "reading {} stopped early (the statistics are of the {} events before the damage)",
            path.display(),
            format_count(stats.events)
        ))),
    }
}

fn sort_by(sort: Sort) -> SortBy {
    match sort {
        Sort::Total => SortBy::Total,
        Sort::Count => SortBy::Count,
        Sort::Max => SortBy::Max,
    }
}

/// `phosphor stats` of several files, as one trace.
fn run_many(args: &StatsArgs, files: &[PathBuf], out: &mut impl Write) -> anyhow::Result<()> {
    let (headers, timeline) = crate::common::align_files(files, &mut std::io::stderr())?;
    let mut merged = FilesStats::new();
    let mut failure = None;
    for (file, place) in files.iter().zip(&timeline.files) {
        if let Err(e) = merged.add_file(progress::open(file, "reading")?, place.origin_ns) {
            let e = anyhow::Error::new(e.with_path(file)).context(format!(
                "reading {} stopped early (the statistics hold what came before)",
                file.display()
            ));
            match failure {
                None => failure = Some(e),
                Some(_) => eprintln!("error: {e:#}"),
            }
        }
    }
    let stats = merged.finish();
    let sort = sort_by(args.sort);
    if args.json {
        stats.write_json(&mut *out, TableOptions { sort, top: args.top })?;
    } else {
        writeln!(out, "statistics of {} Phosphor trace files as one trace:", files.len())?;
        for (file, h) in files.iter().zip(&headers) {
            writeln!(
                out,
                "  {}: {}/{} on {}",
                file.display(),
                h.process_name,
                h.pid,
                phosphor_export::timeline::machine_of(h)
            )?;
        }
        if failure.is_some() {
            writeln!(out, "  INCOMPLETE: a file could not be read to its end (the error follows)")?;
        }
        writeln!(out)?;
        write!(out, "{}", stats.report(TableOptions { sort, top: Some(args.top.unwrap_or(DEFAULT_TOP)) }))?;
    }
    out.flush()?;
    failure.map_or(Ok(()), Err)
}

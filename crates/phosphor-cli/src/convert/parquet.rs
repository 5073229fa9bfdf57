//! `phosphor convert FILE|DIR… --to parquet -o OUTDIR`: the trace model's tables (`phosphor-sql`,
//! `docs/SQL.md`) written as Parquet. DataFusion is most of what building `phosphor` would cost,
//! so this needs the `sql` feature; without it, it says so.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::ValueEnum;

#[cfg(not(feature = "sql"))]
use crate::common::SQL_INSTALL as INSTALL;
#[cfg(feature = "sql")]
use crate::common::{aligned, format_bytes};

/// How `convert --to parquet` lays the tables out (`--partition`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Partition {
    /// A folder per table, a Hive partition per trace: `OUTDIR/slices/trace=NAME/part-0.parquet`
    /// (the name percent-encoded, `/` as `%2F`), which DuckDB, Polars, Spark and DataFusion read
    /// as a `trace` column.
    Trace,
}

/// `phosphor convert FILE|DIR… --to parquet -o OUTDIR [--partition trace]`: a Parquet file per
/// table in `OUTDIR`, or a folder per table partitioned by trace.
#[cfg(feature = "sql")]
pub fn convert(
    files: &[PathBuf],
    out: Option<&Path>,
    partition: Option<Partition>,
    stderr: &mut impl Write,
) -> anyhow::Result<()> {
    let Some(dir) = out else {
        anyhow::bail!("--to parquet writes a folder of tables: name it with -o OUTDIR");
    };
    let layout = match partition {
        Some(Partition::Trace) => phosphor_sql::Layout::ByTrace,
        None => phosphor_sql::Layout::OneFilePerTable,
    };
    let sources = aligned(files.iter().map(phosphor_sql::TraceSource::new).collect(), stderr)?;
    let start = std::time::Instant::now();
    let summary = phosphor_sql::write_parquet_as(&sources, dir, layout)?;
    let time = start.elapsed();
    for (table, path, rows) in &summary.tables {
        writeln!(stderr, "{}: {} rows of {}", path.display(), rows, table.name())?;
    }
    let input: u64 = files.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum();
    writeln!(
        stderr,
        "{}: {} of Parquet from {} of traces ({:.2}x) in {:.2} s",
        dir.display(),
        format_bytes(summary.bytes),
        format_bytes(input),
        summary.bytes as f64 / input.max(1) as f64,
        time.as_secs_f64()
    )?;
    Ok(())
}

/// `convert --to parquet` in a build without SQL: says how to get it.
#[cfg(not(feature = "sql"))]
pub fn convert(
    _files: &[PathBuf],
    _out: Option<&Path>,
    _partition: Option<Partition>,
    _stderr: &mut impl Write,
) -> anyhow::Result<()> {
    anyhow::bail!("this phosphor was built without Parquet output; build it with: {INSTALL}")
}

//! `phosphor sql FILE|DIR… ['QUERY']` and `phosphor convert … --to parquet -o OUTDIR`: the
//! trace model's tables (`phosphor-sql`, `docs/SQL.md`) queried in an embedded DataFusion, or
//! written as Parquet.
//!
//! DataFusion is most of what building `phosphor` would cost, so both need the `sql` feature
//! (`cargo install --path crates/phosphor-cli --features sql`); without it they say so.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

/// What `cargo install` builds a `phosphor` with SQL.
#[cfg(not(feature = "sql"))]
const INSTALL: &str = "cargo install --path crates/phosphor-cli --features sql";

/// `phosphor sql`'s arguments.
#[derive(Debug, Args)]
pub struct SqlArgs {
    /// Trace files, folders of them (their `.phos` files, one set of tables with a `trace`
    /// column), or a folder of Parquet tables (`convert --to parquet`); then the query, if the
    /// last argument is not a file or folder. Without a query, statements ending with `;` are
    /// read from stdin.
    #[arg(required = true, value_name = "FILE|DIR… [QUERY]")]
    args: Vec<String>,
    /// Print CSV (a header line, then a line per row).
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// Print JSON Lines (an object per row).
    #[arg(long)]
    json: bool,
}

impl SqlArgs {
    /// The files or folders, and the query if one was given.
    fn split(&self) -> (Vec<PathBuf>, Option<&str>) {
        match self.args.split_last() {
            Some((last, files)) if !files.is_empty() && !Path::new(last).exists() => {
                (files.iter().map(PathBuf::from).collect(), Some(last.as_str()))
            }
            _ => (self.args.iter().map(PathBuf::from).collect(), None),
        }
    }
}

/// Runs `phosphor sql`.
#[cfg(feature = "sql")]
pub fn run(args: &SqlArgs, out: &mut impl Write, stderr: &mut impl Write) -> anyhow::Result<()> {
    use anyhow::Context;
    use phosphor_sql::{Output, Session};

    let (paths, query) = args.split();
    let session = match paths.as_slice() {
        [dir] if dir.join("slices.parquet").is_file() => Session::new(&[], Some(dir))?,
        _ => Session::new(&sources(&paths, stderr)?, None)?,
    };
    let output = if args.csv {
        Output::Csv
    } else if args.json {
        Output::Json
    } else {
        Output::Table
    };
    if let Some(query) = query {
        return session.run(query, output, out).with_context(|| format!("query: {query}"));
    }
    // Statements from stdin, each ended by `;`.
    let mut text = String::new();
    for line in std::io::stdin().lines() {
        text.push_str(&line?);
        text.push('\n');
        while let Some(end) = text.find(';') {
            let statement: String = text.drain(..=end).collect();
            let statement = statement.trim_end_matches(';').trim();
            if !statement.is_empty() {
                // A bad statement is reported and the next one read.
                if let Err(e) = session.run(statement, output, out) {
                    writeln!(stderr, "phosphor: query: {statement}: {e}")?;
                }
                out.flush()?;
            }
        }
    }
    Ok(())
}

/// Runs `phosphor sql` in a build without SQL: says how to get it.
#[cfg(not(feature = "sql"))]
pub fn run(args: &SqlArgs, _out: &mut impl Write, _stderr: &mut impl Write) -> anyhow::Result<()> {
    let _ = args.split();
    anyhow::bail!("this phosphor was built without SQL (DataFusion); build it with: {INSTALL}")
}

/// `phosphor convert FILE|DIR… --to parquet -o OUTDIR`: a Parquet file per table in `OUTDIR`.
#[cfg(feature = "sql")]
pub fn convert(files: &[PathBuf], out: Option<&Path>, stderr: &mut impl Write) -> anyhow::Result<()> {
    let Some(dir) = out else {
        anyhow::bail!("--to parquet writes a folder of tables: name it with -o OUTDIR");
    };
    let sources: Vec<phosphor_sql::TraceSource> = files.iter().map(phosphor_sql::TraceSource::new).collect();
    let summary = phosphor_sql::write_parquet(&sources, dir)?;
    for (table, path, rows) in &summary.tables {
        writeln!(stderr, "{}: {} rows of {}", path.display(), rows, table.name())?;
    }
    Ok(())
}

/// `convert --to parquet` in a build without SQL: says how to get it.
#[cfg(not(feature = "sql"))]
pub fn convert(_files: &[PathBuf], _out: Option<&Path>, _stderr: &mut impl Write) -> anyhow::Result<()> {
    anyhow::bail!("this phosphor was built without Parquet output; build it with: {INSTALL}")
}

/// The trace files `paths` name (a folder's `.phos` files, listed on `stderr`).
#[cfg(feature = "sql")]
fn sources(paths: &[PathBuf], stderr: &mut impl Write) -> anyhow::Result<Vec<phosphor_sql::TraceSource>> {
    Ok(crate::convert::inputs(paths, stderr)?.into_iter().map(phosphor_sql::TraceSource::new).collect())
}

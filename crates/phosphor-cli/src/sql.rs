//! `phosphor sql FILE|DIR… ['QUERY']`: the trace model's tables (`phosphor-sql`, `docs/SQL.md`)
//! queried in an embedded DataFusion (`convert --to parquet` writes them as Parquet:
//! `convert/parquet.rs`).
//!
//! Without a query, statements come from an interactive prompt when stdin is a terminal
//! ([`prompt`]), else from stdin, each ended by `;` ([`statements`]).
//!
//! DataFusion is most of what building `phosphor` would cost, so both need the `sql` feature
//! (`cargo install --path crates/phosphor-cli --features sql`); without it they say so.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

#[cfg(feature = "sql")]
mod prompt;
#[cfg(feature = "sql")]
mod statements;

#[cfg(feature = "sql")]
use crate::common::aligned;
#[cfg(not(feature = "sql"))]
use crate::common::SQL_INSTALL as INSTALL;

/// `phosphor sql`'s arguments.
#[derive(Debug, Args)]
pub struct SqlArgs {
    /// Trace files, folders of them (their `.phos` files, one set of tables with a `trace`
    /// column), or a folder of Parquet tables (`convert --to parquet`, partitioned by trace or
    /// not); then the query, if the last argument is not a file or folder. Without a query: an
    /// interactive prompt on a terminal (`.help` lists its commands), else statements ending
    /// with `;` read from stdin.
    #[arg(required = true, value_name = "FILE|DIR… [QUERY]")]
    args: Vec<String>,
    /// Print CSV (a header line, then a line per row).
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// Print JSON Lines (an object per row).
    #[arg(long)]
    json: bool,
    /// Write the query's result to this file (created or truncated) instead of printing it, in
    /// the format its extension names: `.parquet`, `.csv`, `.json`/`.jsonl`/`.ndjson` (JSON
    /// Lines), `.txt` (a table); `--csv` or `--json` choose for any other name.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
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
    use std::io::IsTerminal;

    use anyhow::Context;
    use phosphor_sql::{Output, Session};

    let (paths, query) = args.split();
    let output = if args.csv {
        Output::Csv
    } else if args.json {
        Output::Json
    } else {
        Output::Table
    };
    let file_output = match &args.output {
        Some(_) if query.is_none() => {
            anyhow::bail!("-o writes one query's result: give the query after the files")
        }
        Some(path) => match Output::of_file(path) {
            _ if args.csv || args.json => Some((path, output)),
            Some(format) => Some((path, format)),
            None => anyhow::bail!(
                "{}: -o names the format by the extension (.parquet, .csv, .json, .jsonl, .ndjson, .txt), or pass --csv or --json",
                path.display()
            ),
        },
        None => None,
    };
    let mut session = match paths.as_slice() {
        [dir] if phosphor_sql::is_parquet_folder(dir) => Session::new(&[], Some(dir))?,
        _ => Session::new(&sources(&paths, stderr)?, None)?,
    };
    if let Some(query) = query {
        if let Some((path, format)) = file_output {
            let rows = session.write_file(query, format, path).with_context(|| format!("query: {query}"))?;
            writeln!(stderr, "{}: {rows} rows", path.display())?;
            return Ok(());
        }
        return session.run(query, output, out).with_context(|| format!("query: {query}"));
    }
    if std::io::stdin().is_terminal() {
        out.flush()?;
        // At the prompt Ctrl-C stops the running query, not phosphor.
        let _ = session.interrupt_on_ctrl_c();
        return prompt::run(&session, output, &mut std::io::stdout(), stderr);
    }
    // Statements from stdin, each ended by `;` (outside quotes and comments).
    let mut split = statements::Statements::default();
    for line in std::io::stdin().lines() {
        split.push_line(&line?);
        while let Some(statement) = split.next_statement() {
            // A bad statement is reported and the next one read.
            if let Err(e) = session.run(&statement, output, out) {
                writeln!(stderr, "phosphor: query: {statement}: {e}")?;
            }
            out.flush()?;
        }
    }
    if let Some(rest) = split.rest() {
        writeln!(stderr, "phosphor: the statement left at the end has no `;`, not run: {rest}")?;
    }
    Ok(())
}

/// Runs `phosphor sql` in a build without SQL: says how to get it.
#[cfg(not(feature = "sql"))]
pub fn run(args: &SqlArgs, _out: &mut impl Write, _stderr: &mut impl Write) -> anyhow::Result<()> {
    let _ = (args.split(), &args.output);
    anyhow::bail!("this phosphor was built without SQL (DataFusion); build it with: {INSTALL}")
}

/// The trace files `paths` name (a folder's `.phos` files, listed on `stderr`).
#[cfg(feature = "sql")]
fn sources(paths: &[PathBuf], stderr: &mut impl Write) -> anyhow::Result<Vec<phosphor_sql::TraceSource>> {
    let files = crate::common::inputs(paths, stderr)?;
    aligned(files.iter().map(phosphor_sql::TraceSource::new).collect(), stderr)
}

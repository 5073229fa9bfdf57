//! `phosphor sql`'s interactive prompt (stdin a terminal, no query given): line editing and
//! history (rustyline), statements over several lines until a `;`, and dot commands (`.help`).
//!
//! The history is kept in `$PHOSPHOR_SQL_HISTORY`, else `$XDG_DATA_HOME/phosphor/sql_history`,
//! else `~/.local/share/phosphor/sql_history`, saved after each statement. Ctrl-C forgets the
//! statement being typed, or stops the one running (`Session::interrupt_on_ctrl_c`); Ctrl-D (on
//! an empty line) or `.quit` quits.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use phosphor_sql::{Output, Session};
use rustyline::error::ReadlineError;
use rustyline::{Config, DefaultEditor};

use super::statements::Statements;

/// Rows of a result printed as a table at the prompt; the others are counted.
const MAX_ROWS: usize = 1000;

/// What `.help` prints.
const HELP: &str = "\
Statements end with `;` and may span lines. Up and Down recall earlier ones; Ctrl-C forgets the
statement being typed or stops the one running, Ctrl-D on an empty line quits.
  .tables                  the tables
  .schema [TABLE]          their columns (or TABLE's) and types
  .mode table|csv|json     how results print (table: the first 1000 rows)
  .help                    this
  .quit                    quit (.exit too)
Tables and columns: docs/SQL.md.";

/// The file the history is kept in, if any.
fn history_file() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PHOSPHOR_SQL_HISTORY") {
        return Some(PathBuf::from(path)).filter(|p| !p.as_os_str().is_empty());
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local").join("share")))?;
    Some(data.join("phosphor").join("sql_history"))
}

/// Runs the prompt until `.quit` or Ctrl-D.
pub fn run(
    session: &Session,
    output: Output,
    out: &mut dyn Write,
    stderr: &mut dyn Write,
) -> anyhow::Result<()> {
    let config = Config::builder()
        .max_history_size(10_000)?
        .history_ignore_dups(true)?
        .auto_add_history(false)
        .build();
    let mut editor = DefaultEditor::with_config(config)?;
    let history = history_file();
    if let Some(path) = &history {
        match editor.load_history(path) {
            Ok(()) => {}
            Err(ReadlineError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => writeln!(stderr, "phosphor: the history {}: {e}", path.display())?,
        }
    }
    writeln!(out, "phosphor sql: statements end with `;`; .help for commands, Ctrl-D to quit")?;
    let mut prompt = Prompt { session, output, statements: Statements::default(), typed: String::new() };
    loop {
        let waiting = !prompt.statements.is_empty();
        let line = match editor.readline(if waiting { "  -> " } else { "sql> " }) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                prompt.statements.clear();
                prompt.typed.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        let (entry, quit) = prompt.line(&line, out, stderr)?;
        if let Some(entry) = entry {
            editor.add_history_entry(entry)?;
            if let Some(path) = &history {
                save(&mut editor, path, stderr)?;
            }
        }
        if quit {
            break;
        }
    }
    Ok(())
}

/// Saves the history to `path`, its folder made if missing; a failure is told, not fatal.
fn save(editor: &mut DefaultEditor, path: &std::path::Path, stderr: &mut dyn Write) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(e) = editor.save_history(path) {
        writeln!(stderr, "phosphor: the history {}: {e}", path.display())?;
    }
    Ok(())
}

/// The prompt's state between lines.
struct Prompt<'a> {
    session: &'a Session,
    output: Output,
    statements: Statements,
    /// The lines of the statement being typed, for the history.
    typed: String,
}

impl Prompt<'_> {
    /// Takes a line: runs a dot command, or the statements it ends. Returns what to add to the
    /// history (a command, or the lines of the statements ended), and whether to quit.
    fn line(
        &mut self,
        line: &str,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> anyhow::Result<(Option<String>, bool)> {
        if self.statements.is_empty() && line.trim_start().starts_with('.') {
            let quit = self.command(line.trim(), out, err)?;
            return Ok((Some(line.trim().to_owned()), quit));
        }
        if !self.typed.is_empty() {
            self.typed.push('\n');
        }
        self.typed.push_str(line);
        self.statements.push_line(line);
        let mut ran = false;
        while let Some(statement) = self.statements.next_statement() {
            ran = true;
            self.statement(&statement, out, err)?;
        }
        if !ran {
            return Ok((None, false));
        }
        let entry = std::mem::take(&mut self.typed);
        if let Some(rest) = self.statements.rest() {
            // The start of the next statement, typed after a `;` on the same line.
            self.typed = rest.to_owned();
        }
        Ok((Some(entry.trim().to_owned()), false))
    }

    /// Runs one statement, its result printed (a table: at most [`MAX_ROWS`] rows, then the count
    /// and time), its error told.
    fn statement(&self, statement: &str, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<()> {
        let start = Instant::now();
        let result = match self.output {
            Output::Table => self.session.run_table(statement, MAX_ROWS, out).map(Some),
            other => self.session.run(statement, other, out).map(|()| None),
        };
        match result {
            Ok(Some(rows)) => {
                let shown =
                    if rows > MAX_ROWS as u64 { format!(" ({MAX_ROWS} shown)") } else { String::new() };
                let plural = if rows == 1 { "" } else { "s" };
                writeln!(out, "{rows} row{plural}{shown} in {:.3} s", start.elapsed().as_secs_f64())?;
            }
            Ok(None) => {}
            Err(phosphor_sql::Error::Interrupted) => {
                writeln!(err, "interrupted after {:.3} s", start.elapsed().as_secs_f64())?
            }
            Err(e) => writeln!(err, "error: {e}")?,
        }
        out.flush()?;
        Ok(())
    }

    /// Runs a dot command; returns whether to quit.
    fn command(&mut self, line: &str, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<bool> {
        let mut words = line.split_whitespace();
        let command = words.next().unwrap_or_default();
        let arg = words.next();
        let tables = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' \
                      ORDER BY table_name";
        match (command, arg) {
            (".quit" | ".exit", _) => return Ok(true),
            (".help", _) => writeln!(out, "{HELP}")?,
            (".tables", _) => self.statement(tables, out, err)?,
            (".schema", table) => {
                let only = table
                    .map(|t| format!(" AND table_name = '{}'", t.replace('\'', "''")))
                    .unwrap_or_default();
                let columns = format!(
                    "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns \
                     WHERE table_schema = 'public'{only} ORDER BY table_name, ordinal_position"
                );
                self.statement(&columns, out, err)?;
            }
            (".mode", Some(mode)) => match mode {
                "table" => self.output = Output::Table,
                "csv" => self.output = Output::Csv,
                "json" => self.output = Output::Json,
                _ => writeln!(err, "error: .mode table, csv or json")?,
            },
            _ => writeln!(err, "error: no command {line}; .help lists them")?,
        }
        out.flush()?;
        Ok(false)
    }
}

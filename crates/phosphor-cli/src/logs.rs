//! `phosphor logs FILE [--level L] [--category GLOB] [--json]`: the deferred-format logs of a trace
//! file (`trace_log!`), formatted now, one line each in file order.
//!
//! Text lines read `SECONDS.MICROS LEVEL [thread] category: message`, the time since the trace's
//! clock origin. `--json` prints one object per line instead (`ts_ns`, `level`, `tid`, `thread`,
//! `category`, `message`, `file`, `line`). Streams in constant memory. A truncated or corrupt file
//! prints every log before the damage, then the error names the file and the byte offset.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use phosphor::Level;
use phosphor_export::logs::{write_logs, LogFilter};

use crate::progress;

/// Options of `phosphor logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The trace file (written by `Trace::save` or `phosphor demo`).
    file: PathBuf,
    /// Show this level and more severe only (error, warn, info, debug, trace).
    #[arg(long, value_name = "LEVEL")]
    level: Option<Level>,
    /// Show categories matching this glob only (`*`, `?`).
    #[arg(long, value_name = "GLOB")]
    category: Option<String>,
    /// Print one JSON object per line.
    #[arg(long)]
    json: bool,
}

/// Runs `phosphor logs`, writing the lines to `out`.
pub fn run(args: &LogsArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let reader = progress::open(&args.file, "reading")?;
    let filter = LogFilter { max_level: args.level, category: args.category.clone(), json: args.json };
    match write_logs(reader, &mut *out, &filter) {
        Ok(_) => Ok(out.flush()?),
        Err(phosphor_export::chrome::Error::Read { source, exported, .. }) => {
            out.flush()?;
            Err(anyhow::Error::new(source.with_path(&args.file)).context(format!(
                "reading {} stopped early (the {} logs before the damage were printed)",
                args.file.display(),
                exported.events
            )))
        }
        Err(e) => Err(e.into()),
    }
}

//! `phosphor logs FILE [--level L] [--category GLOB] [--json] [--window-mib N]`: the
//! deferred-format logs of a trace file (`trace_log!`), formatted now, one line each in time order.
//!
//! Text lines read `SECONDS.MICROS LEVEL [thread] category: message`, the time since the trace's
//! clock origin. `--json` prints one object per line instead (`ts_ns`, `level`, `tid`, `thread`,
//! `category`, `message`, `file`, `line`). A file holds its threads' chunks as they were handed
//! back, so logs are sorted in a reorder window of `--window-mib` (32 MiB): memory stays bounded
//! whatever the file's size. Logs that came too late for a full window are printed late and
//! counted on standard error (only there, so that `--json` stays one log object per line). A
//! truncated or corrupt file prints every log before the damage, then the error names the file and
//! the byte offset.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use phosphor::Level;
use phosphor_export::format_count;
use phosphor_export::logs::{write_logs, LogFilter, LogOrder, DEFAULT_WINDOW_BYTES};

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
    /// Sort the logs in a window of this many MiB (0: print them in file order).
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_WINDOW_BYTES >> 20)]
    window_mib: usize,
}

/// Runs `phosphor logs`, writing the lines to `out`, and to `stderr` how many logs were printed
/// out of time order, if any.
pub fn run(args: &LogsArgs, out: &mut impl Write, stderr: &mut impl Write) -> anyhow::Result<()> {
    let reader = progress::open(&args.file, "reading")?;
    let filter = LogFilter {
        max_level: args.level,
        category: args.category.clone(),
        json: args.json,
        window_bytes: Some(args.window_mib.saturating_mul(1 << 20)),
    };
    let mut order = LogOrder::default();
    match write_logs(reader, &mut *out, &filter, &mut order) {
        Ok(summary) => {
            out.flush()?;
            note_out_of_order(stderr, order, summary.events, args.window_mib)?;
            Ok(())
        }
        Err(phosphor_export::chrome::Error::Read { source, exported, .. }) => {
            out.flush()?;
            note_out_of_order(stderr, order, exported.events, args.window_mib)?;
            Err(anyhow::Error::new(source.with_path(&args.file)).context(format!(
                "reading {} stopped early (the {} logs before the damage were printed)",
                args.file.display(),
                exported.events
            )))
        }
        Err(e) => Err(e.into()),
    }
}

/// Says how many logs were printed out of time order, if any.
fn note_out_of_order(
    stderr: &mut impl Write,
    order: LogOrder,
    logs: u64,
    window_mib: usize,
) -> io::Result<()> {
    if order.out_of_order == 0 {
        return Ok(());
    }
    let (n, of) = (format_count(order.out_of_order), format_count(logs));
    if window_mib == 0 {
        return writeln!(
            stderr,
            "note: {n} of {of} logs were printed out of time order (--window-mib 0 prints them in file order)"
        );
    }
    writeln!(
        stderr,
        "note: {n} of {of} logs were printed out of time order: their threads' chunks came after the \
         {window_mib} MiB reorder window had filled and let later logs out (a larger --window-mib \
         sorts them)"
    )
}

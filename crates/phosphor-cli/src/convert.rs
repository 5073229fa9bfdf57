//! `phosphor convert FILE --to FORMAT [-o OUT]`: a trace file in a viewer's format, streamed chunk
//! by chunk by the exporters of `phosphor-export`: memory grows with the file's names (and, for
//! folded stacks, its distinct stacks, cut at 256 levels), never with its events. A Perfetto export
//! reads a regular file twice: first to plan the async slices' tracks (4 bytes per async begin or
//! end, up to `MAX_PLANNED_ASYNC_EVENTS`; past it, or from a pipe, they are laid out in one pass).
//!
//! Without `-o` the document goes to stdout; with it, to the file (created or truncated), and a
//! one-line summary goes to stderr. The input's header is read before the output is created, so a
//! file that is not a trace leaves `OUT` alone. A truncated or corrupt input still gives a whole
//! document holding every chunk before the damage; then the error names the input and the byte
//! offset.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::{Args, ValueEnum};
use phosphor::format::file::Reader;
use phosphor_export::chrome::{self, ExportSummary};
use phosphor_export::{folded, perfetto};
use phosphor_export::{format_count, format_ns};

use crate::info::format_bytes;
use crate::progress;

/// Options of `phosphor convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The trace file (written by `Trace::save` or `phosphor demo`).
    file: PathBuf,
    /// The output format.
    #[arg(long, value_enum, value_name = "FORMAT")]
    to: Format,
    /// Write to this file (created or truncated) and print a summary to stderr, instead of
    /// writing to stdout.
    #[arg(short, long, visible_alias = "out", value_name = "OUT")]
    output: Option<PathBuf>,
}

/// The formats `convert` writes. Only those that work are listed: clap refuses the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Perfetto's protobuf trace (`.pftrace`), for ui.perfetto.dev and trace processor.
    Perfetto,
    /// Chrome trace event JSON, for chrome://tracing, ui.perfetto.dev and Speedscope.
    Chrome,
    /// Folded stacks, `thread;outer;inner <self-time-ns>` per line, for flame graph tools.
    Folded,
}

/// What one conversion wrote.
#[derive(Debug)]
pub struct Converted {
    /// What the exporter counted.
    pub summary: ExportSummary,
    /// Bytes written.
    pub bytes: u64,
    /// How long the conversion took.
    pub time: Duration,
}

/// Runs `phosphor convert`: the document to `stdout` or to `-o OUT`, the summary of the latter to
/// `stderr`.
pub fn run(args: &ConvertArgs, stdout: impl Write, stderr: &mut impl Write) -> anyhow::Result<()> {
    match &args.output {
        None => {
            let reader = progress::open(&args.file, "converting")?;
            let c = export(reader, &args.file, args.to, stdout, "stdout")?;
            note_truncated(stderr, &c.summary)?;
        }
        Some(out) => {
            let c = to_file(&args.file, args.to, out)?;
            let s = &c.summary;
            writeln!(
                stderr,
                "{}: {} events, {} chunks, {} thread{}, {}, written in {}",
                out.display(),
                format_count(s.events),
                format_count(s.chunks),
                s.threads,
                if s.threads == 1 { "" } else { "s" },
                format_bytes(c.bytes),
                format_ns(u64::try_from(c.time.as_nanos()).unwrap_or(u64::MAX))
            )?;
            note_truncated(stderr, s)?;
        }
    }
    Ok(())
}

/// Says what an export left out or laid out differently: async slices past the layout plan's
/// cap, slices past the depth cap and names past the name limit, each if any.
fn note_truncated(stderr: &mut impl Write, s: &ExportSummary) -> io::Result<()> {
    if s.async_unplanned {
        writeln!(
            stderr,
            "note: the file holds more than {} async begins and ends, the most a layout plan takes: \
             they are laid out in file order, and may take many more tracks (the trace's summary \
             instant counts them)",
            format_count(perfetto::MAX_PLANNED_ASYNC_EVENTS as u64)
        )?;
    }
    note_cuts(stderr, s.truncated, s.names_cut, "folded")
}

/// Says what stacks lost to the depth cap (`truncated` slices) and the name limit (`names_cut`
/// names), each if any; `done` is what happened to them ("folded", "drawn").
pub(crate) fn note_cuts(
    stderr: &mut impl Write,
    truncated: u32,
    names_cut: u32,
    done: &str,
) -> io::Result<()> {
    if truncated > 0 {
        let depth = phosphor_export::DEFAULT_MAX_DEPTH;
        writeln!(
            stderr,
            "note: {} slices nested deeper than {depth} levels are {done} by name under \"[deeper than {depth}]\"",
            format_count(truncated.into())
        )?;
    }
    if names_cut > 0 {
        writeln!(
            stderr,
            "note: {} names longer than {} bytes are {done} cut, ending in \"{}\"",
            format_count(names_cut.into()),
            phosphor_export::MAX_NAME_BYTES,
            phosphor_export::NAME_CUT_MARK
        )?;
    }
    Ok(())
}

/// Converts the trace file `input` into `format` in the file `output` (created or truncated).
pub fn to_file(input: &Path, format: Format, output: &Path) -> anyhow::Result<Converted> {
    let reader = progress::open(input, "converting")?;
    // Creating the output would truncate the input before it is read.
    if let (Ok(a), Ok(b)) = (std::fs::canonicalize(input), std::fs::canonicalize(output)) {
        if a == b {
            bail!("{}: the output is the input file", output.display());
        }
    }
    let f = File::create(output).with_context(|| format!("{}: cannot create", output.display()))?;
    export(reader, input, format, f, &output.display().to_string())
}

/// Writes the trace of `reader` (read from `input`) as `format` to `out` (called `out_name` in
/// errors).
fn export(
    reader: Reader<progress::Input>,
    input: &Path,
    format: Format,
    out: impl Write,
    out_name: &str,
) -> anyhow::Result<Converted> {
    let started = Instant::now();
    let mut out = Counting { inner: out, bytes: 0 };
    let result = match format {
        Format::Chrome => chrome::write_chrome_json(reader, &mut out).map_err(|e| match e {
            chrome::Error::Read { exported, source, .. } => Failure::Read(exported, source),
            e => Failure::Write(e.into()),
        }),
        Format::Perfetto => {
            let written = match plan_async(input)? {
                Some(plan) => perfetto::write_perfetto_planned(reader, plan, &mut out),
                None => perfetto::write_perfetto(reader, &mut out),
            };
            written.map_err(|e| match e {
                perfetto::Error::Read { exported, source, .. } => Failure::Read(exported, source),
                e => Failure::Write(e.into()),
            })
        }
        Format::Folded => folded::write_folded(reader, &mut out).map_err(|e| match e {
            folded::Error::Read { exported, source, .. } => Failure::Read(exported, source),
            e => Failure::Write(e.into()),
        }),
    };
    match result {
        Ok(summary) => Ok(Converted { summary, bytes: out.bytes, time: started.elapsed() }),
        Err(Failure::Read(exported, source)) => {
            Err(anyhow::Error::new(source.with_path(input)).context(format!(
            "converting {} stopped early ({out_name} holds the {} events of the {} chunks before the damage)",
            input.display(),
            format_count(exported.events),
            format_count(exported.chunks)
        )))
        }
        Err(Failure::Write(e)) => Err(e.context(format!("writing {out_name}"))),
    }
}

/// The Perfetto export's async lanes, planned in a first reading of `input` so that they take
/// the fewest tracks; `None` if `input` is not a regular file (a pipe cannot be read twice), and
/// the export lays them out in one pass.
fn plan_async(input: &Path) -> anyhow::Result<Option<perfetto::AsyncPlan>> {
    if !std::fs::metadata(input).is_ok_and(|m| m.is_file()) {
        return Ok(None);
    }
    Ok(Some(perfetto::AsyncPlan::from_reader(progress::open(input, "laying out async slices")?)))
}

/// Why an exporter stopped, whichever it was.
pub(crate) enum Failure {
    /// The input could not be read past some point; what was before it was exported.
    Read(ExportSummary, phosphor::format::file::Error),
    /// Writing failed.
    Write(anyhow::Error),
}

/// A writer that counts the bytes it passes on.
struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

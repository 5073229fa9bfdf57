//! `phosphor convert FILE|DIR… --to FORMAT [-o OUT]`: trace files in a viewer's format, streamed
//! chunk by chunk by the exporters of `phosphor-export`: memory grows with the file's names (and, for
//! folded stacks, its distinct stacks, cut at 256 levels), never with its events. A Perfetto export
//! reads a regular file twice: first to plan the async slices' tracks (4 bytes per async begin or
//! end, up to `MAX_PLANNED_ASYNC_EVENTS`; past it, or from a pipe, they are laid out in one pass).
//!
//! Without `-o` the document goes to stdout; with it, to the file (created or truncated), and a
//! one-line summary goes to stderr. The input's header is read before the output is created, so a
//! file that is not a trace leaves `OUT` alone. A truncated or corrupt input still gives a whole
//! document holding every chunk before the damage; then the error names the input and the byte
//! offset.
//!
//! `--compress` (Perfetto only) bundles the packets into zlib `compressed_packets`, which trace
//! processor and the UI inflate: about a quarter of the bytes, compressed on a second thread. It
//! is not the default: it costs about half again the CPU time, and the wall time only stays the
//! same with a second core free.
//!
//! Several files (or a folder, standing for its `.phos` files sorted by name, as `phosphor record`
//! writes them; the files taken are listed on stderr) make one trace on one timeline, a process
//! per file: `phosphor_export::timeline::align` places them from their headers (by
//! `CLOCK_MONOTONIC` within a boot, else by the wall clock, with a warning on stderr), and each
//! file is exported in turn, read as it would be alone (a Perfetto export plans each regular
//! file's async slices in a reading of its own), so memory is what the largest file takes. A
//! damaged file keeps what came before its damage, the next files are still exported, and the
//! error names it. Folded stacks take one file: a merged flame graph would add up stacks of
//! unrelated programs, so several files are refused.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::{Args, ValueEnum};
use phosphor::format::file::Reader;
use phosphor_export::chrome::{self, ChromeDocument, ExportSummary};
use phosphor_export::timeline::Timeline;
use phosphor_export::{folded, perfetto};
use phosphor_export::{format_count, format_ns};

use crate::common::{align_files, format_bytes, inputs, note_cuts};
use crate::progress;

pub mod otlp;
mod parquet;

/// Options of `phosphor convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The trace files (written by `Trace::save`, `phosphor demo` or `phosphor record`), or
    /// folders of them (their `.phos` files); several make one timeline, a process per file.
    #[arg(required = true, value_name = "FILE|DIR")]
    files: Vec<PathBuf>,
    /// The output format.
    #[arg(long, value_enum, value_name = "FORMAT")]
    to: Format,
    /// Write to this file (created or truncated) and print a summary to stderr, instead of
    /// writing to stdout.
    #[arg(short, long, visible_alias = "out", value_name = "OUT")]
    output: Option<PathBuf>,
    /// Perfetto only: bundle the packets into zlib-compressed `compressed_packets` (about 256 KiB
    /// of packets each, compressed on a second thread), which trace processor and the UI inflate.
    #[arg(long)]
    compress: bool,
    /// OTLP only: keep spans at least this long (`250us`, `1ms`, `2s`, or bare ns).
    #[arg(long, value_name = "DURATION", value_parser = crate::common::parse_duration)]
    min_duration: Option<u64>,
    /// OTLP only: keep root spans only.
    #[arg(long)]
    roots_only: bool,
    /// OTLP only: keep spans whose scope path (`frame/update`, as `phosphor stats` prints it)
    /// matches this glob (`*`, `?`); repeatable (any may match).
    #[arg(long = "path", value_name = "GLOB")]
    paths: Vec<String>,
    /// OTLP only: keep the N slowest root spans with their subtrees.
    #[arg(long, value_name = "N")]
    slowest: Option<usize>,
    /// OTLP only: the resource's `service.name` (default: the recorded process name).
    #[arg(long, value_name = "NAME")]
    service_name: Option<String>,
    /// Parquet only: `--partition trace` writes a folder per table, a Hive partition per trace
    /// (`OUTDIR/slices/trace=NAME/part-0.parquet`), which DuckDB, Polars, Spark and `phosphor sql`
    /// read as a `trace` column; converting more traces into the folder adds their partitions.
    #[arg(long, value_enum, value_name = "COLUMN")]
    partition: Option<parquet::Partition>,
    /// OTLP only: at most this many spans per request (default 8192).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_spans: Option<u64>,
    #[command(flatten)]
    otlp: otlp::OtlpArgs,
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
    /// OpenTelemetry spans: one protobuf `ExportTraceServiceRequest` (OTLP).
    Otlp,
    /// OpenTelemetry spans as OTLP JSON Lines: one `ExportTraceServiceRequest` per line.
    OtlpJson,
    /// The SQL tables (docs/SQL.md) as Parquet, a file per table in the folder `-o OUTDIR`
    /// (needs a build with `--features sql`).
    Parquet,
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
    let files = inputs(&args.files, stderr)?;
    if args.to == Format::Parquet {
        return parquet::convert(&files, args.output.as_deref(), args.partition, stderr);
    }
    if args.partition.is_some() {
        bail!("--partition applies to --to parquet only");
    }
    if matches!(args.to, Format::Otlp | Format::OtlpJson) {
        return otlp::run(args, &files, stdout, stderr);
    }
    if otlp::flags_set(args) {
        bail!("--min-duration, --roots-only, --path, --slowest, --service-name, --max-spans and the sampling, grouping and request flags apply to --to otlp and otlp-json only");
    }
    let [file] = files.as_slice() else {
        return run_many(args, &files, stdout, stderr);
    };
    match &args.output {
        None => {
            if args.compress && args.to != Format::Perfetto {
                bail!("--compress applies to --to perfetto only");
            }
            let reader = progress::open(file, "converting")?;
            let c = export(reader, file, args.to, args.compress, stdout, "stdout")?;
            note_truncated(stderr, &c.summary)?;
        }
        Some(out) => {
            if args.compress && args.to != Format::Perfetto {
                bail!("--compress applies to --to perfetto only");
            }
            let c = to_file_with(file, args.to, args.compress, out)?;
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

/// `phosphor convert` of several files: one document, a process per file.
fn run_many(
    args: &ConvertArgs,
    files: &[PathBuf],
    stdout: impl Write,
    stderr: &mut impl Write,
) -> anyhow::Result<()> {
    if args.compress && args.to != Format::Perfetto {
        bail!("--compress applies to --to perfetto only");
    }
    if args.to == Format::Folded {
        bail!(
            "--to folded takes one trace file ({} given): folded stacks of several programs would add up \
             unrelated stacks; convert each file on its own",
            files.len()
        );
    }
    if files.len() > usize::from(u16::MAX) {
        bail!("{} trace files: at most {} make one trace", files.len(), u16::MAX);
    }
    let (_, timeline) = align_files(files, stderr)?;
    let (c, out_name) = match &args.output {
        None => (export_many(files, &timeline, args.to, args.compress, stdout, "stdout", stderr)?, None),
        Some(out) => {
            for input in files {
                refuse_overwrite(input, out)?;
            }
            let f = File::create(out).with_context(|| format!("{}: cannot create", out.display()))?;
            let name = out.display().to_string();
            (export_many(files, &timeline, args.to, args.compress, f, &name, stderr)?, Some(name))
        }
    };
    if let Some(name) = out_name {
        let s = &c.summary;
        writeln!(
            stderr,
            "{name}: {} events, {} chunks, {} threads, from {} files, {}, written in {}",
            format_count(s.events),
            format_count(s.chunks),
            s.threads,
            files.len(),
            format_bytes(c.bytes),
            format_ns(u64::try_from(c.time.as_nanos()).unwrap_or(u64::MAX))
        )?;
    }
    note_truncated(stderr, &c.summary).map_err(anyhow::Error::from).and(c.failure.map_or(Ok(()), Err))
}

/// What a conversion of several files wrote, and the first file's damage, if any.
struct ConvertedMany {
    summary: ExportSummary,
    bytes: u64,
    time: Duration,
    failure: Option<anyhow::Error>,
}

/// Exports each of `files` in turn to `out`, placed as `timeline` says; a damaged file's error is
/// kept (the first returned, the others printed to `stderr`) and the next files are exported.
fn export_many(
    files: &[PathBuf],
    timeline: &Timeline,
    format: Format,
    compress: bool,
    out: impl Write,
    out_name: &str,
    stderr: &mut impl Write,
) -> anyhow::Result<ConvertedMany> {
    let started = Instant::now();
    let mut out = Sink::new(out, compress);
    let mut acc = Many { summary: ExportSummary::default(), failure: None, out_name };
    let opened = |file: &PathBuf| progress::open(file, "converting");
    if format == Format::Chrome {
        let mut doc = ChromeDocument::new(&mut out).context(format!("writing {out_name}"))?;
        for (file, place) in files.iter().zip(&timeline.files) {
            let result = doc.add_file(opened(file)?, place.origin_ns).map_err(|e| match e {
                chrome::Error::Read { exported, source, .. } => Failure::Read(exported, source),
                e => Failure::Write(e.into()),
            });
            acc.take(result, file, stderr)?;
        }
        doc.finish().context(format!("writing {out_name}"))?;
    } else {
        for (i, (file, place)) in files.iter().zip(&timeline.files).enumerate() {
            let plan = plan_async(file)?;
            let at = perfetto::FilePlace { index: i as u16, shift_ns: place.shift_ns };
            let written = perfetto::write_perfetto_placed(opened(file)?, plan, at, &mut out);
            acc.take(written.map_err(perfetto_failure), file, stderr)?;
        }
    }
    let out = out.finish().context(format!("writing {out_name}"))?;
    acc.summary.complete = acc.failure.is_none();
    Ok(ConvertedMany {
        summary: acc.summary,
        bytes: out.bytes,
        time: started.elapsed(),
        failure: acc.failure,
    })
}

/// What the files exported so far add up to, and the first damaged file's error.
struct Many<'a> {
    summary: ExportSummary,
    failure: Option<anyhow::Error>,
    out_name: &'a str,
}

impl Many<'_> {
    /// Adds one file's export; a read error is kept (the first) or printed (the others), a write
    /// error ends the conversion.
    fn take(
        &mut self,
        result: Result<ExportSummary, Failure>,
        file: &Path,
        stderr: &mut impl Write,
    ) -> anyhow::Result<()> {
        let s = match result {
            Ok(s) => s,
            Err(Failure::Read(exported, source)) => {
                let e = anyhow::Error::new(source.with_path(file)).context(format!(
                    "converting {} stopped early ({} holds the {} events of the {} chunks before the damage)",
                    file.display(),
                    self.out_name,
                    format_count(exported.events),
                    format_count(exported.chunks)
                ));
                match &self.failure {
                    None => self.failure = Some(e),
                    Some(_) => writeln!(stderr, "error: {e:#}")?,
                }
                exported
            }
            Err(Failure::Write(e)) => return Err(e.context(format!("writing {}", self.out_name))),
        };
        self.summary.events += s.events;
        self.summary.chunks += s.chunks;
        self.summary.threads = self.summary.threads.saturating_add(s.threads);
        self.summary.async_unplanned |= s.async_unplanned;
        Ok(())
    }
}

/// Fails if `output` is the file `input` (creating it would truncate the input before it is read).
fn refuse_overwrite(input: &Path, output: &Path) -> anyhow::Result<()> {
    if let (Ok(a), Ok(b)) = (std::fs::canonicalize(input), std::fs::canonicalize(output)) {
        if a == b {
            bail!("{}: the output is the input file", output.display());
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

/// Converts the trace file `input` into `format` in the file `output` (created or truncated).
pub fn to_file(input: &Path, format: Format, output: &Path) -> anyhow::Result<Converted> {
    to_file_with(input, format, false, output)
}

/// [`to_file`], the Perfetto packets compressed if `compress`.
fn to_file_with(input: &Path, format: Format, compress: bool, output: &Path) -> anyhow::Result<Converted> {
    let reader = progress::open(input, "converting")?;
    refuse_overwrite(input, output)?;
    let f = File::create(output).with_context(|| format!("{}: cannot create", output.display()))?;
    export(reader, input, format, compress, f, &output.display().to_string())
}

/// A Perfetto export's error, as the conversion reports it.
fn perfetto_failure(e: perfetto::Error) -> Failure {
    match e {
        perfetto::Error::Read { exported, source, .. } => Failure::Read(exported, source),
        e => Failure::Write(e.into()),
    }
}

/// Writes the trace of `reader` (read from `input`) as `format` to `out` (called `out_name` in
/// errors), a Perfetto trace's packets compressed if `compress`.
fn export(
    reader: Reader<progress::Input>,
    input: &Path,
    format: Format,
    compress: bool,
    out: impl Write,
    out_name: &str,
) -> anyhow::Result<Converted> {
    let started = Instant::now();
    let mut out = Sink::new(out, compress);
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
            written.map_err(perfetto_failure)
        }
        Format::Folded => folded::write_folded(reader, &mut out).map_err(|e| match e {
            folded::Error::Read { exported, source, .. } => Failure::Read(exported, source),
            e => Failure::Write(e.into()),
        }),
        Format::Otlp | Format::OtlpJson => {
            bail!("OTLP output is written by `convert --to otlp` (convert/otlp.rs)")
        }
        Format::Parquet => bail!("Parquet output is written by `convert --to parquet` (convert/parquet.rs)"),
    };
    // Finished whatever the export's result: after a read error the output is still a whole trace.
    let out = out.finish().context(format!("writing {out_name}"))?;
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

/// The output: plain, or through Perfetto's packet compression (`--compress`); either way counted.
enum Sink<W: Write> {
    Plain(Counting<W>),
    Compressed(perfetto::CompressedPackets<Counting<W>>),
}

impl<W: Write> Sink<W> {
    fn new(out: W, compress: bool) -> Self {
        let out = Counting { inner: out, bytes: 0 };
        match compress {
            false => Sink::Plain(out),
            true => Sink::Compressed(perfetto::CompressedPackets::new(out, Default::default())),
        }
    }

    /// Writes what is held (the last compressed bundle) and flushes.
    fn finish(self) -> io::Result<Counting<W>> {
        match self {
            Sink::Plain(mut out) => out.flush().map(|()| out),
            Sink::Compressed(z) => z.finish(),
        }
    }
}

impl<W: Write> Write for Sink<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Plain(out) => out.write(buf),
            Sink::Compressed(z) => z.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Plain(out) => out.flush(),
            Sink::Compressed(z) => z.flush(),
        }
    }
}

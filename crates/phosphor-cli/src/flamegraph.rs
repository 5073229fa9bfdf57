//! `phosphor flamegraph FILE -o OUT.svg`: an SVG flame graph of a trace file's self time, drawn by
//! `phosphor_export::folded` from its folded stacks (`phosphor convert --to folded`).
//!
//! The input's header is read before the output is created, so a file that is not a trace leaves
//! `OUT` alone. A truncated or corrupt input still gives a whole SVG of every chunk before the
//! damage; then the error names the input and the byte offset. A one-line summary goes to stderr.
//!
//! `--samples` draws the CPU samples' call stacks instead (format 1.6's system blocks),
//! symbolized through the recorded mappings (`phosphor_export::symbolize`), root first under the
//! thread's name (`--scopes`: then the scopes open at the sample's time); `--folded` writes their
//! folded lines rather than an SVG.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::Args;
use std::collections::HashMap;

use phosphor::format::file::Block;
use phosphor::format::system::Availability;
use phosphor_export::sample_stacks::SampleScopes;
use phosphor_export::symbolize::Symbolizer;
use phosphor_export::system::SystemContext;
use phosphor_export::{folded, sample_stacks};
use phosphor_export::{format_count, format_ns};

use crate::common::format_bytes;
use crate::progress;

/// Options of `phosphor flamegraph`.
#[derive(Debug, Args)]
pub struct FlamegraphArgs {
    /// The trace file (written by `Trace::save` or `phosphor demo`).
    file: PathBuf,
    /// The SVG file to write (created or truncated).
    #[arg(short, long, visible_alias = "out", value_name = "OUT")]
    output: PathBuf,
    /// Draw the CPU samples' call stacks (format 1.6 system context), symbolized, widths in
    /// samples, instead of the slices' self time.
    #[arg(long)]
    samples: bool,
    /// With --samples: write the folded stacks (`thread;root;…;leaf COUNT` lines) instead of an SVG.
    #[arg(long, requires = "samples")]
    folded: bool,
    /// With --samples: start each stack with the scopes open at the sample's time (reads the file
    /// a second time).
    #[arg(long, requires = "samples")]
    scopes: bool,
}

impl FlamegraphArgs {
    /// `phosphor flamegraph --samples --scopes FILE -o OUT`: the demo's sample flame graph.
    pub(crate) fn samples_with_scopes(file: PathBuf, output: PathBuf) -> FlamegraphArgs {
        FlamegraphArgs { file, output, samples: true, folded: false, scopes: true }
    }
}

/// What one flame graph took.
#[derive(Debug)]
pub struct Drawn {
    /// Bytes written.
    pub bytes: u64,
    /// Events read.
    pub events: u64,
    /// Slices nested deeper than the depth cap, drawn under `[deeper than N]` frames.
    pub truncated: u32,
    /// Distinct names longer than `MAX_NAME_BYTES`, drawn cut.
    pub names_cut: u32,
    /// How long reading and drawing took.
    pub time: Duration,
}

/// Runs `phosphor flamegraph`: the SVG to `-o OUT`, its summary to `stderr`.
pub fn run(args: &FlamegraphArgs, stderr: &mut impl Write) -> anyhow::Result<()> {
    if args.samples {
        return samples(args, stderr);
    }
    let d = to_file(&args.file, &args.output)?;
    writeln!(
        stderr,
        "{}: flame graph of {} events, {}, written in {}",
        args.output.display(),
        format_count(d.events),
        format_bytes(d.bytes),
        format_ns(u64::try_from(d.time.as_nanos()).unwrap_or(u64::MAX))
    )?;
    crate::common::note_cuts(stderr, d.truncated, d.names_cut, "drawn")?;
    Ok(())
}

/// `--samples`: the CPU samples' stacks, from the file's system blocks, symbolized.
fn samples(args: &FlamegraphArgs, stderr: &mut impl Write) -> anyhow::Result<()> {
    let (input, output) = (&args.file, &args.output);
    let mut reader = progress::open(input, "reading the samples")?;
    let mut context = SystemContext::default();
    // The thread names come with the other blocks; only system blocks are kept.
    let mut names: HashMap<u32, String> = HashMap::new();
    let failure = loop {
        match reader.next_block() {
            Ok(Some(Block::System(batch))) => context.add(batch),
            Ok(Some(Block::Threads { .. })) => {
                names.extend(reader.thread_names().map(|(t, n)| (t, n.as_str().to_owned())));
            }
            Ok(Some(_)) => {}
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    context.finish();
    if context.counts.samples == 0 {
        let why = match reader.system_status().map(|s| &s.samples) {
            Some(Availability::Unavailable(why)) => format!("CPU samples were unavailable: {why}"),
            _ => "it has no CPU samples (record with TraceConfig::cpu_samples)".to_string(),
        };
        if let Some(e) = failure {
            return Err(anyhow::Error::new(e.with_path(input)).context(format!("{}: {why}", input.display())));
        }
        bail!("{}: {why}", input.display());
    }
    if let (Ok(a), Ok(b)) = (std::fs::canonicalize(input), std::fs::canonicalize(output)) {
        if a == b {
            bail!("{}: the output is the input file", output.display());
        }
    }
    let scopes = if args.scopes {
        let (scopes, failed) = SampleScopes::read(progress::open(input, "reading the scopes")?, &context);
        if let Some(e) = failed {
            eprintln!(
                "warning: {:#}",
                anyhow::Error::new(e.with_path(input)).context("reading the scopes stopped early")
            );
        }
        Some(scopes)
    } else {
        None
    };
    let mut symbolizer = Symbolizer::new();
    let lines =
        sample_stacks::fold_samples(&context, &mut symbolizer, scopes.as_ref(), |t| names.get(&t).cloned());
    crate::common::warn_symbols(&symbolizer);
    let f = File::create(output).with_context(|| format!("{}: cannot create", output.display()))?;
    let title = format!("{} (CPU samples)", input.file_name().unwrap_or(input.as_os_str()).to_string_lossy());
    let written = if args.folded {
        sample_stacks::write_lines(&lines, std::io::BufWriter::new(&f))
    } else {
        sample_stacks::write_flamegraph(&lines, std::io::BufWriter::new(&f), &title)
    };
    written.with_context(|| format!("writing {}", output.display()))?;
    writeln!(
        stderr,
        "{}: {} CPU samples in {} stacks",
        output.display(),
        format_count(context.counts.samples),
        format_count(lines.len() as u64)
    )?;
    match failure {
        None => Ok(()),
        Some(e) => Err(anyhow::Error::new(e.with_path(input)).context(format!(
            "reading {} stopped early (the samples before the damage are drawn)",
            input.display()
        ))),
    }
}

/// Draws the trace file `input` as an SVG flame graph in the file `output` (created or truncated).
pub fn to_file(input: &Path, output: &Path) -> anyhow::Result<Drawn> {
    let started = Instant::now();
    let reader = progress::open(input, "drawing")?;
    if let (Ok(a), Ok(b)) = (std::fs::canonicalize(input), std::fs::canonicalize(output)) {
        if a == b {
            bail!("{}: the output is the input file", output.display());
        }
    }
    let f = File::create(output).with_context(|| format!("{}: cannot create", output.display()))?;
    let title =
        format!("{} (self time, ns)", input.file_name().unwrap_or(input.as_os_str()).to_string_lossy());
    match folded::write_flamegraph(reader, &f, &title) {
        Ok(summary) => {
            let bytes = f.metadata().map(|m| m.len()).unwrap_or(0);
            Ok(Drawn {
                bytes,
                events: summary.events,
                truncated: summary.truncated,
                names_cut: summary.names_cut,
                time: started.elapsed(),
            })
        }
        Err(folded::Error::Read { exported, source, .. }) => {
            let drawn = f.metadata().map(|m| m.len()).unwrap_or(0) > 0;
            let shows = if drawn {
                format!(
                    "{} shows the {} events of the {} chunks before the damage",
                    output.display(),
                    format_count(exported.events),
                    format_count(exported.chunks)
                )
            } else {
                format!("no stack was complete before the damage, so {} is empty", output.display())
            };
            Err(anyhow::Error::new(source.with_path(input))
                .context(format!("drawing {} stopped early ({shows})", input.display())))
        }
        Err(e @ folded::Error::NothingToDraw { .. }) => Err(anyhow::Error::new(e).context(format!(
            "{}: no flame graph ({} is empty)",
            input.display(),
            output.display()
        ))),
        Err(e) => Err(anyhow::Error::new(e).context(format!("writing {}", output.display()))),
    }
}

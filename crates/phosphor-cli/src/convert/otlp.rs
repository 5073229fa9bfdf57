//! `phosphor convert FILE… --to otlp|otlp-json`: OpenTelemetry spans (see `phosphor_otlp::convert`
//! and docs/OTLP.md). `--to otlp` writes one protobuf `ExportTraceServiceRequest` (several files:
//! one `ResourceSpans` per file and batch, each under its own process's resource); `--to
//! otlp-json` writes JSON Lines, a request per line. A damaged file keeps the spans made before
//! the damage, the next files are still converted, and the error names the file and the offset.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use phosphor_export::format_count;
use phosphor_otlp::assemble::AssembleOptions;
use phosphor_otlp::convert::{convert, ConvertOptions, Converted, Encoding, DEFAULT_MAX_SPANS};
use phosphor_otlp::select::Selection;

use super::{refuse_overwrite, ConvertArgs, Format};
use crate::info::format_bytes;
use crate::progress;

/// Parses a duration: a number with a unit (`ns`, `us`, `ms`, `s`), or bare nanoseconds.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "" | "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        u => return Err(format!("unknown unit {u:?} (use ns, us, ms or s)")),
    };
    let v: f64 = number.parse().map_err(|_| format!("{text:?} is not a duration such as 1ms"))?;
    let ns = v * scale;
    if !ns.is_finite() || ns >= u64::MAX as f64 {
        return Err(format!("{text:?} is too long"));
    }
    Ok(ns.round() as u64)
}

/// Whether any OTLP-only flag is set.
pub fn flags_set(args: &ConvertArgs) -> bool {
    args.min_duration.is_some()
        || args.roots_only
        || !args.paths.is_empty()
        || args.slowest.is_some()
        || args.service_name.is_some()
        || args.max_spans.is_some()
}

/// Converts `files` to OTLP, to `stdout` or to `-o OUT` (then a summary per file to `stderr`).
pub fn run(
    args: &ConvertArgs,
    files: &[PathBuf],
    stdout: impl Write,
    stderr: &mut impl Write,
) -> anyhow::Result<()> {
    if args.compress {
        bail!("--compress applies to --to perfetto only");
    }
    let options = ConvertOptions {
        assemble: AssembleOptions {
            selection: Selection {
                min_duration_ns: args.min_duration,
                roots_only: args.roots_only,
                paths: args.paths.clone(),
                slowest_roots: args.slowest,
            },
            hold_ns: None,
        },
        service_name: args.service_name.clone(),
        max_spans: args.max_spans.map_or(DEFAULT_MAX_SPANS, |n| usize::try_from(n).unwrap_or(usize::MAX)),
        encoding: if args.to == Format::OtlpJson { Encoding::Json } else { Encoding::Protobuf },
    };
    let (mut out, out_name): (Box<dyn Write>, String) = match &args.output {
        None => (Box::new(BufWriter::new(stdout)), "stdout".to_owned()),
        Some(path) => {
            for f in files {
                refuse_overwrite(f, path)?;
            }
            // The first header is read before the output is created: a file that is not a trace
            // leaves OUT alone.
            drop(progress::open_header(&files[0], "converting")?);
            let f = File::create(path).with_context(|| format!("{}: cannot create", path.display()))?;
            (Box::new(BufWriter::new(f)), path.display().to_string())
        }
    };
    let mut first_damage: Option<anyhow::Error> = None;
    for file in files {
        let c = one(file, &options, &mut out, &out_name)?;
        if args.output.is_some() {
            summary(stderr, file, &c)?;
        }
        if let Some(damage) = c.damage {
            let e = anyhow::Error::new(damage.with_path(file)).context(format!(
                "converting {} stopped early ({out_name} holds the {} spans made before the damage)",
                file.display(),
                format_count(c.spans)
            ));
            if files.len() > 1 {
                writeln!(stderr, "error: {e:#}")?;
            }
            first_damage.get_or_insert(e);
        }
    }
    out.flush().with_context(|| format!("writing {out_name}"))?;
    match first_damage {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn one(
    file: &Path,
    options: &ConvertOptions,
    out: &mut impl Write,
    out_name: &str,
) -> anyhow::Result<Converted> {
    // One reading: the trace model holds each thread's slices until their tree is known.
    let mut reader = progress::open(file, "converting")?;
    convert(&mut reader, options, out).with_context(|| format!("writing {out_name}"))
}

fn summary(stderr: &mut impl Write, file: &Path, c: &Converted) -> std::io::Result<()> {
    let s = &c.stats;
    writeln!(
        stderr,
        "{}: {} spans written ({} made, {} left out by the selection), {} span events, {}",
        file.display(),
        format_count(c.spans),
        format_count(s.spans),
        format_count(s.spans_unselected),
        format_count(s.span_events),
        format_bytes(c.bytes)
    )?;
    let lost = [
        (s.events_outside_spans, "logs/instants outside every span (dropped)"),
        (s.evicted_roots, "spans made final before their parent was known (a thread held too many slices; they are roots, or a late scope enclosing them is not their parent)"),
        (s.unclosed, "scopes or async slices never closed (no span)"),
        (s.unmatched_ends, "ends without a begin"),
        (s.contexts_unapplied, "trace contexts no scope or async slice took (their spans keep the file's trace ids)"),
        (s.span_events_dropped, "logs/instants dropped: the span events held passed 64 MiB"),
    ];
    for (n, what) in lost {
        if n > 0 {
            writeln!(stderr, "note: {}: {what}", format_count(n))?;
        }
    }
    Ok(())
}

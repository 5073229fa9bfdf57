//! `phosphor convert FILE… --to otlp|otlp-json`: OpenTelemetry spans (see `phosphor_otlp::convert`
//! and docs/OTLP.md), in requests of at most `--max-spans` spans and `--max-request-bytes` bytes.
//! To stdout or a file, `--to otlp` writes one protobuf `ExportTraceServiceRequest` (several files:
//! one `ResourceSpans` per file and batch, each under its own process's resource), for tools that
//! read a file; `--to otlp-json` writes JSON Lines, a request per line. For a collector, `-o DIR/`
//! (a path ending in `/`, or a folder) writes a folder of files that are each one request (`curl
//! --data-binary @FILE` each), and `--post URL` posts them (`out.rs`). A damaged file keeps the
//! spans made before the damage, the next files are still converted, and the error names the
//! file and the offset.

mod out;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use clap::Args;
use phosphor_export::format_count;
use phosphor_otlp::assemble::AssembleOptions;
use phosphor_otlp::convert::{
    convert, convert_to, ConvertOptions, Converted, Encoding, Requests, DEFAULT_MAX_BYTES, DEFAULT_MAX_SPANS,
};
use phosphor_otlp::ids::GroupRoots;
use phosphor_otlp::select::Selection;

use super::{refuse_overwrite, ConvertArgs, Format};
use crate::common::{format_bytes, parse_bytes, parse_duration, parse_ratio, sampling, tail_rules};
use crate::progress;

/// `convert`'s OTLP options beyond the selection (flattened into `ConvertArgs`).
#[derive(Debug, Default, Args)]
pub struct OtlpArgs {
    /// OTLP only: at most this many bytes of protobuf per request (`512KiB`, `1MiB`, or bytes;
    /// default 1 MiB, well under a collector's limit).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub max_request_bytes: Option<u64>,
    /// OTLP only: post the requests to this OTLP/HTTP endpoint (`http://localhost:4318`; retried
    /// on 429/5xx), print what was exported, rejected and failed, and exit 2 unless all was.
    #[arg(long, value_name = "URL", conflicts_with = "output")]
    pub post: Option<String>,
    /// With --post: a file of headers to send (`NAME=VALUE` or `NAME: VALUE` a line, `#`
    /// comments: authentication, tenant), so secrets stay out of `ps`;
    /// OTEL_EXPORTER_OTLP_HEADERS is read too.
    #[arg(long, value_name = "FILE", requires = "post")]
    pub headers_file: Option<PathBuf>,
    /// OTLP only: which roots share a trace: `none` (a trace per root), `process` (one per file),
    /// `window:1s` (one per second of start times).
    #[arg(long, visible_alias = "otlp-group-roots", value_name = "GROUPING")]
    pub group_roots: Option<GroupRoots>,
    /// OTLP only: head sampling: keep this share (0 to 1) of the traces, decided on their trace
    /// ids (a caller's trace follows its `traceparent`'s sampled flag).
    #[arg(long, value_name = "RATIO", value_parser = parse_ratio)]
    pub sample: Option<f64>,
    /// OTLP only: also export the spans of callers whose `traceparent` says "not sampled".
    #[arg(long)]
    pub export_unsampled_callers: bool,
    /// OTLP only: tail rule: keep a trace any of whose spans lasts at least this long.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub keep_slower_than: Option<u64>,
    /// OTLP only: tail rule: keep a trace holding an error-level log.
    #[arg(long)]
    pub keep_errors: bool,
    /// OTLP only: tail rule: of the other traces, keep the N slowest per root name and minute.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub keep_slowest_per_minute: Option<u64>,
}

impl OtlpArgs {
    fn any(&self) -> bool {
        self.max_request_bytes.is_some()
            || self.post.is_some()
            || self.headers_file.is_some()
            || self.group_roots.is_some()
            || self.sample.is_some()
            || self.export_unsampled_callers
            || self.keep_slower_than.is_some()
            || self.keep_errors
            || self.keep_slowest_per_minute.is_some()
    }
}

/// Whether any OTLP-only flag is set.
pub fn flags_set(args: &ConvertArgs) -> bool {
    args.otlp.any()
        || args.min_duration.is_some()
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
                sampling: sampling(args.otlp.sample, args.otlp.export_unsampled_callers),
                tail: tail_rules(
                    args.otlp.keep_slower_than,
                    args.otlp.keep_errors,
                    args.otlp.keep_slowest_per_minute,
                ),
            },
            hold_ns: None,
            group_roots: args.otlp.group_roots.unwrap_or_default(),
        },
        service_name: args.service_name.clone(),
        max_spans: args.max_spans.map_or(DEFAULT_MAX_SPANS, |n| usize::try_from(n).unwrap_or(usize::MAX)),
        max_bytes: args
            .otlp
            .max_request_bytes
            .map_or(DEFAULT_MAX_BYTES, |n| usize::try_from(n).unwrap_or(usize::MAX)),
        encoding: if args.to == Format::OtlpJson { Encoding::Json } else { Encoding::Protobuf },
    };
    if let Some(url) = &args.otlp.post {
        return post(url, post_headers(&args.otlp)?, files, &options, stderr);
    }
    if let Some(dir) = args.output.as_deref().filter(|p| is_folder(p)) {
        return folder(dir, files, &options, stderr);
    }
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

/// `-o OUT` names a folder: it ends with `/` or is one.
fn is_folder(path: &Path) -> bool {
    path.as_os_str().to_string_lossy().ends_with(std::path::MAIN_SEPARATOR) || path.is_dir()
}

/// Converts `files` to requests handed to `out` one by one, a summary per file to `stderr`; the
/// first damage is the error, after every file is converted.
fn each(
    files: &[PathBuf],
    options: &ConvertOptions,
    out: &mut dyn Requests,
    out_name: &str,
    stderr: &mut impl Write,
) -> anyhow::Result<Option<anyhow::Error>> {
    let mut first_damage = None;
    for file in files {
        let mut reader = progress::open(file, "converting")?;
        let c = convert_to(&mut reader, options, out).with_context(|| format!("writing {out_name}"))?;
        summary(stderr, file, &c)?;
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
    Ok(first_damage)
}

/// `-o DIR/`: a file per request.
fn folder(
    dir: &Path,
    files: &[PathBuf],
    options: &ConvertOptions,
    stderr: &mut impl Write,
) -> anyhow::Result<()> {
    drop(progress::open_header(&files[0], "converting")?);
    let mut out = out::Folder::create(dir, options.encoding == Encoding::Json)?;
    let damage = each(files, options, &mut out, &dir.display().to_string(), stderr)?;
    writeln!(stderr, "{}: {} requests, a file each", dir.display(), format_count(out.files()))?;
    damage.map_or(Ok(()), Err)
}

/// The headers `--post` sends: OTEL_EXPORTER_OTLP_HEADERS's (or its `_TRACES_` form's), then
/// the `--headers-file`'s.
fn post_headers(args: &OtlpArgs) -> anyhow::Result<Vec<(String, String)>> {
    let mut headers = phosphor_otlp::export::OtelEnv::read().context("--post")?.export.headers;
    if let Some(path) = &args.headers_file {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
        let more = phosphor_otlp::export::parse_header_lines(&text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        headers.extend(more);
    }
    Ok(headers)
}

/// `--post URL`: every request posted with `headers`; exit 2 unless every span was exported.
fn post(
    url: &str,
    headers: Vec<(String, String)>,
    files: &[PathBuf],
    options: &ConvertOptions,
    stderr: &mut impl Write,
) -> anyhow::Result<()> {
    if options.encoding == Encoding::Json {
        bail!("--post sends protobuf: use --to otlp");
    }
    drop(progress::open_header(&files[0], "converting")?);
    let mut out = out::Post::start(url, headers)?;
    let damage = each(files, options, &mut out, url, stderr)?;
    let s = out.finish();
    writeln!(
        stderr,
        "{url}: {} spans exported, {} rejected, {} failed, {} dropped ({} requests posted, {} retries)",
        format_count(s.spans_exported),
        format_count(s.spans_rejected),
        format_count(s.spans_failed),
        format_count(s.spans_dropped),
        format_count(s.requests),
        format_count(s.retries)
    )?;
    if let Some(e) = damage {
        return Err(e);
    }
    if s.spans_rejected + s.spans_failed + s.spans_dropped > 0 {
        bail!(
            "{url}: not every span was exported{}",
            s.last_error.map(|e| format!(" (last error: {e})")).unwrap_or_default()
        );
    }
    Ok(())
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
    if s.spans_sampled_out + s.spans_tail_dropped > 0 {
        writeln!(
            stderr,
            "sampling: {} spans left out by head sampling (ratio, unsampled callers), {} by the tail rules",
            format_count(s.spans_sampled_out),
            format_count(s.spans_tail_dropped)
        )?;
    }
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

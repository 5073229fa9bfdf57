//! Helpers the commands share, so that no command module imports another: the trace files a
//! command's paths name and their places on one timeline, a file's system context, the notes and
//! formats of their output, and the parsers of the flags several commands take.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use phosphor::format::file::Header;
use phosphor_export::format_count;
use phosphor_export::symbolize::Symbolizer;
use phosphor_export::system::SystemContext;
use phosphor_export::timeline::{self, Timeline};
use phosphor_otlp::select::{Sampling, TailRules};

use crate::progress;

/// The `.phos` files of `path`: itself, or those in it (sorted).
pub fn traces_of(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).with_context(|| format!("{}", path.display()))? {
        let p = entry.with_context(|| format!("{}", path.display()))?.path();
        if p.extension().is_some_and(|e| e == "phos") && p.is_file() {
            files.push(p);
        }
    }
    files.sort();
    if files.is_empty() {
        bail!("{}: no .phos trace files in this folder", path.display());
    }
    Ok(files)
}

/// The trace files that `paths` name: each file itself, each folder's `.phos` files sorted by
/// name (listed on `stderr`).
pub fn inputs(paths: &[PathBuf], stderr: &mut impl Write) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        let found = traces_of(path)?;
        if path.is_dir() {
            let names: Vec<String> = found
                .iter()
                .map(|f| f.file_name().unwrap_or_default().to_string_lossy().into_owned())
                .collect();
            writeln!(
                stderr,
                "{}: taking {} trace file(s): {}",
                path.display(),
                found.len(),
                names.join(", ")
            )?;
        }
        files.extend(found);
    }
    Ok(files)
}

/// The headers of `files` (each read alone, then closed) and their places on one timeline; the
/// skew warning, if any, goes to `stderr`.
pub fn align_files(files: &[PathBuf], stderr: &mut impl Write) -> anyhow::Result<(Vec<Header>, Timeline)> {
    let headers = files
        .iter()
        .map(|f| Ok(progress::open_header(f, "reading")?.header().clone()))
        .collect::<anyhow::Result<Vec<Header>>>()?;
    let timeline = timeline::align(&headers);
    if let Some(w) = &timeline.warning {
        let machine = |i: usize| format!("{} ({})", files[i].display(), timeline::machine_of(&headers[i]));
        writeln!(stderr, "warning: {}", w.describe(machine))?;
    }
    Ok((headers, timeline))
}

/// The system context of a regular file (format 1.6), read in a first pass over its system
/// blocks, its samples' leaves symbolized (what cannot be is said on stderr, once per object).
/// `None` for a pipe (read once, so scopes get no system figures) or a file without system blocks.
pub fn system_context(path: &std::path::Path) -> anyhow::Result<Option<SystemContext>> {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return Ok(None);
    }
    let mut context = SystemContext::read(progress::open(path, "reading the system context")?)?;
    if context.counts.blocks == 0 {
        return Ok(None);
    }
    let mut symbolizer = Symbolizer::new();
    context.name_leaves(&mut symbolizer);
    warn_symbols(&symbolizer);
    Ok(Some(context))
}

/// Says on stderr which objects could not be symbolized.
pub fn warn_symbols(symbolizer: &Symbolizer) {
    for w in symbolizer.warnings() {
        eprintln!("warning: symbols: {w}");
    }
}

/// Says what stacks lost to the depth cap (`truncated` slices) and the name limit (`names_cut`
/// names), each if any; `done` is what happened to them ("folded", "drawn").
pub fn note_cuts(stderr: &mut impl Write, truncated: u32, names_cut: u32, done: &str) -> io::Result<()> {
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

/// A byte count with a binary unit, `26.3 MiB`.
pub fn format_bytes(n: u64) -> String {
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut v = n as f64 / 1024.0;
    for unit in ["KiB", "MiB", "GiB"] {
        if v < 1024.0 {
            return format!("{v:.1} {unit}");
        }
        v /= 1024.0;
    }
    format!("{v:.1} TiB")
}

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

/// Parses a share from 0 to 1.
pub fn parse_ratio(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(format!("{text:?} is not a ratio from 0 to 1")),
    }
}

/// Parses a size: bytes, or a number with `KiB`, `MiB` (or `K`, `M`).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        u => return Err(format!("unknown unit {u:?} (use KiB or MiB)")),
    };
    match number.parse::<u64>().ok().and_then(|n| n.checked_mul(scale)) {
        Some(n) if n >= 1 => Ok(n),
        _ => Err(format!("{text:?} is not a size such as 1MiB")),
    }
}

/// Head sampling from the flags (convert's and record's).
pub fn sampling(ratio: Option<f64>, export_unsampled_callers: bool) -> Sampling {
    Sampling { ratio, export_unsampled_callers }
}

/// Tail rules from the flags (convert's and record's).
pub fn tail_rules(slower_than: Option<u64>, errors: bool, slowest_per_minute: Option<u64>) -> TailRules {
    TailRules {
        slower_than_ns: slower_than,
        errors,
        slowest_per_minute: slowest_per_minute.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
    }
}

/// What `cargo install` builds a `phosphor` with SQL (`phosphor sql`, `convert --to parquet`).
#[cfg(not(feature = "sql"))]
pub const SQL_INSTALL: &str = "cargo install --path crates/phosphor-cli --features sql";

/// `sources` on one timeline as `convert` puts several files on one (`phosphor_sql::align`),
/// saying so when some are aligned by their wall clocks.
#[cfg(feature = "sql")]
pub fn aligned(
    mut sources: Vec<phosphor_sql::TraceSource>,
    stderr: &mut impl Write,
) -> anyhow::Result<Vec<phosphor_sql::TraceSource>> {
    if sources.len() > 1 {
        if let Some(warning) = phosphor_sql::align(&mut sources)? {
            writeln!(stderr, "warning: {warning}")?;
        }
    }
    Ok(sources)
}

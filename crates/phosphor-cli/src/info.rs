//! `phosphor info FILE`: what a trace file holds, read with the streaming
//! [`Reader`](phosphor::format::file::Reader) in constant memory.
//!
//! One pass over the blocks collects a [`Summary`]: per thread, its chunks, its events (decoded,
//! so every record is checked, and attributed through thread-switch markers); per writer stream
//! (a thread's own tenant, or a pool tenant) the highest chunk sequence number, from which the lost
//! chunks follow; the span of the event timestamps; the
//! trailer. The summary is printed whether or not the pass reached the trailer, so a truncated or
//! corrupt file shows everything before the damage, and then the error names the file, the byte
//! offset and the problem. Format 1.6's system blocks are counted (switches, samples, heap
//! totals, mappings) and their last status shown (`context switches unavailable: why`). Format
//! 1.7's compressed groups: the codecs seen and the ratio of the decoded bytes to the stored ones.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use phosphor::format::file::{self, Block, Callsite, ClockKind, Reader};
use phosphor::format::system::SampleKind;
use phosphor_export::{format_count, format_ns, shown_name, ChunkLosses};

use crate::common::format_bytes;

/// Options of `phosphor info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// The trace file (written by `Trace::save` or `phosphor demo`).
    file: PathBuf,
    /// Also list every callsite: id, category, name, phase and source location. A callsite whose
    /// events carry their own name (`dyn`) shows as `dynamic (EXPRESSION)`: its name is only the
    /// source text of the expression that names each event.
    #[arg(long)]
    callsites: bool,
}

/// What one thread contributed, as far as the file was read.
#[derive(Debug, Default)]
struct ThreadSummary {
    /// Chunks whose extents name this thread.
    chunks: u64,
    /// Events this thread recorded (in its own chunks or, in a pool, in shared ones).
    events: u64,
}

/// Everything gathered by one pass over the file.
#[derive(Debug, Default)]
struct Summary {
    threads: BTreeMap<u32, ThreadSummary>,
    /// Chunks seen and lost per writer stream (a thread's own tenant, or a pool tenant).
    losses: ChunkLosses,
    chunks: u64,
    events: u64,
    /// Smallest and largest event timestamp (raw ticks).
    span: Option<(u64, u64)>,
    /// Chunks whose extents announce a different number of events than their records decode to.
    miscounted_chunks: u64,
    /// The first such chunk: its block's offset, the count its extents announce, the count found.
    first_miscounted: Option<(u64, u32, u64)>,
    /// Bytes from the start of the file to the end of the last block read without error.
    whole: u64,
    /// Format 1.6: what the system blocks held (their status is the reader's).
    system: SystemCounts,
}

/// What a file's system blocks held.
#[derive(Debug, Default)]
struct SystemCounts {
    blocks: u64,
    switches: u64,
    cpu_samples: u64,
    alloc_samples: u64,
    heap: u64,
    mappings: u64,
    /// Distinct threads with switches or samples.
    threads: std::collections::BTreeSet<u32>,
}

impl Summary {
    /// Reads every block left in `reader`; stops at the first error, keeping what it gathered.
    /// `whole` ends up at the end of the last block read without error.
    fn read<R: Read>(&mut self, reader: &mut Reader<R>) -> Result<(), file::Error> {
        loop {
            self.whole = reader.offset();
            let chunk = match reader.next_block()? {
                None => return Ok(()),
                Some(Block::Chunk(chunk)) => chunk,
                Some(Block::System(batch)) => {
                    let c = &mut self.system;
                    c.blocks += 1;
                    c.switches += batch.switches.len() as u64;
                    let cpu = batch.samples.iter().filter(|s| s.kind == SampleKind::Cpu).count() as u64;
                    c.cpu_samples += cpu;
                    c.alloc_samples += batch.samples.len() as u64 - cpu;
                    c.heap += batch.heap.len() as u64;
                    c.mappings += batch.mappings.len() as u64;
                    c.threads.extend(
                        batch.switches.iter().map(|w| w.tid).chain(batch.samples.iter().map(|s| s.tid)),
                    );
                    continue;
                }
                Some(_) => continue,
            };
            let x = chunk.extents;
            self.chunks += 1;
            self.threads.entry(x.tid).or_default().chunks += 1;
            self.losses.add(&x);
            if x.event_count > 0 {
                let (lo, hi) = self.span.unwrap_or((x.first_ts, x.last_ts));
                self.span = Some((lo.min(x.first_ts), hi.max(x.last_ts)));
            }
            let mut decoded = 0u64;
            for event in chunk.events() {
                let event = event?;
                decoded += 1;
                self.threads.entry(event.tid).or_default().events += 1;
            }
            self.events += decoded;
            if decoded != u64::from(x.event_count) {
                self.miscounted_chunks += 1;
                // The first one's offset (its block's start), so a user can look at the bytes.
                self.first_miscounted.get_or_insert((chunk.offset, x.event_count, decoded));
            }
        }
    }
}

/// Runs `phosphor info` and writes its report to `out`.
pub fn run(args: &InfoArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let path = &args.file;
    let f = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let size = f.metadata().with_context(|| format!("{}: cannot read its size", path.display()))?.len();
    let mut reader = Reader::new(BufReader::new(f)).map_err(|e| e.with_path(path))?.read_ahead();
    let mut summary = Summary::default();
    let read = summary.read(&mut reader);
    print(&reader, &summary, size, args, read.is_ok(), out)?;
    out.flush()?;
    read.map_err(|e| e.with_path(path))?;
    if summary.miscounted_chunks > 0 {
        anyhow::bail!(
            "{}: {} chunk(s) announce a different number of events in their extents than their records hold",
            path.display(),
            summary.miscounted_chunks
        );
    }
    Ok(())
}

/// Writes the report: its steps are the file's header, its threads, its totals (callsites,
/// chunks, events, time span), its trailer, its system blocks, and its size and compression.
fn print<R: Read>(
    reader: &Reader<R>,
    s: &Summary,
    size: u64,
    args: &InfoArgs,
    complete: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    print_header(reader, s, size, args, complete, out)?;
    print_threads(reader, s, out)?;
    print_totals(reader, s, args, out)?;
    print_trailer(reader, s, out)?;
    print_system(reader, s, out)?;
    print_size(reader, s, size, complete, out)
}

/// The file's line, and its header: the clock, the process, the host.
fn print_header<R: Read>(
    reader: &Reader<R>,
    s: &Summary,
    size: u64,
    args: &InfoArgs,
    complete: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let header = reader.header();
    let clock = &header.clock;
    let (major, minor) = reader.version();
    writeln!(out, "{}: Phosphor trace file, format version {major}.{minor}", args.file.display())?;
    if !complete {
        writeln!(
            out,
            "  INCOMPLETE: read up to byte {} of {}; what follows is the part before it",
            s.whole, size
        )?;
    }
    writeln!(out)?;

    writeln!(out, "header")?;
    let clock_name = match clock.kind {
        ClockKind::Tsc => "CPU counter (TSC or cntvct_el0)",
        ClockKind::Monotonic => "CLOCK_MONOTONIC",
        ClockKind::Realtime => "CLOCK_REALTIME",
    };
    let rate = match clock.kind {
        // A slow counter (aarch64's at 24 MHz) in MHz: its tick, the resolution, shows beside it.
        ClockKind::Tsc if clock.ns_per_tick > 1.0 => format!(" ({:.3} MHz)", 1e3 / clock.ns_per_tick),
        ClockKind::Tsc if clock.ns_per_tick > 0.0 => format!(" ({:.3} GHz)", 1.0 / clock.ns_per_tick),
        _ => String::new(),
    };
    writeln!(out, "  clock       {clock_name}, {:.6} ns per tick{rate}", clock.ns_per_tick)?;
    if let Some(reason) = &clock.fallback_reason {
        writeln!(out, "              (the CPU counter was refused: {reason})")?;
    }
    writeln!(
        out,
        "  origin      {} (wall clock at tick {})",
        format_utc(clock.origin_wall_ns),
        clock.origin_ticks
    )?;
    writeln!(out, "  process     {} (pid {})", display_name(&header.process_name), header.pid)?;
    // Format 1.5: what places the file among others on one timeline (`timeline::align`).
    match (&header.host_name, &header.boot_id) {
        (None, None) => writeln!(out, "  host        unknown (no boot id: written before format 1.5)")?,
        (host, boot) => writeln!(
            out,
            "  host        {} (boot {})",
            host.as_deref().map_or("unknown", display_name),
            boot.as_ref().map_or("unknown".into(), file::format_boot_id)
        )?,
    }
    writeln!(out)?;

    Ok(())
}

/// The threads' table (chunks, events and lost chunks of each), and the pool tenants'.
fn print_threads<R: Read>(reader: &Reader<R>, s: &Summary, out: &mut impl Write) -> anyhow::Result<()> {
    writeln!(out, "threads ({})", s.threads.len())?;
    // Names are borrowed from the reader, which holds each once, however many threads share it.
    let name = |tid: u32| display_name(reader.thread_name(tid).map_or("", |n| n.as_str()));
    let name_width = column_width(s.threads.keys().map(|&t| name(t))).max(4);
    writeln!(
        out,
        "  {:>8}  {}  {:>8}  {:>12}  {:>11}",
        "tid",
        Padded("name", name_width),
        "chunks",
        "events",
        "lost chunks"
    )?;
    for (tid, t) in &s.threads {
        writeln!(
            out,
            "  {tid:>8}  {}  {:>8}  {:>12}  {:>11}",
            // Cut as the exporters cut it: one name of megabytes may name every thread.
            Padded(&shown_name(name(*tid)), name_width),
            format_count(t.chunks),
            format_count(t.events),
            format_count(s.losses.lost((0, *tid)))
        )?;
    }
    let pool: Vec<_> = s.losses.streams().filter(|((k, _), _, _)| *k != 0).collect();
    if !pool.is_empty() {
        // Pool tenants are shared, so their lost chunks belong to no one thread.
        writeln!(out, "pool tenants ({})", pool.len())?;
        writeln!(out, "  {:>8}  {:>8}  {:>11}", "tenant", "chunks", "lost chunks")?;
        for ((k, _), chunks, lost) in pool {
            writeln!(out, "  {k:>8}  {:>8}  {:>11}", format_count(chunks), format_count(lost))?;
        }
    }
    writeln!(out)?;

    Ok(())
}

/// The callsites (listed with `--callsites`), chunks, events and the time span of the events.
fn print_totals<R: Read>(
    reader: &Reader<R>,
    s: &Summary,
    args: &InfoArgs,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let clock = &reader.header().clock;
    writeln!(out, "callsites   {}", format_count(reader.callsites().len() as u64))?;
    if args.callsites {
        // By id: the ids alone are sorted, and each callsite is looked up as it is printed, so
        // the listing costs 4 bytes per callsite beyond what the reader holds.
        let mut ids: Vec<u32> = reader.callsites().map(|c| c.id).collect();
        ids.sort_unstable();
        let cat_w = column_width(reader.callsites().map(|c| c.category.as_str()));
        let name_w = reader.callsites().map(|c| name_cell(&c).chars().take(MAX_COLUMN).count()).max();
        let name_w = name_w.unwrap_or(0);
        for c in ids.into_iter().filter_map(|id| reader.callsite(id)) {
            writeln!(
                out,
                "  {:>6}  {}  {}  {:<11}  {}:{}",
                c.id,
                Padded(&shown_name(&c.category), cat_w),
                Padded(&name_cell(&c), name_w),
                c.phase.as_str(),
                c.file,
                c.line
            )?;
        }
    }
    writeln!(out, "chunks      {}", format_count(s.chunks))?;
    writeln!(out, "events      {}", format_count(s.events))?;
    match s.span {
        Some((first, last)) => {
            writeln!(out, "time span   {}", format_ns(clock.ticks_to_ns(last - first)))?;
            writeln!(out, "  first     {}", format_utc(clock.to_wall_ns(first)))?;
            writeln!(out, "  last      {}", format_utc(clock.to_wall_ns(last)))?;
        }
        None => writeln!(out, "time span   none (no events)")?,
    }
    Ok(())
}

/// The trailer's figures: drops by reason, events recorded, markers, the buffer's chunks.
fn print_trailer<R: Read>(reader: &Reader<R>, s: &Summary, out: &mut impl Write) -> anyhow::Result<()> {
    match reader.trailer() {
        Some(t) => {
            let d = &t.dropped;
            let mut reasons: Vec<(&str, u64)> = vec![
                ("buffer_full", d.buffer_full),
                ("no_chunk", d.no_chunk),
                ("contended", d.contended),
                ("stopping", d.stopping),
                ("reentrant", d.reentrant),
                ("thread_exited", d.thread_exited),
                ("overwritten", d.overwritten),
                ("unwound", d.unwound),
            ];
            if d.other > 0 {
                reasons.push(("other (reasons newer than this reader)", d.other));
            }
            let reasons: Vec<String> =
                reasons.iter().map(|(r, n)| format!("{r} {}", format_count(*n))).collect();
            writeln!(out, "dropped     {} ({})", format_count(d.total()), reasons.join(", "))?;
            writeln!(
                out,
                "recorded    {} (trailer){}",
                format_count(t.recorded),
                if t.recorded == s.events { "" } else { ": DIFFERS from the events in the file" }
            )?;
            if t.saturation_markers > 0 {
                writeln!(
                    out,
                    "markers     {} saturation markers among the recorded; emitted {}",
                    format_count(t.saturation_markers),
                    format_count(t.emitted())
                )?;
            }
            writeln!(
                out,
                "buffer      {} chunks, {} loaned, {} overwritten{}",
                format_count(t.chunks_total),
                format_count(t.chunks_loaned),
                format_count(t.chunks_overwritten),
                if t.buffer_exhausted { ", ran out (fixed)" } else { "" }
            )?;
        }
        None => writeln!(out, "dropped     unknown: no trailer was read")?,
    }
    Ok(())
}

/// Format 1.6: the system blocks' status and what they held.
fn print_system<R: Read>(reader: &Reader<R>, s: &Summary, out: &mut impl Write) -> anyhow::Result<()> {
    let c = &s.system;
    match reader.system_status() {
        Some(status) => writeln!(out, "system      {}", phosphor_export::describe_status(status))?,
        None if c.blocks > 0 => writeln!(out, "system      no status recorded")?,
        None => {
            writeln!(out, "system      none (no system blocks: not asked for, or written before format 1.6)")?
        }
    }
    if c.blocks > 0 {
        writeln!(
            out,
            "            {} switches, {} CPU samples, {} allocation samples on {} threads; {} heap totals, {} mappings; in {} blocks",
            format_count(c.switches),
            format_count(c.cpu_samples),
            format_count(c.alloc_samples),
            format_count(c.threads.len() as u64),
            format_count(c.heap),
            format_count(c.mappings),
            format_count(c.blocks)
        )?;
    }
    Ok(())
}

/// The file's size (of the part read, if incomplete), its compression, and the first chunk whose
/// extents miscount its events.
fn print_size<R: Read>(
    reader: &Reader<R>,
    s: &Summary,
    size: u64,
    complete: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    // Of an incomplete file, only the part before the damage holds the events counted.
    let read = if complete { size } else { s.whole };
    let per_event = if s.events == 0 {
        String::new()
    } else {
        format!(", {:.1} bytes per event", read as f64 / s.events as f64)
    };
    let part = if complete { String::new() } else { format!(" ({} of it read)", format_bytes(read)) };
    writeln!(out, "file size   {}{part}{per_event}", format_bytes(size))?;
    // Format 1.7: of the part read, what it decodes to.
    let (stored, decoded) = (reader.stored_bytes(), reader.decoded_bytes());
    if reader.codecs().is_empty() {
        writeln!(out, "compression none")?;
    } else {
        let codecs: Vec<String> = reader.codecs().iter().map(ToString::to_string).collect();
        writeln!(
            out,
            "compression {}, ratio {:.2} ({} decoded from {}){}",
            codecs.join(", "),
            decoded as f64 / stored.max(1) as f64,
            format_bytes(decoded),
            format_bytes(stored),
            if s.events == 0 {
                String::new()
            } else {
                format!(", {:.1} bytes per event decoded", decoded as f64 / s.events as f64)
            }
        )?;
    }
    if let (n @ 1.., Some((at, announced, decoded))) = (s.miscounted_chunks, s.first_miscounted) {
        let place = match file::split_virtual(at) {
            Some((group, inner)) => {
                format!("in the compressed group at byte {group}, at decoded byte {inner}")
            }
            None => format!("at byte {at}"),
        };
        writeln!(
            out,
            "MISMATCH    {} chunk(s) whose extents announce a different event count than their records; \
             the first, the chunk block {place}, announces {announced} and holds {decoded}",
            format_count(n)
        )?;
    }
    Ok(())
}

/// A name as printed: `-` when empty.
fn display_name(name: &str) -> &str {
    if name.is_empty() {
        "-"
    } else {
        name
    }
}

/// Columns are padded to their longest entry, but not past this many characters: a longer name
/// sticks out of its column rather than pad every other row with spaces.
const MAX_COLUMN: usize = 64;

/// The width of a column of `cells`: the longest, in characters, at most [`MAX_COLUMN`].
fn column_width<'a>(cells: impl Iterator<Item = &'a str>) -> usize {
    cells.map(|c| c.chars().take(MAX_COLUMN).count()).max().unwrap_or(0)
}

/// A callsite's name as `--callsites` lists it: `dynamic (EXPRESSION)` for a callsite whose events
/// carry their own name (its name is the expression's source text, which names no event). Names,
/// like categories and threads' names, are cut past 512 bytes (`phosphor_export::shown_name`):
/// one string of megabytes may name every callsite and thread of a file.
fn name_cell<'a>(c: &Callsite<'a>) -> Cow<'a, str> {
    let name = shown_name(c.name.as_str());
    if c.dynamic_name {
        Cow::Owned(format!("dynamic ({name})"))
    } else {
        name
    }
}

/// A cell left-aligned in `width` characters (`format!`'s `{:<w$}` refuses widths past 65,535).
struct Padded<'a>(&'a str, usize);

impl std::fmt::Display for Padded<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)?;
        let short = self.1.saturating_sub(self.0.chars().take(self.1).count());
        for _ in 0..short {
            f.write_str(" ")?;
        }
        Ok(())
    }
}

/// `ns` since the Unix epoch as a UTC date and time, `2024-05-06 07:08:09.123456789 UTC`.
pub(crate) fn format_utc(ns: u64) -> String {
    const NS_PER_DAY: u64 = 86_400 * 1_000_000_000;
    let mut days = ns / NS_PER_DAY;
    let in_day = ns % NS_PER_DAY;
    let leap = |y: u64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let mut year = 1970;
    loop {
        let len = if leap(year) { 366 } else { 365 };
        if days < len {
            break;
        }
        days -= len;
        year += 1;
    }
    let feb = if leap(year) { 29 } else { 28 };
    let mut month = 1;
    for len in [31, feb, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] {
        if days < len {
            break;
        }
        days -= len;
        month += 1;
    }
    let secs = in_day / 1_000_000_000;
    format!(
        "{year:04}-{month:02}-{:02} {:02}:{:02}:{:02}.{:09} UTC",
        days + 1,
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        in_day % 1_000_000_000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates_fall_on_the_right_day_across_leap_years() {
        assert_eq!(format_utc(0), "1970-01-01 00:00:00.000000000 UTC");
        // 2000-02-29 12:34:56.5 UTC, a leap day in a year divisible by 400.
        assert_eq!(format_utc(951_827_696_500_000_000), "2000-02-29 12:34:56.500000000 UTC");
        // 2024-12-31 23:59:59 UTC, the last second of a leap year.
        assert_eq!(format_utc(1_735_689_599_000_000_000), "2024-12-31 23:59:59.000000000 UTC");
        assert_eq!(format_utc(1_735_689_600_000_000_000), "2025-01-01 00:00:00.000000000 UTC");
    }

    #[test]
    fn byte_counts_use_binary_units() {
        assert_eq!(format_bytes(1023), "1023 bytes");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_bytes(26 << 20), "26.0 MiB");
    }

    #[test]
    fn pool_chunks_count_losses_per_pool_tenant_not_per_thread() {
        use phosphor::format::file::{ClockInfo, Header, Trailer, Writer, SEQ_STREAM_SHIFT};
        let clock = ClockInfo::monotonic(0, 0);
        let header = Header { clock, pid: 1, process_name: "t".into(), boot_id: None, host_name: None };
        let mut w = Writer::new(Vec::new(), &header).unwrap();
        let pool = |k: u64, n: u64| (k << SEQ_STREAM_SHIFT) | n;
        // Pool tenant 1: chunks 0, 1, 2 started by threads 10, 11, 10 (none lost); pool tenant 2:
        // chunks 0 and 3 (two lost); thread 12's own tenant: chunks 0 and 2 (one lost).
        for (tid, seq) in [(10, pool(1, 0)), (11, pool(1, 1)), (10, pool(1, 2)), (11, pool(2, 0))] {
            w.write_chunk(tid, seq, &[], |_, _| "").unwrap();
        }
        for (tid, seq) in [(11, pool(2, 3)), (12, 0), (12, 2)] {
            w.write_chunk(tid, seq, &[], |_, _| "").unwrap();
        }
        let bytes = w.finish(&Trailer::default()).unwrap();
        let mut s = Summary::default();
        s.read(&mut Reader::new(bytes.as_slice()).unwrap()).unwrap();
        let lost: Vec<((u16, u32), u64)> = s.losses.streams().map(|(k, _, lost)| (k, lost)).collect();
        assert_eq!(lost, [((0, 12), 1), ((1, 0), 0), ((2, 0), 2)]);
        assert_eq!(s.threads[&10].chunks, 2);
        assert_eq!(s.threads[&11].chunks, 3);
    }
}

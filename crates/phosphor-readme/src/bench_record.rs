//! BENCHMARKS.md's generated tables: a measurement's output becomes a Markdown table, written
//! between a section's markers with the commit and the date it was measured.
//!
//! A generated table sits between two lines of their own, `<!-- bench:NAME -->` and
//! `<!-- /bench:NAME -->`. [`replace_section`] rewrites what lies between them (a `> **Measured:**`
//! stamp line, a blank line and the table) and nothing else: every byte outside the markers is
//! kept, and a missing, repeated, unordered or nested marker is an error naming the file and the
//! byte offset. [`check_table`] refuses what is not one well-formed Markdown table, so a script
//! that printed something else fails instead of writing it.
//!
//! The measurements' outputs turn into tables here, where they are tested: [`divan_table`] reads
//! divan's tree of timings (medians as ratios to a baseline benchmark of the same run), and
//! [`hostile_table`] folds `phosphor-craft bench`'s row per command into a row per file (the
//! slowest command, the highest peak RSS as a multiple of the file). The binary `bench-record`
//! is the scripts' entry point (`scripts/bench-peers.sh`, `scripts/callgrind.sh`,
//! `scripts/bench-hot-path.sh`, `scripts/bench-hostile.sh`, `scripts/bench-sql.sh` with
//! `UPDATE_BENCHMARKS=1`).

use std::fmt::Write as _;

/// The opening marker of section `name`.
pub fn open_marker(name: &str) -> String {
    format!("<!-- bench:{name} -->")
}

/// The closing marker of section `name`.
pub fn close_marker(name: &str) -> String {
    format!("<!-- /bench:{name} -->")
}

/// Where and when a table was measured: the line above it, inside its markers.
#[derive(Clone, Debug, PartialEq)]
pub struct Stamp {
    /// `git rev-parse --short HEAD` when the measurement ran.
    pub commit: String,
    /// The working tree differed from the commit (outside Markdown files) when it ran.
    pub dirty: bool,
    /// UTC, `YYYY-MM-DD HH:MM UTC`.
    pub date: String,
    /// The 1-minute load average when the table was written, if known.
    pub load: Option<String>,
    /// The command that measures it again.
    pub command: String,
}

impl Stamp {
    /// The stamp line, a Markdown block quote as the hand-written sections' first line is.
    pub fn line(&self, name: &str) -> String {
        let dirty = if self.dirty { " with uncommitted changes" } else { "" };
        let load = self.load.as_ref().map(|l| format!(", load {l}")).unwrap_or_default();
        format!(
            "> **Measured:** commit `{}`{dirty}, {}{load}. **Regenerate:** `{}` (rewrites what lies \
             between the `bench:{name}` markers).",
            self.commit, self.date, self.command
        )
    }
}

/// A problem with a document's markers or with a table, as the binary prints it.
#[derive(Debug, PartialEq)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// Byte offsets of the lines of `doc` that are exactly `marker` (trailing spaces aside).
fn marker_lines(doc: &str, marker: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    for line in doc.split_inclusive('\n') {
        if line.trim_end() == marker {
            out.push(at);
        }
        at += line.len();
    }
    out
}

/// `doc` (read from `file`) with the body of section `name` replaced by `stamp` and `table`.
///
/// Fails, changing nothing, when either marker is missing or repeated, when the closing one
/// comes first, when another section's marker lies between them, or when `table` is not one
/// Markdown table ([`check_table`]).
pub fn replace_section(
    file: &str,
    doc: &str,
    name: &str,
    stamp: &Stamp,
    table: &str,
) -> Result<String, Error> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(Error(format!("section name {name:?}: use letters, digits, `-` and `_` only")));
    }
    let table = check_table(table).map_err(|e| Error(format!("the table for `bench:{name}`: {e}")))?;
    let (open, close) = (open_marker(name), close_marker(name));
    let one = |marker: &str| -> Result<usize, Error> {
        match marker_lines(doc, marker).as_slice() {
            [] => Err(Error(format!(
                "{file}: no line `{marker}`: add the section's markers (`{}` … `{}`) around its \
                 table first",
                open_marker(name),
                close_marker(name)
            ))),
            [at] => Ok(*at),
            [first, second, ..] => {
                Err(Error(format!("{file}: `{marker}` appears more than once (bytes {first} and {second})")))
            }
        }
    };
    let (open_at, close_at) = (one(&open)?, one(&close)?);
    if close_at < open_at {
        return Err(Error(format!(
            "{file}: `{close}` (byte {close_at}) comes before `{open}` (byte {open_at})"
        )));
    }
    // The opening marker's line ends in a newline: the closing marker's line comes after it.
    let body_start = open_at + doc[open_at..].find('\n').map_or(doc.len() - open_at, |i| i + 1);
    if let Some(i) = doc[body_start..close_at]
        .find("<!-- bench:")
        .or_else(|| doc[body_start..close_at].find("<!-- /bench:"))
    {
        return Err(Error(format!(
            "{file}: another section's marker at byte {} lies inside `bench:{name}`",
            body_start + i
        )));
    }
    let mut out = String::with_capacity(doc.len() + table.len());
    out.push_str(&doc[..body_start]);
    let _ = write!(out, "{}\n\n{table}\n", stamp.line(name));
    out.push_str(&doc[close_at..]);
    Ok(out)
}

/// The body between section `name`'s markers, if both are there once and in order.
pub fn section_body<'a>(doc: &'a str, name: &str) -> Option<&'a str> {
    let (open, close) = (marker_lines(doc, &open_marker(name)), marker_lines(doc, &close_marker(name)));
    let ([open_at], [close_at]) = (open.as_slice(), close.as_slice()) else { return None };
    let start = open_at + doc[*open_at..].find('\n')? + 1;
    (start <= *close_at).then(|| &doc[start..*close_at])
}

/// The cells of one table row: `| a | b |` → `["a", "b"]`.
fn cells(row: &str) -> Option<Vec<&str>> {
    let inner = row.trim().strip_prefix('|')?.strip_suffix('|')?;
    Some(inner.split('|').map(str::trim).collect())
}

/// `table` trimmed, if it is one Markdown table: a header row, a separator row of `---`,
/// `:--`, `--:` or `:-:` cells, at least one data row, every row `| … |` with the header's
/// number of cells, and nothing else (no blank line, no text).
pub fn check_table(table: &str) -> Result<&str, String> {
    let table = table.trim_matches(|c| c == '\n' || c == '\r');
    let lines: Vec<&str> = table.lines().collect();
    if lines.len() < 3 {
        return Err(format!(
            "a table needs a header, a separator and at least one row; got {} line(s)",
            lines.len()
        ));
    }
    let width = cells(lines[0]).ok_or_else(|| format!("line 1 is not a `| … |` row: {:?}", lines[0]))?.len();
    for (i, line) in lines.iter().enumerate() {
        let row = cells(line).ok_or_else(|| format!("line {} is not a `| … |` row: {line:?}", i + 1))?;
        if row.len() != width {
            return Err(format!("line {} has {} cells, the header {width}: {line:?}", i + 1, row.len()));
        }
        if i == 1 {
            let separator = |c: &&str| {
                let dashes = c.trim_start_matches(':').trim_end_matches(':');
                !dashes.is_empty() && dashes.chars().all(|d| d == '-')
            };
            if !row.iter().all(separator) {
                return Err(format!("line 2 is not a separator row (`|---|--:|`): {line:?}"));
            }
        }
    }
    Ok(table)
}

/// A divan duration (`9.204 ns`, `1.2 µs`, `520 ps`) in nanoseconds.
fn divan_ns(cell: &str) -> Option<f64> {
    let (value, unit) = cell.trim().split_once(' ')?;
    let value: f64 = value.parse().ok()?;
    let scale = match unit.trim() {
        "ps" => 1e-3,
        "ns" => 1.0,
        "µs" | "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some(value * scale)
}

/// The rows of divan's tree (`├─ name  fastest │ slowest │ median │ …`), as (path, median
/// cell, median in ns); a group's own line, with no figures, is the prefix of its children's
/// paths (`group/bench`).
fn divan_rows(output: &str) -> Result<Vec<(String, String, f64)>, String> {
    let mut median_column = None;
    let mut path: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    for line in output.lines() {
        let Some(branch) = line.find("├─ ").or_else(|| line.find("╰─ ")) else {
            // The header: `hot_path   fastest │ slowest │ median │ mean │ samples │ iters`.
            if line.contains("fastest") && line.contains("median") {
                median_column = line.split('│').position(|c| c.contains("median"));
            }
            continue;
        };
        let depth = line[..branch].chars().count() / 3;
        let rest = &line[branch + "├─ ".len()..];
        let mut columns = rest.split('│');
        let first = columns.next().unwrap_or("");
        let name = first.split_whitespace().next().unwrap_or("").to_string();
        path.truncate(depth);
        let Some(median) = median_column else {
            return Err("a benchmark row before divan's header (`fastest │ slowest │ median …`)".into());
        };
        let cells: Vec<&str> = std::iter::once(first.trim_start().strip_prefix(name.as_str()).unwrap_or(""))
            .chain(columns)
            .collect();
        match cells.get(median).map(|c| c.trim()).filter(|c| !c.is_empty()) {
            None => path.push(name),
            Some(cell) => {
                let ns =
                    divan_ns(cell).ok_or_else(|| format!("not a divan duration: {cell:?} in {line:?}"))?;
                let full = path.iter().chain(std::iter::once(&name)).cloned().collect::<Vec<_>>().join("/");
                rows.push((full, cell.to_string(), ns));
            }
        }
    }
    Ok(rows)
}

/// divan's output as a table of medians and their ratio to `baseline`'s median (one of its
/// benchmarks, e.g. `limit_loop`), in divan's order.
pub fn divan_table(output: &str, baseline: &str) -> Result<String, String> {
    let rows = divan_rows(output)?;
    if rows.is_empty() {
        return Err("no benchmark rows in divan's output (did the bench run?)".into());
    }
    let base = rows
        .iter()
        .find(|(name, ..)| name == baseline)
        .map(|r| r.2)
        .filter(|ns| *ns > 0.0)
        .ok_or_else(|| format!("the baseline `{baseline}` is not among the benchmarks, or took 0 ns"))?;
    let mut out = format!("| scenario | median | × `{baseline}` |\n|---|---:|---:|\n");
    for (name, cell, ns) in rows {
        let _ = writeln!(out, "| `{name}` | {cell} | {:.3} |", ns / base);
    }
    Ok(out)
}

/// One command's row of `phosphor-craft bench`'s table.
struct Run<'a> {
    file: &'a str,
    size: &'a str,
    command: &'a str,
    wall: f64,
    rss: &'a str,
    ratio: f64,
    within: bool,
}

/// `phosphor-craft bench`'s table (a row per file and command: `| file | size | command | exit
/// | wall | peak RSS | RSS / size | output | within targets |`) folded into a row per file: its
/// commands, the slowest, the highest peak RSS and its multiple of the file, and whether every
/// command met the targets. Lines outside the table (the script's header line) are skipped.
pub fn hostile_table(output: &str) -> Result<String, String> {
    let mut runs = Vec::new();
    let mut header = None;
    for line in output.lines() {
        let Some(row) = cells(line) else { continue };
        let Some(h) = &header else {
            if row.first() == Some(&"file") {
                header = Some(row);
            }
            continue;
        };
        if row.iter().all(|c| c.trim_matches([':', '-']).is_empty()) {
            continue;
        }
        let at = |name: &str| {
            h.iter()
                .position(|c| *c == name)
                .and_then(|i| row.get(i).copied())
                .ok_or_else(|| format!("no `{name}` cell in {line:?}"))
        };
        let number = |name: &str, suffix: &str| -> Result<f64, String> {
            let cell = at(name)?;
            cell.trim_end_matches(suffix)
                .trim()
                .parse()
                .map_err(|_| format!("`{name}` is not a number: {cell:?}"))
        };
        runs.push(Run {
            file: at("file")?,
            size: at("size")?,
            command: at("command")?,
            wall: number("wall", "s")?,
            rss: at("peak RSS")?,
            ratio: number("RSS / size", "")?,
            within: at("within targets")? == "yes",
        });
    }
    if runs.is_empty() {
        return Err("no rows of `phosphor-craft bench`'s table (`| file | size | command | …`)".into());
    }
    let mut out = String::from(
        "| file | size | commands | slowest | highest peak RSS (× file) | within targets |\n\
         |---|---:|---:|---|---|---|\n",
    );
    let mut rest = runs.as_slice();
    while let Some(first) = rest.first() {
        let n = rest.iter().take_while(|r| r.file == first.file).count();
        let (group, tail) = rest.split_at(n);
        rest = tail;
        // The first of equals, in the script's order of commands.
        let slowest =
            group.iter().reduce(|a, b| if b.wall > a.wall { b } else { a }).expect("a group has a run");
        let same =
            group.iter().filter(|r| format!("{:.2}", r.wall) == format!("{:.2}", slowest.wall)).count();
        let who = if same == group.len() && n > 1 { "every command" } else { slowest.command };
        let peak =
            group.iter().reduce(|a, b| if b.ratio > a.ratio { b } else { a }).expect("a group has a run");
        let failed: Vec<&str> = group.iter().filter(|r| !r.within).map(|r| r.command).collect();
        let within =
            if failed.is_empty() { "all".to_string() } else { format!("**not:** {}", failed.join(", ")) };
        let _ = writeln!(
            out,
            "| {} | {} | {n} | {:.2} s ({who}) | {}, {:.1}× ({}) | {within} |",
            first.file, first.size, slowest.wall, peak.rss, peak.ratio, peak.command
        );
    }
    Ok(out)
}

/// `YYYY-MM-DD HH:MM UTC` of a Unix time (the proleptic Gregorian calendar's days from
/// 1970-01-01, counted in 400-year eras).
pub fn utc_date(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let secs = unix_secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02} UTC", secs / 3600, secs % 3600 / 60)
}

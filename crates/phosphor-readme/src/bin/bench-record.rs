//! `bench-record`: writes a measurement into BENCHMARKS.md between its section's markers.
//!
//! ```text
//! bench-record NAME --command CMD [--from table|divan|hostile] [--baseline BENCH]
//!              [--doc PATH] [--input FILE] [--commit C] [--date D] [--load L]
//! ```
//!
//! Reads the measurement's output from `--input` (or stdin), turns it into a table (`table`: it is
//! one already; `divan`: divan's tree, as ratios to `--baseline`; `hostile`: `phosphor-craft
//! bench`'s rows, a row per file), and rewrites the body between `<!-- bench:NAME -->` and
//! `<!-- /bench:NAME -->` of `--doc` (BENCHMARKS.md at the repository root) with a stamp (the
//! commit, `git rev-parse --short HEAD`; the date; the load; `CMD`) and the table. Nothing outside
//! the markers changes; a missing marker or a malformed table changes nothing and exits 2.
//! `--commit`, `--date` and `--load` replace what it would find itself (for tests).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use phosphor_readme::bench_record::{divan_table, hostile_table, replace_section, utc_date, Stamp};

const USAGE: &str = "usage: bench-record NAME --command CMD [--from table|divan|hostile] [--baseline BENCH] \
                     [--doc PATH] [--input FILE] [--commit C] [--date D] [--load L]";

#[derive(Default)]
struct Options {
    name: Option<String>,
    command: Option<String>,
    from: Option<String>,
    baseline: Option<String>,
    doc: Option<PathBuf>,
    input: Option<PathBuf>,
    commit: Option<String>,
    date: Option<String>,
    load: Option<String>,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut o = Options::default();
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--command" => o.command = Some(value()?),
            "--from" => o.from = Some(value()?),
            "--baseline" => o.baseline = Some(value()?),
            "--doc" => o.doc = Some(value()?.into()),
            "--input" => o.input = Some(value()?.into()),
            "--commit" => o.commit = Some(value()?),
            "--date" => o.date = Some(value()?),
            "--load" => o.load = Some(value()?),
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}\n{USAGE}")),
            _ if o.name.is_none() => o.name = Some(arg),
            _ => return Err(format!("one section name only (got {arg:?} too)\n{USAGE}")),
        }
    }
    Ok(o)
}

/// The output of `git ARGS` run in `dir`, trimmed.
fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git").current_dir(dir).args(args).output().map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn run(o: Options) -> Result<(), String> {
    let name = o.name.ok_or_else(|| format!("no section name\n{USAGE}"))?;
    let command =
        o.command.ok_or_else(|| format!("--command is required (what measures it again)\n{USAGE}"))?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = root.canonicalize().unwrap_or(root);
    let doc_path = o.doc.unwrap_or_else(|| root.join("BENCHMARKS.md"));
    let dir = doc_path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
    let input = match &o.input {
        Some(path) => std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?,
        None => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(|e| format!("stdin: {e}"))?;
            text
        }
    };
    let table = match o.from.as_deref().unwrap_or("table") {
        "table" => input,
        "divan" => divan_table(&input, o.baseline.as_deref().unwrap_or("limit_loop"))?,
        "hostile" => hostile_table(&input)?,
        other => return Err(format!("--from {other}: use table, divan or hostile")),
    };
    // The table is checked before anything else is looked up: a failed measurement stops here.
    phosphor_readme::bench_record::check_table(&table)
        .map_err(|e| format!("the table for `bench:{name}`: {e}"))?;
    let (commit, dirty) = match o.commit {
        Some(c) => (c, false),
        None => {
            let commit = git(&dir, &["rev-parse", "--short", "HEAD"])?;
            // Changes to Markdown files (this one among them) do not change what was measured.
            let changes =
                git(&dir, &["status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)*.md"])?;
            (commit, !changes.is_empty())
        }
    };
    let date = o.date.unwrap_or_else(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        utc_date(now.as_secs())
    });
    let load = o.load.or_else(|| {
        std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().next().map(String::from))
    });
    let stamp = Stamp { commit, dirty, date, load, command };
    let shown = doc_path.display().to_string();
    let doc = std::fs::read_to_string(&doc_path).map_err(|e| format!("{shown}: {e}"))?;
    let new = replace_section(&shown, &doc, &name, &stamp, &table).map_err(|e| e.to_string())?;
    // Written beside it and renamed over it: an interrupted run leaves the old file whole.
    let tmp =
        dir.join(format!(".{}.bench-record", doc_path.file_name().unwrap_or_default().to_string_lossy()));
    std::fs::write(&tmp, new).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &doc_path).map_err(|e| format!("{shown}: {e}"))?;
    eprintln!("bench-record: wrote `bench:{name}` in {shown} (commit {})", stamp.commit);
    Ok(())
}

fn main() -> ExitCode {
    match parse(std::env::args().skip(1)).and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-record: {e}");
            ExitCode::from(2)
        }
    }
}

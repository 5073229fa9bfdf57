//! `phosphor-craft`: writes the hostile files, or runs the `phosphor` binary on each with each
//! reading command and prints the peak RSS and wall time as a Markdown table (the benchmark of
//! `scripts/bench-hostile.sh`).
//!
//! ```text
//! phosphor-craft write DIR [--scale test|bench|seed] [--only NAME,...]
//! phosphor-craft bench PHOSPHOR DIR [--scale test|bench|seed] [--only NAME,...] [--watchdog SECS] [--cap-mib MIB]
//! ```

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use phosphor_craft::measure::{self, Limits};
use phosphor_craft::{catalog, Case, Scale};

/// The wall time issue 18 asks of every command on every hostile file (release build).
const TIME_TARGET: Duration = Duration::from_secs(10);

struct Options {
    scale: Scale,
    only: Option<Vec<String>>,
    watchdog: Duration,
    cap_mib: u64,
    positional: Vec<String>,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut o = Options {
        scale: Scale::Bench,
        only: None,
        watchdog: Duration::from_secs(120),
        cap_mib: 8 << 10,
        positional: Vec::new(),
    };
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--scale" => {
                o.scale = match value()?.as_str() {
                    "test" => Scale::Test,
                    "bench" => Scale::Bench,
                    "seed" => Scale::Seed,
                    s => return Err(format!("unknown scale {s:?} (test, bench or seed)")),
                }
            }
            "--only" => o.only = Some(value()?.split(',').map(str::to_owned).collect()),
            "--watchdog" => {
                o.watchdog = Duration::from_secs(value()?.parse().map_err(|e| format!("--watchdog: {e}"))?)
            }
            "--cap-mib" => o.cap_mib = value()?.parse().map_err(|e| format!("--cap-mib: {e}"))?,
            _ if a.starts_with("--") => return Err(format!("unknown option {a}")),
            _ => o.positional.push(a),
        }
    }
    Ok(o)
}

fn cases(o: &Options) -> Vec<Case> {
    catalog(o.scale)
        .into_iter()
        .filter(|c| o.only.as_ref().is_none_or(|only| only.iter().any(|n| n == c.name)))
        .collect()
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn write(o: &Options, dir: &Path) -> Result<Vec<(Case, PathBuf)>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    cases(o)
        .into_iter()
        .map(|c| {
            let path = c.write_to(dir).map_err(|e| format!("{}: {e}", c.name))?;
            Ok((c, path))
        })
        .collect()
}

fn bench(o: &Options, phosphor: &Path, dir: &Path) -> Result<(), String> {
    let help = Command::new(phosphor).args(["convert", "--help"]).output().map_err(|e| e.to_string())?;
    let text = phosphor_craft::lists_text_format(&String::from_utf8_lossy(&help.stdout));
    let limits = Limits { watchdog: o.watchdog, address_space: Some(o.cap_mib << 20) };
    println!("| file | size | command | exit | wall | peak RSS | RSS / size | output | within targets |");
    println!("|---|---:|---|---|---:|---:|---:|---:|---|");
    for (case, path) in write(o, dir)? {
        let size = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
        for args in case.commands(&path, dir, text) {
            let (m, out) = measure::run(Command::new(phosphor).args(&args), &limits, measure::count_bytes)
                .map_err(|e| format!("{args:?}: {e}"))?;
            // The command without the file's path: `stats --json`.
            let shown: Vec<&str> =
                args.iter().map(String::as_str).filter(|a| !a.contains('/') || *a == "/dev/null").collect();
            // Issue 18's targets: status 0 or 2, 10 s, max(128 MiB, 3 × the file).
            let ended_well = !m.timed_out && matches!(m.code(), Some(0 | 2));
            let within = ended_well && m.wall <= TIME_TARGET && m.max_rss <= (128 << 20).max(3 * size);
            println!(
                "| {} | {:.1} MiB | {} | {} | {:.2} s | {:.0} MiB | {:.1} | {:.1} MiB | {} |",
                case.name,
                mib(size),
                shown.join(" "),
                m.end(),
                m.wall.as_secs_f64(),
                mib(m.max_rss),
                m.max_rss as f64 / size.max(1) as f64,
                mib(out),
                if within { "yes" } else { "**no**" },
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_default();
    let result = parse(args).and_then(|o| match (command.as_str(), o.positional.as_slice()) {
        ("write", [dir]) => write(&o, Path::new(dir)).map(|files| {
            for (_, p) in files {
                println!("{}", p.display());
            }
        }),
        ("bench", [phosphor, dir]) => bench(&o, Path::new(phosphor), Path::new(dir)),
        _ => Err("usage: phosphor-craft write DIR [--scale test|bench|seed] [--only NAME,...]\n       \
                  phosphor-craft bench PHOSPHOR DIR [--scale test|bench|seed] [--only NAME,...] \
                  [--watchdog SECS] [--cap-mib MIB]"
            .into()),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("phosphor-craft: {e}");
            ExitCode::from(2)
        }
    }
}

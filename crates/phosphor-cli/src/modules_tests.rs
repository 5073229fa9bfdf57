//! The commands share their helpers through `common.rs`, never by importing each other: a
//! command module (one whose arguments are a variant of `Command` in `main.rs`) names no other
//! command module, so that changing one command cannot change another.

use std::path::{Path, PathBuf};

/// Commands that run other commands on purpose, with the commands they run: `demo` is the
/// tour, converting and drawing its trace as `convert` and `flamegraph` would.
const RUNS_OTHERS: &[(&str, &[&str])] = &[("demo", &["convert", "flamegraph"])];

/// The command modules: `X` of each `Variant(X::…Args)` in `main.rs`.
fn command_modules(main: &str) -> Vec<String> {
    let mut names: Vec<String> = main
        .lines()
        .map(str::trim)
        .filter_map(|l| {
            let (_, rest) = l.split_once('(')?;
            let (module, args) = rest.split_once("::")?;
            let is_ident = !module.is_empty() && module.chars().all(|c| c.is_ascii_lowercase() || c == '_');
            (is_ident && args.trim_end_matches([')', ',']).ends_with("Args")).then(|| module.to_owned())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// `module.rs` and every file under `module/`.
fn files_of(src: &Path, module: &str) -> Vec<PathBuf> {
    let mut files = vec![src.join(format!("{module}.rs"))];
    let mut dirs = vec![src.join(module)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                files.push(p);
            }
        }
    }
    files
}

/// The command modules that `text` names as `crate::X` or in `crate::{X, …}` (comments aside).
fn named<'a>(text: &str, commands: &'a [String]) -> Vec<&'a str> {
    let code: String =
        text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    let mut first_segments = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        let ident = |s: &str| {
            s.trim_start().split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next().map(str::to_owned)
        };
        match rest.strip_prefix('{') {
            Some(list) => {
                let list = list.split('}').next().unwrap_or("");
                first_segments.extend(list.split(',').filter_map(ident));
            }
            None => first_segments.extend(ident(rest)),
        }
    }
    commands.iter().filter(|c| first_segments.contains(c)).map(String::as_str).collect()
}

#[test]
fn the_command_list_is_read_from_main() {
    let main =
        "    Info(info::InfoArgs),\n    Ls,\n    Record(record::RecordArgs),\n    Demo(demo::DemoArgs),\n";
    assert_eq!(command_modules(main), ["demo", "info", "record"]);
    let commands = command_modules(main);
    assert_eq!(named("use crate::info::format_bytes;", &commands), ["info"]);
    assert_eq!(named("use crate::{progress, record::X, info};", &commands), ["info", "record"]);
    assert_eq!(named("use crate::information;\n// crate::record", &commands), Vec::<&str>::new());
}

#[test]
fn no_command_module_imports_another() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let main = std::fs::read_to_string(src.join("main.rs")).unwrap();
    let commands = command_modules(&main);
    assert!(commands.len() >= 10, "too few commands found in main.rs: {commands:?}");
    let mut found = Vec::new();
    for command in &commands {
        let allowed = RUNS_OTHERS.iter().find(|(c, _)| c == command).map_or(&[][..], |(_, o)| o);
        for file in files_of(&src, command) {
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            for other in named(&text, &commands) {
                if other != command && !allowed.contains(&other) {
                    found.push(format!(
                        "{} imports `crate::{other}` (share it through common.rs)",
                        file.display()
                    ));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

//! The crates that read traces depend on the format, never on the recording runtime: a tool is
//! built and run without the recorder, and a change in the runtime cannot change what a tool
//! reads. Their tests and examples may record traces (a dev-dependency); their code may not.

use std::path::Path;

/// Every crate that reads trace files.
const READERS: &[&str] = &[
    "phosphor-format",
    "phosphor-craft",
    "phosphor-export",
    "phosphor-model",
    "phosphor-otlp",
    "phosphor-view",
    // The recording server copies trace streams block by block: it reads the format, never the
    // runtime (the CLI's `record` command is this crate with flags).
    "phosphor-record",
];

/// The names in a manifest's `[dependencies]` and `[target.'…'.dependencies]` tables (not
/// dev- or build-dependencies), including `name.workspace = true` and `[dependencies.name]` forms.
fn normal_dependencies(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut inside = false;
    for line in manifest.lines().map(str::trim) {
        if let Some(table) = line.strip_prefix('[') {
            let table = table.trim_end_matches(']');
            inside = table == "dependencies" || table.ends_with(".dependencies");
            // `[dependencies.name]`, `[target.'cfg(…)'.dependencies.name]`
            let named = table
                .strip_prefix("dependencies.")
                .or_else(|| table.split_once(".dependencies.").map(|(_, n)| n));
            names.extend(named.map(str::to_owned));
            continue;
        }
        if !inside || line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some((key, _)) = line.split_once('=') {
            let key = key.trim();
            names.push(key.split_once('.').map_or(key, |(name, _)| name).trim_matches('"').to_owned());
        }
    }
    names
}

#[test]
fn the_manifest_reader_finds_the_runtime_in_every_form() {
    let forms = [
        "[dependencies]\nphosphor.workspace = true\n",
        "[dependencies]\nphosphor = { path = \"../phosphor\" }\n",
        "[dependencies.phosphor]\npath = \"../phosphor\"\n",
        "[target.'cfg(unix)'.dependencies]\nphosphor = \"0.1\"\n",
        "[target.'cfg(unix)'.dependencies.phosphor]\nversion = \"0.1\"\n",
    ];
    for m in forms {
        assert!(normal_dependencies(m).contains(&"phosphor".to_owned()), "missed in {m:?}");
    }
    let dev =
        "[dependencies]\nphosphor-format.workspace = true\n[dev-dependencies]\nphosphor.workspace = true\n";
    assert_eq!(normal_dependencies(dev), ["phosphor-format"]);
}

#[test]
fn tools_do_not_depend_on_the_runtime() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    for name in READERS {
        let path = crates.join(name).join("Cargo.toml");
        let manifest = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let deps = normal_dependencies(&manifest);
        assert!(
            deps.contains(&"phosphor-format".to_owned()) || *name == "phosphor-format",
            "{name}: {deps:?}"
        );
        assert!(
            !deps.iter().any(|d| d == "phosphor"),
            "{name} depends on the recording runtime (`phosphor`); a reader takes the format only: {deps:?}"
        );
    }
}

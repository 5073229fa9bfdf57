//! The documents against the tree: ARCHITECTURE.md's code map names every crate and every
//! top-level module, and only ones that exist; every relative Markdown link resolves.
//!
//! # The code map's convention
//!
//! The code map is the text between `## Code map` and the next `## ` heading. Each crate has a
//! heading `` ### `crates/NAME` `` (or `` ### `bench` `` for a workspace member outside
//! `crates/`); its entry runs to the next `### ` heading and may hold `####` sub-headings.
//!
//! * A crate's top-level modules are its `src/*.rs` files and its `src/*/mod.rs` directories,
//!   leaving out `lib.rs`, `main.rs` and the test-only files (`*_tests.rs`, `tests.rs`,
//!   `test_*.rs`). Each must be named in its crate's entry in backticks as `` `foo.rs` `` (a file)
//!   or `` `foo/` `` (a directory).
//! * Every backticked path in an entry that ends in `.rs` or `/` (and holds nothing but
//!   lowercase letters, digits, `_`, `-`, `.` and `/`) must exist, looked up under the crate's
//!   `src/`, then the crate, then the repository root.
//! * Every directory of `crates/` with a `Cargo.toml` has an entry, and every entry names one.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The code map's entries: (crate directory relative to the repository, entry text).
fn entries(doc: &str) -> Vec<(String, String)> {
    let Some(start) = doc.find("\n## Code map\n") else {
        return Vec::new();
    };
    let map = &doc[start + "\n## Code map\n".len()..];
    let map = &map[..map.find("\n## ").unwrap_or(map.len())];
    let mut out: Vec<(String, String)> = Vec::new();
    for line in map.lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            let name = heading.trim().trim_matches('`').trim_end_matches('/').to_string();
            out.push((name, String::new()));
        } else if let Some((_, text)) = out.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    out
}

/// The backticked spans of a text.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

fn is_path(span: &str) -> bool {
    (span.ends_with(".rs") || span.ends_with('/'))
        && span.len() > 1
        && span.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-./".contains(c))
}

fn is_test_only(file: &str) -> bool {
    file.ends_with("_tests.rs") || file == "tests.rs" || file.starts_with("test_")
}

/// A crate's top-level modules as the map names them: `foo.rs` or `foo/`.
fn modules(src: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Ok(dir) = fs::read_dir(src) else {
        return out;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if path.is_dir() {
            // A directory beside `foo.rs` is `foo`'s submodules, named by `foo.rs` already.
            if path.join("mod.rs").is_file() {
                out.insert(format!("{name}/"));
            }
        } else if name.ends_with(".rs") && name != "lib.rs" && name != "main.rs" && !is_test_only(&name) {
            out.insert(name);
        }
    }
    out
}

/// What is wrong with `doc`'s code map of the crates in `crate_dirs` (relative to `root`).
fn map_problems(doc: &str, root: &Path, crate_dirs: &[String]) -> Vec<String> {
    let entries = entries(doc);
    let mut problems = Vec::new();
    if entries.is_empty() {
        problems.push("no `## Code map` section with `### ` entries".to_string());
    }
    for dir in crate_dirs {
        if !entries.iter().any(|(name, _)| name == dir) {
            problems.push(format!("crate `{dir}` has no ### entry in the code map"));
        }
    }
    for (name, text) in &entries {
        let krate = root.join(name);
        if !krate.join("Cargo.toml").is_file() {
            problems.push(format!("the code map's entry `{name}` names no crate"));
            continue;
        }
        let spans: BTreeSet<&str> = code_spans(text).into_iter().collect();
        for module in modules(&krate.join("src")) {
            if !spans.contains(module.as_str()) {
                problems.push(format!("module `{module}` of `{name}` is missing from its code map entry"));
            }
        }
        for span in spans.iter().filter(|s| is_path(s)) {
            let found = [krate.join("src"), krate.clone(), root.to_path_buf()]
                .iter()
                .any(|base| base.join(span).exists());
            if !found {
                problems.push(format!("`{span}` in the code map's entry `{name}` does not exist"));
            }
        }
    }
    problems
}

fn workspace_crates(root: &Path) -> Vec<String> {
    let mut dirs: Vec<String> = fs::read_dir(root.join("crates"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| format!("crates/{}", e.file_name().to_string_lossy()))
        .collect();
    dirs.push("bench".to_string());
    dirs.sort();
    dirs
}

#[test]
fn the_code_map_names_every_crate_and_module_and_nothing_that_is_gone() {
    let root = repo();
    let doc = fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let problems = map_problems(&doc, &root, &workspace_crates(&root));
    assert!(problems.is_empty(), "ARCHITECTURE.md's code map:\n  {}", problems.join("\n  "));
}

/// A synthetic crate and map in a temporary directory: the check finds a missing module, a gone
/// module, a gone crate and a crate with no entry, and passes the map that fits.
#[test]
fn the_code_map_check_fails_on_a_missing_or_gone_module() {
    let root = std::env::temp_dir().join(format!("phosphor-map-test-{}", std::process::id()));
    let src = root.join("crates/demo/src");
    fs::create_dir_all(src.join("sub")).unwrap();
    fs::create_dir_all(root.join("crates/other/src")).unwrap();
    fs::write(root.join("crates/demo/Cargo.toml"), "").unwrap();
    fs::write(root.join("crates/other/Cargo.toml"), "").unwrap();
    for file in ["lib.rs", "alpha.rs", "alpha_tests.rs", "test_files.rs", "sub/mod.rs"] {
        fs::write(src.join(file), "").unwrap();
    }
    let crates = vec!["crates/demo".to_string(), "crates/other".to_string()];
    let map = |demo: &str| {
        format!("# A\n\n## Code map\n\n### `crates/demo`\n{demo}\n\n### `crates/other`\nNothing.\n\n## Invariants\n`gone.rs`\n")
    };

    let good = map("`alpha.rs` and `sub/`, whose `sub/mod.rs` is the root.");
    assert_eq!(map_problems(&good, &root, &crates), Vec::<String>::new());

    let missing = map("`alpha.rs` only.");
    let problems = map_problems(&missing, &root, &crates);
    assert!(problems.iter().any(|p| p.contains("`sub/`") && p.contains("missing")), "{problems:?}");

    let gone = map("`alpha.rs`, `sub/` and `beta.rs`.");
    let problems = map_problems(&gone, &root, &crates);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("`beta.rs`") && problems[0].contains("does not exist"));

    let no_entry = good.replace("### `crates/other`\nNothing.\n", "");
    let problems = map_problems(&no_entry, &root, &crates);
    assert!(problems.iter().any(|p| p.contains("`crates/other` has no")), "{problems:?}");

    let no_crate = good.replace("## Invariants", "### `crates/removed`\nIt was here.\n\n## Invariants");
    let problems = map_problems(&no_crate, &root, &crates);
    assert!(problems.iter().any(|p| p.contains("`crates/removed` names no crate")), "{problems:?}");

    fs::remove_dir_all(&root).unwrap();
}

/// Relative link targets of Markdown links (`[text](target)`), without their `#fragment`.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = rest[..end].split_whitespace().next().unwrap_or("");
            let target = target.split('#').next().unwrap_or("");
            if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
                out.push(target.to_string());
            }
            rest = &rest[end..];
        }
    }
    out
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

#[test]
fn every_relative_markdown_link_in_the_repository_resolves() {
    let root = repo();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    let mut broken = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).unwrap();
        for target in link_targets(&text) {
            if !file.parent().unwrap().join(&target).exists() {
                broken.push(format!("{}: {target}", file.strip_prefix(&root).unwrap().display()));
            }
        }
    }
    assert!(files.len() > 5, "found only {} Markdown files under {}", files.len(), root.display());
    assert!(broken.is_empty(), "links to nothing:\n  {}", broken.join("\n  "));
}

#[test]
fn link_targets_skip_urls_fragments_and_code() {
    let text = "[a](docs/A.md#x) [b](https://x.org) [c](#here)\n```\n[d](nowhere.md)\n```\n[e](B.md \"t\")";
    assert_eq!(link_targets(text), ["docs/A.md", "B.md"]);
}

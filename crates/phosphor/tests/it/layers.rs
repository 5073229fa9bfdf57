//! The runtime crate's top-level modules form layers: each uses (`crate::...`) only the modules
//! below it in [`LAYERS`], so there is no import circle between them. ARCHITECTURE.md (the code
//! map of `crates/phosphor`) states the same order, and why the arrows point down.
//!
//! The check reads the sources: every `crate::x` path (also inside `use crate::{x, y::z}`) outside
//! comments and `#[cfg(test)]` modules is an edge to the top-level module `x`, or, when `x` is a
//! name lib.rs re-exports, to the module the re-export comes from. `$crate::` paths (the macros'
//! expansions, resolved in the caller's crate) are not edges.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules of `crates/phosphor/src`, lowest first.
const LAYERS: &[&str] = &[
    "sync",
    "alloc",
    "error",
    "stats",
    "registry",
    "record",
    "output",
    "trace_log",
    "instrument",
    "tokio",
    "control",
    "setup",
    "macros",
];

/// Top-level modules outside the layers: test-only code, which may use any of them.
const TEST_ONLY: &[&str] = &["loom_pool", "loom_stop", "loom_tests"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The text of a source file without its comments (doc comments included) and without its
/// `#[cfg(test)]` / `#[cfg(all(test, ...))]` modules.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_start();
        let is_test_cfg = line.starts_with("#[cfg(test)]") || line.starts_with("#[cfg(all(test,");
        let next = lines.get(i + 1).map(|l| l.trim_start()).unwrap_or("");
        if is_test_cfg && next.starts_with("mod ") && next.trim_end().ends_with('{') {
            // Skip to the module's closing brace, at the indentation of its `mod` line.
            let indent = &lines[i + 1][..lines[i + 1].len() - next.len()];
            let close = format!("{indent}}}");
            i += 2;
            while i < lines.len() && lines[i].trim_end() != close {
                i += 1;
            }
            i += 1;
            continue;
        }
        let code = lines[i].split("//").next().unwrap_or("");
        out.push_str(code);
        out.push('\n');
        i += 1;
    }
    out
}

/// The first identifier at the start of `s` (after whitespace).
fn ident(s: &str) -> &str {
    let s = s.trim_start();
    let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The names each `crate::` path of `code` starts with: `crate::a::b` gives `a`, `crate::{a::b, c}`
/// gives `a` and `c`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("crate::") {
        let start = from + at;
        from = start + "crate::".len();
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c == '$' || c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[from..];
        if let Some(group) = rest.strip_prefix('{') {
            // The top-level items of the brace group.
            let (mut depth, mut item_start) = (0usize, 0usize);
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        names.push(ident(&group[item_start..k]).to_owned());
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        names.push(ident(&group[item_start..k]).to_owned());
                        item_start = k + 1;
                    }
                    _ => {}
                }
            }
        } else {
            names.push(ident(rest).to_owned());
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

/// The top-level modules lib.rs declares.
fn modules(lib: &str) -> BTreeSet<String> {
    lib.lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("pub mod ").or_else(|| l.strip_prefix("mod ")))
        .filter_map(|l| l.strip_suffix(';'))
        .map(str::to_owned)
        .collect()
}

/// The names lib.rs re-exports from its own modules (`pub use registry::callsite::{Callsite, ..}`),
/// each with the module it comes from.
fn reexports(lib: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let mut rest = lib;
    while let Some(at) = rest.find("pub use ") {
        let stmt = &rest[at + "pub use ".len()..];
        let end = stmt.find(';').expect("a `pub use` ends with `;`");
        let (stmt, after) = (&stmt[..end], &stmt[end..]);
        rest = after;
        let module = ident(stmt);
        if !modules.contains(module) {
            continue;
        }
        for name in stmt.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|n| !n.is_empty()) {
            if name != "self" && name != "as" && !modules.contains(name) {
                map.insert(name.to_owned(), module.to_owned());
            }
        }
    }
    map
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every top-level module's `crate::` edges: module -> (module it uses -> a file that does).
fn edges() -> BTreeMap<String, BTreeMap<String, String>> {
    let root = src();
    let lib = code_of(&root.join("lib.rs"));
    let modules = modules(&lib);
    let reexports = reexports(&lib, &modules);
    let mut edges = BTreeMap::new();
    for module in &modules {
        let mut files = Vec::new();
        let file = root.join(format!("{module}.rs"));
        if file.exists() {
            files.push(file);
        }
        if root.join(module).is_dir() {
            files_under(&root.join(module), &mut files);
        }
        assert!(!files.is_empty(), "no source for module `{module}`");
        let uses: &mut BTreeMap<String, String> = edges.entry(module.clone()).or_default();
        for file in files {
            for name in crate_paths(&code_of(&file)) {
                let target = if modules.contains(&name) {
                    name
                } else if let Some(m) = reexports.get(&name) {
                    m.clone()
                } else {
                    panic!(
                        "{}: `crate::{name}` is neither a module nor a re-export of one; an item of lib.rs \
                         itself belongs in its layer (lib.rs only re-exports)",
                        file.display()
                    )
                };
                if &target != module {
                    let shown = file.strip_prefix(&root).unwrap().display().to_string();
                    uses.entry(target).or_insert(shown);
                }
            }
        }
    }
    edges
}

#[test]
fn the_runtime_modules_form_layers_with_no_import_circle() {
    let edges = edges();
    let declared: BTreeSet<&str> = edges.keys().map(String::as_str).collect();
    let placed: BTreeSet<&str> = LAYERS.iter().chain(TEST_ONLY).copied().collect();
    assert_eq!(declared, placed, "every top-level module of lib.rs has its place in LAYERS (or TEST_ONLY)");

    let rank = |m: &str| LAYERS.iter().position(|l| *l == m);
    let mut upward = Vec::new();
    for (module, uses) in &edges {
        let Some(from) = rank(module) else { continue };
        for (target, file) in uses {
            let to = rank(target).unwrap_or_else(|| panic!("{file} uses the test-only module `{target}`"));
            if to >= from {
                upward.push(format!("{module} -> {target} ({file})"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that point up (or across) the layers {LAYERS:?}, so the module graph may have a \
         circle:\n  {}",
        upward.join("\n  ")
    );
}

#[test]
fn architecture_md_states_the_same_layers() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ARCHITECTURE.md")).unwrap();
    let order = LAYERS.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(" < ");
    assert!(doc.contains(&order), "ARCHITECTURE.md states the layer order as: {order}");
}

#[test]
fn the_scan_sees_grouped_imports_and_skips_macro_paths_comments_and_tests() {
    let code = "use crate::{a::{B, C}, d};\nlet x = $crate::e::f;\nuse crate::g::H;\n";
    assert_eq!(crate_paths(code), ["a", "d", "g"]);
    let dir = std::env::temp_dir().join(format!("phosphor-layers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("m.rs");
    std::fs::write(
        &file,
        "use crate::a::B; // crate::c\n/// [`x`](crate::d)\n#[cfg(test)]\nmod tests {\n    use crate::e;\n}\nuse crate::f;\n",
    )
    .unwrap();
    let code = code_of(&file);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(crate_paths(&code), ["a", "f"]);
}

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

/// The recording core: the macros, callsites and registry, tenants, chunks and buffers, and the
/// `TraceLog`'s start, stop and snapshot. Module paths below `src`; a file is in the core when its
/// module is one of these or inside one, and not inside a subsystem.
const CORE: &[&str] =
    &["sync", "error", "stats", "registry", "record", "output", "trace_log", "instrument", "macros"];

/// The subsystems that attach to the core, each with the module paths it consists of (and the
/// names lib.rs re-exports them under). A subsystem may use the core; the core uses none of them.
const SUBSYSTEMS: &[(&str, &[&str])] = &[
    ("stream", &["trace_log::stream", "trace_log::streams", "stream"]),
    ("recorder", &["trace_log::recorder", "recorder"]),
    (
        "trigger",
        &[
            "trace_log::trigger",
            "trace_log::trigger_spec",
            "trace_log::triggers",
            "registry::trigger_gate",
            "trigger",
        ],
    ),
    ("system", &["trace_log::system"]),
    ("alloc_count", &["alloc", "trace_log::alloc_count"]),
    ("control", &["control"]),
];

/// The plug board: the one module that names both, listing the subsystems `TraceLog::start`
/// attaches (`trace_log/subsystems.rs`). Neither core nor subsystem.
const PLUG_BOARD: &[&str] = &["trace_log::subsystems"];

/// The core's imports of subsystems that are still there (file, subsystem), to be removed one by
/// one as the subsystems move behind the attachment interface. The test fails on any import not
/// listed here, and on a listed one that is gone (so the list only shrinks).
const NOT_YET_DETACHED: &[(&str, &str)] = &[];

/// The module path of a source file: `trace_log/mod.rs` is `trace_log`, `record/tenant.rs`
/// `record::tenant`, `lib.rs` the root (empty).
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap();
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    let stem = last.strip_suffix(".rs").unwrap().to_owned();
    if stem != "mod" && stem != "lib" {
        parts.push(stem);
    }
    parts
}

/// The child modules a file declares (`mod x;`, `pub(crate) mod x;`, ...).
fn children(code: &str) -> BTreeSet<String> {
    code.lines()
        .map(str::trim)
        .filter_map(|l| {
            let l = l.strip_prefix("pub").map_or(l, |rest| match rest.strip_prefix('(') {
                Some(r) => r.split_once(')').map_or(rest, |(_, after)| after),
                None => rest,
            });
            l.trim_start().strip_prefix("mod ")?.strip_suffix(';').map(str::to_owned)
        })
        .collect()
}

/// The paths starting at `rest` (just after a path's first segment and its `::`): `a::b` gives
/// `["a::b"]`, `{a::{B, C}, d}` gives `["a::B", "a::C", "d"]`.
fn path_tails(rest: &str) -> Vec<String> {
    if let Some(group) = rest.strip_prefix('{') {
        let (mut depth, mut item_start, mut out) = (0usize, 0usize, Vec::new());
        for (k, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' | ',' if depth == 0 => {
                    let item = group[item_start..k].trim();
                    if let Some((head, tail)) = item.split_once("::") {
                        out.extend(path_tails(tail).into_iter().map(|t| format!("{}::{t}", head.trim())));
                    } else if !item.is_empty() {
                        out.push(ident(item).to_owned());
                    }
                    if c == '}' {
                        break;
                    }
                    item_start = k + 1;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        return out;
    }
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
    let (text, after) = rest.split_at(end);
    match text.strip_suffix("::") {
        Some(prefix) if after.starts_with('{') => {
            path_tails(after).into_iter().map(|t| format!("{prefix}::{t}")).collect()
        }
        _ => vec![text.trim_end_matches(':').to_owned()],
    }
}

/// Every path of `code` resolved to a module path from the crate root: `crate::`, `super::`,
/// `self::` and the file's child modules (`system::X` in the file that declares `mod system;`).
fn resolved_paths(code: &str, module: &[String]) -> Vec<String> {
    let kids = children(code);
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let c = bytes[i] as char;
        let starts_word = i == 0 || {
            let b = bytes[i - 1] as char;
            !(b.is_alphanumeric() || b == '_' || b == '$' || b == ':')
        };
        if !(starts_word && (c.is_alphabetic() || c == '_')) {
            i += 1;
            continue;
        }
        let word = ident(&code[i..]);
        let after = i + word.len();
        if !code[after..].starts_with("::") {
            i = after;
            continue;
        }
        let mut base: Vec<String> = match word {
            "crate" => Vec::new(),
            "self" => module.to_vec(),
            "super" => module[..module.len().saturating_sub(1)].to_vec(),
            w if kids.contains(w) => [module, &[w.to_owned()]].concat(),
            _ => {
                i = after;
                continue;
            }
        };
        let mut rest = &code[after + 2..];
        // `super::super::`
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        for tail in path_tails(rest) {
            let full: Vec<String> = base.iter().cloned().chain(tail.split("::").map(str::to_owned)).collect();
            out.push(full.join("::"));
        }
        i = after;
    }
    out
}

fn within(path: &str, module: &str) -> bool {
    path == module || path.starts_with(&format!("{module}::"))
}

fn subsystem_of(path: &str) -> Option<&'static str> {
    SUBSYSTEMS.iter().find(|(_, mods)| mods.iter().any(|m| within(path, m))).map(|(name, _)| *name)
}

/// The core's imports of subsystems: (file, subsystem).
fn core_to_subsystem_edges() -> BTreeSet<(String, String)> {
    let root = src();
    let mut files = Vec::new();
    files_under(&root, &mut files);
    let mut edges = BTreeSet::new();
    for file in files {
        let module = module_of(&file).join("::");
        let in_core = CORE.iter().any(|c| within(&module, c))
            && subsystem_of(&module).is_none()
            && !PLUG_BOARD.iter().any(|p| within(&module, p));
        if !in_core {
            continue;
        }
        for path in resolved_paths(&code_of(&file), &module_of(&file)) {
            if let Some(sub) = subsystem_of(&path) {
                let shown = file.strip_prefix(&root).unwrap().display().to_string();
                edges.insert((shown, sub.to_owned()));
            }
        }
    }
    edges
}

#[test]
fn the_core_imports_none_of_the_subsystems() {
    let found = core_to_subsystem_edges();
    let known: BTreeSet<(String, String)> =
        NOT_YET_DETACHED.iter().map(|(f, s)| ((*f).to_owned(), (*s).to_owned())).collect();
    let new: Vec<String> = found.difference(&known).map(|(f, s)| format!("{f} uses {s}")).collect();
    let gone: Vec<String> =
        known.difference(&found).map(|(f, s)| format!("{f} no longer uses {s}")).collect();
    assert!(
        new.is_empty(),
        "the recording core imports a subsystem (a subsystem attaches to the core through \
         `trace_log::attach`, never the reverse):\n  {}",
        new.join("\n  ")
    );
    assert!(gone.is_empty(), "remove from NOT_YET_DETACHED:\n  {}", gone.join("\n  "));
}

#[test]
fn the_core_scan_resolves_crate_super_self_and_child_paths() {
    let module = ["trace_log".to_owned(), "lifecycle".to_owned()];
    let code = "mod kid;\nuse super::{set_clock_hint, system, trigger::Armed};\nuse crate::{a::{B, C}, d};\n\
                let x = self::y::z(); kid::run(); other::thing(); $crate::e::f;\nuse super::super::top::T;\n";
    assert_eq!(
        resolved_paths(code, &module),
        [
            "trace_log::set_clock_hint",
            "trace_log::system",
            "trace_log::trigger::Armed",
            "a::B",
            "a::C",
            "d",
            "trace_log::lifecycle::y::z",
            "trace_log::lifecycle::kid::run",
            "top::T",
        ]
    );
    assert_eq!(subsystem_of("trace_log::system"), Some("system"));
    assert_eq!(subsystem_of("trace_log::streams_of"), None);
    assert_eq!(subsystem_of("stream::SATURATION"), Some("stream"));
}

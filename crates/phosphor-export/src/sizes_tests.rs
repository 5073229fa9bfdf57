//! No function passes 120 lines and no file 800, anywhere in the workspace (`crates/`, `bench/`,
//! `fuzz/`): a long function is split along its steps, a long file into modules. The limits hold
//! for every file, tests included, with no list of exceptions.
//!
//! The scan reads source as rustfmt leaves it: a function starts on a line whose first words are
//! its qualifiers (`pub`, `pub(crate)`, `const`, `async`, `unsafe`, `extern "C"`) and `fn NAME`,
//! at any indent, and ends at the first line after it that is a `}` at the same indent. Its length
//! counts both lines. A declaration without a body (a trait's, ending in `;`) is no function here,
//! and neither is a body closed on the line that opens it.

use std::path::{Path, PathBuf};

/// The most lines a function may take, from its `fn` line to its closing brace.
const FUNCTION_LINES: usize = 120;
/// The most lines a source file may take.
const FILE_LINES: usize = 800;

/// A function found by the scan: its name, the line its `fn` is on (from 1), and its length.
#[derive(Debug, PartialEq)]
struct Function {
    name: String,
    line: usize,
    lines: usize,
}

/// The name of the function `line` starts, if it starts one.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    loop {
        let word_end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
        let word = &rest[..word_end];
        let qualifier = matches!(word, "pub" | "const" | "async" | "unsafe" | "extern" | "default")
            || word.starts_with("pub(")
            || (word.starts_with('"') && word.ends_with('"') && word.len() > 1);
        if word == "fn" {
            let name = rest[word_end..].trim_start();
            let end = name.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(name.len());
            return (end > 0).then(|| &name[..end]);
        }
        if !qualifier {
            return None;
        }
        rest = rest[word_end..].trim_start();
    }
}

/// Every function of `source` with a body, in order (nested ones too).
fn functions(source: &str) -> Result<Vec<Function>, String> {
    let lines: Vec<&str> = source.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        let indent = &line[..line.len() - line.trim_start().len()];
        // The signature runs to the line that opens the body or ends the declaration.
        let Some(open) = (i..lines.len()).find(|&j| {
            let t = lines[j].trim_end();
            t.ends_with('{') || t.ends_with(';') || t.ends_with('}')
        }) else {
            return Err(format!("line {}: `fn {name}` has no end to its signature", i + 1));
        };
        let opened = lines[open].trim_end();
        if !opened.ends_with('{') {
            // A declaration (`;`), or a body closed on the line that opens it.
            continue;
        }
        let Some(close) = (open + 1..lines.len()).find(|&j| {
            let l = lines[j].trim_end();
            l.strip_prefix(indent).is_some_and(|rest| rest == "}")
        }) else {
            return Err(format!("line {}: `fn {name}` has no `}}` at its indent after it", i + 1));
        };
        found.push(Function { name: name.to_owned(), line: i + 1, lines: close - i + 1 });
    }
    Ok(found)
}

/// What in `source` (the file `file`) passes the limits, a sentence each.
fn over_limits(file: &str, source: &str) -> Vec<String> {
    let mut over = Vec::new();
    let count = source.lines().count();
    if count > FILE_LINES {
        over.push(format!("{file}: {count} lines (the limit is {FILE_LINES}: split it into modules)"));
    }
    match functions(source) {
        Ok(fns) => over.extend(fns.into_iter().filter(|f| f.lines > FUNCTION_LINES).map(|f| {
            format!(
                "{file}:{}: fn {} is {} lines (the limit is {FUNCTION_LINES}: split it along its steps)",
                f.line, f.name, f.lines
            )
        })),
        Err(why) => over.push(format!("{file}: {why} (the scan reads rustfmt's layout)")),
    }
    over
}

/// The `.rs` files under `dir`, leaving out build output (`target`) and hidden folders.
fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, files);
            }
        } else if name.ends_with(".rs") {
            files.push(path);
        }
    }
}

#[test]
fn no_function_passes_120_lines_and_no_file_800() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in ["crates", "bench", "fuzz"] {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    // The scan saw the workspace (this file among it), not an empty folder.
    assert!(files.iter().any(|f| f.ends_with("phosphor-export/src/sizes_tests.rs")), "{}", root.display());
    let mut over = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let shown = file.strip_prefix(&root).unwrap_or(file).display().to_string();
        over.extend(over_limits(&shown, &source));
    }
    assert!(over.is_empty(), "{} over the limits:\n{}", over.len(), over.join("\n"));
}

/// A function of `body` lines (its `fn` line and its `}` included) at `indent`.
fn synthetic(indent: &str, signature: &str, body: usize) -> String {
    let mut s = format!("{indent}{signature} {{\n");
    for i in 0..body - 2 {
        s.push_str(&format!("{indent}    let _x{i} = {i};\n"));
    }
    s.push_str(&format!("{indent}}}\n"));
    s
}

#[test]
fn the_scan_finds_functions_at_any_indent_and_counts_their_lines() {
    let mut source = String::from("//! fn not_a_function() {\nuse std::io;\n\n");
    source.push_str(&synthetic("", "pub(crate) fn top<R: io::Read>(r: R) -> u32", 121));
    source.push_str("impl Thing {\n");
    source.push_str(&synthetic("    ", "pub const unsafe fn method(&self)", 120));
    source.push_str("    fn declared(&self);\n");
    source.push_str("    fn one_line(&self) -> u32 { 1 }\n");
    source
        .push_str("    async fn multi_line_signature(\n        a: u32,\n    ) -> u32 {\n        a\n    }\n");
    source.push_str("}\n");
    source.push_str(&synthetic("        ", "extern \"C\" fn deep()", 3));
    let fns = functions(&source).unwrap();
    let found: Vec<(&str, usize, usize)> = fns.iter().map(|f| (f.name.as_str(), f.line, f.lines)).collect();
    assert_eq!(
        found,
        [("top", 4, 121), ("method", 126, 120), ("multi_line_signature", 248, 5), ("deep", 254, 3)]
    );
    // Only the function past the limit is named, with its file, line and length.
    let over = over_limits("x.rs", &source);
    assert_eq!(over, ["x.rs:4: fn top is 121 lines (the limit is 120: split it along its steps)".to_owned()]);
}

#[test]
fn the_scan_names_a_file_past_800_lines_and_a_function_it_cannot_close() {
    let long = "// a line\n".repeat(801);
    assert_eq!(
        over_limits("long.rs", &long),
        ["long.rs: 801 lines (the limit is 800: split it into modules)"]
    );
    assert!(over_limits("short.rs", &"// a line\n".repeat(800)).is_empty());
    // A closing brace at another indent than its `fn`: not rustfmt's layout, said so.
    let odd = "fn odd() {\n    let x = 1;\n  }\n";
    let over = over_limits("odd.rs", odd);
    assert_eq!(over.len(), 1, "{over:?}");
    assert!(over[0].starts_with("odd.rs: line 1: `fn odd` has no `}` at its indent"), "{over:?}");
}

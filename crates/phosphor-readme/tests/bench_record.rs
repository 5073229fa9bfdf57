//! BENCHMARKS.md's generated tables: the rewriter keeps every byte outside its markers, refuses a
//! document or a table it cannot rewrite safely, and the measurements' parsers read what divan and
//! `phosphor-craft bench` print. Also: BENCHMARKS.md's own sections are rewritable.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use phosphor_readme::bench_record::{
    check_table, divan_table, hostile_table, replace_section, section_body, utc_date, Stamp,
};

fn stamp(commit: &str) -> Stamp {
    Stamp {
        commit: commit.into(),
        dirty: false,
        date: "2026-12-06 10:30 UTC".into(),
        load: Some("3.10".into()),
        command: "N=200000 scripts/callgrind.sh".into(),
    }
}

const TABLE: &str = "| scenario | instr/iter |\n|---|---:|\n| `instant` | 47.2 |\n| `scope` | 62.2 |\n";

const DOC: &str = "# Benchmarks\n\n## Hot path\n\nHand-written text | with a pipe.\n\n\
<!-- bench:callgrind -->\nthe old table\n| a |\n<!-- /bench:callgrind -->\n\nAfter the table.\n\n\
<!-- bench:other -->\nother body\n<!-- /bench:other -->\n";

#[test]
fn a_rewrite_changes_only_the_body_between_the_markers_and_a_second_one_is_a_no_op() {
    let new = replace_section("B.md", DOC, "callgrind", &stamp("abc1234"), TABLE).unwrap();
    let open = "<!-- bench:callgrind -->\n";
    let close = "<!-- /bench:callgrind -->";
    let before = |d: &str| d[..d.find(open).unwrap() + open.len()].to_string();
    let after = |d: &str| d[d.find(close).unwrap()..].to_string();
    assert_eq!(before(&new), before(DOC));
    assert_eq!(after(&new), after(DOC));
    let body = section_body(&new, "callgrind").unwrap();
    assert!(body.starts_with("> **Measured:** commit `abc1234`, 2026-12-06 10:30 UTC, load 3.10."), "{body}");
    assert!(body.contains("**Regenerate:** `N=200000 scripts/callgrind.sh`"), "{body}");
    assert!(body.ends_with(&format!("\n\n{TABLE}")), "{body}");
    assert_eq!(section_body(&new, "other"), section_body(DOC, "other"));

    // The same measurement again: the same bytes. Another commit: only the stamp differs.
    assert_eq!(replace_section("B.md", &new, "callgrind", &stamp("abc1234"), TABLE).unwrap(), new);
    let again = replace_section("B.md", &new, "callgrind", &stamp("def5678"), TABLE).unwrap();
    assert_eq!(again, new.replace("`abc1234`", "`def5678`"));
}

#[test]
fn a_dirty_tree_and_an_unknown_load_show_in_the_stamp() {
    let s = Stamp { dirty: true, load: None, ..stamp("abc1234") };
    let line = s.line("callgrind");
    assert!(
        line.starts_with("> **Measured:** commit `abc1234` with uncommitted changes, 2026-12-06 10:30 UTC.")
    );
    assert!(!line.contains("load"), "{line}");
}

#[test]
fn a_missing_repeated_reversed_or_nested_marker_is_refused_with_the_file_and_offset() {
    let err =
        |doc: &str| replace_section("BENCHMARKS.md", doc, "callgrind", &stamp("a"), TABLE).unwrap_err().0;

    let e = err(&DOC.replace("<!-- bench:callgrind -->\n", ""));
    assert!(e.starts_with("BENCHMARKS.md: no line `<!-- bench:callgrind -->`"), "{e}");
    let e = err(&DOC.replace("<!-- /bench:callgrind -->\n", ""));
    assert!(e.starts_with("BENCHMARKS.md: no line `<!-- /bench:callgrind -->`"), "{e}");
    // A marker inside a line is not a marker.
    let e = err(&DOC.replace("<!-- bench:callgrind -->\n", "see <!-- bench:callgrind -->\n"));
    assert!(e.contains("no line `<!-- bench:callgrind -->`"), "{e}");

    let twice = format!("{DOC}<!-- bench:callgrind -->\n");
    let e = err(&twice);
    let second = twice.rfind("<!-- bench:callgrind -->").unwrap();
    assert!(e.contains("appears more than once") && e.contains(&format!("and {second})")), "{e}");

    let reversed = "<!-- /bench:callgrind -->\nx\n<!-- bench:callgrind -->\n";
    let e = err(reversed);
    assert!(e.contains("(byte 0) comes before"), "{e}");

    let nested =
        "<!-- bench:callgrind -->\n<!-- bench:other -->\n<!-- /bench:callgrind -->\n<!-- /bench:other -->\n";
    let e = err(nested);
    assert!(e.contains("another section's marker at byte 25"), "{e}");

    let e = replace_section("B.md", DOC, "bad name", &stamp("a"), TABLE).unwrap_err().0;
    assert!(e.contains("section name"), "{e}");
}

#[test]
fn only_one_well_formed_table_is_written() {
    assert_eq!(check_table(&format!("\n{TABLE}\n")), Ok(TABLE.trim_end()));
    assert!(check_table("| a | b |\n|---|:-:|\n| 1 | 2 |").is_ok());

    let bad = [
        ("| a | b |\n|---|---|\n", "at least one row"),
        ("| a | b |\n|---|---|\n| 1 |\n", "line 3 has 1 cells, the header 2"),
        ("| a | b |\n| x | y |\n| 1 | 2 |\n", "line 2 is not a separator row"),
        ("| a | b |\n|---|---|\n| 1 | 2 |\n\nsome text\n", "line 4 is not a `| … |` row"),
        ("Instructions per iteration:\n| a |\n|---|\n| 1 |\n", "line 1 is not a `| … |` row"),
        ("", "got 0 line(s)"),
    ];
    for (table, expected) in bad {
        let e = check_table(table).unwrap_err();
        assert!(e.contains(expected), "{table:?}: {e}");
        // And the document is not touched: the rewrite fails as a whole.
        let e = replace_section("B.md", DOC, "callgrind", &stamp("a"), table).unwrap_err().0;
        assert!(e.starts_with("the table for `bench:callgrind`"), "{e}");
    }
}

/// What `cargo bench` prints for a divan benchmark (divan 0.1), with a group of two.
const DIVAN: &str = "     Running benches/hot_path.rs (target/release/deps/hot_path-1234)
Timer precision: 20 ns
hot_path               fastest       │ slowest       │ median        │ mean          │ samples │ iters
├─ counter             9.1 ns        │ 14.2 ns       │ 9.263 ns      │ 9.4 ns        │ 1000    │ 10000000
├─ disabled_category   0.49 ns       │ 0.9 ns        │ 505 ps        │ 0.52 ns       │ 1000    │ 10000000
├─ group                             │               │               │               │         │
│  ├─ fast             1 ns          │ 2 ns          │ 1.5 ns        │ 1.6 ns        │ 100     │ 100
│  ╰─ slow             1 µs          │ 2 µs          │ 1.2 µs        │ 1.3 µs        │ 100     │ 100
├─ limit_loop          9.1 ns        │ 12 ns         │ 9.204 ns      │ 9.3 ns        │ 1000    │ 10000000
╰─ scope               18 ns         │ 25 ns         │ 18.78 ns      │ 19 ns         │ 1000    │ 10000000
global trace: emitted 42097152, recorded 2080721
";

#[test]
fn divan_medians_become_ratios_to_the_baseline_in_divans_order() {
    let table = divan_table(DIVAN, "limit_loop").unwrap();
    assert_eq!(
        table,
        "| scenario | median | × `limit_loop` |\n|---|---:|---:|\n\
         | `counter` | 9.263 ns | 1.006 |\n\
         | `disabled_category` | 505 ps | 0.055 |\n\
         | `group/fast` | 1.5 ns | 0.163 |\n\
         | `group/slow` | 1.2 µs | 130.378 |\n\
         | `limit_loop` | 9.204 ns | 1.000 |\n\
         | `scope` | 18.78 ns | 2.040 |\n"
    );
    assert!(check_table(&table).is_ok());
    assert!(divan_table(DIVAN, "missing").unwrap_err().contains("the baseline `missing`"));
    assert!(divan_table("error: could not compile\n", "limit_loop")
        .unwrap_err()
        .contains("no benchmark rows"));
    let odd = DIVAN.replace("18.78 ns", "18.78 fortnights");
    assert!(divan_table(&odd, "limit_loop").unwrap_err().contains("not a divan duration"));
}

/// What `scripts/bench-hostile.sh` prints: its header line, then `phosphor-craft bench`'s table.
const HOSTILE: &str = "phosphor abc1234, 2 cores, load 3.1

| file | size | command | exit | wall | peak RSS | RSS / size | output | within targets |
|---|---:|---|---|---:|---:|---:|---:|---|
| many-callsites | 82.3 MiB | info | 0 | 0.50 s | 40 MiB | 0.5 | 0.0 MiB | yes |
| many-callsites | 82.3 MiB | stats | 0 | 7.63 s | 250 MiB | 3.0 | 1.0 MiB | **no** |
| many-callsites | 82.3 MiB | stats --json | 0 | 7.10 s | 251 MiB | 3.1 | 9.0 MiB | **no** |
| clock-zero | 0.0 MiB | info | 0 | 0.00 s | 33 MiB | 10297.5 | 0.0 MiB | yes |
| clock-zero | 0.0 MiB | logs | 2 | 0.00 s | 33 MiB | 10297.5 | 0.0 MiB | yes |
| ring | 223.8 MiB | recover -o | 0 | 1.87 s | 485 MiB | 2.2 | 0.0 MiB | yes |
";

#[test]
fn hostile_runs_fold_into_a_row_per_file_with_its_worst_command() {
    let table = hostile_table(HOSTILE).unwrap();
    assert_eq!(
        table,
        "| file | size | commands | slowest | highest peak RSS (× file) | within targets |\n\
         |---|---:|---:|---|---|---|\n\
         | many-callsites | 82.3 MiB | 3 | 7.63 s (stats) | 251 MiB, 3.1× (stats --json) | **not:** stats, stats --json |\n\
         | clock-zero | 0.0 MiB | 2 | 0.00 s (every command) | 33 MiB, 10297.5× (info) | all |\n\
         | ring | 223.8 MiB | 1 | 1.87 s (recover -o) | 485 MiB, 2.2× (recover -o) | all |\n"
    );
    assert!(check_table(&table).is_ok());
    assert!(hostile_table("phosphor-craft: no such file\n").unwrap_err().contains("no rows"));
    let e = hostile_table(&HOSTILE.replace("| 7.63 s |", "| fast |")).unwrap_err();
    assert!(e.contains("`wall` is not a number"), "{e}");
}

#[test]
fn utc_dates_follow_the_calendar() {
    assert_eq!(utc_date(0), "1970-01-01 00:00 UTC");
    assert_eq!(utc_date(951_782_400 + 3_600 * 13 + 60 * 7), "2000-02-29 13:07 UTC");
    assert_eq!(utc_date(1_796_601_599), "2026-12-06 23:59 UTC");
    assert_eq!(utc_date(4_107_542_400), "2100-03-01 00:00 UTC");
}

fn temp_doc(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bench-record-{}-{name}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("BENCHMARKS.md");
    fs::write(&path, text).unwrap();
    path
}

fn bench_record(doc: &Path, args: &[&str], stdin: &str) -> (bool, String) {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_bench-record"))
        .args(args)
        .args(["--doc", doc.to_str().unwrap(), "--date", "2026-12-06 10:30 UTC", "--load", "1.00"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn the_binary_rewrites_the_file_and_leaves_it_whole_on_a_missing_marker() {
    let doc = temp_doc("bin", DOC);
    let (ok, err) =
        bench_record(&doc, &["callgrind", "--command", "scripts/callgrind.sh", "--commit", "abc1234"], TABLE);
    assert!(ok, "{err}");
    let text = fs::read_to_string(&doc).unwrap();
    assert_eq!(
        text,
        replace_section(
            "x",
            DOC,
            "callgrind",
            &Stamp { load: Some("1.00".into()), command: "scripts/callgrind.sh".into(), ..stamp("abc1234") },
            TABLE
        )
        .unwrap()
    );

    let (ok, err) = bench_record(&doc, &["missing", "--command", "x", "--commit", "abc1234"], TABLE);
    assert!(!ok);
    assert!(err.contains("BENCHMARKS.md: no line `<!-- bench:missing -->`"), "{err}");
    assert_eq!(fs::read_to_string(&doc).unwrap(), text, "a refused rewrite changed the file");

    let (ok, err) =
        bench_record(&doc, &["other", "--from", "divan", "--command", "x", "--commit", "a"], DIVAN);
    assert!(ok, "{err}");
    assert!(section_body(&fs::read_to_string(&doc).unwrap(), "other")
        .unwrap()
        .contains("| `scope` | 18.78 ns | 2.040 |"));
    let (ok, err) = bench_record(&doc, &["other", "--command", "x"], "not a table\n");
    assert!(!ok && err.contains("the table for `bench:other`: a table needs a header"), "{err}");
    fs::remove_dir_all(doc.parent().unwrap()).unwrap();
}

/// The committed BENCHMARKS.md: every generated section has its markers once, in order, and a
/// stamp and a table between them, so the scripts can rewrite it.
#[test]
fn benchmarks_md_generated_sections_are_rewritable() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = fs::read_to_string(root.join("BENCHMARKS.md")).unwrap();
    let names: Vec<&str> =
        doc.lines().filter_map(|l| l.trim_end().strip_prefix("<!-- bench:")?.strip_suffix(" -->")).collect();
    for wanted in ["peers", "callgrind", "hot-path-divan", "hostile", "sql"] {
        assert!(names.contains(&wanted), "BENCHMARKS.md has no `bench:{wanted}` section (has {names:?})");
    }
    for name in names {
        let body = section_body(&doc, name).unwrap_or_else(|| panic!("`bench:{name}`'s markers"));
        let (line, table) = body.split_once("\n\n").unwrap_or_else(|| panic!("`bench:{name}`: {body}"));
        assert!(line.starts_with("> **Measured:** commit `"), "`bench:{name}`: {line}");
        check_table(table).unwrap_or_else(|e| panic!("`bench:{name}`: {e}"));
        replace_section("BENCHMARKS.md", &doc, name, &stamp("abc1234"), table).unwrap();
    }
}

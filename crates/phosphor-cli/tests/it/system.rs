//! The system context (format 1.6) through the CLI: `stats`, `info` and `flamegraph --samples`
//! on `phosphor_craft::system`'s trace, whose figures are known.

use std::path::PathBuf;

use phosphor_craft::system::{report_row, STATS_STATUS, STATS_WORK_ROW};

use crate::cli::{phosphor, scratch, stderr, stdout};

/// The crafted trace, written into a scratch directory of its own (running the binary empties
/// the test's).
fn crafted(test: &str) -> PathBuf {
    let path = scratch(&format!("{test}-input")).join("system.phos");
    std::fs::write(&path, phosphor_craft::system::system_trace().unwrap()).unwrap();
    path
}

#[test]
fn stats_show_the_status_and_each_scopes_cpu_time_switches_samples_and_allocations() {
    let test = "system-stats";
    let file = crafted(test);
    let out = phosphor(test, &["stats", file.to_str().unwrap()]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains(STATS_STATUS), "{text}");
    assert_eq!(report_row(&text, "work").as_deref(), Some(&STATS_WORK_ROW[..]), "{text}");
    // The mapped file does not exist: said once, on stderr.
    let err = stderr(&out);
    assert_eq!(err.matches("warning: symbols:").count(), 1, "{err}");
    assert!(err.contains("/nonexistent/phosphor-craft/app: cannot open it"), "{err}");

    let out = phosphor(test, &["stats", "--json", file.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let inner =
        v["paths"].as_array().unwrap().iter().find(|k| k["path"] == serde_json::json!(["work", "inner"]));
    let inner = &inner.expect("work/inner")["system"];
    assert_eq!((inner["on_cpu_ns"].as_u64(), inner["allocs"].as_u64()), (Some(18_000_000), Some(200)));
}

#[test]
fn info_shows_the_system_status_and_counts() {
    let test = "system-info";
    let file = crafted(test);
    let out = phosphor(test, &["info", file.to_str().unwrap()]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    let version = format!("format version 1.{}", phosphor::format::file::FORMAT_MINOR);
    assert!(text.contains(&version), "{text}");
    assert!(
        text.contains("system      context switches on; CPU samples on (999 Hz); allocations on"),
        "{text}"
    );
    assert!(
        text.contains("2 switches, 4 CPU samples, 0 allocation samples on 1 threads; 3 heap totals, 1 mappings; in 1 blocks"),
        "{text}"
    );
}

#[test]
fn flamegraph_samples_folds_the_symbolized_stacks_root_first_optionally_under_their_scopes() {
    let test = "system-flamegraph";
    let file = crafted(test);
    let folded = file.with_file_name("samples.folded");
    let out = phosphor(
        test,
        &["flamegraph", "--samples", "--folded", file.to_str().unwrap(), "-o", folded.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&folded).unwrap(),
        "main;app+0x1000 1\nmain;app+0x2000;app+0x1000 1\nmain;app+0x2000;app+0x3000 2\n"
    );
    let out = phosphor(
        test,
        &[
            "flamegraph",
            "--samples",
            "--scopes",
            "--folded",
            file.to_str().unwrap(),
            "-o",
            folded.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&folded).unwrap(),
        "main;work;app+0x1000 1\nmain;work;app+0x2000;app+0x1000 1\nmain;work;inner;app+0x2000;app+0x3000 2\n"
    );
    let svg = file.with_file_name("samples.svg");
    let out =
        phosphor(test, &["flamegraph", "--samples", file.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<?xml") && svg.contains("app+0x3000"), "{}", &svg[..200.min(svg.len())]);
    assert!(stderr(&out).contains("4 CPU samples in 3 stacks"), "{}", stderr(&out));
}

#[test]
fn flamegraph_samples_of_a_trace_without_samples_is_an_error_naming_the_file() {
    let test = "system-flamegraph-none";
    let dir = scratch(&format!("{test}-input"));
    let file = dir.join("golden.phos");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../phosphor-format/tests/data/golden-v1.5.phtrace"),
        &file,
    )
    .unwrap();
    let out = phosphor(
        test,
        &["flamegraph", "--samples", file.to_str().unwrap(), "-o", dir.join("x.svg").to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("golden.phos: it has no CPU samples"), "{}", stderr(&out));
}

//! `phosphor sql` and `convert --to parquet` on the demo's trace (built with `--features sql`),
//! or, in the default build, the message that names the install command.

use crate::cli::{phosphor, stderr};

#[cfg(feature = "sql")]
#[test]
fn sql_per_path_counts_and_totals_equal_phosphor_stats_json_from_the_file_and_its_parquet() {
    use std::collections::BTreeMap;

    use crate::cli::{scratch, stdout};

    let dir = scratch("sql-stats-files").join("out");
    let d = dir.to_str().unwrap();
    let out = phosphor("sql-stats-demo", &["demo", "--threads", "2", "--events", "3000", "--out", d]);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = dir.join("trace.phos");
    let f = file.to_str().unwrap();

    let out = phosphor("sql-stats-json", &["stats", f, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut expected = BTreeMap::new();
    for k in json["paths"].as_array().unwrap() {
        if !matches!(k["type"].as_str(), Some("scope" | "lock_wait" | "lock_held")) {
            continue;
        }
        let path: Vec<&str> = k["path"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
        let total = k["durations"]["total_ns"].as_u64().unwrap_or(0);
        expected.insert(path.join("/"), (k["count"].as_u64().unwrap(), total));
    }
    assert!(expected.len() > 5, "{expected:?}");

    let query = "SELECT path, count(*), coalesce(sum(dur), 0) FROM slices GROUP BY path";
    let rows = |out: &std::process::Output| {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
        let text = stdout(out);
        let mut got = BTreeMap::new();
        // CSV: a header, then `path,count,total` (the demo's paths hold no comma or quote).
        for line in text.lines().skip(1) {
            let mut f = line.rsplitn(3, ',');
            let (total, count, path) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
            got.insert(path.to_owned(), (count.parse::<u64>().unwrap(), total.parse::<u64>().unwrap()));
        }
        got
    };
    assert_eq!(rows(&phosphor("sql-stats-query", &["sql", f, query, "--csv"])), expected);

    let tables = dir.join("tables");
    let t = tables.to_str().unwrap();
    let out = phosphor("sql-stats-parquet", &["convert", f, "--to", "parquet", "-o", t]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(tables.join("slices.parquet").is_file());
    assert_eq!(rows(&phosphor("sql-stats-query-parquet", &["sql", t, query, "--csv"])), expected);
}

#[cfg(feature = "sql")]
#[test]
fn sql_errors_name_the_query_or_the_file_and_exit_2() {
    use crate::cli::scratch;

    let dir = scratch("sql-errors-files");
    let bad = dir.join("bad.phos");
    std::fs::write(&bad, b"not a trace").unwrap();
    let out = phosphor("sql-errors-file", &["sql", bad.to_str().unwrap(), "SELECT 1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(bad.to_str().unwrap()), "{}", stderr(&out));
}

#[cfg(not(feature = "sql"))]
#[test]
fn without_the_sql_feature_sql_and_parquet_name_the_install_command() {
    for args in [&["sql", "x.phos", "SELECT 1"][..], &["convert", "Cargo.toml", "--to", "parquet", "-o", "t"]]
    {
        let out = phosphor("sql-off", args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains("--features sql"), "{}", stderr(&out));
    }
}

//! `phosphor sql … -o FILE` (a query's result to a file) and `convert --to parquet --partition
//! trace` (Hive partitions read back by `phosphor sql`).

#[cfg(feature = "sql")]
use crate::cli::{phosphor, scratch, stderr, stdout};

/// The CSV rows of `query` over `paths` (the header first, then the rows sorted).
#[cfg(feature = "sql")]
fn csv_rows(test: &str, paths: &[&str], query: &str) -> Vec<String> {
    let mut args = vec!["sql"];
    args.extend_from_slice(paths);
    args.extend([query, "--csv"]);
    let out = phosphor(test, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[1..].sort();
    lines
}

/// Two demo traces in `DIR/traces/`: one set of tables with two values of `trace`.
#[cfg(feature = "sql")]
fn two_traces(test: &str) -> std::path::PathBuf {
    let dir = scratch(&format!("{test}-files"));
    let traces = dir.join("traces");
    for (name, threads) in [("a", "1"), ("b", "2")] {
        let out = dir.join(name);
        let o = out.to_str().unwrap();
        let run = phosphor(test, &["demo", "--threads", threads, "--events", "1500", "--out", o]);
        assert!(run.status.success(), "{}", stderr(&run));
        std::fs::create_dir_all(&traces).unwrap();
        std::fs::rename(out.join("trace.phos"), traces.join(format!("{name}.phos"))).unwrap();
    }
    traces
}

#[cfg(feature = "sql")]
#[test]
fn sql_convert_partitioned_by_trace_reads_back_to_the_same_rows() {
    let traces = two_traces("sql-partition");
    let t = traces.to_str().unwrap();
    let out = traces.with_file_name("partitioned");
    let o = out.to_str().unwrap();
    let run = phosphor(
        "sql-partition-convert",
        &["convert", t, "--to", "parquet", "--partition", "trace", "-o", o],
    );
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    // Hive partitions: the trace's name (`…/traces/a.phos`) escaped into its folder's name.
    let a = traces.join("a.phos").display().to_string().replace('/', "%2F");
    assert!(
        out.join("slices").join(format!("trace={a}")).join("part-0.parquet").is_file(),
        "{}",
        stderr(&run)
    );

    for table in ["slices", "instants", "counters", "logs", "threads"] {
        let query = format!("SELECT * FROM {table}");
        let expected = csv_rows("sql-partition-traces", &[t], &query);
        assert!(expected.len() > 1, "{table} has rows");
        assert_eq!(csv_rows("sql-partition-read", &[o], &query), expected, "{table}");
    }
    let per_trace = "SELECT trace, count(*) FROM slices GROUP BY trace";
    assert_eq!(csv_rows("sql-partition-count", &[o], per_trace).len(), 3);

    let run = phosphor("sql-partition-otlp", &["convert", t, "--to", "chrome", "--partition", "trace"]);
    assert_eq!(run.status.code(), Some(2));
    assert!(stderr(&run).contains("--partition applies to --to parquet only"), "{}", stderr(&run));
}

#[cfg(feature = "sql")]
#[test]
fn sql_output_file_takes_its_format_from_its_extension() {
    let traces = two_traces("sql-o");
    let t = traces.to_str().unwrap();
    let dir = traces.parent().unwrap().to_path_buf();
    let query = "SELECT trace, path, count(*) AS n, sum(dur) AS total FROM slices GROUP BY trace, path";
    let expected = csv_rows("sql-o-print", &[t], query);
    assert!(expected.len() > 4);

    // CSV and JSON Lines: what --csv and --json print.
    for (name, flag) in [("r.csv", "--csv"), ("r.json", "--json"), ("r.ndjson", "--json")] {
        let path = dir.join(name);
        let p = path.to_str().unwrap();
        let run = phosphor("sql-o-text", &["sql", t, query, "-o", p]);
        assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
        assert!(run.stdout.is_empty());
        assert!(stderr(&run).contains(&format!("{} rows", expected.len() - 1)), "{}", stderr(&run));
        let printed = phosphor("sql-o-printed", &["sql", t, query, flag]);
        let sorted = |text: String| {
            let mut l: Vec<String> = text.lines().map(str::to_owned).collect();
            l.sort();
            l
        };
        assert_eq!(sorted(std::fs::read_to_string(&path).unwrap()), sorted(stdout(&printed)), "{name}");
    }

    // Parquet: read back as the table `result` of a Parquet folder.
    let folder = dir.join("result");
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("slices.parquet");
    let run = phosphor("sql-o-parquet", &["sql", t, query, "-o", path.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let back = csv_rows("sql-o-back", &[folder.to_str().unwrap()], "SELECT * FROM slices");
    assert_eq!(back, expected);

    // Any other extension: the format must be named.
    let run = phosphor("sql-o-unknown", &["sql", t, query, "-o", "result.xlsx"]);
    assert_eq!(run.status.code(), Some(2));
    assert!(stderr(&run).contains("result.xlsx: -o names the format"), "{}", stderr(&run));
    let run = phosphor("sql-o-csv-flag", &["sql", t, query, "-o", "result.out", "--csv"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
}

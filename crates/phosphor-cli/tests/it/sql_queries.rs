//! docs/SQL.md's worked queries, taken from the page as it is written: each runs in `phosphor sql`
//! (DataFusion) over two `phosphor demo --system` traces and in DuckDB over the same traces'
//! Parquet tables (`convert --to parquet`, read by scripts/duckdb_sql.py in the tests' Python
//! environment), and the two answers must be the same rows. A query whose tables (its
//! `<!-- needs: … -->` comment) the schema does not have yet is skipped, and listed.
#![cfg(feature = "sql")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::cli::{phosphor, python, scratch, stderr, stdout};

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/SQL.md");
const DUCKDB_SQL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/duckdb_sql.py");

/// A worked query of docs/SQL.md.
#[derive(Debug)]
struct Worked {
    title: String,
    /// The tables its `<!-- needs: … -->` comment names.
    needs: Vec<String>,
    sql: String,
}

/// The worked queries of docs/SQL.md: each `### ` section of `## Worked queries`, its ```sql
/// block and its `needs` comment.
fn worked_queries() -> Vec<Worked> {
    let doc = std::fs::read_to_string(DOC).unwrap();
    let (_, section) = doc.split_once("\n## Worked queries\n").expect("docs/SQL.md has ## Worked queries");
    let section = section.split("\n## ").next().unwrap();
    section
        .split("\n### ")
        .skip(1)
        .map(|s| {
            let title = s.lines().next().unwrap().trim().to_owned();
            let needs = s
                .split_once("<!-- needs:")
                .map(|(_, rest)| {
                    let list = rest.split_once("-->").expect("a needs comment ends").0;
                    list.split(',').map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()).collect()
                })
                .unwrap_or_default();
            let sql = s
                .split_once("```sql\n")
                .and_then(|(_, rest)| rest.split_once("```"))
                .unwrap_or_else(|| panic!("{title}: no ```sql block"))
                .0
                .trim()
                .to_owned();
            Worked { title, needs, sql }
        })
        .collect()
}

/// The rows of a CSV document (RFC 4180: quoted fields, `""` inside them), header first.
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let (mut row, mut field) = (Vec::new(), String::new());
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// A cell as both engines' answers are compared: integers as written; a float (`2.5`, `1e-7`,
/// `NaN`) with nine significant digits, or as an integer if it is one (`3.0` is `3`, as an
/// engine that keeps an integer type prints it).
fn normal(cell: &str) -> String {
    if cell.parse::<i128>().is_ok() {
        return cell.to_owned();
    }
    let numeric = cell.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.')
        || matches!(cell.to_ascii_lowercase().as_str(), "nan" | "inf" | "-inf" | "infinity" | "-infinity");
    match cell.parse::<f64>() {
        Ok(x) if numeric && x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 => format!("{}", x as i64),
        Ok(x) if numeric => format!("{x:.8e}"),
        _ => cell.to_owned(),
    }
}

/// `phosphor sql ARGS… QUERY --csv`, its rows (header first), or the error.
fn phosphor_sql(test: &str, inputs: &[&str], query: &str) -> Result<Vec<Vec<String>>, String> {
    let out = phosphor(test, &[&["sql"], inputs, &[query, "--csv"]].concat());
    match out.status.code() {
        Some(0) => Ok(csv_rows(&stdout(&out))),
        _ => Err(stderr(&out)),
    }
}

/// `query` in DuckDB over the Parquet folder `tables`: its rows (header first), or the error.
fn duckdb(tables: &Path, query: &str) -> Result<Vec<Vec<String>>, String> {
    use std::io::Write;
    let mut child = Command::new(python())
        .arg(DUCKDB_SQL)
        .arg(tables)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tests' Python runs");
    child.stdin.take().unwrap().write_all(query.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    match out.status.success() {
        true => Ok(csv_rows(&String::from_utf8(out.stdout).unwrap())),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

/// Records two demo traces with the system context in `dir` (`a/`, and `b/` with a buffer small
/// enough to drop events), returning their files.
fn two_demo_traces(dir: &Path) -> [String; 2] {
    ["a", "b"].map(|name| {
        let out = dir.join(name);
        let mut args =
            vec!["demo", "--threads", "3", "--events", "30000", "--system", "-o", out.to_str().unwrap()];
        if name == "b" {
            args.extend(["--buffer-mib", "2"]);
        }
        let run = phosphor(&format!("sql-queries-demo-{name}"), &args);
        assert!(run.status.success(), "demo {name}: {}", stderr(&run));
        out.join("trace.phos").to_str().unwrap().to_owned()
    })
}

#[test]
fn sql_worked_queries_give_the_same_rows_in_datafusion_and_in_duckdb() {
    let queries = worked_queries();
    assert_eq!(queries.len(), 10, "docs/SQL.md's worked queries: {queries:#?}");
    let dir = scratch("sql-queries-files");
    let [a, b] = two_demo_traces(&dir);
    let traces = [a.as_str(), b.as_str()];
    let tables = dir.join("tables");
    let out = phosphor(
        "sql-queries-parquet",
        &["convert", &a, &b, "--to", "parquet", "-o", tables.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let schema: BTreeSet<String> = phosphor_sql(
        "sql-queries-schema",
        &traces,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
    )
    .unwrap()
    .into_iter()
    .skip(1)
    .map(|r| r[0].clone())
    .collect();
    assert!(schema.contains("slices") && schema.contains("logs"), "{schema:?}");

    let (mut ran, mut skipped, mut failures) = (Vec::new(), Vec::new(), Vec::new());
    for q in &queries {
        // A need is a table, or a table and what its rows must be for the query to have input
        // (`samples x JOIN slices s ON … WHERE …`): counted as written, its table checked here.
        let table_of = |t: &String| t.split_whitespace().next().unwrap_or("").to_owned();
        let missing: Vec<&String> = q.needs.iter().filter(|t| !schema.contains(&table_of(t))).collect();
        if !missing.is_empty() {
            skipped.push(format!("{} (no table {missing:?} yet)", q.title));
            continue;
        }
        let ours = phosphor_sql("sql-queries-run", &traces, &q.sql);
        let theirs = duckdb(&tables, &q.sql);
        let (ours, theirs) = match (ours, theirs) {
            (Ok(o), Ok(t)) => (o, t),
            (o, t) => {
                failures.push(format!("{}: phosphor sql: {:?}\nduckdb: {:?}", q.title, o.err(), t.err()));
                continue;
            }
        };
        let norm = |rows: &[Vec<String>]| -> Vec<Vec<String>> {
            rows.iter().skip(1).map(|r| r.iter().map(|c| normal(c)).collect()).collect()
        };
        let (o, t) = (norm(&ours), norm(&theirs));
        // `phosphor sql --csv` prints no header for no rows.
        let (our_header, their_header) = (ours.first(), theirs.first());
        if our_header.is_some() && our_header.map(Vec::len) != their_header.map(Vec::len) {
            failures.push(format!("{}: columns {our_header:?} against DuckDB's {their_header:?}", q.title));
        } else if o != t {
            let first = o.iter().zip(&t).position(|(x, y)| x != y).unwrap_or(o.len().min(t.len()));
            failures.push(format!(
                "{}: {} rows against DuckDB's {}; first difference at row {first}: {:?} against {:?}",
                q.title,
                o.len(),
                t.len(),
                o.get(first),
                t.get(first)
            ));
        } else if o.is_empty() {
            // Empty is an answer only when a table the query reads has nothing in these traces
            // (the system does not allow switches or samples, say).
            let empty: Vec<&String> = q
                .needs
                .iter()
                .filter(|t| {
                    let count =
                        phosphor_sql("sql-queries-count", &traces, &format!("SELECT count(*) FROM {t}"));
                    count.unwrap()[1][0] == "0"
                })
                .collect();
            if empty.is_empty() {
                failures.push(format!("{}: no rows, in either engine", q.title));
            } else {
                ran.push(format!("{} (no rows: nothing in {empty:?})", q.title));
            }
        } else {
            ran.push(format!("{} ({} rows)", q.title, o.len()));
        }
    }
    println!("the same rows in DataFusion and in DuckDB: {ran:#?}");
    println!("skipped, their tables not in the schema yet: {skipped:#?}");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The queries of today's tables always run.
    assert!(ran.len() >= 5, "{ran:?}");
}

#[test]
fn sql_worked_query_of_self_time_counts_and_totals_equal_phosphor_stats() {
    let queries = worked_queries();
    let q = queries.iter().find(|q| q.title.contains("self time")).expect("the self time query");
    let dir = scratch("sql-queries-stats-files").join("out");
    let d = dir.to_str().unwrap();
    let out = phosphor("sql-queries-stats-demo", &["demo", "--threads", "2", "--events", "5000", "-o", d]);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = dir.join("trace.phos");
    let f = file.to_str().unwrap();

    let out = phosphor("sql-queries-stats-json", &["stats", f, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut stats = BTreeMap::new();
    for k in json["paths"].as_array().unwrap() {
        let path: Vec<&str> = k["path"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
        let total = k["durations"]["total_ns"].as_u64().unwrap_or(0);
        stats.insert(
            (path.join("/"), k["type"].as_str().unwrap().to_owned()),
            (k["count"].as_u64().unwrap(), total),
        );
    }

    let rows = phosphor_sql("sql-queries-stats-query", &[f], &q.sql).unwrap();
    assert_eq!(rows[0], ["path", "calls", "self_ns", "total_ns"]);
    assert_eq!(rows.len(), 11, "ten paths: {rows:?}");
    for r in &rows[1..] {
        let (calls, total): (u64, u64) = (r[1].parse().unwrap(), r[3].parse().unwrap());
        // A path is of one kind: scope, or a lock's wait or hold.
        let theirs: Vec<_> = ["scope", "lock_wait", "lock_held"]
            .iter()
            .filter_map(|kind| stats.get(&(r[0].clone(), kind.to_string())))
            .collect();
        assert_eq!(theirs, [&(calls, total)], "{r:?}");
        let self_ns: u64 = r[2].parse().unwrap();
        assert!(self_ns <= total, "{r:?}");
    }
}

/// A log's or an instant's `slice_id` is the `slices.id` of the slice it happened in, in a
/// query over trace files as over their Parquet tables.
#[test]
fn sql_marks_slice_id_names_the_enclosing_slice_over_trace_files_and_parquet() {
    let dir = scratch("sql-queries-ids-files").join("out");
    let d = dir.to_str().unwrap();
    let out = phosphor("sql-queries-ids-demo", &["demo", "--threads", "2", "--events", "5000", "-o", d]);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = dir.join("trace.phos");
    let f = file.to_str().unwrap();
    let tables = dir.join("tables");
    let t = tables.to_str().unwrap();
    let out = phosphor("sql-queries-ids-parquet", &["convert", f, "--to", "parquet", "-o", t]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for table in ["logs", "instants"] {
        let query = format!(
            "SELECT count(*) AS n, \
             sum(CASE WHEN m.path LIKE s.path || '/%' AND m.depth = s.depth + 1 THEN 1 ELSE 0 END) AS inside, \
             (SELECT count(*) FROM {table} WHERE slice_id IS NOT NULL) AS nested \
             FROM {table} m JOIN slices s ON s.trace = m.trace AND s.id = m.slice_id"
        );
        for input in [f, t] {
            let rows = phosphor_sql("sql-queries-ids-query", &[input], &query).unwrap();
            let (n, inside, nested) = (&rows[1][0], &rows[1][1], &rows[1][2]);
            assert!(n != "0", "{table} over {input}: {rows:?}");
            assert_eq!((n, inside), (nested, nested), "{table} over {input}: {rows:?}");
        }
    }
}

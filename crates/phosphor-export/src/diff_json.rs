//! The diff as one JSON document, schema `phosphor-diff/1` (documented in `docs/DIFF.md`):
//! the files, the gates, every row with both sides' figures, the changes and the rank test, and
//! the regressions.

use std::io::{self, Write};

use serde_json::{json, Map, Value};

use crate::diff::{Bounds, Change, DiffRow, Figures, Metric, TraceDiff, BOUND_Z, SIGNIFICANCE};

/// The schema's name and version.
pub const DIFF_SCHEMA: &str = "phosphor-diff/1";

impl TraceDiff {
    /// Writes the diff as JSON (`phosphor-diff/1`): the first `top` rows (all if `None`), every
    /// regression. `names` are the base and new files' names.
    pub fn write_json(&self, out: &mut impl Write, names: [&str; 2], top: Option<usize>) -> io::Result<()> {
        let regressions = self.regressions();
        let rows: Vec<Value> = self
            .rows
            .iter()
            .enumerate()
            .take(top.unwrap_or(usize::MAX))
            .map(|(i, r)| {
                let mut v = row(r);
                let past: Vec<String> = regressions
                    .iter()
                    .filter(|x| x.row == i)
                    .map(|x| self.fail_on[x.gate].to_string())
                    .collect();
                v["regressions"] = json!(past);
                v
            })
            .collect();
        let regressions: Vec<Value> = regressions
            .iter()
            .map(|x| {
                let (r, g) = (&self.rows[x.row], &self.fail_on[x.gate]);
                json!({
                    "path": r.path,
                    "type": r.kind.as_str(),
                    "gate": g.to_string(),
                    "metric": g.metric.as_str(),
                    "change": r.change(g.metric).map(change),
                    "conservative_change": r.conservative_change(g.metric).map(change),
                })
            })
            .collect();
        let doc = json!({
            "schema": DIFF_SCHEMA,
            "base": { "file": names[0], "events": self.events[0] },
            "new": { "file": names[1], "events": self.events[1] },
            "significance": SIGNIFICANCE,
            "bound_confidence": 0.999,
            "bound_z": BOUND_Z,
            "fail_on": self.fail_on.iter().map(|g| g.to_string()).collect::<Vec<_>>(),
            "rows_total": self.rows.len(),
            "rows": rows,
            "regressed": !regressions.is_empty(),
            "regressions": regressions,
        });
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)
    }
}

fn row(r: &DiffRow) -> Value {
    let mut changes = Map::new();
    for m in Metric::ALL {
        if let Some(c) = r.change(m) {
            changes.insert(key(m).to_owned(), change(c));
        }
    }
    let mut conservative = Map::new();
    for m in [Metric::P50, Metric::P90, Metric::P99] {
        conservative.insert(key(m).to_owned(), r.conservative_change(m).map_or(Value::Null, change));
    }
    json!({
        "path": r.path,
        "type": r.kind.as_str(),
        "status": r.status().as_str(),
        "base": r.base.as_ref().map(figures),
        "new": r.new.as_ref().map(figures),
        "change": changes,
        "conservative_change": if r.base.is_some() && r.new.is_some() { Value::Object(conservative) } else { Value::Null },
        "test": r.test.map(|t| json!({
            "method": t.method.as_str(),
            "u": t.u,
            "p_new_longer": t.p_new_longer,
            "z": t.z,
            "p_value": t.p_value,
            "significant": t.significant,
            "direction": if t.slower() { "slower" } else if t.faster() { "faster" } else { "none" },
        })),
    })
}

/// The JSON key of a metric: `count`, else its name with `_ns`.
fn key(m: Metric) -> &'static str {
    match m {
        Metric::Count => "count",
        Metric::Total => "total_ns",
        Metric::P50 => "p50_ns",
        Metric::P90 => "p90_ns",
        Metric::P99 => "p99_ns",
        Metric::Max => "max_ns",
    }
}

fn figures(f: &Figures) -> Value {
    let mut v = json!({ "count": f.count });
    if let Some(d) = &f.durations {
        let bounds = |b: &Bounds| json!({ "lower_ns": b.lower_ns, "upper_ns": b.upper_ns });
        v["samples"] = json!(d.samples);
        for m in [Metric::Total, Metric::P50, Metric::P90, Metric::P99, Metric::Max] {
            v[key(m)] = json!(m.of(f));
        }
        v["exact"] = json!(d.exact);
        v["bounds"] = json!({
            "p50_ns": bounds(&d.bounds[0]),
            "p90_ns": bounds(&d.bounds[1]),
            "p99_ns": bounds(&d.bounds[2]),
        });
    }
    v
}

fn change(c: Change) -> Value {
    json!({
        "base": c.base,
        "new": c.new,
        "absolute": i64::try_from(c.absolute()).unwrap_or(if c.absolute() < 0 { i64::MIN } else { i64::MAX }),
        "relative": c.relative(),
    })
}

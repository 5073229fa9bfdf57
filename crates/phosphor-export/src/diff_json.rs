//! The diff as one JSON document, schema `phosphor-diff/1` (documented in `docs/DIFF.md`):
//! the files, the gates, every row with both sides' figures, the changes and the rank test, and
//! the regressions.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::{json, Value};

use crate::diff::{Bounds, Change, DiffRow, Figures, Metric, TraceDiff, BOUND_Z, SIGNIFICANCE};

/// The schema's name and version.
pub const DIFF_SCHEMA: &str = "phosphor-diff/1";

impl TraceDiff {
    /// Every row as `phosphor-diff/1` has it, each with the gates it is past: what
    /// [`TraceDiff::write_json`] writes as `rows`, and what the viewer's `/api/compare` serves.
    pub fn json_rows(&self) -> Vec<DiffRowJson> {
        let regressions = self.regressions();
        self.rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let past = regressions
                    .iter()
                    .filter(|x| x.row == i)
                    .map(|x| self.fail_on[x.gate].to_string())
                    .collect();
                DiffRowJson::new(r, past)
            })
            .collect()
    }

    /// Writes the diff as JSON (`phosphor-diff/1`): the first `top` rows (all if `None`), every
    /// regression. `names` are the base and new files' names.
    pub fn write_json(&self, out: &mut impl Write, names: [&str; 2], top: Option<usize>) -> io::Result<()> {
        let regressions = self.regressions();
        let mut rows = self.json_rows();
        rows.truncate(top.unwrap_or(usize::MAX));
        let regressions: Vec<Value> = regressions
            .iter()
            .map(|x| {
                let (r, g) = (&self.rows[x.row], &self.fail_on[x.gate]);
                json!({
                    "path": r.path,
                    "type": r.kind.as_str(),
                    "gate": g.to_string(),
                    "metric": g.metric.as_str(),
                    "change": r.change(g.metric).map(ChangeJson::from),
                    "conservative_change": r.conservative_change(g.metric).map(ChangeJson::from),
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

/// One row of `phosphor-diff/1` (`docs/DIFF.md`): the path and type, both sides' figures, the
/// changes, the rank test and the gates it is past. Fields in the order the document has them.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct DiffRowJson {
    /// The scope path (names joined by `/`), or an async slice's name.
    pub path: String,
    /// `scope`, `lock_wait`, `lock_held`, `instant`, `counter`, `log` or `async`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `both`, `new` or `gone`.
    pub status: &'static str,
    /// The base trace's figures (`null` when the path is not in it).
    pub base: Option<SideJson>,
    /// The new trace's figures.
    pub new: Option<SideJson>,
    /// The change of each metric the row has (a missing side counts as 0).
    pub change: ChangesJson,
    /// The quantiles' changes at their confidence bounds (`null` unless on both sides).
    pub conservative_change: Option<ConservativeJson>,
    /// The rank test (`null` unless both sides have durations).
    pub test: Option<TestJson>,
    /// The gates the row is past.
    pub regressions: Vec<String>,
}

impl DiffRowJson {
    /// Row `r`, past the gates `regressions`.
    pub fn new(r: &DiffRow, regressions: Vec<String>) -> DiffRowJson {
        let change = |m| r.change(m).map(ChangeJson::from);
        let conservative = |m| r.conservative_change(m).map(ChangeJson::from);
        DiffRowJson {
            path: r.path.clone(),
            kind: r.kind.as_str(),
            status: r.status().as_str(),
            base: r.base.as_ref().map(SideJson::from),
            new: r.new.as_ref().map(SideJson::from),
            change: ChangesJson {
                count: change(Metric::Count),
                total_ns: change(Metric::Total),
                p50_ns: change(Metric::P50),
                p90_ns: change(Metric::P90),
                p99_ns: change(Metric::P99),
                max_ns: change(Metric::Max),
            },
            conservative_change: (r.base.is_some() && r.new.is_some()).then(|| ConservativeJson {
                p50_ns: conservative(Metric::P50),
                p90_ns: conservative(Metric::P90),
                p99_ns: conservative(Metric::P99),
            }),
            test: r.test.map(|t| TestJson {
                method: t.method.as_str(),
                u: t.u,
                p_new_longer: t.p_new_longer,
                z: t.z,
                p_value: t.p_value,
                significant: t.significant,
                direction: if t.slower() {
                    "slower"
                } else if t.faster() {
                    "faster"
                } else {
                    "none"
                },
            }),
            regressions,
        }
    }
}

/// One side's figures of a row: `count`, and the durations' figures when the row has some.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SideJson {
    /// Events, scopes or slices.
    pub count: u64,
    /// The durations' figures (absent for a row without durations).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub durations: Option<DurationsJson>,
}

/// One side's durations, in nanoseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct DurationsJson {
    /// Durations measured (a scope left open counts in `count` only).
    pub samples: u64,
    /// Their sum.
    pub total_ns: u64,
    /// Nearest-rank median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Longest.
    pub max_ns: u64,
    /// Whether every duration was kept (the percentiles exact).
    pub exact: bool,
    /// The quantiles' confidence bounds.
    pub bounds: QuantilesJson<BoundsJson>,
}

/// A figure of each of p50, p90 and p99.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QuantilesJson<T> {
    /// Of p50.
    pub p50_ns: T,
    /// Of p90.
    pub p90_ns: T,
    /// Of p99.
    pub p99_ns: T,
}

/// A quantile's confidence bounds (`upper_ns` `null` when too few durations bound it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BoundsJson {
    /// Lower bound.
    pub lower_ns: u64,
    /// Upper bound.
    pub upper_ns: Option<u64>,
}

/// The changes of a row's metrics, each present when the row has it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ChangesJson {
    /// Of the count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<ChangeJson>,
    /// Of the total duration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_ns: Option<ChangeJson>,
    /// Of p50.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50_ns: Option<ChangeJson>,
    /// Of p90.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p90_ns: Option<ChangeJson>,
    /// Of p99.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_ns: Option<ChangeJson>,
    /// Of the longest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_ns: Option<ChangeJson>,
}

/// The quantiles' conservative changes (`null` where BASE cannot bound one from above).
pub type ConservativeJson = QuantilesJson<Option<ChangeJson>>;

/// A change: both figures, `new - base` and that over the base (`null` when the base is 0).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ChangeJson {
    /// The base figure.
    pub base: u64,
    /// The new figure.
    pub new: u64,
    /// `new - base`.
    pub absolute: i64,
    /// `(new - base) / base`.
    pub relative: Option<f64>,
}

impl From<Change> for ChangeJson {
    fn from(c: Change) -> ChangeJson {
        let absolute = c.absolute();
        ChangeJson {
            base: c.base,
            new: c.new,
            absolute: i64::try_from(absolute).unwrap_or(if absolute < 0 { i64::MIN } else { i64::MAX }),
            relative: c.relative(),
        }
    }
}

/// The rank test of a row's durations.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TestJson {
    /// `rank-permutation`, `rank-exact` or `rank-binned`.
    pub method: &'static str,
    /// The Mann-Whitney U of the new durations over the base's.
    pub u: f64,
    /// The probability that a new duration is longer than a base one (ties count half).
    pub p_new_longer: f64,
    /// The standardised U (normal approximation, continuity-corrected; 0 when every value ties).
    pub z: f64,
    /// The two-sided p-value.
    pub p_value: f64,
    /// Whether `p_value` is below the significance level.
    pub significant: bool,
    /// `slower`, `faster`, or `none` when not significant.
    pub direction: &'static str,
}

impl From<&Figures> for SideJson {
    fn from(f: &Figures) -> SideJson {
        let bounds = |b: &Bounds| BoundsJson { lower_ns: b.lower_ns, upper_ns: b.upper_ns };
        SideJson {
            count: f.count,
            durations: f.durations.as_ref().map(|d| DurationsJson {
                samples: d.samples,
                total_ns: d.total_ns,
                p50_ns: d.p50_ns,
                p90_ns: d.p90_ns,
                p99_ns: d.p99_ns,
                max_ns: d.max_ns,
                exact: d.exact,
                bounds: QuantilesJson {
                    p50_ns: bounds(&d.bounds[0]),
                    p90_ns: bounds(&d.bounds[1]),
                    p99_ns: bounds(&d.bounds[2]),
                },
            }),
        }
    }
}

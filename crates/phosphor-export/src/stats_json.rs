//! [`TraceStats`] as JSON (`phosphor stats --json`): one object, pretty-printed, keys sorted.
//!
//! # Schema (`"schema": "phosphor-stats/1"`)
//!
//! Durations are integer nanoseconds, times of problems are nanoseconds since the trace's clock
//! origin (as the Chrome export's `ts`, in ns). A later version only adds keys.
//!
//! ```text
//! {
//!   "schema": "phosphor-stats/1",
//!   "complete": bool,             the trailer was read (else: statistics of the part before the damage)
//!   "events": n, "chunks": n,     read
//!   "recorded": n | null,         from the trailer
//!   "dropped": {"total": n, "buffer_full": n, "no_chunk": n, "contended": n, "stopping": n,
//!               "reentrant": n, "thread_exited": n, "overwritten": n, "other": n} | null,
//!   "lost_chunks": n,             gaps in the chunk sequence numbers
//!   "saturation": {"markers": n, "dropped": n},  a streaming trace's saturation markers
//!   "span_ns": n,
//!   "percentiles": {"exact_up_to": 256, "relative_error": 0.001},
//!   "threads": [{"tid": n, "name": s | null, "events": n, "lost_chunks": n, "problems": n}],
//!   "sort": "total" | "count" | "max",
//!   "kinds": [KIND with "tid": n and "thread": s | null],   per thread and path, in sort order
//!   "kinds_total": n,             kinds before --top
//!   "paths": [KIND],              all threads together
//!   "paths_total": n,
//!   "async": [{"name": s, "pairs": n, "durations": DURATIONS | null, "unended": n, "unbegun": n}],
//!   "problems": {"count": n, "resolved_early": n, "examples": [PROBLEM]},
//!   "logs": [{"level": s, "category": s, "format": s, "count": n}],
//!   "aggregates": [{"category": s, "name": s, "kind": "sum", "count": n, "sum": n}
//!                | {"category": s, "name": s, "kind": "histogram", "count": n, "sum": n, "min": n,
//!                   "max": n, "p50": n | null, "p90": n | null, "p99": n | null,
//!                   "buckets": [[index, count]]}]
//! }
//! KIND      = {"path": [s], "type": "scope" | "lock_wait" | "lock_held" | "instant" | "counter" | "log",
//!              "count": n, "durations": DURATIONS | null}
//! DURATIONS = {"samples": n, "total_ns": n, "min_ns": n, "mean_ns": n, "p50_ns": n, "p99_ns": n,
//!              "max_ns": n, "exact_percentiles": bool}
//! PROBLEM   = {"tid": n, "thread": s | null, "at_ns": n, "message": s,
//!              "kind": "wrong_name", "open": s, "end": s
//!                    | "end_without_begin", "end": s
//!                    | "left_open", "open": s
//!                    | "interlaced", "scope": s, "other": s
//!                    | "late_parent", "scope": s}
//! ```

use std::io::{self, Write};

use phosphor_format::file::AggregateKind;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{json, Map, Value};

use crate::durations::{DurationStats, EXACT_SAMPLES, PERCENTILE_ERROR};
use crate::scopes::ScopeProblemKind;
use crate::stats::{KindStats, TraceStats};
use crate::text::{SortBy, TableOptions};

impl TraceStats {
    /// Writes the statistics as JSON (see the schema above) to `out`, the kinds in the order
    /// `options` gives and cut to its `top`.
    pub fn write_json(&self, out: impl Write, options: TableOptions) -> io::Result<()> {
        let mut out = io::BufWriter::new(out);
        serde_json::to_writer_pretty(&mut out, &Document { stats: self, options })?;
        writeln!(out)?;
        out.flush()
    }

    /// Everything but the kinds and the paths.
    fn head_json(&self, options: TableOptions) -> Value {
        let thread_name = |tid: u32| self.thread(tid).and_then(|t| t.name.clone());
        let dropped = self.drops.as_ref().map(|d| {
            let mut m: Map<String, Value> =
                d.by_reason().iter().map(|&(r, n)| (r.to_owned(), json!(n))).collect();
            m.insert("total".into(), json!(d.total()));
            m
        });
        let examples: Vec<Value> = self
            .problems
            .iter()
            .map(|p| {
                let mut v = json!({
                    "tid": p.tid,
                    "thread": thread_name(p.tid),
                    "at_ns": p.at_ns,
                    "kind": p.kind.as_str(),
                    "message": p.kind.to_string(),
                });
                let names: Vec<(&str, &String)> = match &p.kind {
                    ScopeProblemKind::WrongName { open, end } => vec![("open", open), ("end", end)],
                    ScopeProblemKind::EndWithoutBegin { end } => vec![("end", end)],
                    ScopeProblemKind::LeftOpen { open } => vec![("open", open)],
                    ScopeProblemKind::Interlaced { scope, other } => vec![("scope", scope), ("other", other)],
                    ScopeProblemKind::LateParent { scope } => vec![("scope", scope)],
                };
                for (key, name) in names {
                    v[key] = json!(name);
                }
                v
            })
            .collect();
        json!({
            "schema": "phosphor-stats/1",
            "complete": self.complete,
            "events": self.events,
            "chunks": self.chunks,
            "recorded": self.recorded,
            "dropped": dropped,
            "lost_chunks": self.lost_chunks,
            "saturation": {"markers": self.saturation.markers, "dropped": self.saturation.dropped},
            "span_ns": self.span_ns,
            "percentiles": {"exact_up_to": EXACT_SAMPLES, "relative_error": PERCENTILE_ERROR},
            "threads": self.threads.iter().map(|t| json!({
                "tid": t.tid,
                "name": t.name,
                "events": t.events,
                "lost_chunks": t.lost_chunks,
                "problems": t.problems,
            })).collect::<Vec<_>>(),
            "sort": match options.sort {
                SortBy::Total => "total",
                SortBy::Count => "count",
                SortBy::Max => "max",
            },
            "kinds_total": self.kinds.len(),
            "paths_total": self.paths.len(),
            "async": self.asyncs.iter().map(|a| json!({
                "name": a.name,
                "pairs": a.durations.map_or(0, |d| d.samples),
                "durations": a.durations.as_ref().map(durations),
                "unended": a.unended,
                "unbegun": a.unbegun,
            })).collect::<Vec<_>>(),
            "problems": {
                "count": self.problem_count,
                "resolved_early": self.resolved_early,
                "examples": examples,
            },
            "logs": self.logs.iter().map(|l| json!({
                "level": l.level.as_str(),
                "category": l.category,
                "format": l.format,
                "count": l.count,
            })).collect::<Vec<_>>(),
            "aggregates": self.aggregates.iter().map(|a| match &a.kind {
                AggregateKind::Sum { count, sum } => json!({
                    "category": a.category, "name": a.name, "kind": "sum", "count": count, "sum": sum,
                }),
                AggregateKind::Histogram { count, sum, min, max, buckets } => json!({
                    "category": a.category, "name": a.name, "kind": "histogram", "count": count,
                    "sum": sum, "min": min, "max": max, "p50": a.quantile(0.5), "p90": a.quantile(0.9),
                    "p99": a.quantile(0.99), "buckets": buckets,
                }),
            }).collect::<Vec<_>>(),
        })
    }
}

/// The document. A trace may have millions of kinds: each one's value is made as it is written,
/// not all of them first (a `Value` tree took about 3 KB per kind, twice: kinds and paths).
struct Document<'a> {
    stats: &'a TraceStats,
    options: TableOptions,
}

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let head = match self.stats.head_json(self.options) {
            Value::Object(head) => head,
            _ => Map::new(),
        };
        let (stats, options) = (self.stats, self.options);
        let kinds = Kinds { list: options.select(&stats.kinds), stats, per_thread: true };
        let paths = Kinds { list: options.select(&stats.paths), stats, per_thread: false };
        let mut map = s.serialize_map(Some(head.len() + 2))?;
        // Merged into the others' keys in order: serde_json's maps keep theirs sorted.
        let mut lists = [("kinds", &kinds), ("paths", &paths)].into_iter().peekable();
        for (key, value) in &head {
            while let Some((name, list)) = lists.next_if(|(name, _)| *name < key.as_str()) {
                map.serialize_entry(name, list)?;
            }
            map.serialize_entry(key, value)?;
        }
        for (name, list) in lists {
            map.serialize_entry(name, list)?;
        }
        map.end()
    }
}

/// Kinds (per thread, with their thread) or paths, in the order chosen.
struct Kinds<'a> {
    list: Vec<&'a KindStats>,
    stats: &'a TraceStats,
    per_thread: bool,
}

impl Serialize for Kinds<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.list.iter().map(|k| {
            let mut v = kind(k);
            if self.per_thread {
                let tid = k.tid.expect("per-thread kinds have a thread");
                v["tid"] = json!(tid);
                v["thread"] = json!(self.stats.thread(tid).and_then(|t| t.name.as_deref()));
            }
            v
        }))
    }
}

fn kind(k: &KindStats) -> Value {
    json!({
        "path": k.path,
        "type": k.event_type.as_str(),
        "count": k.count,
        "durations": k.durations.as_ref().map(durations),
    })
}

fn durations(d: &DurationStats) -> Value {
    json!({
        "samples": d.samples,
        "total_ns": d.total_ns,
        "min_ns": d.min_ns,
        "mean_ns": d.mean_ns,
        "p50_ns": d.p50_ns,
        "p99_ns": d.p99_ns,
        "max_ns": d.max_ns,
        "exact_percentiles": d.exact_percentiles,
    })
}

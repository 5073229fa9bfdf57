//! [`TraceStats`] as JSON (`phosphor stats --json`): one object, pretty-printed, keys sorted.
//! The arrays that grow with the file (threads, kinds, paths, async slices, logs, aggregates) are
//! written an element at a time, each made as it is written.
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
//!               "reentrant": n, "thread_exited": n, "overwritten": n, "unwound": n,
//!               "other": n} | null,
//!   "lost_chunks": n,             gaps in the chunk sequence numbers
//!   "saturation": {"markers": n, "dropped": n},  a streaming trace's saturation markers
//!   "span_ns": n,
//!   "system": SYSTEM | null,      the system context (format 1.6), when the trace has one
//!   "percentiles": {"exact_up_to": 256, "relative_error": 0.001},
//!   "threads": [{"tid": n, "name": s | null, "events": n, "lost_chunks": n, "problems": n}],
//!   "sort": "total" | "count" | "max",
//!   "kinds": [KIND with "tid": n and "thread": s | null],   per thread and path, in sort order
//!   "kinds_total": n,             kinds before --top
//!   "paths": [KIND],              all threads together
//!   "paths_total": n,
//!   "async": [{"name": s, "pairs": n,
//!              "durations": DURATIONS | null,  the pairs'; total_ns adds them up, so overlapping
//!                                              slices count again
//!              "union_ns": n,                  how long at least one pair was open
//!              "union_error_ns": n,            at most this much of union_ns may be gaps between
//!                                              pairs (a name keeps 1,024 separate stretches, then
//!                                              fills its smallest gaps); 0: exact
//!              "unended": n, "unbegun": n}],
//!   "async_given_up": n,   async halves given up unmatched (counted in unended or unbegun)
//!                          because 262,144 were already waiting for their other half
//!   "problems": {"count": n, "examples": [PROBLEM],
//!                "resolved_early": n,  scopes and events given their path before the end of the
//!                                      file, when their thread had pending_limit waiting for the
//!                                      scope around them: counts and durations exact, paths too
//!                                      but under the late_parent problems
//!                "pending_limit": n, "late_parents": n,
//!                "max_depth": n, "truncated": n,    paths cut at max_depth scopes; what was deeper
//!                                                   counts under a "[deeper than N]" segment
//!                "max_name_bytes": n, "names_cut": n},  distinct names longer than
//!                                                   max_name_bytes, shown as their first bytes and "…"
//!   "logs": [{"level": s, "category": s, "format": s, "count": n}],
//!   "aggregates": [{"category": s, "name": s, "kind": "sum", "count": n, "sum": n}
//!                | {"category": s, "name": s, "kind": "histogram", "count": n, "sum": n, "min": n,
//!                   "max": n, "p50": n | null, "p90": n | null, "p99": n | null,
//!                   "buckets": [[index, count]]}],
//!   "frames": [{"name": s, "marks": n, "marks_ignored": n,   frame sets (trace_frame!): a frame
//!               "durations": DURATIONS | null,               is the time between consecutive marks
//!               "slowest": [{"number": n, "start_ns": n, "dur_ns": n}]}],  the 10 slowest
//!   "tasks": [{"name": s, "spawned": n, "ended": n,  tokio tasks by name (phosphor::tokio): the
//!              "polls": n, "polls_durations": DURATIONS | null,   polls, busy = their total,
//!              "busy_ns": n, "scheduled_ns": n,       woken but not yet polled, summed over polls,
//!              "max_scheduled_ns": n, "lived_ns": n,  tasks seen from spawn to end: their lives,
//!              "idle_ns": n, "long_polls": n,         of which parked (neither polled nor scheduled)
//!              "untracked": n}]                       tasks past the limit, lives not measured
//!   "long_polls": [{"task": s, "task_id": n,     the longest long polls (at most 10), longest
//!                   "tid": n, "start_ns": n, "dur_ns": n,  first; what the system context saw
//!                   "system": SCOPE_SYSTEM | null}]        in each, if the statistics had one
//! }
//! KIND      = {"path": [s], "type": "scope" | "lock_wait" | "lock_held" | "instant" | "counter" | "log",
//!              "count": n, "durations": DURATIONS | null,
//!              "system": SCOPE_SYSTEM | null}   what the system saw during these scopes
//! SYSTEM    = {"status": {"switches": AVAIL, "samples": AVAIL, "allocations": AVAIL, "sample_hz": n,
//!                         "kernel_lost": n, "dropped": n, "threads_missed": n, "text": s} | null,
//!              "switches_per_scope": bool,     on- and off-CPU times were worked out
//!              "counts": {"blocks": n, "switches": n, "samples": n, "heap": n, "mappings": n,
//!                         "not_held": n}}      not_held: past the limit, not counted per scope
//! AVAIL     = "off" | "on" | {"unavailable": s}
//! SCOPE_SYSTEM = {"on_cpu_ns": n, "off_cpu_ns": n, "preempted_ns": n,   0 without switches
//!              "switches": n, "samples": n,    switches out and CPU samples inside the scopes
//!              "functions": [{"function": s, "samples": n}],  the samples' leaf functions, top 5
//!              "allocs": n, "alloc_bytes": n, "alloc_scopes": n}  from phosphor/scope_alloc
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

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{json, Map, Value};

use crate::durations::{DurationStats, EXACT_SAMPLES, PERCENTILE_ERROR};
use crate::scope_path::ScopePath;
use crate::scope_system::ScopeSystem;
use crate::stats::{AggregateStats, KindStats, Paths, SystemSummary, TraceStats};
use crate::system_text::describe_status;
use crate::text::{SortBy, TableOptions};
use phosphor_format::system::Availability;

impl TraceStats {
    /// Writes the statistics as JSON (see the schema above) to `out`, the kinds in the order
    /// `options` gives and cut to its `top`.
    pub fn write_json(&self, out: impl Write, options: TableOptions) -> io::Result<()> {
        let mut out = io::BufWriter::new(out);
        let thread_name = |tid: u32| {
            let at = self.threads.binary_search_by_key(&tid, |t| t.tid).ok()?;
            self.threads[at].name.as_deref()
        };
        let arrays = [
            (
                "threads",
                Seq::new(self.threads.len(), |i| {
                    let t = &self.threads[i];
                    json!({
                        "tid": t.tid,
                        "name": t.name,
                        "events": t.events,
                        "lost_chunks": t.lost_chunks,
                        "problems": t.problems,
                    })
                }),
            ),
            ("kinds", Seq::Kinds { kinds: Rows::Threads(&self.kinds), options, thread: Some(&thread_name) }),
            ("paths", Seq::Kinds { kinds: Rows::Paths(self.paths()), options, thread: None }),
            (
                "async",
                Seq::new(self.asyncs.len(), |i| {
                    let a = &self.asyncs[i];
                    json!({
                        "name": a.name,
                        "pairs": a.durations.map_or(0, |d| d.samples),
                        "durations": a.durations.as_ref().map(durations),
                        "union_ns": a.union_ns,
                        "union_error_ns": a.union_error_ns,
                        "unended": a.unended,
                        "unbegun": a.unbegun,
                    })
                }),
            ),
            (
                "logs",
                Seq::new(self.logs.len(), |i| {
                    let l = &self.logs[i];
                    json!({
                        "level": l.level.as_str(),
                        "category": l.category,
                        "format": l.format,
                        "count": l.count,
                    })
                }),
            ),
            ("aggregates", Seq::new(self.aggregates.len(), |i| aggregate(&self.aggregates[i]))),
            (
                "frames",
                Seq::new(self.frames.len(), |i| {
                    let s = &self.frames[i];
                    json!({
                        "name": s.name,
                        "marks": s.marks,
                        "marks_ignored": s.marks_ignored,
                        "durations": s.durations.as_ref().map(durations),
                        "slowest": s.slowest.iter().map(|f| json!({
                            "number": f.number, "start_ns": f.start_ns, "dur_ns": f.dur_ns,
                        })).collect::<Vec<_>>(),
                    })
                }),
            ),
            (
                "tasks",
                Seq::new(self.tasks.len(), |i| {
                    let t = &self.tasks[i];
                    json!({
                        "name": t.name,
                        "spawned": t.spawned,
                        "ended": t.ended,
                        "polls": t.polls,
                        "polls_durations": t.poll_durations.as_ref().map(durations),
                        "busy_ns": t.busy_ns,
                        "scheduled_ns": t.scheduled_ns,
                        "max_scheduled_ns": t.max_scheduled_ns,
                        "lived_ns": t.lived_ns,
                        "idle_ns": t.idle_ns,
                        "long_polls": t.long_polls,
                        "untracked": t.untracked,
                    })
                }),
            ),
            (
                "long_polls",
                Seq::new(self.long_polls.len(), |i| {
                    let p = &self.long_polls[i];
                    json!({
                        "task": p.task,
                        "task_id": p.task_id,
                        "tid": p.tid,
                        "start_ns": p.start_ns,
                        "dur_ns": p.dur_ns,
                        "system": p.system.as_ref().map(scope_system),
                    })
                }),
            ),
        ];
        let doc = Doc { fields: self.fields(options, &thread_name), arrays };
        doc.serialize(&mut serde_json::Serializer::pretty(&mut out))?;
        writeln!(out)?;
        out.flush()
    }

    /// Everything but the arrays that grow with the file.
    fn fields<'s>(&'s self, options: TableOptions, thread_name: &dyn Fn(u32) -> Option<&'s str>) -> Value {
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
                let names = p.kind.names();
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
            "sort": match options.sort {
                SortBy::Total => "total",
                SortBy::Count => "count",
                SortBy::Max => "max",
            },
            "system": self.system.as_ref().map(system_summary),
            "kinds_total": self.kinds.len(),
            "async_given_up": self.async_given_up,
            "paths_total": self.paths().len(),
            "problems": {
                "count": self.problem_count,
                "resolved_early": self.resolved_early,
                "pending_limit": self.pending_limit,
                "late_parents": self.late_parents,
                "max_depth": self.max_depth,
                "truncated": self.truncated,
                "max_name_bytes": crate::MAX_NAME_BYTES,
                "names_cut": self.names_cut,
                "examples": examples,
            },
        })
    }
}

fn aggregate(a: &AggregateStats) -> Value {
    match &a.kind {
        AggregateKind::Sum { count, sum } => json!({
            "category": a.category, "name": a.name, "kind": "sum", "count": count, "sum": sum,
        }),
        AggregateKind::Histogram { count, sum, min, max, buckets } => json!({
            "category": a.category, "name": a.name, "kind": "histogram", "count": count,
            "sum": sum, "min": min, "max": max, "p50": a.quantile(0.5), "p90": a.quantile(0.9),
            "p99": a.quantile(0.99), "buckets": buckets,
        }),
    }
}

/// A JSON array, made as it is written.
enum Seq<'a> {
    /// `len` elements, element `i` made by `item(i)`.
    Values { len: usize, item: Box<dyn Fn(usize) -> Value + 'a> },
    /// A table of kinds, in the order and cut `options` give (found when it is written, so that
    /// only one table's order is held at a time), with their threads if `thread` names them.
    Kinds { kinds: Rows<'a>, options: TableOptions, thread: Option<&'a dyn Fn(u32) -> Option<&'a str>> },
}

/// A table of kinds: per thread, or across threads.
#[derive(Clone, Copy)]
enum Rows<'a> {
    Threads(&'a [KindStats]),
    Paths(Paths<'a>),
}

impl<'a> Rows<'a> {
    fn len(self) -> usize {
        match self {
            Rows::Threads(k) => k.len(),
            Rows::Paths(p) => p.len(),
        }
    }

    fn get(self, i: usize) -> Option<&'a KindStats> {
        match self {
            Rows::Threads(k) => k.get(i),
            Rows::Paths(p) => p.get(i),
        }
    }
}

impl<'a> Seq<'a> {
    fn new(len: usize, item: impl Fn(usize) -> Value + 'a) -> Seq<'a> {
        Seq::Values { len, item: Box::new(item) }
    }
}

impl Serialize for Seq<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Seq::Values { len, item } => {
                let mut seq = s.serialize_seq(Some(*len))?;
                for i in 0..*len {
                    seq.serialize_element(&item(i))?;
                }
                seq.end()
            }
            Seq::Kinds { kinds, options, thread } => {
                let kinds = *kinds;
                let order = options.order(kinds.len(), |i| kinds.get(i));
                let mut seq = s.serialize_seq(Some(order.len()))?;
                // (Every place names a row.)
                for k in order.into_iter().filter_map(|i| kinds.get(i as usize)) {
                    seq.serialize_element(&Kind { k, thread: *thread })?;
                }
                seq.end()
            }
        }
    }
}

/// A kind's object (KIND in the schema), written without making its path's strings; with its
/// thread (`tid`, `thread`) when `thread` names threads.
struct Kind<'a> {
    k: &'a KindStats,
    thread: Option<&'a dyn Fn(u32) -> Option<&'a str>>,
}

impl Serialize for Kind<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let k = self.k;
        let mut map = s.serialize_map(None)?;
        // In the order of the keys.
        map.serialize_entry("count", &k.count)?;
        map.serialize_entry("durations", &k.durations.as_ref().map(Durations))?;
        map.serialize_entry("path", &Segments(&k.path))?;
        map.serialize_entry("system", &k.system.as_deref().map(scope_system))?;
        if let (Some(thread), Some(tid)) = (self.thread, k.tid) {
            map.serialize_entry("thread", &thread(tid))?;
            map.serialize_entry("tid", &tid)?;
        }
        map.serialize_entry("type", k.event_type.as_str())?;
        map.end()
    }
}

/// SCOPE_SYSTEM in the schema.
fn scope_system(s: &ScopeSystem) -> Value {
    json!({
        "on_cpu_ns": s.on_cpu_ns,
        "off_cpu_ns": s.off_cpu_ns,
        "preempted_ns": s.preempted_ns,
        "switches": s.switches,
        "samples": s.samples,
        "functions": s.functions.iter().map(|(f, n)| json!({"function": f, "samples": n})).collect::<Vec<_>>(),
        "allocs": s.allocs,
        "alloc_bytes": s.alloc_bytes,
        "alloc_scopes": s.alloc_scopes,
    })
}

/// SYSTEM in the schema.
fn system_summary(s: &SystemSummary) -> Value {
    let avail = |a: &Availability| match a {
        Availability::Off => json!("off"),
        Availability::On => json!("on"),
        Availability::Unavailable(why) => json!({ "unavailable": why }),
    };
    let c = &s.counts;
    json!({
        "status": s.status.as_ref().map(|st| json!({
            "switches": avail(&st.switches),
            "samples": avail(&st.samples),
            "allocations": avail(&st.allocations),
            "sample_hz": st.sample_hz,
            "kernel_lost": st.kernel_lost,
            "dropped": st.dropped,
            "threads_missed": st.threads_missed,
            "text": describe_status(st),
        })),
        "switches_per_scope": s.switches,
        "counts": {
            "blocks": c.blocks,
            "switches": c.switches,
            "samples": c.samples,
            "heap": c.heap,
            "mappings": c.mappings,
            "not_held": c.not_held,
        },
    })
}

/// A path as an array of its names.
struct Segments<'a>(&'a ScopePath);

impl Serialize for Segments<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.segments())
    }
}

/// The statistics' object: the keys of `fields` (an object) and the `arrays`, in order.
struct Doc<'a, const N: usize> {
    fields: Value,
    arrays: [(&'static str, Seq<'a>); N],
}

impl<const N: usize> Serialize for Doc<'_, N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        enum Entry<'e, 'a> {
            Field(&'e Value),
            Array(&'e Seq<'a>),
        }
        let mut entries: Vec<(&str, Entry<'_, '_>)> = self
            .fields
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), Entry::Field(v)))
            .collect();
        entries.extend(self.arrays.iter().map(|(k, a)| (*k, Entry::Array(a))));
        entries.sort_by_key(|(k, _)| *k);
        let mut map = s.serialize_map(Some(entries.len()))?;
        for (key, entry) in entries {
            match entry {
                Entry::Field(v) => map.serialize_entry(key, v)?,
                Entry::Array(a) => map.serialize_entry(key, a)?,
            }
        }
        map.end()
    }
}

fn durations(d: &DurationStats) -> Value {
    json!(Durations(d))
}

/// DURATIONS in the schema, written without making a map.
struct Durations<'a>(&'a DurationStats);

impl Serialize for Durations<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let d = self.0;
        let mut map = s.serialize_map(Some(8))?;
        // In the order of the keys.
        map.serialize_entry("exact_percentiles", &d.exact_percentiles)?;
        map.serialize_entry("max_ns", &d.max_ns)?;
        map.serialize_entry("mean_ns", &d.mean_ns)?;
        map.serialize_entry("min_ns", &d.min_ns)?;
        map.serialize_entry("p50_ns", &d.p50_ns)?;
        map.serialize_entry("p99_ns", &d.p99_ns)?;
        map.serialize_entry("samples", &d.samples)?;
        map.serialize_entry("total_ns", &d.total_ns)?;
        map.end()
    }
}

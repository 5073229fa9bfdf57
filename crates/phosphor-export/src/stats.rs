//! `TraceStats`: statistics of a trace file by scope path and thread, in one streaming pass.
//!
//! [`StatsBuilder`] takes a file's events one at a time ([`StatsBuilder::add`]) as its
//! [`Reader`] decodes them, and [`StatsBuilder::finish`] turns what it gathered into
//! [`TraceStats`]. [`TraceStats::from_reader`] does both for a whole file, and still gives the
//! statistics of everything before the damage when a file is truncated or corrupt.
//!
//! # Kinds
//!
//! An **event kind** is a path on a thread, as in Palanteer: thread `worker-1`, path
//! `frame/update/physics`, the names of the enclosing scopes, outermost first, then the event's.
//! Scopes are complete and lock events and begin/end pairs; `nesting.rs` works out which encloses
//! which, though a complete event arrives after the scopes nested in it. A kind has a count and,
//! for scopes, the distribution of their durations ([`DurationStats`]). Instants, counters and
//! logs count at the path of their enclosing scope followed by their own name (a log's name is its
//! format string), without durations. A kind's [`EventType`] is that of its last segment, so a scope
//! and an instant of one name at one place are two kinds. Kinds go by names alone: the category
//! and the source line do not count. [`TraceStats::paths`] adds each path up across threads.
//!
//! Async slices may begin on one thread and end on another: they are paired by the model's rule
//! (`phosphor_model::asyncs`: by shown name and id) and counted by name ([`AsyncStats`]). The scope checks are in `scopes.rs`.
//!
//! # Memory
//!
//! Memory grows with the kinds (distinct paths × threads, each with a [`DurationStats`]
//! accumulator, see `durations.rs`), the open begins and async slices, and the scopes waiting for
//! a parent, at most [`StatsBuilder::pending_limit`] per thread; not with the number of events.
//! Paths are interned as trees (`nesting.rs` while reading, [`ScopePath`] in the result), so a
//! kind costs a few hundred bytes whatever its depth, and paths are at most
//! [`StatsBuilder::max_depth`] deep. A file of a million callsites or threads of one event each
//! has a million kinds: names are stored once (`labels.rs`), the tables are made without a second
//! copy (`kinds.rs`: the table across threads holds a row only for a path seen on several threads,
//! the others are their thread's row), and [`StatsBuilder::read`] frees the reader's tables first
//! (the result, a row of 112 bytes per kind with the tree of names, is most of the peak).

use rustc_hash::FxHashMap as HashMap;
use std::io::Read;

use phosphor_format::file::{
    self, Aggregate, AggregateKind, Callsite, ClockInfo, DropCounts, Event, Extents, Reader, Trailer, Value,
};
use phosphor_format::{Level, Phase};

use crate::asyncs::Asyncs;
use crate::durations::DurationStats;
use crate::error::{read_chunks, Item};
use crate::frames::{FrameStats, Frames, FRAME_CATEGORY};
use crate::kinds::{self, Collector, PathRows};
use crate::labels::Labels;
use crate::long_polls::{LongPoll, LongPolls};
use crate::losses::ChunkLosses;
use crate::scope_path::ScopePath;
use crate::scope_system::{ScopeHook, ScopeSystem};
use crate::scopes::{ScopeProblem, ScopeProblemKind};
use crate::system::{SystemContext, SystemCounts};
use crate::tasks::{TaskStats, Tasks, LONG_POLL_NAME, TASK_CATEGORY};
use phosphor_format::system::{SystemStatus, PHOSPHOR_CATEGORY, SCOPE_ALLOC_NAME};
use phosphor_model::background::Feed;
use phosphor_model::nesting::{self, Label, Nesting, PathId};
use phosphor_model::timeline::Timeline;
use std::sync::Arc;

/// At most this many [`ScopeProblem`]s are kept as examples in [`TraceStats::problems`]; all are
/// counted.
pub const MAX_PROBLEM_EXAMPLES: usize = 1000;

/// Statistics of a trace file, or of the part of it read before an error.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TraceStats {
    /// Events read.
    pub events: u64,
    /// Chunks read.
    pub chunks: u64,
    /// Whether the trailer was read: the whole file was.
    pub complete: bool,
    /// Events the trailer says were recorded; `events` should equal it. `None` without a trailer.
    pub recorded: Option<u64>,
    /// Events dropped while recording, by reason, from the trailer. `None` without a trailer.
    pub drops: Option<DropCounts>,
    /// Chunks missing from their writer stream's sequence numbers (see [`ChunkLosses`]).
    pub lost_chunks: u64,
    /// From the first event's start to the last event's end, in nanoseconds.
    pub span_ns: u64,
    /// Per thread, by thread id.
    pub threads: Vec<ThreadStats>,
    /// Per thread and path: by thread id, then path.
    pub kinds: Vec<KindStats>,
    /// Per path, all threads together ([`TraceStats::paths`]): by path. A path seen on one thread
    /// is that thread's row of `kinds`, not a copy.
    pub(crate) by_path: PathRows,
    /// Async slices, by name.
    pub asyncs: Vec<AsyncStats>,
    /// Async begins and ends given up unmatched because
    /// [`DEFAULT_MAX_OPEN`](phosphor_model::asyncs::DEFAULT_MAX_OPEN) halves were already
    /// waiting for their other half (counted in their name's `unended` or `unbegun`).
    pub async_given_up: u64,
    /// Scopes that do not nest: the first [`MAX_PROBLEM_EXAMPLES`] found, by thread then time.
    pub problems: Vec<ScopeProblem>,
    /// All scopes that do not nest.
    pub problem_count: u64,
    /// Scopes and events whose path was fixed before the end of the file because their thread
    /// had more pending than the limit; a later parent is then a [`ScopeProblemKind::LateParent`].
    pub resolved_early: u64,
    /// The most scopes and events a thread keeps waiting for a parent ([`StatsBuilder::pending_limit`]).
    pub pending_limit: usize,
    /// Scopes that arrived after some of what they enclose was resolved early (counted among the
    /// problems as [`ScopeProblemKind::LateParent`]).
    pub late_parents: u64,
    /// Paths are cut at this many scopes ([`StatsBuilder::max_depth`]).
    pub max_depth: usize,
    /// Scopes and events nested deeper than `max_depth`: counted by name under a
    /// `[deeper than N]` segment that stands for the levels cut.
    pub truncated: u64,
    /// Distinct names longer than [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES), shown cut (their
    /// first bytes, then `…`) in kinds and paths; names that agree up to the cut are one kind.
    pub names_cut: u64,
    /// Log messages (`trace_log!`) per callsite: by level, then category and format string.
    pub logs: Vec<LogStats>,
    /// The aggregate points' snapshots (`trace_sum!`, `trace_histogram!`): by category and name.
    pub aggregates: Vec<AggregateStats>,
    /// Saturation markers of a streaming trace (`phosphor`/`saturation` instants): how many, and
    /// the events their writers dropped for want of a free chunk just before each.
    pub saturation: Saturation,
    /// Frame sets (`trace_frame!`): the frames between consecutive marks, by set name.
    pub frames: Vec<FrameStats>,
    /// tokio tasks (`phosphor::tokio`), by task name: spawned, polls, busy, scheduled and idle time.
    pub tasks: Vec<TaskStats>,
    /// The longest long polls of those tasks, longest first, each with the CPU samples inside it.
    pub long_polls: Vec<LongPoll>,
    /// The trace's system context (format 1.6), when it has one and the statistics were given it
    /// ([`StatsBuilder::system`]).
    pub system: Option<SystemSummary>,
}

/// What a trace's system blocks held, as the statistics saw them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SystemSummary {
    /// The sources' last status.
    pub status: Option<SystemStatus>,
    /// What the system blocks held.
    pub counts: SystemCounts,
    /// Whether on- and off-CPU times were worked out (the trace has context switches).
    pub switches: bool,
}

/// The saturation markers a streaming trace holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Saturation {
    /// Markers.
    pub markers: u64,
    /// The events they say were dropped.
    pub dropped: u64,
}

/// The log messages of one log callsite.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogStats {
    /// Its level.
    pub level: Level,
    /// Its category.
    pub category: String,
    /// Its format string.
    pub format: String,
    /// Messages logged.
    pub count: u64,
}

/// One aggregate point's snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AggregateStats {
    /// Its category.
    pub category: String,
    /// Its name.
    pub name: String,
    /// What it counted.
    pub kind: AggregateKind,
}

impl AggregateStats {
    /// A histogram's `q`-quantile (within 6.25%, see `phosphor_format::hist`, and never outside
    /// the recorded minimum and maximum); `None` for a sum or an empty histogram.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        match &self.kind {
            AggregateKind::Histogram { buckets, min, max, .. } => {
                phosphor_format::hist::quantile(buckets, q).map(|v| v.clamp(*min, (*max).max(*min)))
            }
            AggregateKind::Sum { .. } => None,
        }
    }
}

/// Statistics of one thread.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThreadStats {
    /// The thread id recorded in the trace.
    pub tid: u32,
    /// Its name, if it was named (cut past [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES), as
    /// kinds' names are).
    pub name: Option<String>,
    /// Events it recorded.
    pub events: u64,
    /// Chunks lost from its own tenant's stream (a pool tenant's losses belong to no one thread;
    /// they count in [`TraceStats::lost_chunks`] only).
    pub lost_chunks: u64,
    /// Scopes on it that do not nest.
    pub problems: u64,
}

pub use crate::kinds::{Paths, PathsIter};
pub use phosphor_model::event_type::EventType;

/// Statistics of one event kind: a path, on one thread or on all.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct KindStats {
    /// The thread. In [`TraceStats::paths`], which adds up all threads: the one thread of a path
    /// seen on one thread only (the row is that thread's), `None` for a path seen on several.
    pub tid: Option<u32>,
    /// The names of the enclosing scopes, outermost first, then the kind's own (interned: the
    /// kinds of one [`TraceStats`] share a tree of names).
    pub path: ScopePath,
    /// The type of the last segment.
    pub event_type: EventType,
    /// Scopes or events of this kind (a begin never ended counts, without a duration).
    pub count: u64,
    /// Their durations, for scopes.
    pub durations: Option<DurationStats>,
    /// What the system saw during these scopes (format 1.6: context switches, samples,
    /// allocations), when the trace says anything of them.
    pub system: Option<Box<ScopeSystem>>,
}

impl KindStats {
    /// The path, its names joined by `/`.
    pub fn path_string(&self) -> String {
        self.path.to_string()
    }

    /// The kind's own name: the last segment of its path.
    pub fn name(&self) -> &str {
        self.path.name()
    }
}

/// Async slices of one name: begins and ends paired by id, on any threads.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct AsyncStats {
    /// The name.
    pub name: String,
    /// The durations of the pairs, if any matched. Their `total_ns` is the durations added up:
    /// overlapping slices count again, so it can be far longer than the trace.
    pub durations: Option<DurationStats>,
    /// How long at least one pair was open: the union of their intervals, in nanoseconds.
    pub union_ns: u64,
    /// The most by which `union_ns` may be over the exact union (0: exact). A name keeps a
    /// bounded number of disjoint intervals; past it, the smallest gaps are counted as open.
    pub union_error_ns: u64,
    /// Begins without an end of the same name and id.
    pub unended: u64,
    /// Ends without a begin of the same name and id.
    pub unbegun: u64,
}

/// The statistics of the part of a file read before an error, and the error.
#[derive(Debug, thiserror::Error)]
#[error(
    "the trace file could not be read past byte {} (statistics of the {} events before it)",
    source.offset(),
    partial.events
)]
#[non_exhaustive]
pub struct StatsError {
    /// Everything before the damage.
    pub partial: Box<TraceStats>,
    /// Why reading stopped, with the byte offset.
    pub source: file::Error,
}

impl TraceStats {
    /// Reads the rest of the file that `reader` reads and computes its statistics, with the
    /// default [`StatsBuilder`]. On a read error the [`StatsError`] holds the statistics of
    /// everything before it.
    pub fn from_reader<R: Read>(reader: Reader<R>) -> Result<TraceStats, StatsError> {
        StatsBuilder::new(&reader.header().clock).read(reader)
    }

    /// The statistics of a whole trace file in memory (for a recorded trace, the bytes that
    /// `phosphor::Trace::write_to(Vec::new())` returns: those of the file `Trace::save` writes).
    /// Fails, with the byte offset, where the bytes do not read as a trace file; use
    /// [`from_reader`](Self::from_reader) to keep the statistics of what came before.
    pub fn from_bytes(bytes: &[u8]) -> Result<TraceStats, file::Error> {
        TraceStats::from_reader(Reader::new(bytes)?).map_err(|e| e.source)
    }

    /// The thread with this id.
    pub fn thread(&self, tid: u32) -> Option<&ThreadStats> {
        // By id, as `finish` sorts them.
        self.threads.binary_search_by_key(&tid, |t| t.tid).ok().map(|at| &self.threads[at])
    }

    /// The kind at `path` on thread `tid` (of the first type, if a path has several).
    pub fn kind(&self, tid: u32, path: &[&str]) -> Option<&KindStats> {
        self.kinds.iter().find(|k| k.tid == Some(tid) && k.path.is(path))
    }

    /// The kind at `path`, all threads together (of the first type, if a path has several).
    pub fn path(&self, path: &[&str]) -> Option<&KindStats> {
        self.paths().iter().find(|k| k.path.is(path))
    }

    /// The kinds per path, all threads together: by path (by its names, then its type).
    pub fn paths(&self) -> Paths<'_> {
        Paths { rows: &self.by_path, kinds: &self.kinds }
    }

    /// The async slices called `name`.
    pub fn async_slices(&self, name: &str) -> Option<&AsyncStats> {
        self.asyncs.iter().find(|a| a.name == name)
    }
}

/// Gathers statistics from a trace file's chunks and events, in file order.
///
/// ```
/// use phosphor::format::file::Reader;
/// use phosphor_export::StatsBuilder;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let bytes = include_bytes!("../../phosphor-format/tests/data/golden-v1.phtrace");
/// let mut reader = Reader::new(&bytes[..])?;
/// let mut builder = StatsBuilder::new(&reader.header().clock).pending_limit(10_000);
/// while let Some(chunk) = reader.next_chunk()? {
///     builder.chunk(&chunk.extents);
///     for event in chunk.events() {
///         builder.add(&event?);
///     }
/// }
/// let stats = builder.finish(reader.thread_names().map(|(t, n)| (t, n.as_str())), reader.trailer());
/// assert_eq!(stats.events, 10);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct StatsBuilder {
    /// The clock of the times in `timeline` (1 ns a tick): what durations are converted with.
    clock: ClockInfo,
    /// Events are nested and measured on these times: nanoseconds, rounded per timestamp as
    /// the Perfetto, Chrome and OTLP outputs write them, so that they tell the same story.
    timeline: Timeline,
    /// The nesting engine and the kinds' accumulators: on a second core once the file is long
    /// enough (`phosphor_model::background`).
    engine: Feed<(), Collector>,
    labels: Labels,
    asyncs: Asyncs,
    /// Events per thread.
    threads: HashMap<u32, u64>,
    losses: ChunkLosses,
    events: u64,
    chunks: u64,
    /// Smallest start and largest end, in ticks.
    span: Option<(u64, u64)>,
    /// Log messages by file number and callsite id, and the callsite's level, category and
    /// format string.
    logs: HashMap<(u32, u32), LogStats>,
    aggregates: Vec<AggregateStats>,
    saturation: Saturation,
    frames: Frames,
    tasks: Tasks,
    long_polls: LongPolls,
    /// The number of the file being read, when several are (`stats_files.rs`): callsite and
    /// async ids are per file.
    pub(crate) file: u32,
}

impl StatsBuilder {
    /// A builder for a trace on `clock` (the file header's).
    pub fn new(clock: &ClockInfo) -> StatsBuilder {
        let timeline = Timeline::new(clock);
        StatsBuilder {
            clock: timeline.clock().clone(),
            timeline,
            engine: Feed::new(Nesting::new(nesting::DEFAULT_PENDING_LIMIT), Collector::default()),
            labels: Labels::default(),
            asyncs: Asyncs::default(),
            threads: HashMap::default(),
            losses: ChunkLosses::default(),
            events: 0,
            chunks: 0,
            span: None,
            logs: HashMap::default(),
            aggregates: Vec::new(),
            saturation: Saturation::default(),
            frames: Frames::default(),
            tasks: Tasks::default(),
            long_polls: LongPolls::default(),
            file: 0,
        }
    }

    /// Asks `context` (the trace's system blocks, read first) what the system saw during each
    /// scope: on- and off-CPU time, switches, samples and their leaf functions
    /// ([`KindStats::system`]). Call [`SystemContext::name_leaves`] first to have the functions.
    pub fn system(mut self, context: Arc<SystemContext>) -> StatsBuilder {
        self.long_polls.system(context.clone(), self.clock.clone());
        let hook = Some(ScopeHook { context, clock: self.clock.clone() });
        self.parts().1.hook = hook;
        self
    }

    /// Takes in the aggregate snapshots a reader has read, naming each by its callsite (those
    /// whose callsite is unknown are skipped).
    pub fn aggregates<'c>(
        &mut self,
        aggregates: &[Aggregate],
        callsite: impl Fn(u32) -> Option<Callsite<'c>>,
    ) {
        for a in aggregates {
            if let Some(cs) = callsite(a.callsite) {
                self.aggregates.push(AggregateStats {
                    category: cs.category.into(),
                    name: cs.name.into(),
                    kind: a.kind.clone(),
                });
            }
        }
    }

    /// Keeps at most `scopes` scopes and events per thread waiting for a parent
    /// ([`DEFAULT_PENDING_LIMIT`](crate::DEFAULT_PENDING_LIMIT) unless set). A complete event is
    /// recorded at its end, after what it encloses, and nothing marks its start, so whatever
    /// precedes it could be its child: exact paths would need every scope kept to the end of the
    /// file. Past the limit, the oldest have their path fixed as known then; a scope that arrives
    /// later and encloses them is reported as a [`ScopeProblemKind::LateParent`].
    pub fn pending_limit(mut self, scopes: usize) -> StatsBuilder {
        let nesting = self.parts().0;
        *nesting = Nesting::new(scopes).max_depth(nesting.paths().max_depth());
        self
    }

    /// Cuts paths at `scopes` levels ([`DEFAULT_MAX_DEPTH`](crate::DEFAULT_MAX_DEPTH) unless set;
    /// at least 1): what is nested deeper is counted by name under a `[deeper than N]` segment
    /// ([`TraceStats::truncated`]). Without a cap, n nested scopes make n kinds of up to n names.
    pub fn max_depth(mut self, scopes: usize) -> StatsBuilder {
        let nesting = self.parts().0;
        *nesting = std::mem::replace(nesting, Nesting::new(0)).max_depth(scopes);
        self
    }

    /// Scopes and events waiting for a parent now, all threads together.
    pub fn pending(&self) -> usize {
        self.engine.pending()
    }

    /// The events that follow are file number `file`'s (`stats_files.rs`): its callsite ids,
    /// string indices and async ids are its own.
    pub(crate) fn start_file(&mut self, file: u32) {
        self.file = file;
        self.labels.forget_callsites();
    }

    /// The engine and its sink, before the first event.
    fn parts(&mut self) -> (&mut Nesting, &mut Collector) {
        self.engine.parts().expect("the builder is configured before its first event")
    }

    /// Keeps the nesting engine on the caller's thread (`false`), or lets it move to a second
    /// core once the file is long enough (`true`, the default on a machine of two cores or
    /// more). The statistics are the same either way.
    pub fn background(mut self, on: bool) -> StatsBuilder {
        self.engine = self.engine.background(on);
        self
    }

    /// Counts a chunk, before its events.
    pub fn chunk(&mut self, extents: &Extents) {
        self.chunks += 1;
        self.losses.add(extents);
    }

    /// Adds an event. A thread's events must come in the order it recorded them, as a file's
    /// chunks hold them.
    pub fn add(&mut self, event: &Event<'_>) {
        self.events += 1;
        *self.threads.entry(event.tid).or_default() += 1;
        let tid = event.tid;
        let ts = self.timeline.time(event.ts);
        let end = event.duration.map_or(ts, |d| self.timeline.end(event.ts, d));
        self.span = Some(self.span.map_or((ts, end), |(lo, hi)| (lo.min(ts), hi.max(end))));
        let cs = &event.callsite;
        if cs.phase == Phase::Instant && cs.category == PHOSPHOR_CATEGORY && cs.name == SCOPE_ALLOC_NAME {
            // Bookkeeping, not an instant of the program: its counts go to the scope before it,
            // which ended when it is stamped.
            if let (Some(Value::U64(allocs)), Some(Value::U64(bytes))) =
                (event.arg("allocs"), event.arg("bytes"))
            {
                self.engine.message(kinds::ScopeAlloc { tid, end: ts, allocs, bytes });
            }
            return;
        }
        if cs.phase == Phase::Instant && cs.category == "phosphor" && cs.name == "saturation" {
            self.saturation.markers += 1;
            if let Some(Value::U64(n)) = event.arg("dropped") {
                self.saturation.dropped += n;
            }
        }
        if cs.phase == Phase::Instant && cs.category == FRAME_CATEGORY {
            // A frame mark: also an instant of its own, counted below as any other.
            self.frames.mark(self.file, cs.name.as_ref(), ts);
        }
        if cs.category == TASK_CATEGORY {
            // A task's edge or poll: also a slice of its own, counted below as any other.
            self.tasks.event(self.file, event, ts, end - ts);
            if let (Phase::Complete, LONG_POLL_NAME, Some(Value::U64(id))) =
                (cs.phase, cs.name.as_ref(), event.arg("task"))
            {
                self.long_polls.add(self.tasks.task_name(self.file, id), id, tid, ts, end - ts);
            }
        }
        if let Some(level) = cs.level {
            let e = self.logs.entry((self.file, cs.id)).or_insert_with(|| LogStats {
                level,
                category: cs.category.into(),
                format: cs.name.into(),
                count: 0,
            });
            // A redefined callsite id keeps the first definition's text; counts stay exact.
            e.count += 1;
        }
        let Some(ty) = EventType::of(cs.phase) else {
            // Async ids are a process's own: another file's same id is another slice.
            let id = event.async_id.unwrap_or(0) ^ u64::from(self.file).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            self.asyncs.add(event, id, ts);
            return;
        };
        let label = match event.args[0] {
            // A name chosen at run time: the kind is that name, not the callsite's; a lock's phase
            // follows it as it follows a literal lock name (`queue (wait)`).
            Some((_, Value::Str(name))) if cs.dynamic_name => {
                self.labels.named(&phosphor_model::names::lock_name(name, cs.phase), ty)
            }
            _ => self.labels.label(cs, ty),
        };
        match cs.phase {
            Phase::Begin => self.engine.begin_with(tid, label, ts, ()),
            Phase::End => self.engine.end(tid, label, ts),
            _ if ty.has_duration() => self.engine.complete_with(tid, label, ts, end - ts, ()),
            _ => self.engine.mark_with(tid, label, ts, ()),
        }
    }

    /// For `diff.rs`: resolves the slices still pending, then lends what the tables are made of
    /// (the kinds by thread and path, the paths, their labels, the async slices, the clock).
    pub(crate) fn resolved(&mut self) -> (&[kinds::Kind], &nesting::Paths, &Labels, &Asyncs, &ClockInfo) {
        let (nesting, collector) = self.engine.finish();
        nesting.finish(collector);
        (&collector.kinds, nesting.paths(), &self.labels, &self.asyncs, &self.clock)
    }

    /// Reads the rest of the file and finishes. On a read error, the statistics of everything
    /// before it come with the error.
    pub fn read<R: Read>(mut self, mut reader: Reader<R>) -> Result<TraceStats, StatsError> {
        let failure = read_chunks(&mut reader, |item| -> Result<(), std::convert::Infallible> {
            match item {
                Item::Chunk(x) => self.chunk(x),
                Item::Event(e) => self.add(e),
            }
            Ok(())
        });
        // The callback cannot fail.
        let Ok(failure) = failure;
        self.aggregates(reader.aggregates(), |id| reader.callsite(id));
        // The reader's tables (a million callsites or thread names, in hostile files) are freed
        // before the tables of kinds are made: only the names of the threads shown are kept,
        // copied once the threads' pending slices are resolved and freed.
        let (nesting, collector) = self.engine.finish();
        nesting.finish(collector);
        let tids = self.thread_ids();
        let names = kinds::shown_thread_names(&tids, reader.thread_names().map(|(t, n)| (t, n.as_str())));
        let trailer = reader.trailer().cloned();
        drop(reader);
        let stats = self.finish_shown(tids, names, trailer.as_ref());
        match failure {
            None => Ok(stats),
            Some(source) => Err(StatsError { partial: Box::new(stats), source }),
        }
    }

    /// Ends the stream: scopes still pending are resolved, begins still open reported.
    /// `thread_names` and `trailer` are the reader's, once it has read all it could.
    pub fn finish<'a>(
        self,
        thread_names: impl IntoIterator<Item = (u32, &'a str)>,
        trailer: Option<&Trailer>,
    ) -> TraceStats {
        let tids = self.thread_ids();
        let names = kinds::shown_thread_names(&tids, thread_names);
        self.finish_shown(tids, names, trailer)
    }

    /// The threads the statistics list: those with events or lost chunks, by id.
    fn thread_ids(&self) -> Vec<u32> {
        let mut tids: Vec<u32> = self.threads.keys().copied().collect();
        tids.extend(self.losses.streams().filter(|((s, _), _, _)| *s == 0).map(|((_, tid), _, _)| tid));
        tids.sort_unstable();
        tids.dedup();
        tids
    }

    /// [`StatsBuilder::finish`], given the threads listed (`thread_ids`) and their names as shown,
    /// by id.
    fn finish_shown(
        mut self,
        tids: Vec<u32>,
        mut names: Vec<(u32, String)>,
        trailer: Option<&Trailer>,
    ) -> TraceStats {
        // Events by thread, in the order of `tids`: 8 bytes a thread, not a map's entry, while the
        // pending slices are resolved (a kind each for a file of a million threads of one slice)
        // and the tables are made.
        let events: Vec<u64> = tids.iter().map(|tid| self.threads.get(tid).copied().unwrap_or(0)).collect();
        self.threads = HashMap::default();
        // The depth cap's marker, if a label has its name; then what finding labels took is not
        // needed any more (every label is in).
        let (nesting, collector) = self.engine.finish();
        let marker = format!("[deeper than {}]", nesting.paths().max_depth());
        let deeper = self.labels.find_name(&marker);
        self.labels.free_index();
        // (Nothing is left to resolve if `read` did it.)
        nesting.finish(collector);
        // Nor what finding paths and kinds took.
        collector.free_index();
        let clock = &self.clock;
        let labels = &self.labels;
        let name = |l: Label| labels.name(l).to_string();
        let mut problems: Vec<ScopeProblem> = collector
            .problems
            .iter()
            .map(|p| ScopeProblem {
                tid: p.tid,
                at_ns: clock.since_origin_ns(p.ts),
                kind: ScopeProblemKind::new(p.kind, name),
            })
            .collect();
        problems.sort_by_key(|p| (p.tid, p.at_ns));

        // The names' tree, and each path's event type; then the labels and the nesting's paths
        // are freed before the tables of kinds are made.
        let paths = nesting.take_paths();
        let types: Vec<EventType> =
            (0..paths.len() as PathId).map(|p| labels.event_type(paths.label(p))).collect();
        let names_cut = labels.cut;
        let tree = kinds::name_tree(&paths, std::mem::take(&mut self.labels), &marker, deeper);
        let max_depth = paths.max_depth();
        drop(paths);
        let event_type = |path: PathId| types[path as usize];
        let hook = collector.hook.take();
        let context = hook.as_ref().map(|h: &ScopeHook| &*h.context);
        let (kinds, by_path) =
            kinds::tables(std::mem::take(&mut collector.kinds), tree, event_type, clock, context);
        let system = context.filter(|c| c.counts.blocks > 0).map(|c| SystemSummary {
            status: c.status.clone(),
            counts: c.counts,
            switches: c.has_switches(),
        });
        drop(types);

        let mut logs: Vec<LogStats> = self.logs.into_values().collect();
        logs.sort_by(|a, b| (a.level, &a.category, &a.format).cmp(&(b.level, &b.category, &b.format)));
        let mut aggregates = std::mem::take(&mut self.aggregates);
        aggregates.sort_by(|a, b| (&a.category, &a.name).cmp(&(&b.category, &b.name)));

        let threads = tids
            .into_iter()
            .zip(events)
            .map(|(tid, events)| ThreadStats {
                tid,
                name: names
                    .binary_search_by_key(&tid, |(t, _)| *t)
                    .ok()
                    .map(|at| std::mem::take(&mut names[at].1)),
                events,
                lost_chunks: self.losses.lost((0, tid)),
                problems: collector.per_thread.get(&tid).copied().unwrap_or(0),
            })
            .collect();

        let (asyncs, async_given_up) = self.asyncs.finish(clock);
        let frames = std::mem::take(&mut self.frames).finish(clock);
        let tasks = std::mem::take(&mut self.tasks).finish(clock);
        let long_polls = std::mem::take(&mut self.long_polls).finish(clock);
        TraceStats {
            events: self.events,
            chunks: self.chunks,
            complete: trailer.is_some(),
            recorded: trailer.map(|t| t.recorded),
            drops: trailer.map(|t| t.dropped.clone()),
            lost_chunks: self.losses.total(),
            span_ns: self.span.map_or(0, |(lo, hi)| clock.ticks_to_ns(hi - lo)),
            threads,
            kinds,
            by_path,
            asyncs,
            async_given_up,
            problems,
            problem_count: collector.problem_count,
            resolved_early: nesting.resolved_early(),
            pending_limit: nesting.limit(),
            late_parents: collector.late_parents,
            max_depth,
            truncated: nesting.truncated(),
            names_cut,
            logs,
            aggregates,
            saturation: self.saturation,
            frames,
            tasks,
            long_polls,
            system,
        }
    }
}

#[cfg(test)]
#[path = "stats_tests.rs"]
mod tests;

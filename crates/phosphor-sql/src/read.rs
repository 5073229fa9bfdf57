//! [`read_tables`]: one trace file read in one streaming pass into the batches of the tables
//! asked for, of the columns asked for ([`read_columns`]).
//!
//! Events go through the trace model as every tool's do (`phosphor_model::nesting`, on
//! `Timeline` times, labels named as the statistics name them), with the row's payload; the
//! engine hands back resolved subtrees, whose rows are made into a batch once `batch_rows` have
//! gathered, between chunks. So memory is the engine's (at most its pending limit of slices per
//! thread), a batch per table, and the sites and paths seen: not the file's events.
//!
//! A file is read by a pipeline of three threads, as `phosphor stats` reads one: the reader's
//! read-ahead decompresses the blocks, this thread decodes the events, finds their sites and
//! keeps what is not nested (async halves, the system context, the file's counts), and the
//! nesting engine's thread (`phosphor_model::background`) nests the rest and makes the batches
//! of what it resolves ([`crate::batches`]). Only the columns asked for are made, and
//! arguments are written as JSON only when a table's `arguments` column is asked for.
//!
//! A query of slices or marks that reads none of the columns the nesting gives (ids, parents,
//! depths, paths, self times), such as `SELECT name, count(*), sum(dur) FROM slices GROUP BY
//! name`, is read without the nesting (`Flat`): each slice is a row as it ends, with the
//! nesting's start and duration. The pipeline is the same: this thread sends the events as
//! [`FlatOp`]s, and the engine's thread pairs begins with ends and makes the batches. The rows
//! are the same, in another order.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver};

use arrow::record_batch::RecordBatch;
use phosphor_format::file::{Block, Event, Reader, Value};
use phosphor_format::logfmt::format_log;
use phosphor_format::system::{PHOSPHOR_CATEGORY, SCOPE_ALLOC_NAME};
use phosphor_format::{IdMap, Phase};
use phosphor_model::background::Feed;
use phosphor_model::flows::{self, Member};
use phosphor_model::nesting::{Nesting, Sink, Slice, SliceKind, DEFAULT_PENDING_LIMIT, ROOT};
use phosphor_model::timeline::Timeline;

use crate::allocations::AllocMatch;
use crate::args_table::ArgRows;
use crate::asyncs_table::Asyncs;
use crate::batches::{Builder, FileInfo, Message};
use crate::file_tables::FileCounts;
use crate::flows_table::Flows;
use crate::problems_table::ProblemRows;
use crate::rows::{Extra, Payload};
use crate::sites::{Kind, Sites};
use crate::system_tables::SystemTables;
use crate::tables::{Place, Table};
use crate::Error;

/// Rows per batch by default: DataFusion's own batch size.
pub const DEFAULT_BATCH_ROWS: usize = 8192;

/// A trace file, and the name its rows carry in the `trace` column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceSource {
    /// The file.
    pub path: PathBuf,
    /// The `trace` column's value: the path as given, by default.
    pub trace: String,
    /// Nanoseconds added to every time of the file: its place on the timeline of the files
    /// read together ([`align`]); 0 for a file read alone.
    pub shift_ns: i64,
}

impl TraceSource {
    /// The file at `path`, named by its path as given.
    pub fn new(path: impl Into<PathBuf>) -> TraceSource {
        let path = path.into();
        TraceSource { trace: path.display().to_string(), path, shift_ns: 0 }
    }

    /// Opens the file and reads its header.
    pub fn open(&self) -> Result<Reader<BufReader<File>>, Error> {
        let f = File::open(&self.path).map_err(|source| Error::Open { path: self.path.clone(), source })?;
        Ok(Reader::new(BufReader::with_capacity(1 << 16, f)).map_err(|e| e.with_path(&self.path))?)
    }
}

/// Puts `sources` on one timeline as `phosphor convert` puts several files on one
/// (`phosphor_export::timeline::align`): the first file's `CLOCK_MONOTONIC` as it is, the files
/// of its boot likewise, the others shifted by the difference of their wall clocks (one shift
/// per boot). Sets each [`TraceSource::shift_ns`] and returns the warning to show when some
/// files had to be aligned by their wall clocks (their error, naming the file, if one does not
/// open).
pub fn align(sources: &mut [TraceSource]) -> Result<Option<String>, Error> {
    let headers =
        sources.iter().map(|s| Ok(s.open()?.header().clone())).collect::<Result<Vec<_>, Error>>()?;
    let timeline = phosphor_export::timeline::align(&headers);
    for (source, place) in sources.iter_mut().zip(&timeline.files) {
        source.shift_ns = place.shift_ns;
    }
    let machine = |i: usize| {
        format!("{} ({})", sources[i].path.display(), phosphor_export::timeline::machine_of(&headers[i]))
    };
    Ok(timeline.warning.as_ref().map(|w| w.describe(machine)))
}

/// Reads `source` whole, calling `emit` with each batch of the tables in `wanted` (in batches of
/// about `batch_rows` rows; `threads` once, at the end). Stops at `emit`'s first error, and at
/// the file's first damage with its error (naming the file and the byte offset).
pub fn read_tables(
    source: &TraceSource,
    wanted: &[Table],
    batch_rows: usize,
    emit: impl FnMut(Table, RecordBatch) -> Result<(), Error>,
) -> Result<(), Error> {
    read_all_columns(source, wanted, false, batch_rows, None, emit)
}

/// [`read_tables`], for [`crate::parquet_out`]: the string columns of few distinct values made
/// as `Dictionary(UInt32, Utf8)` where the rows' ids make it cheap (`tables.rs`), which the
/// Parquet writer encodes without hashing each value; the batches' schemas say so.
///
/// The batches sent back on `spent` once written are freed on the thread that made them (the
/// nesting engine's, at its next batches): glibc's malloc, freeing a block on another thread
/// than the one that allocated it, takes that thread's arena lock, which the two then contend
/// for.
pub(crate) fn read_tables_for_parquet(
    source: &TraceSource,
    wanted: &[Table],
    batch_rows: usize,
    spent: mpsc::Receiver<RecordBatch>,
    emit: impl FnMut(Table, RecordBatch) -> Result<(), Error>,
) -> Result<(), Error> {
    read_all_columns(source, wanted, true, batch_rows, Some(spent), emit)
}

/// Every column of the tables in `wanted`, the repeated strings as dictionaries when `dictionary`.
fn read_all_columns(
    source: &TraceSource,
    wanted: &[Table],
    dictionary: bool,
    batch_rows: usize,
    spent: Option<mpsc::Receiver<RecordBatch>>,
    emit: impl FnMut(Table, RecordBatch) -> Result<(), Error>,
) -> Result<(), Error> {
    let reader = source.open()?.read_ahead();
    let wanted: Vec<Wanted> =
        wanted.iter().map(|&table| Wanted { dictionary, ..Wanted::all(table) }).collect();
    read_wanted(reader, Origin::of(source), &wanted, batch_rows, spent, emit)
}

/// [`read_tables`] of one table, making only its columns at `columns` (indices into
/// [`Table::schema`], in the order given; none at all for a `count(*)`, whose batches then
/// carry only their row counts): what a query that reads a few columns needs, and what it
/// costs. The batches' schema is the table's projected to those columns.
pub fn read_columns(
    source: &TraceSource,
    table: Table,
    columns: &[usize],
    batch_rows: usize,
    emit: impl FnMut(Table, RecordBatch) -> Result<(), Error>,
) -> Result<(), Error> {
    let fields = table.schema().fields().len();
    if let Some(&index) = columns.iter().find(|&&i| i >= fields) {
        return Err(Error::NoColumn { table: table.name(), index });
    }
    let reader = source.open()?.read_ahead();
    let wanted = [Wanted { table, columns: columns.to_vec(), dictionary: false }];
    read_wanted(reader, Origin::of(source), &wanted, batch_rows, None, emit)
}

/// [`read_tables`] on a reader already open (on a file, or bytes in memory), `path` naming it in
/// errors and `trace` in the `trace` column.
pub fn read_from<R: Read>(
    reader: Reader<R>,
    path: &Path,
    trace: &str,
    wanted: &[Table],
    batch_rows: usize,
    emit: impl FnMut(Table, RecordBatch) -> Result<(), Error>,
) -> Result<(), Error> {
    let wanted: Vec<Wanted> = wanted.iter().map(|&table| Wanted::all(table)).collect();
    read_wanted(reader, Origin { path, trace, shift_ns: 0 }, &wanted, batch_rows, None, emit)
}

/// A table asked for, and which of its columns.
#[derive(Clone, Debug)]
pub(crate) struct Wanted {
    pub(crate) table: Table,
    /// Indices into the table's schema.
    pub(crate) columns: Vec<usize>,
    /// Whether string columns may be made as dictionaries ([`read_tables_for_parquet`]).
    pub(crate) dictionary: bool,
}

impl Wanted {
    fn all(table: Table) -> Wanted {
        Wanted { table, columns: (0..table.schema().fields().len()).collect(), dictionary: false }
    }

    /// Whether its rows need nothing of the nesting but each slice's start and duration: a
    /// table of slices or marks asked for none of the columns that say where a row sits in its
    /// thread's tree (ids, parents, depths, paths, self times).
    fn is_flat(&self) -> bool {
        let nested = ["id", "parent_id", "slice_id", "depth", "path", "self_dur"];
        matches!(self.table, Table::Slices | Table::Instants | Table::Counters | Table::Logs)
            && !nested.iter().any(|&name| self.has(name))
    }

    /// Whether column `name` is made.
    fn has(&self, name: &str) -> bool {
        let schema = self.table.schema();
        self.columns.iter().any(|&i| schema.fields().get(i).is_some_and(|f| f.name() == name))
    }
}

/// Where the batches go: to `emit`, each of only the columns asked for of its table.
struct Out<'w, F> {
    emit: F,
    wanted: &'w [Wanted],
}

impl<F: FnMut(Table, RecordBatch) -> Result<(), Error>> Out<'_, F> {
    /// The columns of `table` asked for.
    fn columns(&self, table: Table) -> &[usize] {
        self.wanted.iter().find(|w| w.table == table).map_or(&[], |w| &w.columns)
    }

    /// Passes on a batch of `table` made with every column of its schema, projected.
    fn full(&mut self, table: Table, batch: RecordBatch) -> Result<(), Error> {
        let batch = crate::tables::project(batch, self.columns(table));
        (self.emit)(table, batch)
    }

    /// Passes on a batch made of the columns asked for already.
    fn made(&mut self, table: Table, batch: RecordBatch) -> Result<(), Error> {
        (self.emit)(table, batch)
    }
}

/// What a reading is of: the file (named in errors), its `trace` value, its shift on the
/// timeline ([`TraceSource`]).
struct Origin<'a> {
    path: &'a Path,
    trace: &'a str,
    shift_ns: i64,
}

impl Origin<'_> {
    fn of(source: &TraceSource) -> Origin<'_> {
        Origin { path: &source.path, trace: &source.trace, shift_ns: source.shift_ns }
    }
}

fn read_wanted<R: Read>(
    mut reader: Reader<R>,
    origin: Origin<'_>,
    wanted: &[Wanted],
    batch_rows: usize,
    spent: Option<mpsc::Receiver<RecordBatch>>,
    emit: impl FnMut(Table, RecordBatch) -> Result<(), Error>,
) -> Result<(), Error> {
    let Origin { path, trace, shift_ns } = origin;
    let mut out = Out { emit, wanted };
    let batch_rows = batch_rows.max(1);
    let header = reader.header().clone();
    let file =
        FileInfo { trace: trace.to_owned(), process: header.process_name.clone(), pid: header.pid, shift_ns };
    let (outbox, batches) = mpsc::channel();
    let timeline = Timeline::new(&header.clock);
    let builder = Builder::new(file, timeline.clone(), wanted, batch_rows, outbox, spent);
    let mut state = State::new(timeline, wanted, builder);
    let tables = state.tables.clone();
    let mut system = SystemTables::new(&tables);
    let mut threads: Vec<(u32, u64)> = Vec::new();
    // The name of each thread as last sent to the engine (by string index).
    let mut names_sent: HashMap<u32, u32> = HashMap::new();
    loop {
        let chunk = match reader.next_block() {
            Ok(Some(Block::Chunk(chunk))) => {
                state.counts.chunk(&chunk.extents);
                chunk
            }
            Ok(Some(Block::System(batch))) => {
                system.add(batch);
                let names = |tid: u32| reader.thread_name(tid).map(|n| n.as_str().to_owned());
                let place = Place {
                    trace,
                    process: &header.process_name,
                    pid: header.pid,
                    thread_name: &names,
                    shift_ns,
                };
                system.flush(&place, batch_rows, false, &mut |table, batch| out.full(table, batch))?;
                continue;
            }
            Ok(Some(_)) => continue,
            Ok(None) => break,
            Err(e) => return Err(e.with_path(path).into()),
        };
        for event in chunk.events() {
            match &event {
                Ok(e) => {
                    match threads.last_mut() {
                        Some((tid, n)) if *tid == e.tid => *n += 1,
                        _ => count_thread(&mut threads, e.tid),
                    }
                    state.add(e);
                }
                Err(_) => return Err(event.err().map_or(Error::Stopped, |e| e.with_path(path).into())),
            }
        }
        // The threads' names as the file gives them now: the rows made from here on are named
        // with them (the file may name a thread late, or rename it).
        for &(tid, _) in &threads {
            if let Some(name) = reader.thread_name(tid) {
                if names_sent.insert(tid, name.index()) != Some(name.index()) {
                    state.feed.message(Message::ThreadName(tid, name.as_str().to_owned()));
                }
            }
        }
        state.feed.message(Message::Flush);
        pass(&batches, &mut out)?;
        let names = |tid: u32| reader.thread_name(tid).map(|n| n.as_str().to_owned());
        let place =
            Place { trace, process: &header.process_name, pid: header.pid, thread_name: &names, shift_ns };
        state.flush(&place, batch_rows, false, &mut out)?;
        system.flush(&place, batch_rows, false, &mut |table, batch| out.full(table, batch))?;
    }
    let (nesting, builder) = state.feed.finish();
    if let Some(flat) = builder.flat.take() {
        flat.finish(&mut builder.rows);
    }
    nesting.finish(builder);
    builder.flush(nesting.paths(), true);
    pass(&batches, &mut out)?;
    if let Some(flows) = builder.flows.take() {
        state.flow_rows.absorb(flows);
    }
    state.asyncs.finish();
    let names = |tid: u32| reader.thread_name(tid).map(|n| n.as_str().to_owned());
    let place =
        Place { trace, process: &header.process_name, pid: header.pid, thread_name: &names, shift_ns };
    state.flush(&place, batch_rows, true, &mut out)?;
    state.finish_file(&place, &header, reader.trailer(), threads.len(), batch_rows, &mut out)?;
    system.flush(&place, batch_rows, true, &mut |table, batch| out.full(table, batch))?;
    if tables.contains(&Table::Threads) {
        threads.sort_unstable();
        out.made(Table::Threads, place.threads(&threads, out.columns(Table::Threads)))?;
    }
    Ok(())
}

/// Passes on the batches the engine's thread made.
fn pass(
    batches: &Receiver<(Table, RecordBatch)>,
    out: &mut Out<'_, impl FnMut(Table, RecordBatch) -> Result<(), Error>>,
) -> Result<(), Error> {
    batches.try_iter().try_for_each(|(table, batch)| out.made(table, batch))
}

/// Counts an event of `tid` in `threads` (sorted by tid once reading is done).
fn count_thread(threads: &mut Vec<(u32, u64)>, tid: u32) {
    match threads.iter_mut().find(|(t, _)| *t == tid) {
        Some((_, n)) => *n += 1,
        None => threads.push((tid, 1)),
    }
    // The thread just counted goes last, where the next event looks first.
    if let Some(at) = threads.iter().position(|(t, _)| *t == tid) {
        let last = threads.len() - 1;
        threads.swap(at, last);
    }
}

/// What the reader's thread keeps: the sites it numbers, the engine it feeds, and the rows of
/// what is not nested.
struct State {
    timeline: Timeline,
    feed: Feed<Payload, Builder>,
    sites: Sites,
    /// The length of the site table when it was last sent to the engine.
    sites_sent: (usize, usize),
    /// Whether marks are shown (instants, counters, logs), and slices: their text is made only
    /// then.
    marks: bool,
    slices: bool,
    /// The tables asked for.
    tables: Vec<Table>,
    /// Whether arguments are made into JSON (a table with `arguments` is asked for), and logs'
    /// messages formatted (`logs.message` is).
    arguments: bool,
    messages: bool,
    message: String,
    /// The buffer each row's [`Extra`] is packed in before it is copied out.
    scratch: Vec<u8>,
    /// Whether events go through the nesting at all: for any table whose rows or ids come from
    /// it. Slices and marks are always nested together, so that ids and paths are the same
    /// whatever tables a query reads.
    nest: bool,
    /// The slices and marks made rows as they end, not nested, when no table asked for needs
    /// their place in their thread's tree ([`Flat`]): the engine's thread then only pairs
    /// begins with ends and makes the batches.
    flat: bool,
    /// Typed arguments kept (`args`), flows followed (`flows`), async halves paired,
    /// allocation counts matched.
    args: bool,
    flows: bool,
    pair_asyncs: bool,
    allocs: bool,
    asyncs: Asyncs,
    /// The flows' names and the async slices' members (the polls' come from the engine's
    /// thread at the end); the async slices' arguments; the async and the file's problems.
    flow_rows: Flows,
    arg_rows: ArgRows,
    problem_rows: ProblemRows,
    counts: FileCounts,
}

impl State {
    fn new(timeline: Timeline, asked: &[Wanted], mut builder: Builder) -> State {
        let wanted: Vec<Table> = asked.iter().map(|w| w.table).collect();
        let flat = asked.iter().all(Wanted::is_flat);
        if flat {
            builder.flat = Some(Flat::default());
        }
        State {
            timeline,
            feed: Feed::new(Nesting::new(DEFAULT_PENDING_LIMIT), builder),
            flat,
            sites: Sites::default(),
            sites_sent: (0, 0),
            marks: wanted.iter().any(|t| matches!(t, Table::Instants | Table::Counters | Table::Logs)),
            slices: wanted.contains(&Table::Slices),
            arguments: asked.iter().any(|w| w.has("arguments")),
            messages: asked.iter().any(|w| w.table == Table::Logs && w.has("message")),
            message: String::new(),
            scratch: Vec::new(),
            nest: wanted.iter().any(|t| {
                matches!(
                    t,
                    Table::Slices
                        | Table::Instants
                        | Table::Counters
                        | Table::Logs
                        | Table::Args
                        | Table::Flows
                        | Table::Problems
                        | Table::Allocations
                )
            }),
            args: wanted.contains(&Table::Args),
            flows: wanted.contains(&Table::Flows),
            pair_asyncs: wanted
                .iter()
                .any(|t| matches!(t, Table::AsyncSlices | Table::Args | Table::Flows | Table::Problems)),
            allocs: wanted.contains(&Table::Allocations),
            asyncs: Asyncs::new(),
            flow_rows: Flows::default(),
            arg_rows: ArgRows::default(),
            problem_rows: ProblemRows::default(),
            counts: FileCounts::default(),
            tables: wanted,
        }
    }

    /// The rows of the tables this thread makes (the async slices, and the arguments and
    /// problems they give): their batches once `batch_rows` have gathered, or all when `all`.
    fn flush(
        &mut self,
        place: &Place<'_>,
        batch_rows: usize,
        all: bool,
        out: &mut Out<'_, impl FnMut(Table, RecordBatch) -> Result<(), Error>>,
    ) -> Result<(), Error> {
        let at = (place.trace, place.process, place.pid);
        let timeline = &self.timeline;
        let ns = |t: u64| crate::tables::shifted(timeline.clock().to_ns(t), place.shift_ns);
        let problems = self.tables.contains(&Table::Problems);
        if self.asyncs.len() >= batch_rows || (all && self.asyncs.len() > 0) {
            let table = self.tables.contains(&Table::AsyncSlices);
            let args = self.args.then_some(&mut self.arg_rows);
            let flows = self.flows.then_some(&mut self.flow_rows);
            let problem_rows = problems.then_some(&mut self.problem_rows);
            if let Some(b) = self.asyncs.take(at, place.thread_name, &ns, table, args, flows, problem_rows) {
                out.full(Table::AsyncSlices, b)?;
            }
        }
        if self.arg_rows.len() >= batch_rows || (all && self.arg_rows.len() > 0) {
            let dictionary = out.wanted.iter().any(|w| w.dictionary);
            let batch =
                self.arg_rows.take(place.trace, place.process, place.pid, place.thread_name, dictionary);
            out.full(Table::Args, batch)?;
        }
        if self.problem_rows.len() >= batch_rows {
            out.full(Table::Problems, self.problem_rows.take(at, place.thread_name))?;
        }
        Ok(())
    }

    /// The end of the file: the flows, its `processes` and `drops` rows, and the problems that
    /// are the file's (its counts against the model's bounds, its losses).
    #[allow(clippy::too_many_arguments)]
    fn finish_file(
        &mut self,
        place: &Place<'_>,
        header: &phosphor_format::file::Header,
        trailer: Option<&phosphor_format::file::Trailer>,
        threads: usize,
        batch_rows: usize,
        out: &mut Out<'_, impl FnMut(Table, RecordBatch) -> Result<(), Error>>,
    ) -> Result<(), Error> {
        let at = (place.trace, place.process, place.pid);
        let wanted = &self.tables;
        let timeline = &self.timeline;
        let ns = |t: u64| crate::tables::shifted(timeline.clock().to_ns(t), place.shift_ns);
        if wanted.contains(&Table::Flows) {
            for b in self.flow_rows.finish(at, &ns, batch_rows) {
                out.full(Table::Flows, b)?;
            }
        }
        if wanted.contains(&Table::Processes) {
            out.full(Table::Processes, self.counts.process(at, header, trailer, threads, &ns))?;
        }
        if wanted.contains(&Table::Drops) {
            out.full(Table::Drops, self.counts.drops(at, trailer))?;
        }
        if !wanted.contains(&Table::Problems) {
            return Ok(());
        }
        let rows = &mut self.problem_rows;
        let (nesting, _) = self.feed.finish();
        let early = nesting.resolved_early();
        if early > 0 {
            let detail = format!(
                "{early} slices were resolved before their file ended, their thread having more than {} \
                 waiting for a parent: a slice that encloses them and arrives later is a late_parent",
                nesting.limit()
            );
            rows.add(None, None, "resolved_early", None, detail, early);
        }
        let deeper = nesting.truncated();
        if deeper > 0 {
            let depth = nesting.paths().max_depth();
            let detail = format!(
                "{deeper} slices nested deeper than {depth} levels are under \"[deeper than {depth}]\""
            );
            rows.add(None, None, "deeper_than_cap", None, detail, deeper);
        }
        let given_up = self.asyncs.given_up();
        if given_up > 0 {
            let detail = format!(
                "{given_up} async begins and ends were given up unmatched: {} were already waiting",
                phosphor_model::asyncs::DEFAULT_MAX_OPEN
            );
            rows.add(None, None, "async_given_up", None, detail, given_up);
        }
        match trailer {
            None => rows.add(
                None,
                None,
                "no_trailer",
                None,
                "the file has no trailer: the recording did not end cleanly, and what it dropped is unknown"
                    .into(),
                1,
            ),
            Some(t) if t.recorded != self.counts.events => rows.add(
                None,
                None,
                "events_missing",
                None,
                format!(
                    "the trailer says {} events were recorded, the file holds {}",
                    t.recorded, self.counts.events
                ),
                t.recorded.abs_diff(self.counts.events),
            ),
            Some(_) => {}
        }
        if rows.len() > 0 {
            out.full(Table::Problems, rows.take(at, place.thread_name))?;
        }
        Ok(())
    }

    /// Feeds one event to the engine, as the statistics do (`phosphor_export::StatsBuilder::add`).
    fn add(&mut self, event: &Event<'_>) {
        let cs = &event.callsite;
        // The event's times on the timeline, converted once (each a float multiply and rounding
        // on a TSC clock): `Timeline::end` is the time of the end tick, never before the start.
        let start = self.timeline.time(event.ts);
        let end = event.duration.map_or(start, |d| self.timeline.time(event.ts.saturating_add(d)).max(start));
        self.counts.event(start, end);
        if matches!(cs.phase, Phase::AsyncBegin | Phase::AsyncEnd) && self.pair_asyncs {
            self.asyncs.add(event, start);
        }
        if cs.phase == Phase::Instant && cs.category == PHOSPHOR_CATEGORY && cs.name == SCOPE_ALLOC_NAME {
            // Bookkeeping of allocation counts, not an instant of the program.
            if let (true, Some((allocs, bytes))) = (self.allocs, AllocMatch::counts(event)) {
                let (tid, at) = (event.tid, start);
                self.feed.message(Message::Alloc { tid, at, allocs, bytes });
            }
            return;
        }
        let Some(kind) = Kind::of(cs.phase) else {
            return;
        };
        let is_mark = matches!(kind, Kind::Instant | Kind::Counter | Kind::Log);
        if !self.nest {
            return;
        }
        // The text of the row (arguments, a log's message) only for a table that shows it.
        let shown = if is_mark { self.marks } else { self.slices };
        let (tid, ts) = (event.tid, start);
        let site = self.sites.site(cs, kind, &event.args);
        let table = self.sites.table();
        let label = table.get(site).label;
        if table.len() != self.sites_sent {
            // New sites go to the engine before the first operation naming them.
            let additions = table.since(self.sites_sent);
            self.sites_sent = table.len();
            self.feed.message(Message::Sites(additions));
        }
        // A dynamic name is argument 0: the name, not an argument.
        let skip = usize::from(cs.dynamic_name);
        let args = event.args.iter().skip(skip).flatten().copied();
        let mut payload = Payload { site, kind, ..Payload::default() };
        // What the row carries besides: its arguments (for `args`, or for an `arguments` column
        // shown), the flow it continues, a log's message; packed in one allocation.
        let keep_args =
            (self.args || (shown && self.arguments)) && !matches!(kind, Kind::Counter | Kind::Log);
        let mut flow = None;
        if let (true, Some((Member::Step, id))) = (self.flows, flows::member(event)) {
            let id_of_flow = flows::flow_id(cs.category.as_str(), cs.name.as_str(), id);
            self.flow_rows.name(id_of_flow, cs.category.as_str(), cs.name.as_str(), id);
            flow = Some(id_of_flow);
        }
        let mut text = None;
        match kind {
            _ if !shown => {}
            Kind::Counter => {
                payload.value = event.args.iter().flatten().find_map(|(_, v)| number(*v)).unwrap_or(f64::NAN);
            }
            Kind::Log if self.messages => {
                let params: Vec<Value<'_>> = event.params.iter().collect();
                format_log(&mut self.message, cs.name.as_str(), &params);
                text = Some(self.message.as_str());
            }
            _ => {}
        }
        // `take(0)`: the arguments not kept are not walked at all.
        let args = args.take(if keep_args { usize::MAX } else { 0 });
        if keep_args || flow.is_some() || text.is_some() {
            payload.extra = if self.flat {
                Extra::pack(&mut self.scratch, flow, text, args)
            } else {
                // Carried in the feed's batch and allocated on the engine's thread, where the
                // extra is freed (see `Feed::bytes`).
                Extra::carry(self.feed.bytes(), flow, text, args)
            };
        }
        let feed = &mut self.feed;
        if self.flat {
            // Made a row on the engine's thread, in order with the other operations.
            let op = FlatOp { phase: cs.phase, is_mark, tid, ts, end, payload };
            feed.message(Message::Flat(op));
            return;
        }
        match cs.phase {
            Phase::Begin => feed.begin_with(tid, label, ts, payload),
            Phase::End => feed.end(tid, label, ts),
            _ if is_mark => feed.mark_with(tid, label, ts, payload),
            _ => {
                feed.complete_with(tid, label, ts, end - ts, payload);
            }
        }
    }
}

/// A numeric argument's value.
fn number(v: Value<'_>) -> Option<f64> {
    match v {
        Value::F64(x) => Some(x),
        Value::I64(x) => Some(x as f64),
        Value::U64(x) => Some(x as f64),
        Value::Bool(_) | Value::Str(_) | Value::Pointer(_) => None,
    }
}

/// Slices and marks made rows without their nesting, for a query that reads none of the
/// columns the nesting gives ([`Wanted::is_flat`]): a complete event or a mark is a row as it
/// comes, a begin waits on its thread's stack for the end that closes it (the innermost open
/// begin, whatever its name, as the nesting closes it), and a begin never ended is a row at the
/// end, of no duration. So the rows, their times and durations, are the nested reading's, in
/// another order (the order the slices end, not their walk), at the cost of a stack per thread.
#[derive(Debug, Default)]
pub(crate) struct Flat {
    /// By thread id, its place in `open`.
    threads: IdMap,
    /// Each thread's open begins, outermost first: their start and payload.
    open: Vec<(u32, Vec<(u64, Payload)>)>,
}

impl Flat {
    /// The open begins of thread `tid`.
    fn stack(&mut self, tid: u32) -> &mut Vec<(u64, Payload)> {
        let at = match self.threads.get(tid) {
            Some(at) => at,
            None => {
                let at = self.open.len() as u32;
                self.open.push((tid, Vec::new()));
                self.threads.insert(tid, at);
                at
            }
        };
        &mut self.open[at as usize].1
    }

    /// An event, made a row if it is a slice or mark complete.
    pub(crate) fn add(&mut self, sink: &mut impl Sink<Payload>, op: FlatOp) {
        let FlatOp { phase, is_mark, tid, ts, end, payload } = op;
        match phase {
            Phase::Begin => self.stack(tid).push((ts, payload)),
            Phase::End => {
                // An end with no begin open is a problem only (no row).
                if let Some((start, payload)) = self.stack(tid).pop() {
                    row(sink, tid, SliceKind::Scope, start, ts.max(start) - start, payload);
                }
            }
            _ if is_mark => row(sink, tid, SliceKind::Mark, ts, 0, payload),
            _ => row(sink, tid, SliceKind::Scope, ts, end - ts, payload),
        }
    }

    /// The end of the stream: the begins still open are rows of no duration.
    pub(crate) fn finish(self, sink: &mut impl Sink<Payload>) {
        let mut open = self.open;
        open.sort_unstable_by_key(|&(tid, _)| tid);
        for (tid, stack) in open {
            for (start, payload) in stack {
                row(sink, tid, SliceKind::Unclosed, start, 0, payload);
            }
        }
    }
}

/// An event of `phase` (a mark if `is_mark`) of thread `tid` from `ts` to `end` (timeline),
/// for [`Flat`]: what the reader's thread sends the engine's of an event in a flat reading.
#[derive(Debug)]
pub(crate) struct FlatOp {
    phase: Phase,
    is_mark: bool,
    tid: u32,
    ts: u64,
    end: u64,
    payload: Payload,
}

/// Hands `sink` a slice of thread `tid`, of no place in a tree (no parent, no path).
fn row(sink: &mut impl Sink<Payload>, tid: u32, kind: SliceKind, start: u64, dur: u64, payload: Payload) {
    let slice = Slice { tid, path: ROOT, depth: 1, kind, start, dur, self_ticks: dur };
    sink.enter(&slice, payload);
    sink.leave(&slice);
}

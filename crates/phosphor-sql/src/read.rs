//! [`read_tables`]: one trace file read in one streaming pass into the batches of the tables
//! asked for.
//!
//! Events go through the trace model as every tool's do (`phosphor_model::nesting`, on
//! `Timeline` times, labels named as the statistics name them), with the row's payload; the
//! engine hands back resolved subtrees, whose rows are made into a batch once `batch_rows` have
//! gathered, between chunks. So memory is the engine's (at most its pending limit of slices per
//! thread), a batch per table, and the sites and paths seen: not the file's events.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use arrow::record_batch::RecordBatch;
use phosphor_format::file::{Block, Event, Reader, Value};
use phosphor_format::logfmt::format_log;
use phosphor_format::system::{PHOSPHOR_CATEGORY, SCOPE_ALLOC_NAME};
use phosphor_format::Phase;
use phosphor_model::flows::{self, Member};
use phosphor_model::nesting::{Nesting, ProblemKind, DEFAULT_PENDING_LIMIT};
use phosphor_model::problems::ScopeProblemKind;
use phosphor_model::timeline::Timeline;

use crate::args_table::{self, ArgRows, Owner};
use crate::asyncs_table::Asyncs;
use crate::file_tables::FileCounts;
use crate::flows_table::Flows;
use crate::json;
use crate::problems_table::ProblemRows;
use crate::rows::{Extra, Payload, Row, Rows};
use crate::sites::{Kind, Sites};
use crate::system_tables::SystemTables;
use crate::tables::{table_of, Context, PathNames, Table};
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
}

impl TraceSource {
    /// The file at `path`, named by its path as given.
    pub fn new(path: impl Into<PathBuf>) -> TraceSource {
        let path = path.into();
        TraceSource { trace: path.display().to_string(), path }
    }

    /// Opens the file and reads its header.
    pub fn open(&self) -> Result<Reader<BufReader<File>>, Error> {
        let f = File::open(&self.path).map_err(|source| Error::Open { path: self.path.clone(), source })?;
        Ok(Reader::new(BufReader::with_capacity(1 << 16, f)).map_err(|e| e.with_path(&self.path))?)
    }
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
    let reader = source.open()?.read_ahead();
    let wanted: Vec<Wanted> = wanted.iter().map(|&table| Wanted::all(table)).collect();
    read_wanted(reader, &source.path, &source.trace, &wanted, batch_rows, emit)
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
    let wanted = [Wanted { table, columns: columns.to_vec() }];
    read_wanted(reader, &source.path, &source.trace, &wanted, batch_rows, emit)
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
    read_wanted(reader, path, trace, &wanted, batch_rows, emit)
}

/// A table asked for, and which of its columns.
#[derive(Clone, Debug)]
pub(crate) struct Wanted {
    pub(crate) table: Table,
    /// Indices into the table's schema.
    pub(crate) columns: Vec<usize>,
}

impl Wanted {
    fn all(table: Table) -> Wanted {
        Wanted { table, columns: (0..table.schema().fields().len()).collect() }
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

fn read_wanted<R: Read>(
    mut reader: Reader<R>,
    path: &Path,
    trace: &str,
    wanted: &[Wanted],
    batch_rows: usize,
    emit: impl FnMut(Table, RecordBatch) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut out = Out { emit, wanted };
    let batch_rows = batch_rows.max(1);
    let mut state = State::new(&reader.header().clock, wanted);
    let tables = state.tables.clone();
    state.rows.allocs.on = tables.contains(&Table::Allocations);
    let mut system = SystemTables::new(&tables);
    let header = reader.header().clone();
    let mut threads: Vec<(u32, u64)> = Vec::new();
    loop {
        let chunk = match reader.next_block() {
            Ok(Some(Block::Chunk(chunk))) => {
                state.counts.chunk(&chunk.extents);
                chunk
            }
            Ok(Some(Block::System(batch))) => {
                system.add(batch);
                let names = |tid: u32| reader.thread_name(tid).map(|n| n.as_str().to_owned());
                let file = FileInfo { trace, process: &header.process_name, pid: header.pid, names: &names };
                flush_system(&mut state, &mut system, &file, batch_rows, false, &mut out)?;
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
        let names = |tid: u32| reader.thread_name(tid).map(|n| n.as_str().to_owned());
        let file = FileInfo { trace, process: &header.process_name, pid: header.pid, names: &names };
        state.flush(&file, batch_rows, false, &mut out)?;
        flush_system(&mut state, &mut system, &file, batch_rows, false, &mut out)?;
    }
    state.nesting.finish(&mut state.rows);
    state.asyncs.finish();
    let names = |tid: u32| reader.thread_name(tid).map(|n| n.as_str().to_owned());
    let file = FileInfo { trace, process: &header.process_name, pid: header.pid, names: &names };
    state.flush(&file, batch_rows, true, &mut out)?;
    state.finish_file(&file, &header, reader.trailer(), threads.len(), batch_rows, &mut out)?;
    flush_system(&mut state, &mut system, &file, batch_rows, true, &mut out)?;
    if tables.contains(&Table::Threads) {
        threads.sort_unstable();
        let batch = state.context(&file).threads(&threads, out.columns(Table::Threads));
        out.made(Table::Threads, batch)?;
    }
    Ok(())
}

/// Makes batches of the system tables' rows and of `allocations` (see [`State::flush`]).
fn flush_system(
    state: &mut State,
    system: &mut SystemTables,
    file: &FileInfo<'_>,
    batch_rows: usize,
    all: bool,
    out: &mut Out<'_, impl FnMut(Table, RecordBatch) -> Result<(), Error>>,
) -> Result<(), Error> {
    let n = state.rows.allocs.rows.len();
    let allocs = if n >= batch_rows || (all && n > 0) {
        std::mem::take(&mut state.rows.allocs.rows)
    } else {
        Vec::new()
    };
    let mut ctx = state.context(file);
    for part in allocs.chunks(batch_rows) {
        out.full(Table::Allocations, crate::allocations::allocations(&mut ctx, part))?;
    }
    system.flush(&mut ctx, batch_rows, all, &mut |table, batch| out.full(table, batch))
}

/// What every row of a file says of where it was recorded.
struct FileInfo<'a> {
    trace: &'a str,
    process: &'a str,
    pid: u32,
    names: &'a dyn Fn(u32) -> Option<String>,
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

/// What reading a file keeps.
struct State {
    timeline: Timeline,
    nesting: Nesting<Payload>,
    rows: Rows,
    sites: Sites,
    path_names: PathNames,
    /// Whether marks are wanted (instants, counters, logs): else they are not nested at all
    /// (a mark encloses nothing, so the slices' tree is the same without them).
    marks: bool,
    slices: bool,
    /// The tables asked for.
    tables: Vec<Table>,
    /// Whether arguments are made into JSON (a table with `arguments` is asked for), and logs'
    /// messages formatted (`logs.message` is).
    arguments: bool,
    messages: bool,
    message: String,
    /// Whether events go through the nesting at all: for any table whose rows or ids come from
    /// it. Slices and marks are always nested together, so that ids and paths are the same
    /// whatever tables a query reads.
    nest: bool,
    /// Typed arguments kept (`args`), flows followed (`flows`), async halves paired.
    args: bool,
    flows: bool,
    pair_asyncs: bool,
    asyncs: Asyncs,
    flow_rows: Flows,
    arg_rows: ArgRows,
    problem_rows: ProblemRows,
    counts: FileCounts,
}

impl State {
    fn new(clock: &phosphor_format::ClockInfo, asked: &[Wanted]) -> State {
        let wanted: Vec<Table> = asked.iter().map(|w| w.table).collect();
        State {
            arguments: asked.iter().any(|w| w.has("arguments")),
            messages: asked.iter().any(|w| w.table == Table::Logs && w.has("message")),
            timeline: Timeline::new(clock),
            nesting: Nesting::new(DEFAULT_PENDING_LIMIT),
            rows: Rows::new(),
            sites: Sites::default(),
            path_names: PathNames::default(),
            marks: wanted.iter().any(|t| matches!(t, Table::Instants | Table::Counters | Table::Logs)),
            slices: wanted.contains(&Table::Slices),
            message: String::new(),
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
            asyncs: Asyncs::new(wanted.contains(&Table::Args)),
            flow_rows: Flows::default(),
            arg_rows: ArgRows::default(),
            problem_rows: ProblemRows::default(),
            counts: FileCounts::default(),
            tables: wanted,
        }
    }

    fn context<'a>(&'a mut self, file: &'a FileInfo<'a>) -> Context<'a> {
        Context {
            trace: file.trace,
            process: file.process,
            pid: file.pid,
            thread_name: file.names,
            sites: self.sites.table(),
            paths: self.nesting.paths(),
            path_names: &mut self.path_names,
            timeline: &self.timeline,
        }
    }

    /// Makes batches of the rows gathered: of each table with at least `batch_rows` of them, or
    /// of all that are left when `all`.
    fn flush(
        &mut self,
        file: &FileInfo<'_>,
        batch_rows: usize,
        all: bool,
        out: &mut Out<'_, impl FnMut(Table, RecordBatch) -> Result<(), Error>>,
    ) -> Result<(), Error> {
        let slices = self.rows.slices.len() >= batch_rows || (all && !self.rows.slices.is_empty());
        let slices = if slices { std::mem::take(&mut self.rows.slices) } else { Vec::new() };
        let marks = self.rows.marks.len() >= batch_rows || (all && !self.rows.marks.is_empty());
        let marks = if marks { std::mem::take(&mut self.rows.marks) } else { Vec::new() };
        self.flush_more(file, batch_rows, all, &slices, &marks, out)?;
        let wanted = &self.tables;
        if wanted.contains(&Table::Slices) {
            let mut ctx = self.context(file);
            for part in slices.chunks(batch_rows) {
                let batch = ctx.rows(Table::Slices, part, out.columns(Table::Slices));
                out.made(Table::Slices, batch)?;
            }
        }
        if marks.is_empty() {
            return Ok(());
        }
        let mut by_table: [Vec<Row>; 3] = Default::default();
        for row in marks {
            let at = match table_of(row.payload.kind) {
                Table::Instants => 0,
                Table::Counters => 1,
                _ => 2,
            };
            by_table[at].push(row);
        }
        let wanted = self.tables.clone();
        let mut ctx = self.context(file);
        for (table, rows) in [Table::Instants, Table::Counters, Table::Logs].into_iter().zip(by_table) {
            if wanted.contains(&table) {
                for part in rows.chunks(batch_rows) {
                    let batch = ctx.rows(table, part, out.columns(table));
                    out.made(table, batch)?;
                }
            }
        }
        Ok(())
    }

    /// The rows of the tables made beside the slices, from the slices and marks resolved
    /// (`slices`, `marks`), the scopes that did not nest and the async slices paired since the
    /// last flush: their batches once `batch_rows` have gathered, or all when `all`.
    #[allow(clippy::too_many_arguments)]
    fn flush_more(
        &mut self,
        file: &FileInfo<'_>,
        batch_rows: usize,
        all: bool,
        slices: &[Row],
        marks: &[Row],
        out: &mut Out<'_, impl FnMut(Table, RecordBatch) -> Result<(), Error>>,
    ) -> Result<(), Error> {
        let at = (file.trace, file.process, file.pid);
        let wanted = &self.tables;
        if self.args {
            for r in slices {
                self.arg_rows.add(r.tid, r.id, Owner::Slice, r.payload.args());
            }
            for r in marks.iter().filter(|r| r.payload.kind == Kind::Instant) {
                self.arg_rows.add(r.tid, r.id, Owner::Instant, r.payload.args());
            }
        }
        if self.flows {
            for r in slices {
                if let Some(flow) = r.payload.flow() {
                    self.flow_rows.member(flow, r.start, Member::Step, Some(r.id), None, r.tid);
                }
            }
        }
        let timeline = &self.timeline;
        let ns = |t: u64| i64::try_from(timeline.clock().to_ns(t)).unwrap_or(i64::MAX);
        let problems = wanted.contains(&Table::Problems);
        for p in self.rows.problems.drain(..).filter(|_| problems) {
            let sites = self.sites.table();
            let kind = ScopeProblemKind::new(p.kind, |l| sites.name(l).to_owned());
            let name = match p.kind {
                ProblemKind::WrongName { end: l, .. } | ProblemKind::EndWithoutBegin { end: l } => l,
                ProblemKind::LeftOpen { open: l } => l,
                ProblemKind::Interlaced { scope: l, .. } | ProblemKind::LateParent { scope: l } => l,
            };
            let detail = kind.to_string();
            self.problem_rows.add(
                Some(p.tid),
                Some(ns(p.ts)),
                kind.as_str(),
                Some(sites.name(name)),
                detail,
                1,
            );
        }
        if self.asyncs.len() >= batch_rows || (all && self.asyncs.len() > 0) {
            let table = wanted.contains(&Table::AsyncSlices);
            let args = self.args.then_some(&mut self.arg_rows);
            let flows = self.flows.then_some(&mut self.flow_rows);
            let problem_rows = problems.then_some(&mut self.problem_rows);
            if let Some(b) = self.asyncs.take(at, file.names, &ns, table, args, flows, problem_rows) {
                out.full(Table::AsyncSlices, b)?;
            }
        }
        if self.arg_rows.len() >= batch_rows || (all && self.arg_rows.len() > 0) {
            out.full(Table::Args, self.arg_rows.take(file.trace, file.process, file.pid, file.names))?;
        }
        if self.problem_rows.len() >= batch_rows {
            out.full(Table::Problems, self.problem_rows.take(at, file.names))?;
        }
        Ok(())
    }

    /// The end of the file: the flows, its `processes` and `drops` rows, and the problems that
    /// are the file's (its counts against the model's bounds, its losses).
    #[allow(clippy::too_many_arguments)]
    fn finish_file(
        &mut self,
        file: &FileInfo<'_>,
        header: &phosphor_format::file::Header,
        trailer: Option<&phosphor_format::file::Trailer>,
        threads: usize,
        batch_rows: usize,
        out: &mut Out<'_, impl FnMut(Table, RecordBatch) -> Result<(), Error>>,
    ) -> Result<(), Error> {
        let at = (file.trace, file.process, file.pid);
        let wanted = &self.tables;
        let timeline = &self.timeline;
        let ns = |t: u64| i64::try_from(timeline.clock().to_ns(t)).unwrap_or(i64::MAX);
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
        let early = self.nesting.resolved_early();
        if early > 0 {
            let detail = format!(
                "{early} slices were resolved before their file ended, their thread having more than {} \
                 waiting for a parent: a slice that encloses them and arrives later is a late_parent",
                self.nesting.limit()
            );
            rows.add(None, None, "resolved_early", None, detail, early);
        }
        let deeper = self.nesting.truncated();
        if deeper > 0 {
            let depth = self.nesting.paths().max_depth();
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
            out.full(Table::Problems, rows.take(at, file.names))?;
        }
        Ok(())
    }

    /// Feeds one event to the engine, as the statistics do (`phosphor_export::StatsBuilder::add`).
    fn add(&mut self, event: &Event<'_>) {
        let cs = &event.callsite;
        let start = self.timeline.time(event.ts);
        self.counts.event(start, event.duration.map_or(start, |d| self.timeline.end(event.ts, d)));
        if matches!(cs.phase, Phase::AsyncBegin | Phase::AsyncEnd) && self.pair_asyncs {
            self.asyncs.add(event, start);
        }
        if cs.phase == Phase::Instant && cs.category == PHOSPHOR_CATEGORY && cs.name == SCOPE_ALLOC_NAME {
            // Bookkeeping of allocation counts, not an instant of the program.
            self.rows.allocs.event(&self.nesting, &self.timeline, event);
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
        let tid = event.tid;
        let ts = self.timeline.time(event.ts);
        let site = self.sites.site(cs, kind, &event.args);
        let label = self.sites.table().get(site).label;
        // A dynamic name is argument 0: the name, not an argument.
        let skip = usize::from(cs.dynamic_name);
        let args = event.args.iter().skip(skip).flatten().copied();
        let mut payload = Payload { site, kind, ..Payload::default() };
        let mut extra = Extra::default();
        if self.args && !matches!(kind, Kind::Counter | Kind::Log) {
            extra.args = args_table::collect(args.clone());
        }
        if let (true, Some((Member::Step, id))) = (self.flows, flows::member(event)) {
            let flow = flows::flow_id(cs.category.as_str(), cs.name.as_str(), id);
            self.flow_rows.name(flow, cs.category.as_str(), cs.name.as_str(), id);
            extra.flow = Some(flow);
        }
        match kind {
            _ if !shown => {}
            Kind::Counter => {
                payload.value = event.args.iter().flatten().find_map(|(_, v)| number(*v)).unwrap_or(f64::NAN);
            }
            Kind::Log if self.messages => {
                let params: Vec<Value<'_>> = event.params.iter().collect();
                format_log(&mut self.message, cs.name.as_str(), &params);
                extra.text = Some(self.message.as_str().into());
            }
            Kind::Log => {}
            _ if self.arguments => extra.text = json::object(args),
            _ => {}
        }
        payload.set_extra(extra);
        let (nesting, rows) = (&mut self.nesting, &mut self.rows);
        match cs.phase {
            Phase::Begin => nesting.begin_with(tid, label, ts, payload),
            Phase::End => nesting.end(tid, label, ts, rows),
            _ if is_mark => nesting.mark_with(tid, label, ts, payload, rows),
            _ => {
                let end = event.duration.map_or(ts, |d| self.timeline.end(event.ts, d));
                nesting.complete_with(tid, label, ts, end - ts, payload, rows);
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

//! [`Builder`]: the nesting engine's consumer, which numbers the rows the engine resolves and
//! makes them into Arrow batches, on the engine's thread.
//!
//! Reading a file is a pipeline (`phosphor_model::background`): the reader's read-ahead
//! decompresses the blocks, the reader's thread decodes the events and finds each one's site,
//! and the engine's thread nests them, numbers the resolved slices and marks ([`Rows`]) and makes
//! the batches of every table made from them (slices, instants, counters, logs, their typed
//! arguments, the scopes that do not nest, the allocation counts per slice). It leaves the
//! batches in an outbox that the reader's thread empties after each chunk. What the batches need
//! from the reader's side comes as messages, in stream order with the slices: the sites and
//! names the reader numbered ([`SiteAdditions`]), the threads' names as the file gives them, the
//! allocation counts to match, and when to make batches (after each chunk, as a reader on one
//! thread would). With the engine kept on the reader's thread (a short file, one core) the same
//! operations are applied in the same order: the rows are the same.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, Sender};

use arrow::record_batch::RecordBatch;
use phosphor_model::background::Consumer;
use phosphor_model::flows::Member;
use phosphor_model::nesting::{Nesting, Paths, Problem, ProblemKind, Sink, Slice};
use phosphor_model::problems::ScopeProblemKind;
use phosphor_model::timeline::Timeline;

use crate::args_table::{ArgRows, Owner};
use crate::flows_table::Flows;
use crate::problems_table::ProblemRows;
use crate::read::{Flat, FlatOp, Wanted};
use crate::rows::{Payload, Row, Rows};
use crate::sites::{SiteAdditions, SiteTable};
use crate::tables::{project, Context, PathNames, Place, Table};

/// The file every row of a reading is from.
#[derive(Clone, Debug)]
pub(crate) struct FileInfo {
    pub(crate) trace: String,
    pub(crate) process: String,
    pub(crate) pid: u32,
    /// [`crate::TraceSource::shift_ns`].
    pub(crate) shift_ns: i64,
}

/// What the reader's thread tells the engine's besides slices.
#[derive(Debug)]
pub(crate) enum Message {
    /// Sites and names the reader numbered since its last such message, before any operation
    /// naming them.
    Sites(SiteAdditions),
    /// A thread's name, as the file gives it from this point on.
    ThreadName(u32, String),
    /// A `phosphor/scope_alloc` count of thread `tid` stamped at `at` (timeline), for the
    /// scope that ended then (`crate::allocations`).
    Alloc { tid: u32, at: u64, allocs: u64, bytes: u64 },
    /// A chunk was read: make batches of the tables with enough rows.
    Flush,
    /// An event of a flat reading ([`crate::read`]'s `Flat`), made a row here.
    Flat(FlatOp),
}

/// The rows of one file and the batches made of them; see the [module docs](self).
#[derive(Debug)]
pub(crate) struct Builder {
    pub(crate) rows: Rows,
    /// The open begins of a flat reading, which reads without the nesting (`None`: a nested one).
    pub(crate) flat: Option<Flat>,
    sites: SiteTable,
    path_names: PathNames,
    /// The threads' names as the file gave them so far.
    names: HashMap<u32, String>,
    file: FileInfo,
    timeline: Timeline,
    wanted: Vec<Wanted>,
    batch_rows: usize,
    /// The typed arguments of slices and instants (`args`), when wanted.
    args: Option<ArgRows>,
    /// The polls of instrumented futures (`flows`), when wanted: handed to the reader's flows,
    /// which hold the async slices' members, at the end.
    pub(crate) flows: Option<Flows>,
    /// The scopes that do not nest (`problems`), when wanted.
    problems: Option<ProblemRows>,
    /// Where batches go; a reader that stopped early no longer takes them (they are dropped).
    outbox: Sender<(Table, RecordBatch)>,
    /// Batches given back once used, to be freed here, where they were made (see
    /// `read_tables_for_parquet`).
    spent: Option<Receiver<RecordBatch>>,
}

impl Builder {
    pub(crate) fn new(
        file: FileInfo,
        timeline: Timeline,
        wanted: &[Wanted],
        batch_rows: usize,
        outbox: Sender<(Table, RecordBatch)>,
        spent: Option<Receiver<RecordBatch>>,
    ) -> Builder {
        let has = |table: Table| wanted.iter().any(|w| w.table == table);
        let mut rows = Rows::new();
        rows.allocs.on = has(Table::Allocations);
        Builder {
            rows,
            flat: None,
            sites: SiteTable::default(),
            path_names: PathNames::default(),
            names: HashMap::new(),
            file,
            timeline,
            wanted: wanted.to_vec(),
            batch_rows: batch_rows.max(1),
            args: has(Table::Args).then(ArgRows::default),
            flows: has(Table::Flows).then(Flows::default),
            problems: has(Table::Problems).then(ProblemRows::default),
            outbox,
            spent,
        }
    }

    /// Makes batches of the rows gathered: of each table with at least `batch_rows` of them, or
    /// of all that are left when `all`.
    pub(crate) fn flush(&mut self, paths: &Paths, all: bool) {
        if let Some(spent) = &self.spent {
            // Each dropped here.
            while spent.try_recv().is_ok() {}
        }
        let batch_rows = self.batch_rows;
        let ready = |n: usize| n >= batch_rows || (all && n > 0);
        let slices_due = ready(self.rows.slices.len());
        let marks_due = self.rows.marks.each_ref().map(|m| ready(m.len()));
        let slices: &[Row] = if slices_due { &self.rows.slices } else { &[] };
        if let Some(flows) = &mut self.flows {
            for r in slices {
                if let Some(flow) = r.payload.flow() {
                    flows.member(flow, r.start, Member::Step, Some(r.id), None, r.tid);
                }
            }
        }
        self.problems_found();
        let allocs = if ready(self.rows.allocs.rows.len()) {
            std::mem::take(&mut self.rows.allocs.rows)
        } else {
            Vec::new()
        };

        let Builder { names, file, wanted, outbox, sites, path_names, timeline, rows, .. } = self;
        let name = |tid: u32| names.get(&tid).cloned();
        let place = Place {
            trace: &file.trace,
            process: &file.process,
            pid: file.pid,
            thread_name: &name,
            shift_ns: file.shift_ns,
        };
        let dictionary = wanted.iter().any(|w| w.dictionary);
        let mut ctx = Context { place, sites, paths, path_names, timeline, dictionary };
        let columns = |table: Table| wanted.iter().find(|w| w.table == table).map(|w| w.columns.as_slice());
        // A send fails only when the reader stopped: the batch is not wanted any more.
        let send = |table: Table, batch: RecordBatch| {
            let _ = outbox.send((table, batch));
        };
        // The rows made into batches now: each kind's once enough have gathered. Their buffers
        // are kept for the next rows (cleared below), not freed and grown again. Their
        // arguments, once the `arguments` JSON is written, move to `args` (when wanted).
        if slices_due {
            if let Some(columns) = columns(Table::Slices) {
                for part in rows.slices.chunks(batch_rows) {
                    send(Table::Slices, ctx.rows(Table::Slices, part, columns));
                }
            }
            if let Some(args) = &mut self.args {
                for r in &mut rows.slices {
                    if let Some((packed, n)) = r.payload.take_args() {
                        args.add_bytes(r.tid, r.id, Owner::Slice, packed, n);
                    }
                }
            }
            rows.slices.clear();
        }
        for ((table, marks), due) in Rows::MARKS.into_iter().zip(&mut rows.marks).zip(marks_due) {
            if !due {
                continue;
            }
            if let Some(columns) = columns(table) {
                for part in marks.chunks(batch_rows) {
                    send(table, ctx.rows(table, part, columns));
                }
            }
            if let (Table::Instants, Some(args)) = (table, &mut self.args) {
                for r in marks.iter_mut() {
                    if let Some((packed, n)) = r.payload.take_args() {
                        args.add_bytes(r.tid, r.id, Owner::Instant, packed, n);
                    }
                }
            }
            marks.clear();
        }
        if let Some(columns) = columns(Table::Allocations) {
            for part in allocs.chunks(batch_rows) {
                send(Table::Allocations, project(crate::allocations::allocations(&mut ctx, part), columns));
            }
        }
        if let (Some(args), Some(columns)) = (&mut self.args, columns(Table::Args)) {
            if ready(args.len()) {
                let batch = args.take(&file.trace, &file.process, file.pid, &name, dictionary);
                send(Table::Args, project(batch, columns));
            }
        }
        if let (Some(problems), Some(columns)) = (&mut self.problems, columns(Table::Problems)) {
            if ready(problems.len()) {
                let at = (file.trace.as_str(), file.process.as_str(), file.pid);
                send(Table::Problems, project(problems.take(at, &name), columns));
            }
        }
    }

    /// The scopes the engine found not to nest since the last call, as `problems` rows (in
    /// `phosphor stats`' words) when that table is wanted.
    fn problems_found(&mut self) {
        let found = std::mem::take(&mut self.rows.problems);
        let Some(rows) = &mut self.problems else { return };
        let sites = &self.sites;
        let timeline = &self.timeline;
        let shift = self.file.shift_ns;
        let ns = |t: u64| crate::tables::shifted(timeline.clock().to_ns(t), shift);
        for p in found {
            let kind = ScopeProblemKind::new(p.kind, |l| sites.name(l).to_owned());
            let name = match p.kind {
                ProblemKind::WrongName { end: l, .. } | ProblemKind::EndWithoutBegin { end: l } => l,
                ProblemKind::LeftOpen { open: l } => l,
                ProblemKind::Interlaced { scope: l, .. } | ProblemKind::LateParent { scope: l } => l,
            };
            rows.add(Some(p.tid), Some(ns(p.ts)), kind.as_str(), Some(sites.name(name)), kind.to_string(), 1);
        }
    }
}

impl Sink<Payload> for Builder {
    fn enter(&mut self, slice: &Slice, payload: Payload) {
        self.rows.enter(slice, payload);
    }

    fn leave(&mut self, slice: &Slice) {
        self.rows.leave(slice);
    }

    fn problem(&mut self, problem: Problem) {
        self.rows.problem(problem);
    }
}

impl Consumer<Payload> for Builder {
    type Message = Message;

    fn message(&mut self, nesting: &Nesting<Payload>, message: Message) {
        match message {
            Message::Sites(additions) => self.sites.extend(additions),
            Message::ThreadName(tid, name) => {
                self.names.insert(tid, name);
            }
            Message::Alloc { tid, at, allocs, bytes } => {
                self.rows.allocs.count(nesting, tid, at, allocs, bytes)
            }
            Message::Flush => self.flush(nesting.paths(), false),
            Message::Flat(op) => {
                if let Some(flat) = &mut self.flat {
                    flat.add(&mut self.rows, op);
                }
            }
        }
    }

    fn adopt(&mut self, payload: &mut Payload, bytes: &mut &[u8]) {
        if let Some(extra) = &mut payload.extra {
            extra.adopt(bytes);
        }
    }
}

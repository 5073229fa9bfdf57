//! The tables of a trace's system context (format 1.6's system blocks): `switches`, `off_cpu`,
//! `samples`, `frames`, `heap` and `mappings`.
//!
//! The rows come from the system blocks as the reader meets them, beside the chunks, and go out
//! in batches as the event tables' do. Two things are the statistics' own, reused rather than
//! done again: the off-CPU intervals are `phosphor_export::system::SystemContext`'s (the
//! intervals `phosphor stats` measures each scope against, so a join of `slices` with
//! `off_cpu` gives its per-scope figures), made at the end of the file since a thread's
//! switches may come in any block; and the frames are `phosphor_export::symbolize`'s (the
//! functions, files and lines `phosphor stats` and `flamegraph --samples` name).
//!
//! # Memory
//!
//! A block's rows, made into batches once a batch's worth has gathered; for `off_cpu`, the
//! context's 16 bytes per switch (at most `MAX_HELD`, as for the statistics); the symbolizer's
//! bounded caches; and the stacks already numbered, at most [`MAX_STACK_ADDRESSES`] addresses
//! of them: past it they are forgotten and a stack met again gets a new number (and its frames
//! again), so a `stack_id` always names one stack.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Int64Array, StringArray, UInt32Array, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use phosphor_export::symbolize::Symbolizer;
use phosphor_export::system::SystemContext;
use phosphor_format::system::{
    HeapCounter, Mapping, SampleKind, Switch, SwitchKind, SystemBatch, UNKNOWN_CPU,
};

use crate::tables::{Place, Table};
use crate::Error;

/// The most addresses of numbered stacks remembered (8 MiB of them).
pub const MAX_STACK_ADDRESSES: usize = 1 << 20;

/// The tables made here.
const SYSTEM: [Table; 6] =
    [Table::Switches, Table::OffCpu, Table::Samples, Table::Frames, Table::Heap, Table::Mappings];

/// The schema of a table made here or of `allocations` (`None` for the others).
pub(crate) fn schema(table: Table) -> Option<SchemaRef> {
    use DataType::{Boolean, Int64, UInt32, UInt64, Utf8};
    let f = |name: &str, ty: DataType, nullable: bool| Field::new(name, ty, nullable);
    let mut fields = vec![f("trace", Utf8, false), f("process", Utf8, false), f("pid", UInt32, false)];
    let thread = [f("thread", Utf8, true), f("tid", UInt32, false)];
    match table {
        Table::Switches => {
            fields.extend(thread);
            fields.extend([f("ts", Int64, false), f("kind", Utf8, false), f("cpu", UInt32, true)]);
        }
        Table::OffCpu => {
            fields.extend(thread);
            fields.extend([f("ts", Int64, false), f("end_ts", Int64, true), f("dur", Int64, true)]);
            fields.push(f("reason", Utf8, false));
        }
        Table::Samples => {
            fields.extend(thread);
            fields.extend([f("id", UInt64, false), f("ts", Int64, false), f("cpu", UInt32, true)]);
            fields.extend([f("kind", Utf8, false), f("bytes", UInt64, true), f("stack_id", UInt64, false)]);
            fields.extend([f("stack_depth", UInt32, false), f("leaf", Utf8, false)]);
        }
        Table::Frames => {
            fields.extend([f("stack_id", UInt64, false), f("depth", UInt32, false)]);
            fields.extend([f("address_index", UInt32, false), f("address", UInt64, false)]);
            fields.extend([f("function", Utf8, false), f("file", Utf8, true), f("line", UInt32, true)]);
            fields.extend([f("inlined", Boolean, false), f("module", Utf8, true)]);
        }
        Table::Heap => {
            fields.extend([f("ts", Int64, false), f("allocs", UInt64, false), f("frees", UInt64, false)]);
            fields.extend([f("alloc_bytes", UInt64, false), f("freed_bytes", UInt64, false)]);
            fields.push(f("live_bytes", Int64, false));
        }
        Table::Mappings => {
            fields.extend([f("start_address", UInt64, false), f("end_address", UInt64, false)]);
            fields.extend([f("file_offset", UInt64, false), f("path", Utf8, false)]);
            fields.push(f("build_id", Utf8, true));
        }
        Table::Allocations => {
            fields.extend(thread);
            fields.extend([f("slice_id", UInt64, false), f("ts", Int64, false), f("path", Utf8, false)]);
            fields.extend([f("allocs", UInt64, false), f("bytes", UInt64, false)]);
        }
        _ => return None,
    }
    Some(Arc::new(Schema::new(fields)))
}

/// A CPU or allocation sample, as a row.
struct SampleRow {
    id: u64,
    tid: u32,
    time_ns: u64,
    cpu: u32,
    /// The bytes an allocation sample stands for; `None` for a CPU sample.
    bytes: Option<u64>,
    stack: u64,
    stack_depth: u32,
    leaf: Arc<str>,
}

/// One frame of a numbered stack, as a row.
struct FrameRow {
    stack: u64,
    depth: u32,
    address_index: u32,
    address: u64,
    function: String,
    file: Option<String>,
    line: Option<u32>,
    inlined: bool,
    module: Option<Arc<str>>,
}

/// The system tables of one file while it is read (see the module's documentation).
pub(crate) struct SystemTables {
    wanted: Vec<Table>,
    switches: Vec<Switch>,
    samples: Vec<SampleRow>,
    frames: Vec<FrameRow>,
    heap: Vec<HeapCounter>,
    mappings: Vec<Mapping>,
    /// The switches, for `off_cpu` (only when it is wanted).
    context: SystemContext,
    /// Made when samples or frames are wanted.
    symbolizer: Option<Symbolizer>,
    /// By stack, its number and its leaf function.
    stacks: HashMap<Box<[u64]>, (u64, Arc<str>)>,
    stack_addresses: usize,
    next_stack: u64,
    next_sample: u64,
    /// Modules by path, each once.
    modules: HashMap<String, Arc<str>>,
}

impl SystemTables {
    pub(crate) fn new(wanted: &[Table]) -> SystemTables {
        let wanted: Vec<Table> = SYSTEM.into_iter().filter(|t| wanted.contains(t)).collect();
        let symbolize = wanted.iter().any(|t| matches!(t, Table::Samples | Table::Frames));
        SystemTables {
            symbolizer: symbolize.then(Symbolizer::new),
            wanted,
            switches: Vec::new(),
            samples: Vec::new(),
            frames: Vec::new(),
            heap: Vec::new(),
            mappings: Vec::new(),
            context: SystemContext::default(),
            stacks: HashMap::new(),
            stack_addresses: 0,
            next_stack: 1,
            next_sample: 1,
            modules: HashMap::new(),
        }
    }

    fn wants(&self, table: Table) -> bool {
        self.wanted.contains(&table)
    }

    /// Takes in one system block.
    pub(crate) fn add(&mut self, batch: &SystemBatch) {
        if self.wanted.is_empty() {
            return;
        }
        if let Some(symbolizer) = &mut self.symbolizer {
            symbolizer.add_mappings(&batch.mappings);
        }
        if self.wants(Table::Mappings) {
            self.mappings.extend_from_slice(&batch.mappings);
        }
        if self.wants(Table::Heap) {
            self.heap.extend_from_slice(&batch.heap);
        }
        if self.wants(Table::Switches) {
            self.switches.extend_from_slice(&batch.switches);
        }
        if self.wants(Table::OffCpu) {
            self.context.add_switches(&batch.switches);
        }
        if self.symbolizer.is_none() {
            return;
        }
        for s in &batch.samples {
            let (stack, leaf) = self.stack(&s.frames);
            if self.wants(Table::Samples) {
                self.samples.push(SampleRow {
                    id: self.next_sample,
                    tid: s.tid,
                    time_ns: s.time_ns,
                    cpu: s.cpu,
                    bytes: match s.kind {
                        SampleKind::Cpu => None,
                        SampleKind::Allocation { bytes } => Some(bytes),
                    },
                    stack,
                    stack_depth: s.frames.len() as u32,
                    leaf,
                });
            }
            self.next_sample += 1;
        }
    }

    /// The number and leaf function of `frames`, numbering it (and making its frames' rows) if
    /// it is new.
    fn stack(&mut self, frames: &[u64]) -> (u64, Arc<str>) {
        if let Some((id, leaf)) = self.stacks.get(frames) {
            return (*id, leaf.clone());
        }
        let Some(symbolizer) = &mut self.symbolizer else { return (0, Arc::from("")) };
        let id = self.next_stack;
        self.next_stack += 1;
        let leaf: Arc<str> = symbolizer.leaf_function(frames).into();
        if self.wanted.contains(&Table::Frames) {
            let mut depth = 0;
            let symbolized: Vec<_> = symbolizer.stack_frames(frames).collect();
            for (at, found) in symbolized {
                let address = frames[at];
                let module = symbolizer.module(address).map(|path| match self.modules.get(path) {
                    Some(m) => m.clone(),
                    None => {
                        let m: Arc<str> = path.into();
                        self.modules.insert(path.to_owned(), m.clone());
                        m
                    }
                });
                for f in found.iter() {
                    self.frames.push(FrameRow {
                        stack: id,
                        depth,
                        address_index: at as u32,
                        address,
                        function: f.function.clone(),
                        file: f.file.clone(),
                        line: f.line,
                        inlined: f.inlined,
                        module: module.clone(),
                    });
                    depth += 1;
                }
            }
        }
        if self.stack_addresses + frames.len() > MAX_STACK_ADDRESSES {
            self.stacks.clear();
            self.stack_addresses = 0;
        }
        if self.modules.len() > 4096 {
            self.modules.clear();
        }
        self.stack_addresses += frames.len().max(1);
        self.stacks.insert(frames.into(), (id, leaf.clone()));
        (id, leaf)
    }

    /// Makes batches of the rows gathered: of each table with at least `batch_rows` of them, or
    /// of all that are left when `all` (and then of `off_cpu`, whole).
    pub(crate) fn flush(
        &mut self,
        ctx: &Place<'_>,
        batch_rows: usize,
        all: bool,
        emit: &mut impl FnMut(Table, RecordBatch) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let due = |n: usize| n >= batch_rows || (all && n > 0);
        if due(self.switches.len()) {
            for part in std::mem::take(&mut self.switches).chunks(batch_rows) {
                emit(Table::Switches, switches(ctx, part))?;
            }
        }
        if due(self.samples.len()) {
            for part in std::mem::take(&mut self.samples).chunks(batch_rows) {
                emit(Table::Samples, samples(ctx, part))?;
            }
        }
        if due(self.frames.len()) {
            for part in std::mem::take(&mut self.frames).chunks(batch_rows) {
                emit(Table::Frames, frames(ctx, part))?;
            }
        }
        if due(self.heap.len()) {
            for part in std::mem::take(&mut self.heap).chunks(batch_rows) {
                emit(Table::Heap, heap(ctx, part))?;
            }
        }
        if due(self.mappings.len()) {
            for part in std::mem::take(&mut self.mappings).chunks(batch_rows) {
                emit(Table::Mappings, mappings(ctx, part))?;
            }
        }
        if all && self.wants(Table::OffCpu) {
            self.context.finish();
            let mut rows: Vec<(u32, u64, Option<u64>, bool)> = Vec::new();
            for tid in self.context.thread_ids() {
                for o in self.context.off_cpu(tid) {
                    rows.push((tid, o.start_ns, o.end_ns, o.preempted));
                    if rows.len() >= batch_rows {
                        emit(Table::OffCpu, off_cpu(ctx, &rows))?;
                        rows.clear();
                    }
                }
            }
            if !rows.is_empty() {
                emit(Table::OffCpu, off_cpu(ctx, &rows))?;
            }
            self.context = SystemContext::default();
        }
        Ok(())
    }
}

/// A `CLOCK_MONOTONIC` time as a column's nanoseconds (the slices' `ts` are on that clock),
/// on the timeline of the files read together (`ctx`'s shift).
fn ns(ctx: &Place<'_>, t: u64) -> i64 {
    crate::tables::shifted(t, ctx.shift_ns)
}

fn cpu(c: u32) -> Option<u32> {
    (c != UNKNOWN_CPU).then_some(c)
}

fn switches(ctx: &Place<'_>, rows: &[Switch]) -> RecordBatch {
    let tids: Vec<u32> = rows.iter().map(|r| r.tid).collect();
    let mut cols = ctx.where_columns(rows.len(), Some(&tids));
    cols.push(Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| ns(ctx, r.time_ns)))));
    let kind = |r: &Switch| match r.kind {
        SwitchKind::Out => "blocked",
        SwitchKind::Preempted => "preempted",
        SwitchKind::In => "in",
    };
    cols.push(Arc::new(StringArray::from_iter_values(rows.iter().map(kind))));
    cols.push(Arc::new(rows.iter().map(|r| cpu(r.cpu)).collect::<UInt32Array>()));
    batch(Table::Switches, cols)
}

fn off_cpu(ctx: &Place<'_>, rows: &[(u32, u64, Option<u64>, bool)]) -> RecordBatch {
    let tids: Vec<u32> = rows.iter().map(|r| r.0).collect();
    let mut cols = ctx.where_columns(rows.len(), Some(&tids));
    cols.push(Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| ns(ctx, r.1)))));
    cols.push(Arc::new(rows.iter().map(|r| r.2.map(|e| ns(ctx, e))).collect::<Int64Array>()));
    cols.push(Arc::new(
        rows.iter().map(|r| r.2.map(|e| crate::tables::shifted(e - r.1, 0))).collect::<Int64Array>(),
    ));
    let reason = |r: &(u32, u64, Option<u64>, bool)| if r.3 { "preempted" } else { "blocked" };
    cols.push(Arc::new(StringArray::from_iter_values(rows.iter().map(reason))));
    batch(Table::OffCpu, cols)
}

fn samples(ctx: &Place<'_>, rows: &[SampleRow]) -> RecordBatch {
    let tids: Vec<u32> = rows.iter().map(|r| r.tid).collect();
    let mut cols = ctx.where_columns(rows.len(), Some(&tids));
    cols.push(Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.id))));
    cols.push(Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| ns(ctx, r.time_ns)))));
    cols.push(Arc::new(rows.iter().map(|r| cpu(r.cpu)).collect::<UInt32Array>()));
    let kind = |r: &SampleRow| if r.bytes.is_some() { "allocation" } else { "cpu" };
    cols.push(Arc::new(StringArray::from_iter_values(rows.iter().map(kind))));
    cols.push(Arc::new(rows.iter().map(|r| r.bytes).collect::<UInt64Array>()));
    cols.push(Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.stack))));
    cols.push(Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.stack_depth))));
    cols.push(Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &*r.leaf))));
    batch(Table::Samples, cols)
}

fn frames(ctx: &Place<'_>, rows: &[FrameRow]) -> RecordBatch {
    let mut cols = ctx.where_columns(rows.len(), None);
    cols.push(Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.stack))));
    cols.push(Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.depth))));
    cols.push(Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.address_index))));
    cols.push(Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.address))));
    cols.push(Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.function.as_str()))));
    cols.push(Arc::new(rows.iter().map(|r| r.file.as_deref()).collect::<StringArray>()));
    cols.push(Arc::new(rows.iter().map(|r| r.line).collect::<UInt32Array>()));
    cols.push(Arc::new(rows.iter().map(|r| Some(r.inlined)).collect::<BooleanArray>()));
    cols.push(Arc::new(rows.iter().map(|r| r.module.as_deref()).collect::<StringArray>()));
    batch(Table::Frames, cols)
}

fn heap(ctx: &Place<'_>, rows: &[HeapCounter]) -> RecordBatch {
    let mut cols = ctx.where_columns(rows.len(), None);
    cols.push(Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| ns(ctx, r.time_ns)))));
    let fields: [fn(&HeapCounter) -> u64; 4] =
        [|r| r.allocs, |r| r.frees, |r| r.alloc_bytes, |r| r.freed_bytes];
    for field in fields {
        cols.push(Arc::new(UInt64Array::from_iter_values(rows.iter().map(field))));
    }
    cols.push(Arc::new(Int64Array::from_iter_values(rows.iter().map(HeapCounter::live_bytes))));
    batch(Table::Heap, cols)
}

fn mappings(ctx: &Place<'_>, rows: &[Mapping]) -> RecordBatch {
    let mut cols = ctx.where_columns(rows.len(), None);
    cols.push(Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.start))));
    cols.push(Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.end))));
    cols.push(Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.file_offset))));
    cols.push(Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.path.as_str()))));
    let hex = |r: &Mapping| {
        (!r.build_id.is_empty()).then(|| r.build_id.iter().map(|b| format!("{b:02x}")).collect::<String>())
    };
    cols.push(Arc::new(rows.iter().map(hex).collect::<StringArray>()));
    batch(Table::Mappings, cols)
}

/// The batch of `table` with `columns`, made as its schema says.
pub(crate) fn batch(table: Table, columns: Vec<ArrayRef>) -> RecordBatch {
    // The columns are made above in the schema's order and types, of one length: a mismatch is
    // a bug here, which the tests catch, not a property of the file.
    RecordBatch::try_new(table.schema(), columns).expect("the columns follow the table's schema")
}

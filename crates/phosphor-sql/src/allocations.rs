//! The `allocations` table: the allocation counts the runtime records per scope (the
//! `phosphor/scope_alloc` event it writes right after a scope's complete event, when
//! `phosphor::alloc::Traced` is the global allocator), each with the slice it belongs to.
//!
//! The counts are matched to their slice as the statistics match them (`phosphor stats`'
//! allocations per path): the event belongs to its thread's last complete event if that one
//! ended when the event is stamped (`Nesting::complete_ending_at`), known by its thread and
//! start; it waits, by (thread, start), until the nesting resolves that slice and gives it an
//! id, or goes straight to the thread's last resolved scope if that is the one. So per path,
//! `sum(allocs)` and `sum(bytes)` are the statistics' figures.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Int64Array, StringArray, UInt64Array};
use arrow::record_batch::RecordBatch;
use phosphor_format::file::{Event, Value};
use phosphor_model::nesting::{Nesting, PathId, Slice, SliceKind};

use crate::system_tables::batch;
use crate::tables::{Context, Table};

/// A slice's allocation counts, as a row.
#[derive(Debug)]
pub(crate) struct AllocRow {
    tid: u32,
    slice_id: u64,
    start: u64,
    path: PathId,
    allocs: u64,
    bytes: u64,
}

/// Allocation counts on their way to their slices (see the module's documentation).
#[derive(Debug, Default)]
pub(crate) struct AllocMatch {
    /// Whether the table is wanted: else nothing is kept.
    pub(crate) on: bool,
    /// Whether any count was seen: until then, resolved slices are not remembered.
    seen: bool,
    /// Counts by (thread, start of their slice), waiting for the slice.
    waiting: HashMap<(u32, u64), (u64, u64)>,
    /// By thread, its last resolved scope: start, id, path.
    last: HashMap<u32, (u64, u64, PathId)>,
    pub(crate) rows: Vec<AllocRow>,
}

impl AllocMatch {
    /// The counts of a `phosphor/scope_alloc` event (`None`: not one that carries them).
    pub(crate) fn counts(event: &Event<'_>) -> Option<(u64, u64)> {
        match (event.arg("allocs"), event.arg("bytes")) {
            (Some(Value::U64(allocs)), Some(Value::U64(bytes))) => Some((allocs, bytes)),
            _ => None,
        }
    }

    /// The counts of a `phosphor/scope_alloc` event of thread `tid` stamped at `at` (timeline),
    /// after `nesting` took in the events before it.
    pub(crate) fn count<P: Default>(
        &mut self,
        nesting: &Nesting<P>,
        tid: u32,
        at: u64,
        allocs: u64,
        bytes: u64,
    ) {
        if !self.on {
            return;
        }
        // Its scope ended when it is stamped (one whose scope was lost matches none).
        let Some(start) = nesting.complete_ending_at(tid, at) else { return };
        self.seen = true;
        match self.last.get(&tid) {
            Some(&(s, slice_id, path)) if s == start => {
                self.rows.push(AllocRow { tid, slice_id, start, path, allocs, bytes });
            }
            _ => {
                let w = self.waiting.entry((tid, start)).or_default();
                w.0 += allocs;
                w.1 += bytes;
            }
        }
    }

    /// Slice `s` was resolved and numbered `id`.
    pub(crate) fn entered(&mut self, s: &Slice, id: u64) {
        if !self.seen || s.kind != SliceKind::Scope {
            return;
        }
        if let Some((allocs, bytes)) = self.waiting.remove(&(s.tid, s.start)) {
            self.rows.push(AllocRow {
                tid: s.tid,
                slice_id: id,
                start: s.start,
                path: s.path,
                allocs,
                bytes,
            });
        }
        self.last.insert(s.tid, (s.start, id, s.path));
    }
}

/// A batch of `allocations`.
pub(crate) fn allocations(ctx: &mut Context<'_>, rows: &[AllocRow]) -> RecordBatch {
    let tids: Vec<u32> = rows.iter().map(|r| r.tid).collect();
    let mut cols = ctx.where_columns(rows.len(), Some(&tids));
    cols.push(Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.slice_id))));
    let ts = |r: &AllocRow| ctx.ns(r.start);
    cols.push(Arc::new(Int64Array::from_iter_values(rows.iter().map(ts))));
    let (paths, sites, names) = (ctx.paths, ctx.sites, &mut *ctx.path_names);
    let path: StringArray = rows.iter().map(|r| Some(names.get(paths, sites, r.path).to_owned())).collect();
    cols.push(Arc::new(path));
    cols.push(Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.allocs))));
    cols.push(Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.bytes))));
    batch(Table::Allocations, cols)
}

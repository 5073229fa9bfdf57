//! The `problems` table: what does not add up in a trace, one row each, as the trace model finds
//! it and `phosphor stats` reports it: the scopes that do not nest (the nesting's
//! `phosphor_model::problems`, named and worded as the statistics word them), async halves never
//! paired, and, one row per file with a count, what the model did to stay within its bounds
//! (slices resolved early past the pending limit, slices nested deeper than the depth cap, async
//! halves given up) and what the file says was lost (no trailer, fewer events than recorded).

use std::sync::Arc;

use arrow::array::{Int64Array, StringArray, UInt64Array};
use arrow::record_batch::RecordBatch;

use crate::columns::{file_columns, thread_columns};
use crate::tables::{batch, Table};

/// Rows of `problems` gathered for a batch.
#[derive(Debug, Default)]
pub(crate) struct ProblemRows {
    tids: Vec<Option<u32>>,
    ts: Vec<Option<i64>>,
    kinds: Vec<&'static str>,
    names: Vec<Option<String>>,
    details: Vec<String>,
    counts: Vec<u64>,
}

impl ProblemRows {
    /// A problem of `kind` on thread `tid` at `ts` (ns), about `name`, said as `detail`, standing
    /// for `count` occurrences.
    pub(crate) fn add(
        &mut self,
        tid: Option<u32>,
        ts: Option<i64>,
        kind: &'static str,
        name: Option<&str>,
        detail: String,
        count: u64,
    ) {
        self.tids.push(tid);
        self.ts.push(ts);
        self.kinds.push(kind);
        self.names.push(name.map(str::to_owned));
        self.details.push(detail);
        self.counts.push(count);
    }

    pub(crate) fn len(&self) -> usize {
        self.kinds.len()
    }

    /// The batch of the rows gathered, which are then forgotten.
    pub(crate) fn take(
        &mut self,
        file: (&str, &str, u32),
        name: &dyn Fn(u32) -> Option<String>,
    ) -> RecordBatch {
        let rows = std::mem::take(self);
        let (trace, process, pid) = file;
        let mut cols = file_columns(trace, process, pid, rows.len());
        cols.extend(thread_columns(&rows.tids, name));
        cols.push(Arc::new(rows.ts.iter().copied().collect::<Int64Array>()));
        cols.push(Arc::new(StringArray::from_iter_values(rows.kinds.iter().copied())));
        cols.push(Arc::new(rows.names.iter().map(|n| n.as_deref()).collect::<StringArray>()));
        cols.push(Arc::new(StringArray::from_iter_values(rows.details.iter())));
        cols.push(Arc::new(UInt64Array::from_iter_values(rows.counts.iter().copied())));
        batch(Table::Problems, cols)
    }
}

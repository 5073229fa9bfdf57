//! The `processes` and `drops` tables: one row per file, and its losses. Counted as the file is
//! read, as `phosphor stats` counts them: events and chunks read, the span from the first event's
//! start to the last one's end, the chunks missing from each writer stream's sequence
//! (`phosphor_model::losses::ChunkLosses`, the statistics' own count), and the trailer's events
//! recorded and dropped by reason.

use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Int64Array, StringArray, UInt32Array, UInt64Array};
use arrow::record_batch::RecordBatch;
use phosphor_format::file::{format_boot_id, Extents, Header, Trailer};
use phosphor_model::losses::ChunkLosses;

use crate::columns::file_columns;
use crate::tables::{batch, Table};

/// A row of `drops`: reason, unit, count, thread, pool tenant.
type DropRow = (&'static str, &'static str, u64, Option<u32>, Option<u32>);

/// What a file's rows of `processes` and `drops` are counted from.
#[derive(Debug, Default)]
pub(crate) struct FileCounts {
    pub(crate) events: u64,
    chunks: u64,
    /// The earliest start and latest end, on the timeline.
    span: Option<(u64, u64)>,
    losses: ChunkLosses,
}

impl FileCounts {
    /// A chunk, before its events.
    pub(crate) fn chunk(&mut self, extents: &Extents) {
        self.chunks += 1;
        self.losses.add(extents);
    }

    /// An event from `start` to `end` on the timeline.
    pub(crate) fn event(&mut self, start: u64, end: u64) {
        self.events += 1;
        self.span = Some(self.span.map_or((start, end), |(lo, hi)| (lo.min(start), hi.max(end))));
    }

    /// The `processes` row of the file of `header` and `trailer` (its `threads`).
    pub(crate) fn process(
        &self,
        file: (&str, &str, u32),
        header: &Header,
        trailer: Option<&Trailer>,
        threads: usize,
        ns: &dyn Fn(u64) -> i64,
    ) -> RecordBatch {
        let (trace, process, pid) = file;
        let mut cols = file_columns(trace, process, pid, 1);
        let boot = header.boot_id.as_ref().map(format_boot_id);
        let row: [ArrayRef; 12] = [
            Arc::new(StringArray::from(vec![header.host_name.as_deref()])),
            Arc::new(StringArray::from(vec![boot.as_deref()])),
            Arc::new(StringArray::from(vec![header.clock.kind.as_str()])),
            Arc::new(Int64Array::from(vec![self.span.map(|s| ns(s.0))])),
            Arc::new(Int64Array::from(vec![self.span.map(|s| ns(s.1))])),
            Arc::new(UInt64Array::from(vec![self.events])),
            Arc::new(UInt64Array::from(vec![threads as u64])),
            Arc::new(UInt64Array::from(vec![self.chunks])),
            Arc::new(BooleanArray::from(vec![trailer.is_some()])),
            Arc::new(UInt64Array::from(vec![trailer.map(|t| t.recorded)])),
            Arc::new(UInt64Array::from(vec![trailer.map(|t| t.dropped.total())])),
            Arc::new(UInt64Array::from(vec![self.losses.total()])),
        ];
        cols.extend(row);
        batch(Table::Processes, cols)
    }

    /// The `drops` rows of the file: the trailer's reasons (each, zeros too; none without a
    /// trailer), then each writer stream that lost chunks.
    pub(crate) fn drops(&self, file: (&str, &str, u32), trailer: Option<&Trailer>) -> RecordBatch {
        let mut rows: Vec<DropRow> = Vec::new();
        if let Some(t) = trailer {
            rows.extend(
                t.dropped.by_reason().into_iter().map(|(reason, n)| (reason, "events", n, None, None)),
            );
        }
        for ((pool, tid), _, lost) in self.losses.streams().filter(|s| s.2 > 0) {
            let (tid, pool) = if pool == 0 { (Some(tid), None) } else { (None, Some(u32::from(pool))) };
            rows.push(("lost_chunks", "chunks", lost, tid, pool));
        }
        let (trace, process, pid) = file;
        let mut cols = file_columns(trace, process, pid, rows.len());
        cols.push(Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))));
        cols.push(Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))));
        cols.push(Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.2))));
        cols.push(Arc::new(rows.iter().map(|r| r.3).collect::<UInt32Array>()));
        cols.push(Arc::new(rows.iter().map(|r| r.4).collect::<UInt32Array>()));
        batch(Table::Drops, cols)
    }
}

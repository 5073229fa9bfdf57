//! The `async_slices` table: async begins and ends paired by the trace model's one rule
//! (`phosphor_model::asyncs::Pairing`: by the name as shown and the async id, across threads, in
//! file order), as the statistics, the Perfetto plan and the viewer pair them. A pair is a row,
//! and so is a half that never gets its other half (a begin never ended, an end never begun),
//! with no duration. Rows are numbered in the order the pairing hands them over, from 1: ids of
//! their own, not `slices.id`'s.

use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Int64Array, StringArray, UInt32Array, UInt64Array};
use arrow::record_batch::RecordBatch;
use phosphor_format::file::Event;
use phosphor_format::{IdMap, Phase};
use phosphor_model::asyncs::{async_name, AsyncKey, Half, Matched, Pairing};
use phosphor_model::flows::{self, Member};
use phosphor_model::names::{self, NameSet};

use crate::args_table::{ArgRows, Owner, Packed};
use crate::columns::{file_columns, thread_columns};
use crate::flows_table::Flows;
use crate::problems_table::ProblemRows;
use crate::tables::{batch, Table};

/// What a begin or an end keeps of its event while it waits for its other half.
#[derive(Debug)]
pub(crate) struct HalfInfo {
    tid: u32,
    category: Arc<str>,
    /// The callsite's own name (the flow's id is made of it).
    callsite_name: Arc<str>,
    file: Arc<str>,
    line: u32,
    /// Flagged as an instrumented future's.
    future: bool,
    /// Its arguments (the `arguments` JSON and the `args` rows are written from them).
    args: Option<Packed>,
}

/// An async slice handed over by the pairing.
#[derive(Debug)]
struct AsyncRow {
    id: u64,
    key: AsyncKey,
    begin: Option<Half<HalfInfo>>,
    end: Option<Half<HalfInfo>>,
    /// A pair's length (0 if its end is earlier than its begin).
    dur: Option<u64>,
}

/// The pairing of one file, and its rows not yet made into batches.
#[derive(Debug)]
pub(crate) struct Asyncs {
    names: NameSet,
    pairing: Pairing<HalfInfo>,
    rows: Vec<AsyncRow>,
    next_id: u64,
    strings: Strings,
    /// The buffer each half's arguments are packed in before they are copied out.
    scratch: Vec<u8>,
}

/// The callsites' strings the halves keep, shared: one allocation per string of the file, not
/// three per half.
#[derive(Debug, Default)]
struct Strings {
    /// By the string's index in the file's string table, its place in `shared`.
    by_index: IdMap,
    shared: Vec<Arc<str>>,
}

impl Strings {
    /// String `s`, of index `index` in the file's string table, shared.
    fn get(&mut self, index: u32, s: &str) -> Arc<str> {
        match self.by_index.get(index).map(|at| &mut self.shared[at as usize]) {
            Some(kept) if **kept == *s => kept.clone(),
            // A file may define an index again: the string kept for it is not its any more.
            Some(kept) => {
                *kept = s.into();
                kept.clone()
            }
            None => {
                self.by_index.insert(index, self.shared.len() as u32);
                self.shared.push(s.into());
                self.shared[self.shared.len() - 1].clone()
            }
        }
    }
}

impl Asyncs {
    pub(crate) fn new() -> Asyncs {
        Asyncs {
            names: NameSet::default(),
            pairing: Pairing::default(),
            rows: Vec::new(),
            next_id: 1,
            strings: Strings::default(),
            scratch: Vec::new(),
        }
    }

    /// An async begin or end, `e`, at `ts` on the timeline.
    pub(crate) fn add(&mut self, e: &Event<'_>, ts: u64) {
        let cs = &e.callsite;
        let key = AsyncKey { name: self.names.number(async_name(e)), id: e.async_id.unwrap_or(0) };
        let begin = cs.phase == Phase::AsyncBegin;
        let skip = usize::from(cs.dynamic_name);
        let args = || e.args.iter().skip(skip).flatten().copied();
        let info = HalfInfo {
            tid: e.tid,
            category: self.strings.get(cs.category.index(), cs.category.as_str()),
            callsite_name: self.strings.get(cs.name.index(), cs.name.as_str()),
            file: self.strings.get(cs.file.index(), cs.file.as_str()),
            line: cs.line,
            future: cs.flow,
            args: Packed::of_in(&mut self.scratch, args()),
        };
        let (rows, next_id) = (&mut self.rows, &mut self.next_id);
        self.pairing.add(key, begin, ts, info, &mut |k, m| take(rows, next_id, k, m));
    }

    /// The end of the file: the halves still waiting become rows.
    pub(crate) fn finish(&mut self) {
        let (rows, next_id) = (&mut self.rows, &mut self.next_id);
        self.pairing.finish(&mut |k, m| take(rows, next_id, k, m));
    }

    /// Halves handed over unmatched because too many were waiting.
    pub(crate) fn given_up(&self) -> u64 {
        self.pairing.overflowed()
    }

    /// Rows waiting to be made into a batch.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Hands the rows gathered over: their arguments to `args`, their flagged halves to
    /// `flows`, their unmatched halves to `problems`; and returns their batch of `async_slices`
    /// if `table` (else `None`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn take(
        &mut self,
        file: (&str, &str, u32),
        name_of: &dyn Fn(u32) -> Option<String>,
        ns: &dyn Fn(u64) -> i64,
        table: bool,
        args: Option<&mut ArgRows>,
        mut flows: Option<&mut Flows>,
        mut problems: Option<&mut ProblemRows>,
    ) -> Option<RecordBatch> {
        let rows = std::mem::take(&mut self.rows);
        let shown = |k: &AsyncKey| names::shown(self.names.get(k.name));
        for r in &rows {
            let halves =
                [(&r.begin, Owner::AsyncBegin, Member::Begin), (&r.end, Owner::AsyncEnd, Member::End)];
            for (half, _, member) in halves {
                let Some(h) = half else { continue };
                if let Some(flows) = flows.as_deref_mut().filter(|_| h.payload.future) {
                    let p = &h.payload;
                    let flow = flows::flow_id(&p.category, &p.callsite_name, r.key.id);
                    flows.name(flow, &p.category, &p.callsite_name, r.key.id);
                    flows.member(flow, h.ts, member, None, Some(r.id), p.tid);
                }
            }
            if let Some(problems) = problems.as_deref_mut() {
                let (half, what, never) = match (&r.begin, &r.end) {
                    (Some(b), None) => (b, "async_unended", "begins and never ends"),
                    (None, Some(e)) => (e, "async_unbegun", "ends but never begins"),
                    _ => continue,
                };
                let name = shown(&r.key);
                let detail = format!("async slice {name:?} (id {}) {never}", r.key.id);
                problems.add(Some(half.payload.tid), Some(ns(half.ts)), what, Some(&name), detail, 1);
            }
        }
        let batch = table.then(|| self.batch(&rows, file, name_of, ns));
        // Their arguments, moved (not copied) to `args` once the batch's JSON is written.
        if let Some(args) = args {
            for r in rows {
                let id = r.id;
                for (half, owner) in [(r.begin, Owner::AsyncBegin), (r.end, Owner::AsyncEnd)] {
                    if let Some(Half { payload: HalfInfo { tid, args: Some(packed), .. }, .. }) = half {
                        let (bytes, n) = packed.into_parts();
                        args.add_bytes(tid, id, owner, (bytes, 0), n);
                    }
                }
            }
        }
        batch
    }

    /// The batch of `async_slices` of `rows`.
    fn batch(
        &self,
        rows: &[AsyncRow],
        file: (&str, &str, u32),
        name_of: &dyn Fn(u32) -> Option<String>,
        ns: &dyn Fn(u64) -> i64,
    ) -> RecordBatch {
        let shown = |k: &AsyncKey| names::shown(self.names.get(k.name));
        let (trace, process, pid) = file;
        let mut cols = file_columns(trace, process, pid, rows.len());
        cols.push(Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.id))));
        cols.push(Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.key.id))));
        let state = |r: &AsyncRow| match (&r.begin, &r.end) {
            (Some(_), Some(_)) => "complete",
            (Some(_), None) => "unended",
            _ => "unbegun",
        };
        cols.push(Arc::new(StringArray::from_iter_values(rows.iter().map(state))));
        let ts = |r: &AsyncRow| r.begin.as_ref().or(r.end.as_ref()).map_or(0, |h| ns(h.ts));
        cols.push(Arc::new(Int64Array::from_iter_values(rows.iter().map(ts))));
        // The duration on the rounded times, as `slices.dur`: the end's less the begin's.
        let dur = |r: &AsyncRow| match (&r.begin, &r.end, r.dur) {
            (Some(b), Some(e), Some(_)) => Some((ns(e.ts) - ns(b.ts)).max(0)),
            _ => None,
        };
        cols.push(Arc::new(rows.iter().map(dur).collect::<Int64Array>()));
        cols.push(Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &*info(r).category))));
        cols.push(Arc::new(StringArray::from_iter_values(rows.iter().map(|r| shown(&r.key)))));
        cols.push(Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &*info(r).file))));
        cols.push(Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| info(r).line))));
        let begin_tids: Vec<Option<u32>> =
            rows.iter().map(|r| r.begin.as_ref().map(|h| h.payload.tid)).collect();
        let end_tids: Vec<Option<u32>> = rows.iter().map(|r| r.end.as_ref().map(|h| h.payload.tid)).collect();
        cols.extend(thread_columns(&begin_tids, name_of));
        cols.extend(thread_columns(&end_tids, name_of));
        let future = rows.iter().map(|r| Some(r.begin.iter().chain(&r.end).any(|h| h.payload.future)));
        cols.push(Arc::new(future.collect::<BooleanArray>()));
        let arguments: [ArrayRef; 2] = [
            Arc::new(crate::json::column(rows.iter().map(|r| packed(&r.begin)), rows.len())),
            Arc::new(crate::json::column(rows.iter().map(|r| packed(&r.end)), rows.len())),
        ];
        cols.extend(arguments);
        batch(Table::AsyncSlices, cols)
    }
}

/// The first half of a row: its begin, else its end (a row has one or both).
fn info(r: &AsyncRow) -> &HalfInfo {
    match (&r.begin, &r.end) {
        (Some(h), _) | (None, Some(h)) => &h.payload,
        (None, None) => unreachable!("the pairing hands over a half at least"),
    }
}

/// A half's arguments, packed (empty: none, or no half).
fn packed(h: &Option<Half<HalfInfo>>) -> &[u8] {
    h.as_ref().and_then(|h| h.payload.args.as_ref()).map_or(&[], Packed::bytes)
}

/// Keeps what the pairing handed over as a row, numbered.
fn take(rows: &mut Vec<AsyncRow>, next_id: &mut u64, key: AsyncKey, m: Matched<HalfInfo>) {
    let dur = m.length();
    let (begin, end) = match m {
        Matched::Pair { begin, end, .. } => (Some(begin), Some(end)),
        Matched::Unended(h) => (Some(h), None),
        Matched::Unbegun(h) => (None, Some(h)),
    };
    rows.push(AsyncRow { id: *next_id, key, begin, end, dur });
    *next_id += 1;
}

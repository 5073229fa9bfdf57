//! The `flows` table: an instrumented future's async slice and the slices that work for it (its
//! polls), linked one to the next as Perfetto's trace processor links the flow ids the Perfetto
//! writer gives them (`phosphor_model::flows`: the begin starts the flow, each poll continues
//! it, the end ends it; in time order). A row is one arrow: from the async slice's begin or a
//! poll, to a poll or the async slice's end.
//!
//! A flow's members arrive in file order, thread by thread, and its async slice's id is known
//! only once the pairing hands the slice over: the members (about 40 bytes each) are kept until
//! the end of the file, then sorted and linked. That is the one table whose memory grows with the
//! file: with the instrumented futures' polls, not with its other events.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Int64Array, StringArray, UInt32Array, UInt64Array};
use arrow::record_batch::RecordBatch;
use phosphor_model::flows::Member;

use crate::columns::file_columns;
use crate::tables::{batch, Table};

/// One event of a flow.
#[derive(Clone, Copy, Debug)]
struct Rec {
    flow: u64,
    ts: u64,
    member: Member,
    /// A poll's `slices.id`.
    slice: Option<u64>,
    /// The begin's or end's `async_slices.id`.
    async_slice: Option<u64>,
    tid: u32,
}

/// The flows of one file.
#[derive(Debug, Default)]
pub(crate) struct Flows {
    members: Vec<Rec>,
    /// By flow id: its category, its callsite's name, its async id.
    names: HashMap<u64, (Box<str>, Box<str>, u64)>,
}

impl Flows {
    /// Names flow `flow`: of async slice `id` of `category` and `name`.
    pub(crate) fn name(&mut self, flow: u64, category: &str, name: &str, id: u64) {
        self.names.entry(flow).or_insert_with(|| (category.into(), name.into(), id));
    }

    /// An event of flow `flow` at `ts` (timeline) on `tid`: a poll (`slice`, its id) or the async
    /// slice's begin or end (`async_slice`, its id).
    pub(crate) fn member(
        &mut self,
        flow: u64,
        ts: u64,
        member: Member,
        slice: Option<u64>,
        async_slice: Option<u64>,
        tid: u32,
    ) {
        self.members.push(Rec { flow, ts, member, slice, async_slice, tid });
    }

    /// Takes in the members `other` gathered (the polls, found where the slices are numbered).
    pub(crate) fn absorb(&mut self, other: Flows) {
        self.members.extend(other.members);
        for (flow, name) in other.names {
            self.names.entry(flow).or_insert(name);
        }
    }

    /// The links, in batches of at most `batch_rows`, once every member is in.
    pub(crate) fn finish(
        &mut self,
        file: (&str, &str, u32),
        ns: &dyn Fn(u64) -> i64,
        batch_rows: usize,
    ) -> Vec<RecordBatch> {
        let mut members = std::mem::take(&mut self.members);
        members.sort_by_key(|m| (m.flow, m.ts, m.member));
        let mut links: Vec<(Rec, Rec, Option<u64>)> = Vec::new();
        for flow in members.chunk_by(|a, b| a.flow == b.flow) {
            // A chain runs up to an end (which ends it) or the flow's last member; its async slice
            // is its begin's or its end's.
            for chain in flow.split_inclusive(|m| m.member == Member::End) {
                let async_slice = chain.iter().find_map(|m| m.async_slice);
                links.extend(chain.windows(2).map(|w| (w[0], w[1], async_slice)));
            }
        }
        let (trace, process, pid) = file;
        let none = (Box::<str>::from(""), Box::<str>::from(""), 0);
        links
            .chunks(batch_rows.max(1))
            .map(|part| {
                let name = |l: &(Rec, Rec, Option<u64>)| self.names.get(&l.0.flow).unwrap_or(&none);
                let mut cols = file_columns(trace, process, pid, part.len());
                cols.push(Arc::new(UInt64Array::from_iter_values(part.iter().map(|l| l.0.flow))));
                cols.push(Arc::new(StringArray::from_iter_values(part.iter().map(|l| &*name(l).0))));
                cols.push(Arc::new(StringArray::from_iter_values(part.iter().map(|l| &*name(l).1))));
                cols.push(Arc::new(UInt64Array::from_iter_values(part.iter().map(|l| name(l).2))));
                cols.push(Arc::new(part.iter().map(|l| l.2).collect::<UInt64Array>()));
                cols.push(Arc::new(part.iter().map(|l| l.0.slice).collect::<UInt64Array>()));
                cols.push(Arc::new(UInt32Array::from_iter_values(part.iter().map(|l| l.0.tid))));
                cols.push(Arc::new(Int64Array::from_iter_values(part.iter().map(|l| ns(l.0.ts)))));
                cols.push(Arc::new(part.iter().map(|l| l.1.slice).collect::<UInt64Array>()));
                cols.push(Arc::new(UInt32Array::from_iter_values(part.iter().map(|l| l.1.tid))));
                cols.push(Arc::new(Int64Array::from_iter_values(part.iter().map(|l| ns(l.1.ts)))));
                batch(Table::Flows, cols)
            })
            .collect()
    }
}

//! The aggregates block (kind 7, format 1.2): snapshots of in-process aggregate points (DSUI's
//! counters and histograms) taken when the trace stopped.
//!
//! ```text
//! count u32, then count entries:
//!   callsite u32, kind u8 (1 sum, 2 histogram), 3 reserved bytes, count u64,
//!   sum:        sum i64
//!   histogram:  sum u64, min u64, max u64, buckets u32, then buckets × (index u32, count u64)
//! ```
//!
//! Histogram buckets are the non-zero ones, by ascending index of `crate::hist`'s scheme; their
//! counts add up to the entry's count. The callsite must be defined before the block.

use super::bytes::Body;
use super::error::{Error, ErrorKind};
use super::tables::Tables;

const KIND_SUM: u8 = 1;
const KIND_HISTOGRAM: u8 = 2;
/// Bytes of one histogram bucket entry.
const BUCKET_BYTES: usize = 12;

/// One aggregate point's snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aggregate {
    /// The point's callsite id.
    pub callsite: u32,
    /// What it aggregated.
    pub kind: AggregateKind,
}

/// The value of an aggregate point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AggregateKind {
    /// An in-process sum.
    Sum {
        /// Values added.
        count: u64,
        /// Their sum (wrapping).
        sum: i64,
    },
    /// An in-process log-linear histogram.
    Histogram {
        /// Values recorded (the sum of the bucket counts).
        count: u64,
        /// Their sum (saturating).
        sum: u64,
        /// The smallest value (0 if none).
        min: u64,
        /// The largest value (0 if none).
        max: u64,
        /// `(bucket index, count)` of every non-empty bucket, by ascending index.
        buckets: Vec<(u16, u64)>,
    },
}

/// Appends the body of an aggregates block for `aggs` to `out`.
pub(crate) fn encode(aggs: &[Aggregate], out: &mut Vec<u8>) {
    out.extend_from_slice(&(aggs.len() as u32).to_le_bytes());
    for a in aggs {
        out.extend_from_slice(&a.callsite.to_le_bytes());
        match &a.kind {
            AggregateKind::Sum { count, sum } => {
                out.extend_from_slice(&[KIND_SUM, 0, 0, 0]);
                out.extend_from_slice(&count.to_le_bytes());
                out.extend_from_slice(&sum.to_le_bytes());
            }
            AggregateKind::Histogram { count, sum, min, max, buckets } => {
                out.extend_from_slice(&[KIND_HISTOGRAM, 0, 0, 0]);
                for v in [count, sum, min, max] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                out.extend_from_slice(&(buckets.len() as u32).to_le_bytes());
                for (i, c) in buckets {
                    out.extend_from_slice(&u32::from(*i).to_le_bytes());
                    out.extend_from_slice(&c.to_le_bytes());
                }
            }
        }
    }
}

/// Reads an aggregates block into `into`; returns how many it held.
pub(crate) fn decode(
    body: &[u8],
    base: u64,
    tables: &Tables,
    into: &mut Vec<Aggregate>,
) -> Result<u32, Error> {
    let what = "aggregates block";
    let mut b = Body::new(body, base, what);
    let count = b.u32()?;
    for _ in 0..count {
        let at = b.offset();
        let callsite = b.u32()?;
        if !tables.has_callsite(callsite) {
            return Err(Error::new(ErrorKind::UnknownCallsite(callsite), at));
        }
        let kind = b.u8()?;
        if b.take(3)? != [0, 0, 0] {
            return Err(Error::malformed(what, "reserved bytes are not zero", at + 5));
        }
        let n = b.u64()?;
        let kind = match kind {
            KIND_SUM => AggregateKind::Sum { count: n, sum: b.u64()? as i64 },
            KIND_HISTOGRAM => {
                let (sum, min, max) = (b.u64()?, b.u64()?, b.u64()?);
                let nb_at = b.offset();
                let nb = b.u32()? as usize;
                // Checked against what is left before anything is allocated.
                if nb.checked_mul(BUCKET_BYTES).is_none_or(|need| need > b.remaining()) {
                    return Err(Error::malformed(
                        what,
                        format!("{nb} buckets do not fit in the {} bytes left", b.remaining()),
                        nb_at,
                    ));
                }
                let mut buckets = Vec::with_capacity(nb);
                let mut total = 0u64;
                for _ in 0..nb {
                    let bat = b.offset();
                    let index = u16::try_from(b.u32()?)
                        .map_err(|_| Error::malformed(what, "bucket index over 65,535", bat))?;
                    if buckets.last().is_some_and(|(prev, _)| *prev >= index) {
                        return Err(Error::malformed(what, "bucket indices are not ascending", bat));
                    }
                    let c = b.u64()?;
                    total = total.saturating_add(c);
                    buckets.push((index, c));
                }
                if total != n {
                    return Err(Error::malformed(
                        what,
                        format!("bucket counts add up to {total}, not the count {n}"),
                        at + 8,
                    ));
                }
                AggregateKind::Histogram { count: n, sum, min, max, buckets }
            }
            k => return Err(Error::malformed(what, format!("unknown aggregate kind {k}"), at + 4)),
        };
        into.push(Aggregate { callsite, kind });
    }
    b.finish()?;
    Ok(count)
}

//! The index's level of detail: a summary of every [`SPAN`] records in a row, so that a window
//! query at a coarse zoom takes in a block of records it would only merge, without reading them.
//!
//! A slice summary says of a block of slices: the first start, the last end, the longest
//! duration, and the widest gap between one slice's end and the next one's start. Where the
//! longest and the widest are both under a pixel, every slice of the block would be merged, run
//! after run, into the run before it (`query.rs`): the block is taken in whole. A sample summary
//! says of a block of samples: the last time, the smallest and largest values, and the last value:
//! a pixel that holds the whole block takes them in at once.
//!
//! Blocks are numbered over the whole section (slice `i` is in block `i / SPAN`), so a block may
//! hold the end of one level and the start of the next: a query uses only blocks that lie within
//! the level it reads.

use std::io::{self, Write};

use crate::records::{u64_at, Sample, Slice};

/// Records a summary stands for.
pub const SPAN: u64 = 64;
/// Bytes of a slice summary.
pub const SLICE_SUMMARY_BYTES: usize = 32;
/// Bytes of a sample summary.
pub const SAMPLE_SUMMARY_BYTES: usize = 32;

/// What a block of slices holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SliceSummary {
    /// The first slice's start.
    pub first_start: u64,
    /// The last slice's end (the latest: a level is sorted by end too).
    pub last_end: u64,
    /// The longest duration.
    pub max_duration: u64,
    /// The widest gap from a slice's end to the next one's start (0 where they overlap).
    pub max_gap: u64,
}

impl SliceSummary {
    pub(crate) fn encode(&self) -> [u8; SLICE_SUMMARY_BYTES] {
        let mut b = [0u8; SLICE_SUMMARY_BYTES];
        for (k, v) in [self.first_start, self.last_end, self.max_duration, self.max_gap].iter().enumerate() {
            b[8 * k..8 * k + 8].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    pub(crate) fn decode(b: &[u8; SLICE_SUMMARY_BYTES]) -> SliceSummary {
        SliceSummary {
            first_start: u64_at(b, 0),
            last_end: u64_at(b, 8),
            max_duration: u64_at(b, 16),
            max_gap: u64_at(b, 24),
        }
    }
}

/// What a block of samples holds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SampleSummary {
    /// The last sample's time.
    pub last_ts: u64,
    /// The smallest value (NaNs left out; NaN if all are).
    pub min: f64,
    /// The largest value.
    pub max: f64,
    /// The last value.
    pub last: f64,
}

impl SampleSummary {
    pub(crate) fn encode(&self) -> [u8; SAMPLE_SUMMARY_BYTES] {
        let mut b = [0u8; SAMPLE_SUMMARY_BYTES];
        b[0..8].copy_from_slice(&self.last_ts.to_le_bytes());
        b[8..16].copy_from_slice(&self.min.to_le_bytes());
        b[16..24].copy_from_slice(&self.max.to_le_bytes());
        b[24..32].copy_from_slice(&self.last.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8; SAMPLE_SUMMARY_BYTES]) -> SampleSummary {
        SampleSummary {
            last_ts: u64_at(b, 0),
            min: f64::from_bits(u64_at(b, 8)),
            max: f64::from_bits(u64_at(b, 16)),
            last: f64::from_bits(u64_at(b, 24)),
        }
    }
}

/// A summary of a block of records of type `R`, made a record at a time.
pub(crate) trait Summary<R>: Sized {
    /// The summary of a block whose first record is `first`.
    fn first(first: &R) -> Self;
    /// Takes in the block's next record.
    fn add(&mut self, next: &R);
    fn encode(&self) -> [u8; 32];
}

impl Summary<Slice> for SliceSummary {
    fn first(s: &Slice) -> Self {
        SliceSummary { first_start: s.start, last_end: s.end, max_duration: s.duration(), max_gap: 0 }
    }

    fn add(&mut self, s: &Slice) {
        // A level is sorted by end too: the last slice so far ends last.
        self.max_gap = self.max_gap.max(s.start.saturating_sub(self.last_end));
        self.last_end = self.last_end.max(s.end);
        self.max_duration = self.max_duration.max(s.duration());
    }

    fn encode(&self) -> [u8; 32] {
        SliceSummary::encode(self)
    }
}

impl Summary<Sample> for SampleSummary {
    fn first(s: &Sample) -> Self {
        SampleSummary { last_ts: s.ts, min: s.value, max: s.value, last: s.value }
    }

    fn add(&mut self, s: &Sample) {
        // `f64::min` and `max` leave a NaN out, as the query's own loop does.
        self.min = self.min.min(s.value);
        self.max = self.max.max(s.value);
        self.last = s.value;
        self.last_ts = s.ts;
    }

    fn encode(&self) -> [u8; 32] {
        SampleSummary::encode(self)
    }
}

/// Summarises records as they are written, [`SPAN`] at a time, into `out`.
#[derive(Debug)]
pub(crate) struct Summer<W: Write, S> {
    out: W,
    n: u64,
    block: Option<S>,
}

impl<W: Write, S> Summer<W, S> {
    pub(crate) fn new(out: W) -> Self {
        Summer { out, n: 0, block: None }
    }

    pub(crate) fn add<R>(&mut self, record: &R) -> io::Result<()>
    where
        S: Summary<R>,
    {
        match &mut self.block {
            Some(b) => b.add(record),
            None => self.block = Some(S::first(record)),
        }
        self.n += 1;
        if self.n == SPAN {
            self.write()?;
        }
        Ok(())
    }

    fn write<R>(&mut self) -> io::Result<()>
    where
        S: Summary<R>,
    {
        self.n = 0;
        match self.block.take() {
            Some(b) => self.out.write_all(&b.encode()),
            None => Ok(()),
        }
    }

    /// Writes the last, partial block's summary, and gives back the writer.
    pub(crate) fn finish<R>(mut self) -> io::Result<W>
    where
        S: Summary<R>,
    {
        self.write()?;
        Ok(self.out)
    }
}

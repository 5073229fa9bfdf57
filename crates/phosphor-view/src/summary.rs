//! The index's level of detail: a summary of every [`SPAN`] records in a row, so that a window
//! query at a coarse zoom takes in a block of records it would only merge, without reading them.
//!
//! A slice summary says of a block of slices: the first start, the last end, the longest
//! duration, the widest gap between one slice's end and the next one's start, and the block's
//! dominant name (the one with the most weight, a slice weighing its duration plus one tick: see
//! [`Tally`]) with its weight. Where the longest and the widest are both under a pixel, every
//! slice of the block would be merged, run after run, into the run before it (`query.rs`): the
//! block is taken in whole, its dominant name counted for its weight. A sample summary
//! says of a block of samples: the last time, the smallest and largest values, and the last value:
//! a pixel that holds the whole block takes them in at once.
//!
//! Blocks are numbered over the whole section (slice `i` is in block `i / SPAN`), so a block may
//! hold the end of one level and the start of the next: a query uses only blocks that lie within
//! the level it reads.

use std::io::{self, Write};

use crate::records::{u32_at, u64_at, Sample, Slice};

/// Records a summary stands for.
pub const SPAN: u64 = 64;
/// Bytes of a slice summary.
pub const SLICE_SUMMARY_BYTES: usize = 48;
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
    /// The name with the most weight in the block ([`weight`]; the first of them in a tie).
    pub top_name: u32,
    /// Its weight.
    pub top_weight: u64,
}

impl SliceSummary {
    pub(crate) fn encode(&self) -> [u8; SLICE_SUMMARY_BYTES] {
        let mut b = [0u8; SLICE_SUMMARY_BYTES];
        for (k, v) in [self.first_start, self.last_end, self.max_duration, self.max_gap, self.top_weight]
            .iter()
            .enumerate()
        {
            b[8 * k..8 * k + 8].copy_from_slice(&v.to_le_bytes());
        }
        b[40..44].copy_from_slice(&self.top_name.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8; SLICE_SUMMARY_BYTES]) -> SliceSummary {
        SliceSummary {
            first_start: u64_at(b, 0),
            last_end: u64_at(b, 8),
            max_duration: u64_at(b, 16),
            max_gap: u64_at(b, 24),
            top_weight: u64_at(b, 32),
            top_name: u32_at(b, 40),
        }
    }
}

/// What a slice weighs in a run's or block's [`Tally`]: its duration plus one tick, so that the
/// time a name holds decides, and a run of empty slices has a dominant name too.
pub fn weight(s: &Slice) -> u64 {
    s.duration().saturating_add(1)
}

/// The names of a run of slices with their weight, kept to the `cap` heaviest by the weighted
/// Misra–Gries rule: a name not kept while all `cap` places are taken lowers every kept weight
/// (and its own) by the least of them, and the names at zero leave. With at most `cap` names
/// the weights are exact; with more, a name holding more than `1 / (cap + 1)` of the weight is
/// always kept, its weight an underestimate by at most that share. [`Tally::top`] is the
/// dominant name: the most weight, the first added in a tie.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    names: Vec<(u32, u64)>,
}

impl Tally {
    /// Forgets every name.
    pub fn clear(&mut self) {
        self.names.clear();
    }

    /// Adds `weight` to `name`, keeping at most `cap` names.
    pub fn add(&mut self, name: u32, weight: u64, cap: usize) {
        if let Some(e) = self.names.iter_mut().find(|e| e.0 == name) {
            e.1 = e.1.saturating_add(weight);
            return;
        }
        let mut weight = weight;
        if self.names.len() >= cap.max(1) {
            let least = self.names.iter().map(|e| e.1).min().unwrap_or(0).min(weight);
            for e in &mut self.names {
                e.1 -= least;
            }
            self.names.retain(|e| e.1 > 0);
            weight -= least;
        }
        if weight > 0 && self.names.len() < cap.max(1) {
            self.names.push((name, weight));
        }
    }

    /// The dominant name and its weight, if any.
    pub fn top(&self) -> Option<(u32, u64)> {
        self.names.iter().fold(None, |best, &e| match best {
            Some((_, w)) if w >= e.1 => best,
            _ => Some(e),
        })
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
    /// The summary's bytes.
    type Bytes: AsRef<[u8]>;
    /// The summary of a block whose first record is `first`.
    fn first(first: &R) -> Self;
    /// Takes in the block's next record.
    fn add(&mut self, next: &R);
    fn encode(&self) -> Self::Bytes;
}

/// A [`SliceSummary`] being made, with its block's names (at most [`SPAN`]: all kept, exact).
#[derive(Debug)]
pub(crate) struct SliceBlock {
    sum: SliceSummary,
    names: Tally,
}

impl Summary<Slice> for SliceBlock {
    type Bytes = [u8; SLICE_SUMMARY_BYTES];

    fn first(s: &Slice) -> Self {
        let mut names = Tally::default();
        names.add(s.name, weight(s), SPAN as usize);
        let sum = SliceSummary {
            first_start: s.start,
            last_end: s.end,
            max_duration: s.duration(),
            max_gap: 0,
            top_name: s.name,
            top_weight: weight(s),
        };
        SliceBlock { sum, names }
    }

    fn add(&mut self, s: &Slice) {
        let sum = &mut self.sum;
        // A level is sorted by end too: the last slice so far ends last.
        sum.max_gap = sum.max_gap.max(s.start.saturating_sub(sum.last_end));
        sum.last_end = sum.last_end.max(s.end);
        sum.max_duration = sum.max_duration.max(s.duration());
        self.names.add(s.name, weight(s), SPAN as usize);
    }

    fn encode(&self) -> Self::Bytes {
        let mut sum = self.sum;
        if let Some((name, w)) = self.names.top() {
            (sum.top_name, sum.top_weight) = (name, w);
        }
        sum.encode()
    }
}

impl Summary<Sample> for SampleSummary {
    type Bytes = [u8; SAMPLE_SUMMARY_BYTES];

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

    fn encode(&self) -> Self::Bytes {
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
            Some(b) => self.out.write_all(b.encode().as_ref()),
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

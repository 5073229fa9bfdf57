//! Integer columns (Arrow `Int64`, `UInt64` and `UInt32`) written as Parquet column chunks by
//! hand, for [`crate::parquet_file`]: parquet's generic column writer spends, per value, more
//! than the encoding itself costs (levels, page statistics, its dictionary's interner: on the
//! 11.6 M-event trace the integer columns were a quarter of `convert --to parquet`'s
//! instructions), where a chunk of one integer column can be encoded in a few passes over a
//! slice.
//!
//! An [`IntColumn`] gathers a page's values (and, for a nullable column, its definition levels)
//! from the batches' arrays and encodes the page once it is full (memory: the compressed pages
//! of a row group, as parquet's writer keeps them), as the file's settings say for that column
//! ([`crate::parquet_out::writer_properties_for`]: the same settings parquet's own writer would
//! follow):
//! - `DELTA_BINARY_PACKED` (ids, timestamps): blocks of 256 deltas, 4 miniblocks of 64 each
//!   bit-packed at their own width (see `delta_binary_packed`);
//! - `PLAIN` (durations, argument values): each value's little-endian bytes;
//! - dictionary (pids, tids, depths, lines, counts): a PLAIN dictionary page and
//!   `RLE_DICTIONARY` data pages; once a page would make the dictionary outgrow the settings'
//!   limit, that page and the rest are `PLAIN`, as parquet falls back once its dictionary is
//!   full.
//!
//! Data pages hold at most [`PAGE_ROWS`] rows, laid out and compressed by [`Pages`]. The chunk has
//! its statistics (min, max and nulls, in the column's order: unsigned for `UInt32` and
//! `UInt64`) and a column index of each page's min and max, which readers use to skip pages
//! (a time range's `ts`).

use std::collections::HashMap;

use arrow::array::{Array, ArrowPrimitiveType, AsArray, PrimitiveArray};
use arrow::datatypes::{DataType, Int64Type, UInt32Type, UInt64Type};
use bytes::Bytes;
use parquet::basic::{BoundaryOrder, Encoding, Type as PhysicalType};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::ColumnIndexBuilder;
use parquet::file::properties::WriterProperties;
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::schema::types::ColumnDescPtr;

use crate::parquet_pages::{bit_width, rle_hybrid, uleb128, Pages, PAGE_ROWS};

/// Values per block of `DELTA_BINARY_PACKED` (of `INT64`), and miniblocks per block: parquet's
/// own writer's, whose miniblocks of 64 values leave more runs of whole bytes for zstd to find
/// than miniblocks of 32 (on the 11.6 M-event trace `slices.parent_id` takes a third the bytes).
const BLOCK: usize = 256;
const MINIBLOCKS: usize = 4;
const MINIBLOCK: usize = BLOCK / MINIBLOCKS;

/// How a chunk's values are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IntEncoding {
    Delta,
    Plain,
    Dictionary,
}

/// Whether `data_type` is a column [`IntColumn`] takes.
pub(crate) fn is_int(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Int64 | DataType::UInt64 | DataType::UInt32)
}

/// One integer column's chunk of a row group: its pages encoded as they fill.
pub(crate) struct IntColumn {
    descr: ColumnDescPtr,
    /// The encoding of the next page: a dictionary column's turns PLAIN for good once its
    /// dictionary would outgrow the limit (parquet's writer falls back so).
    encoding: IntEncoding,
    /// The most values the dictionary may hold (the settings' page limit over a value's bytes).
    dictionary_most: usize,
    dictionary: Option<Dictionary>,
    /// Whether the column is `INT32` (else `INT64`).
    narrow: bool,
    /// Whether the column is ordered as unsigned (`UInt32`, `UInt64`).
    unsigned: bool,
    /// The page being gathered: its values that are not null (an `INT32` column's
    /// zero-extended), its definition levels (1: a value, 0: null; a nullable column's only),
    /// and its rows.
    values: Vec<i64>,
    defs: Vec<u8>,
    page_rows_now: usize,
    /// Rows in the pages written, and nulls in all.
    rows: usize,
    nulls: u64,
    page_rows: usize,
    pages: Pages,
    index: ColumnIndexBuilder,
    /// Whether the pages' bounds so far go up (down), and the last page's, in [`Self::order`].
    ascending: bool,
    descending: bool,
    last: Option<(u64, u64)>,
    /// The chunk's smallest and largest value so far.
    bounds: Option<(i64, i64)>,
    /// The encodings of the pages written.
    used: Vec<Encoding>,
    raw: Vec<u8>,
    keys: Vec<u32>,
}

/// A chunk's dictionary of integers.
struct Dictionary {
    index: HashMap<i64, u32>,
    /// Its PLAIN page: each value's bytes.
    plain: Vec<u8>,
    /// Whether a data page was encoded with it (else it is not written).
    used: bool,
    /// The values seen lately, in slots by a multiplicative hash: a depth, a line or a tid is
    /// mostly found here without hashing it into `index`.
    recent: Box<[(i64, u32); 256]>,
}

/// An empty slot of [`Dictionary::recent`].
const EMPTY: u32 = u32::MAX;

impl IntColumn {
    /// The empty chunk of column `descr` (`INT32` or `INT64`), encoded as `props` says.
    pub(crate) fn new(descr: ColumnDescPtr, props: &WriterProperties) -> Result<IntColumn> {
        let path = descr.path();
        let narrow = match descr.physical_type() {
            PhysicalType::INT32 => true,
            PhysicalType::INT64 => false,
            other => return Err(ParquetError::General(format!("{} is {other}, not an integer", path))),
        };
        let encoding = if props.dictionary_enabled(path) {
            IntEncoding::Dictionary
        } else if props.encoding(path) == Some(Encoding::DELTA_BINARY_PACKED) && !narrow {
            IntEncoding::Delta
        } else {
            IntEncoding::Plain
        };
        let width = if narrow { 4 } else { 8 };
        Ok(IntColumn {
            unsigned: !descr.sort_order().is_signed(),
            dictionary_most: props.dictionary_page_size_limit() / width,
            dictionary: None,
            index: ColumnIndexBuilder::new(descr.physical_type()),
            descr,
            encoding,
            narrow,
            values: Vec::new(),
            defs: Vec::new(),
            page_rows_now: 0,
            rows: 0,
            nulls: 0,
            page_rows: PAGE_ROWS,
            pages: Pages::new(),
            ascending: true,
            descending: true,
            last: None,
            bounds: None,
            used: Vec::new(),
            raw: Vec::new(),
            keys: Vec::new(),
        })
    }

    /// The chunk with data pages of `rows` rows at most (the tests' several pages).
    #[cfg(test)]
    fn with_page_rows(mut self, rows: usize) -> IntColumn {
        self.page_rows = rows.max(1);
        self
    }

    fn nullable(&self) -> bool {
        self.descr.max_def_level() > 0
    }

    /// Adds the rows of `array`, an `Int64`, `UInt64` or `UInt32` array, encoding each page
    /// as it fills (`zstd` compresses it).
    pub(crate) fn write(&mut self, array: &dyn Array, zstd: &mut zstd::bulk::Compressor<'_>) -> Result<()> {
        let mut at = 0;
        while at < array.len() {
            let n = (self.page_rows - self.page_rows_now).min(array.len() - at);
            let part = array.slice(at, n);
            match part.data_type() {
                DataType::Int64 => self.extend(part.as_primitive::<Int64Type>(), |v| v)?,
                // The bits as they are: `INT64` stores a `UInt64` so.
                DataType::UInt64 => self.extend(part.as_primitive::<UInt64Type>(), |v| v as i64)?,
                DataType::UInt32 => self.extend(part.as_primitive::<UInt32Type>(), i64::from)?,
                other => {
                    let name = self.descr.name();
                    return Err(ParquetError::General(format!("{name} is no integer column: {other}")));
                }
            }
            at += n;
            if self.page_rows_now == self.page_rows {
                self.page(zstd)?;
            }
        }
        Ok(())
    }

    fn extend<T: ArrowPrimitiveType>(
        &mut self,
        array: &PrimitiveArray<T>,
        value: impl Fn(T::Native) -> i64,
    ) -> Result<()> {
        let n = array.len();
        match array.nulls().filter(|nulls| nulls.null_count() > 0) {
            None => {
                self.values.extend(array.values().iter().map(|&v| value(v)));
                if self.nullable() {
                    self.defs.resize(self.defs.len() + n, 1);
                }
            }
            Some(_) if !self.nullable() => {
                return Err(ParquetError::General(format!("a null in column {}", self.descr.name())))
            }
            Some(nulls) => {
                for (i, &v) in array.values().iter().enumerate() {
                    if nulls.is_valid(i) {
                        self.values.push(value(v));
                        self.defs.push(1);
                    } else {
                        self.defs.push(0);
                        self.nulls += 1;
                    }
                }
            }
        }
        self.page_rows_now += n;
        Ok(())
    }

    /// `v` as a key whose unsigned order is the column's order (and back: the same flip).
    fn order(&self, v: i64) -> u64 {
        // Flipping the sign bit maps i64's order onto u64's.
        (v as u64) ^ self.flip()
    }

    fn flip(&self) -> u64 {
        if self.unsigned {
            0
        } else {
            1 << 63
        }
    }

    /// `v`'s bytes as a statistic or a PLAIN page holds them (its physical type's,
    /// little-endian).
    fn bytes(&self, v: i64) -> Vec<u8> {
        if self.narrow {
            (v as i32).to_le_bytes().to_vec()
        } else {
            v.to_le_bytes().to_vec()
        }
    }

    /// The smallest and largest of `values` in the column's order.
    fn min_max(&self, values: &[i64]) -> Option<(i64, i64)> {
        if values.is_empty() {
            return None;
        }
        let flip = self.flip();
        let (lo, hi) = values
            .iter()
            .map(|&v| (v as u64) ^ flip)
            .fold((u64::MAX, 0), |(lo, hi), k| (lo.min(k), hi.max(k)));
        Some(((lo ^ flip) as i64, (hi ^ flip) as i64))
    }

    /// The page's values as indices into the chunk's dictionary, in `self.keys`; `false` (and
    /// the dictionary as it was) if they would make it hold over its most values.
    fn dictionary_keys(&mut self) -> bool {
        let narrow = self.narrow;
        let dictionary = self.dictionary.get_or_insert_with(|| Dictionary {
            index: HashMap::new(),
            plain: Vec::new(),
            used: false,
            recent: Box::new([(0, EMPTY); 256]),
        });
        self.keys.clear();
        // The values this page adds, in the order of their indices.
        let mut fresh = Vec::new();
        let mut last: Option<(i64, u32)> = None;
        for &v in &self.values {
            // A run (a thread's pid and tid) repeats the value before.
            if let Some((_, key)) = last.filter(|l| l.0 == v) {
                self.keys.push(key);
                continue;
            }
            let slot = ((v as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize;
            let key = match dictionary.recent[slot] {
                (seen, key) if key != EMPTY && seen == v => key,
                _ => {
                    let next = dictionary.index.len() as u32;
                    let key = *dictionary.index.entry(v).or_insert(next);
                    if key == next {
                        fresh.push(v);
                    }
                    dictionary.recent[slot] = (v, key);
                    key
                }
            };
            last = Some((v, key));
            self.keys.push(key);
        }
        if dictionary.index.len() > self.dictionary_most {
            // Back to the dictionary of the pages before.
            for v in &fresh {
                dictionary.index.remove(v);
            }
            dictionary.recent.fill((0, EMPTY));
            return false;
        }
        for v in fresh {
            if narrow {
                dictionary.plain.extend_from_slice(&(v as i32).to_le_bytes());
            } else {
                dictionary.plain.extend_from_slice(&v.to_le_bytes());
            }
        }
        dictionary.used = true;
        true
    }

    /// Encodes the page gathered (an empty one if the chunk has none), and begins the next.
    fn page(&mut self, zstd: &mut zstd::bulk::Compressor<'_>) -> Result<()> {
        let rows = self.page_rows_now;
        let mut raw = std::mem::take(&mut self.raw);
        raw.clear();
        if self.nullable() {
            self.pages.levels(&mut raw, &self.defs)?;
        }
        if self.encoding == IntEncoding::Dictionary && !self.dictionary_keys() {
            self.encoding = IntEncoding::Plain;
        }
        let encoding = match self.encoding {
            IntEncoding::Dictionary => {
                let count = self.dictionary.as_ref().map_or(0, |d| d.index.len());
                let width = bit_width(count);
                raw.push(width);
                rle_hybrid(&mut raw, &self.keys, width);
                Encoding::RLE_DICTIONARY
            }
            IntEncoding::Delta => {
                delta_binary_packed(&mut raw, &self.values);
                Encoding::DELTA_BINARY_PACKED
            }
            IntEncoding::Plain => {
                for &v in &self.values {
                    if self.narrow {
                        raw.extend_from_slice(&(v as i32).to_le_bytes());
                    } else {
                        raw.extend_from_slice(&v.to_le_bytes());
                    }
                }
                Encoding::PLAIN
            }
        };
        self.pages.data(zstd, &raw, encoding, rows, self.rows)?;
        self.raw = raw;
        if !self.used.contains(&encoding) {
            self.used.push(encoding);
        }
        let nulls = (rows - self.values.len()) as i64;
        match self.min_max(&self.values) {
            None => self.index.append(true, Vec::new(), Vec::new(), nulls),
            Some((min, max)) => {
                let (lo, hi) = (self.order(min), self.order(max));
                if let Some((last_lo, last_hi)) = self.last {
                    self.ascending &= last_lo <= lo && last_hi <= hi;
                    self.descending &= last_lo >= lo && last_hi >= hi;
                }
                self.last = Some((lo, hi));
                let (min_bytes, max_bytes) = (self.bytes(min), self.bytes(max));
                self.index.append(false, min_bytes, max_bytes, nulls);
                self.bounds = Some(match self.bounds {
                    None => (min, max),
                    Some((cmin, cmax)) => (
                        if lo < self.order(cmin) { min } else { cmin },
                        if hi > self.order(cmax) { max } else { cmax },
                    ),
                });
            }
        }
        self.rows += rows;
        self.values.clear();
        self.defs.clear();
        self.page_rows_now = 0;
        Ok(())
    }

    /// The chunk encoded (its last page, and its dictionary page if a page used it), and what
    /// the row group needs of it; `zstd` compresses every page at `level`.
    pub(crate) fn finish(
        mut self,
        zstd: &mut zstd::bulk::Compressor<'_>,
        level: i32,
    ) -> Result<(Bytes, ColumnCloseResult)> {
        if self.page_rows_now > 0 || self.rows == 0 {
            self.page(zstd)?;
        }
        let mut encodings = vec![Encoding::RLE];
        if let Some(d) = self.dictionary.as_ref().filter(|d| d.used) {
            self.pages.dictionary(zstd, &d.plain, d.index.len())?;
            encodings.push(Encoding::PLAIN);
        }
        for e in &self.used {
            if !encodings.contains(e) {
                encodings.push(*e);
            }
        }
        self.index.set_boundary_order(match (self.ascending, self.descending) {
            (true, _) => BoundaryOrder::ASCENDING,
            (false, true) => BoundaryOrder::DESCENDING,
            (false, false) => BoundaryOrder::UNORDERED,
        });
        let signed = !self.unsigned;
        let statistics = if self.narrow {
            let (min, max) = (self.bounds.map(|c| c.0 as i32), self.bounds.map(|c| c.1 as i32));
            Statistics::Int32(
                ValueStatistics::new(min, max, None, Some(self.nulls), false)
                    .with_backwards_compatible_min_max(signed),
            )
        } else {
            let (min, max) = (self.bounds.map(|c| c.0), self.bounds.map(|c| c.1));
            Statistics::Int64(
                ValueStatistics::new(min, max, None, Some(self.nulls), false)
                    .with_backwards_compatible_min_max(signed),
            )
        };
        let column_index = Some(self.index.build()?);
        self.pages.finish(&self.descr, level, self.rows, encodings, statistics, column_index)
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Appends `values` in Parquet's `DELTA_BINARY_PACKED` encoding: a header (the block's values,
/// its miniblocks, the count of values, the first value), then per block of [`BLOCK`] deltas
/// (each value less the one before, wrapping) their smallest, the bit width of each miniblock,
/// and each miniblock's deltas less that smallest, bit-packed, least significant bits first.
/// A last block's unneeded miniblocks have width 0 and no bytes.
fn delta_binary_packed(out: &mut Vec<u8>, values: &[i64]) {
    uleb128(out, BLOCK as u64);
    uleb128(out, MINIBLOCKS as u64);
    uleb128(out, values.len() as u64);
    let Some((&first, rest)) = values.split_first() else {
        uleb128(out, 0);
        return;
    };
    uleb128(out, zigzag(first));
    let mut deltas = [0u64; BLOCK];
    let mut previous = first;
    for block in rest.chunks(BLOCK) {
        let mut min = i64::MAX;
        for (d, &v) in deltas.iter_mut().zip(block) {
            let delta = v.wrapping_sub(previous);
            min = min.min(delta);
            *d = delta as u64;
            previous = v;
        }
        uleb128(out, zigzag(min));
        let widths = out.len();
        out.extend_from_slice(&[0; MINIBLOCKS]);
        for (m, mini) in deltas[..block.len()].chunks_mut(MINIBLOCK).enumerate() {
            let mut all = 0u64;
            for d in mini.iter_mut() {
                *d = d.wrapping_sub(min as u64);
                all |= *d;
            }
            let width = 64 - all.leading_zeros();
            out[widths + m] = width as u8;
            pack(out, mini, width);
        }
    }
}

/// [`MINIBLOCK`] values of `width` bits (`values` padded with zeros), least significant bits
/// first: `width * 8` bytes.
fn pack(out: &mut Vec<u8>, values: &[u64], width: u32) {
    if width == 0 {
        return;
    }
    let padded = (0..MINIBLOCK).map(|i| values.get(i).copied().unwrap_or(0));
    crate::parquet_pages::pack_bits(out, padded, width);
}

#[cfg(test)]
#[path = "parquet_ints_tests.rs"]
mod tests;

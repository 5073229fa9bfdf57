//! String columns of few distinct values written as Parquet dictionary column chunks by hand,
//! for [`crate::parquet_out`]: parquet's Arrow writer hashes every value into its dictionary
//! (and compares every value for the page statistics), even for an Arrow dictionary column,
//! which on a big trace cost more than anything else in `phosphor convert --to parquet`.
//!
//! A [`DictColumn`] takes the batches' `Dictionary(UInt32, Utf8)` columns (whose values are
//! those the batch uses, made from ids without hashing: `tables.rs`), maps each batch's values
//! to the chunk's dictionary (a hash per value of a batch's dictionary, not per row) and
//! encodes the chunk as parquet's own writer would: `RLE_DICTIONARY` data pages (version 1) of
//! at most [`PAGE_ROWS`] rows, each encoded once full (the RLE/bit-packed hybrid, as wide as the
//! dictionary so far needs, definition levels first for a nullable column), and at
//! [`DictColumn::finish`] a PLAIN dictionary page put before them, each page zstd-compressed and
//! laid out by [`Pages`] as parquet lays them out, with
//! the chunk's statistics (min and max over the dictionary, truncated as parquet truncates
//! them, and the null count) and an offset index (no column index: DataFusion, DuckDB and
//! pyarrow read the chunk without one). [`SerializedRowGroupWriter::append_column`] puts it in
//! its row group.
//!
//! [`SerializedRowGroupWriter::append_column`]: parquet::file::writer::SerializedRowGroupWriter::append_column

use std::collections::HashMap;
use std::ops::Range;

use arrow::array::{Array, AsArray, DictionaryArray, StringArray, UInt32Array};
use arrow::datatypes::UInt32Type;
use bytes::Bytes;
use parquet::basic::Encoding;
use parquet::column::writer::ColumnCloseResult;
use parquet::data_type::ByteArray;
use parquet::errors::{ParquetError, Result};
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::schema::types::ColumnDescPtr;

use crate::parquet_pages::{bit_width, rle_hybrid, Pages, PAGE_ROWS};

/// The bytes of a min or max kept in the statistics at most: parquet's default
/// (`DEFAULT_STATISTICS_TRUNCATE_LENGTH`).
const STATISTICS_BYTES: usize = 64;

/// A batch's dictionary value not yet mapped to the chunk's dictionary.
const UNMAPPED: u32 = u32::MAX;

/// One string column's chunk of a row group, as it is gathered.
pub(crate) struct DictColumn {
    descr: ColumnDescPtr,
    /// The chunk's dictionary: each value's index.
    index: HashMap<Box<[u8]>, u32>,
    /// The dictionary page's values, PLAIN (each its length, 4 bytes little-endian, then its bytes).
    plain: Vec<u8>,
    /// The dictionary's values in `plain`, as ranges.
    ranges: Vec<(usize, usize)>,
    /// The smallest and largest values, as indices into `ranges`.
    min_max: Option<(u32, u32)>,
    /// The page being gathered: the index of each of its values that is not null, in row
    /// order, each row's definition level (1: a value, 0: null; a nullable column's only), and
    /// its rows. Pages are encoded as they fill (memory: the compressed pages of a row group).
    keys: Vec<u32>,
    defs: Vec<u8>,
    page_now: usize,
    /// Rows in the pages written, and nulls in all.
    rows: usize,
    nulls: u64,
    pages: Pages,
    raw: Vec<u8>,
    /// Per value of the batch being written, its index in the chunk's dictionary.
    remap: Vec<u32>,
    page_rows: usize,
}

impl DictColumn {
    /// The empty chunk of column `descr` (a `BYTE_ARRAY` column, required or optional).
    pub(crate) fn new(descr: ColumnDescPtr) -> DictColumn {
        DictColumn {
            descr,
            index: HashMap::new(),
            plain: Vec::new(),
            ranges: Vec::new(),
            min_max: None,
            keys: Vec::new(),
            defs: Vec::new(),
            page_now: 0,
            rows: 0,
            nulls: 0,
            pages: Pages::new(),
            raw: Vec::new(),
            remap: Vec::new(),
            page_rows: PAGE_ROWS,
        }
    }

    /// The chunk with data pages of `rows` rows at most (the tests' several pages).
    #[cfg(test)]
    fn with_page_rows(mut self, rows: usize) -> DictColumn {
        self.page_rows = rows.max(1);
        self
    }

    fn nullable(&self) -> bool {
        self.descr.max_def_level() > 0
    }

    /// The rows of the chunk so far.
    #[cfg(test)]
    fn rows(&self) -> usize {
        self.rows + self.page_now
    }

    /// The index of `value` in the chunk's dictionary, added if new.
    fn intern(&mut self, value: &[u8]) -> Result<u32> {
        if let Some(&at) = self.index.get(value) {
            return Ok(at);
        }
        let at = u32::try_from(self.ranges.len())
            .map_err(|_| ParquetError::General("over 2^32 distinct values in a column chunk".into()))?;
        let len =
            u32::try_from(value.len()).map_err(|_| ParquetError::General("a string of over 4 GiB".into()))?;
        self.plain.extend_from_slice(&len.to_le_bytes());
        let start = self.plain.len();
        self.plain.extend_from_slice(value);
        self.ranges.push((start, start + value.len()));
        self.index.insert(value.into(), at);
        self.min_max = Some(match self.min_max {
            None => (at, at),
            Some((min, max)) => (
                if value < self.value(min) { at } else { min },
                if value > self.value(max) { at } else { max },
            ),
        });
        Ok(at)
    }

    fn value(&self, at: u32) -> &[u8] {
        let (start, end) = self.ranges[at as usize];
        &self.plain[start..end]
    }

    /// Adds a row: `key`, an index into the chunk's dictionary, or `None` for null.
    fn push(&mut self, key: Option<u32>) -> Result<()> {
        self.page_now += 1;
        match key {
            Some(key) => {
                self.keys.push(key);
                if self.nullable() {
                    self.defs.push(1);
                }
            }
            None if self.nullable() => {
                self.nulls += 1;
                self.defs.push(0);
            }
            None => return Err(ParquetError::General(format!("a null in column {}", self.descr.name()))),
        }
        Ok(())
    }

    /// Adds the rows of `array`: each batch value is looked up in the chunk's dictionary once,
    /// the first time a row uses it. Each page is encoded once full (`zstd` compresses it).
    pub(crate) fn write_dictionary(
        &mut self,
        array: &DictionaryArray<UInt32Type>,
        zstd: &mut zstd::bulk::Compressor<'_>,
    ) -> Result<()> {
        let values: &StringArray = array
            .values()
            .as_string_opt()
            .ok_or_else(|| ParquetError::General("a dictionary of other values than strings".into()))?;
        self.remap.clear();
        self.remap.resize(values.len(), UNMAPPED);
        let keys = array.keys();
        let mut at = 0;
        while at < keys.len() {
            let n = (self.page_rows - self.page_now).min(keys.len() - at);
            self.write_keys(keys, values, at..at + n)?;
            at += n;
            if self.page_now == self.page_rows {
                self.page(zstd)?;
            }
        }
        Ok(())
    }

    /// [`Self::write_dictionary`] of the rows `range` of `keys`, into the page being gathered.
    fn write_keys(&mut self, keys: &UInt32Array, values: &StringArray, range: Range<usize>) -> Result<()> {
        if keys.null_count() == 0 && values.null_count() == 0 {
            // No null: each row's index straight into `keys` (and its level, 1).
            let n = range.len();
            for &k in &keys.values()[range] {
                let at = match self.remap.get(k as usize) {
                    Some(&UNMAPPED) => {
                        let at = self.intern(values.value(k as usize).as_bytes())?;
                        self.remap[k as usize] = at;
                        at
                    }
                    Some(&at) => at,
                    None => return Err(ParquetError::General("a dictionary key out of range".into())),
                };
                self.keys.push(at);
            }
            if self.nullable() {
                self.defs.resize(self.defs.len() + n, 1);
            }
            self.page_now += n;
            return Ok(());
        }
        for i in range {
            let key = if keys.is_null(i) { None } else { Some(keys.value(i) as usize) };
            let mapped = match key {
                Some(k) if k >= values.len() => {
                    return Err(ParquetError::General("a dictionary key out of range".into()))
                }
                Some(k) if values.is_null(k) => None,
                Some(k) => match self.remap[k] {
                    UNMAPPED => {
                        let at = self.intern(values.value(k).as_bytes())?;
                        self.remap[k] = at;
                        Some(at)
                    }
                    at => Some(at),
                },
                None => None,
            };
            self.push(mapped)?;
        }
        Ok(())
    }

    /// Adds the rows of `array` (a column not made as a dictionary): each value looked up in a
    /// small cache of recent values (by length and end bytes) first, hashed only when not there.
    /// Each page is encoded once full (`zstd` compresses it).
    pub(crate) fn write_strings(
        &mut self,
        array: &StringArray,
        zstd: &mut zstd::bulk::Compressor<'_>,
    ) -> Result<()> {
        let mut recent = [UNMAPPED; 16];
        for i in 0..array.len() {
            if array.is_null(i) {
                self.push(None)?;
            } else {
                let value = array.value(i).as_bytes();
                let slot = match value {
                    [] => 0,
                    [first, .., last] => (value.len() ^ usize::from(*first) ^ usize::from(*last) << 2) & 15,
                    [only] => (1 ^ usize::from(*only)) & 15,
                };
                let key = match recent[slot] {
                    at if at != UNMAPPED && self.value(at) == value => at,
                    _ => {
                        let at = self.intern(value)?;
                        recent[slot] = at;
                        at
                    }
                };
                self.push(Some(key))?;
            }
            if self.page_now == self.page_rows {
                self.page(zstd)?;
            }
        }
        Ok(())
    }

    /// Encodes the page gathered (an empty one if the chunk has none), its indices as wide as
    /// the dictionary so far needs, and begins the next.
    fn page(&mut self, zstd: &mut zstd::bulk::Compressor<'_>) -> Result<()> {
        let mut raw = std::mem::take(&mut self.raw);
        raw.clear();
        if self.nullable() {
            self.pages.levels(&mut raw, &self.defs)?;
        }
        let width = bit_width(self.ranges.len());
        raw.push(width);
        rle_hybrid(&mut raw, &self.keys, width);
        self.pages.data(zstd, &raw, Encoding::RLE_DICTIONARY, self.page_now, self.rows)?;
        self.raw = raw;
        self.rows += self.page_now;
        self.page_now = 0;
        self.keys.clear();
        self.defs.clear();
        Ok(())
    }

    /// The chunk encoded (its last page, the dictionary page put first), and what the row
    /// group needs of it; `zstd` compresses every page.
    pub(crate) fn finish(
        mut self,
        zstd: &mut zstd::bulk::Compressor<'_>,
        level: i32,
    ) -> Result<(Bytes, ColumnCloseResult)> {
        if self.page_now > 0 || self.rows == 0 {
            self.page(zstd)?;
        }
        let mut pages = std::mem::replace(&mut self.pages, Pages::new());
        pages.dictionary(zstd, &self.plain, self.ranges.len())?;
        let encodings = vec![Encoding::PLAIN, Encoding::RLE, Encoding::RLE_DICTIONARY];
        let statistics = self.statistics();
        pages.finish(&self.descr, level, self.rows, encodings, statistics, None)
    }

    /// The chunk's statistics: the null count, and the smallest and largest value (bytewise,
    /// as Parquet orders strings) cut to [`STATISTICS_BYTES`] as parquet's writer cuts them.
    fn statistics(&self) -> Statistics {
        let (min, max) = match self.min_max {
            Some((min, max)) => (truncated_min(self.value(min)), truncated_max(self.value(max))),
            None => (None, None),
        };
        let (min_exact, max_exact) = (min.as_ref().map(|m| m.1), max.as_ref().map(|m| m.1));
        let stats = ValueStatistics::new(
            min.map(|m| ByteArray::from(m.0)),
            max.map(|m| ByteArray::from(m.0)),
            None,
            Some(self.nulls),
            false,
        )
        .with_min_is_exact(min_exact.unwrap_or(false))
        .with_max_is_exact(max_exact.unwrap_or(false));
        Statistics::ByteArray(stats)
    }
}

/// The longest prefix of `s` of [`STATISTICS_BYTES`] at most that ends on a character, and
/// whether it is all of `s`.
fn prefix(s: &[u8]) -> (&[u8], bool) {
    if s.len() <= STATISTICS_BYTES {
        return (s, true);
    }
    let mut end = STATISTICS_BYTES;
    // A UTF-8 continuation byte is 0b10xx_xxxx: a character starts at the first other byte.
    while end > 0 && s[end] & 0xc0 == 0x80 {
        end -= 1;
    }
    (&s[..end], false)
}

/// A lower bound of `s` to store as the minimum: `s`, or its prefix (not exact).
fn truncated_min(s: &[u8]) -> Option<(Vec<u8>, bool)> {
    let (p, exact) = prefix(s);
    Some((p.to_vec(), exact))
}

/// An upper bound of `s` to store as the maximum: `s`, or its prefix with its last character
/// that can be made one larger made so (and what followed it dropped): larger than every string
/// that starts with the prefix. `None` when no character of the prefix can grow.
fn truncated_max(s: &[u8]) -> Option<(Vec<u8>, bool)> {
    let (p, exact) = prefix(s);
    if exact {
        return Some((p.to_vec(), true));
    }
    let text = std::str::from_utf8(p).ok()?;
    for (at, c) in text.char_indices().rev() {
        let next = (u32::from(c) + 1..=0x10_ffff).find_map(char::from_u32);
        if let Some(next) = next {
            let mut out = text[..at].to_owned();
            out.push(next);
            if out.len() <= STATISTICS_BYTES {
                return Some((out.into_bytes(), false));
            }
        }
    }
    None
}

/// Whether `array` is a column [`DictColumn::write_dictionary`] takes.
pub(crate) fn as_dictionary(array: &dyn Array) -> Option<&DictionaryArray<UInt32Type>> {
    array.as_dictionary_opt::<UInt32Type>()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Array, AsArray, DictionaryArray, StringArray, UInt32Array};
    use arrow::datatypes::{DataType, Field, Schema};
    use bytes::Bytes;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter};
    use parquet::file::properties::WriterProperties;
    use parquet::file::statistics::Statistics;
    use parquet::file::writer::SerializedFileWriter;

    use super::*;

    /// A file of one string column, `batches` written through a [`DictColumn`] (pages of
    /// `page_rows` rows) as one row group, read back with parquet's reader: its rows, and the
    /// chunk's statistics.
    fn round_trip(
        nullable: bool,
        batches: &[DictionaryArray<UInt32Type>],
        page_rows: usize,
    ) -> (Vec<Option<String>>, Statistics, usize) {
        let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, nullable)]));
        let parquet = ArrowSchemaConverter::new().convert(&schema).unwrap();
        let mut props = WriterProperties::builder().build();
        add_encoded_arrow_schema_to_metadata(&schema, &mut props);
        let mut file =
            SerializedFileWriter::new(Vec::new(), parquet.root_schema_ptr(), Arc::new(props)).unwrap();
        let mut column = DictColumn::new(file.schema_descr().column(0)).with_page_rows(page_rows);
        let mut zstd = zstd::bulk::Compressor::new(1).unwrap();
        for b in batches {
            column.write_dictionary(b, &mut zstd).unwrap();
        }
        let (bytes, close) = column.finish(&mut zstd, 1).unwrap();
        let pages = close.offset_index.as_ref().map_or(0, |o| o.page_locations.len());
        let mut group = file.next_row_group().unwrap();
        group.append_column(&bytes, close).unwrap();
        group.close().unwrap();
        let written = Bytes::from(file.into_inner().unwrap());
        let builder = ParquetRecordBatchReaderBuilder::try_new(written).unwrap();
        assert_eq!(builder.schema().field(0).data_type(), &DataType::Utf8);
        let stats = builder.metadata().row_group(0).column(0).statistics().unwrap().clone();
        let mut rows = Vec::new();
        for batch in builder.with_batch_size(1000).build().unwrap() {
            let batch = batch.unwrap();
            let s = batch.column(0).as_string::<i32>();
            rows.extend((0..s.len()).map(|i| s.is_valid(i).then(|| s.value(i).to_owned())));
        }
        (rows, stats, pages)
    }

    /// The dictionary column of `rows` (values in first-seen order, as `tables.rs` makes them).
    fn dictionary(rows: &[Option<&str>]) -> DictionaryArray<UInt32Type> {
        let mut values: Vec<&str> = Vec::new();
        let keys: UInt32Array = rows
            .iter()
            .map(|r| {
                r.map(|v| match values.iter().position(|x| *x == v) {
                    Some(at) => at as u32,
                    None => {
                        values.push(v);
                        values.len() as u32 - 1
                    }
                })
            })
            .collect();
        DictionaryArray::new(keys, Arc::new(StringArray::from(values)))
    }

    fn owned(rows: &[Option<&str>]) -> Vec<Option<String>> {
        rows.iter().map(|r| r.map(str::to_owned)).collect()
    }

    fn min_max(stats: &Statistics) -> (Option<&[u8]>, Option<&[u8]>, Option<u64>) {
        match stats {
            Statistics::ByteArray(s) => {
                (s.min_opt().map(|m| m.data()), s.max_opt().map(|m| m.data()), s.null_count_opt())
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn nullable_column_over_several_pages_and_batches_reads_back() {
        let first: Vec<Option<&str>> =
            (0..50).map(|i| [Some("b"), None, Some("a"), Some("é"), Some("b")][i % 5]).collect();
        let second: Vec<Option<&str>> =
            (0..33).map(|i| [Some("zz"), Some("a"), Some("a"), None][i % 4]).collect();
        let (rows, stats, pages) = round_trip(true, &[dictionary(&first), dictionary(&second)], 7);
        assert_eq!(rows, owned(&[first.clone(), second.clone()].concat()));
        assert_eq!(pages, (50 + 33usize).div_ceil(7));
        let nulls = first.iter().chain(&second).filter(|r| r.is_none()).count() as u64;
        assert_eq!(min_max(&stats), (Some(&b"a"[..]), Some("é".as_bytes()), Some(nulls)));
    }

    #[test]
    fn runs_and_literals_read_back_in_one_page() {
        // Runs of 8 and more between literals, and runs cut by a literal group's edge.
        let mut rows = Vec::new();
        for (v, n) in [("x", 3), ("y", 20), ("x", 1), ("z", 9), ("y", 7), ("x", 64), ("w", 2)] {
            rows.extend(std::iter::repeat_n(Some(v), n));
        }
        let (back, ..) = round_trip(false, &[dictionary(&rows)], PAGE_ROWS);
        assert_eq!(back, owned(&rows));
    }

    #[test]
    fn empty_one_value_and_all_null_columns_read_back() {
        let (rows, stats, _) = round_trip(true, &[], PAGE_ROWS);
        assert!(rows.is_empty());
        assert_eq!(min_max(&stats), (None, None, Some(0)));
        let one = vec![Some("only"); 1000];
        let (rows, stats, _) = round_trip(false, &[dictionary(&one)], PAGE_ROWS);
        assert_eq!(rows, owned(&one));
        assert_eq!(min_max(&stats), (Some(&b"only"[..]), Some(&b"only"[..]), Some(0)));
        let none = vec![None; 300];
        let (rows, stats, _) = round_trip(true, &[dictionary(&none)], 128);
        assert_eq!(rows, owned(&none));
        assert_eq!(min_max(&stats), (None, None, Some(300)));
    }

    #[test]
    fn over_65536_distinct_values_and_long_ones_read_back_with_bounds() {
        let values: Vec<String> =
            (0..70_000u32).map(|i| format!("{:08}{}", i * 7919 % 70_000, "ü".repeat(40))).collect();
        let rows: Vec<Option<&str>> = values.iter().map(|v| Some(v.as_str())).collect();
        let (back, stats, pages) = round_trip(false, &[dictionary(&rows)], PAGE_ROWS);
        assert_eq!(back, owned(&rows));
        assert_eq!(pages, 4);
        let (min, max, _) = min_max(&stats);
        let (smallest, largest) = (values.iter().min().unwrap(), values.iter().max().unwrap());
        let (min, max) = (min.unwrap(), max.unwrap());
        assert!(min.len() <= STATISTICS_BYTES && max.len() <= STATISTICS_BYTES);
        assert!(smallest.as_bytes().starts_with(min), "a prefix of the smallest value");
        assert!(max > largest.as_bytes(), "above the largest value");
        assert!(std::str::from_utf8(max).is_ok());
        assert!(matches!(&stats, Statistics::ByteArray(s) if !s.min_is_exact() && !s.max_is_exact()));
    }

    #[test]
    fn plain_strings_and_a_null_in_a_required_column() {
        let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, false)]));
        let parquet = ArrowSchemaConverter::new().convert(&schema).unwrap();
        let mut column = DictColumn::new(parquet.column(0));
        let mut zstd = zstd::bulk::Compressor::new(1).unwrap();
        column.write_strings(&StringArray::from(vec!["a", "b", "a"]), &mut zstd).unwrap();
        assert_eq!(column.rows(), 3);
        let err = column.write_dictionary(&dictionary(&[Some("a"), None]), &mut zstd).unwrap_err();
        assert!(err.to_string().contains("a null in column s"), "{err}");
    }
}

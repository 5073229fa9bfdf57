//! The pages of a column chunk encoded by hand ([`crate::parquet_dict`]'s string columns,
//! [`crate::parquet_ints`]' integer columns), as parquet's own writer lays them out: an optional
//! dictionary page, then data pages (version 1: definition levels first for a nullable column,
//! then the values), each zstd-compressed, their headers in Thrift's compact protocol
//! ([`thrift_page_header`]), and the chunk's metadata, statistics, offset index and (when given)
//! column index, for [`SerializedRowGroupWriter::append_column`].
//!
//! Also the encodings those pages share: the RLE/bit-packed hybrid ([`rle_hybrid`], for levels
//! and dictionary indices) and ULEB128 varints.
//!
//! [`SerializedRowGroupWriter::append_column`]: parquet::file::writer::SerializedRowGroupWriter::append_column

use bytes::Bytes;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::page_index::offset_index::{OffsetIndexMetaData, PageLocation};
use parquet::file::statistics::Statistics;
use parquet::schema::types::ColumnDescPtr;

/// Rows per data page at most: parquet's default (`DEFAULT_DATA_PAGE_ROW_COUNT_LIMIT`).
pub(crate) const PAGE_ROWS: usize = 20_000;

/// A column chunk's pages as they are written.
pub(crate) struct Pages {
    out: Vec<u8>,
    /// The bytes the pages would take uncompressed, headers included (the chunk's metadata
    /// says it).
    uncompressed: usize,
    locations: Vec<PageLocation>,
    /// The dictionary page (header and compressed bytes), which goes before the data pages
    /// however late it is made.
    dictionary: Option<Vec<u8>>,
    /// A scratch buffer for a nullable page's levels.
    levels: Vec<u8>,
}

impl Pages {
    pub(crate) fn new() -> Pages {
        Pages {
            out: Vec::new(),
            uncompressed: 0,
            locations: Vec::new(),
            dictionary: None,
            levels: Vec::new(),
        }
    }

    /// Sets the dictionary page, which the chunk puts before its data pages (made before or
    /// after them): `plain`, the PLAIN encoding of its `count` values.
    pub(crate) fn dictionary(
        &mut self,
        zstd: &mut zstd::bulk::Compressor<'_>,
        plain: &[u8],
        count: usize,
    ) -> Result<()> {
        let compressed = zstd.compress(plain)?;
        let mut page = thrift_page_header(Page::Dictionary, plain.len(), compressed.len(), count)?;
        self.uncompressed += page.len() + plain.len();
        page.extend_from_slice(&compressed);
        self.dictionary = Some(page);
        Ok(())
    }

    /// Appends a data page of `rows` rows (nulls included) from row `first_row` of the chunk:
    /// `raw`, its levels (if any) and values, `encoding` the values' encoding.
    pub(crate) fn data(
        &mut self,
        zstd: &mut zstd::bulk::Compressor<'_>,
        raw: &[u8],
        encoding: Encoding,
        rows: usize,
        first_row: usize,
    ) -> Result<()> {
        let compressed = zstd.compress(raw)?;
        let header = thrift_page_header(Page::Data(encoding), raw.len(), compressed.len(), rows)?;
        self.locations.push(PageLocation {
            offset: self.out.len() as i64,
            compressed_page_size: len32(header.len() + compressed.len())?,
            first_row_index: first_row as i64,
        });
        self.uncompressed += header.len() + raw.len();
        self.out.extend_from_slice(&header);
        self.out.extend_from_slice(&compressed);
        Ok(())
    }

    /// Appends to `raw` the definition levels of a nullable page (1: a value, 0: null), as a
    /// version 1 page holds them: their length in 4 bytes, then the RLE/bit-packed hybrid.
    pub(crate) fn levels(&mut self, raw: &mut Vec<u8>, defs: &[u8]) -> Result<()> {
        self.levels.clear();
        rle_hybrid(&mut self.levels, defs, 1);
        raw.extend_from_slice(&len32(self.levels.len())?.to_le_bytes());
        raw.extend_from_slice(&self.levels);
        Ok(())
    }

    /// The chunk: its bytes (the dictionary page, if any, at 0) and what the row group needs of
    /// it. `encodings` lists the encodings its pages use.
    pub(crate) fn finish(
        self,
        descr: &ColumnDescPtr,
        level: i32,
        rows: usize,
        encodings: Vec<Encoding>,
        statistics: Statistics,
        column_index: Option<ColumnIndexMetaData>,
    ) -> Result<(Bytes, ColumnCloseResult)> {
        // The dictionary page first, and the data pages' offsets moved past it.
        let (out, locations, data_offset) = match self.dictionary {
            None => (self.out, self.locations, 0),
            Some(mut first) => {
                let shift = first.len();
                first.extend_from_slice(&self.out);
                let moved = self
                    .locations
                    .into_iter()
                    .map(|l| PageLocation { offset: l.offset + shift as i64, ..l })
                    .collect();
                (first, moved, shift)
            }
        };
        let dictionary = data_offset > 0;
        let metadata = ColumnChunkMetaData::builder(descr.clone())
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(level).unwrap_or_default()))
            .set_encodings(encodings)
            .set_num_values(rows as i64)
            .set_total_compressed_size(out.len() as i64)
            .set_total_uncompressed_size(self.uncompressed as i64)
            .set_dictionary_page_offset(dictionary.then_some(0))
            .set_data_page_offset(data_offset as i64)
            .set_statistics(statistics)
            .build()?;
        let close = ColumnCloseResult {
            bytes_written: out.len() as u64,
            rows_written: rows as u64,
            metadata,
            bloom_filter: None,
            column_index,
            offset_index: Some(OffsetIndexMetaData {
                page_locations: locations,
                unencoded_byte_array_data_bytes: None,
            }),
        };
        Ok((Bytes::from(out), close))
    }
}

pub(crate) fn len32(n: usize) -> Result<i32> {
    i32::try_from(n).map_err(|_| ParquetError::General("a page of over 2 GiB".into()))
}

/// The bits an index into a dictionary of `count` values takes (1 at least).
pub(crate) fn bit_width(count: usize) -> u8 {
    let largest = count.saturating_sub(1) as u64;
    (64 - largest.leading_zeros()).max(1) as u8
}

/// Appends `values` in the RLE/bit-packed hybrid encoding of `width` bits (no length prefix):
/// a run of 8 or more equal values as an RLE run, the others bit-packed 8 at a time (the last
/// group padded with zeros, which the page's value count leaves unread). `values` are
/// dictionary indices (`u32`) or definition levels (`u8`, 1 bit).
pub(crate) fn rle_hybrid<T: Copy + Eq + Into<u32>>(out: &mut Vec<u8>, values: &[T], width: u8) {
    let mut literal_from = 0;
    let mut i = 0;
    while i < values.len() {
        let v = values[i];
        let run = values[i..].iter().take_while(|&&x| x == v).count();
        if run >= 8 {
            bit_packed(out, values[literal_from..i].iter().map(|&x| x.into()), width);
            uleb128(out, (run as u64) << 1);
            let bytes = usize::from(width).div_ceil(8);
            out.extend_from_slice(&v.into().to_le_bytes()[..bytes]);
            i += run;
            literal_from = i;
        } else {
            i = (i + 8).min(values.len());
        }
    }
    bit_packed(out, values[literal_from..].iter().map(|&x| x.into()), width);
}

/// `values` as one bit-packed run (none if empty): its header, then groups of 8 values of
/// `width` bits each, least significant bits first: a group is `width` bytes, made in one
/// integer (dictionary indices and levels are at most 16 bits wide but for dictionaries of
/// more than 65,536 values).
fn bit_packed(out: &mut Vec<u8>, mut values: impl ExactSizeIterator<Item = u32>, width: u8) {
    let n = values.len();
    if n == 0 {
        return;
    }
    let groups = n.div_ceil(8);
    uleb128(out, ((groups as u64) << 1) | 1);
    let w = u32::from(width);
    out.reserve(groups * usize::from(width));
    for _ in 0..groups {
        // The last group padded with zeros.
        let group: [u32; 8] = std::array::from_fn(|_| values.next().unwrap_or(0));
        if w <= 16 {
            let acc =
                group.iter().enumerate().fold(0u128, |acc, (k, &v)| acc | u128::from(v) << (k as u32 * w));
            out.extend_from_slice(&acc.to_le_bytes()[..usize::from(width)]);
        } else {
            pack_bits(out, group.map(u64::from), w);
        }
    }
}

/// `values` of `width` bits each (at most 64) packed one after the other, least significant
/// bits first, the whole bytes appended (a caller packs a multiple of 8 values).
pub(crate) fn pack_bits(out: &mut Vec<u8>, values: impl IntoIterator<Item = u64>, width: u32) {
    let (mut acc, mut bits) = (0u128, 0u32);
    for v in values {
        acc |= u128::from(v) << bits;
        bits += width;
        while bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
}

pub(crate) fn uleb128(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// The kinds of page written: a data page's values are in the encoding it names.
#[derive(Clone, Copy)]
enum Page {
    Dictionary,
    Data(Encoding),
}

/// A `PageHeader` (parquet.thrift) in Thrift's compact protocol: `type` (1), the page's
/// uncompressed (2) and compressed (3) sizes, and the dictionary's (7: `num_values`, encoding
/// PLAIN) or the data page's (5: `num_values`, the values' encoding, levels RLE) header.
fn thrift_page_header(page: Page, uncompressed: usize, compressed: usize, values: usize) -> Result<Vec<u8>> {
    // Compact protocol: a field is a byte, (id - previous id) << 4 | type, then its value; an
    // i32 is a zigzag varint; a struct's fields end with a 0 byte.
    const I32: u8 = 5;
    const STRUCT: u8 = 12;
    let mut out = Vec::with_capacity(24);
    let i32_field = |out: &mut Vec<u8>, delta: u8, v: i32| {
        out.push(delta << 4 | I32);
        uleb128(out, u64::from(((v << 1) ^ (v >> 31)) as u32));
    };
    let (kind, header_field, encoding) = match page {
        Page::Data(encoding) => (0, 5u8, encoding),
        Page::Dictionary => (2, 7u8, Encoding::PLAIN),
    };
    i32_field(&mut out, 1, kind);
    i32_field(&mut out, 1, len32(uncompressed)?);
    i32_field(&mut out, 1, len32(compressed)?);
    out.push((header_field - 3) << 4 | STRUCT);
    i32_field(&mut out, 1, len32(values)?);
    i32_field(&mut out, 1, thrift_encoding(encoding)?);
    if let Page::Data(_) = page {
        i32_field(&mut out, 1, thrift_encoding(Encoding::RLE)?);
        i32_field(&mut out, 1, thrift_encoding(Encoding::RLE)?);
    }
    out.push(0);
    out.push(0);
    Ok(out)
}

/// An encoding's number in parquet.thrift.
fn thrift_encoding(e: Encoding) -> Result<i32> {
    Ok(match e {
        Encoding::PLAIN => 0,
        Encoding::RLE => 3,
        Encoding::DELTA_BINARY_PACKED => 5,
        Encoding::RLE_DICTIONARY => 8,
        other => return Err(ParquetError::General(format!("no page written by hand is {other}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_encoding_of_a_run_and_literals() {
        let mut out = Vec::new();
        rle_hybrid(&mut out, &[5u32; 10], 3);
        assert_eq!(out, [10 << 1, 5], "one RLE run: its length, its value in a byte");
        out.clear();
        rle_hybrid(&mut out, &[1u32, 0, 1, 0, 1, 0, 1, 0, 1], 1);
        assert_eq!(out, [(2 << 1) | 1, 0b0101_0101, 0b0000_0001], "two bit-packed groups");
        let mut levels = Vec::new();
        rle_hybrid(&mut levels, &[1u8, 0, 1, 0, 1, 0, 1, 0, 1], 1);
        assert_eq!(levels, out, "levels encode as 1-bit values do");
        assert_eq!(
            (bit_width(0), bit_width(1), bit_width(2), bit_width(3), bit_width(65_537)),
            (1, 1, 1, 2, 17)
        );
    }

    #[test]
    fn page_headers_name_their_encoding_and_refuse_others() {
        let delta = thrift_page_header(Page::Data(Encoding::DELTA_BINARY_PACKED), 10, 8, 3).unwrap();
        let plain = thrift_page_header(Page::Data(Encoding::PLAIN), 10, 8, 3).unwrap();
        assert_eq!(delta.len(), plain.len());
        let differ: Vec<usize> = (0..delta.len()).filter(|&i| delta[i] != plain[i]).collect();
        assert_eq!(differ.len(), 1, "only the encoding's byte differs");
        assert_eq!((delta[differ[0]], plain[differ[0]]), (5 << 1, 0), "zigzag 5 and 0");
        assert!(thrift_page_header(Page::Data(Encoding::BYTE_STREAM_SPLIT), 1, 1, 1).is_err());
    }
}

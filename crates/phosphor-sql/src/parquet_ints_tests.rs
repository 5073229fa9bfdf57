//! [`IntColumn`]'s chunks read back by parquet's own reader: values, statistics, column index.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, UInt32Array, UInt64Array};
use arrow::datatypes::{Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter, ArrowWriter};
use parquet::file::metadata::PageIndexPolicy;
use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::writer::SerializedFileWriter;

use super::*;
use crate::parquet_out::writer_properties_for;

/// What a file of one column says, read back.
struct Back {
    rows: Vec<ArrayRef>,
    statistics: Statistics,
    index: ColumnIndexMetaData,
    encodings: Vec<Encoding>,
    pages: usize,
}

/// `column` (named `name`, as the tables name theirs: the name chooses the encoding) written
/// through an [`IntColumn`] in batches of `batch` rows, pages of `page_rows`, with `props`
/// (the tables' settings when `None`), and read back.
fn round_trip(
    name: &str,
    column: ArrayRef,
    batch: usize,
    page_rows: usize,
    props: Option<WriterProperties>,
) -> Back {
    let schema: SchemaRef =
        Arc::new(Schema::new(vec![Field::new(name, column.data_type().clone(), column.null_count() > 0)]));
    let props = props.unwrap_or_else(|| writer_properties_for(&schema));
    let parquet = ArrowSchemaConverter::new().convert(&schema).unwrap();
    let mut file_props = props.clone();
    add_encoded_arrow_schema_to_metadata(&schema, &mut file_props);
    let mut file =
        SerializedFileWriter::new(Vec::new(), parquet.root_schema_ptr(), Arc::new(file_props)).unwrap();
    let mut chunk = IntColumn::new(file.schema_descr().column(0), &props).unwrap().with_page_rows(page_rows);
    let mut zstd = zstd::bulk::Compressor::new(1).unwrap();
    let mut at = 0;
    while at < column.len() {
        let n = batch.min(column.len() - at);
        chunk.write(column.slice(at, n).as_ref(), &mut zstd).unwrap();
        at += n;
    }
    let (bytes, close) = chunk.finish(&mut zstd, 1).unwrap();
    let pages = close.offset_index.as_ref().map_or(0, |o| o.page_locations.len());
    let mut group = file.next_row_group().unwrap();
    group.append_column(&bytes, close).unwrap();
    group.close().unwrap();
    let written = Bytes::from(file.into_inner().unwrap());
    let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
    let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(written, options).unwrap();
    assert_eq!(builder.schema().field(0).data_type(), column.data_type());
    let meta = builder.metadata().clone();
    let chunk_meta = meta.row_group(0).column(0);
    let statistics = chunk_meta.statistics().unwrap().clone();
    let encodings = chunk_meta.encodings().collect();
    let index = meta.column_index().unwrap()[0][0].clone();
    let rows = builder.with_batch_size(777).build().unwrap().map(|b| b.unwrap().column(0).clone()).collect();
    Back { rows, statistics, index, encodings, pages }
}

fn concat(rows: &[ArrayRef]) -> ArrayRef {
    let parts: Vec<&dyn Array> = rows.iter().map(|a| a.as_ref()).collect();
    arrow::compute::concat(&parts).unwrap()
}

/// The same column written by parquet's own Arrow writer with the same settings: its chunk's
/// statistics.
fn parquets_statistics(name: &str, column: ArrayRef) -> Statistics {
    let schema =
        Arc::new(Schema::new(vec![Field::new(name, column.data_type().clone(), column.null_count() > 0)]));
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, schema.clone(), Some(writer_properties_for(&schema))).unwrap();
    w.write(&RecordBatch::try_new(schema, vec![column]).unwrap()).unwrap();
    w.close().unwrap();
    let builder = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(out)).unwrap();
    builder.metadata().row_group(0).column(0).statistics().unwrap().clone()
}

#[test]
fn ids_delta_encoded_over_pages_and_batches_read_back_with_parquets_statistics() {
    // Ids counting up with gaps and jumps, the extremes of the type (deltas that wrap), and a
    // last block of an odd length.
    let mut ids: Vec<u64> = (0..5_000u64).map(|i| i * 3 + (i % 7) * 1_000).collect();
    ids.extend([u64::MAX, 0, 1 << 63, (1 << 63) - 1, 42]);
    ids.extend((0..1_234u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    let column: ArrayRef = Arc::new(UInt64Array::from(ids.clone()));
    let back = round_trip("id", column.clone(), 1_000, 999, None);
    assert_eq!(concat(&back.rows).as_ref(), column.as_ref());
    assert_eq!(back.pages, ids.len().div_ceil(999));
    assert!(back.encodings.contains(&Encoding::DELTA_BINARY_PACKED), "{:?}", back.encodings);
    assert_eq!(back.statistics, parquets_statistics("id", column));
    match &back.statistics {
        Statistics::Int64(s) => {
            // Unsigned order: u64::MAX is the largest, 0 the smallest.
            assert_eq!((s.min_opt(), s.max_opt()), (Some(&0), Some(&-1)));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn nullable_parent_ids_and_durations_read_back_with_nulls_and_null_pages() {
    // A page of nulls only (rows 100..200), and nulls scattered elsewhere.
    let parents: Vec<Option<u64>> =
        (0..1_000u64).map(|i| (!(100..200).contains(&i) && i % 5 != 0).then_some(i / 3)).collect();
    let durations: Vec<Option<i64>> = parents.iter().map(|p| p.map(|p| (p as i64 - 150) * 1_000)).collect();
    // Delta-encoded, with a dictionary, and PLAIN (the settings of `parent_id`, `dur` and `int_value`).
    for (name, column, encoding) in [
        ("parent_id", Arc::new(UInt64Array::from(parents)) as ArrayRef, Encoding::DELTA_BINARY_PACKED),
        ("dur", Arc::new(Int64Array::from(durations.clone())) as ArrayRef, Encoding::RLE_DICTIONARY),
        ("int_value", Arc::new(Int64Array::from(durations)) as ArrayRef, Encoding::PLAIN),
    ] {
        let back = round_trip(name, column.clone(), 333, 100, None);
        assert!(back.encodings.contains(&encoding), "{name}: {:?}", back.encodings);
        assert!(!back.encodings.contains(&Encoding::RLE_DICTIONARY) || encoding == Encoding::RLE_DICTIONARY);
        assert_eq!(concat(&back.rows).as_ref(), column.as_ref(), "{name}");
        assert_eq!(back.statistics, parquets_statistics(name, column.clone()), "{name}");
        let ColumnIndexMetaData::INT64(index) = &back.index else { panic!("{name}: {:?}", back.index) };
        assert_eq!(index.num_pages(), 10);
        assert!(index.is_null_page(1) && !index.is_null_page(0) && !index.is_null_page(2), "{name}");
        assert_eq!(index.null_count(1), Some(100));
        assert_eq!(index.null_count(0), Some(20), "{name}: every fifth row");
        // The pages' bounds: the third page (rows 200..300) holds ids 200/3..=299/3.
        let (min, max) = (index.min_value(2).copied(), index.max_value(2).copied());
        let expect = |p: i64| if name == "parent_id" { p } else { (p - 150) * 1_000 };
        assert_eq!((min, max), (Some(expect(201 / 3)), Some(expect(299 / 3))), "{name}");
        assert_eq!(back.index.get_boundary_order(), Some(BoundaryOrder::ASCENDING), "{name}");
    }
}

#[test]
fn small_columns_take_a_dictionary_and_fall_back_to_plain_past_its_limit() {
    let depths: Vec<u32> =
        (0..50_000u32).map(|i| (i * 7 % 13) + u32::from(i % 1000 == 0) * 4_000_000_000).collect();
    let column: ArrayRef = Arc::new(UInt32Array::from(depths.clone()));
    let back = round_trip("depth", column.clone(), 8_192, PAGE_ROWS, None);
    assert_eq!(concat(&back.rows).as_ref(), column.as_ref());
    assert!(back.encodings.contains(&Encoding::RLE_DICTIONARY), "{:?}", back.encodings);
    assert_eq!(back.statistics, parquets_statistics("depth", column.clone()));
    match &back.statistics {
        // Unsigned order, stored as INT32's bits.
        Statistics::Int32(s) => {
            let max = *depths.iter().max().unwrap();
            assert!(max > 4_000_000_000);
            assert_eq!((s.min_opt(), s.max_opt()), (Some(&0), Some(&(max as i32))));
        }
        other => panic!("{other:?}"),
    }
    // A limit of just the dictionary's bytes keeps it; one value fewer, and the chunk is PLAIN.
    let distinct = depths.iter().collect::<std::collections::HashSet<_>>().len();
    let limit =
        |values: usize| Some(WriterProperties::builder().set_dictionary_page_size_limit(values * 4).build());
    let back = round_trip("depth", column.clone(), 8_192, PAGE_ROWS, limit(distinct));
    assert_eq!(concat(&back.rows).as_ref(), column.as_ref());
    assert!(back.encodings.contains(&Encoding::RLE_DICTIONARY), "{distinct} fit: {:?}", back.encodings);
    let back = round_trip("depth", column.clone(), 8_192, PAGE_ROWS, limit(distinct - 1));
    assert_eq!(concat(&back.rows).as_ref(), column.as_ref());
    assert!(!back.encodings.contains(&Encoding::RLE_DICTIONARY), "{:?}", back.encodings);
    assert_eq!(back.statistics, parquets_statistics("depth", column));
    // A dictionary filled by a later page: the pages before keep it, that page and the rest
    // are PLAIN.
    let lines: Vec<u32> = (0..1_000u32).map(|i| if i < 300 { i % 10 } else { i }).collect();
    let column: ArrayRef = Arc::new(UInt32Array::from(lines));
    let back = round_trip("line", column.clone(), 64, 100, limit(200));
    assert_eq!(concat(&back.rows).as_ref(), column.as_ref());
    for e in [Encoding::RLE_DICTIONARY, Encoding::PLAIN] {
        assert!(back.encodings.contains(&e), "{e}: {:?}", back.encodings);
    }
}

#[test]
fn empty_all_null_and_one_value_chunks_read_back() {
    let empty: ArrayRef = Arc::new(Int64Array::from(Vec::<i64>::new()));
    let back = round_trip("ts", empty, 10, PAGE_ROWS, None);
    assert_eq!(back.rows.iter().map(|r| r.len()).sum::<usize>(), 0);
    assert_eq!(back.pages, 1, "one empty page");
    let nulls: ArrayRef = Arc::new(Int64Array::from(vec![None; 300]));
    let back = round_trip("self_dur", nulls.clone(), 64, 128, None);
    assert_eq!(concat(&back.rows).as_ref(), nulls.as_ref());
    assert!(
        matches!(&back.statistics, Statistics::Int64(s) if s.min_opt().is_none() && s.null_count_opt() == Some(300))
    );
    let one: ArrayRef = Arc::new(Int64Array::from(vec![-5; 1_000]));
    let back = round_trip("ts", one.clone(), 1_000, PAGE_ROWS, None);
    assert_eq!(concat(&back.rows).as_ref(), one.as_ref());
}

#[test]
fn a_null_in_a_required_column_is_an_error() {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::UInt64, false)]));
    let parquet = ArrowSchemaConverter::new().convert(&schema).unwrap();
    let mut column = IntColumn::new(parquet.column(0), &writer_properties_for(&schema)).unwrap();
    let mut zstd = zstd::bulk::Compressor::new(1).unwrap();
    column.write(&UInt64Array::from(vec![1, 2]), &mut zstd).unwrap();
    let err = column.write(&UInt64Array::from(vec![Some(1), None]), &mut zstd).unwrap_err();
    assert!(err.to_string().contains("a null in column id"), "{err}");
    let taken = column.write(&Int64Array::from(vec![1]), &mut zstd);
    assert!(taken.is_ok(), "an Int64 array into an INT64 column is taken");
    let err = column.write(&arrow::array::Float64Array::from(vec![1.0]), &mut zstd).unwrap_err();
    assert!(err.to_string().contains("id is no integer column"), "{err}");
}

#[test]
fn delta_encoding_of_a_run_is_a_header_and_zero_widths() {
    let mut out = Vec::new();
    delta_binary_packed(&mut out, &[7; 129]);
    // 256 values a block, 4 miniblocks, 129 values, first 7 (zigzag 14); one block: min delta 0
    // and four miniblocks of width 0.
    assert_eq!(out, [0x80, 0x02, 4, 0x81, 0x01, 14, 0, 0, 0, 0, 0]);
}

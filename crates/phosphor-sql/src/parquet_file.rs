//! [`ParquetFile`]: one table's Parquet file, written batch by batch as parquet's `ArrowWriter`
//! writes it (same schema, Arrow schema in its metadata, row groups of
//! [`WriterProperties::max_row_group_row_count`] rows, the column settings of
//! [`crate::parquet_out::writer_properties_for`]), but for two kinds of column encoded by hand
//! and spliced into the row group beside the columns of parquet's own Arrow column writers: the
//! string columns of few values (those the batches carry as `Dictionary(UInt32, Utf8)`, and
//! those the caller names), by [`DictColumn`] (no hash per value; the file's column stays a
//! `Utf8` column: readers see the table's schema), and the integer columns, by [`IntColumn`].
//! Floats, booleans and the strings whose values rarely repeat go through parquet's writers.

use std::fs::File;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnWriter, ArrowRowGroupWriterFactory};
use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter};
use parquet::errors::{ParquetError, Result};
use parquet::file::properties::{WriterProperties, WriterPropertiesPtr};
use parquet::file::writer::SerializedFileWriter;

use crate::parquet_dict::{as_dictionary, DictColumn};
use crate::parquet_ints::{is_int, IntColumn};

/// A Parquet file of one table being written.
pub(crate) struct ParquetFile {
    file: SerializedFileWriter<File>,
    factory: ArrowRowGroupWriterFactory,
    /// Row groups written.
    groups: usize,
    schema: SchemaRef,
    props: WriterPropertiesPtr,
    /// The row group being gathered, and its rows.
    group: Option<(Vec<Chunk>, usize)>,
    zstd: zstd::bulk::Compressor<'static>,
    level: i32,
    /// Per column, whether it is a string column encoded by [`DictColumn`] even when it comes
    /// as plain strings.
    by_hand: Vec<bool>,
}

/// A column of the row group being gathered.
enum Chunk {
    // Both boxed: the two differ in size several times over, and a row group holds one per column.
    Arrow(Box<ArrowColumnWriter>),
    Dict(Box<DictColumn>),
    Int(Box<IntColumn>),
}

impl ParquetFile {
    /// A file of `schema`'s columns (its Arrow schema, as readers will see it) written to
    /// `file` with `props`, whose pages (all of them) zstd compresses at `level`; the string
    /// columns `by_hand` names (and those that come as dictionaries) are encoded by [`DictColumn`].
    pub(crate) fn new(
        file: File,
        schema: SchemaRef,
        props: WriterProperties,
        level: i32,
        by_hand: Vec<bool>,
    ) -> Result<ParquetFile> {
        let mut props = props;
        let parquet = ArrowSchemaConverter::new().with_coerce_types(props.coerce_types()).convert(&schema)?;
        add_encoded_arrow_schema_to_metadata(&schema, &mut props);
        let props = Arc::new(props);
        let file = SerializedFileWriter::new(file, parquet.root_schema_ptr(), props.clone())?;
        let zstd = zstd::bulk::Compressor::new(level)?;
        let factory = ArrowRowGroupWriterFactory::new(&file, schema.clone());
        Ok(ParquetFile { file, factory, groups: 0, schema, props, group: None, zstd, level, by_hand })
    }

    /// Writes `columns`, the file schema's columns in its order (each as the schema says, or a
    /// `Utf8` column as `Dictionary(UInt32, Utf8)`), of `rows` rows, closing a row group each time
    /// one is full.
    pub(crate) fn write(&mut self, columns: &[ArrayRef], rows: usize) -> Result<()> {
        if columns.len() != self.schema.fields().len() {
            return Err(ParquetError::General("a batch of other columns than its file's".into()));
        }
        let max = self.props.max_row_group_row_count().unwrap_or(usize::MAX).max(1);
        let mut at = 0;
        while at < rows {
            let room = max - self.group.as_ref().map_or(0, |g| g.1);
            let n = room.min(rows - at);
            let part: Vec<ArrayRef> = if at == 0 && n == rows {
                columns.to_vec()
            } else {
                columns.iter().map(|c| c.slice(at, n)).collect()
            };
            self.write_part(&part, n)?;
            at += n;
            if self.group.as_ref().is_some_and(|g| g.1 >= max) {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Writes rows into the row group being gathered, begun if none is: a column begun as a
    /// dictionary stays one (hashing its values if a later batch brings plain strings).
    fn write_part(&mut self, columns: &[ArrayRef], rows: usize) -> Result<()> {
        if self.group.is_none() {
            let writers = self.factory.create_column_writers(self.groups)?;
            let descr = self.file.schema_descr();
            let chunks = writers
                .into_iter()
                .zip(columns)
                .enumerate()
                .map(|(i, (w, c))| {
                    let strings = c.data_type() == &DataType::Utf8 && self.by_hand.get(i) == Some(&true);
                    Ok(match as_dictionary(c.as_ref()) {
                        Some(_) => Chunk::Dict(Box::new(DictColumn::new(descr.column(i)))),
                        None if strings => Chunk::Dict(Box::new(DictColumn::new(descr.column(i)))),
                        None if is_int(c.data_type()) => {
                            Chunk::Int(Box::new(IntColumn::new(descr.column(i), &self.props)?))
                        }
                        None => Chunk::Arrow(Box::new(w)),
                    })
                })
                .collect::<Result<_>>()?;
            self.group = Some((chunks, 0));
        }
        let Some((chunks, gathered)) = &mut self.group else { return Ok(()) };
        for ((chunk, column), field) in chunks.iter_mut().zip(columns).zip(self.schema.fields()) {
            match chunk {
                Chunk::Dict(d) => match (as_dictionary(column.as_ref()), column.as_string_opt::<i32>()) {
                    (Some(dictionary), _) => d.write_dictionary(dictionary, &mut self.zstd)?,
                    (None, Some(strings)) => d.write_strings(strings, &mut self.zstd)?,
                    (None, None) => {
                        return Err(ParquetError::General(format!("{} is no string column", field.name())))
                    }
                },
                Chunk::Int(n) => n.write(column.as_ref(), &mut self.zstd)?,
                Chunk::Arrow(w) => {
                    let column = match column.data_type() {
                        DataType::Dictionary(..) => arrow::compute::cast(column, field.data_type())?,
                        _ => column.clone(),
                    };
                    for leaf in compute_leaves(field, &column)? {
                        w.write(&leaf)?;
                    }
                }
            }
        }
        *gathered += rows;
        Ok(())
    }

    /// Closes the row group being gathered, if any, writing its columns in the schema's order.
    fn flush(&mut self) -> Result<()> {
        let Some((chunks, _)) = self.group.take() else { return Ok(()) };
        let mut group = self.file.next_row_group()?;
        for chunk in chunks {
            match chunk {
                Chunk::Arrow(w) => w.close()?.append_to_row_group(&mut group)?,
                Chunk::Dict(d) => {
                    let (bytes, close) = d.finish(&mut self.zstd, self.level)?;
                    group.append_column(&bytes, close)?;
                }
                Chunk::Int(n) => {
                    let (bytes, close) = n.finish(&mut self.zstd, self.level)?;
                    group.append_column(&bytes, close)?;
                }
            }
        }
        group.close()?;
        self.groups += 1;
        Ok(())
    }

    /// Closes the file: its last row group, then its footer.
    pub(crate) fn close(mut self) -> Result<()> {
        self.flush()?;
        self.file.close()?;
        Ok(())
    }
}

/// `batch`'s columns but `skip` (by name).
pub(crate) fn columns_but(batch: &RecordBatch, skip: Option<&str>) -> Vec<ArrayRef> {
    let schema = batch.schema();
    schema
        .fields()
        .iter()
        .zip(batch.columns())
        .filter(|(f, _)| Some(f.name().as_str()) != skip)
        .map(|(_, c)| c.clone())
        .collect()
}

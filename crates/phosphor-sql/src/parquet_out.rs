//! [`write_parquet`]: the tables of trace files as Parquet, one file per table in a folder
//! (`slices.parquet`, `threads.parquet`, ...), for DuckDB, Polars, pandas, Spark or Trino.
//!
//! Every file is read once, all tables together, and each batch is written as it comes, so
//! memory is a row group per table (zstd-compressed columns) plus what reading keeps.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::read::{read_tables, TraceSource, DEFAULT_BATCH_ROWS};
use crate::tables::Table;
use crate::Error;

/// What [`write_parquet`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParquetSummary {
    /// Per table, its file and its rows, in [`Table::ALL`]'s order.
    pub tables: Vec<(Table, PathBuf, u64)>,
}

/// Writes the tables of `sources` (their rows one after the other, each with its `trace`) into
/// `dir`, created if missing: one Parquet file per table, every table written even when empty.
/// Stops at the first file that does not read, with its error (the file and byte offset).
pub fn write_parquet(sources: &[TraceSource], dir: &Path) -> Result<ParquetSummary, Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Open { path: dir.to_path_buf(), source })?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap_or_default()))
        .build();
    let mut writers = HashMap::new();
    for table in Table::ALL {
        let path = dir.join(format!("{}.parquet", table.name()));
        let file = File::create(&path).map_err(|source| Error::Open { path: path.clone(), source })?;
        let writer = ArrowWriter::try_new(file, table.schema(), Some(props.clone()))
            .map_err(|source| Error::Parquet { path: path.clone(), source })?;
        writers.insert(table, (writer, path, 0u64));
    }
    for source in sources {
        read_tables(source, &Table::ALL, DEFAULT_BATCH_ROWS, |table, batch| {
            let (writer, path, rows) = writers.get_mut(&table).ok_or(Error::Stopped)?;
            *rows += batch.num_rows() as u64;
            writer.write(&batch).map_err(|source| Error::Parquet { path: path.clone(), source })
        })?;
    }
    let mut summary = ParquetSummary::default();
    for table in Table::ALL {
        if let Some((writer, path, rows)) = writers.remove(&table) {
            writer.close().map_err(|source| Error::Parquet { path: path.clone(), source })?;
            summary.tables.push((table, path, rows));
        }
    }
    Ok(summary)
}

//! [`Error`]: why a table could not be made, written or queried, naming the file and, for a
//! damaged trace, the byte offset (the format's own error, passed on whole).

use std::io;
use std::path::PathBuf;

/// Why reading a trace into tables, writing them, or running a query failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or folder could not be opened or listed.
    #[error("{}: {source}", path.display())]
    Open {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A trace file does not read as one, from some byte on: the format's error names the file
    /// and the byte offset.
    #[error(transparent)]
    Read(#[from] phosphor_format::file::Error),
    /// Writing a table's Parquet file failed.
    #[error("{}: writing the table failed: {source}", path.display())]
    Parquet {
        /// The Parquet file.
        path: PathBuf,
        /// Why.
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// A column asked for by its index is not one of the table's.
    #[error("table {table} has no column {index}")]
    NoColumn {
        /// The table.
        table: &'static str,
        /// The index asked for.
        index: usize,
    },
    /// The batches' consumer went away (a query that needed no more rows).
    #[error("the table's reader was stopped")]
    Stopped,
    /// The query was stopped by Ctrl-C ([`crate::Session::interrupt_on_ctrl_c`]).
    #[cfg(feature = "engine")]
    #[error("interrupted")]
    Interrupted,
    /// The query failed: its text is in the message.
    #[cfg(feature = "engine")]
    #[error("{0}")]
    Sql(String),
}

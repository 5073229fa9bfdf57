//! Phosphor's trace viewer: the index a viewer reads a trace through.
//!
//! A trace file is read once into an index ([`open`]), in its clock's ticks: per thread, its slices by level, each level
//! sorted by start (a level's slices never overlap), its points (instants, logs, problems) by
//! time, and each counter's samples by time, in a file of fixed-size records that is then mapped,
//! not loaded. A window query ([`IndexFile::slices_in`], [`IndexFile::points_in`],
//! [`IndexFile::samples_in`]) gives at most about one item per pixel and level, whatever the
//! trace's size, by binary search in the mapped records (`query.rs`).
//!
//! The index is kept beside the trace (`TRACE.phview`), or in a cache folder where the trace's
//! folder cannot be written, and built again when the trace's length or modification time
//! changes. Building it takes memory bounded by [`BuildOptions::segment_items`] (the slices are
//! sorted on disk), the open begins and the distinct names.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # use phosphor::{trace_scope, BufferMode, TraceConfig, TraceLog, TraceLogConfig};
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("trace.phos");
//! # let log = TraceLog::new(TraceLogConfig::default())?;
//! # log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20))?;
//! # { trace_scope!(log: &log, "app", "frame"); trace_scope!(log: &log, "app", "update"); }
//! # log.stop();
//! # log.take_trace().unwrap().save(&path)?;
//! use phosphor_view::{open, BuildOptions, Window};
//!
//! let index = open(&path, None, &BuildOptions::default())?;
//! let thread = &index.threads[0];
//! let whole = Window::new(0, u64::MAX / 2, 1600);
//! let levels = index.slices_in(thread, whole);
//! assert_eq!(levels.len(), 2); // frame, and update inside it
//! # Ok(())
//! # }
//! ```

use std::fs::{self, File};
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use phosphor_format::file::Reader;

mod api;
#[cfg(test)]
mod api_doc_tests;
mod blocks;
#[cfg(test)]
mod blocks_tests;
mod build;
mod compare;
mod events;
mod file;
mod flows;
#[cfg(test)]
mod flows_tests;
mod frame_track;
#[cfg(test)]
mod frame_track_tests;
pub mod live;
#[cfg(test)]
mod long_poll_tests;
mod overview;
pub mod placement;
mod query;
pub mod records;
mod search;
pub mod server;
mod slices;
mod stats;
mod store;
mod summary;
#[cfg(test)]
mod summary_tests;
mod system;
mod system_api;
#[cfg(test)]
mod system_browser_tests;
#[cfg(test)]
mod system_tests;
mod task_table;
#[cfg(test)]
mod tests;
mod traces;
mod writer;

pub use build::BuildOptions;
pub use compare::{CompareAnswer, CompareSide, KindPath};
pub use file::{CounterTrack, IndexFile, Meta, ThreadTrack, MAGIC, VERSION};
pub use live::{LiveModel, LiveOptions};
pub use overview::{Overview, OverviewThread};
pub use query::{PointItem, SampleItem, SliceItem, Window};

/// Why an index could not be opened or built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The trace file could not be read from its start (its header).
    #[error("{}: {source}", path.display())]
    Trace {
        /// The trace file.
        path: PathBuf,
        /// Where and why reading failed.
        source: phosphor_format::file::Error,
    },
    /// An index file is damaged.
    #[error("{}: byte {offset}: {what}", path.display())]
    Index {
        /// The index file.
        path: PathBuf,
        /// Where in it.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// Sorting the trace's records on disk failed.
    #[error("sorting the trace's records: {0}")]
    Sort(#[from] io::Error),
}

impl Error {
    pub(crate) fn io(path: &Path, source: io::Error) -> Error {
        Error::Io { path: path.to_owned(), source }
    }
}

/// Where the index of `trace` is kept: beside it, or in `cache` (named after the trace's full
/// path) when given.
pub fn index_path(trace: &Path, cache: Option<&Path>) -> PathBuf {
    match cache {
        None => {
            let mut name = trace.file_name().unwrap_or_default().to_owned();
            name.push(".phview");
            trace.with_file_name(name)
        }
        Some(dir) => {
            let full = fs::canonicalize(trace).unwrap_or_else(|_| trace.to_owned());
            let hash = phosphor_format::fnv1a64(full.to_string_lossy().as_bytes());
            let stem = trace.file_name().unwrap_or_default().to_string_lossy();
            dir.join(format!("{stem}-{hash:016x}.phview"))
        }
    }
}

/// Opens the index of the trace file at `trace`, building it first if it is missing or was made
/// from another version of the file. The index goes beside the trace, or into `cache` if the
/// trace's folder cannot be written (or `cache` is given and nothing is beside the trace).
pub fn open(trace: &Path, cache: Option<&Path>, options: &BuildOptions) -> Result<IndexFile, Error> {
    let source = fs::metadata(trace).map_err(|e| Error::io(trace, e))?;
    let mtime = mtime_ns(&source);
    if let Some(index) = open_existing(trace, cache) {
        return Ok(index);
    }
    let beside = index_path(trace, None);
    let mut places = vec![beside.clone()];
    if let Some(dir) = cache {
        places.push(index_path(trace, Some(dir)));
    }
    let mut last = None;
    for place in places {
        match build_at(trace, &place, source.len(), mtime, options) {
            Ok(index) => return Ok(index),
            Err(e @ Error::Io { .. }) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| Error::io(&beside, io::ErrorKind::NotFound.into())))
}

/// The index of the trace file at `trace`, beside it or in `cache`, if one was built from this
/// version of the file and is whole; `None` if it must be built (a damaged or stale index is).
pub fn open_existing(trace: &Path, cache: Option<&Path>) -> Option<IndexFile> {
    let source = fs::metadata(trace).ok()?;
    let mtime = mtime_ns(&source);
    let places =
        std::iter::once(index_path(trace, None)).chain(cache.map(|dir| index_path(trace, Some(dir))));
    places.filter(|p| p.exists()).find_map(|p| IndexFile::open(&p, source.len(), mtime).ok().flatten())
}

/// A file's modification time, in nanoseconds since the epoch (0 if unknown).
fn mtime_ns(m: &fs::Metadata) -> u64 {
    m.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos() as u64)
}

/// Builds the index of `trace` at `place` (through a temporary file beside it), and opens it.
fn build_at(
    trace: &Path,
    place: &Path,
    len: u64,
    mtime: u64,
    options: &BuildOptions,
) -> Result<IndexFile, Error> {
    let dir = place.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let tmp = tempfile::Builder::new().prefix(".phview-").tempfile_in(dir).map_err(|e| Error::io(dir, e))?;
    let input = File::open(trace).map_err(|e| Error::io(trace, e))?;
    // Read ahead: a second thread reads the blocks and decompresses the groups.
    let reader = Reader::new(BufReader::with_capacity(1 << 16, input))
        .map_err(|source| Error::Trace { path: trace.to_owned(), source })?
        .read_ahead();
    let file = tmp.as_file().try_clone().map_err(|e| Error::io(tmp.path(), e))?;
    let out = file::IndexWriter::new(file, tmp.path(), len, mtime, options.block_records)?;
    build::build(reader, out, options)?;
    tmp.persist(place).map_err(|e| Error::io(place, e.error))?;
    match IndexFile::open(place, len, mtime)? {
        Some(index) => Ok(index),
        None => Err(Error::Index {
            path: place.to_owned(),
            offset: 0,
            what: "the index just built does not match".into(),
        }),
    }
}

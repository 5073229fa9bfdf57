//! Errors of the file reader and writer: what was wrong, and the byte offset where.
//!
//! An [`Error`] always names a byte offset in the file (for the writer: where the failing write
//! started), so a user can look at the bytes, and a truncated file says exactly how far it could be
//! read. [`ErrorKind`] says what was wrong; it is `#[non_exhaustive]` so later versions can add
//! kinds.

use std::fmt;
use std::path::Path;

use crate::DecodeError;

/// An error reading or writing a trace file.
#[derive(Debug, thiserror::Error)]
pub struct Error {
    kind: ErrorKind,
    /// A file offset, or a virtual one inside a compressed group (format 1.7), which `offset` and
    /// `decoded_offset` take apart (kept whole so the error stays as small as before).
    offset: u64,
    /// A boxed path, not a `PathBuf`: 16 bytes on every platform (a `PathBuf` is 32 on Windows,
    /// which made the exporters' `Result`s large there).
    path: Option<Box<Path>>,
    #[source]
    source: Option<std::io::Error>,
}

/// What was wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading or writing failed; the I/O error is the [`std::error::Error::source`].
    #[error("I/O error ({0:?})")]
    Io(std::io::ErrorKind),
    /// The file does not start with the Phosphor magic bytes.
    #[error("not a Phosphor trace file (bad magic bytes)")]
    BadMagic,
    /// The file's major version is newer than this reader.
    #[error("format version {major}.{minor} is not supported (this reader reads major version {supported})")]
    UnsupportedVersion {
        /// Major version found.
        major: u16,
        /// Minor version found.
        minor: u16,
        /// The major version this reader reads.
        supported: u16,
    },
    /// The file ends before the trailer: inside a block, or cleanly between two blocks. Everything
    /// before the error's offset was read.
    #[error("the file ends inside {what}: {needed} bytes needed, {available} present")]
    Truncated {
        /// What was being read (a block kind, or "block header").
        what: &'static str,
        /// Bytes needed.
        needed: u64,
        /// Bytes present.
        available: u64,
    },
    /// The first block is not the header.
    #[error("the first block has kind {found:#x}, not the header")]
    MissingHeader {
        /// The kind found.
        found: u32,
    },
    /// A block kind this reader does not know is marked critical (must be understood).
    #[error("unknown critical block kind {kind:#x}")]
    UnknownCriticalBlock {
        /// The kind found.
        kind: u32,
    },
    /// A block's content is inconsistent.
    #[error("malformed {what}: {detail}")]
    Malformed {
        /// The block kind or field.
        what: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// A record does not decode; the offset is the record's.
    #[error("{0}")]
    Decode(DecodeError),
    /// A record names a callsite id that no callsite table block defined before it.
    #[error("unknown callsite id {0}")]
    UnknownCallsite(u32),
    /// A string index is past the end of the string table read so far.
    #[error("string index {index} is not in the string table ({len} strings)")]
    UnknownString {
        /// The index found.
        index: u64,
        /// Strings in the table.
        len: usize,
    },
    /// A compressed group (format 1.7) names a codec this reader does not know.
    #[error("unknown compression codec {codec}")]
    UnknownCodec {
        /// The codec id found.
        codec: u8,
    },
    /// Bytes follow the trailer.
    #[error("data after the trailer")]
    TrailingData,
}

impl Error {
    /// An error at `offset`, a file offset or a virtual one (a place inside a compressed group,
    /// see [`VIRTUAL_OFFSET`](super::compress::VIRTUAL_OFFSET)), which [`Error::offset`] and
    /// [`Error::decoded_offset`] take apart.
    pub(crate) fn new(kind: ErrorKind, offset: u64) -> Error {
        Error { kind, offset, path: None, source: None }
    }

    /// An I/O error at `offset`, for code that drives a [`Writer`](super::Writer) or
    /// [`Reader`](super::Reader) and does its own I/O around it (opening, syncing a file).
    pub fn io(err: std::io::Error, offset: u64) -> Error {
        let mut e = Error::new(ErrorKind::Io(err.kind()), offset);
        e.source = Some(err);
        e
    }

    pub(crate) fn malformed(what: &'static str, detail: impl Into<String>, offset: u64) -> Error {
        Error::new(ErrorKind::Malformed { what, detail: detail.into() }, offset)
    }

    /// The same error, naming the file it came from.
    pub fn with_path(mut self, path: impl AsRef<Path>) -> Error {
        self.path = Some(path.as_ref().into());
        self
    }

    /// What was wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The byte offset in the file where the problem is; for a problem inside a compressed group
    /// (format 1.7), the group block's start.
    pub fn offset(&self) -> u64 {
        super::compress::split_virtual(self.offset).map_or(self.offset, |(group, _)| group)
    }

    /// For a problem inside a compressed group (format 1.7): the offset in the group's decoded
    /// bytes (the blocks it holds, as a plain file would have them); `None` otherwise.
    pub fn decoded_offset(&self) -> Option<u64> {
        super::compress::split_virtual(self.offset).map(|(_, inner)| inner)
    }

    /// The file, when known.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.path {
            write!(f, "{}: ", p.display())?;
        }
        match self.decoded_offset() {
            Some(d) => write!(
                f,
                "in the compressed group at byte {}, at decoded byte {d}: {}",
                self.offset(),
                self.kind
            )?,
            None => write!(f, "at byte {}: {}", self.offset, self.kind)?,
        }
        if let Some(e) = &self.source {
            write!(f, ": {e}")?;
        }
        Ok(())
    }
}

// The exporters' and the tools' errors embed this one, and clippy's `result_large_err` (128 bytes)
// must hold for them on every target: the same size everywhere (no `PathBuf`, whose size differs
// on Windows), checked at compile time.
const _: () = assert!(std::mem::size_of::<Error>() <= 72);

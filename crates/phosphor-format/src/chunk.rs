//! Chunk geometry.
//!
//! A chunk is one page: [`CHUNK_RECORDS`] records followed by a 32-byte header that holds the
//! chunk's extents (thread id, sequence number, committed record count). Writers store records
//! first and publish the committed count after them (XRay FDR's optimistic logging), so a reader
//! that trusts only the committed count never sees a half-written record.

use crate::record::RECORD_SIZE;

/// Bytes in one chunk, header included: one page.
pub const CHUNK_BYTES: usize = 4096;

/// Bytes of the extents header at the end of a chunk.
pub const CHUNK_HEADER_BYTES: usize = 32;

/// Records that fit in one chunk.
pub const CHUNK_RECORDS: usize = (CHUNK_BYTES - CHUNK_HEADER_BYTES) / RECORD_SIZE;

const _: () = assert!(CHUNK_RECORDS * RECORD_SIZE + CHUNK_HEADER_BYTES == CHUNK_BYTES);

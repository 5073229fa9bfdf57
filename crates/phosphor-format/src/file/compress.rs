//! Compressed groups (format 1.7): the codec a [`Writer`](super::Writer) compresses its blocks
//! with, and the group block's body.
//!
//! A compressed writer gathers the framed blocks it would have written (strings, callsites,
//! threads, chunks, aggregates, system; never the header or the trailer) into a group of about
//! [`GROUP_BYTES`], and writes the group as one block of kind
//! [`kind::COMPRESSED`](super::kind::COMPRESSED):
//!
//! ```text
//! offset  size  field
//!      0     1  codec           1 zstd, 2 LZ4 (block format); others: an error (the kind is critical)
//!      1     1  transform       0 none, 1 timestamp delta, 2 delta + byte shuffle (`transform.rs`)
//!      2     1  level           the zstd level, an i8 (informational; 0 for LZ4)
//!      3     1  reserved        0
//!      4     4  decoded_len     bytes of the framed blocks inside, at most MAX_GROUP_BYTES
//!      8        the compressed bytes
//! ```
//!
//! Decompressed and its transform undone, a group is a sequence of whole framed blocks. A reader
//! decompresses with a bounded API into at most `decoded_len` bytes, so a lying length or a
//! decompression bomb fails fast with bounded memory.

use std::fmt;
use std::str::FromStr;

use super::error::{Error, ErrorKind};
use super::transform::{self, Transform};

/// The uncompressed bytes at which a writer closes a group: 64 chunks of 4 KiB, where the
/// compression bench (`benches/compress.rs`) found the ratio levelling off.
pub(crate) const GROUP_BYTES: usize = 256 << 10;

/// The most decoded bytes a group may hold (4 MiB). A reader rejects a group declaring more, and
/// a writer writes a block longer than this plain, outside any group.
pub const MAX_GROUP_BYTES: u32 = 4 << 20;

/// Bytes of a group block's fields before the compressed bytes.
pub(crate) const GROUP_HEADER_BYTES: usize = 8;

/// The flag of a virtual offset: a place inside a compressed group, which
/// [`Chunk::offset`](super::Chunk::offset) gives for a chunk in a group and
/// [`Reader::chunk_at`](super::Reader::chunk_at) takes back. Below the flag, bits 23 to 62 are the
/// group block's file offset and bits 0 to 22 the offset inside its decoded bytes (which are at
/// most [`MAX_GROUP_BYTES`] = 2²², so a block's end fits too). File offsets never have the flag.
pub const VIRTUAL_OFFSET: u64 = 1 << 63;

/// Bits of a virtual offset that hold the offset inside the group.
const INNER_BITS: u32 = 23;

/// The largest file offset a group may start at to be addressed by virtual offsets (1 TiB).
pub(crate) const MAX_GROUP_OFFSET: u64 = (1 << (63 - INNER_BITS)) - 1;

/// The virtual offset of byte `inner` of the decoded group whose block starts at `group`
/// (`group` at most [`MAX_GROUP_OFFSET`], `inner` at most [`MAX_GROUP_BYTES`]).
pub(crate) fn virtual_offset(group: u64, inner: u64) -> u64 {
    debug_assert!(group <= MAX_GROUP_OFFSET && inner <= u64::from(MAX_GROUP_BYTES));
    VIRTUAL_OFFSET | group << INNER_BITS | inner
}

/// A virtual offset's parts: the group block's file offset and the offset inside the group's
/// decoded bytes; `None` for a plain file offset (see [`VIRTUAL_OFFSET`]).
pub fn split_virtual(offset: u64) -> Option<(u64, u64)> {
    (offset & VIRTUAL_OFFSET != 0)
        .then_some(((offset & !VIRTUAL_OFFSET) >> INNER_BITS, offset & ((1 << INNER_BITS) - 1)))
}

/// Codec ids in a group's first byte.
const CODEC_ZSTD: u8 = 1;
const CODEC_LZ4: u8 = 2;

/// How a [`Writer`](super::Writer) compresses the blocks it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Plain blocks, readable by every reader of format 1.x.
    #[default]
    None,
    /// zstd at `level` (negative levels are zstd's fast levels).
    Zstd {
        /// The zstd compression level.
        level: i32,
    },
    /// LZ4 (block format).
    Lz4,
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Compression::None => f.write_str("none"),
            Compression::Zstd { level } => write!(f, "zstd:{level}"),
            Compression::Lz4 => f.write_str("lz4"),
        }
    }
}

impl FromStr for Compression {
    type Err = String;

    /// `none`, `lz4`, `zstd` (level 1) or `zstd:LEVEL`.
    fn from_str(s: &str) -> Result<Compression, String> {
        match s {
            "none" => Ok(Compression::None),
            "lz4" => Ok(Compression::Lz4),
            "zstd" => Ok(Compression::Zstd { level: 1 }),
            _ => match s.strip_prefix("zstd:").map(str::parse::<i32>) {
                Some(Ok(level)) if (-7..=22).contains(&level) => Ok(Compression::Zstd { level }),
                _ => Err(format!(
                    "unknown compression {s:?}: expected none, lz4, zstd or zstd:LEVEL (-7 to 22)"
                )),
            },
        }
    }
}

/// Applies the pre-transform with id `transform` (the group block's second byte) to the framed
/// blocks in `group`, as a writer does before compressing them; `false` for an unknown id. For
/// the fuzz targets, which build groups from arbitrary blocks; not a stable interface.
#[doc(hidden)]
pub fn transform_group(group: &mut [u8], transform: u8) -> bool {
    match Transform::from_id(transform) {
        Some(t) => {
            transform::forward(group, t);
            true
        }
        None => false,
    }
}

/// Compresses groups: the codec's context, kept from one group to the next.
pub(crate) struct GroupEncoder {
    compression: Compression,
    transform: Transform,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    /// The group with its transform applied.
    scratch: Vec<u8>,
    /// The codec's output, as long as the longest bound so far.
    packed: Vec<u8>,
}

impl fmt::Debug for GroupEncoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupEncoder").field("compression", &self.compression).finish_non_exhaustive()
    }
}

impl GroupEncoder {
    /// An encoder for `compression`; `None` for [`Compression::None`].
    pub(crate) fn new(compression: Compression) -> Result<Option<GroupEncoder>, Error> {
        let (zstd, transform) = match compression {
            Compression::None => return Ok(None),
            Compression::Zstd { level } => {
                if !(-7..=22).contains(&level) {
                    return Err(Error::malformed(
                        "compression",
                        format!("zstd level {level} is not in -7 to 22"),
                        0,
                    ));
                }
                let c = zstd::bulk::Compressor::new(level).map_err(|e| Error::io(e, 0))?;
                // From level -1 up zstd finds the repeats itself and the byte shuffle costs it
                // ratio; its fast levels below take the shuffle as LZ4 does (BENCHMARKS.md,
                // "Compression": at -3, ratio 4.5 with the delta alone, 6.1 with the shuffle).
                (Some(c), if level >= -1 { Transform::Delta } else { Transform::DeltaShuffle })
            }
            Compression::Lz4 => (None, Transform::DeltaShuffle),
        };
        Ok(Some(GroupEncoder { compression, transform, zstd, scratch: Vec::new(), packed: Vec::new() }))
    }

    /// Appends the body of a group block holding the framed blocks `group` to `out`.
    pub(crate) fn encode(&mut self, group: &[u8], out: &mut Vec<u8>, offset: u64) -> Result<(), Error> {
        debug_assert!(group.len() <= MAX_GROUP_BYTES as usize);
        // Grown (and zeroed) only when a group is longer than any before.
        if self.scratch.len() < group.len() {
            self.scratch.resize(group.len(), 0);
        }
        let scratch = &mut self.scratch[..group.len()];
        transform::forward_into(group, scratch, self.transform);
        let (codec, level) = match self.compression {
            Compression::Zstd { level } => (CODEC_ZSTD, level as i8),
            _ => (CODEC_LZ4, 0),
        };
        out.extend_from_slice(&[codec, self.transform as u8, level as u8, 0]);
        out.extend_from_slice(&(group.len() as u32).to_le_bytes());
        let at = out.len();
        debug_assert_eq!(at, GROUP_HEADER_BYTES);
        // Into a slice of a buffer kept from group to group: it is zeroed once, when it grows,
        // rather than before every group.
        let bound = match self.zstd {
            Some(_) => zstd::zstd_safe::compress_bound(scratch.len()),
            None => lz4_flex::block::get_maximum_output_size(scratch.len()),
        };
        if self.packed.len() < bound {
            self.packed.resize(bound, 0);
        }
        let n = match &mut self.zstd {
            Some(z) => z
                .compress_to_buffer(&scratch[..], &mut self.packed[..bound])
                .map_err(|e| Error::io(e, offset))?,
            None => lz4_flex::block::compress_into(scratch, &mut self.packed[..bound])
                .map_err(|e| Error::malformed("compressed group", format!("LZ4: {e}"), offset))?,
        };
        out.extend_from_slice(&self.packed[..n]);
        Ok(())
    }
}

/// Decompresses groups, with a zstd context made on the first zstd group.
#[derive(Default)]
pub(crate) struct GroupDecoder {
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    /// The codec's output, before the transform is undone; zeroed only when it grows.
    raw: Vec<u8>,
}

impl fmt::Debug for GroupDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupDecoder").finish_non_exhaustive()
    }
}

impl GroupDecoder {
    /// Decodes the group block body `body` (at file offset `base`) into `out`, replacing its
    /// contents; returns the codec it was compressed with. `out` never grows past the declared
    /// length, which is at most [`MAX_GROUP_BYTES`].
    pub(crate) fn decode(&mut self, body: &[u8], base: u64, out: &mut Vec<u8>) -> Result<Compression, Error> {
        let what = "compressed group";
        if body.len() < GROUP_HEADER_BYTES {
            return Err(Error::malformed(
                what,
                format!("{} bytes, shorter than its {GROUP_HEADER_BYTES} bytes of fields", body.len()),
                base,
            ));
        }
        let codec = body[0];
        let transform = Transform::from_id(body[1])
            .ok_or_else(|| Error::malformed(what, format!("unknown transform {}", body[1]), base + 1))?;
        let len = u32::from_le_bytes(body[4..8].try_into().expect("4 bytes"));
        if len > MAX_GROUP_BYTES {
            return Err(Error::malformed(
                what,
                format!("decoded length {len} is over the limit of {MAX_GROUP_BYTES}"),
                base + 4,
            ));
        }
        let len = len as usize;
        let packed = &body[GROUP_HEADER_BYTES..];
        let at = base + GROUP_HEADER_BYTES as u64;
        // Room for `len` bytes and no more: a stream that decodes to more fails there, whatever
        // it claims, so a bomb costs at most MAX_GROUP_BYTES and the time to fill them.
        if self.raw.len() < len {
            self.raw.resize(len, 0);
        }
        let raw = &mut self.raw[..len];
        let (compression, got) = match codec {
            CODEC_ZSTD => {
                if self.zstd.is_none() {
                    self.zstd = Some(zstd::bulk::Decompressor::new().map_err(|e| Error::io(e, at))?);
                }
                let z = self.zstd.as_mut().expect("just made");
                let got = z
                    .decompress_to_buffer(packed, &mut raw[..])
                    .map_err(|e| Error::malformed(what, format!("zstd: {e}"), at))?;
                (Compression::Zstd { level: i32::from(body[2] as i8) }, got)
            }
            CODEC_LZ4 => {
                let got = lz4_flex::block::decompress_into(packed, raw)
                    .map_err(|e| Error::malformed(what, format!("LZ4: {e}"), at))?;
                (Compression::Lz4, got)
            }
            c => return Err(Error::new(ErrorKind::UnknownCodec { codec: c }, base)),
        };
        if got != len {
            return Err(Error::malformed(
                what,
                format!("decodes to {got} bytes, its header says {len}"),
                base + 4,
            ));
        }
        // Without `clear`: only bytes past the old length are zeroed, and every byte is written.
        out.resize(len, 0);
        transform::inverse_into(&self.raw[..len], out, transform);
        Ok(compression)
    }
}

#[cfg(test)]
mod tests {
    use super::Compression;

    #[test]
    fn compression_names_round_trip_and_bad_ones_are_refused() {
        for c in [
            Compression::None,
            Compression::Lz4,
            Compression::Zstd { level: 1 },
            Compression::Zstd { level: -3 },
        ] {
            assert_eq!(c.to_string().parse::<Compression>(), Ok(c));
        }
        assert_eq!("zstd".parse::<Compression>(), Ok(Compression::Zstd { level: 1 }));
        assert!("zstd:99".parse::<Compression>().is_err());
        assert!("gzip".parse::<Compression>().is_err());
    }
}

//! Compressed blocks (format 1.7): the codec a [`Writer`](super::Writer) compresses its blocks
//! with.
//!
//! Interface fixed ahead of the implementation (issue 24): until the block encoding lands, a
//! writer given any codec writes plain blocks, which every reader reads.

use std::fmt;
use std::str::FromStr;

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

//! Log levels, as stored in a log callsite's entry (byte 5) and filtered by the runtime and tools.

use core::fmt;
use core::str::FromStr;

/// How severe a log message is. More verbose levels compare greater, as in the `log` crate:
/// `Error < Warn < Info < Debug < Trace`, so "this level and more severe" is `level <= max`.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Something failed.
    Error = 1,
    /// Something may be wrong.
    Warn = 2,
    /// What the program is doing.
    Info = 3,
    /// Details for debugging.
    Debug = 4,
    /// Everything.
    Trace = 5,
}

impl Level {
    /// Every level, most severe first.
    pub const ALL: [Level; 5] = [Level::Error, Level::Warn, Level::Info, Level::Debug, Level::Trace];

    /// Decodes a level code (1..=5); 0 and others are not levels.
    pub const fn from_code(code: u8) -> Option<Level> {
        Some(match code {
            1 => Level::Error,
            2 => Level::Warn,
            3 => Level::Info,
            4 => Level::Debug,
            5 => Level::Trace,
            _ => return None,
        })
    }

    /// The lowercase name: `error`, `warn`, `info`, `debug`, `trace`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
            Level::Trace => "trace",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A string that names no level.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown log level {0:?} (expected error, warn, info, debug or trace)")]
pub struct ParseLevelError(pub String);

impl FromStr for Level {
    type Err = ParseLevelError;

    /// Parses a level name, ignoring case; `warning` is accepted for `warn`.
    fn from_str(s: &str) -> Result<Level, ParseLevelError> {
        let t = s.trim();
        Level::ALL
            .into_iter()
            .find(|l| t.eq_ignore_ascii_case(l.as_str()))
            .or_else(|| t.eq_ignore_ascii_case("warning").then_some(Level::Warn))
            .ok_or_else(|| ParseLevelError(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_from_severe_to_verbose_and_round_trip() {
        assert!(Level::Error < Level::Warn && Level::Debug < Level::Trace);
        for l in Level::ALL {
            assert_eq!(Level::from_code(l as u8), Some(l));
            assert_eq!(l.as_str().parse::<Level>(), Ok(l));
            assert_eq!(l.as_str().to_uppercase().parse::<Level>(), Ok(l));
        }
        assert_eq!("Warning".parse::<Level>(), Ok(Level::Warn));
        assert_eq!(Level::from_code(0), None);
        assert_eq!(Level::from_code(6), None);
        let e = "loud".parse::<Level>().unwrap_err();
        assert!(e.to_string().contains("\"loud\""), "{e}");
    }
}

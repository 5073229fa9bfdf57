//! What a point is to the registry: its kind ([`PointKind`]) and the selectors of the rules that
//! switch points on and off ([`PointSelector`]). Public as `phosphor::points::{PointKind,
//! PointSelector}`; they live here, below the recording path, because every callsite's metadata
//! carries its kind and the registry applies the rules.

use std::fmt;
use std::str::FromStr;

use phosphor_format::Phase;

use crate::error::{Error, ErrorKind};
use crate::registry::callsite::CallsiteMeta;
use crate::registry::category::glob_match;

/// What a point measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PointKind {
    /// A point in time (`trace_instant!`).
    Event,
    /// A begin/end pair or a span (`trace_scope!`, `trace_begin!`/`trace_end!`, `trace_complete!`,
    /// async slices, lock wait and hold times).
    Interval,
    /// A sampled value (`trace_counter!`).
    Counter,
    /// A value recorded in the current scope (`trace_data!`).
    Data,
    /// A log message with deferred formatting (`trace_log!`).
    Log,
    /// An in-process sum (`trace_sum!`), exported when the trace stops.
    Sum,
    /// An in-process log-linear histogram (`trace_histogram!`), exported when the trace stops.
    Histogram,
}

impl PointKind {
    /// The kind of a callsite recording events of `phase`.
    pub const fn of_phase(phase: Phase) -> PointKind {
        match phase {
            Phase::Instant => PointKind::Event,
            Phase::Counter => PointKind::Counter,
            Phase::Log => PointKind::Log,
            Phase::Data => PointKind::Data,
            Phase::Begin
            | Phase::End
            | Phase::Complete
            | Phase::AsyncBegin
            | Phase::AsyncEnd
            | Phase::LockWait
            | Phase::LockHeld => PointKind::Interval,
        }
    }

    /// A short lowercase name.
    pub const fn as_str(self) -> &'static str {
        match self {
            PointKind::Event => "event",
            PointKind::Interval => "interval",
            PointKind::Counter => "counter",
            PointKind::Data => "data",
            PointKind::Log => "log",
            PointKind::Sum => "sum",
            PointKind::Histogram => "histogram",
        }
    }
}

impl fmt::Display for PointKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which points a rule applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PointSelector {
    /// Points whose category matches the glob (`*` any run, `?` any one character).
    Category(String),
    /// Points whose name matches the glob.
    Name(String),
    /// The point with this id (see [`PointInfo::id`](crate::points::PointInfo::id)).
    Id(u32),
}

impl PointSelector {
    pub(crate) fn matches(&self, meta: &CallsiteMeta, id: u32) -> bool {
        match self {
            PointSelector::Category(g) => glob_match(g, meta.category),
            PointSelector::Name(g) => glob_match(g, meta.name),
            PointSelector::Id(want) => id != 0 && id == *want,
        }
    }
}

/// Parses `category=GLOB`, `name=GLOB` or `id=N`; a bare glob selects by category.
impl FromStr for PointSelector {
    type Err = Error;

    fn from_str(s: &str) -> Result<PointSelector, Error> {
        let bad = |reason: &str| {
            Error::new(ErrorKind::InvalidPointSelector { spec: s.to_owned(), reason: reason.to_owned() })
        };
        let (key, value) = match s.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => ("category", s.trim()),
        };
        if value.is_empty() {
            return Err(bad("the pattern is empty"));
        }
        match key {
            "category" | "cat" => Ok(PointSelector::Category(value.to_owned())),
            "name" => Ok(PointSelector::Name(value.to_owned())),
            "id" => value.parse().map(PointSelector::Id).map_err(|_| bad("an id is a decimal number")),
            _ => Err(bad("expected category=GLOB, name=GLOB or id=N")),
        }
    }
}

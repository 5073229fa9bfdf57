//! Scope checks, as Palanteer makes them: the scopes of a thread that do not nest.
//!
//! * **End without a begin**: an end with nothing open on its thread (expected at the start of a
//!   ring buffer's trace, whose oldest chunks were overwritten).
//! * **Wrong name**: an end closes the innermost open begin of its thread whatever its name, as
//!   viewers (Perfetto, chrome://tracing) draw it; when the names differ, that is reported.
//! * **Left open**: a begin still open when the thread's events run out.
//! * **Interlaced**: a scope (complete, lock, or begin/end) that partially overlaps a sibling
//!   instead of nesting in it or beside it.
//! * **Late parent**: a scope that encloses scopes whose paths were fixed before it arrived,
//!   because its thread held more pending scopes than the limit (the nesting's pending limit,
//!   `phosphor_export::StatsBuilder::pending_limit` for the statistics); they were counted
//!   without its name.
//!
//! The nesting ([`crate::nesting`]) finds them as [`ProblemKind`]s, with labels;
//! [`ScopeProblemKind::new`] names them, for the statistics (`phosphor stats`) and the SQL
//! `problems` table alike, so both say the same thing in the same words.

use std::fmt;

use crate::nesting::{Label, ProblemKind};

/// A scope that does not nest, on one thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeProblem {
    /// The thread.
    pub tid: u32,
    /// When, in nanoseconds since the trace's clock origin (the Chrome export's `ts` × 1000): the
    /// end for an end, the begin for a begin left open, where the overlap starts for interlaced
    /// scopes, the start of a late parent.
    pub at_ns: i64,
    /// What does not nest.
    pub kind: ScopeProblemKind,
}

/// The kinds of [`ScopeProblem`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScopeProblemKind {
    /// An end closed the innermost open begin, which has another name.
    WrongName {
        /// The innermost open begin's name.
        open: String,
        /// The end's name.
        end: String,
    },
    /// An end came while nothing was open on its thread.
    EndWithoutBegin {
        /// The end's name.
        end: String,
    },
    /// A begin was never closed.
    LeftOpen {
        /// The begin's name.
        open: String,
    },
    /// A scope partially overlaps a sibling.
    Interlaced {
        /// The scope that arrived second.
        scope: String,
        /// The sibling it overlaps.
        other: String,
    },
    /// A scope enclosing scopes already counted without its name (the pending limit was reached).
    LateParent {
        /// The scope.
        scope: String,
    },
}

impl ScopeProblemKind {
    /// The nesting's `kind`, its labels named by `name`.
    pub fn new(kind: ProblemKind, name: impl Fn(Label) -> String) -> ScopeProblemKind {
        match kind {
            ProblemKind::WrongName { open, end } => {
                ScopeProblemKind::WrongName { open: name(open), end: name(end) }
            }
            ProblemKind::EndWithoutBegin { end } => ScopeProblemKind::EndWithoutBegin { end: name(end) },
            ProblemKind::LeftOpen { open } => ScopeProblemKind::LeftOpen { open: name(open) },
            ProblemKind::Interlaced { scope, other } => {
                ScopeProblemKind::Interlaced { scope: name(scope), other: name(other) }
            }
            ProblemKind::LateParent { scope } => ScopeProblemKind::LateParent { scope: name(scope) },
        }
    }

    /// The names the problem is about, each with its role (`open`, `end`, `scope`, `other`: the
    /// keys of `phosphor stats --json`'s problems, in their order).
    pub fn names(&self) -> Vec<(&'static str, &str)> {
        match self {
            ScopeProblemKind::WrongName { open, end } => vec![("open", open), ("end", end)],
            ScopeProblemKind::EndWithoutBegin { end } => vec![("end", end)],
            ScopeProblemKind::LeftOpen { open } => vec![("open", open)],
            ScopeProblemKind::Interlaced { scope, other } => vec![("scope", scope), ("other", other)],
            ScopeProblemKind::LateParent { scope } => vec![("scope", scope)],
        }
    }

    /// A short identifier: `wrong_name`, `end_without_begin`, `left_open`, `interlaced`,
    /// `late_parent` (the JSON's `kind`).
    pub fn as_str(&self) -> &'static str {
        match self {
            ScopeProblemKind::WrongName { .. } => "wrong_name",
            ScopeProblemKind::EndWithoutBegin { .. } => "end_without_begin",
            ScopeProblemKind::LeftOpen { .. } => "left_open",
            ScopeProblemKind::Interlaced { .. } => "interlaced",
            ScopeProblemKind::LateParent { .. } => "late_parent",
        }
    }
}

impl fmt::Display for ScopeProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScopeProblemKind::WrongName { open, end } => {
                write!(f, "end {end:?} closes the open begin {open:?}")
            }
            ScopeProblemKind::EndWithoutBegin { end } => write!(f, "end {end:?} with no begin open"),
            ScopeProblemKind::LeftOpen { open } => write!(f, "begin {open:?} never ends"),
            ScopeProblemKind::Interlaced { scope, other } => {
                write!(f, "{scope:?} overlaps its sibling {other:?} without nesting")
            }
            ScopeProblemKind::LateParent { scope } => write!(
                f,
                "{scope:?} encloses scopes already counted without it (more pending than the limit)"
            ),
        }
    }
}

//! Begin/end matching: one stack of open slices per thread.
//!
//! A [`Phase::End`](phosphor::Phase::End) closes the innermost open
//! [`Phase::Begin`](phosphor::Phase::Begin) of its thread, whatever its name: that is how viewers
//! (Perfetto, chrome://tracing) draw it. So the checker closes it too, and reports the end as a
//! [`MismatchKind::WrongName`] when the names differ. An end with nothing open, and a begin still
//! open when the thread's events run out, are mismatches as well. Only a matching pair yields a
//! duration.
//!
//! A thread's events arrive in the order it recorded them (`Trace::events`), which is all a
//! per-thread stack needs. In a Ring trace the oldest chunks were overwritten, so ends whose begin
//! was lost are expected there.

use std::collections::HashMap;

/// A begin/end pair that does not line up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The thread.
    pub tid: u32,
    /// When, in nanoseconds since the trace's first event: the end, or for
    /// [`MismatchKind::LeftOpen`] the begin.
    pub at_ns: u64,
    /// What does not line up.
    pub kind: MismatchKind,
}

/// The kinds of [`Mismatch`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MismatchKind {
    /// An end closed the innermost open begin, which has another name.
    WrongName {
        /// The innermost open begin's name.
        open: &'static str,
        /// The end's name.
        end: &'static str,
    },
    /// An end came while nothing was open on its thread.
    EndWithoutBegin {
        /// The end's name.
        end: &'static str,
    },
    /// A begin was never closed.
    LeftOpen {
        /// The begin's name.
        open: &'static str,
    },
}

impl std::fmt::Display for MismatchKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MismatchKind::WrongName { open, end } => {
                write!(f, "end {end:?} closes the open begin {open:?}")
            }
            MismatchKind::EndWithoutBegin { end } => write!(f, "end {end:?} with no begin open"),
            MismatchKind::LeftOpen { open } => write!(f, "begin {open:?} never ends"),
        }
    }
}

/// A mismatch before timestamps are made relative to the trace's start.
pub(crate) struct RawMismatch {
    pub(crate) tid: u32,
    pub(crate) ts: u64,
    pub(crate) kind: MismatchKind,
}

struct Open {
    name: &'static str,
    kind: usize,
    ts: u64,
}

/// The per-thread stacks, and the mismatches found so far.
#[derive(Default)]
pub(crate) struct ScopeChecker {
    stacks: HashMap<u32, Vec<Open>>,
    found: Vec<RawMismatch>,
}

impl ScopeChecker {
    /// Opens a slice of stats kind `kind` on `tid`.
    pub(crate) fn begin(&mut self, tid: u32, name: &'static str, kind: usize, ts: u64) {
        self.stacks.entry(tid).or_default().push(Open { name, kind, ts });
    }

    /// Closes the innermost open slice of `tid`. Returns the begin's kind and the slice's duration
    /// in ticks when the names match.
    pub(crate) fn end(&mut self, tid: u32, name: &'static str, ts: u64) -> Option<(usize, u64)> {
        let Some(open) = self.stacks.get_mut(&tid).and_then(Vec::pop) else {
            self.found.push(RawMismatch { tid, ts, kind: MismatchKind::EndWithoutBegin { end: name } });
            return None;
        };
        if open.name == name {
            return Some((open.kind, ts.saturating_sub(open.ts)));
        }
        self.found.push(RawMismatch {
            tid,
            ts,
            kind: MismatchKind::WrongName { open: open.name, end: name },
        });
        None
    }

    /// Every mismatch, the begins left open included, in thread order and then time order.
    pub(crate) fn finish(mut self) -> Vec<RawMismatch> {
        for (tid, stack) in self.stacks {
            let left = stack.into_iter().map(|o| RawMismatch {
                tid,
                ts: o.ts,
                kind: MismatchKind::LeftOpen { open: o.name },
            });
            self.found.extend(left);
        }
        self.found.sort_by_key(|m| (m.tid, m.ts));
        self.found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_end_closes_the_innermost_begin_even_when_its_name_differs() {
        let mut c = ScopeChecker::default();
        c.begin(1, "outer", 0, 10);
        c.begin(1, "inner", 1, 20);
        assert_eq!(c.end(1, "outer", 30), None);
        // "inner" was closed by the wrong end, so this end matches "outer".
        assert_eq!(c.end(1, "outer", 45), Some((0, 35)));
        let found = c.finish();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].kind, MismatchKind::WrongName { open: "inner", end: "outer" });
        assert_eq!(found[0].ts, 30);
    }

    #[test]
    fn threads_have_separate_stacks() {
        let mut c = ScopeChecker::default();
        c.begin(1, "a", 0, 1);
        assert_eq!(c.end(2, "a", 2), None);
        let found = c.finish();
        let kinds: Vec<_> = found.iter().map(|m| (m.tid, m.kind.clone())).collect();
        assert_eq!(
            kinds,
            [(1, MismatchKind::LeftOpen { open: "a" }), (2, MismatchKind::EndWithoutBegin { end: "a" })]
        );
    }
}

//! Which spans are kept, and the sampling that decides which traces are.
//!
//! Three stages, each counted apart ([`AssembleStats`](crate::assemble::AssembleStats)):
//!
//! 1. **Head sampling** ([`Sampling`], counted in `spans_sampled_out`), decided at a tree's root
//!    before anything else: a subtree joining a caller's trace (a recorded `traceparent`) follows
//!    the caller's sampled flag (parent-based: an unsampled caller's spans are not exported unless
//!    [`Sampling::export_unsampled_callers`]); every other tree is kept when its root's own trace
//!    id falls under [`Sampling::ratio`] (its last 8 bytes as a big-endian number below `ratio`
//!    × 2⁶⁴, the same decision for the same file every time; the root's own id, the trace id with
//!    `--otlp-group-roots none`, so that grouped roots are still sampled one by one).
//! 2. **Tail sampling** ([`TailRules`], counted in `spans_tail_dropped`) on whole final trees: a
//!    tree is kept when any of its spans lasts at least [`TailRules::slower_than_ns`] or holds an
//!    error-level log ([`TailRules::errors`]); the others, when
//!    [`TailRules::slowest_per_minute`] is set, compete for the N places of their root's name in
//!    their root's minute (a bounded heap per name and minute, emitted when the minute is over).
//! 3. **Selection** (the per-span rules of [`Selection`], counted in `spans_unselected`).
//!
//! The rules apply to whole trees: the [`Assembler`](crate::assemble::Assembler) hands a root
//! with its subtree to [`Selection::keeps`] once the root is final. A kept span whose parent is
//! left out is re-parented to its nearest kept ancestor (or becomes a root when none is kept), so
//! a trace viewer still shows it inside the work it belongs to; its trace id stays its root's.

use phosphor_format::glob_match;

/// Selection rules (all that are set must hold).
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Only spans at least this long (ns).
    pub min_duration_ns: Option<u64>,
    /// Only root spans (no parent in the trace).
    pub roots_only: bool,
    /// Only spans whose scope path (the names of the enclosing scopes, outermost first, then the
    /// span's own, joined by `/`: `frame/update/physics`, as `phosphor stats` prints paths)
    /// matches one of these globs (`*` any run, `?` one char). A path longer than
    /// [`MAX_PATH_BYTES`](crate::assemble::MAX_PATH_BYTES) matches none.
    pub paths: Vec<String>,
    /// Tail rule: only the slowest N roots, with their subtrees.
    pub slowest_roots: Option<usize>,
    /// Head sampling.
    pub sampling: Sampling,
    /// Tail sampling.
    pub tail: TailRules,
}

/// Head sampling: which traces are kept before their spans are looked at.
#[derive(Clone, Debug, Default)]
pub struct Sampling {
    /// The share of the trees of the program's own traces kept (`None`: all), decided on the root's
    /// trace id.
    pub ratio: Option<f64>,
    /// Export the spans of a caller whose `traceparent` says "not sampled" (default: left out,
    /// as the caller's own tracer leaves its spans out).
    pub export_unsampled_callers: bool,
}

impl Sampling {
    /// Whether a tree whose root's own trace id is `trace_id` is kept by the ratio.
    pub fn keeps_trace(&self, trace_id: &[u8; 16]) -> bool {
        let Some(ratio) = self.ratio else { return true };
        if ratio >= 1.0 {
            return true;
        }
        if ratio.is_nan() || ratio <= 0.0 {
            return false;
        }
        let mut low = [0; 8];
        low.copy_from_slice(&trace_id[8..]);
        // A ratio below 1 is below 2^64 once scaled: the cast saturates at most at u64::MAX.
        (u64::from_be_bytes(low) as f64) < ratio * 18_446_744_073_709_551_616.0
    }

    /// Whether a subtree joining a caller's trace with these W3C trace flags is kept.
    pub fn keeps_caller(&self, flags: u8) -> bool {
        flags & 1 != 0 || self.export_unsampled_callers
    }
}

/// Tail sampling: which whole traces are kept once they are final.
#[derive(Clone, Debug, Default)]
pub struct TailRules {
    /// Keep a tree when any of its spans lasts at least this long (ns).
    pub slower_than_ns: Option<u64>,
    /// Keep a tree when any of its spans holds an error-level log.
    pub errors: bool,
    /// Keep (of the trees no rule above keeps) the N slowest per root name and minute.
    pub slowest_per_minute: Option<usize>,
}

impl TailRules {
    /// Whether any tail rule is set.
    pub fn any(&self) -> bool {
        self.slower_than_ns.is_some() || self.errors || self.slowest_per_minute.is_some()
    }

    /// Whether a tree whose longest span lasts `longest_ns`, holding an error-level log when
    /// `error`, is kept outright (`false`: it is ranked, or dropped when no ranking is set).
    pub fn keeps(&self, longest_ns: u64, error: bool) -> bool {
        self.slower_than_ns.is_some_and(|min| longest_ns >= min) || (self.errors && error)
    }
}

impl Selection {
    /// Whether a span of `duration_ns` at scope path `path` (a root when `root`) is kept by the
    /// per-span rules (everything but [`Selection::slowest_roots`], which ranks whole trees).
    pub fn keeps(&self, path: &str, duration_ns: u64, root: bool) -> bool {
        if self.roots_only && !root {
            return false;
        }
        if self.min_duration_ns.is_some_and(|min| duration_ns < min) {
            return false;
        }
        self.paths.is_empty() || self.paths.iter().any(|g| glob_match(g, path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_that_is_set_must_hold() {
        let all = Selection::default();
        assert!(all.keeps("a/b", 0, false));
        let s = Selection {
            min_duration_ns: Some(10),
            roots_only: false,
            paths: vec!["frame/*".into(), "x".into()],
            ..Selection::default()
        };
        assert!(s.keeps("frame/update", 10, false));
        assert!(!s.keeps("frame/update", 9, false));
        assert!(!s.keeps("frame", 100, true));
        assert!(s.keeps("x", 100, true));
        let roots = Selection { roots_only: true, ..Selection::default() };
        assert!(roots.keeps("a", 0, true));
        assert!(!roots.keeps("a/b", 0, false));
    }

    #[test]
    fn the_ratio_keeps_about_its_share_of_trace_ids_and_the_same_ones_every_time() {
        let ids: Vec<[u8; 16]> = (0..10_000u64)
            .map(|n| {
                let mut id = [0; 16];
                // Spread over the whole range, as the ids' mixer spreads them.
                id[8..].copy_from_slice(&n.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
                id
            })
            .collect();
        let tenth = Sampling { ratio: Some(0.1), ..Sampling::default() };
        let kept = ids.iter().filter(|id| tenth.keeps_trace(id)).count();
        assert!((900..=1100).contains(&kept), "{kept}");
        let again = ids.iter().filter(|id| tenth.keeps_trace(id)).count();
        assert_eq!(kept, again);
        // A larger ratio keeps a superset.
        let half = Sampling { ratio: Some(0.5), ..Sampling::default() };
        assert!(ids.iter().all(|id| !tenth.keeps_trace(id) || half.keeps_trace(id)));
        assert!(ids.iter().all(|id| Sampling::default().keeps_trace(id)));
        let none = Sampling { ratio: Some(0.0), ..Sampling::default() };
        assert!(ids.iter().all(|id| !none.keeps_trace(id)));
    }

    #[test]
    fn an_unsampled_caller_is_left_out_unless_asked_for() {
        let s = Sampling::default();
        assert!(s.keeps_caller(0x01));
        assert!(!s.keeps_caller(0x00));
        assert!(!s.keeps_caller(0x02));
        let all = Sampling { export_unsampled_callers: true, ..Sampling::default() };
        assert!(all.keeps_caller(0x00));
    }

    #[test]
    fn a_tail_rule_keeps_slow_or_failing_trees() {
        let t = TailRules { slower_than_ns: Some(100), errors: true, slowest_per_minute: None };
        assert!(t.keeps(100, false));
        assert!(!t.keeps(99, false));
        assert!(t.keeps(0, true));
        let slow = TailRules { slower_than_ns: Some(100), ..TailRules::default() };
        assert!(!slow.keeps(0, true));
    }
}

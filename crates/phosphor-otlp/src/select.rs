//! Which spans are kept.
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
            slowest_roots: None,
        };
        assert!(s.keeps("frame/update", 10, false));
        assert!(!s.keeps("frame/update", 9, false));
        assert!(!s.keeps("frame", 100, true));
        assert!(s.keeps("x", 100, true));
        let roots = Selection { roots_only: true, ..Selection::default() };
        assert!(roots.keeps("a", 0, true));
        assert!(!roots.keeps("a/b", 0, false));
    }
}

//! Which spans are kept. INTERFACE (session 34 lead): owner helper A.

/// Selection rules (all that are set must hold).
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Only spans at least this long (ns).
    pub min_duration_ns: Option<u64>,
    /// Only root spans (no parent in the trace).
    pub roots_only: bool,
    /// Only spans whose scope path (`category/name;category/name;...`, outermost first, as
    /// `phosphor stats` prints paths) matches one of these globs (`*` any run, `?` one char).
    pub paths: Vec<String>,
    /// Tail rule: only the slowest N roots, with their subtrees.
    pub slowest_roots: Option<usize>,
}

//! Allocation counting: `phosphor::alloc::Traced`, a wrapper global allocator (issue 23).
//!
//! Placeholder of the interface the rest of the runtime uses; the allocator itself lands with
//! its own commit.

use phosphor_format::system::HeapCounter;

/// The process's allocation totals so far (`time_ns` left 0 for the caller to fill), or `None`
/// when `Traced` is not the global allocator.
#[allow(dead_code)]
pub(crate) fn heap_totals() -> Option<HeapCounter> {
    None
}

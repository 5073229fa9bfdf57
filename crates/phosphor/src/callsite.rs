//! Callsites: the static metadata of each macro invocation, and its cached enabled state.
//!
//! # What is a callsite?
//!
//! Every `trace_*!` macro expands to a `static` [`Callsite`] holding what never changes about that
//! line of code: category, name, phase, argument names, file and line, and an FNV-1a 64 hash of the
//! name computed at compile time (Palanteer's static strings). The record written at run time then
//! carries only the callsite's 32-bit id.
//!
//! # The cached state
//!
//! Deciding whether a category is enabled means matching globs, far too dear for every event. So,
//! as in Couchbase Phosphor, each callsite caches the answer. Its `state` word packs:
//!
//! ```text
//! bits  0..32  enabled: bit s is set while TraceLog slot s traces this callsite's category
//! bits 32..64  id: assigned at registration; 0 while unregistered
//! ```
//!
//! The macro tests its log's bit with one relaxed load. An unregistered callsite starts with every
//! enabled bit set, so its first event falls into the enabled path, which sees id 0 and registers
//! it (a `#[cold]` path taking the registry lock once per callsite); then the bits are exact.
//! `TraceLog::start` and `stop` rewrite the bits of every registered callsite under the same lock,
//! so a callsite can never miss a change.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

pub use phosphor_format::fnv1a64;
use phosphor_format::{Phase, FIRST_CALLSITE_ID};

use crate::category::CategoryFilter;
use crate::MAX_LOGS;

const ENABLED_MASK: u64 = 0xffff_ffff;
const UNREGISTERED: u64 = ENABLED_MASK;

/// The static description of one instrumentation point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallsiteMeta {
    /// Category, matched against the trace's category globs.
    pub category: &'static str,
    /// Event name (for logs, the format string).
    pub name: &'static str,
    /// What the callsite records.
    pub phase: Phase,
    /// Argument names, `""` where absent.
    pub arg_names: [&'static str; 2],
    /// Source file.
    pub file: &'static str,
    /// Source line.
    pub line: u32,
    /// FNV-1a 64 hash of `name`: the name's id across processes.
    pub name_hash: u64,
}

impl CallsiteMeta {
    /// Builds callsite metadata; used by the macros in a `static` initializer.
    pub const fn new(
        category: &'static str,
        name: &'static str,
        phase: Phase,
        arg_names: [&'static str; 2],
        file: &'static str,
        line: u32,
    ) -> CallsiteMeta {
        CallsiteMeta { category, name, phase, arg_names, file, line, name_hash: fnv1a64(name.as_bytes()) }
    }
}

/// A registered-on-first-use instrumentation point. Created by the macros as a `static`.
#[derive(Debug)]
pub struct Callsite {
    state: AtomicU64,
    meta: CallsiteMeta,
}

impl Callsite {
    /// A new, unregistered callsite.
    pub const fn new(meta: CallsiteMeta) -> Callsite {
        Callsite { state: AtomicU64::new(UNREGISTERED), meta }
    }

    /// The static metadata.
    pub fn meta(&self) -> &CallsiteMeta {
        &self.meta
    }

    /// The registered id, registering the callsite if it is not yet.
    pub fn id(&'static self) -> u32 {
        let s = self.state.load(Ordering::Relaxed);
        if s >> 32 == 0 {
            (register(self) >> 32) as u32
        } else {
            (s >> 32) as u32
        }
    }

    /// The cached state word. Relaxed: the word is self-contained (id and enabled bits); no other
    /// memory is read on the strength of it.
    #[inline(always)]
    #[doc(hidden)]
    pub fn state(&self) -> u64 {
        self.state.load(Ordering::Relaxed)
    }
}

/// The id of a registered state word, or `None` (cold path: register and re-check) if the callsite
/// is still unregistered.
#[inline(always)]
pub(crate) fn registered_id(state: u64) -> Option<u32> {
    let id = (state >> 32) as u32;
    if id == 0 {
        None
    } else {
        Some(id)
    }
}

/// Whether `state` enables slot `slot`.
#[inline(always)]
pub(crate) fn enabled_in(state: u64, slot: u32) -> bool {
    state & (1 << slot) != 0
}

/// Every static callsite of the program, gathered by the linker: each macro invocation adds a
/// pointer to its `static` [`Callsite`] to this slice, so [`points`](crate::points) can list them
/// all before any has run.
///
/// `linkme` supports the platforms named in the `cfg` below. Elsewhere the slice does not exist and
/// callsites are registered on their first event only, so a listing shows just those that ran
/// (the documented fallback).
#[cfg(any(
    target_os = "linux",
    target_os = "android",
    target_os = "macos",
    target_os = "ios",
    target_os = "windows",
    target_os = "freebsd",
    target_os = "openbsd",
    target_os = "illumos"
))]
#[linkme::distributed_slice]
pub static CALLSITES: [&'static Callsite];

/// Internal: adds a callsite to [`CALLSITES`].
#[cfg(any(
    target_os = "linux",
    target_os = "android",
    target_os = "macos",
    target_os = "ios",
    target_os = "windows",
    target_os = "freebsd",
    target_os = "openbsd",
    target_os = "illumos"
))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_register {
    ($cs:ident) => {
        // In an anonymous const, so that two callsites of one block don't clash.
        const _: () = {
            #[$crate::__macro_support::linkme::distributed_slice($crate::__macro_support::CALLSITES)]
            #[linkme(crate = $crate::__macro_support::linkme)]
            static __PHOSPHOR_REGISTERED: &$crate::__macro_support::Callsite = &$cs;
        };
    };
}

/// Internal: no linker section on this platform; callsites register on their first event.
#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    target_os = "macos",
    target_os = "ios",
    target_os = "windows",
    target_os = "freebsd",
    target_os = "openbsd",
    target_os = "illumos"
)))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_register {
    ($cs:ident) => {};
}

struct Registry {
    callsites: Vec<&'static Callsite>,
    filters: [Option<Arc<CategoryFilter>>; MAX_LOGS],
}

static REGISTRY: Mutex<Registry> =
    Mutex::new(Registry { callsites: Vec::new(), filters: [const { None }; MAX_LOGS] });

fn registry() -> MutexGuard<'static, Registry> {
    // A panic while holding the lock leaves the registry consistent (each step is a push or a
    // store), so a poisoned lock is safe to keep using.
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

fn mask_for(filters: &[Option<Arc<CategoryFilter>>; MAX_LOGS], category: &str) -> u64 {
    let mut mask = 0;
    for (slot, f) in filters.iter().enumerate() {
        if f.as_ref().is_some_and(|f| f.matches(category)) {
            mask |= 1 << slot;
        }
    }
    mask
}

/// Registers `cs` and returns its new state word. Runs once per callsite.
#[cold]
#[inline(never)]
pub(crate) fn register(cs: &'static Callsite) -> u64 {
    let mut reg = registry();
    let s = cs.state.load(Ordering::Relaxed);
    if s >> 32 != 0 {
        return s; // another thread registered it first
    }
    let id = FIRST_CALLSITE_ID + reg.callsites.len() as u32;
    reg.callsites.push(cs);
    let state = (u64::from(id) << 32) | mask_for(&reg.filters, cs.meta.category);
    // Relaxed: the word is self-contained; the registry lock orders it against start/stop.
    cs.state.store(state, Ordering::Relaxed);
    state
}

/// Enables `filter`'s categories for `slot` on every callsite, present and future.
pub(crate) fn enable_slot(slot: u32, filter: Arc<CategoryFilter>) {
    let mut reg = registry();
    let bit = 1u64 << slot;
    for cs in &reg.callsites {
        // Relaxed: see `Callsite::state`.
        if filter.matches(cs.meta.category) {
            cs.state.fetch_or(bit, Ordering::Relaxed);
        } else {
            cs.state.fetch_and(!bit, Ordering::Relaxed);
        }
    }
    reg.filters[slot as usize] = Some(filter);
}

/// Disables `slot` on every callsite.
pub(crate) fn disable_slot(slot: u32) {
    let mut reg = registry();
    reg.filters[slot as usize] = None;
    for cs in &reg.callsites {
        // Relaxed: see `Callsite::state`.
        cs.state.fetch_and(!(1u64 << slot), Ordering::Relaxed);
    }
}

/// Every registered callsite, indexed by `id - FIRST_CALLSITE_ID`.
pub(crate) fn snapshot() -> Vec<&'static Callsite> {
    registry().callsites.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unregistered_callsite_registers_on_first_id_lookup() {
        static CS: Callsite =
            Callsite::new(CallsiteMeta::new("test", "reg", Phase::Instant, ["", ""], file!(), line!()));
        assert_eq!(registered_id(CS.state()), None);
        assert!(enabled_in(CS.state(), 5), "unregistered callsites take the enabled path once");
        let id = CS.id();
        assert!(id >= FIRST_CALLSITE_ID);
        assert_eq!(registered_id(CS.state()), Some(id));
        assert_eq!(CS.id(), id);
        assert!(snapshot().iter().any(|c| std::ptr::eq(*c, &CS)));
    }
}

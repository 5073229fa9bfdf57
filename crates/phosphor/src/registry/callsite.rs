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
//! bits 32..63  id: assigned at registration; 0 while unregistered (ids stay below 2^31)
//! bit  63      armed: the callsite's events need the out-of-line path: a running trace has a
//!              trigger that watches it, or it is a scope that a trace counting allocations takes
//! ```
//!
//! The macro tests its log's bit with one relaxed load. After the event is written, the armed bit
//! (tested on the same loaded word, so an unarmed callsite pays one bit test) sends it out of
//! line to the trigger check (`trace_log/trigger.rs`), which finds the callsite's triggers in its
//! `triggers` mask: bit k for the process's trigger slot k. An unregistered callsite starts with every
//! enabled bit set, so its first event falls into the enabled path, which sees id 0 and registers
//! it (a `#[cold]` path taking the registry lock once per callsite); then the bits are exact.
//! `TraceLog::start` and `stop` rewrite the bits of every registered callsite under the same lock,
//! so a callsite can never miss a change.
//!
//! The allocations of scopes (issue 23) share the armed bit rather than taking a bit of their own:
//! it is also set on every complete-slice callsite that a slot counting allocations takes. So a
//! scope that no trigger watches and no counting trace takes pays exactly what it did before
//! counting existed: at open, one compare of the id half (registered and unarmed, see
//! `instrument::emit::check_scope`); at close, the one test of the armed bit. The out-of-line
//! path tells the two reasons apart: the callsite's `triggers` mask, and [`counts_allocations`]
//! for its own log's slot.
//!
//! The registry that gives the ids and rewrites the states (its table, filters, rules and trigger
//! selectors, under one lock) is `table.rs`; its functions are re-exported here.

use std::sync::atomic::{AtomicU64, Ordering};

pub use phosphor_format::fnv1a64;
use phosphor_format::{Level, Phase};

use crate::registry::aggregate::AggregateRef;
pub(crate) use crate::registry::crash_list::by_id;
#[cfg(target_os = "linux")]
pub(crate) use crate::registry::crash_list::crash_list;
use crate::registry::point::PointKind;
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
pub(crate) use crate::registry::table::HELD_HOOK;
pub use crate::registry::table::MAX_DYNAMIC_POINTS;
pub(crate) use crate::registry::table::{
    add_rule, aggregate_snapshots, clear_rules, count_refused, disable_slot, dynamic, enable_slot, list_all,
    register, registrations_refused, set_trigger, snapshot, Rule, SlotFilter, TriggerSelector, Watch,
};
#[cfg(unix)]
pub(crate) use crate::registry::table::{set_ring, ForkLock};

pub(super) const ENABLED_MASK: u64 = 0xffff_ffff;
pub(super) const UNREGISTERED: u64 = ENABLED_MASK;
/// The armed bit of the state word.
pub(crate) const ARMED: u64 = 1 << 63;
/// The id bits of the state word, once shifted down.
pub(super) const ID_MASK: u32 = 0x7fff_ffff;
/// The most trigger slots of the process (one bit each in a callsite's `triggers` mask).
pub const MAX_TRIGGERS: usize = 64;

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
    /// What the point measures.
    pub kind: PointKind,
    /// Whether each event's name is its argument 0, chosen at run time (`dyn` names); `name` is
    /// then the expression's text.
    pub dynamic_name: bool,
    /// Whether each event is a complete slice whose argument 0 is the id of the async slice (of
    /// the same category and name) it works for: one poll of an instrumented future.
    pub flow: bool,
    /// The level of a log callsite (`trace_log!`, whose name is the format string).
    pub level: Option<Level>,
    /// The in-process aggregate of a `trace_sum!` or `trace_histogram!` point.
    pub aggregate: Option<AggregateRef>,
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
        CallsiteMeta {
            category,
            name,
            phase,
            arg_names,
            file,
            line,
            name_hash: fnv1a64(name.as_bytes()),
            kind: PointKind::of_phase(phase),
            dynamic_name: false,
            flow: false,
            level: None,
            aggregate: None,
        }
    }

    /// The same metadata for an aggregate point (its kind follows the aggregate).
    pub const fn with_aggregate(mut self, aggregate: AggregateRef) -> CallsiteMeta {
        self.kind = match aggregate {
            AggregateRef::Sum(_) => PointKind::Sum,
            AggregateRef::Histogram(_) => PointKind::Histogram,
        };
        self.aggregate = Some(aggregate);
        self
    }

    /// The same metadata for a log of `level`.
    pub const fn with_level(mut self, level: Level) -> CallsiteMeta {
        self.level = Some(level);
        self
    }

    /// The same metadata for events named at run time by their argument 0.
    pub const fn with_dynamic_name(mut self) -> CallsiteMeta {
        self.dynamic_name = true;
        self
    }

    /// The five strings a trace file stores for this callsite, in the order of its entry: category,
    /// name, the argument names, the file.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the crash dump's (Linux only)
    pub(crate) fn file_strings(&self) -> [&'static [u8]; 5] {
        [self.category, self.name, self.arg_names[0], self.arg_names[1], self.file].map(str::as_bytes)
    }

    /// The callsite's file entry as id `id`, its strings ([`file_strings`](Self::file_strings))
    /// being string table entries `first..first + 5`. No allocation: the crash dump uses it.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the crash dump's (Linux only)
    pub(crate) fn raw_entry(&self, id: u32, first: u32) -> phosphor_format::file::RawCallsite {
        phosphor_format::file::RawCallsite {
            id,
            phase: self.phase,
            level: self.level,
            dynamic_name: self.dynamic_name,
            flow: self.flow,
            line: self.line,
            strings: std::array::from_fn(|k| first + k as u32),
            name_hash: self.name_hash,
        }
    }

    /// The same metadata for slices that work for an async slice, whose id is their argument 0.
    pub const fn with_flow(mut self) -> CallsiteMeta {
        self.flow = true;
        self
    }

    /// The same metadata for a point of `kind` (aggregates and data points, whose phase alone
    /// does not say it).
    pub const fn with_kind(mut self, kind: PointKind) -> CallsiteMeta {
        self.kind = kind;
        self
    }
}

/// A registered-on-first-use instrumentation point. Created by the macros as a `static`.
#[derive(Debug)]
pub struct Callsite {
    pub(super) state: AtomicU64,
    /// Bit k: trigger slot k watches this callsite (written under the registry lock).
    pub(super) triggers: AtomicU64,
    pub(super) meta: CallsiteMeta,
}

impl Callsite {
    /// A new, unregistered callsite.
    pub const fn new(meta: CallsiteMeta) -> Callsite {
        Callsite { state: AtomicU64::new(UNREGISTERED), triggers: AtomicU64::new(0), meta }
    }

    /// The trigger slots that watch this callsite (bit k: slot k).
    pub(crate) fn trigger_mask(&self) -> u64 {
        // Acquire: pairs with the Release store in `Registry::refresh`, so a trigger slot's
        // threshold, written before its selector was added, is visible to the reader of its bit.
        self.triggers.load(Ordering::Acquire)
    }

    /// The static metadata.
    pub fn meta(&self) -> &CallsiteMeta {
        &self.meta
    }

    /// The registered id, registering the callsite if it is not yet.
    pub fn id(&'static self) -> u32 {
        let s = self.state.load(Ordering::Relaxed);
        match registered_id(s) {
            Some(id) => id,
            None => id_of(register(self)),
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
    let id = id_of(state);
    if id == 0 {
        None
    } else {
        Some(id)
    }
}

/// The id of a state word (0: unregistered), without the armed bit.
#[inline(always)]
pub(crate) fn id_of(state: u64) -> u32 {
    (state >> 32) as u32 & ID_MASK
}

/// Whether `state` is registered (an id that is not 0) and unarmed, in one compare: with the id in
/// bits 32..63 and the armed bit in 63, such a word read as signed is at least 2^32, and any other
/// (id 0, or bit 63 set: negative) is less. A scope's open tests this (`check_scope`).
#[inline(always)]
pub(crate) fn registered_unarmed(state: u64) -> bool {
    state as i64 >= 1 << 32
}

/// Whether the callsite of `state` needs the out-of-line path: a running trace has a trigger that
/// watches it, or it is a scope that a trace counting allocations takes.
#[inline(always)]
pub(crate) fn armed(state: u64) -> bool {
    state & ARMED != 0
}

/// Whether the trace of slot `slot` counts its scopes' allocations (cold paths only: a load of the
/// shared mask of counting slots). An armed scope enabled in that slot counts.
pub(crate) fn counts_allocations(slot: u32) -> bool {
    // Relaxed: a scope racing a `start` or `stop` may see the old mask or the new one, and
    // either answer is right for it (as for the enabled bits); the mask guards no other memory.
    COUNTING_SLOTS.load(Ordering::Relaxed) & (1 << slot) != 0
}

/// Bit s: slot s traces allocations (written under the registry lock, before the state words).
pub(super) static COUNTING_SLOTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The instant that carries a scope's allocations (`phosphor_format::system::SCOPE_ALLOC_NAME`),
/// written by the scope's close right after its complete event. Registered when a trace that
/// counts allocations starts.
pub(crate) static SCOPE_ALLOC: Callsite = Callsite::new(CallsiteMeta::new(
    phosphor_format::system::PHOSPHOR_CATEGORY,
    phosphor_format::system::SCOPE_ALLOC_NAME,
    Phase::Instant,
    phosphor_format::system::SCOPE_ALLOC_ARGS,
    file!(),
    line!(),
));

/// Whether `state` enables slot `slot`.
#[inline(always)]
pub(crate) fn enabled_in(state: u64, slot: u32) -> bool {
    state & (1 << slot) != 0
}

/// Every static callsite of the program, gathered by the linker: each macro invocation adds a
/// pointer to its `static` [`Callsite`] to this slice, so [`points`](crate::points) can list them
/// all before any has run.
///
/// `linkme` supports the platforms `build.rs` lists (`cfg(linker_sections)`, the one platform list).
/// Elsewhere the slice does not exist and
/// callsites are registered on their first event only, so a listing shows just those that ran
/// (the documented fallback).
#[cfg(linker_sections)]
#[linkme::distributed_slice]
pub static CALLSITES: [&'static Callsite];

/// Internal: adds a callsite to [`CALLSITES`].
#[cfg(linker_sections)]
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
#[cfg(not(linker_sections))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_register {
    ($cs:ident) => {};
}

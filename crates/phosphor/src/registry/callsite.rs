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

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use phosphor_format::file::{Aggregate, AggregateKind};
pub use phosphor_format::fnv1a64;
use phosphor_format::{Level, Phase, FIRST_CALLSITE_ID};

use crate::registry::aggregate::AggregateRef;
use crate::registry::category::CategoryFilter;
use crate::registry::crash_list::crash_list_push;
pub(crate) use crate::registry::crash_list::{by_id, crash_list};
use crate::registry::point::{PointKind, PointSelector};
use crate::registry::MAX_LOGS;

const ENABLED_MASK: u64 = 0xffff_ffff;
const UNREGISTERED: u64 = ENABLED_MASK;
/// The armed bit of the state word.
pub(crate) const ARMED: u64 = 1 << 63;
/// The id bits of the state word, once shifted down.
const ID_MASK: u32 = 0x7fff_ffff;
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
    pub(crate) fn file_strings(&self) -> [&'static [u8]; 5] {
        [self.category, self.name, self.arg_names[0], self.arg_names[1], self.file].map(str::as_bytes)
    }

    /// The callsite's file entry as id `id`, its strings ([`file_strings`](Self::file_strings))
    /// being string table entries `first..first + 5`. No allocation: the crash dump uses it.
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
    state: AtomicU64,
    /// Bit k: trigger slot k watches this callsite (written under the registry lock).
    triggers: AtomicU64,
    meta: CallsiteMeta,
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
static COUNTING_SLOTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

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

/// A run-time override from [`points::enable`](crate::points::enable) or
/// [`points::disable`](crate::points::disable); the last rule that matches a callsite decides.
#[derive(Clone, Debug)]
pub(crate) struct Rule {
    pub(crate) selector: PointSelector,
    pub(crate) enable: bool,
}

/// What a running trace records: its categories, and its most verbose log level.
#[derive(Clone, Debug)]
pub(crate) struct SlotFilter {
    pub(crate) categories: Arc<CategoryFilter>,
    pub(crate) max_level: Level,
    /// Whether its scopes record their allocations (`TraceConfig::allocations`).
    pub(crate) allocations: bool,
}

impl SlotFilter {
    fn takes(&self, meta: &CallsiteMeta) -> bool {
        self.categories.matches(meta.category) && meta.level.is_none_or(|l| l <= self.max_level)
    }
}

/// What a trigger watches: which callsites get its bit. The threshold is not here: the trigger
/// check reads it from the trigger's slot.
#[derive(Clone, Debug)]
pub(crate) struct TriggerSelector {
    /// Category glob.
    pub(crate) category: String,
    /// Name glob (scopes and values; logs match by category only).
    pub(crate) name: String,
    /// Which callsites: scopes, values or logs.
    pub(crate) watch: Watch,
}

/// The callsites a trigger can watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Watch {
    /// Complete slices (`trace_scope!`, `trace_complete!`, lock guards): their duration.
    Scopes,
    /// Counters and data points (`trace_counter!`, `trace_data!`): their value.
    Values,
    /// Logs at `level` or more severe.
    Logs(Level),
}

impl TriggerSelector {
    fn matches(&self, meta: &CallsiteMeta) -> bool {
        use phosphor_format::glob_match;
        let kind = match self.watch {
            Watch::Scopes => meta.phase == Phase::Complete,
            Watch::Values => matches!(meta.phase, Phase::Counter | Phase::Data) && meta.aggregate.is_none(),
            Watch::Logs(level) => meta.level.is_some_and(|l| l <= level),
        };
        kind && glob_match(&self.category, meta.category)
            && (matches!(self.watch, Watch::Logs(_)) || glob_match(&self.name, meta.name))
    }
}

struct Registry {
    callsites: Vec<&'static Callsite>,
    filters: [Option<SlotFilter>; MAX_LOGS],
    rules: Vec<Rule>,
    /// Points created at run time, by (category, name, phase): creating one twice returns the first.
    dynamic: BTreeMap<(String, String, u8, String), &'static Callsite>,
    /// Whether every callsite of [`CALLSITES`] has been registered.
    all_static: bool,
    /// What each trigger slot watches (`trace_log/trigger.rs` owns the slots' thresholds).
    triggers: [Option<TriggerSelector>; MAX_TRIGGERS],
    /// The ring file of a file-backed trace, whose metadata gets every callsite registered.
    #[cfg(unix)]
    ring: Option<Arc<crate::registry::ring_file::Mapping>>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    callsites: Vec::new(),
    filters: [const { None }; MAX_LOGS],
    rules: Vec::new(),
    dynamic: BTreeMap::new(),
    all_static: false,
    triggers: [const { None }; MAX_TRIGGERS],
    #[cfg(unix)]
    ring: None,
});

/// The registry's lock, held across a `fork` (see `fork.rs`).
#[cfg(unix)]
pub(crate) struct ForkLock(#[allow(dead_code)] MutexGuard<'static, Registry>);

#[cfg(unix)]
impl ForkLock {
    pub(crate) fn take() -> ForkLock {
        ForkLock(registry())
    }
}

fn registry() -> MutexGuard<'static, Registry> {
    // A panic while holding the lock leaves the registry consistent (each step is a push or a
    // store), so a poisoned lock is safe to keep using.
    let reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
    #[cfg(feature = "test-hooks")]
    if let Some(hook) = *HELD_HOOK.lock().unwrap_or_else(|p| p.into_inner()) {
        hook();
    }
    reg
}

/// Test-only (`test_hooks::set_registry_hook`): runs on every thread that takes the registry's
/// lock, with the lock held.
#[cfg(feature = "test-hooks")]
pub(crate) static HELD_HOOK: Mutex<Option<fn()>> = Mutex::new(None);

impl Registry {
    /// Whether the point rules let `cs` record at all (id 0: not registered yet).
    fn allowed(&self, cs: &Callsite, id: u32) -> bool {
        self.rules.iter().rev().find(|r| r.selector.matches(&cs.meta, id)).is_none_or(|r| r.enable)
    }

    /// The enabled bits of `cs`: the slots whose category filter takes it, if the rules allow it.
    fn mask(&self, cs: &Callsite, id: u32) -> u64 {
        if !self.allowed(cs, id) {
            return 0;
        }
        let mut mask = 0;
        for (slot, f) in self.filters.iter().enumerate() {
            if f.as_ref().is_some_and(|f| f.takes(&cs.meta)) {
                mask |= 1 << slot;
            }
        }
        mask
    }

    /// The trigger slots that watch `cs`, as a mask.
    fn trigger_mask(&self, cs: &Callsite) -> u64 {
        let mut mask = 0;
        for (k, t) in self.triggers.iter().enumerate() {
            if t.as_ref().is_some_and(|t| t.matches(&cs.meta)) {
                mask |= 1 << k;
            }
        }
        mask
    }

    /// `cs`'s state word as id `id`, storing its trigger mask first.
    fn state_of(&self, cs: &Callsite, id: u32) -> u64 {
        let triggers = self.trigger_mask(cs);
        // Release: pairs with the Acquire in `Callsite::trigger_mask` (see there). The state word
        // below is Relaxed: a thread that sees the armed bit but an older mask finds no trigger
        // (or the one being replaced) and records the event as usual; that is the race of an
        // event with `arm`, which either outcome answers.
        cs.triggers.store(triggers, Ordering::Release);
        let enabled = self.mask(cs, id);
        let counted = cs.meta.phase == Phase::Complete && enabled & self.counting_slots() != 0;
        let armed = if triggers != 0 || counted { ARMED } else { 0 };
        armed | (u64::from(id) << 32) | enabled
    }

    /// The slots whose trace counts allocations (bit s: slot s).
    fn counting_slots(&self) -> u64 {
        let mut mask = 0;
        for (slot, f) in self.filters.iter().enumerate() {
            if f.as_ref().is_some_and(|f| f.allocations) {
                mask |= 1 << slot;
            }
        }
        mask
    }

    /// Publishes [`counting_slots`](Self::counting_slots) to the scopes, before `refresh`.
    fn store_counting_slots(&self) {
        // Relaxed: see `counts_allocations`.
        COUNTING_SLOTS.store(self.counting_slots() as u32, Ordering::Relaxed);
    }

    /// Registers `cs` unless it is already; returns its state word.
    fn register(&mut self, cs: &'static Callsite) -> u64 {
        let s = cs.state.load(Ordering::Relaxed);
        if id_of(s) != 0 {
            return s; // registered before (by another thread, or by `register_all_static`)
        }
        let id = FIRST_CALLSITE_ID + self.callsites.len() as u32;
        // Ids share their word with the armed bit; 2^31 callsites would not fit in memory.
        assert!(id <= ID_MASK, "too many callsites");
        crash_list_push(self.callsites.len(), cs);
        self.callsites.push(cs);
        #[cfg(unix)]
        if let Some(ring) = &self.ring {
            ring.append_callsite(id, cs);
        }
        let state = self.state_of(cs, id);
        // Relaxed: the word is self-contained; the registry lock orders it against start/stop.
        cs.state.store(state, Ordering::Relaxed);
        state
    }

    /// Registers every callsite the linker gathered, so each has an id and a listing shows it.
    fn register_all_static(&mut self) {
        if self.all_static {
            return;
        }
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
        for cs in CALLSITES {
            self.register(cs);
        }
        self.all_static = true;
    }

    /// Rewrites every registered callsite's enabled bits after a filter or rule changed. The next
    /// event of each callsite sees the new bits.
    fn refresh(&self) {
        for (i, cs) in self.callsites.iter().enumerate() {
            let id = FIRST_CALLSITE_ID + i as u32;
            let state = self.state_of(cs, id);
            // Relaxed: see `Callsite::state`. The id half never changes once set, so a plain
            // store of the recomputed word is safe against the (locked) writers.
            cs.state.store(state, Ordering::Relaxed);
        }
    }
}

/// Registrations refused (see `Stats::registrations_refused`). Relaxed: a statistic.
static REFUSED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts a refused registration: a first event on a thread already inside the recorder.
#[cold]
pub(crate) fn count_refused() {
    // Relaxed: a statistic.
    REFUSED.fetch_add(1, Ordering::Relaxed);
}

/// The registrations refused so far in this process.
pub(crate) fn registrations_refused() -> u64 {
    // Relaxed: a statistic.
    REFUSED.load(Ordering::Relaxed)
}

/// Registers `cs` and returns its new state word. Runs once per callsite.
#[cold]
#[inline(never)]
pub(crate) fn register(cs: &'static Callsite) -> u64 {
    registry().register(cs)
}

/// Enables what `filter` takes for `slot` on every callsite, present and future. A filter that
/// counts allocations does so only while `phosphor::alloc::Traced` is the global allocator
/// (without it every count would be 0).
pub(crate) fn enable_slot(slot: u32, filter: SlotFilter) {
    let filter = SlotFilter { allocations: filter.allocations && crate::alloc::installed(), ..filter };
    let mut reg = registry();
    if filter.allocations {
        reg.register(&SCOPE_ALLOC);
        // The marks of scopes opened before this trace counted are not its to close.
        crate::alloc::new_counting_period(slot);
    }
    reg.filters[slot as usize] = Some(filter);
    reg.store_counting_slots();
    reg.refresh();
}

/// Disables `slot` on every callsite.
pub(crate) fn disable_slot(slot: u32) {
    let mut reg = registry();
    reg.filters[slot as usize] = None;
    reg.store_counting_slots();
    reg.refresh();
}

/// Adds a point rule and applies it to every callsite; returns how many registered callsites it
/// matches (every static callsite is registered first, so the count covers them all).
pub(crate) fn add_rule(rule: Rule) -> usize {
    let mut reg = registry();
    reg.register_all_static();
    let matched = reg
        .callsites
        .iter()
        .enumerate()
        .filter(|(i, cs)| rule.selector.matches(&cs.meta, FIRST_CALLSITE_ID + *i as u32))
        .count();
    reg.rules.push(rule);
    reg.refresh();
    matched
}

/// Sets what trigger slot `k` watches (`None`: nothing) and rewrites every callsite's trigger
/// mask and armed bit. Every static callsite is registered first, so each one that matches is
/// armed before its first event.
pub(crate) fn set_trigger(k: usize, selector: Option<TriggerSelector>) {
    let mut reg = registry();
    reg.register_all_static();
    reg.triggers[k] = selector;
    reg.refresh();
}

/// Drops every point rule.
pub(crate) fn clear_rules() {
    let mut reg = registry();
    reg.rules.clear();
    reg.refresh();
}

/// Every callsite, static ones registered first, with its id and whether the rules allow it.
pub(crate) fn list_all() -> Vec<(u32, &'static Callsite, bool)> {
    let mut reg = registry();
    reg.register_all_static();
    reg.callsites
        .iter()
        .enumerate()
        .map(|(i, cs)| {
            let id = FIRST_CALLSITE_ID + i as u32;
            (id, *cs, reg.allowed(cs, id))
        })
        .collect()
}

/// The most points that can be created at run time (each is leaked, once per distinct name).
pub const MAX_DYNAMIC_POINTS: usize = 65_536;

/// The dynamic point for (`category`, `name`, `phase`, `detail`): the existing one, or a new one
/// built by `make` (which leaks it) and registered. `detail` tells apart points that share the
/// first three but not the rest of their metadata (level, argument names, location).
pub(crate) fn dynamic(
    category: &str,
    name: &str,
    phase: Phase,
    detail: &str,
    make: impl FnOnce() -> &'static Callsite,
) -> Option<&'static Callsite> {
    let mut reg = registry();
    let key = (category.to_owned(), name.to_owned(), phase as u8, detail.to_owned());
    if let Some(cs) = reg.dynamic.get(&key) {
        return Some(cs);
    }
    if reg.dynamic.len() >= MAX_DYNAMIC_POINTS {
        count_refused();
        return None;
    }
    let cs = make();
    reg.dynamic.insert(key, cs);
    reg.register(cs);
    Some(cs)
}

/// Makes `ring`'s metadata receive every callsite: all registered now (every static one first),
/// and each one registered later; `None` stops it (the trace stopped).
#[cfg(unix)]
pub(crate) fn set_ring(ring: Option<Arc<crate::registry::ring_file::Mapping>>) {
    let mut reg = registry();
    if let Some(r) = &ring {
        reg.register_all_static();
        for (i, cs) in reg.callsites.iter().enumerate() {
            r.append_callsite(FIRST_CALLSITE_ID + i as u32, cs);
        }
    }
    reg.ring = ring;
}

/// A snapshot of every registered aggregate point that has counted anything, by id, with the
/// callsite's metadata.
pub(crate) fn aggregate_snapshots() -> Vec<(Aggregate, &'static CallsiteMeta)> {
    let reg = registry();
    reg.callsites
        .iter()
        .enumerate()
        .filter_map(|(i, cs)| Some((cs.meta.aggregate?.snapshot(FIRST_CALLSITE_ID + i as u32), &cs.meta)))
        .filter(|(a, _)| match a.kind {
            AggregateKind::Sum { count, .. } | AggregateKind::Histogram { count, .. } => count > 0,
        })
        .collect()
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

    #[test]
    fn an_armed_callsite_keeps_its_id_and_gets_its_trigger_bit() {
        static CS: Callsite = Callsite::new(CallsiteMeta::new(
            "test.armed",
            "slow",
            Phase::Complete,
            ["", ""],
            file!(),
            line!(),
        ));
        static OTHER: Callsite = Callsite::new(CallsiteMeta::new(
            "test.armed",
            "slow",
            Phase::Instant,
            ["", ""],
            file!(),
            line!(),
        ));
        let id = CS.id();
        OTHER.id();
        let k = MAX_TRIGGERS - 1;
        let selector =
            TriggerSelector { category: "test.arm*".into(), name: "s?ow".into(), watch: Watch::Scopes };
        set_trigger(k, Some(selector));
        assert!(armed(CS.state()), "a scope the selector matches is armed");
        assert_eq!(
            (id_of(CS.state()), registered_id(CS.state())),
            (id, Some(id)),
            "the armed bit is not the id's"
        );
        assert_eq!(CS.trigger_mask(), 1 << k);
        assert!(!armed(OTHER.state()) && OTHER.trigger_mask() == 0, "an instant is no scope");
        set_trigger(k, None);
        assert!(!armed(CS.state()));
        assert_eq!((id_of(CS.state()), CS.trigger_mask()), (id, 0));
    }

    #[test]
    fn registered_and_unarmed_is_one_compare_that_agrees_with_the_two_tests() {
        let words = |id: u32| {
            let w = u64::from(id) << 32;
            [w, w | ENABLED_MASK, w | 1, w | ARMED, w | ARMED | ENABLED_MASK]
        };
        for id in [0, 1, 2, FIRST_CALLSITE_ID, 1 << 30, ID_MASK - 1, ID_MASK] {
            for state in words(id) {
                let want = registered_id(state).is_some() && !armed(state);
                assert_eq!(registered_unarmed(state), want, "id {id}, state {state:#x}");
            }
        }
        assert!(!registered_unarmed(UNREGISTERED), "a new callsite registers at its first open");
    }

    #[test]
    fn a_counting_slot_arms_the_scopes_it_takes_without_a_trigger_and_keeps_the_id() {
        static SCOPE: Callsite =
            Callsite::new(CallsiteMeta::new("db", "query", Phase::Complete, ["", ""], file!(), line!()));
        static OTHER_SCOPE: Callsite =
            Callsite::new(CallsiteMeta::new("net", "send", Phase::Complete, ["", ""], file!(), line!()));
        static INSTANT: Callsite =
            Callsite::new(CallsiteMeta::new("db", "mark", Phase::Instant, ["", ""], file!(), line!()));
        // A registry of its own (this binary's allocator is not `Traced`, so `enable_slot` would
        // turn counting off): slot 3 counts and takes `db`, slot 4 takes everything and does not.
        let filter = |spec: &str, allocations| {
            Some(SlotFilter {
                categories: Arc::new(CategoryFilter::parse(spec).unwrap()),
                max_level: Level::Trace,
                allocations,
            })
        };
        let mut reg = Registry {
            callsites: Vec::new(),
            filters: [const { None }; MAX_LOGS],
            rules: Vec::new(),
            dynamic: BTreeMap::new(),
            all_static: true,
            triggers: [const { None }; MAX_TRIGGERS],
            #[cfg(unix)]
            ring: None,
        };
        reg.filters[3] = filter("db", true);
        reg.filters[4] = filter("*", false);
        let id = ID_MASK; // the largest id: the armed bit must not spill into it
        let scope = reg.state_of(&SCOPE, id);
        assert!(armed(scope), "a scope a counting slot takes goes out of line");
        assert_eq!(SCOPE.trigger_mask(), 0, "armed for counting, watched by no trigger");
        assert_eq!(registered_id(scope), Some(id));
        assert!(enabled_in(scope, 3) && enabled_in(scope, 4));
        assert!(!armed(reg.state_of(&OTHER_SCOPE, id)), "no counting slot takes `net`");
        assert!(!armed(reg.state_of(&INSTANT, id)), "an instant is no scope");
        assert_eq!(reg.counting_slots(), 1 << 3);
        reg.filters[3] = filter("db", false);
        assert!(!armed(reg.state_of(&SCOPE, id)), "no slot counts any more");
    }
}

//! The registry: the table of registered callsites (ids are given on first use, or to every
//! static callsite by `points::list`), under a mutex, with what decides each callsite's cached
//! state: each log slot's filter (categories, log level, allocation counting), the point rules
//! and the armed triggers' selectors, folded into every callsite's state word whenever one
//! changes (`refresh`). `callsite.rs` holds the callsites themselves and re-exports this file's
//! functions, so callers name them as `callsite::register` and so on.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use phosphor_format::file::{Aggregate, AggregateKind};
use phosphor_format::{Level, Phase, FIRST_CALLSITE_ID};

use crate::registry::callsite::{
    id_of, Callsite, CallsiteMeta, ARMED, COUNTING_SLOTS, ID_MASK, MAX_TRIGGERS, SCOPE_ALLOC,
};
use crate::registry::category::CategoryFilter;
use crate::registry::crash_list::crash_list_push;
use crate::registry::point::PointSelector;
use crate::registry::MAX_LOGS;
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
        #[cfg(linker_sections)]
        for cs in crate::registry::callsite::CALLSITES {
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
/// counts allocations (the allocation counter's attachment takes the trace's scopes, which began
/// its counting period) arms the scopes it takes, and registers `phosphor/scope_alloc`.
pub(crate) fn enable_slot(slot: u32, filter: SlotFilter) {
    let mut reg = registry();
    if filter.allocations {
        reg.register(&SCOPE_ALLOC);
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
    use crate::registry::callsite::{
        armed, enabled_in, registered_id, registered_unarmed, ENABLED_MASK, UNREGISTERED,
    };

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
        // A registry of its own (this binary's allocator is not `Traced`, so no trace of it
        // counts): slot 3 counts and takes `db`, slot 4 takes everything and does not.
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

//! [`Labels`]: the statistics' names and event types, numbered as the nesting's labels, and the
//! label of each callsite.
//!
//! A file may hold a million callsites of distinct names, so a name is stored once, in one
//! buffer ([`NameList`]): the labels are found by a table of their numbers hashed by name and
//! type (4 bytes a label), not by a map keyed by a second copy of the name; a name's labels of
//! several types share its text, and the statistics' paths take the list over at the end.

use std::borrow::Cow;
use std::hash::BuildHasher;

use hashbrown::HashTable;
use phosphor_format::file::Callsite;
use phosphor_format::IdMap;
use rustc_hash::FxBuildHasher;

use crate::stats::EventType;
use phosphor_model::names::{self, NameList};
use phosphor_model::nesting::Label;

/// Every event type.
const EVENT_TYPES: [EventType; 6] = [
    EventType::Scope,
    EventType::LockWait,
    EventType::LockHeld,
    EventType::Instant,
    EventType::Counter,
    EventType::Log,
];

/// Names and event types by label, and the label of each callsite.
#[derive(Debug, Default)]
pub(crate) struct Labels {
    /// Distinct names as shown (`names.rs`: a long name is cut).
    names: NameList,
    /// By label, its name's number in `names` and its event type.
    labels: Vec<(u32, EventType)>,
    /// The labels, found by their name and type.
    index: HashTable<Label>,
    /// By callsite id, the label its events had last.
    by_callsite: IdMap,
    /// By callsite id, the index in the file's string table of the name it had then: the same
    /// index is the same name, so the label is found again without the name being read.
    name_of: IdMap,
    /// Distinct names cut to be shown.
    pub(crate) cut: u64,
}

fn hash(name: &str, ty: EventType) -> u64 {
    FxBuildHasher.hash_one((name, ty))
}

impl Labels {
    /// The label of `cs` as an event of type `ty` (a begin and its end share one).
    pub(crate) fn label(&mut self, cs: &Callsite<'_>, ty: EventType) -> Label {
        // A lock's callsites are `NAME.wait` / `NAME.held`: shown `NAME (wait)` / `NAME (held)`,
        // as every output names them.
        if let (Some(l), Some(n)) = (self.by_callsite.get(cs.id), self.name_of.get(cs.id)) {
            // A file may define an id again, with another name or phase: the label then changes.
            // (The type says the phase's suffix, wait or held.)
            if n == cs.name.index() && self.event_type(l) == ty {
                return l;
            }
        }
        let full = names::lock_name(cs.name.as_str(), cs.phase);
        let l = self.shown(names::shown(&full), ty);
        self.by_callsite.insert(cs.id, l);
        self.name_of.insert(cs.id, cs.name.index());
        l
    }

    /// The label of events named `name` of type `ty`.
    pub(crate) fn named(&mut self, name: &str, ty: EventType) -> Label {
        self.shown(names::shown(name), ty)
    }

    /// The name of label `l`.
    pub(crate) fn name(&self, l: Label) -> &str {
        self.labels.get(l as usize).map_or("", |&(n, _)| self.names.get(n))
    }

    /// The event type of label `l` (a scope's for a label it did not give).
    pub(crate) fn event_type(&self, l: Label) -> EventType {
        self.labels.get(l as usize).map_or(EventType::Scope, |l| l.1)
    }

    /// The number of label `l`'s name among [`Labels::into_names`].
    pub(crate) fn name_number(&self, l: Label) -> u32 {
        self.labels.get(l as usize).map_or(u32::MAX, |l| l.0)
    }

    /// The number of `name` among [`Labels::into_names`], if a label has it (as shown), while
    /// the labels can still be found.
    pub(crate) fn find_name(&self, name: &str) -> Option<u32> {
        EVENT_TYPES.iter().find_map(|&t| self.find(name, t)).map(|l| self.name_number(l))
    }

    /// Distinct names.
    pub(crate) fn len_names(&self) -> u32 {
        self.names.len()
    }

    /// Labels given.
    pub(crate) fn len(&self) -> usize {
        self.labels.len()
    }

    /// The label of `name` as type `ty`, if it has one.
    fn find(&self, name: &str, ty: EventType) -> Option<Label> {
        let (names, labels) = (&self.names, &self.labels);
        self.index
            .find(hash(name, ty), |&l| {
                let (n, t) = labels[l as usize];
                t == ty && names.get(n) == name
            })
            .copied()
    }

    /// The label of events of type `ty` whose name is shown as `name`.
    fn shown(&mut self, name: Cow<'_, str>, ty: EventType) -> Label {
        if let Some(l) = self.find(&name, ty) {
            return l;
        }
        // The text of the name's labels of other types, if it has any.
        let number = match self.find_name(&name) {
            Some(n) => n,
            None => {
                // Owned only when cut.
                self.cut += u64::from(matches!(name, Cow::Owned(_)));
                self.names.push(&name)
            }
        };
        let next = self.labels.len() as Label;
        self.labels.push((number, ty));
        let (names, labels) = (&self.names, &self.labels);
        self.index.insert_unique(hash(&name, ty), next, |&l| {
            let (n, t) = labels[l as usize];
            hash(names.get(n), t)
        });
        next
    }

    /// Frees what finding labels takes, once every event is in.
    pub(crate) fn free_index(&mut self) {
        self.index = HashTable::new();
        self.forget_callsites();
    }

    /// Forgets the labels of the callsites: another file's ids and string indices are its own.
    pub(crate) fn forget_callsites(&mut self) {
        self.by_callsite = IdMap::default();
        self.name_of = IdMap::default();
    }

    /// The distinct names, numbered as [`Labels::name_number`] gives them, and `more` after
    /// them; the labels are gone.
    pub(crate) fn into_names(self, more: &[&str]) -> NameList {
        let mut names = self.names;
        for name in more {
            names.push(name);
        }
        names.shrink_to_fit();
        names
    }
}

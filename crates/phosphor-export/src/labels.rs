//! [`Labels`]: the statistics' names and event types, numbered as the nesting's labels, and the
//! label of each callsite.
//!
//! A file may hold a million callsites of distinct names, so a name is stored once: the labels
//! are found by a table of their numbers hashed by name and type (4 bytes a label), not by a map
//! keyed by a second copy of the name, and a name's labels of several types share its text (with
//! the statistics' paths too).

use std::borrow::Cow;
use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::HashTable;
use phosphor_format::file::Callsite;
use rustc_hash::{FxBuildHasher, FxHashMap as HashMap};

use crate::names;
use crate::nesting::Label;
use crate::stats::EventType;

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
    /// Names as shown (`names.rs`: a long name is cut), and their event types.
    pub(crate) names: Vec<(Arc<str>, EventType)>,
    /// The labels, found by their name and type in `names`.
    index: HashTable<Label>,
    by_callsite: HashMap<u32, Label>,
    /// Distinct names cut to be shown.
    pub(crate) cut: u64,
}

fn hash(name: &str, ty: EventType) -> u64 {
    FxBuildHasher.hash_one((name, ty))
}

impl Labels {
    /// The label of `cs` as an event of type `ty` (a begin and its end share one).
    pub(crate) fn label(&mut self, cs: &Callsite<'_>, ty: EventType) -> Label {
        let name = names::shown(cs.name.as_str());
        if let Some(&l) = self.by_callsite.get(&cs.id) {
            let (known, t) = &self.names[l as usize];
            // A file may define an id again; the name then changes.
            if *t == ty && **known == *name {
                return l;
            }
        }
        let l = self.shown(name, ty);
        self.by_callsite.insert(cs.id, l);
        l
    }

    /// The label of events named `name` of type `ty`.
    pub(crate) fn named(&mut self, name: &str, ty: EventType) -> Label {
        self.shown(names::shown(name), ty)
    }

    /// The label of `name` as type `ty`, if it has one.
    fn find(&self, name: &str, ty: EventType) -> Option<Label> {
        let names = &self.names;
        self.index
            .find(hash(name, ty), |&l| {
                let (n, t) = &names[l as usize];
                *t == ty && **n == *name
            })
            .copied()
    }

    /// The label of events of type `ty` whose name is shown as `name`.
    fn shown(&mut self, name: Cow<'_, str>, ty: EventType) -> Label {
        if let Some(l) = self.find(&name, ty) {
            return l;
        }
        // The text of the name's labels of other types, if it has any.
        let known = EVENT_TYPES.iter().filter(|&&t| t != ty).find_map(|&t| self.find(&name, t));
        let text = match known {
            Some(l) => self.names[l as usize].0.clone(),
            None => {
                // Owned only when cut.
                self.cut += u64::from(matches!(name, Cow::Owned(_)));
                Arc::from(name)
            }
        };
        let next = self.names.len() as Label;
        let h = hash(&text, ty);
        self.names.push((text, ty));
        let names = &self.names;
        self.index.insert_unique(h, next, |&l| {
            let (n, t) = &names[l as usize];
            hash(n, *t)
        });
        next
    }

    /// Frees what finding labels takes, once every event is in.
    pub(crate) fn free_index(&mut self) {
        self.index = HashTable::new();
        self.by_callsite = HashMap::default();
    }
}

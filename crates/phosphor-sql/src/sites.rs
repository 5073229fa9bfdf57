//! [`Sites`]: what the rows of the tables name (category, name as shown, source file and line,
//! kind), numbered once per distinct value, and the nesting engine's labels.
//!
//! A row of `slices` names its site by number, so a file of a million events of ten callsites
//! keeps ten sites. Labels follow the statistics' rule (`phosphor stats`): a label is a name *as
//! shown* ([`names::shown`], a lock's callsite as `NAME (wait)`) and a kind, so that the paths of
//! `slices` are the statistics' paths; a name chosen at run time (argument 0 of a
//! `dynamic_name` callsite) is the event's name, as there.

use std::collections::HashMap;

use phosphor_format::file::{Callsite, Value};
use phosphor_format::{IdMap, Level};
use phosphor_model::names;
use phosphor_model::nesting::Label;

/// What an event is, as the tables sort events out: the statistics' own event types.
pub(crate) use phosphor_model::event_type::EventType as Kind;

/// One distinct site.
#[derive(Clone, Debug)]
pub(crate) struct Site {
    pub(crate) category: String,
    pub(crate) label: Label,
    pub(crate) file: String,
    pub(crate) line: u32,
    pub(crate) kind: Kind,
    /// A log's level.
    pub(crate) level: Option<Level>,
}

/// The sites and labels of a file by number: what the rows' batches are made with. The
/// reader's [`Sites`] adds to its own; the thread that makes the batches keeps a copy that the
/// reader's additions are sent to ([`SiteTable::extend`]), in order with the rows naming them.
#[derive(Clone, Debug, Default)]
pub(crate) struct SiteTable {
    sites: Vec<Site>,
    /// Names as shown, by label.
    names: Vec<String>,
}

/// What a [`SiteTable`] gained since some earlier length.
#[derive(Debug, Default)]
pub(crate) struct SiteAdditions {
    sites: Vec<Site>,
    names: Vec<String>,
}

impl SiteTable {
    /// Site number `site`.
    pub(crate) fn get(&self, site: u32) -> &Site {
        &self.sites[site as usize]
    }

    /// The name of label `l` (empty for a label not given here).
    pub(crate) fn name(&self, l: Label) -> &str {
        self.names.get(l as usize).map_or("", |n| n)
    }

    /// Its length: sites and names.
    pub(crate) fn len(&self) -> (usize, usize) {
        (self.sites.len(), self.names.len())
    }

    /// The sites and names added after it had length `since`.
    pub(crate) fn since(&self, since: (usize, usize)) -> SiteAdditions {
        SiteAdditions { sites: self.sites[since.0..].to_vec(), names: self.names[since.1..].to_vec() }
    }

    /// Adds what another table gained (in the same order).
    pub(crate) fn extend(&mut self, additions: SiteAdditions) {
        self.sites.extend(additions.sites);
        self.names.extend(additions.names);
    }
}

/// The sites and labels of one file, and how to find an event's.
#[derive(Debug, Default)]
pub(crate) struct Sites {
    table: SiteTable,
    by_value: HashMap<(String, Label, String, u32), u32>,
    /// By callsite id, its site (callsites whose name is chosen at run time excepted).
    by_callsite: IdMap,
    /// By callsite id, the string index of the name it had: a file may define an id again.
    name_of: IdMap,
    labels: HashMap<(String, Kind), Label>,
    /// By callsite id, the sites of the names its events chose at run time ([`Dynamic`]).
    dynamic: IdMap,
    dynamic_sites: Vec<Dynamic>,
}

/// The sites of one callsite whose events name themselves (argument 0), by name: each is found
/// again without making its key (three strings) as [`Sites::intern`] makes it.
#[derive(Debug)]
struct Dynamic {
    /// The string index of the callsite's name when these were found: a file may define an id
    /// again.
    name: u32,
    by_name: HashMap<Box<str>, u32>,
}

impl Sites {
    /// The site of an event of callsite `cs` of kind `kind`, with its arguments `args`.
    pub(crate) fn site(&mut self, cs: &Callsite<'_>, kind: Kind, args: &[Option<(&str, Value<'_>)>]) -> u32 {
        if cs.dynamic_name {
            if let Some((_, Value::Str(name))) = args.first().copied().flatten() {
                if let Some(site) = self.dynamic_site(cs, kind, name) {
                    return site;
                }
                let label = self.label(&names::lock_name(name, cs.phase), kind);
                let site = self.intern(cs, label, kind);
                self.remember_dynamic(cs, name, site);
                return site;
            }
        }
        if let (Some(site), Some(n)) = (self.by_callsite.get(cs.id), self.name_of.get(cs.id)) {
            if n == cs.name.index() && self.table.sites[site as usize].kind == kind {
                return site;
            }
        }
        let label = self.label(&names::lock_name(cs.name.as_str(), cs.phase), kind);
        let site = self.intern(cs, label, kind);
        self.by_callsite.insert(cs.id, site);
        self.name_of.insert(cs.id, cs.name.index());
        site
    }

    /// The site found before for an event of callsite `cs` named `name`, of kind `kind`, if
    /// the callsite is as it was then (its name, category, file and line): the site
    /// [`Sites::intern`] would find, as its key is the site's.
    fn dynamic_site(&self, cs: &Callsite<'_>, kind: Kind, name: &str) -> Option<u32> {
        let d = &self.dynamic_sites[self.dynamic.get(cs.id)? as usize];
        let site = *d.by_name.get(name).filter(|_| d.name == cs.name.index())?;
        let s = &self.table.sites[site as usize];
        let same = s.kind == kind
            && s.line == cs.line
            && s.category == cs.category.as_str()
            && s.file == cs.file.as_str();
        same.then_some(site)
    }

    /// Remembers `site` for events of callsite `cs` named `name` ([`Sites::dynamic_site`]).
    fn remember_dynamic(&mut self, cs: &Callsite<'_>, name: &str, site: u32) {
        let at = match self.dynamic.get(cs.id) {
            Some(at) => at as usize,
            None => {
                self.dynamic.insert(cs.id, self.dynamic_sites.len() as u32);
                self.dynamic_sites.push(Dynamic { name: cs.name.index(), by_name: HashMap::new() });
                self.dynamic_sites.len() - 1
            }
        };
        let d = &mut self.dynamic_sites[at];
        if d.name != cs.name.index() {
            // The id was defined again: what was found for it before is not its any more.
            *d = Dynamic { name: cs.name.index(), by_name: HashMap::new() };
        }
        d.by_name.insert(name.into(), site);
    }

    fn intern(&mut self, cs: &Callsite<'_>, label: Label, kind: Kind) -> u32 {
        let key = (cs.category.as_str().to_owned(), label, cs.file.as_str().to_owned(), cs.line);
        let next = self.table.sites.len() as u32;
        *self.by_value.entry(key).or_insert_with_key(|(category, label, file, line)| {
            self.table.sites.push(Site {
                category: category.clone(),
                label: *label,
                file: file.clone(),
                line: *line,
                kind,
                level: cs.level,
            });
            next
        })
    }

    /// The label of events named `name` (before it is cut to be shown) of kind `kind`.
    pub(crate) fn label(&mut self, name: &str, kind: Kind) -> Label {
        let shown = names::shown(name);
        if let Some(&l) = self.labels.get(&(shown.as_ref().to_owned(), kind)) {
            return l;
        }
        let l = self.table.names.len() as Label;
        self.table.names.push(shown.clone().into_owned());
        self.labels.insert((shown.into_owned(), kind), l);
        l
    }

    /// The sites and names by number.
    pub(crate) fn table(&self) -> &SiteTable {
        &self.table
    }
}

//! Interning: the sequence's tables of names (each string gets an iid the first time it is used,
//! and its `InternedData` entry goes into that packet), and the counter tracks resolved per
//! callsite, so that a counter event costs one lookup by callsite id rather than hashing its
//! strings.
//!
//! Names from the file (event names, categories, argument names) are interned by their index in
//! the reader's string table, which holds each distinct string once: the exporter keeps an iid
//! per index (4 bytes), never a copy of the text, however long. Its own few names ("level",
//! "trace summary", ...) are interned by content.

use phosphor_format::file::TableStr;
use phosphor_format::Phase;
use rustc_hash::FxHashMap as HashMap;

use super::pb::Enc;
use super::proto::*;

/// Callsite ids below this are cached in a vector (the runtime numbers callsites from 16 up), the
/// rest in a map; so a file with a huge id costs a map entry, not a vector that long (at most
/// 16 Ki entries, under 1 MiB).
const DENSE_CALLSITES: u32 = 1 << 14;

/// What the exporter resolved for one callsite while writing an event: iids and counter tracks,
/// 0 until needed. Only the counter tracks are kept from one event to the next ([`CallsiteCache`]):
/// the iids are found again by string index, which is as quick.
#[derive(Clone, Copy, Default)]
pub(super) struct Resolved {
    pub(super) name: u64,
    pub(super) category: u64,
    pub(super) args: [u64; 2],
    pub(super) counters: [u64; 2],
}

/// What a lock event's name gets after the callsite's: `" (wait)"` or `" (held)"`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Suffix {
    None,
    Wait,
    Held,
}

impl Suffix {
    /// The suffix of an event of phase `phase`.
    pub(super) fn of(phase: Phase) -> Suffix {
        match phase {
            Phase::LockWait => Suffix::Wait,
            Phase::LockHeld => Suffix::Held,
            _ => Suffix::None,
        }
    }

    pub(super) fn as_str(self) -> &'static str {
        match self {
            Suffix::None => "",
            Suffix::Wait => " (wait)",
            Suffix::Held => " (held)",
        }
    }
}

/// One interned table (event names, categories or annotation names).
#[derive(Default)]
struct Table {
    /// Iid by string-table index, 0 where not interned yet.
    by_index: Vec<u32>,
    /// Lock names, by string index and suffix.
    suffixed: HashMap<(u32, Suffix), u32>,
    /// The exporter's own names, by content.
    own: HashMap<String, u32>,
    /// Iids given so far.
    count: u32,
}

/// The interning tables of the sequence, and the entries not yet written.
#[derive(Default)]
pub(super) struct Interner {
    tables: [Table; 3],
    /// New `InternedData` entries, for the packet being encoded (the one that first uses them).
    pub(super) pending: Enc,
}

impl Interner {
    /// The iid of the exporter's own name `s` in `table`.
    pub(super) fn intern(&mut self, table: u32, s: &str) -> u64 {
        let t = &mut self.tables[slot(table)];
        if let Some(&iid) = t.own.get(s) {
            return u64::from(iid);
        }
        let iid = next(t);
        t.own.insert(s.to_owned(), iid);
        self.entry(table, iid, s, "");
        u64::from(iid)
    }

    /// The iid of the file's string `s` (followed by `suffix`) in `table`.
    #[inline]
    pub(super) fn intern_str(&mut self, table: u32, s: TableStr<'_>, suffix: Suffix) -> u64 {
        let t = &mut self.tables[slot(table)];
        let index = s.index();
        let known = match suffix {
            Suffix::None => t.by_index.get(index as usize).copied().unwrap_or(0),
            _ => t.suffixed.get(&(index, suffix)).copied().unwrap_or(0),
        };
        if known != 0 {
            return u64::from(known);
        }
        self.new_str(table, s, suffix)
    }

    #[cold]
    #[inline(never)]
    fn new_str(&mut self, table: u32, s: TableStr<'_>, suffix: Suffix) -> u64 {
        let t = &mut self.tables[slot(table)];
        let iid = next(t);
        let index = s.index();
        match suffix {
            Suffix::None => {
                let i = index as usize;
                if i >= t.by_index.len() {
                    t.by_index.resize(i + 1, 0);
                }
                t.by_index[i] = iid;
            }
            _ => {
                t.suffixed.insert((index, suffix), iid);
            }
        }
        // A lock's callsites are named `NAME.wait` and `NAME.held`: the suffix says the phase.
        let name = match suffix {
            Suffix::None => s.as_str(),
            Suffix::Wait => phosphor_model::names::lock_base(s.as_str(), Phase::LockWait),
            Suffix::Held => phosphor_model::names::lock_base(s.as_str(), Phase::LockHeld),
        };
        self.entry(table, iid, name, suffix.as_str());
        u64::from(iid)
    }

    /// Adds the `InternedData` entry of `iid`: `name` then `suffix`.
    fn entry(&mut self, table: u32, iid: u32, name: &str, suffix: &str) {
        let p = &mut self.pending;
        let entry = p.begin(table);
        p.uint(INTERNED_IID, u64::from(iid));
        p.tag(INTERNED_NAME, super::pb::LEN);
        p.varint((name.len() + suffix.len()) as u64);
        p.put(name.as_bytes());
        p.put(suffix.as_bytes());
        p.end(entry);
    }
}

#[cfg(test)]
impl Interner {
    /// Iids given in `table`.
    pub(super) fn interned(&self, table: u32) -> u32 {
        self.tables[slot(table)].count
    }
}

/// The next iid of `t`. Iids start at 1: 0 means "not set" to trace processor. There is one per
/// distinct string of the file or own name, so fewer than 2³².
fn next(t: &mut Table) -> u32 {
    t.count += 1;
    t.count
}

/// Which of [`Interner::tables`] holds `table`'s entries.
fn slot(table: u32) -> usize {
    match table {
        INTERNED_EVENT_NAMES => 0,
        INTERNED_EVENT_CATEGORIES => 1,
        _ => 2,
    }
}

/// The counter tracks of a callsite, and the callsite table generation they were resolved in.
#[derive(Clone, Copy, Default)]
struct Counters {
    generation: u64,
    tracks: [u64; 2],
}

/// The counter tracks per callsite id, for the callsites with counter events only. An entry of an
/// older generation (a callsites block came since) reads as unresolved, so a redefined callsite
/// is resolved again.
pub(super) struct CallsiteCache {
    dense: Vec<Counters>,
    sparse: HashMap<u32, Counters>,
    /// Bumped by every callsites block.
    pub(super) generation: u64,
}

impl CallsiteCache {
    pub(super) fn new() -> CallsiteCache {
        // Generation 1: the default entries (generation 0) read as unresolved.
        CallsiteCache { dense: Vec::new(), sparse: HashMap::default(), generation: 1 }
    }

    /// What is known of callsite `id` before its event is written: its counter tracks.
    pub(super) fn get(&self, id: u32) -> Resolved {
        let c = match self.dense.get(id as usize) {
            Some(c) => *c,
            None if id < DENSE_CALLSITES => Counters::default(),
            None => self.sparse.get(&id).copied().unwrap_or_default(),
        };
        let counters = if c.generation == self.generation { c.tracks } else { [0; 2] };
        Resolved { counters, ..Resolved::default() }
    }

    /// Keeps the counter tracks of callsite `id`.
    pub(super) fn set(&mut self, id: u32, tracks: [u64; 2]) {
        let c = Counters { generation: self.generation, tracks };
        if id < DENSE_CALLSITES {
            let i = id as usize;
            if i >= self.dense.len() {
                self.dense.resize(i + 1, Counters::default());
            }
            self.dense[i] = c;
        } else {
            self.sparse.insert(id, c);
        }
    }
}

//! Interning: the sequence's tables of names (each string gets an iid the first time it is used,
//! and its `InternedData` entry goes into that packet), and what has been resolved per callsite so
//! that an event costs one lookup by callsite id rather than hashing its strings.

use rustc_hash::FxHashMap as HashMap;

use super::pb::Enc;
use super::proto::*;

/// Callsite ids below this are cached in a vector (the runtime numbers callsites from 16 up), the
/// rest in a map; so a file with a huge id costs a map entry, not a vector that long (at most
/// 16 Ki entries, under 1 MiB).
const DENSE_CALLSITES: u32 = 1 << 14;

/// What the exporter resolved for one callsite: iids and counter tracks, 0 until first needed.
#[derive(Clone, Copy, Default)]
pub(super) struct Resolved {
    /// The callsite table generation these were resolved in.
    generation: u64,
    pub(super) name: u64,
    pub(super) category: u64,
    pub(super) args: [u64; 2],
    pub(super) counters: [u64; 2],
}

/// The interning tables of the sequence, and the entries not yet written.
#[derive(Default)]
pub(super) struct Interner {
    pub(super) names: HashMap<String, u64>,
    pub(super) categories: HashMap<String, u64>,
    arg_names: HashMap<String, u64>,
    /// New `InternedData` entries, for the packet being encoded (the one that first uses them).
    pub(super) pending: Enc,
}

impl Interner {
    pub(super) fn intern(&mut self, table: u32, s: &str) -> u64 {
        let map = match table {
            INTERNED_EVENT_NAMES => &mut self.names,
            INTERNED_EVENT_CATEGORIES => &mut self.categories,
            _ => &mut self.arg_names,
        };
        if let Some(&iid) = map.get(s) {
            return iid;
        }
        // Iids start at 1: 0 means "not set" to trace processor.
        let iid = map.len() as u64 + 1;
        map.insert(s.to_owned(), iid);
        let entry = self.pending.begin(table);
        self.pending.uint(INTERNED_IID, iid);
        self.pending.bytes(INTERNED_NAME, s.as_bytes());
        self.pending.end(entry);
        iid
    }
}

/// [`Resolved`] per callsite id. An entry of an older generation (a callsites block came since)
/// reads as unresolved, so a redefined callsite is resolved again.
pub(super) struct CallsiteCache {
    dense: Vec<Resolved>,
    sparse: HashMap<u32, Resolved>,
    /// Bumped by every callsites block.
    pub(super) generation: u64,
}

impl CallsiteCache {
    pub(super) fn new() -> CallsiteCache {
        // Generation 1: the default entries (generation 0) read as unresolved.
        CallsiteCache { dense: Vec::new(), sparse: HashMap::default(), generation: 1 }
    }

    pub(super) fn get(&self, id: u32) -> Resolved {
        let r = match self.dense.get(id as usize) {
            Some(r) => *r,
            None if id < DENSE_CALLSITES => Resolved::default(),
            None => self.sparse.get(&id).copied().unwrap_or_default(),
        };
        if r.generation == self.generation {
            r
        } else {
            Resolved { generation: self.generation, ..Resolved::default() }
        }
    }

    pub(super) fn set(&mut self, id: u32, r: Resolved) {
        if id < DENSE_CALLSITES {
            let i = id as usize;
            if i >= self.dense.len() {
                self.dense.resize(i + 1, Resolved::default());
            }
            self.dense[i] = r;
        } else {
            self.sparse.insert(id, r);
        }
    }
}

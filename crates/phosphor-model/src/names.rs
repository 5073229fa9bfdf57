//! Names as the path-shaped outputs show them: statistics, folded stacks and flame graphs repeat a
//! name once per path it is on, so their size is the sum over paths of the names along them. A
//! file of a few MiB holding names of kilobytes nested a thousand deep would make gigabytes of
//! such text; so these outputs show at most [`MAX_NAME_BYTES`] of a name, then `…`, and count
//! the names they cut. Names that agree up to the cut are then one name there.

use std::borrow::Cow;
use std::hash::BuildHasher;

use phosphor_format::Phase;

/// The longest name, in bytes, that statistics, folded stacks and flame graphs show whole.
pub const MAX_NAME_BYTES: usize = 512;

/// What stands for the rest of a name that was cut.
pub const NAME_CUT_MARK: &str = "…";

/// `name` as shown: whole if it has at most [`MAX_NAME_BYTES`] bytes, else its first bytes up to
/// that (at a character's boundary) and [`NAME_CUT_MARK`] (then, and only then, owned).
pub fn shown(name: &str) -> Cow<'_, str> {
    if name.len() <= MAX_NAME_BYTES {
        return Cow::Borrowed(name);
    }
    let mut end = MAX_NAME_BYTES;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let mut s = String::with_capacity(end + NAME_CUT_MARK.len());
    s.push_str(&name[..end]);
    s.push_str(NAME_CUT_MARK);
    Cow::Owned(s)
}

/// The name a lock event is shown by, before its phase's ` (wait)` or ` (held)`: the runtime names
/// a lock's two callsites `NAME.wait` and `NAME.held` (so that points tell them apart), and the
/// viewers' rows would read `NAME.wait (wait)`; the phase's tail is dropped where it matches.
pub fn lock_base(name: &str, phase: Phase) -> &str {
    let tail = match phase {
        Phase::LockWait => ".wait",
        Phase::LockHeld => ".held",
        _ => return name,
    };
    name.strip_suffix(tail).filter(|base| !base.is_empty()).unwrap_or(name)
}

/// What a lock event's name gets after its base name ([`lock_base`]) in every output: `" (wait)"`
/// or `" (held)"`; nothing for other phases.
pub fn lock_suffix(phase: Phase) -> &'static str {
    match phase {
        Phase::LockWait => " (wait)",
        Phase::LockHeld => " (held)",
        _ => "",
    }
}

/// The name an event of `phase` named `name` is shown by in every output: `name` itself, or for a
/// lock event its base name and phase, `queue (wait)` / `queue (held)` (owned only then).
pub fn lock_name(name: &str, phase: Phase) -> Cow<'_, str> {
    match lock_suffix(phase) {
        "" => Cow::Borrowed(name),
        suffix => Cow::Owned(format!("{}{suffix}", lock_base(name, phase))),
    }
}

/// Names numbered in the order they were added, in one buffer: a million names take their bytes
/// and 4 bytes each, not a block of their own each (which costs 32 bytes or more in the allocator,
/// and stays with it once freed).
#[derive(Debug, Default)]
pub struct NameList {
    text: String,
    /// By number, where the name ends in `text`, modulo 2^32 (it starts where the one before
    /// ends).
    ends: Vec<u32>,
    /// The numbers of the names whose end passed a multiple of 2^32 bytes, once for each: a list
    /// of names of more than 4 GiB in all has a few, others none.
    wraps: Vec<u32>,
}

impl NameList {
    /// Adds `name`, and returns its number.
    pub fn push(&mut self, name: &str) -> u32 {
        let n = self.ends.len() as u32;
        let before = self.text.len() as u64;
        self.text.push_str(name);
        let after = self.text.len() as u64;
        for _ in (before >> 32)..(after >> 32) {
            self.wraps.push(n);
        }
        // The low 32 bits; `wraps` holds the rest.
        self.ends.push(after as u32);
        n
    }

    /// Where the name numbered `n` (one that exists) ends in `text`.
    fn end(&self, n: usize) -> usize {
        let wraps = self.wraps.partition_point(|&w| w as usize <= n) as u64;
        ((wraps << 32) | u64::from(self.ends[n])) as usize
    }

    /// The name numbered `n` (empty past the last).
    pub fn get(&self, n: u32) -> &str {
        let n = n as usize;
        if n >= self.ends.len() {
            return "";
        }
        let start = if n == 0 { 0 } else { self.end(n - 1) };
        self.text.get(start..self.end(n)).unwrap_or("")
    }

    /// Whether no name was added.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Names added.
    pub fn len(&self) -> u32 {
        self.ends.len() as u32
    }

    /// Frees the spare room of a list that is complete.
    pub fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

/// Distinct names, numbered in the order they were first met: kept in one buffer (a `NameList`) and
/// found by a table of their numbers, so that a million names cost their bytes and about 12 bytes
/// each, not an allocation each and a map of owned keys.
#[derive(Debug, Default)]
pub struct NameSet {
    list: NameList,
    index: hashbrown::HashTable<u32>,
}

impl NameSet {
    /// The number of `name`: the one it was given when first met, or the next one.
    pub fn number(&mut self, name: &str) -> u32 {
        let hash = rustc_hash::FxBuildHasher.hash_one(name);
        let NameSet { list, index } = self;
        if let Some(&n) = index.find(hash, |&n| list.get(n) == name) {
            return n;
        }
        let n = list.push(name);
        index.insert_unique(hash, n, |&k| rustc_hash::FxBuildHasher.hash_one(list.get(k)));
        n
    }

    /// The name numbered `n` (empty past the last).
    pub fn get(&self, n: u32) -> &str {
        self.list.get(n)
    }

    /// Names in the set.
    pub fn len(&self) -> u32 {
        self.list.len()
    }

    /// Whether it has no name.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_set_numbers_each_distinct_name_once_in_the_order_met() {
        let mut set = NameSet::default();
        let numbers: Vec<u32> =
            ["frame", "", "update", "frame", "é…", ""].iter().map(|n| set.number(n)).collect();
        assert_eq!(numbers, [0, 1, 2, 0, 3, 1]);
        assert_eq!((set.len(), set.get(2), set.get(3), set.get(4)), (4, "update", "é…", ""));
        // Many: the table grows and finds every one again.
        for k in 0..10_000 {
            assert_eq!(set.number(&format!("n{k}")), 4 + k);
        }
        assert_eq!(set.number("n9999"), 4 + 9999);
    }

    #[test]
    fn a_name_list_gives_back_each_name_by_its_number() {
        let mut list = NameList::default();
        let names = ["frame", "", "update", "é…", "frame"];
        let numbers: Vec<u32> = names.iter().map(|n| list.push(n)).collect();
        assert_eq!(numbers, [0, 1, 2, 3, 4]);
        for (n, name) in numbers.iter().zip(names) {
            assert_eq!(list.get(*n), name);
        }
        assert_eq!(list.len(), 5);
        assert_eq!(list.get(5), "");
    }

    #[test]
    fn a_name_list_past_4_gib_finds_its_ends_past_each_wrap() {
        // Names ending at 3 GiB, 5 GiB (past 4 GiB), 13 GiB + 7 (a name of over 8 GiB, past 8 and
        // 12 GiB) and 13 GiB + 9: the ends are kept modulo 2^32, and the wraps by name.
        const GIB: u64 = 1 << 30;
        let want = [3 * GIB, 5 * GIB, 13 * GIB + 7, 13 * GIB + 9];
        let list =
            NameList { text: String::new(), ends: want.map(|e| e as u32).to_vec(), wraps: vec![1, 2, 2] };
        let ends: Vec<u64> = (0..4).map(|n| list.end(n) as u64).collect();
        assert_eq!(ends, want);
    }

    #[test]
    fn a_lock_shows_its_name_without_the_tail_of_its_phase() {
        assert_eq!(lock_base("table.wait", Phase::LockWait), "table");
        assert_eq!(lock_base("table.held", Phase::LockHeld), "table");
        // Only the phase's own tail, and never the whole name.
        assert_eq!(lock_base("table.held", Phase::LockWait), "table.held");
        assert_eq!(lock_base(".wait", Phase::LockWait), ".wait");
        assert_eq!(lock_base("table.wait", Phase::Complete), "table.wait");
        assert_eq!(lock_name("table.wait", Phase::LockWait), "table (wait)");
        assert_eq!(lock_name("table", Phase::LockHeld), "table (held)");
        assert_eq!(lock_name("table.held", Phase::Complete), "table.held");
    }

    #[test]
    fn short_names_are_shown_whole_and_not_counted() {
        let name = "n".repeat(MAX_NAME_BYTES);
        let s = shown(&name);
        assert_eq!(s, name);
        assert!(matches!(s, Cow::Borrowed(_)));
    }

    #[test]
    fn long_names_are_cut_at_a_character_boundary_and_counted() {
        // 'é' is two bytes: the limit falls inside the last one that would fit.
        let name = format!("a{}", "é".repeat(MAX_NAME_BYTES));
        let s = shown(&name);
        assert!(matches!(s, Cow::Owned(_)));
        assert!(s.ends_with(NAME_CUT_MARK));
        let kept = &s[..s.len() - NAME_CUT_MARK.len()];
        assert_eq!(kept.len(), MAX_NAME_BYTES - 1);
        assert!(name.starts_with(kept));
    }
}

//! Names as the path-shaped outputs show them: statistics, folded stacks and flame graphs repeat a
//! name once per path it is on, so their size is the sum over paths of the names along them. A
//! file of a few MiB holding names of kilobytes nested a thousand deep would make gigabytes of
//! such text; so these outputs show at most [`MAX_NAME_BYTES`] of a name, then `…`, and count
//! the names they cut. Names that agree up to the cut are then one name there.

use std::borrow::Cow;

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
pub(crate) fn lock_base(name: &str, phase: Phase) -> &str {
    let tail = match phase {
        Phase::LockWait => ".wait",
        Phase::LockHeld => ".held",
        _ => return name,
    };
    name.strip_suffix(tail).filter(|base| !base.is_empty()).unwrap_or(name)
}

/// Names numbered in the order they were added, in one buffer: a million names take their bytes
/// and 8 bytes each, not a block of their own each (which costs 32 bytes or more in the allocator,
/// and stays with it once freed).
#[derive(Debug, Default)]
pub(crate) struct NameList {
    text: String,
    /// By number, where the name ends in `text` (it starts where the one before ends).
    ends: Vec<usize>,
}

impl NameList {
    /// Adds `name`, and returns its number.
    pub(crate) fn push(&mut self, name: &str) -> u32 {
        self.text.push_str(name);
        self.ends.push(self.text.len());
        self.ends.len() as u32 - 1
    }

    /// The name numbered `n` (empty past the last).
    pub(crate) fn get(&self, n: u32) -> &str {
        let n = n as usize;
        let Some(&end) = self.ends.get(n) else { return "" };
        let start = if n == 0 { 0 } else { self.ends[n - 1] };
        &self.text[start..end]
    }

    /// Frees the spare room of a list that is complete.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_list_gives_back_each_name_by_its_number() {
        let mut list = NameList::default();
        let names = ["frame", "", "update", "é…", "frame"];
        let numbers: Vec<u32> = names.iter().map(|n| list.push(n)).collect();
        assert_eq!(numbers, [0, 1, 2, 3, 4]);
        for (n, name) in numbers.iter().zip(names) {
            assert_eq!(list.get(*n), name);
        }
        assert_eq!(list.get(5), "");
    }

    #[test]
    fn a_lock_shows_its_name_without_the_tail_of_its_phase() {
        assert_eq!(lock_base("table.wait", Phase::LockWait), "table");
        assert_eq!(lock_base("table.held", Phase::LockHeld), "table");
        // Only the phase's own tail, and never the whole name.
        assert_eq!(lock_base("table.held", Phase::LockWait), "table.held");
        assert_eq!(lock_base(".wait", Phase::LockWait), ".wait");
        assert_eq!(lock_base("table.wait", Phase::Complete), "table.wait");
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

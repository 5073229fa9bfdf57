//! The string table as a reader holds it: every string once, and handles that refer to it.
//!
//! A file names its strings by index (callsites' names, categories and files, thread names,
//! static string arguments), and one string may be named by any number of entries. So the reader
//! keeps each string of the string blocks exactly once, all of them in one buffer
//! ([`StringTable`]), and what refers to a string holds a [`TableStr`]: the table and the
//! string's index, resolved when it is read. Memory then follows the file's bytes, however many
//! entries name a long string. A tool that keeps a name past the reader's borrow keeps its
//! [`TableStr::index`], which stays valid: the table only grows.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, Index};

/// The strings of a file's string blocks read so far, by index (their order across all string
/// blocks, in file order), stored end to end in one buffer.
#[derive(Clone, Debug)]
pub struct StringTable {
    text: String,
    /// String `i` is `text[bounds[i]..bounds[i + 1]]`; `bounds[0]` is 0.
    bounds: Vec<usize>,
}

impl Default for StringTable {
    fn default() -> StringTable {
        StringTable { text: String::new(), bounds: vec![0] }
    }
}

impl StringTable {
    /// How many strings.
    pub fn len(&self) -> usize {
        self.bounds.len() - 1
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// String `index`, if the table has it.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&str> {
        match *self.bounds.get(index..index.checked_add(2)?)? {
            [start, end] => {
                debug_assert!(start <= end && end <= self.text.len());
                // SAFETY: `bounds` holds 0 and then the length of `text` after each `push`, which
                // appends a whole `str`: every bound is a char boundary of `text`, the bounds only
                // grow, and the last is `text.len()`. So `start <= end <= text.len()` and both are
                // char boundaries, which is what `get_unchecked` requires (it skips the UTF-8
                // boundary checks of `get`, a third of the cost of an event's argument names).
                Some(unsafe { self.text.get_unchecked(start..end) })
            }
            _ => None,
        }
    }

    /// The strings in index order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.len()).map(|i| self.get(i).unwrap_or(""))
    }

    /// Bytes of text the table holds, all strings together.
    pub fn text_len(&self) -> usize {
        self.text.len()
    }

    /// Appends `s`; its index is the table's length before.
    pub(crate) fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.bounds.push(self.text.len());
    }

    /// A handle to string `index`, which the caller checked is below [`len`](Self::len).
    pub(crate) fn handle(&self, index: u32) -> TableStr<'_> {
        debug_assert!((index as usize) < self.len());
        TableStr { table: self, index }
    }
}

impl Index<usize> for StringTable {
    type Output = str;

    /// String `index`; panics if the table has no such string (use [`StringTable::get`] for
    /// indices read from a file).
    fn index(&self, index: usize) -> &str {
        match self.get(index) {
            Some(s) => s,
            None => panic!("string index {index} out of range for a table of {}", self.len()),
        }
    }
}

/// A string of a file's [`StringTable`]: what callsites and thread names hold instead of a copy.
///
/// It reads as the `str` it names ([`Deref`], [`Display`](fmt::Display), comparisons with `str`
/// and `String`, [`Hash`] and [`Ord`] by content), and its [`index`](Self::index) names it for
/// as long as the file is read, so a tool can key a map by the index rather than copy the text.
#[derive(Clone, Copy)]
pub struct TableStr<'a> {
    table: &'a StringTable,
    index: u32,
}

impl<'a> TableStr<'a> {
    /// The text, borrowed from the table.
    #[inline]
    pub fn as_str(&self) -> &'a str {
        // The index was checked when the entry naming it was read, and the table only grows.
        self.table.get(self.index as usize).unwrap_or("")
    }

    /// The string's index in the file's string table.
    pub fn index(&self) -> u32 {
        self.index
    }
}

impl Deref for TableStr<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for TableStr<'_> {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for TableStr<'_> {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<TableStr<'_>> for String {
    fn from(s: TableStr<'_>) -> String {
        s.as_str().to_owned()
    }
}

impl fmt::Debug for TableStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for TableStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl PartialEq for TableStr<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for TableStr<'_> {}

impl PartialOrd for TableStr<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TableStr<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for TableStr<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

/// `TableStr == str`, `== &str`, `== String`, and the same the other way round.
macro_rules! eq_with {
    ($($t:ty),*) => {$(
        impl PartialEq<$t> for TableStr<'_> {
            fn eq(&self, other: &$t) -> bool {
                self.as_str() == AsRef::<str>::as_ref(other)
            }
        }

        impl PartialEq<TableStr<'_>> for $t {
            fn eq(&self, other: &TableStr<'_>) -> bool {
                AsRef::<str>::as_ref(self) == other.as_str()
            }
        }
    )*};
}

eq_with!(str, &str, String);

#[cfg(test)]
mod tests {
    use super::*;

    fn table(strings: &[&str]) -> StringTable {
        let mut t = StringTable::default();
        for s in strings {
            t.push(s);
        }
        t
    }

    #[test]
    fn strings_are_found_by_index_empty_ones_included() {
        let t = table(&["", "ab", "", "ünï"]);
        assert_eq!(t.len(), 4);
        assert_eq!(t.iter().collect::<Vec<_>>(), ["", "ab", "", "ünï"]);
        assert_eq!((t.get(1), t.get(2), t.get(3), t.get(4)), (Some("ab"), Some(""), Some("ünï"), None));
        assert_eq!(&t[3], "ünï");
        assert_eq!(t.text_len(), 2 + "ünï".len());
    }

    #[test]
    fn a_handle_reads_compares_and_hashes_as_its_text() {
        use std::collections::hash_map::DefaultHasher;
        let t = table(&["b", "a", "b"]);
        let (b0, a, b2) = (t.handle(0), t.handle(1), t.handle(2));
        assert_eq!(b0, b2, "equal by content, not by index");
        assert_ne!(b0.index(), b2.index());
        assert!(a < b0);
        let owned = String::from("b");
        assert_eq!(b0, "b");
        assert_eq!("b", b0);
        assert_eq!(b0, *"b");
        assert_eq!(b0, owned);
        assert_eq!(owned, b0);
        assert_ne!(a, "b");
        assert_eq!((format!("{b0}"), format!("{b0:?}"), b0.len()), ("b".to_owned(), "\"b\"".to_owned(), 1));
        let hash = |h: &dyn Fn(&mut DefaultHasher)| {
            let mut s = DefaultHasher::new();
            h(&mut s);
            s.finish()
        };
        assert_eq!(hash(&|s| b0.hash(s)), hash(&|s| "b".hash(s)), "Borrow<str> needs str's hash");
    }
}

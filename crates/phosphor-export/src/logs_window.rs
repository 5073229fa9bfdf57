//! `phosphor logs` in time order: the reorder window.
//!
//! A file holds each thread's events in the order the thread recorded them, but the threads'
//! chunks come in the order they were handed back (when full, or when the trace stopped), so one
//! thread's logs of a second ago can follow another's of now, and a thread that logs rarely hands
//! its whole chunk in at the end. Sorting exactly would need every log of the file at once.
//!
//! Instead logs wait in a [`Window`], a min-heap by time, up to a budget in bytes (each [`Pending`]
//! costs its fixed size, its parameters and their strings; the texts of callsites and thread names
//! stay in the reader's string table, by index, and are looked up when the line is printed). While
//! the window is over its budget, its oldest log is printed; at the end of the file (or at damage)
//! the rest. So the output is in time order whenever the file's logs fit in the window, and memory
//! is the budget plus one log whatever the file (a string parameter is kept up to the longest
//! message, 1 MiB, so a log holds at most 16 MiB however long the strings it names). A log that
//! must be printed after a later one (it arrived once the later one had left a full window) is
//! printed at its turn and counted as *out of order*; the command says how many.
//!
//! Why not merge the threads' streams exactly: a file does not say which threads are still to
//! come, nor when a thread has no more logs, so no time is ever known to be safe to print up to;
//! a window bounded in bytes is exact for every file whose logs fit, and says when it is not.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::mem::size_of;

use phosphor_format::file::{Event, StringTable, Value};
use phosphor_format::Level;

use crate::logs::MAX_MESSAGE_BYTES;

/// The reorder window's budget unless the caller sets one: 32 MiB, a few hundred thousand
/// typical logs (a log with no string parameter costs about 100 bytes).
pub const DEFAULT_WINDOW_BYTES: usize = 32 << 20;

/// What an allocation costs besides its bytes, counted against the budget.
const ALLOCATION_COST: usize = 32;

/// A log read and not yet printed: everything its line needs, its strings by string-table index.
#[derive(Debug)]
pub(crate) struct Pending {
    /// The recorded time, in ticks: the order.
    pub(crate) ts: u64,
    /// The read order: ties keep it.
    seq: u64,
    pub(crate) tid: u32,
    pub(crate) level: Level,
    /// String-table indices: the callsite's category, format string and file.
    pub(crate) category: u32,
    pub(crate) format: u32,
    pub(crate) file: u32,
    pub(crate) line: u32,
    /// The thread's name as the blocks before the log's chunk defined it.
    pub(crate) thread: Option<u32>,
    params: Box<[Param]>,
}

/// A log parameter, its string copied (it may live in the chunk, which goes).
#[derive(Debug)]
enum Param {
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
    Pointer(u64),
    Str(Box<str>),
}

impl Pending {
    /// Log event `e` (its callsite a log's), the `seq`-th read, whose thread's name is `thread`.
    pub(crate) fn new(e: &Event<'_>, level: Level, seq: u64, thread: Option<u32>) -> Pending {
        let cs = &e.callsite;
        let params = e
            .params
            .iter()
            .map(|v| match v {
                Value::I64(n) => Param::I64(n),
                Value::U64(n) => Param::U64(n),
                Value::F64(f) => Param::F64(f),
                Value::Bool(b) => Param::Bool(b),
                Value::Pointer(p) => Param::Pointer(p),
                Value::Str(s) => Param::Str(kept(s).into()),
            })
            .collect();
        Pending {
            ts: e.ts,
            seq,
            tid: e.tid,
            level,
            category: cs.category.index(),
            format: cs.name.index(),
            file: cs.file.index(),
            line: cs.line,
            thread,
            params,
        }
    }

    /// What it holds, as counted against the window's budget.
    fn cost(&self) -> usize {
        let mut cost = size_of::<Pending>() + ALLOCATION_COST;
        if !self.params.is_empty() {
            cost += self.params.len() * size_of::<Param>() + ALLOCATION_COST;
        }
        for p in self.params.iter() {
            if let Param::Str(s) = p {
                cost += s.len() + ALLOCATION_COST;
            }
        }
        cost
    }

    /// Its parameters as values, into `out`; how many (at most `out.len()`).
    pub(crate) fn params<'p>(&'p self, out: &mut [Value<'p>]) -> usize {
        let mut n = 0;
        for (slot, p) in out.iter_mut().zip(self.params.iter()) {
            *slot = match p {
                Param::I64(n) => Value::I64(*n),
                Param::U64(n) => Value::U64(*n),
                Param::F64(f) => Value::F64(*f),
                Param::Bool(b) => Value::Bool(*b),
                Param::Pointer(p) => Value::Pointer(*p),
                Param::Str(s) => Value::Str(s),
            };
            n += 1;
        }
        n
    }

    /// String `index` of `strings` ("" if absent: the index was checked when the log was read).
    pub(crate) fn text(strings: &StringTable, index: u32) -> &str {
        strings.get(index as usize).unwrap_or("")
    }
}

/// What a log keeps of a string parameter: all of it up to [`MAX_MESSAGE_BYTES`], else its first
/// `MAX_MESSAGE_BYTES` and a few more bytes. A static string may be as long as the file and be
/// named by all 16 parameters; a message is cut at `MAX_MESSAGE_BYTES` (with a width of at most
/// 65,536), so a longer string formats to the same cut message from its first bytes as whole.
fn kept(s: &str) -> &str {
    if s.len() <= MAX_MESSAGE_BYTES {
        return s;
    }
    // Past the cut, so that the message is still cut.
    let mut at = MAX_MESSAGE_BYTES + 1;
    while !s.is_char_boundary(at) {
        at += 1;
    }
    &s[..at]
}

/// Oldest first in a max-heap.
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.ts, other.seq).cmp(&(self.ts, self.seq))
    }
}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.ts, self.seq) == (other.ts, other.seq)
    }
}

impl Eq for Pending {}

/// Logs waiting to be printed, oldest first, within a budget in bytes.
#[derive(Debug)]
pub(crate) struct Window {
    heap: BinaryHeap<Pending>,
    /// The pending logs' cost.
    bytes: usize,
    budget: usize,
    seq: u64,
    /// The time of the last log taken out.
    last: Option<u64>,
    /// Logs taken out after a later one.
    pub(crate) out_of_order: u64,
}

impl Window {
    /// A window of at most `budget` bytes of logs (0: each log is printed as it is read).
    pub(crate) fn new(budget: usize) -> Window {
        Window { heap: BinaryHeap::new(), bytes: 0, budget, seq: 0, last: None, out_of_order: 0 }
    }

    /// The read number of the next log.
    pub(crate) fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Adds a log.
    pub(crate) fn push(&mut self, p: Pending) {
        self.bytes += p.cost();
        self.heap.push(p);
    }

    /// The oldest log if the window is over its budget (`all`: if there is any).
    pub(crate) fn pop(&mut self, all: bool) -> Option<Pending> {
        if !all && self.bytes <= self.budget {
            return None;
        }
        let p = self.heap.pop()?;
        self.bytes -= p.cost();
        if self.last.is_some_and(|last| p.ts < last) {
            self.out_of_order += 1;
        } else {
            self.last = Some(p.ts);
        }
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(ts: u64, seq: u64, strings: usize) -> Pending {
        let params = (0..strings).map(|_| Param::Str("x".repeat(100).into())).collect();
        Pending {
            ts,
            seq,
            tid: 1,
            level: Level::Info,
            category: 0,
            format: 0,
            file: 0,
            line: 0,
            thread: None,
            params,
        }
    }

    #[test]
    fn a_string_longer_than_a_message_is_kept_only_as_far_as_the_cut_message_shows() {
        let long = "é".repeat(MAX_MESSAGE_BYTES);
        let k = kept(&long);
        assert!(k.len() > MAX_MESSAGE_BYTES && k.len() <= MAX_MESSAGE_BYTES + 4);
        for format in ["{}", "{:?}", "a {} b", "{:>70000}", "{:.5}"] {
            let (mut whole, mut cut) = (String::new(), String::new());
            crate::logs::format_log(&mut whole, format, &[Value::Str(&long)]);
            crate::logs::format_log(&mut cut, format, &[Value::Str(k)]);
            assert!(whole == cut, "{format}");
        }
        assert_eq!(kept("short"), "short");
    }

    #[test]
    fn the_window_gives_the_oldest_first_and_ties_in_read_order() {
        let mut w = Window::new(usize::MAX);
        for (ts, seq) in [(30, 1), (10, 2), (20, 3), (10, 4)] {
            w.push(pending(ts, seq, 0));
        }
        assert!(w.pop(false).is_none(), "within the budget nothing leaves");
        let order: Vec<(u64, u64)> = std::iter::from_fn(|| w.pop(true)).map(|p| (p.ts, p.seq)).collect();
        assert_eq!(order, [(10, 2), (10, 4), (20, 3), (30, 1)]);
        assert_eq!((w.out_of_order, w.bytes), (0, 0));
    }

    #[test]
    fn a_full_window_lets_the_oldest_go_and_counts_a_log_that_comes_too_late() {
        let one = pending(0, 0, 1).cost();
        let mut w = Window::new(2 * one);
        let mut out = Vec::new();
        for ts in [5, 6, 7, 1, 8] {
            w.push(pending(ts, 0, 1));
            while let Some(p) = w.pop(false) {
                out.push(p.ts);
            }
            assert!(w.bytes <= 2 * one);
        }
        out.extend(std::iter::from_fn(|| w.pop(true)).map(|p| p.ts));
        // 5 left when 7 came; 1 came after it and is the one out of order.
        assert_eq!(out, [5, 1, 6, 7, 8]);
        assert_eq!(w.out_of_order, 1);
    }
}

//! A first reading of a trace file: which spans are roots of the whole file.
//!
//! A scope is recorded when it ends, after the scopes nested in it, so a single reading cannot
//! tell whether a finished span is a root or is waiting for an enclosing scope that ends later:
//! the [`Assembler`](crate::assemble::Assembler) would hold every tree until the end of the
//! file. A file can be read twice: the first reading ([`Roots::scan`]) finds each thread's true
//! roots (by their close numbers: the spans of a thread counted in the order they close), and the
//! second ([`Assembler::with_roots`](crate::assemble::Assembler::with_roots)) emits each tree the
//! moment its root closes. Memory is then the largest tree in progress, not the file.
//!
//! The scan applies the assembler's own rules (what closes a span, the cap on nested begins), so
//! both readings count the same close numbers and take the same children. It keeps, per thread,
//! what is pending so far: a stack of (start, close number) of roots, and of logs and instants
//! (which stop a closing span's taking as they stop the assembler's), from which a closing span
//! pops what it encloses. At most
//! [`MAX_SCANNED_ROOTS`] are kept over all threads; past that a thread forgets its oldest, whose
//! spans the second reading then treats as a single reading does.

use std::collections::{HashMap, VecDeque};
use std::io::Read;

use phosphor_format::clock::ClockInfo;
use phosphor_format::file::{Event, Header, Reader};

use crate::assemble::{edge, Edge, MAX_OPEN_PER_THREAD};

/// A log or instant on the stack (not a close number).
const MARK: u64 = u64::MAX;

/// The most roots a scan keeps, over all threads (16 bytes each).
pub const MAX_SCANNED_ROOTS: usize = 1 << 22;

/// One thread's roots.
#[derive(Debug, Default)]
struct ThreadRoots {
    /// Starts of the begin/end scopes open.
    open: Vec<u64>,
    /// What is pending so far: (start, close number or [`MARK`]).
    stack: VecDeque<(u64, u64)>,
    closed: u64,
    /// Close numbers below this were forgotten.
    known_from: u64,
}

/// Each thread's true roots, from a first reading of a file.
#[derive(Debug)]
pub struct Roots {
    clock: ClockInfo,
    threads: HashMap<u32, ThreadRoots>,
    kept: usize,
    max: usize,
}

/// What a thread's roots are, for the second reading.
#[derive(Debug, Default)]
pub(crate) struct Known {
    /// The close numbers of the thread's roots, ascending.
    pub roots: Vec<u64>,
    /// Close numbers below this are not known.
    pub known_from: u64,
}

impl Roots {
    /// No roots yet, for the file whose header is `header`.
    pub fn new(header: &Header) -> Roots {
        Roots::with_limit(header, MAX_SCANNED_ROOTS)
    }

    /// As [`Roots::new`], keeping at most `max` roots (tests use small limits).
    pub fn with_limit(header: &Header, max: usize) -> Roots {
        Roots { clock: header.clock.clone(), threads: HashMap::new(), kept: 0, max }
    }

    /// Reads the rest of `reader`'s file. A damaged file gives the roots of what could be read,
    /// which is what a second reading of the same file reads too.
    pub fn scan<R: Read>(reader: &mut Reader<R>) -> Roots {
        Roots::scan_with_limit(reader, MAX_SCANNED_ROOTS)
    }

    /// As [`Roots::scan`], keeping at most `max` roots.
    pub fn scan_with_limit<R: Read>(reader: &mut Reader<R>, max: usize) -> Roots {
        let mut roots = Roots::with_limit(reader.header(), max);
        // The damage is the second reading's to report.
        let _ = reader.for_each_event(|e| roots.push(e));
        roots
    }

    /// Takes one event (in file order).
    pub fn push(&mut self, event: &Event<'_>) {
        let start = match edge(&self.clock, event) {
            Edge::Other | Edge::AsyncBegin(_) | Edge::AsyncEnd(_) | Edge::AsyncContext(_) => return,
            Edge::Mark(t) => {
                self.keep(event.tid, t, MARK);
                return;
            }
            Edge::Begin(start) => {
                let t = self.threads.entry(event.tid).or_default();
                if t.open.len() < MAX_OPEN_PER_THREAD {
                    t.open.push(start);
                }
                return;
            }
            Edge::End(_) => {
                let Some(start) = self.threads.get_mut(&event.tid).and_then(|t| t.open.pop()) else {
                    return;
                };
                start
            }
            Edge::Close(start, _) => start,
        };
        let t = self.threads.entry(event.tid).or_default();
        let k = t.closed;
        t.closed += 1;
        while t.stack.back().is_some_and(|&(s, _)| s >= start) {
            t.stack.pop_back();
            self.kept -= 1;
        }
        self.keep(event.tid, start, k);
    }

    /// Keeps a root (or a [`MARK`]) at `start` pending on thread `tid`.
    fn keep(&mut self, tid: u32, start: u64, k: u64) {
        let t = self.threads.entry(tid).or_default();
        if self.kept >= self.max {
            // Forget this thread's oldest root (or, holding none, this one).
            match t.stack.pop_front() {
                Some((_, old)) => {
                    if old != MARK {
                        t.known_from = old + 1;
                    }
                    self.kept -= 1;
                }
                None => {
                    if k != MARK {
                        t.known_from = k + 1;
                    }
                    return;
                }
            }
        }
        t.stack.push_back((start, k));
        self.kept += 1;
    }

    /// Thread `tid`'s roots (taken: each thread's are handed out once).
    pub(crate) fn take(&mut self, tid: u32) -> Known {
        let t = self.threads.remove(&tid).unwrap_or_default();
        let roots = t.stack.into_iter().map(|(_, k)| k).filter(|&k| k != MARK).collect();
        Known { roots, known_from: t.known_from }
    }
}

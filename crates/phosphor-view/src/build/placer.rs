//! Putting each thread's slices on their levels, with the slices that overlap the one before
//! them moved a level down ([`Placer`]).

use super::Pending;
use crate::records::slice_flags;
use crate::Error;

/// Puts each thread's slices on their levels as they come, by thread, level and start: a slice
/// that overlaps the one before it on its level (interlaced scopes, which the model leaves
/// siblings) goes a level further down, flagged [`slice_flags::INTERLACED`], so that a level's
/// slices never overlap and its list is sorted by end as well as by start. It holds the slices
/// moved down until their level is written.
#[derive(Debug, Default)]
pub(super) struct Placer {
    /// The thread and level being written.
    at: Option<(u32, u32)>,
    /// The latest end on that level so far.
    last_end: u64,
    /// Slices moved down from the level being written, in order of start.
    down: Vec<Pending>,
    /// Slices moved down to the level being written, in order of start.
    carried: std::collections::VecDeque<Pending>,
}

pub(super) type Emit<'a> = dyn FnMut(Pending) -> Result<(), Error> + 'a;

impl Placer {
    /// Takes the next slice, in order of thread, level and start.
    pub(super) fn take(&mut self, p: Pending, write: &mut Emit<'_>) -> Result<(), Error> {
        loop {
            match self.at {
                Some(at) if at == (p.tid, p.depth) => break,
                Some((tid, depth)) if !self.down.is_empty() || !self.carried.is_empty() => {
                    // The level before is done: then those moved down from it, a level lower.
                    while let Some(c) = self.carried.pop_front() {
                        self.place(c, write)?;
                    }
                    if !self.down.is_empty() {
                        self.start(tid, depth + 1);
                    }
                }
                _ => {
                    self.start(p.tid, p.depth);
                    break;
                }
            }
        }
        while self.carried.front().is_some_and(|c| (c.slice.start, c.seq) < (p.slice.start, p.seq)) {
            let c = self.carried.pop_front().expect("not empty");
            self.place(c, write)?;
        }
        self.place(p, write)
    }

    /// Starts level `depth` of `tid`, with the slices moved down to it.
    fn start(&mut self, tid: u32, depth: u32) {
        self.carried = std::mem::take(&mut self.down).into();
        self.at = Some((tid, depth));
        self.last_end = 0;
    }

    fn place(&mut self, mut p: Pending, write: &mut Emit<'_>) -> Result<(), Error> {
        let Some((_, depth)) = self.at else { return Ok(()) };
        if self.last_end > p.slice.start {
            p.slice.flags |= slice_flags::INTERLACED;
            p.depth = depth + 1;
            self.down.push(p);
            return Ok(());
        }
        self.last_end = self.last_end.max(p.slice.end);
        p.depth = depth;
        write(p)
    }

    /// Writes what is left moved down, level after level.
    pub(super) fn flush(&mut self, write: &mut Emit<'_>) -> Result<(), Error> {
        while let Some((tid, depth)) = self.at {
            while let Some(c) = self.carried.pop_front() {
                self.place(c, write)?;
            }
            if self.down.is_empty() {
                return Ok(());
            }
            self.start(tid, depth + 1);
        }
        Ok(())
    }
}

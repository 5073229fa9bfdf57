//! Lost chunks: the gaps in each writer stream's chunk sequence numbers (`docs/FORMAT.md`, chunk
//! block). A ring buffer that overwrites a chunk leaves its number missing. The statistics
//! (`phosphor stats`) and the SQL tables (`drops`) both count them here.

use std::collections::BTreeMap;
use std::iter::Peekable;

use phosphor_format::file::Extents;

/// Counts the chunks missing from each writer stream ([`Extents::stream_key`]: a thread's own
/// tenant, or a pool tenant) as chunks are read.
///
/// Sequence numbers start at 0 and go up by one per chunk of a stream, so every number up to the
/// highest seen that has no chunk was lost. Chunks lost after a stream's last surviving one leave
/// no gap; the trailer's drop counts still include their events. A streamed chunk may come in
/// *pieces*, consecutive blocks with the same number (`docs/FORMAT.md`): they count as one chunk.
///
/// A file may hold a million threads: a stream takes 32 bytes in a list sorted by key while
/// streams first appear in the order of their keys (as a file's threads do), and a tree's entry
/// when one appears out of order.
#[derive(Clone, Debug, Default)]
pub struct ChunkLosses {
    /// Streams that first appeared after every stream with a smaller key, by key.
    sorted: Vec<((u16, u32), Stream)>,
    /// The others, by key (none is in `sorted`).
    rest: BTreeMap<(u16, u32), Stream>,
}

/// One stream's chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Stream {
    /// Distinct chunks seen.
    chunks: u64,
    /// The highest sequence number.
    max_seq: u64,
    /// The last sequence number seen plus one (0: none; numbers are below 2^48).
    last: u64,
}

impl PartialEq for ChunkLosses {
    fn eq(&self, other: &ChunkLosses) -> bool {
        self.all().eq(other.all())
    }
}

impl Eq for ChunkLosses {}

impl ChunkLosses {
    /// Counts one chunk block (a piece of the chunk before it, if it has the same number).
    pub fn add(&mut self, extents: &Extents) {
        let key = extents.stream_key();
        let s = match self.sorted.last() {
            Some((last, _)) if *last == key => &mut self.sorted.last_mut().expect("just seen").1,
            Some((last, _)) if *last > key => match self.sorted.binary_search_by_key(&key, |(k, _)| *k) {
                Ok(at) => &mut self.sorted[at].1,
                Err(_) => self.rest.entry(key).or_default(),
            },
            // A key above all in `sorted` cannot be in `rest`, which holds smaller keys only.
            _ => {
                self.sorted.push((key, Stream::default()));
                &mut self.sorted.last_mut().expect("just pushed").1
            }
        };
        let seq = extents.stream_seq();
        if s.last != seq + 1 {
            s.chunks += 1;
        }
        s.last = seq + 1;
        s.max_seq = s.max_seq.max(seq);
    }

    fn stream(&self, key: (u16, u32)) -> Option<&Stream> {
        match self.sorted.binary_search_by_key(&key, |(k, _)| *k) {
            Ok(at) => Some(&self.sorted[at].1),
            Err(_) => self.rest.get(&key),
        }
    }

    /// Every stream, by key.
    fn all(&self) -> Merged<'_> {
        Merged { sorted: self.sorted.iter().peekable(), rest: self.rest.iter().peekable() }
    }

    fn lost_of(s: &Stream) -> u64 {
        s.max_seq.saturating_add(1).saturating_sub(s.chunks)
    }

    /// Chunks lost from the stream `key` (`(0, tid)` for a thread's own tenant, `(k, 0)` for pool
    /// tenant `k`).
    pub fn lost(&self, key: (u16, u32)) -> u64 {
        self.stream(key).map_or(0, ChunkLosses::lost_of)
    }

    /// `(stream key, chunks seen, chunks lost)` for every stream, by key.
    pub fn streams(&self) -> impl Iterator<Item = ((u16, u32), u64, u64)> + '_ {
        self.all().map(|(k, s)| (k, s.chunks, ChunkLosses::lost_of(s)))
    }

    /// Chunks lost from all streams.
    pub fn total(&self) -> u64 {
        self.streams().map(|(_, _, lost)| lost).sum()
    }
}

/// The streams of both parts of a [`ChunkLosses`], merged by key.
struct Merged<'a> {
    sorted: Peekable<std::slice::Iter<'a, ((u16, u32), Stream)>>,
    rest: Peekable<std::collections::btree_map::Iter<'a, (u16, u32), Stream>>,
}

impl<'a> Iterator for Merged<'a> {
    type Item = ((u16, u32), &'a Stream);

    fn next(&mut self) -> Option<Self::Item> {
        let from_sorted = match (self.sorted.peek(), self.rest.peek()) {
            (Some((a, _)), Some((b, _))) => a < *b,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if from_sorted {
            self.sorted.next().map(|(k, s)| (*k, s))
        } else {
            self.rest.next().map(|(k, s)| (*k, s))
        }
    }
}

#[cfg(test)]
mod tests {
    use phosphor_format::file::SEQ_STREAM_SHIFT;

    use super::*;

    fn chunk(tid: u32, stream: u64, seq: u64) -> Extents {
        Extents { tid, seq: (stream << SEQ_STREAM_SHIFT) | seq, ..Extents::default() }
    }

    #[test]
    fn lost_chunks_are_the_missing_numbers_of_each_stream_up_to_its_highest() {
        let mut l = ChunkLosses::default();
        // Thread 12's own tenant: 0 and 2 (one lost). Pool tenant 1: 0, 1, 2 started by threads 10,
        // 11, 10 (none lost). Pool tenant 2: 0 and 3 (two lost).
        for x in [chunk(12, 0, 0), chunk(10, 1, 0), chunk(11, 1, 1), chunk(12, 0, 2)] {
            l.add(&x);
        }
        for x in [chunk(10, 1, 2), chunk(11, 2, 0), chunk(11, 2, 3)] {
            l.add(&x);
        }
        let streams: Vec<_> = l.streams().collect();
        assert_eq!(streams, [((0, 12), 2, 1), ((1, 0), 3, 0), ((2, 0), 2, 2)]);
        assert_eq!(l.total(), 3);
        assert_eq!(l.lost((0, 10)), 0, "thread 10 has no tenant of its own");
    }

    #[test]
    fn streams_that_first_appear_out_of_order_are_listed_and_compared_by_key() {
        let (mut a, mut b) = (ChunkLosses::default(), ChunkLosses::default());
        // Threads 5, 9, then 7 and 3 out of order, then 9 and 3 again (3 loses chunk 1).
        for x in [chunk(5, 0, 0), chunk(9, 0, 0), chunk(7, 0, 0), chunk(3, 0, 0), chunk(9, 0, 1)] {
            a.add(&x);
        }
        a.add(&chunk(3, 0, 2));
        for x in [chunk(3, 0, 0), chunk(3, 0, 2), chunk(5, 0, 0), chunk(7, 0, 0), chunk(9, 0, 0)] {
            b.add(&x);
        }
        b.add(&chunk(9, 0, 1));
        let streams: Vec<_> = a.streams().collect();
        assert_eq!(streams, [((0, 3), 2, 1), ((0, 5), 1, 0), ((0, 7), 1, 0), ((0, 9), 2, 0)]);
        assert_eq!((a.lost((0, 3)), a.lost((0, 7)), a.lost((0, 4))), (1, 0, 0));
        assert_eq!(a, b);
        b.add(&chunk(7, 0, 3));
        assert_ne!(a, b);
    }

    #[test]
    fn the_pieces_of_a_streamed_chunk_count_as_one_chunk() {
        let mut l = ChunkLosses::default();
        // Thread 12's chunk 0 in two pieces, chunk 1 whole, chunk 3 in three pieces: chunk 2 lost.
        for x in [chunk(12, 0, 0), chunk(12, 0, 0), chunk(12, 0, 1), chunk(12, 0, 3), chunk(12, 0, 3)] {
            l.add(&x);
        }
        l.add(&chunk(12, 0, 3));
        assert_eq!(l.streams().collect::<Vec<_>>(), [((0, 12), 3, 1)]);
    }
}

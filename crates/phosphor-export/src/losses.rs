//! Lost chunks: the gaps in each writer stream's chunk sequence numbers (`docs/FORMAT.md`, chunk
//! block). A ring buffer that overwrites a chunk leaves its number missing.

use std::collections::BTreeMap;

use phosphor_format::file::Extents;

/// Counts the chunks missing from each writer stream ([`Extents::stream_key`]: a thread's own
/// tenant, or a pool tenant) as chunks are read.
///
/// Sequence numbers start at 0 and go up by one per chunk of a stream, so every number up to the
/// highest seen that has no chunk was lost. Chunks lost after a stream's last surviving one leave
/// no gap; the trailer's drop counts still include their events. A streamed chunk may come in
/// *pieces*, consecutive blocks with the same number (`docs/FORMAT.md`): they count as one chunk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkLosses {
    /// Per stream key: distinct chunks seen, the highest sequence number, and the last one seen.
    streams: BTreeMap<(u16, u32), (u64, u64, Option<u64>)>,
}

impl ChunkLosses {
    /// Counts one chunk block (a piece of the chunk before it, if it has the same number).
    pub fn add(&mut self, extents: &Extents) {
        let (chunks, max_seq, last) = self.streams.entry(extents.stream_key()).or_default();
        let seq = extents.stream_seq();
        if *last != Some(seq) {
            *chunks += 1;
        }
        *last = Some(seq);
        *max_seq = (*max_seq).max(seq);
    }

    /// Chunks lost from the stream `key` (`(0, tid)` for a thread's own tenant, `(k, 0)` for pool
    /// tenant `k`).
    pub fn lost(&self, key: (u16, u32)) -> u64 {
        self.streams.get(&key).map_or(0, |&(chunks, max, _)| max.saturating_add(1).saturating_sub(chunks))
    }

    /// `(stream key, chunks seen, chunks lost)` for every stream, by key.
    pub fn streams(&self) -> impl Iterator<Item = ((u16, u32), u64, u64)> + '_ {
        self.streams.iter().map(|(&k, &(chunks, _, _))| (k, chunks, self.lost(k)))
    }

    /// Chunks lost from all streams.
    pub fn total(&self) -> u64 {
        self.streams().map(|(_, _, lost)| lost).sum()
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

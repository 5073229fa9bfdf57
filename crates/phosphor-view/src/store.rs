//! How the index's records are read: by positioned reads into a bounded cache of blocks, not
//! through the mapping, so that the server's memory stays bounded whatever the index's size.
//!
//! A window query touches a few records in each of thousands of places (a binary search a
//! pixel). Through a mapping, each touch maps the pages around it too (the kernel's fault-around,
//! 64 KiB), and all of them count in the process's resident memory until it ends: one query over
//! a thread of 2 million slices made 72 MiB resident. Here a query reads 16 KiB blocks into a
//! cache of at most [`CACHE_BYTES`]; the kernel's page cache, which is not the server's memory,
//! keeps the file's bytes between reads. Scans of whole sections (search, statistics) read
//! sequentially into a buffer of their own ([`Store::scan`]) and leave the cache alone.

use std::cell::RefCell;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes of a cached block.
pub const BLOCK_BYTES: u64 = 16 << 10;
/// The most the cache holds.
pub const CACHE_BYTES: u64 = 16 << 20;
/// Bytes a scan reads at once.
const SCAN_BYTES: usize = 256 << 10;

/// A block read: its store's id, its number, its bytes.
type Held = (u64, u64, Arc<[u8]>);

thread_local! {
    /// The block this thread read last.
    static LAST: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// An index file's bytes, read by position.
#[derive(Debug)]
pub(crate) struct Store {
    /// Distinguishes stores in each thread's last block ([`LAST`]).
    id: u64,
    file: File,
    len: u64,
    cache: quick_cache::sync::Cache<u64, Arc<[u8]>>,
}

impl Store {
    pub(crate) fn new(file: File, len: u64) -> Store {
        // Relaxed: only uniqueness is needed.
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Store {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            file,
            len,
            cache: quick_cache::sync::Cache::new((CACHE_BYTES / BLOCK_BYTES) as usize),
        }
    }

    /// Block `n` of the file (shorter at its end). A read that fails gives zeros and is not kept:
    /// the index was checked when opened and is never written again, so only a failing disk or
    /// someone truncating it gets there, and then a record reads as zeros rather than the server
    /// failing.
    fn block(&self, n: u64) -> Arc<[u8]> {
        let read = self.cache.get_or_insert_with(&n, || {
            let at = n * BLOCK_BYTES;
            let mut b = vec![0u8; BLOCK_BYTES.min(self.len.saturating_sub(at)) as usize];
            self.file.read_exact_at(&mut b, at).map(|()| Arc::<[u8]>::from(b))
        });
        read.unwrap_or_else(|_| Arc::from(vec![0u8; BLOCK_BYTES as usize]))
    }

    /// The `N` bytes at `at` (zeros past the end of the file).
    pub(crate) fn read<const N: usize>(&self, at: u64) -> [u8; N] {
        let (n, from) = (at / BLOCK_BYTES, (at % BLOCK_BYTES) as usize);
        // Most reads fall in the block the thread read last (a binary search ends in one).
        let hit = LAST.with_borrow(|last| match last {
            Some((id, k, block)) if *id == self.id && *k == n => {
                block.get(from..from + N).map(|b| <[u8; N]>::try_from(b).unwrap_or([0u8; N]))
            }
            _ => None,
        });
        if let Some(bytes) = hit {
            return bytes;
        }
        let mut out = [0u8; N];
        let mut done = 0;
        while done < N {
            let pos = at + done as u64;
            let block = self.block(pos / BLOCK_BYTES);
            LAST.set(Some((self.id, pos / BLOCK_BYTES, block.clone())));
            let from = (pos % BLOCK_BYTES) as usize;
            let Some(bytes) = block.get(from..) else { break };
            let n = bytes.len().min(N - done);
            if n == 0 {
                break;
            }
            out[done..done + n].copy_from_slice(&bytes[..n]);
            done += n;
        }
        out
    }

    /// Calls `f` with each `N`-byte record of `first..end` records from `base`, in order, read
    /// sequentially into a buffer of its own.
    pub(crate) fn scan<const N: usize>(
        &self,
        base: u64,
        first: u64,
        end: u64,
        mut f: impl FnMut(u64, [u8; N]),
    ) {
        let per = (SCAN_BYTES / N) as u64;
        let mut buf = vec![0u8; SCAN_BYTES];
        let mut i = first;
        while i < end {
            let n = per.min(end - i);
            let bytes = &mut buf[..n as usize * N];
            if self.file.read_exact_at(bytes, base + i * N as u64).is_err() {
                bytes.fill(0);
            }
            for (k, rec) in bytes.chunks_exact(N).enumerate() {
                let mut r = [0u8; N];
                r.copy_from_slice(rec);
                f(i + k as u64, r);
            }
            i += n;
        }
    }
}

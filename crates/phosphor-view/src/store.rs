//! How the index's records are read: by positioned reads into a bounded cache of blocks, not
//! through the mapping, so that the server's memory stays bounded whatever the index's size.
//!
//! A window query touches a few records in each of thousands of places (a binary search a
//! pixel). Through a mapping, each touch maps the pages around it too (the kernel's fault-around,
//! 64 KiB), and all of them count in the process's resident memory until it ends: one query over
//! a thread of 2 million slices made 72 MiB resident. Here a query reads blocks into a cache of at
//! most [`CACHE_BYTES`]: the records' compressed blocks (`blocks.rs`) decoded, by record number
//! ([`Store::record`]), and 16 KiB blocks of the uncompressed sections (the summaries), by
//! position ([`Store::read`]); the kernel's page cache, which is not the server's memory, keeps
//! the file's bytes between reads. Scans of whole sections (search, statistics) read and decompress
//! block after block into columns of their own ([`Store::scan`]), decode only the fields they
//! test, and leave the cache alone.

use std::cell::RefCell;
use std::fs::File;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::blocks::{BlockTable, Columns, Decoder, Layout};
use crate::Error;

/// Bytes of a cached block of an uncompressed section.
pub const BLOCK_BYTES: u64 = 16 << 10;
/// The most the cache holds (blocks read, and compressed blocks decoded).
pub const CACHE_BYTES: u64 = 16 << 20;
/// Bytes a scan reads at once.
const SCAN_BYTES: usize = 256 << 10;
/// The cache's keys: a raw block's number, or a compressed section's tag in the top byte and its
/// block's number below it.
const TAG_SHIFT: u32 = 56;

/// A block read: its store's id, its key, its bytes.
type Held = (u64, u64, Arc<[u8]>);

thread_local! {
    /// The block this thread read last.
    static LAST: RefCell<Option<Held>> = const { RefCell::new(None) };
    /// This thread's zstd context and the compressed bytes of the block it decodes.
    static DECODER: RefCell<Option<(Decoder, Vec<u8>)>> = const { RefCell::new(None) };
    /// The columns this thread's scans decompress blocks into, reused scan after scan.
    static SCRATCH: RefCell<Option<Columns>> = const { RefCell::new(None) };
}

/// Weighs a cached block by its bytes.
#[derive(Clone, Debug)]
struct Bytes;

impl quick_cache::Weighter<u64, Arc<[u8]>> for Bytes {
    fn weight(&self, _: &u64, block: &Arc<[u8]>) -> u64 {
        block.len().max(1) as u64
    }
}

/// A section stored as compressed blocks (`blocks.rs`), as the store reads it.
#[derive(Debug)]
pub(crate) struct Blocks {
    /// Its tag in the cache's keys (1 and up, one a section).
    tag: u64,
    /// Where it starts in the file.
    start: u64,
    layout: &'static Layout,
    table: BlockTable,
}

impl Blocks {
    pub(crate) fn new(tag: u8, start: u64, layout: &'static Layout, table: BlockTable) -> Blocks {
        Blocks { tag: u64::from(tag), start, layout, table }
    }

    /// Records in the section.
    pub(crate) fn records(&self) -> u64 {
        self.table.records
    }

    fn per_block(&self) -> u64 {
        u64::from(self.table.per_block)
    }

    fn key(&self, k: u64) -> u64 {
        self.tag << TAG_SHIFT | k
    }
}

/// An index file's bytes, read by position.
#[derive(Debug)]
pub(crate) struct Store {
    /// Distinguishes stores in each thread's last block ([`LAST`]).
    id: u64,
    file: File,
    path: PathBuf,
    len: u64,
    cache: quick_cache::sync::Cache<u64, Arc<[u8]>, Bytes>,
    /// The first compressed block found damaged while reading (see [`Store::record`]).
    damage: OnceLock<Error>,
}

impl Store {
    pub(crate) fn new(file: File, path: PathBuf, len: u64) -> Store {
        // Relaxed: only uniqueness is needed.
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Store {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            file,
            path,
            len,
            cache: quick_cache::sync::Cache::with_weighter(
                (CACHE_BYTES / BLOCK_BYTES) as usize,
                CACHE_BYTES,
                Bytes,
            ),
            damage: OnceLock::new(),
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
            read_exact_at(&self.file, &mut b, at).map(|()| Arc::<[u8]>::from(b))
        });
        read.unwrap_or_else(|_| Arc::from(vec![0u8; BLOCK_BYTES as usize]))
    }

    /// The block keyed `key`, if it is this thread's last one.
    fn last(&self, key: u64) -> Option<Arc<[u8]>> {
        LAST.with_borrow(|last| match last {
            Some((id, k, block)) if *id == self.id && *k == key => Some(block.clone()),
            _ => None,
        })
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

    /// Record `i` of the compressed section `s` (below its count): its `N` bytes from byte `from`
    /// of the record. The record's block is decoded once into the cache. A block that does not
    /// decode (damaged after the index was opened and checked: its checksum, or a disk failing)
    /// gives zeros, as a failed read does, and is kept as the store's damage ([`Store::damage`]),
    /// said once on the standard error.
    pub(crate) fn record<const N: usize>(&self, s: &Blocks, i: u64, from: usize) -> [u8; N] {
        if i >= s.records() {
            // Past the section (callers check; never a block out of the table).
            return [0u8; N];
        }
        let k = i / s.per_block();
        let key = s.key(k);
        let block = match self.last(key) {
            Some(b) => b,
            None => {
                let got = self.cache.get_or_insert_with(&key, || self.decode(s, k).map(Arc::<[u8]>::from));
                let Ok(block) = got else { return [0u8; N] };
                LAST.set(Some((self.id, key, block.clone())));
                block
            }
        };
        let at = (i % s.per_block()) as usize * s.layout.bytes + from;
        block.get(at..at + N).and_then(|b| <[u8; N]>::try_from(b).ok()).unwrap_or([0u8; N])
    }

    /// Block `k` of `s`, decoded.
    fn decode(&self, s: &Blocks, k: u64) -> Result<Vec<u8>, ()> {
        let (at, len, n) = s.table.block(k);
        DECODER.with_borrow_mut(|d| {
            if d.is_none() {
                *d = Some((
                    Decoder::new().map_err(|e| self.damaged(s.start + at, e.to_string()))?,
                    Vec::new(),
                ));
            }
            let Some((decoder, frame)) = d else { return Err(()) };
            frame.resize(len as usize, 0);
            let at = s.start + at;
            read_exact_at(&self.file, frame, at).map_err(|e| self.damaged(at, e.to_string()))?;
            let mut out = Vec::new();
            decoder.decode(s.layout, n, frame, &mut out).map_err(|e| self.damaged(at, e.0))?;
            Ok(out)
        })
    }

    /// Keeps the first damage found (and says it once).
    #[cold]
    #[inline(never)]
    fn damaged(&self, at: u64, what: String) {
        let e = Error::Index { path: self.path.clone(), offset: at, what };
        if self.damage.get().is_none() {
            eprintln!("phosphor view: {e} (its records read as zeros; delete the index to build it again)");
        }
        let _ = self.damage.set(e);
    }

    /// The first damage found in a compressed block while reading, if any.
    pub(crate) fn damage(&self) -> Option<&Error> {
        self.damage.get()
    }

    /// Calls `f` with each block of `s` from block `first` to `last` (included) and its bytes, in
    /// order, read sequentially in runs of blocks; stops at the first error `f` returns.
    fn frames<E>(
        &self,
        s: &Blocks,
        first: u64,
        last: u64,
        mut f: impl FnMut(u64, &[u8]) -> Result<(), E>,
        io: impl Fn(u64, std::io::Error) -> E,
    ) -> Result<(), E> {
        let mut buf: Vec<u8> = Vec::new();
        // The run in `buf`: its start in the section, and the block after it.
        let (mut from, mut next) = (0u64, first);
        let mut k = first;
        while k <= last {
            if k >= next {
                let (start, _, _) = s.table.block(k);
                // Blocks from `k` as long as they fit in a run (at least one).
                let mut end_block = k;
                while end_block < last {
                    let (a, l, _) = s.table.block(end_block + 1);
                    if a + l - start > SCAN_BYTES as u64 {
                        break;
                    }
                    end_block += 1;
                }
                let (a, l, _) = s.table.block(end_block);
                buf.resize((a + l - start) as usize, 0);
                read_exact_at(&self.file, &mut buf, s.start + start).map_err(|e| io(s.start + start, e))?;
                (from, next) = (start, end_block + 1);
            }
            let (a, l, _) = s.table.block(k);
            f(k, &buf[(a - from) as usize..(a - from + l) as usize])?;
            k += 1;
        }
        Ok(())
    }

    /// Checks every block of `s` without decoding it (`blocks::check_frame`): what the index's
    /// opening checks of its compressed sections.
    pub(crate) fn check(&self, s: &Blocks) -> Result<(), Error> {
        let blocks = s.table.ends.len() as u64;
        if blocks == 0 {
            return Ok(());
        }
        let bad = |at: u64, what: String| Error::Index { path: self.path.clone(), offset: at, what };
        self.frames(
            s,
            0,
            blocks - 1,
            |k, frame| {
                let (at, _, n) = s.table.block(k);
                crate::blocks::check_frame(frame, n * s.layout.bytes).map_err(|e| bad(s.start + at, e.0))
            },
            |at, e| bad(at, e.to_string()),
        )
    }

    /// Calls `f` with each block holding records `first..end` of `s`, in order, decompressed
    /// outside the cache: the number of the block's first record, the rows of the block in
    /// `first..end`, and its columns, which `f` decodes as it needs them ([`Columns::want`]). A
    /// damaged block's fields are zeros, as [`Store::record`] gives them.
    pub(crate) fn scan(
        &self,
        s: &Blocks,
        first: u64,
        end: u64,
        mut f: impl FnMut(u64, Range<usize>, &mut Columns),
    ) {
        let end = end.min(s.records());
        if first >= end {
            return;
        }
        let per = s.per_block();
        let mut decoder =
            DECODER.with_borrow_mut(|d| d.take().map(|(d, _)| d)).or_else(|| Decoder::new().ok());
        let mut columns = SCRATCH.with_borrow_mut(std::mem::take).unwrap_or_else(Decoder::scratch);
        let mut each = |k: u64, frame: &[u8]| -> Result<(), ()> {
            let (at, _, n) = s.table.block(k);
            let decoded = match &mut decoder {
                Some(d) => d.columns(s.layout, n, frame, &mut columns).map_err(|e| e.0),
                None => Err("no zstd context".into()),
            };
            if let Err(e) = decoded {
                self.damaged(s.start + at, e);
                columns.zeros(s.layout, n);
            }
            let lo = if k == first / per { (first % per) as usize } else { 0 };
            let hi = if k == (end - 1) / per { ((end - 1) % per + 1) as usize } else { n };
            f(k * per, lo..hi, &mut columns);
            Ok(())
        };
        let io = |at: u64, e: std::io::Error| self.damaged(at, e.to_string());
        let _ = self.frames(s, first / per, (end - 1) / per, &mut each, io);
        if let Some(d) = decoder {
            DECODER.with_borrow_mut(|slot| {
                if slot.is_none() {
                    *slot = Some((d, Vec::new()));
                }
            });
        }
        SCRATCH.set(Some(columns));
    }
}

/// Reads exactly `buf.len()` bytes at `offset` without moving a shared cursor: `pread` on Unix;
/// on Windows `seek_read`, whose offset goes with each call (it may read less: looped).
#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

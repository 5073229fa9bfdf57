//! File-backed Ring buffers (`TraceConfig::file_backed`): the chunks live in a shared memory
//! mapping of a ring file (`phosphor_format::file::ring` has the layout), so the kernel keeps every
//! committed event when the process dies, even of `SIGKILL`; `phosphor recover` turns the file
//! into a trace file. Recording is unchanged: a tenant writes into a mapped page as into a heap
//! one.
//!
//! The callsites are written into the file's metadata region as trace-file blocks: every callsite
//! registered when the trace starts (all static ones, through the linker section), then each one
//! registered later, by the registry, under its lock.
//!
//! The mapping lives in the registry, the lowest layer that uses it (the registry writes the
//! metadata; the recording path's `TraceBuffer` uses the chunks, through `Mapping::chunks` in
//! `record/buffer.rs`, next to the chunk type), so that neither layer imports the other's upper
//! neighbour.

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use phosphor_format::chunk::CHUNK_BYTES;
use phosphor_format::file::raw;
use phosphor_format::file::ring::{at, RING_HEADER_BYTES, RING_MAGIC};

use crate::registry::callsite::Callsite;

/// Bytes of the metadata region (callsite definitions): about 10,000 callsites.
pub(crate) const META_CAPACITY: usize = 4 << 20;

/// A shared mapping of a ring file, unmapped when dropped.
#[derive(Debug)]
pub(crate) struct Mapping {
    /// The start of the mapping (page-aligned); the chunk region starts at `RING_HEADER_BYTES`.
    pub(crate) base: *mut u8,
    len: usize,
    /// Chunks in the chunk region.
    pub(crate) chunks: usize,
}

// SAFETY: the mapping is plain shared memory owned by this value; the chunks in it are accessed
// under the same rules as heap chunks (see `TraceBuffer`), and the metadata only under the
// registry lock.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base` and `len` are those of our own successful mmap, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

impl Mapping {
    fn meta_len(&self) -> &AtomicU64 {
        // SAFETY: offset 40 of the page-aligned mapping is 8-byte aligned and inside the header;
        // only the registry (under its lock) writes it.
        unsafe { &*self.base.add(at::META_LEN).cast::<AtomicU64>() }
    }

    fn meta_strings(&self) -> &AtomicU64 {
        // SAFETY: as in `meta_len`, at offset 48.
        unsafe { &*self.base.add(at::META_STRINGS).cast::<AtomicU64>() }
    }

    /// Appends `id`'s definition (its strings, then its entry) to the metadata region. Called under
    /// the registry lock. A full region leaves the callsite out (recovered events of it are then
    /// reported as of an unknown callsite).
    pub(crate) fn append_callsite(&self, id: u32, cs: &Callsite) {
        let m = cs.meta();
        let strs = m.file_strings();
        let mut buf = vec![0u8; 64 + strs.iter().map(|s| s.len() + 4).sum::<usize>()];
        // Relaxed: only the registry, under its lock, writes these.
        let (len, first) =
            (self.meta_len().load(Ordering::Relaxed), self.meta_strings().load(Ordering::Relaxed));
        let Some(a) = raw::strings_block(&mut buf, &strs) else { return };
        let entry = m.raw_entry(id, first as u32);
        let mut entry_buf = [0u8; 64];
        let Some(b) = raw::callsite_block(&mut entry_buf, &entry) else { return };
        let start = len as usize;
        if start + a + b > META_CAPACITY {
            return;
        }
        let meta = RING_HEADER_BYTES + self.chunks * CHUNK_BYTES;
        // SAFETY: `meta + start .. + a + b` is inside the metadata region (checked above), which
        // only the registry writes, under its lock.
        unsafe {
            let dst = self.base.add(meta + start);
            std::ptr::copy_nonoverlapping(buf.as_ptr(), dst, a);
            std::ptr::copy_nonoverlapping(entry_buf.as_ptr(), dst.add(a), b);
        }
        // Relaxed: the length is stored last, and a reader of the file (after the process is gone,
        // or `recover` of a live one) sees whole blocks up to it; within the process nothing
        // synchronises on it.
        self.meta_strings().store(first + 5, Ordering::Relaxed);
        self.meta_len().store((start + a + b) as u64, Ordering::Relaxed);
    }
}

/// Gives the file `len` bytes and reserves their blocks, so that a store into any page of the
/// mapping never finds the filesystem full: without the reservation the file would be sparse, and a
/// recording thread's first store into a page the filesystem has no block for would get `SIGBUS`.
/// A full filesystem is then an error here, at `start`. On tmpfs (`/dev/shm`) the blocks are
/// memory. A filesystem that cannot `fallocate` (`EOPNOTSUPP`, or `EINVAL` from some that do not
/// support the operation), and a system other than Linux, gets zeros written over the whole length
/// instead, which allocates the blocks on every filesystem that does not compress or deduplicate
/// zeros.
fn reserve(f: &std::fs::File, len: usize) -> std::io::Result<()> {
    #[cfg(not(target_os = "linux"))]
    return write_zeros(f, len);
    #[cfg(target_os = "linux")]
    let n = libc::off_t::try_from(len)
        .map_err(|_| std::io::Error::other("the ring file is larger than a file offset"))?;
    #[cfg(target_os = "linux")]
    loop {
        // SAFETY: `f` is an open file of ours; posix_fallocate takes no memory from us. It returns
        // the error number rather than setting errno.
        match unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, n) } {
            0 => return Ok(()),
            libc::EINTR => continue,
            libc::EOPNOTSUPP | libc::EINVAL => return write_zeros(f, len),
            e => return Err(std::io::Error::from_raw_os_error(e)),
        }
    }
}

/// Writes zeros over the file's first `len` bytes (extending it to `len`).
fn write_zeros(f: &std::fs::File, len: usize) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let zeros = vec![0u8; 1 << 16];
    let mut at = 0;
    while at < len {
        let n = zeros.len().min(len - at);
        f.write_all_at(&zeros[..n], at as u64)?;
        at += n;
    }
    Ok(())
}

/// Creates the ring file at `path` for `chunks` chunks, with `head` (the trace file's preamble and
/// header block) in its header, and maps it.
pub(crate) fn create(path: &Path, chunks: usize, head: &[u8]) -> std::io::Result<Mapping> {
    if head.len() > RING_HEADER_BYTES - at::HEAD {
        return Err(std::io::Error::other("the process and host names are too long for the ring header"));
    }
    let len = RING_HEADER_BYTES + chunks * CHUNK_BYTES + META_CAPACITY;
    // A new file renamed over the path, never the old file truncated: a trace taken from an earlier
    // file-backed trace may still map the old one.
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".new");
    let f = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&tmp)?;
    if let Err(e) = reserve(&f, len) {
        let _ = std::fs::remove_file(&tmp);
        return Err(std::io::Error::new(e.kind(), format!("reserving {len} bytes: {e}")));
    }
    std::fs::rename(&tmp, path)?;
    // SAFETY: mapping `len` bytes of a file we just sized to `len` (and reserved), shared,
    // read-write.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    let m = Mapping { base: base.cast(), len, chunks };
    let put = |at: usize, bytes: &[u8]| {
        // SAFETY: every field written lies in the first page of the mapping, before anything
        // else can see it.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), m.base.add(at), bytes.len()) }
    };
    put(0, &RING_MAGIC);
    put(at::VERSION, &1u32.to_le_bytes());
    put(at::CHUNK_SIZE, &(CHUNK_BYTES as u32).to_le_bytes());
    put(at::CHUNK_COUNT, &(chunks as u64).to_le_bytes());
    put(at::META_OFFSET, &((RING_HEADER_BYTES + chunks * CHUNK_BYTES) as u64).to_le_bytes());
    put(at::META_CAPACITY, &(META_CAPACITY as u64).to_le_bytes());
    put(at::HEAD_LEN, &(head.len() as u32).to_le_bytes());
    put(at::HEAD, head);
    Ok(m)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    #[test]
    fn the_fallback_reservation_allocates_every_block_of_a_sparse_file() {
        let path = std::env::temp_dir().join(format!("phosphor-ring-zeros-{}", std::process::id()));
        let f = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        let len = (1 << 20) + 100;
        f.set_len(len as u64).unwrap();
        let sparse = f.metadata().unwrap().blocks();
        write_zeros(&f, len).unwrap();
        let m = f.metadata().unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(m.len(), len as u64);
        assert!(sparse * 512 < len as u64, "the file was sparse: {sparse} blocks");
        assert!(m.blocks() * 512 >= len as u64, "{} blocks of 512 bytes for {len} bytes", m.blocks());
    }
}

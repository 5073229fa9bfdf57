//! Where a static string argument may be read. A static string word is an address and a length
//! packed into a record (`arg::Static`, `phosphor_format::pack_static_str`); the crash dump and the
//! tools (`Trace::events`, `Trace::save`, the stream writers) turn it back into bytes. Recorded
//! through the sealed `Arg` trait it always points into a `&'static str`, but corrupted memory (the
//! crash dump runs when something already went wrong) or a forged record can hold any word, and
//! reading through that would fault. So a word is read in place only inside a *known range*:
//!
//! * the readable, non-writable `PT_LOAD` segments of every object loaded when the ranges were
//!   collected (the program and its shared libraries: string literals live there), found with
//!   `dl_iterate_phdr`, outside any signal handler, and kept in static storage that a handler reads
//!   without a lock. They are collected again whenever the loader's counters of objects added and
//!   removed (`dlpi_adds`, `dlpi_subs`) have moved since: [`collect`] checks them (one
//!   `dl_iterate_phdr` step, about 10 ns) and the tools call it before each in-place read. A
//!   library unloaded since the last check still has its range here; a signal handler cannot
//!   check (the loader's lock), so the crash dump may read an unloaded library's range: then it
//!   faults, and the dump is cut short there (see `dump_on_crash`);
//! * the interner's arena, up to the bytes it has handed out (a static, never freed).
//!
//! A word outside them is not necessarily bad (a string leaked on the heap is a `&'static str`
//! too, and so is one of a library loaded later), so its bytes are copied by the kernel instead:
//! written into a pipe, which fails with `EFAULT` rather than faulting when they are not all
//! readable, and read back. The copy is used, never the address. Bytes that cannot be copied are a
//! bad string: the callers show [`BAD_STATIC_STR`](crate::output::trace::BAD_STATIC_STR) in their place.
//!
//! All this is Linux's (`dl_iterate_phdr`'s 64-bit program headers, `pipe2`); elsewhere the tools
//! trust a word as recorded, as they did before (the crash handler is Linux only).

#[cfg(target_os = "linux")]
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
#[cfg(target_os = "linux")]
use std::sync::Mutex;

/// The most segments kept (a program with its usual libraries has about a dozen read-only ones);
/// strings in segments past it are copied by the kernel, as if unknown.
const MAX_RANGES: usize = 256;

/// The known segments, `[start, end)` each, sorted by start; the first `COUNT` are valid.
static RANGES: [[AtomicUsize; 2]; MAX_RANGES] =
    [const { [AtomicUsize::new(0), AtomicUsize::new(0)] }; MAX_RANGES];
/// How many of `RANGES` are filled.
static COUNT: AtomicUsize = AtomicUsize::new(0);
/// A sequence lock around `RANGES` and `COUNT` (Boehm, "Can seqlocks get along with programming
/// language memory models?", 2012): odd while [`collect`] rewrites them. A reader that sees it odd
/// or changed across its reads takes the address as unknown (the kernel then copies the bytes).
static SEQ: AtomicUsize = AtomicUsize::new(0);
/// Serialises the writers, and holds the loader's counters `(dlpi_adds, dlpi_subs)` the ranges
/// were collected at (`None`: never collected).
#[cfg(target_os = "linux")]
static COLLECTED: Mutex<Option<(u64, u64)>> = Mutex::new(None);
/// `COLLECTED`'s counters for the check without the lock: `dlpi_adds + 1` (0: never collected),
/// then `dlpi_subs`.
#[cfg(target_os = "linux")]
static SEEN: [std::sync::atomic::AtomicU64; 2] = [const { std::sync::atomic::AtomicU64::new(0) }; 2];
#[cfg(not(target_os = "linux"))]
static COLLECT: std::sync::Once = std::sync::Once::new();

/// Collects the loaded objects' read-only segments: the first time, and again whenever an object
/// was loaded or unloaded since (else it returns after one `dl_iterate_phdr` step). Not for a
/// signal handler: `dl_iterate_phdr` takes the loader's lock.
#[cfg(target_os = "linux")]
pub(crate) fn collect() {
    let now = loader_counts().unwrap_or((0, 0));
    // Acquire: pairs with the Release stores below, made after the rewrite. Without a lock: the
    // tools call this before every in-place read. The counters only grow, so equal means current.
    if SEEN[0].load(Ordering::Acquire) == now.0.wrapping_add(1) && SEEN[1].load(Ordering::Acquire) == now.1 {
        return;
    }
    // Each step leaves the state consistent, so a poisoned lock is safe to keep using.
    let mut at = COLLECTED.lock().unwrap_or_else(|p| p.into_inner());
    if *at == Some(now) {
        return;
    }
    rewrite(segments());
    *at = Some(now);
    // Release: a later `collect` that sees these sees the rewrite.
    SEEN[1].store(now.1, Ordering::Release);
    SEEN[0].store(now.0.wrapping_add(1), Ordering::Release);
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn collect() {
    COLLECT.call_once(|| rewrite(segments()));
}

/// Replaces the known ranges with `found`, under the sequence lock.
fn rewrite(mut found: Vec<(usize, usize)>) {
    found.truncate(MAX_RANGES);
    found.sort_unstable();
    // Relaxed: only writers (serialised by the caller) change `SEQ`.
    let seq = SEQ.load(Ordering::Relaxed);
    // Relaxed, then a Release fence: a reader whose Relaxed loads below see any of our stores
    // synchronises with this fence through its Acquire fence, and then reads `SEQ` odd or moved.
    SEQ.store(seq.wrapping_add(1), Ordering::Relaxed);
    std::sync::atomic::fence(Ordering::Release);
    // Relaxed: covered by the fences and the Release store of `SEQ` below.
    COUNT.store(found.len(), Ordering::Relaxed);
    for (slot, &(start, end)) in RANGES.iter().zip(&found) {
        slot[0].store(start, Ordering::Relaxed);
        slot[1].store(end, Ordering::Relaxed);
    }
    // Release: a reader that loads this value with Acquire sees every range above.
    SEQ.store(seq.wrapping_add(2), Ordering::Release);
}

/// The loader's counters of objects added and removed since the process started (`None` if the
/// loader gave no object).
#[cfg(target_os = "linux")]
fn loader_counts() -> Option<(u64, u64)> {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> i32 {
        // SAFETY: `dl_iterate_phdr` passes a valid `dl_phdr_info` (glibc fills both counters), and
        // `data` is the `Option` that `loader_counts` passed, borrowed by no one else meanwhile.
        unsafe { *data.cast::<Option<(u64, u64)>>() = Some(((*info).dlpi_adds, (*info).dlpi_subs)) };
        1 // every object has the same counters: stop at the first
    }
    let mut out: Option<(u64, u64)> = None;
    // SAFETY: `first` matches the callback's signature and writes only `out`, which outlives the
    // call.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut out as *mut Option<(u64, u64)>).cast()) };
    out
}

/// The read-only `PT_LOAD` segments of every loaded object.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn segments() -> Vec<(usize, usize)> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> i32 {
        // SAFETY: `dl_iterate_phdr` passes a valid `dl_phdr_info` whose `dlpi_phdr` points to
        // `dlpi_phnum` program headers, and `data` is the `Vec` that `segments` passed, borrowed by
        // no one else during the call.
        let (info, out) = unsafe { (&*info, &mut *data.cast::<Vec<(usize, usize)>>()) };
        let headers: &[libc::Elf64_Phdr] = if info.dlpi_phdr.is_null() {
            &[]
        } else {
            // SAFETY: as above.
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr.cast(), usize::from(info.dlpi_phnum)) }
        };
        for h in headers {
            if h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_R != 0 && h.p_flags & libc::PF_W == 0 {
                let start = (info.dlpi_addr as usize).wrapping_add(h.p_vaddr as usize);
                if let Some(end) = start.checked_add(h.p_memsz as usize) {
                    out.push((start, end));
                }
            }
        }
        0
    }
    let mut out: Vec<(usize, usize)> = Vec::new();
    // SAFETY: `each` matches the callback's signature and only reads what it is given; `out`
    // outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut out as *mut Vec<(usize, usize)>).cast()) };
    out
}

/// Elsewhere no segment is known, and every static string is copied by the kernel.
#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn segments() -> Vec<(usize, usize)> {
    Vec::new()
}

/// Whether `addr..addr + len` lies inside one known range: a segment collected by [`collect`], or
/// the interner's arena. Async-signal-safe: atomic loads only.
pub(crate) fn is_known(addr: usize, len: usize) -> bool {
    let Some(end) = addr.checked_add(len) else { return false };
    let (arena, arena_end) = crate::registry::intern::INTERNER.arena_range();
    if addr >= arena && end <= arena_end {
        return true;
    }
    // Acquire: pairs with the Release store that ended the last rewrite, so the ranges it wrote
    // are what we read (unless another rewrite starts meanwhile: checked below).
    let seq = SEQ.load(Ordering::Acquire);
    if seq % 2 == 1 {
        return false;
    }
    // Relaxed: ordered by the loads of `SEQ` around them.
    let n = COUNT.load(Ordering::Relaxed).min(MAX_RANGES);
    let start_of = |i: usize| RANGES[i][0].load(Ordering::Relaxed);
    // The last range starting at or below `addr` is the only one that can hold it (the sorted
    // ranges may overlap only if the loader reports overlapping segments, which it does not).
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if start_of(mid) <= addr {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let inside = lo > 0 && end <= RANGES[lo - 1][1].load(Ordering::Relaxed);
    // Acquire fence: if any load above saw a rewrite's store, it synchronises with that rewrite's
    // Release fence, and `SEQ` below reads odd or moved.
    std::sync::atomic::fence(Ordering::Acquire);
    // Relaxed: ordered by the fence.
    inside && SEQ.load(Ordering::Relaxed) == seq
}

/// Copies `out.len()` bytes at `addr` into `out` through the pipe `fds` (both ends non-blocking,
/// empty), by `write` and `read`: the kernel copies them, and fails with `EFAULT` instead of
/// faulting when some are not readable. Returns whether every byte was copied; the pipe is left
/// empty either way. Async-signal-safe: system calls only, no allocation.
#[cfg(target_os = "linux")]
pub(crate) fn copy_by_kernel(fds: [libc::c_int; 2], addr: usize, out: &mut [u8]) -> bool {
    // At most PIPE_BUF bytes at a time: a pipe holds at least that much (even one shrunk to a
    // page because its user holds many), so each piece fits whole.
    const PIECE: usize = 4096;
    let mut done = 0;
    while done < out.len() {
        let want = PIECE.min(out.len() - done);
        let wrote = retry(|| {
            // SAFETY: `write` reads from `addr + done` in the kernel, which reports an unreadable
            // byte as EFAULT (a short count or -1); no user-space access is made.
            unsafe { libc::write(fds[1], (addr + done) as *const libc::c_void, want) }
        });
        let dst = &mut out[done..done + want];
        let mut got = 0;
        // Drain what was written (all of it, or a prefix before a fault).
        while got < wrote.max(0) as usize {
            // SAFETY: `dst[got..]` is a valid writable buffer of the length given.
            let n = retry(|| unsafe { libc::read(fds[0], dst[got..].as_mut_ptr().cast(), dst.len() - got) });
            if n <= 0 {
                break;
            }
            got += n as usize;
        }
        if wrote != want as isize || got != want {
            return false;
        }
        done += want;
    }
    true
}

/// `f()` again while it fails with EINTR.
#[cfg(target_os = "linux")]
fn retry(mut f: impl FnMut() -> isize) -> isize {
    loop {
        let n = f();
        // SAFETY: reading errno is async-signal-safe.
        if n >= 0 || unsafe { *libc::__errno_location() } != libc::EINTR {
            return n;
        }
    }
}

/// The most bytes [`resolve`] keeps in kernel-made copies, and the most words it remembers;
/// strings past them show as bad.
#[cfg(target_os = "linux")]
const MAX_COPIED_BYTES: usize = 4 << 20;
#[cfg(target_os = "linux")]
const MAX_COPIED_WORDS: usize = 1 << 16;

/// The kernel-made copies of strings outside the known ranges, by `(address, length)`, and the
/// pipe they are made through. Leaked: a copy is `'static`, like the string it stands for.
#[cfg(target_os = "linux")]
struct Copies {
    fds: Option<[libc::c_int; 2]>,
    by_word: HashMap<(usize, usize), Option<&'static [u8]>>,
    bytes: usize,
}

#[cfg(target_os = "linux")]
static COPIES: Mutex<Option<Copies>> = Mutex::new(None);

/// The copies' lock, held across a `fork` (see `trace_log/fork.rs`): a thread resolving a string
/// (saving a trace) holds it, and a child forked then would find it held for ever. A leaf: taken
/// after the control locks (a save under one, `with_last_trace`), and nothing is taken under it.
#[cfg(target_os = "linux")]
pub(crate) struct ForkLock(#[allow(dead_code)] std::sync::MutexGuard<'static, Option<Copies>>);

#[cfg(target_os = "linux")]
impl ForkLock {
    pub(crate) fn take() -> ForkLock {
        ForkLock(COPIES.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The bytes of the static string `addr..addr + len`, for the tools (not for a signal handler):
/// read in place inside a known range, else a copy the kernel made (kept for the next request),
/// else `None`: not readable memory.
pub(crate) fn resolve(addr: usize, len: usize) -> Option<&'static [u8]> {
    if len == 0 {
        return Some(&[]);
    }
    collect();
    if is_known(addr, len) {
        // SAFETY: the range lies in the interner's arena, a static readable for the life of the
        // process (its bytes are written once, before the string they hold is published, and a
        // word the recorder wrote points at published bytes only), or in a read-only segment of
        // an object that was loaded when `collect` checked the loader's counters, just above. It
        // stays mapped while the object stays loaded; a `dlclose` of it on another thread right
        // now would unmap it, but would also leave every `&'static str` it lent dangling (the
        // program's own included), which is the program's to prevent.
        return Some(unsafe { std::slice::from_raw_parts(addr as *const u8, len) });
    }
    #[cfg(target_os = "linux")]
    {
        // Marked busy while the lock is held: an event that an instrumented allocator records
        // meanwhile is dropped (counted) rather than attach, which would take a control lock
        // under this one, the reverse of a fork's `prepare` (see `ForkLock`). Declared first, so
        // it ends after the lock is released.
        let _busy = crate::record::thread::BusyGuard::enter();
        // Each step leaves the cache consistent, so a poisoned lock is safe to keep using.
        let mut guard = COPIES.lock().unwrap_or_else(|p| p.into_inner());
        let c = guard.get_or_insert_with(|| Copies { fds: None, by_word: HashMap::new(), bytes: 0 });
        if let Some(&known) = c.by_word.get(&(addr, len)) {
            return known;
        }
        if c.bytes + len > MAX_COPIED_BYTES || c.by_word.len() >= MAX_COPIED_WORDS {
            return None;
        }
        let fds = match c.fds {
            Some(fds) => fds,
            None => {
                let mut fds = [0; 2];
                // SAFETY: `fds` is a valid two-int array for pipe2 to fill.
                if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
                    return None;
                }
                *c.fds.insert(fds)
            }
        };
        let mut copy = vec![0u8; len];
        let copied = copy_by_kernel(fds, addr, &mut copy).then(|| &*Vec::leak(copy));
        c.bytes += copied.map_or(0, <[u8]>::len);
        c.by_word.insert((addr, len), copied);
        copied
    }
    #[cfg(not(target_os = "linux"))]
    {
        // SAFETY: where the kernel is not asked (outside Linux), a word is trusted as recorded:
        // the sealed `Arg` trait packs static string words from `&'static str`s only.
        Some(unsafe { std::slice::from_raw_parts(addr as *const u8, len) })
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    fn literals_and_the_arena_are_known_and_the_heap_and_page_zero_are_not() {
        collect();
        let lit = "a string literal of this binary";
        assert!(is_known(lit.as_ptr() as usize, lit.len()));
        let interned = crate::registry::intern::INTERNER.intern("addr-test-interned").unwrap();
        assert!(is_known(interned.as_ptr() as usize, interned.len()));
        let heap = String::from("on the heap");
        assert!(!is_known(heap.as_ptr() as usize, heap.len()));
        assert!(!is_known(0x10, 5));
        assert!(!is_known(usize::MAX - 2, 5), "no overflow");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn the_kernel_copies_readable_bytes_and_refuses_the_others() {
        // Leaked, as a static string on the heap is: the copies are remembered by address.
        let heap: &'static str = String::from("heap bytes").repeat(1000).leak();
        let got = resolve(heap.as_ptr() as usize, heap.len()).unwrap();
        assert_eq!(got, heap.as_bytes());
        assert_ne!(got.as_ptr(), heap.as_ptr(), "a copy, not the address");
        assert_eq!(resolve(0x10, 5), None);
        assert_eq!(resolve(0x10, 5), None, "remembered");
        assert_eq!(resolve(0x10, 0), Some(&[][..]), "nothing to read");
    }

    /// The start of the first read-only segment of the loaded object whose name ends with `name`.
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    fn segment_of(name: &str) -> Option<usize> {
        unsafe extern "C" fn each(
            info: *mut libc::dl_phdr_info,
            _: libc::size_t,
            data: *mut libc::c_void,
        ) -> i32 {
            // SAFETY: as in `segments`; `data` is the `(name, found)` pair of `segment_of`.
            let (info, (name, found)) = unsafe { (&*info, &mut *data.cast::<(&str, Option<usize>)>()) };
            // SAFETY: the loader's name of a loaded object is a NUL-terminated string (or null).
            let own =
                (!info.dlpi_name.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) });
            if !own.is_some_and(|n| n.to_bytes().ends_with(name.as_bytes())) {
                return 0;
            }
            // SAFETY: as in `segments`.
            let headers: &[libc::Elf64_Phdr] =
                unsafe { std::slice::from_raw_parts(info.dlpi_phdr.cast(), usize::from(info.dlpi_phnum)) };
            *found = headers
                .iter()
                .find(|h| {
                    h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_R != 0 && h.p_flags & libc::PF_W == 0
                })
                .map(|h| (info.dlpi_addr as usize).wrapping_add(h.p_vaddr as usize));
            1
        }
        let mut data: (&str, Option<usize>) = (name, None);
        // SAFETY: `each` matches the callback's signature; `data` outlives the call.
        unsafe { libc::dl_iterate_phdr(Some(each), (&mut data as *mut (&str, Option<usize>)).cast()) };
        data.1
    }

    #[test]
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    fn a_library_loaded_after_the_first_collection_is_known_and_forgotten_once_unloaded() {
        collect();
        // A system library this process has not loaded yet.
        let Some((name, handle)) =
            ["libcrypt.so.1", "libresolv.so.2", "libanl.so.1", "libutil.so.1"].iter().find_map(|n| {
                let c = std::ffi::CString::new(*n).unwrap();
                // SAFETY: dlopen with a NUL-terminated name; RTLD_NOLOAD only asks whether it is loaded.
                let loaded =
                    unsafe { !libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD).is_null() };
                let h = if loaded {
                    std::ptr::null_mut()
                } else {
                    // SAFETY: as above; the handle is closed below. A system library's
                    // initialisers are safe to run in a test process.
                    unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) }
                };
                (!h.is_null()).then_some((*n, h))
            })
        else {
            eprintln!("no unloaded system library to load: nothing to check");
            return;
        };
        let start = segment_of(name).expect("the library just loaded");
        collect();
        assert!(is_known(start, 1), "{name}'s read-only segment is known once the loader's counters moved");
        // SAFETY: the handle came from dlopen above and nothing of the library is used after.
        assert_eq!(unsafe { libc::dlclose(handle) }, 0);
        if segment_of(name).is_none() {
            collect();
            assert!(!is_known(start, 1), "{name} was unloaded: its range is no longer read in place");
        }
    }
}

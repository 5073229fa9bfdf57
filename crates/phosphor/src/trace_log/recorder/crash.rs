//! The fatal signals' dump ([`dump_on_crash`]): an async-signal-safe handler that writes a trace
//! file with raw `write`s from static scratch space and the registry's lock-free crash list, one
//! writer per process, then lets the signal take its course. Guarantees per failure mode:
//! docs/FLIGHT_RECORDER.md.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};

use crate::error::{Error, ErrorKind};
use crate::TraceLog;
use phosphor_format::Record;

/// The signals [`dump_on_crash`] handles.
pub const CRASH_SIGNALS: [libc::c_int; 5] =
    [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE, libc::SIGABRT];

/// What the crash handler needs, prepared while allocating is still allowed.
struct CrashSetup {
    log: &'static TraceLog,
    /// The process that set it up. A forked child inherits the handlers, but its tracing is
    /// stopped at the fork and the path is the parent's: it does not dump.
    pid: u32,
    /// NUL-terminated path.
    path: std::ffi::CString,
    /// The preamble and the header block.
    head: Vec<u8>,
}

/// The crash handler's scratch space: a chunk's records and one encoded block, and the action
/// each signal had before ours. Statics rather than the (small) signal stack.
struct Scratch {
    records: std::cell::UnsafeCell<[phosphor_format::Record; phosphor_format::chunk::CHUNK_RECORDS]>,
    block: std::cell::UnsafeCell<[u8; 2 * phosphor_format::chunk::CHUNK_BYTES]>,
    previous: std::cell::UnsafeCell<[std::mem::MaybeUninit<libc::sigaction>; CRASH_SIGNALS.len()]>,
}

// SAFETY: `records` and `block` are used only by the thread that wins `CRASH_OWNER`, which happens
// once per process (a child's copy of its parent's owner names a thread the child does not have).
// `previous[k]` is written only by `dump_on_crash` (once per process: it must win `CRASH_SETUP`
// first), before it sets `PREVIOUS_STORED[k]` with Release; a handler reads it only
// after an Acquire load of that flag returned true, and nothing writes it after.
unsafe impl Sync for Scratch {}

static SCRATCH: Scratch = Scratch {
    records: std::cell::UnsafeCell::new(
        [phosphor_format::Record::new(0, 0, phosphor_format::Meta(0), [0; 2]);
            phosphor_format::chunk::CHUNK_RECORDS],
    ),
    block: std::cell::UnsafeCell::new([0; 2 * phosphor_format::chunk::CHUNK_BYTES]),
    previous: std::cell::UnsafeCell::new([const { std::mem::MaybeUninit::uninit() }; CRASH_SIGNALS.len()]),
};

/// Whether `SCRATCH.previous[k]` holds the action `CRASH_SIGNALS[k]` had before ours.
static PREVIOUS_STORED: [AtomicBool; CRASH_SIGNALS.len()] =
    [const { AtomicBool::new(false) }; CRASH_SIGNALS.len()];

static CRASH_SETUP: std::sync::atomic::AtomicPtr<CrashSetup> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// The thread that writes the crash dump, as `pid << 32 | tid` (its process's id, its kernel
/// thread id): 0 until the first crash. The pid makes the state per process: a child forked while
/// a thread of its parent was writing the dump inherits this word but not that thread, and a
/// crash in the child sees an owner of another process, which it takes over (see `on_crash`). The
/// fork handler also clears it in the child (`after_fork_in_child`), but a child made by a raw
/// `clone` or `vfork`, or forked from inside the recorder, runs no handler.
static CRASH_OWNER: AtomicU64 = AtomicU64::new(0);

/// The calling thread as an owner word: `pid << 32 | tid`. Async-signal-safe.
fn owner_word() -> u64 {
    // SAFETY: getpid and gettid are async-signal-safe and cannot fail.
    let (pid, tid) = unsafe { (libc::getpid(), libc::gettid()) };
    (u64::from(pid as u32) << 32) | u64::from(tid as u32)
}

/// Whether `owner` (a `CRASH_OWNER` value) is a thread of the process `pid`.
fn owned_by(owner: u64, pid: u32) -> bool {
    owner != 0 && (owner >> 32) as u32 == pid
}

/// Whether a fatal-signal handler of this process has started a crash dump, which may be reading
/// the buffer whose pointer it loaded: `stop` then leaves that buffer unfreed (the process is
/// dying). An owner inherited from a parent process (a fork during its dump) is not this one's.
fn crash_dump_started() -> bool {
    // SeqCst: see `on_crash`.
    owned_by(CRASH_OWNER.load(Ordering::SeqCst), std::process::id())
}

/// The crash recorder's half of `stop`'s handshake (`trace_log/attach.rs`).
static CRASH_HOOKS: crate::trace_log::attach::CrashHooks =
    crate::trace_log::attach::CrashHooks { dump_started: crash_dump_started };

/// The crash recorder's part in the fork handlers (`trace_log/fork.rs`).
static FORK_HOOKS: crate::trace_log::fork::ForkHooks =
    crate::trace_log::fork::ForkHooks { settle: None, take: None, in_child_first: Some(after_fork_in_child) };

/// The pid of the process whose dump is written (or given up), 0 before: a futex word the other
/// crashing threads of that process wait on until it holds their own pid. A child forked during
/// its parent's dump inherits 0 (or the parent's pid), never its own, so a waiter never mistakes
/// the parent's dump for its own process's.
static DUMP_DONE: AtomicU32 = AtomicU32::new(0);

/// In a child process just forked, on its only thread (see `fork.rs`): the parent's crash owner,
/// which may be writing the parent's dump, is not the child's. Async-signal-safe.
fn after_fork_in_child() {
    // SeqCst: as every access to the word; single-threaded here.
    CRASH_OWNER.store(0, Ordering::SeqCst);
}

/// The pipe through which the handler has the kernel copy a static string that lies outside the
/// known ranges (`addr.rs`); -1 when it could not be made (such strings are then placeholders).
static COPY_PIPE: [AtomicI32; 2] = [AtomicI32::new(-1), AtomicI32::new(-1)];

/// The longest static string the crash dump writes (longer ones are cut): what fits in the small
/// strings block it encodes each one into.
const CRASH_STR_MAX: usize = 1008;

/// Writes `log`'s running trace to `path` when the process receives a fatal signal (`SIGSEGV`,
/// `SIGBUS`, `SIGILL`, `SIGFPE`, `SIGABRT`), then lets the signal do what it did before (the
/// previous handler, or the default: the process dies of it).
///
/// The handler is async-signal-safe: no allocation, no lock, only `open`, `write`, `read`,
/// `fsync`, `close` and `futex` on data prepared here or read in place. It writes a whole trace
/// file: the callsites registered so far (from a lock-free list), every chunk that holds events
/// (given back, or still being written, up to its committed count, so the crashing thread's last
/// event is there), the static strings they use (checked first: see `addr.rs`; an unreadable one
/// is written as `<bad static string>`), and a trailer.
///
/// One thread writes the dump. Another thread that crashes meanwhile waits in its handler until
/// the dump is written, then its signal takes its course; a fault of the writing thread inside its
/// own dump passes on at once (the dump is then cut short). The writer is one per process: a
/// child forked while its parent writes the dump does not wait for it (nor dump: its tracing
/// stopped at the fork, and the path is the parent's). Other threads go on recording
/// meanwhile. Each chunk is pinned before it is copied, so what is copied is whole: the committed
/// records of one loan, under that loan's header. A chunk that a thread is loaning again at that
/// moment cannot be pinned and is left out (its old events count as overwritten). The pins stay
/// until the walk has read the overwrite counters, so a Ring loan never takes a chunk the dump has
/// copied: every event is in the file or counted, once (a Ring writer that finds every chunk
/// pinned drops its event, counted as `no_chunk`). Thread names are not written (threads show by
/// id). A stack overflow is not
/// dumped: the handler runs on the crashing thread's stack, so the kernel kills the process at
/// once. A static string of a library unloaded (`dlclose`) after the string ranges were last
/// collected (here, or when a tool last read a static string) may fault the dump: it is then cut
/// short. Call it once a trace of `log` has started (the file's clock comes from it); only one log
/// per process.
pub fn dump_on_crash(log: &'static TraceLog, path: impl Into<PathBuf>) -> Result<(), Error> {
    let signal_error = |m: String| Error::new(ErrorKind::Signal(m));
    let clock = log.clock_info().ok_or_else(|| Error::new(ErrorKind::NotRunning))?;
    let header = crate::output::trace_file::process_header(clock);
    let path = std::ffi::CString::new(path.into().into_os_string().into_encoded_bytes())
        .map_err(|_| signal_error("the dump path contains a NUL byte".into()))?;
    // The known ranges of static strings, found now: the handler cannot look for them.
    crate::output::addr::collect();
    let setup = Box::into_raw(Box::new(CrashSetup {
        log,
        pid: std::process::id(),
        path,
        head: phosphor_format::file::raw::preamble_and_header(&header),
    }));
    // Before any handler can run: `stop` must see that a dump may start (the Dekker pair), and
    // the child of a fork forgets the parent's dump owner.
    crate::trace_log::attach::CRASH.fill(&CRASH_HOOKS);
    #[cfg(unix)]
    crate::trace_log::fork::participate(&FORK_HOOKS);
    // AcqRel: publishes the setup to the handlers (which load it with Acquire).
    if CRASH_SETUP.compare_exchange(std::ptr::null_mut(), setup, Ordering::AcqRel, Ordering::Acquire).is_err()
    {
        // SAFETY: `setup` came from Box::into_raw above and was never shared.
        drop(unsafe { Box::from_raw(setup) });
        return Err(signal_error("a crash dump is already set up".into()));
    }
    let mut fds = [-1; 2];
    // SAFETY: `fds` is a valid two-int array for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } == 0 {
        // Relaxed: the sigaction calls below, which install the only reader, come after.
        COPY_PIPE[0].store(fds[0], Ordering::Relaxed);
        COPY_PIPE[1].store(fds[1], Ordering::Relaxed);
    }
    for (k, &sig) in CRASH_SIGNALS.iter().enumerate() {
        // First the action in place now, stored where the handler will find it; only then ours.
        // Installing ours while asking for the old one would leave a window in which a fault on
        // another thread chains to a slot not yet written.
        // SAFETY: `previous[k]` is written here only (this call won `CRASH_SETUP`, so no other
        // does), while no handler of ours that reads it can run: it is not installed yet, and
        // `PREVIOUS_STORED[k]` is still false. sigaction fills a valid `sigaction` out-pointer.
        let queried =
            unsafe { libc::sigaction(sig, std::ptr::null(), (*SCRATCH.previous.get())[k].as_mut_ptr()) };
        if queried != 0 {
            return Err(signal_error(format!("sigaction({sig}): {}", std::io::Error::last_os_error())));
        }
        // Release: a handler that loads the flag with Acquire sees the stored action.
        PREVIOUS_STORED[k].store(true, Ordering::Release);
        // SAFETY: a zeroed sigaction is valid; the handler is an `extern "C"` fn of the
        // SA_SIGINFO shape.
        let installed = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction =
                on_crash as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize;
            // Not SA_ONSTACK: the threads' alternate signal stacks (std's, for stack overflow
            // reports) are too small for the dump; it runs on the crashing thread's own stack.
            sa.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if installed != 0 {
            return Err(signal_error(format!("sigaction({sig}): {}", std::io::Error::last_os_error())));
        }
    }
    Ok(())
}

extern "C" fn on_crash(sig: libc::c_int, _info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    let Some(k) = CRASH_SIGNALS.iter().position(|&s| s == sig) else { return };
    // SAFETY: reading errno is async-signal-safe. errno is restored before we return, in case the
    // previous action lets the interrupted code go on.
    let errno = unsafe { *libc::__errno_location() };
    let me = owner_word();
    let pid = (me >> 32) as u32;
    // Relaxed: only a first guess; the compare-and-swap below decides.
    let mut seen = CRASH_OWNER.load(Ordering::Relaxed);
    loop {
        if seen == me {
            // This very thread faulted again inside its dump (another crash signal: ours leaves
            // them unblocked). Waiting would be for ever: the dump is cut short, and the signal
            // passes on.
            break;
        }
        if owned_by(seen, pid) {
            wait_for_dump(pid);
            break;
        }
        // No owner yet, or one of another process: a parent's thread that was writing the
        // parent's dump when this process was forked from it, and does not exist here. Waiting for
        // it would be for ever: this thread takes over.
        // Relaxed on failure: the word is read again and decided on by the next round.
        // SeqCst on success: with the SeqCst load of the buffer pointer in `write_crash_dump`, and
        // `stop`'s SeqCst swap of it and load of this word (`crash_dump_started`), Dekker's
        // pattern: either the dump sees no buffer, or `stop` sees the dump and does not free the
        // buffer. The scratch space it grants is never handed over to another thread.
        match CRASH_OWNER.compare_exchange(seen, me, Ordering::SeqCst, Ordering::Relaxed) {
            Ok(_) => {
                #[cfg(feature = "test-hooks")]
                crate::trace_log::test_hooks::reached(crate::trace_log::test_hooks::Point::CrashDump);
                // Acquire: pairs with the publication in `dump_on_crash`.
                let setup = CRASH_SETUP.load(Ordering::Acquire);
                // SAFETY: `setup` was leaked in `dump_on_crash` and is never freed.
                if let Some(setup) = unsafe { setup.as_ref() }.filter(|s| s.pid == pid) {
                    write_crash_dump(setup);
                }
                // Release: the word is set after the dump's last write (and pairs with the Acquire
                // loads of the waiting threads, so they chain after it).
                DUMP_DONE.store(pid, Ordering::Release);
                // SAFETY: FUTEX_WAKE on a live static word; the kernel reads nothing else.
                unsafe {
                    libc::syscall(
                        libc::SYS_futex,
                        DUMP_DONE.as_ptr(),
                        libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                        i32::MAX,
                    )
                };
                break;
            }
            Err(now) => seen = now,
        }
    }
    chain(k, sig);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Waits until the crash dump another thread of this process (`pid`) is writing is written.
/// Async-signal-safe: atomic loads and `futex` waits only.
fn wait_for_dump(pid: u32) {
    loop {
        // Acquire: pairs with the writer's Release store.
        let done = DUMP_DONE.load(Ordering::Acquire);
        if done == pid {
            return;
        }
        // A bounded wait, then the word is read again (a signal or a spurious wake ends it early).
        let tick = libc::timespec { tv_sec: 0, tv_nsec: 100_000_000 };
        // SAFETY: FUTEX_WAIT on a live static word, which sleeps only while it still holds `done`;
        // `tick` is a valid timespec for the duration of the call.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                DUMP_DONE.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                done,
                &tick as *const libc::timespec,
            )
        };
    }
}

/// Gives signal `CRASH_SIGNALS[k]` back to what handled it before (the default action if that is
/// not known), and raises it again: it is blocked while we run, so it is delivered when we return
/// (a hardware fault also recurs on return).
fn chain(k: usize, sig: libc::c_int) {
    // Acquire: pairs with the Release store in `dump_on_crash`, after the slot was written.
    let stored = PREVIOUS_STORED[k].load(Ordering::Acquire);
    // SAFETY: a zeroed sigaction with SIG_DFL is valid. `previous[k]` is read only once the flag
    // says it was written, and is never written again. sigaction and raise are async-signal-safe.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        let action = if stored { (*SCRATCH.previous.get())[k].as_ptr() } else { &default };
        libc::sigaction(sig, action, std::ptr::null_mut());
        libc::raise(sig);
    }
}

/// The bytes of a static string word for the crash dump (at most [`CRASH_STR_MAX`]): read in place
/// inside a known range, else copied by the kernel into `buf`, else the placeholder. The crashing
/// program may have corrupted a record (a stray write), so a word can point anywhere: it is never
/// read unchecked.
/// Async-signal-safe.
fn crash_string(addr: u64, len: usize, buf: &mut [u8; CRASH_STR_MAX]) -> &[u8] {
    let len = len.min(CRASH_STR_MAX);
    let Ok(addr) = usize::try_from(addr) else { return crate::output::trace::BAD_STATIC_STR.as_bytes() };
    if addr == 0 || len == 0 {
        return &[];
    }
    if crate::output::addr::is_known(addr, len) {
        // SAFETY: `addr..addr + len` lies in the interner's arena (a static, mapped for good) or
        // in a read-only segment of an object that was loaded when the ranges were last collected
        // (by `dump_on_crash`, or by a tool since: `addr::collect`). A handler cannot ask the
        // loader whether that object was unloaded since; if it was, the read may fault, and that
        // fault of the dump's own thread passes on at once (`on_crash`): the dump is cut short,
        // nothing waits. A word the recorder wrote points at bytes published before its record
        // (the chunks are pinned, so no record is torn); a word the program's own stray writes
        // corrupted may point at arena bytes being written now, read as racily as the records.
        return unsafe { std::slice::from_raw_parts(addr as *const u8, len) };
    }
    // Relaxed: stored before the handler was installed.
    let fds = [COPY_PIPE[0].load(Ordering::Relaxed), COPY_PIPE[1].load(Ordering::Relaxed)];
    if fds[0] >= 0 && crate::output::addr::copy_by_kernel(fds, addr, &mut buf[..len]) {
        &buf[..len]
    } else {
        crate::output::trace::BAD_STATIC_STR.as_bytes()
    }
}

/// A file descriptor written with raw `write(2)`s; errors end the dump quietly.
struct RawFile(libc::c_int);

impl RawFile {
    fn put(&self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            // SAFETY: `bytes` is a valid slice; `write` is async-signal-safe.
            let n = unsafe { libc::write(self.0, bytes.as_ptr().cast(), bytes.len()) };
            if n <= 0 {
                // SAFETY: reading errno is async-signal-safe.
                if n < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
                    continue;
                }
                return false;
            }
            bytes = &bytes[n as usize..];
        }
        true
    }
}

/// The most chunks a buffer has ([`TraceConfig::MAX_BUFFER_BYTES`](crate::TraceConfig::MAX_BUFFER_BYTES)
/// of them).
const MAX_CHUNKS: usize =
    (crate::TraceConfig::MAX_BUFFER_BYTES as usize) / phosphor_format::chunk::CHUNK_BYTES;

/// The chunks the crash dump's walk keeps pinned until it has read the overwrite counters, one bit
/// each (2 MiB of zeroed static memory for the largest buffer, touched only by a dump).
struct DumpPins(std::cell::UnsafeCell<[u64; MAX_CHUNKS.div_ceil(64)]>);

// SAFETY: used only by the thread that wins `CRASH_OWNER`, once per process (as `SCRATCH`).
unsafe impl Sync for DumpPins {}

static DUMP_PINS: DumpPins = DumpPins(std::cell::UnsafeCell::new([0; MAX_CHUNKS.div_ceil(64)]));

/// A test's code to run inside the crash dump's walk, after each chunk copied: it records events
/// meanwhile, as the program's other threads may.
#[cfg(test)]
static WALK_HOOK: std::sync::Mutex<Option<Box<dyn FnMut() + Send>>> = std::sync::Mutex::new(None);

#[cfg(test)]
fn walk_hook() {
    if let Some(f) = WALK_HOOK.lock().unwrap().as_mut() {
        f();
    }
}

/// The async-signal-safe dump: see [`dump_on_crash`]. Its steps: open the file, write the
/// callsites, walk the buffer's chunks, write the trailer.
fn write_crash_dump(setup: &CrashSetup) {
    // SAFETY: `open` is async-signal-safe; the path is NUL-terminated.
    let fd = unsafe {
        libc::open(
            setup.path.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o644,
        )
    };
    if fd < 0 {
        return;
    }
    // SAFETY: only the handler invocation that won `CRASH_OWNER` gets here, so the scratch space is
    // ours alone.
    let (block, records) = unsafe { (&mut *SCRATCH.block.get(), &mut *SCRATCH.records.get()) };
    let mut dump = CrashFile { f: RawFile(fd), block, strings: 0, ok: true };
    dump.ok = dump.f.put(&setup.head);
    dump.callsites();
    let core = setup.log.core();
    let walk = dump.chunks(core, records);
    dump.trailer(core, walk);
    // SAFETY: `fsync` and `close` are async-signal-safe; `fd` is ours.
    unsafe {
        libc::fsync(fd);
        libc::close(fd);
    }
}

/// The crash dump being written: its file, the scratch block its blocks are encoded in, how many
/// strings it has written (the next string's index) and whether every write succeeded so far.
struct CrashFile<'a> {
    f: RawFile,
    block: &'a mut [u8; 2 * phosphor_format::chunk::CHUNK_BYTES],
    strings: u32,
    ok: bool,
}

/// What the walk over the chunks found: the events written, and the buffer's counters read while
/// the chunks it copied were still pinned.
#[derive(Default)]
struct Walk {
    recorded: u64,
    loaned: u64,
    overwritten: u64,
    overwritten_chunks: u64,
    total: u64,
}

impl CrashFile<'_> {
    /// The callsites: each one's strings, then its entry.
    fn callsites(&mut self) {
        use phosphor_format::file::raw;
        for (id, cs) in crate::registry::callsite::crash_list() {
            let m = cs.meta();
            let Some(n) = raw::strings_block(self.block, &m.file_strings()) else { continue };
            self.ok &= self.f.put(&self.block[..n]);
            let entry = m.raw_entry(id, self.strings);
            self.strings += 5;
            if let Some(n) = raw::callsite_block(self.block, &entry) {
                self.ok &= self.f.put(&self.block[..n]);
            }
        }
    }

    /// The chunks, from the oldest loan on (Ring mode loans round-robin), each copied into
    /// `records` under a pin kept until the overwrite counters are read.
    fn chunks(&mut self, core: &crate::record::tenant::LogCore, records: &mut [Record]) -> Walk {
        let mut walk = Walk::default();
        // SeqCst (Acquire included: pairs with `start`'s Release, so the chunks' headers are
        // initialised): see `on_crash`'s compare-and-swap.
        let buf = core.buffer.load(Ordering::SeqCst);
        // SAFETY: a running trace's buffer is freed only by `stop`, which unpublishes it first and then
        // leaves it unfreed if a crash dump has started (`crash_dump_started`): a pointer read here is
        // never freed under us.
        let Some(buf) = (unsafe { buf.as_ref() }) else { return walk };
        let n = buf.chunk_count();
        walk.total = n as u64;
        // SAFETY: as `SCRATCH`: only the invocation that won `CRASH_OWNER` gets here.
        let pins = unsafe { &mut *DUMP_PINS.0.get() };
        let oldest = (0..n)
            .filter(|&i| buf.chunk(i).is_used())
            .min_by_key(|&i| buf.chunk(i).loan_stamp())
            .unwrap_or(0);
        for k in 0..n {
            let i = (oldest + k) % n;
            let chunk = buf.chunk(i);
            if !self.ok || !chunk.is_used() {
                continue;
            }
            // Pinned while copied: the records below the committed count stay as they are, and the
            // header read is the one they belong to. A chunk that cannot be pinned (being loaned
            // again right now, so its old events count as overwritten) is left out. The pin is
            // kept until the overwrite counters are read, below: a chunk copied here cannot be
            // taken by a Ring loan meanwhile, so each event the walk meets is counted once, as
            // written here or as overwritten, never both and never neither.
            let Some(copied) = chunk.pin_committed() else { continue };
            let kept = match pins.get_mut(i / 64) {
                Some(word) => {
                    *word |= 1 << (i % 64);
                    true
                }
                None => false,
            };
            // SAFETY: pinned, and `copied.records` is a committed count that the pin acquired.
            let prefix = unsafe { chunk.prefix(copied.records) };
            let count = prefix.len().min(records.len());
            records[..count].copy_from_slice(&prefix[..count]);
            if !kept {
                // Past the largest buffer's chunks (a bitmap of fixed size): no pin kept.
                chunk.unpin();
            }
            #[cfg(test)]
            walk_hook();
            if count > 0 {
                walk.recorded += self.chunk(copied.tid, copied.seq, &records[..count]);
            }
        }
        // Relaxed: statistics. Read after the walk, while the chunks it copied are still pinned:
        // every chunk a loan took from under the walk before the walk reached it is counted here
        // (the loan adds its events before it stamps the chunk, and the pin that showed us the
        // new stamp acquired that), and no chunk the walk copied can have been taken since.
        let k = &buf.counters;
        walk.overwritten = k.events_overwritten.load(Ordering::Relaxed);
        walk.loaned = k.chunks_loaned.load(Ordering::Relaxed);
        walk.overwritten_chunks = k.chunks_overwritten.load(Ordering::Relaxed);
        // Only the words of this buffer's chunks can have bits set.
        for (w, word) in pins.iter_mut().take(n.div_ceil(64)).enumerate() {
            while *word != 0 {
                let bit = word.trailing_zeros() as usize;
                *word &= *word - 1;
                buf.chunk(w * 64 + bit).unpin();
            }
        }
        walk
    }

    /// One chunk's copied records as a chunk block, each static string word turned into a string
    /// table index, its string written just before; the events it holds (0 if not written).
    fn chunk(&mut self, tid: u32, seq: u64, records: &[Record]) -> u64 {
        use phosphor_format::file::raw;
        let (f, ok, strings) = (&self.f, &mut self.ok, &mut self.strings);
        let mut intern = |addr: u64, len: usize| -> u32 {
            let mut copy = [0u8; CRASH_STR_MAX];
            let s = crash_string(addr, len, &mut copy);
            // Room for the block's framing and the string's length.
            let mut small = [0u8; CRASH_STR_MAX + 16];
            if let Some(w) = raw::strings_block(&mut small, &[s]) {
                *ok &= f.put(&small[..w]);
            }
            *strings += 1;
            *strings - 1
        };
        match raw::chunk_block(self.block, tid, seq, records, &mut intern) {
            Ok(w) => {
                self.ok &= self.f.put(&self.block[..w]);
                phosphor_format::count_events(records)
            }
            Err(_) => 0,
        }
    }

    /// The trailer. The drop reasons other than overwriting are read after the walk too, which
    /// counts the events other threads dropped while it ran (a Ring whose every chunk the walk
    /// pinned, say) with those it found written.
    fn trailer(&mut self, core: &crate::record::tenant::LogCore, walk: Walk) {
        let mut dropped = core.drops.load();
        dropped.overwritten = walk.overwritten;
        let trailer = phosphor_format::file::Trailer {
            recorded: walk.recorded,
            dropped,
            chunks_loaned: walk.loaned,
            chunks_overwritten: walk.overwritten_chunks,
            chunks_total: walk.total,
            buffer_exhausted: false,
            // Markers are written in Stream mode, which has its datastreams rather than dumps.
            saturation_markers: 0,
        };
        if let (true, Some(n)) = (self.ok, phosphor_format::file::raw::trailer_block(self.block, &trailer)) {
            self.f.put(&self.block[..n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Forks; the child runs `f` (async-signal-safe calls only: the parent has other threads), then
    /// exits with status 0. Returns the child's wait status.
    fn in_child(f: impl FnOnce()) -> libc::c_int {
        // SAFETY: fork, then in the child only `f` (async-signal-safe by contract), setrlimit and
        // _exit; the parent waits for the child it made.
        unsafe {
            let pid = libc::fork();
            assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
            if pid == 0 {
                // No core file for the signals the child dies of.
                libc::setrlimit(libc::RLIMIT_CORE, &libc::rlimit { rlim_cur: 0, rlim_max: 0 });
                f();
                libc::_exit(0);
            }
            let mut status = 0;
            assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
            status
        }
    }

    #[test]
    fn the_crash_dump_reads_a_static_string_only_where_it_is_readable() {
        crate::output::addr::collect();
        let mut fds = [-1; 2];
        // SAFETY: `fds` is a valid two-int array for pipe2 to fill.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) }, 0);
        // Relaxed: what `dump_on_crash` does; no handler runs in this test process.
        COPY_PIPE[0].store(fds[0], Ordering::Relaxed);
        COPY_PIPE[1].store(fds[1], Ordering::Relaxed);
        let mut buf = [0u8; CRASH_STR_MAX];
        let bad = crate::output::trace::BAD_STATIC_STR.as_bytes();
        let lit = "a literal";
        assert_eq!(crash_string(lit.as_ptr() as u64, lit.len(), &mut buf), lit.as_bytes());
        let heap: &'static str = String::from("on the heap").leak();
        assert_eq!(crash_string(heap.as_ptr() as u64, heap.len(), &mut buf), heap.as_bytes());
        assert_eq!(crash_string(0x10, 5, &mut buf), bad);
        assert_eq!(crash_string(1 << 47, 5, &mut buf), bad);
        assert_eq!(crash_string(0, 5, &mut buf), b"");
        let long = "x".repeat(5000).leak();
        assert_eq!(crash_string(long.as_ptr() as u64, long.len(), &mut buf).len(), CRASH_STR_MAX, "cut");
    }

    #[test]
    fn a_crash_before_the_previous_action_is_stored_falls_back_to_the_default_action() {
        let k = CRASH_SIGNALS.iter().position(|&s| s == libc::SIGFPE).unwrap();
        let status = in_child(|| {
            // What the slot may hold before `dump_on_crash` stores the previous action in it: here
            // an action that ignores the signal. The handler must not trust it.
            // SAFETY: this child process is single-threaded, and no handler of ours runs.
            unsafe {
                let mut stale: libc::sigaction = std::mem::zeroed();
                stale.sa_sigaction = libc::SIG_IGN;
                (*SCRATCH.previous.get())[k] = std::mem::MaybeUninit::new(stale);
            }
            // As if a fault came in the window: the handler runs before the slot was filled.
            on_crash(libc::SIGFPE, std::ptr::null_mut(), std::ptr::null_mut());
        });
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGFPE,
            "the signal's default action killed the child (status {status:#x})"
        );
    }

    #[test]
    fn a_chunk_a_ring_loan_takes_during_the_crash_dumps_walk_is_counted_once() {
        use crate::{trace_instant, BufferMode, TraceConfig, TraceLogConfig};
        crate::output::addr::collect();
        // Other tests may hold most of the log slots for a moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let log = loop {
            match TraceLog::new(TraceLogConfig::default()) {
                Ok(log) => break log,
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(2))
                }
                Err(e) => panic!("TraceLog::new failed: {e}"),
            }
        };
        let log: &'static TraceLog = Box::leak(Box::new(log));
        let chunks = 8;
        log.start(TraceConfig::new(BufferMode::Ring, chunks * 4096)).unwrap();
        let per_chunk = phosphor_format::chunk::CHUNK_RECORDS as u64;
        // Twice round the ring: every chunk holds events and some were overwritten already.
        // One callsite throughout: the dump writes the callsites registered before it.
        let record = |i: u64| trace_instant!(log: log, "dump", "tick", "i" => i);
        let mut emitted = 2 * chunks as u64 * per_chunk;
        (0..emitted).for_each(record);
        // Other threads go on recording while the walk runs: after the first chunk is copied,
        // three chunks' worth of events, which take the next chunks the walk has not reached yet.
        let later = 3 * per_chunk;
        let mut once = Some(());
        *WALK_HOOK.lock().unwrap() = Some(Box::new(move || {
            if once.take().is_some() {
                (0..later).for_each(record);
            }
        }));
        emitted += later;
        let path = std::env::temp_dir().join(format!("phosphor-walk-reclaimed-{}.phos", std::process::id()));
        let header = crate::output::trace_file::process_header(log.clock_info().unwrap());
        let setup = CrashSetup {
            log,
            pid: std::process::id(),
            path: std::ffi::CString::new(path.to_str().unwrap()).unwrap(),
            head: phosphor_format::file::raw::preamble_and_header(&header),
        };
        write_crash_dump(&setup);
        *WALK_HOOK.lock().unwrap() = None;
        let bytes = std::fs::read(&path).unwrap();
        let mut r = phosphor_format::file::Reader::new(&bytes[..]).unwrap();
        let mut in_file = 0;
        while let Some(chunk) = r.next_chunk().unwrap() {
            for e in chunk.events() {
                e.unwrap();
                in_file += 1;
            }
        }
        let t = r.trailer().unwrap().clone();
        assert_eq!(t.recorded, in_file);
        assert!(t.dropped.overwritten > 0, "{t:?}");
        assert_eq!(t.recorded + t.dropped.total(), emitted, "{t:?}");
        // The walk's pins are gone: the ring goes on overwriting every chunk.
        (0..2 * chunks as u64 * per_chunk).for_each(record);
        let stats = log.stats();
        assert_eq!(stats.dropped.no_chunk, 0, "{stats:?}");
        log.stop();
    }
}

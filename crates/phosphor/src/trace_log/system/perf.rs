//! One traced thread's perf event (Linux): opened by the system collector for another thread of
//! the process, and its ring buffer read by hand.
//!
//! # The event
//!
//! A software event on one thread (`pid` = its tid, `cpu` = -1, not inherited):
//! `PERF_COUNT_SW_CPU_CLOCK` at `sample_hz` with the user-space call chain (frame pointers, walked
//! by the kernel) when samples are on, and on x86_64 and aarch64 the user registers and a copy of
//! the top [`STACK_BYTES`] of the user stack, which the collector unwinds (`unwind.rs`; if the
//! kernel refuses those, or the bigger ring they need, the event is opened again without them);
//! else `PERF_COUNT_SW_DUMMY`, which never samples and only carries the side-band records; `context_switch` when switches are on. Every record carries
//! `{pid, tid}`, the time (`use_clockid`: `CLOCK_MONOTONIC`, the clock the trace's ticks map to)
//! and the CPU (`sample_id_all`). Kernel stacks and kernel samples are excluded, which is what lets
//! `perf_event_paranoid` 2 (the default) allow it unprivileged.
//!
//! # The ring
//!
//! The kernel's single-producer ring (`perf_event_open(2)`, "MMAP layout"): one header page, then
//! a power of two of data pages. The kernel writes records and then publishes `data_head`; we read
//! `data_head` with Acquire (its records are then visible), copy each record out (one may wrap past
//! the end), and store `data_tail` with Release once done, which hands the space back (our reads
//! happen before the kernel may overwrite it). Records the kernel could not fit are counted by it
//! in a `PERF_RECORD_LOST`. No record is decoded in place, so a malformed length cannot make us
//! read out of the ring: a record shorter than its header or longer than the ring ends the drain
//! and the rest is skipped.
//!
//! `perf-event-data` (the parser of `perf-event2`) cannot decode `PERF_RECORD_SWITCH`, so the few
//! record types used here are decoded by hand, for exactly the `sample_type` set below.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use perf_event_open_sys::bindings as sys;
use phosphor_format::system::{Sample, SampleKind, Switch, SwitchKind, MAX_FRAMES};

use super::unwind::{StackUnwinder, REGS_MASK, STACK_BYTES};

/// Data pages per ring (a power of two) when samples are on: 16 pages (64 KiB) hold a period
/// (10 ms) of 999 Hz samples of 127 frames (10 × 1 KiB) many times over, and context switches at
/// 100,000/s (1,000 × 40 bytes per period).
const SAMPLE_PAGES: usize = 16;
/// Data pages when samples carry a stack copy: 64 pages (256 KiB) hold a period of 999 Hz
/// samples of about 17 KiB each (10 × 17 KiB) with half to spare.
const STACK_PAGES: usize = 64;
/// Data pages when only switches are on: 4 pages (16 KiB) hold 400 switches, 40,000 a second
/// at one drain per 10 ms.
const SWITCH_PAGES: usize = 4;

/// What the events watch for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Want {
    pub(super) switches: bool,
    /// Samples per second of CPU time (0: off).
    pub(super) sample_hz: u32,
}

/// A refused open or mapping: which call and its errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct OpenError {
    call: &'static str,
    errno: i32,
    /// Made up by [`FORCE_UNAVAILABLE`](super::FORCE_UNAVAILABLE), not the kernel's.
    forced: bool,
}

impl OpenError {
    /// The refusal a test forces with [`FORCE_UNAVAILABLE`](super::FORCE_UNAVAILABLE).
    pub(super) const FORCED: OpenError =
        OpenError { call: "perf_event_open", errno: libc::EACCES, forced: true };

    /// The thread exited before its event was opened: not a loss.
    pub(super) fn is_gone(&self) -> bool {
        self.errno == libc::ESRCH
    }

    /// For people: the call, the errno's name, and its likely cause here.
    pub(super) fn reason(&self) -> String {
        if self.forced {
            return format!("{}: EACCES: forced by {}=1", self.call, super::FORCE_UNAVAILABLE);
        }
        let (name, why) = match (self.call, self.errno) {
            ("mmap", libc::EPERM) => (
                "EPERM",
                "over the locked-memory budget for perf rings (kernel.perf_event_mlock_kb per CPU, \
                 then RLIMIT_MEMLOCK)"
                    .to_owned(),
            ),
            (_, libc::EACCES | libc::EPERM) => (
                if self.errno == libc::EACCES { "EACCES" } else { "EPERM" },
                match paranoid() {
                    Some(p) if p > 2 => format!(
                        "kernel.perf_event_paranoid is {p} (self-profiling needs 2 or less, or \
                         CAP_PERFMON)"
                    ),
                    Some(p) => format!(
                        "a seccomp filter (a container's default profile) refuses it \
                         (kernel.perf_event_paranoid is {p}, which allows it)"
                    ),
                    None => "kernel.perf_event_paranoid above 2, or a seccomp filter (a \
                             container's default profile), refuses it"
                        .to_owned(),
                },
            ),
            (_, libc::ENOENT) => ("ENOENT", "the kernel has no such software event".to_owned()),
            (_, libc::ENOSYS) => (
                "ENOSYS",
                "no perf_event_open here (a seccomp filter, or a kernel without \
                 CONFIG_PERF_EVENTS)"
                    .to_owned(),
            ),
            (_, libc::EINVAL) => (
                "EINVAL",
                "the kernel refuses an attribute (context switches need Linux 4.3; the rate may be \
                 above kernel.perf_event_max_sample_rate)"
                    .to_owned(),
            ),
            (_, libc::EMFILE | libc::ENFILE) => ("EMFILE", "too many open files".to_owned()),
            (_, libc::ENOMEM) => ("ENOMEM", "out of memory".to_owned()),
            (_, e) => return format!("{}: errno {e}", self.call),
        };
        format!("{}: {name}: {why}", self.call)
    }
}

/// Whether the environment forces the refused path (see `super::FORCE_UNAVAILABLE`).
pub(super) fn forced() -> bool {
    std::env::var_os(super::FORCE_UNAVAILABLE).is_some_and(|v| v == "1")
}

fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").ok()?.trim().parse().ok()
}

/// The deepest call chain the kernel allows (`kernel.perf_event_max_stack`; asking for more is
/// EINVAL), at most [`MAX_FRAMES`].
pub(super) fn max_stack() -> u16 {
    let sysctl = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_stack").ok();
    let limit = sysctl.and_then(|s| s.trim().parse::<usize>().ok()).unwrap_or(MAX_FRAMES);
    limit.min(MAX_FRAMES) as u16
}

/// What one drain found.
#[derive(Debug, Default)]
pub(super) struct Drained {
    pub(super) switches: Vec<Switch>,
    pub(super) samples: Vec<Sample>,
    /// Records the kernel dropped (`PERF_RECORD_LOST`).
    pub(super) lost: u64,
}

/// One thread's event and its mapped ring.
#[derive(Debug)]
pub(super) struct PerfRing {
    /// Held open for the event's life: closing it ends the event.
    _fd: OwnedFd,
    ring: Ring,
    /// The mapping's length.
    len: usize,
    /// Its samples carry registers and a stack copy.
    stacks: bool,
}

/// A perf ring's memory: the header page, then the data area.
#[derive(Debug)]
struct Ring {
    base: *mut u8,
    page: usize,
    /// Bytes of data pages (a power of two).
    data_size: usize,
}

// SAFETY: the mapping is owned by this value alone (nothing else has its address) and the kernel
// side is synchronised through `data_head`/`data_tail`; moving it to another thread is fine.
unsafe impl Send for PerfRing {}

impl PerfRing {
    /// Opens and maps the event of thread `tid` (0: the calling thread): with stack copies where
    /// samples are on and this architecture is unwound, else (or if the kernel refuses them, or
    /// the locked-memory budget their ring) without.
    pub(super) fn open(tid: u32, want: Want, max_stack: u16) -> Result<PerfRing, OpenError> {
        if want.sample_hz > 0 && super::unwind::enabled() {
            match PerfRing::open_as(tid, want, max_stack, true) {
                Ok(ring) => return Ok(ring),
                Err(e) if e.is_gone() => return Err(e),
                Err(_) => {}
            }
        }
        PerfRing::open_as(tid, want, max_stack, false)
    }

    /// Whether its samples carry registers and a stack copy.
    #[cfg(test)]
    pub(super) fn copies_stacks(&self) -> bool {
        self.stacks
    }

    fn open_as(tid: u32, want: Want, max_stack: u16, stacks: bool) -> Result<PerfRing, OpenError> {
        let mut attr = attr(want, max_stack, stacks);
        // SAFETY: `attr` is a fully initialised perf_event_attr of the size it declares; the event
        // asked for only observes a thread of this process.
        let fd = unsafe {
            perf_event_open_sys::perf_event_open(
                &mut attr,
                tid as libc::pid_t,
                -1,
                -1,
                libc::c_ulong::from(sys::PERF_FLAG_FD_CLOEXEC),
            )
        };
        if fd < 0 {
            return Err(OpenError { call: "perf_event_open", errno: errno(), forced: false });
        }
        // SAFETY: a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sysconf only reads a system parameter.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let pages = match (want.sample_hz > 0, stacks) {
            (true, true) => STACK_PAGES,
            (true, false) => SAMPLE_PAGES,
            (false, _) => SWITCH_PAGES,
        };
        let len = (1 + pages) * page;
        // SAFETY: a new shared mapping of the event's ring, at an address the kernel picks; no
        // existing memory is affected.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(OpenError { call: "mmap", errno: errno(), forced: false });
        }
        // SAFETY: the mapping is the header page and `pages * page` bytes of data, page
        // aligned, and lives as long as the `PerfRing` that owns the `Ring` (unmapped in its
        // `Drop`).
        let ring = unsafe { Ring::new(base.cast(), page, pages * page) };
        Ok(PerfRing { _fd: fd, ring, len, stacks })
    }

    /// Reads every record the kernel has published into `out`, and hands the space back; the
    /// samples' stacks unwound by `unwinder` when they carry a stack copy.
    pub(super) fn drain(
        &mut self,
        out: &mut Drained,
        scratch: &mut Vec<u8>,
        mut unwinder: Option<&mut StackUnwinder>,
    ) {
        let stacks = self.stacks;
        self.ring.drain(scratch, |rec| decode(rec, stacks, out, unwinder.as_deref_mut()));
    }
}

/// The event's attributes (see the module's documentation); `stacks`: samples carry the user
/// registers of [`REGS_MASK`] and [`STACK_BYTES`] of the user stack.
fn attr(want: Want, max_stack: u16, stacks: bool) -> sys::perf_event_attr {
    let mut attr = sys::perf_event_attr::default();
    attr.type_ = sys::PERF_TYPE_SOFTWARE;
    attr.size = std::mem::size_of::<sys::perf_event_attr>() as u32;
    attr.sample_type = u64::from(sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_TIME | sys::PERF_SAMPLE_CPU);
    if want.sample_hz > 0 {
        attr.config = u64::from(sys::PERF_COUNT_SW_CPU_CLOCK);
        attr.__bindgen_anon_1.sample_freq = u64::from(want.sample_hz);
        attr.set_freq(1);
        attr.sample_type |= u64::from(sys::PERF_SAMPLE_CALLCHAIN);
        attr.sample_max_stack = max_stack;
        if stacks {
            attr.sample_type |= u64::from(sys::PERF_SAMPLE_REGS_USER | sys::PERF_SAMPLE_STACK_USER);
            attr.sample_regs_user = REGS_MASK;
            attr.sample_stack_user = STACK_BYTES;
        }
    } else {
        attr.config = u64::from(sys::PERF_COUNT_SW_DUMMY);
        attr.__bindgen_anon_1.sample_period = 1;
    }
    attr.set_context_switch(u64::from(want.switches));
    attr.set_exclude_kernel(1);
    attr.set_exclude_hv(1);
    attr.set_exclude_callchain_kernel(1);
    attr.set_sample_id_all(1);
    attr.set_use_clockid(1);
    attr.clockid = libc::CLOCK_MONOTONIC;
    attr
}

impl Ring {
    /// # Safety
    ///
    /// [1] `base` points to `page + data_size` bytes, readable and writable, 8-byte aligned,
    /// that stay valid for as long as the `Ring` lives; [2] `page` is at least the size of
    /// `perf_event_mmap_page` and `data_size` a power of two; [3] whoever else writes them (the
    /// kernel) follows the ring's protocol: records only past `data_tail`, then `data_head`.
    unsafe fn new(base: *mut u8, page: usize, data_size: usize) -> Ring {
        debug_assert!(
            data_size.is_power_of_two() && page >= std::mem::size_of::<sys::perf_event_mmap_page>()
        );
        Ring { base, page, data_size }
    }

    fn head_word(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: [1] `offset` is that of `data_head` or `data_tail` in the header page, which is
        // valid for as long as `self` lives (`Ring::new`'s obligation); [2] both are 8-byte
        // aligned u64s; [3] the kernel accesses them atomically too.
        unsafe { AtomicU64::from_ptr(self.base.add(offset).cast()) }
    }

    /// Hands every record the kernel has published to `each` (a copy, in `scratch`), and the space
    /// back.
    fn drain(&mut self, scratch: &mut Vec<u8>, mut each: impl FnMut(&[u8])) {
        let head_at = std::mem::offset_of!(sys::perf_event_mmap_page, data_head);
        let tail_at = std::mem::offset_of!(sys::perf_event_mmap_page, data_tail);
        // Acquire: pairs with the kernel's barrier before it publishes `data_head`; the records
        // below it are then visible.
        let head = self.head_word(head_at).load(Ordering::Acquire);
        // Relaxed: only this thread writes the tail.
        let mut tail = self.head_word(tail_at).load(Ordering::Relaxed);
        while tail < head {
            let mut header = [0u8; 8];
            self.copy_out(tail, &mut header);
            let size = u16::from_ne_bytes([header[6], header[7]]) as usize;
            if size < 8 || size as u64 > head - tail || size > self.data_size {
                tail = head; // malformed: skip what is left rather than misread it
                break;
            }
            scratch.resize(size, 0);
            self.copy_out(tail, scratch);
            each(scratch);
            tail += size as u64;
        }
        // Release: our copies of the records happen before the kernel may overwrite their space.
        self.head_word(tail_at).store(tail, Ordering::Release);
    }

    /// Copies `dst.len()` bytes of the data area from ring position `pos`, wrapping.
    fn copy_out(&self, pos: u64, dst: &mut [u8]) {
        let off = (pos as usize) & (self.data_size - 1);
        let first = dst.len().min(self.data_size - off);
        // SAFETY: [1] the data area is the `data_size` bytes after the header page, valid while
        // `self` lives (`Ring::new`'s obligation); [2] `off + first <= data_size` and the rest (`dst.len() - first`, at most
        // `data_size` as `drain` checks) starts at the area's beginning; [3] the kernel does not
        // write between `data_tail` and `data_head`, where these bytes are.
        unsafe {
            let data = self.base.add(self.page);
            std::ptr::copy_nonoverlapping(data.add(off), dst.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(data, dst.as_mut_ptr().add(first), dst.len() - first);
        }
    }
}

impl Drop for PerfRing {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once; nothing refers to it after this.
        unsafe { libc::munmap(self.ring.base.cast(), self.len) };
        // `fd` closes itself.
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Decodes one record (header included) of the `sample_type` `PerfRing::open` asks for:
/// `TID | TIME | CPU`, then `CALLCHAIN` in samples, and with `stacks` `REGS_USER | STACK_USER`
/// after it, which `unwinder` (if any) unwinds. A record too short for its type is skipped; a
/// sample whose registers or stack copy are cut short keeps the kernel's chain.
pub(super) fn decode(rec: &[u8], stacks: bool, out: &mut Drained, unwinder: Option<&mut StackUnwinder>) {
    let Some(ty) = u32_at(rec, 0) else { return };
    let misc = rec.get(4..6).map_or(0, |m| u32::from(u16::from_ne_bytes([m[0], m[1]])));
    // After the header: {pid, tid} at 8, time at 16, {cpu, res} at 24.
    let id = || Some((u32_at(rec, 12)?, u64_at(rec, 16)?, u32_at(rec, 24)?));
    match ty {
        sys::PERF_RECORD_SWITCH => {
            let Some((tid, time_ns, cpu)) = id() else { return };
            let kind = if misc & sys::PERF_RECORD_MISC_SWITCH_OUT == 0 {
                SwitchKind::In
            } else if misc & sys::PERF_RECORD_MISC_SWITCH_OUT_PREEMPT != 0 {
                SwitchKind::Preempted
            } else {
                SwitchKind::Out
            };
            out.switches.push(Switch { tid, time_ns, cpu, kind });
        }
        sys::PERF_RECORD_SAMPLE => {
            let Some((tid, time_ns, cpu)) = id() else { return };
            let Some(nr) = u64_at(rec, 32) else { return };
            let held = rec.len().saturating_sub(40) as u64 / 8;
            let kernel: Vec<u64> = (0..nr.min(held) as usize)
                .filter_map(|i| u64_at(rec, 40 + 8 * i))
                // Context markers (PERF_CONTEXT_USER, ...) are not addresses.
                .filter(|&a| a < sys::PERF_CONTEXT_MAX)
                .take(MAX_FRAMES)
                .collect();
            let user = if stacks && nr <= held { user_stack(rec, 40 + 8 * nr as usize) } else { None };
            let frames = match (user, unwinder) {
                (Some((regs, n, stack)), Some(u)) => {
                    let mut frames = Vec::new();
                    u.unwind(&regs[..n], stack, &kernel, &mut frames);
                    frames
                }
                _ => kernel,
            };
            out.samples.push(Sample { tid, time_ns, cpu, kind: SampleKind::Cpu, frames });
        }
        sys::PERF_RECORD_LOST => out.lost += u64_at(rec, 16).unwrap_or(0),
        _ => {}
    }
}

/// The most registers [`REGS_MASK`] asks for.
const MAX_REGS: usize = 4;

/// A sample's user registers (`REGS_USER`: the ABI, then one word per bit of [`REGS_MASK`]) and
/// the valid part of its stack copy (`STACK_USER`: its size, the bytes, then how many the kernel
/// could copy), from offset `at`; `None` when the sample has no user registers (the ABI word is
/// 0) or the record is cut short.
fn user_stack(rec: &[u8], at: usize) -> Option<([u64; MAX_REGS], usize, &[u8])> {
    let abi = u64_at(rec, at)?;
    let n = REGS_MASK.count_ones() as usize;
    if abi == u64::from(sys::PERF_SAMPLE_REGS_ABI_NONE) || n > MAX_REGS {
        return None;
    }
    let mut regs = [0; MAX_REGS];
    for (i, r) in regs.iter_mut().take(n).enumerate() {
        *r = u64_at(rec, at + 8 + 8 * i)?;
    }
    let size_at = at + 8 + 8 * n;
    let size = usize::try_from(u64_at(rec, size_at)?).ok()?;
    let data = rec.get(size_at + 8..(size_at + 8).checked_add(size)?)?;
    let valid = usize::try_from(u64_at(rec, size_at + 8 + size)?).ok()?;
    Some((regs, n, &data[..valid.min(size)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ty: u32, misc: u16, body: &[u64]) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&ty.to_ne_bytes());
        r.extend_from_slice(&misc.to_ne_bytes());
        r.extend_from_slice(&((8 + 8 * body.len()) as u16).to_ne_bytes());
        for w in body {
            r.extend_from_slice(&w.to_ne_bytes());
        }
        r
    }

    fn pid_tid(pid: u32, tid: u32) -> u64 {
        u64::from(pid) | (u64::from(tid) << 32)
    }

    #[test]
    fn switch_records_decode_to_out_preempted_and_in() {
        let mut out = Drained::default();
        let body = [pid_tid(7, 9), 1_000, 3];
        decode(&record(14, 0x2000, &body), false, &mut out, None);
        decode(&record(14, 0x6000, &body), false, &mut out, None);
        decode(&record(14, 0, &body), false, &mut out, None);
        let kinds: Vec<_> = out.switches.iter().map(|s| s.kind).collect();
        assert_eq!(kinds, [SwitchKind::Out, SwitchKind::Preempted, SwitchKind::In]);
        assert_eq!(out.switches[0], Switch { tid: 9, time_ns: 1_000, cpu: 3, kind: SwitchKind::Out });
    }

    #[test]
    fn samples_keep_addresses_and_drop_context_markers() {
        let mut out = Drained::default();
        let user = sys::PERF_CONTEXT_MAX + 3583; // PERF_CONTEXT_USER, -512
        decode(&record(9, 2, &[pid_tid(1, 2), 5, 1, 4, user, 0x1000, 0x2000, 0x3000]), false, &mut out, None);
        assert_eq!(out.samples.len(), 1);
        assert_eq!(out.samples[0].frames, [0x1000, 0x2000, 0x3000]);
        assert_eq!((out.samples[0].tid, out.samples[0].time_ns), (2, 5));
    }

    #[test]
    fn a_sample_claiming_more_frames_than_it_holds_keeps_those_it_has() {
        let mut out = Drained::default();
        decode(&record(9, 2, &[pid_tid(1, 2), 5, 1, u64::MAX, 0x1000]), false, &mut out, None);
        assert_eq!(out.samples[0].frames, [0x1000]);
        decode(&record(9, 2, &[pid_tid(1, 2)]), false, &mut out, None); // truncated: skipped
        assert_eq!(out.samples.len(), 1);
    }

    /// A ring in ordinary memory: a 4 KiB header page and 256 bytes of data.
    struct FakeRing {
        mem: Vec<u64>,
    }

    impl FakeRing {
        const PAGE: usize = 4096;
        const DATA: usize = 256;

        fn new() -> FakeRing {
            FakeRing { mem: vec![0; (Self::PAGE + Self::DATA) / 8] }
        }

        fn word(&mut self, offset: usize) -> &mut u64 {
            &mut self.mem[offset / 8]
        }

        /// Writes `rec` at ring position `pos`, wrapping, as the kernel does.
        fn put(&mut self, pos: u64, rec: &[u8]) {
            let bytes: &mut [u8] = bytemuck_cast(&mut self.mem);
            for (i, b) in rec.iter().enumerate() {
                bytes[Self::PAGE + (pos as usize + i) % Self::DATA] = *b;
            }
        }

        fn drain(&mut self, out: &mut Drained) {
            // SAFETY: `mem` is PAGE + DATA bytes, 8-aligned, alive for the ring's use below;
            // nothing else writes it meanwhile.
            let mut ring = unsafe { Ring::new(self.mem.as_mut_ptr().cast(), Self::PAGE, Self::DATA) };
            ring.drain(&mut Vec::new(), |r| decode(r, false, out, None));
        }
    }

    fn bytemuck_cast(words: &mut [u64]) -> &mut [u8] {
        // SAFETY: u64s are 8 initialised bytes each, any of which is a valid u8; the borrow is
        // carried over.
        unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast(), words.len() * 8) }
    }

    #[test]
    fn a_record_that_wraps_past_the_rings_end_is_read_whole_and_the_tail_follows() {
        let head_at = std::mem::offset_of!(sys::perf_event_mmap_page, data_head);
        let tail_at = std::mem::offset_of!(sys::perf_event_mmap_page, data_tail);
        let mut ring = FakeRing::new();
        // Start 16 bytes before the end: the second switch's 32 bytes straddle it.
        let start = 3 * FakeRing::DATA as u64 - 48;
        let a = record(14, 0x2000, &[pid_tid(1, 7), 100, 0]);
        let b = record(14, 0, &[pid_tid(1, 7), 200, 1]);
        ring.put(start, &a);
        ring.put(start + 32, &b);
        *ring.word(tail_at) = start;
        *ring.word(head_at) = start + 64;
        let mut out = Drained::default();
        ring.drain(&mut out);
        let times: Vec<_> = out.switches.iter().map(|s| (s.time_ns, s.kind, s.cpu)).collect();
        assert_eq!(times, [(100, SwitchKind::Out, 0), (200, SwitchKind::In, 1)]);
        assert_eq!(*ring.word(tail_at), start + 64);
    }

    #[test]
    fn a_record_longer_than_what_was_published_ends_the_drain_without_reading_it() {
        let head_at = std::mem::offset_of!(sys::perf_event_mmap_page, data_head);
        let tail_at = std::mem::offset_of!(sys::perf_event_mmap_page, data_tail);
        let mut ring = FakeRing::new();
        let mut bad = record(14, 0, &[pid_tid(1, 7), 100, 0]);
        bad[6..8].copy_from_slice(&4000u16.to_ne_bytes()); // claims 4,000 bytes
        ring.put(0, &bad);
        *ring.word(head_at) = 32;
        let mut out = Drained::default();
        ring.drain(&mut out);
        assert!(out.switches.is_empty());
        assert_eq!(*ring.word(tail_at), 32, "the rest is skipped, the space handed back");
    }

    #[test]
    fn lost_records_are_summed() {
        let mut out = Drained::default();
        decode(&record(2, 0, &[1, 40]), false, &mut out, None);
        decode(&record(2, 0, &[1, 2]), false, &mut out, None);
        assert_eq!(out.lost, 42);
    }

    /// Spins until this thread has run `cpu_ns` more nanoseconds.
    fn burn(cpu_ns: u64) -> u64 {
        let now = || {
            let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: a valid clock id and a pointer to a timespec we own.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
            t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
        };
        let until = now() + cpu_ns;
        let mut x = 1u64;
        while now() < until {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        x
    }

    #[test]
    fn a_samples_stack_copy_is_bounded_by_stack_bytes_and_unwound() {
        let want = Want { switches: false, sample_hz: 999 };
        let mut ring = match PerfRing::open(0, want, max_stack()) {
            Ok(r) => r,
            Err(e) => return eprintln!("perf events unavailable here, not checked: {}", e.reason()),
        };
        if REGS_MASK == 0 {
            return eprintln!("no unwinding on this architecture: nothing to check");
        }
        assert!(ring.copies_stacks(), "a sampling ring asks for stack copies");
        let (stacks, mut scratch, mut out) = (ring.stacks, Vec::new(), Drained::default());
        let mut unwinder = StackUnwinder::new();
        let mut copies = Vec::new();
        // 100 ms of CPU, drained every 10 ms as the collector does (the ring holds about 15
        // samples).
        for _ in 0..10 {
            burn(10_000_000);
            ring.ring.drain(&mut scratch, |rec| {
                if u32_at(rec, 0) == Some(sys::PERF_RECORD_SAMPLE) {
                    let nr = u64_at(rec, 32).unwrap() as usize;
                    let (_, _, stack) = user_stack(rec, 40 + 8 * nr).expect("registers and a stack copy");
                    copies.push((rec.len(), nr, stack.len()));
                }
                decode(rec, stacks, &mut out, Some(&mut unwinder));
            });
        }
        assert!(copies.len() >= 20, "{} samples in 100 ms of CPU at 999 Hz", copies.len());
        let regs = 8 * (1 + REGS_MASK.count_ones() as usize);
        for &(len, nr, valid) in &copies {
            // Header, ids, the chain, the registers, then the copy: its size, bytes and valid size.
            assert_eq!(len, 40 + 8 * nr + regs + 8 + STACK_BYTES as usize + 8, "a sample's record");
            assert!(valid <= STACK_BYTES as usize);
        }
        assert_eq!(unwinder.counts.unwound + unwinder.counts.kernel, copies.len() as u64);
        assert!(out.samples.iter().all(|s| !s.frames.is_empty() && s.frames.len() <= MAX_FRAMES));
        // This test's own code has unwind information: the walks go past the kernel's chain.
        assert!(unwinder.counts.unwound * 10 >= copies.len() as u64 * 9, "{:?}", unwinder.counts);
    }
}

//! Unwinding CPU samples with DWARF call frame information (Linux; issue 39), on the collector
//! thread, as `perf --call-graph dwarf` and samply do.
//!
//! Rust release code has no frame pointers, so the kernel's own walk of a sample's user stack
//! (`PERF_SAMPLE_CALLCHAIN`) stops after a frame or a few. Each sample therefore also carries the
//! thread's user registers (`PERF_SAMPLE_REGS_USER`: the instruction, stack and frame pointers,
//! and the link register on aarch64) and a copy of the top [`STACK_BYTES`] of its stack
//! (`PERF_SAMPLE_STACK_USER`), and the collector unwinds that copy with `framehop`, from the
//! `.eh_frame` (indexed by `.eh_frame_hdr`) of the process's own loaded objects. Where an object
//! has no unwind information, `framehop` walks the frame pointer there.
//!
//! # Modules
//!
//! The objects are the executable file mappings of `/proc/self/maps` (and the `[vdso]`, read from
//! memory, which the kernel never unmaps): each one's `.eh_frame` and `.eh_frame_hdr` are read
//! from its file once, after checking that the file is still the one mapped (its inode), and
//! copied (a later `dlclose` cannot pull them from under the unwinder). The list is read when the
//! unwinder is made, and again when a sample's instruction or its walk's last address is in no
//! known object, at most once per [`REFRESH_EVERY`]; objects gone from the maps are forgotten.
//!
//! # Bounds
//!
//! The copies of unwind sections total at most [`MAX_UNWIND_BYTES`] (an object past it is not
//! added: its frames are walked by frame pointer); `framehop`'s cache of unwind rules has a fixed
//! size; a walk reads only the copied stack and yields at most [`MAX_FRAMES`] frames. The sample's
//! stack copy itself is never kept: a sample holds only its frames.
//!
//! # Choosing the stack
//!
//! The unwound stack is kept unless the kernel's frame-pointer chain is longer (a walk that failed
//! early, in code with frame pointers but no unwind information the unwinder knows of, such as a
//! JIT's): the longer one wins, ties to the unwound one.

use std::time::{Duration, Instant};

use framehop::{ExplicitModuleSectionInfo, Module};
use object::{Object, ObjectSection, ObjectSegment, ReadRef};
use phosphor_format::system::MAX_FRAMES;

/// Bytes of the user stack the kernel copies with each sample (from the stack pointer up), as
/// `perf record --call-graph dwarf,16384` asks: enough for about 100 frames of ordinary Rust
/// code. A sample record is about this much; the ring is sized for a period of them.
pub(super) const STACK_BYTES: u32 = 16 * 1024;
/// The most bytes of unwind sections kept over all objects.
pub(super) const MAX_UNWIND_BYTES: usize = 128 << 20;
/// The module list is read again at most this often when an address is in no known object.
pub(super) const REFRESH_EVERY: Duration = Duration::from_millis(100);

/// The registers a sample carries (`sample_regs_user`), by the kernel's `perf_regs` numbering;
/// 0 where this architecture is not unwound (the kernel's chain is then all there is).
pub(super) const REGS_MASK: u64 = arch::REGS_MASK;

/// Setting this environment variable to `1` turns the stack copies off: samples then carry the
/// kernel's frame-pointer chain only (cheaper, and whole for code built with frame pointers).
pub(super) const FRAME_POINTERS_ONLY: &str = "PHOSPHOR_PERF_FRAME_POINTERS";

/// Whether samples carry stack copies to unwind: this architecture is unwound and
/// [`FRAME_POINTERS_ONLY`] is not set.
pub(super) fn enabled() -> bool {
    REGS_MASK != 0 && std::env::var_os(FRAME_POINTERS_ONLY).is_none_or(|v| v != "1")
}

/// How the stacks of the samples unwound so far were got.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct UnwindCounts {
    /// Unwound from the stack copy.
    pub(super) unwound: u64,
    /// The kernel's frame-pointer chain was longer, and kept.
    pub(super) kernel: u64,
}

/// One executable mapping: the key it is known by in `/proc/self/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct MapLine {
    start: u64,
    end: u64,
    file_offset: u64,
    inode: u64,
    path: String,
}

/// A mapping known to the unwinder, and the bytes of unwind data it was given (0: none, its
/// frames walked by frame pointer).
#[derive(Debug)]
struct Known {
    line: MapLine,
    bytes: usize,
}

/// The collector's unwinder: `framehop`'s, its rule cache, and the modules it was given.
pub(super) struct StackUnwinder {
    arch: arch::Arch,
    /// By start address.
    known: Vec<Known>,
    bytes: usize,
    refreshed: Option<Instant>,
    pub(super) counts: UnwindCounts,
}

impl std::fmt::Debug for StackUnwinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StackUnwinder").field("known", &self.known.len()).field("bytes", &self.bytes).finish()
    }
}

impl StackUnwinder {
    /// An unwinder with the process's objects as they are mapped now.
    pub(super) fn new() -> StackUnwinder {
        let mut u = StackUnwinder {
            arch: arch::Arch::new(),
            known: Vec::new(),
            bytes: 0,
            refreshed: None,
            counts: UnwindCounts::default(),
        };
        u.refresh();
        u
    }

    /// Bytes of unwind sections held.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether `address` is in an object the unwinder was given.
    fn knows(&self, address: u64) -> bool {
        let at = self.known.partition_point(|k| k.line.start <= address);
        at.checked_sub(1).is_some_and(|i| address < self.known[i].line.end)
    }

    /// Reads the maps again if the last read is older than [`REFRESH_EVERY`]; whether it did.
    fn refresh_if_due(&mut self) -> bool {
        if self.refreshed.is_some_and(|t| t.elapsed() < REFRESH_EVERY) {
            return false;
        }
        self.refresh();
        true
    }

    /// Brings the modules in line with `/proc/self/maps`.
    fn refresh(&mut self) {
        self.refreshed = Some(Instant::now());
        let Ok(text) = std::fs::read_to_string("/proc/self/maps") else { return };
        let now: Vec<MapLine> = text.lines().filter_map(parse_line).collect();
        let arch = &mut self.arch;
        let mut freed = 0;
        self.known.retain(|k| {
            let live = now.contains(&k.line);
            if !live && k.bytes > 0 {
                arch.remove_module(k.line.start);
                freed += k.bytes;
            }
            live
        });
        self.bytes -= freed;
        for line in now {
            if self.known.iter().any(|k| k.line == line) {
                continue;
            }
            let mut bytes = 0;
            if let Some((module, size)) = load(&line, MAX_UNWIND_BYTES - self.bytes) {
                self.arch.add_module(module);
                bytes = size;
                self.bytes += size;
            }
            self.known.push(Known { line, bytes });
        }
        self.known.sort_by_key(|k| k.line.start);
    }

    /// The frames of one sample into `out` (innermost first, at most [`MAX_FRAMES`]): unwound from
    /// `regs` (in [`REGS_MASK`]'s order) and `stack` (the copy from the stack pointer up), or
    /// the kernel's chain `kernel` if that is longer (see the module's documentation).
    pub(super) fn unwind(&mut self, regs: &[u64], stack: &[u8], kernel: &[u64], out: &mut Vec<u64>) {
        out.clear();
        if let Some(pc) = arch::pc(regs) {
            if !self.knows(pc) {
                self.refresh_if_due();
            }
            self.walk(regs, stack, out);
            // A walk that stopped in no known object may have met a new one: once, read the maps
            // again and walk again.
            if out.last().is_some_and(|&a| !self.knows(a)) && self.refresh_if_due() {
                self.walk(regs, stack, out);
            }
        }
        if out.len() < kernel.len().min(MAX_FRAMES) {
            out.clear();
            out.extend(kernel.iter().take(MAX_FRAMES));
            self.counts.kernel += 1;
        } else {
            self.counts.unwound += 1;
        }
    }

    fn walk(&mut self, regs: &[u64], stack: &[u8], out: &mut Vec<u64>) {
        out.clear();
        let Some(sp) = arch::sp(regs) else { return };
        let mut read = |address: u64| -> Result<u64, ()> {
            let at = usize::try_from(address.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
            let word = stack.get(at..at.checked_add(8).ok_or(())?).ok_or(())?;
            Ok(u64::from_ne_bytes(word.try_into().map_err(|_| ())?))
        };
        self.arch.walk(regs, &mut read, out, MAX_FRAMES);
    }
}

/// An executable line of `/proc/self/maps` backed by a file, or the `[vdso]`:
/// `start-end perms offset dev inode path`.
fn parse_line(line: &str) -> Option<MapLine> {
    let mut f = line.splitn(6, ' ');
    let (range, perms, offset, _dev, inode) = (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
    let path = f.next()?.trim_start();
    if perms.as_bytes().get(2) != Some(&b'x') || !(path.starts_with('/') || path == "[vdso]") {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    let hex = |s: &str| u64::from_str_radix(s, 16).ok();
    Some(MapLine {
        start: hex(start)?,
        end: hex(end)?,
        file_offset: hex(offset)?,
        inode: inode.parse().ok()?,
        path: path.to_owned(),
    })
}

/// The module of mapping `line`, with its unwind sections copied (at most `budget` bytes), and
/// their size; `None` when its file is not the one mapped, is not an object, or has no
/// `.eh_frame`.
fn load(line: &MapLine, budget: usize) -> Option<(Module<Vec<u8>>, usize)> {
    if line.path == "[vdso]" {
        let image = vdso_image(line)?;
        return module(&*image, line, budget);
    }
    use std::os::unix::fs::MetadataExt;
    let file = std::fs::File::open(&line.path).ok()?;
    // A file replaced since it was mapped (a rebuilt binary) is not the code that runs.
    if file.metadata().ok()?.ino() != line.inode {
        return None;
    }
    let cache = object::ReadCache::new(file);
    module(&cache, line, budget)
}

/// A copy of the vDSO's image, when `line` is where the kernel says it is.
fn vdso_image(line: &MapLine) -> Option<Vec<u8>> {
    // SAFETY: getauxval only reads the process's auxiliary vector.
    let base = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) };
    if base != line.start || line.end <= line.start || line.end - line.start > 1 << 20 {
        return None;
    }
    let len = (line.end - line.start) as usize;
    // SAFETY: the kernel maps the vDSO readable at `AT_SYSINFO_EHDR` for the process's whole life
    // and never unmaps it; `/proc/self/maps` says it spans `len` bytes from there.
    let image = unsafe { std::slice::from_raw_parts(base as *const u8, len) };
    Some(image.to_vec())
}

/// The module of `line` from its object's data.
fn module<'d, R: ReadRef<'d>>(data: R, line: &MapLine, budget: usize) -> Option<(Module<Vec<u8>>, usize)> {
    let obj = object::File::parse(data).ok()?;
    let len = line.end - line.start;
    // The load segment of this mapping's code: its file range overlaps the mapping's, and it is
    // executable (a linker that packs segments, as lld does, puts the end of the read-only one in
    // the same page, with another address-to-offset difference).
    let overlaps = |s: &object::Segment<'d, '_, R>| {
        let (offset, size) = s.file_range();
        offset < line.file_offset.saturating_add(len) && line.file_offset < offset.saturating_add(size)
    };
    let executable = |s: &object::Segment<'d, '_, R>| matches!(s.flags(), object::SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0);
    let seg = obj
        .segments()
        .find(|s| overlaps(s) && executable(s))
        .or_else(|| obj.segments().find(|s| overlaps(s)))?;
    let (seg_offset, _) = seg.file_range();
    // The address of file offset `seg_offset` is `start + (seg_offset - file_offset)`, and its
    // address in the object is the segment's; the difference is the load bias.
    let bias = line.start.wrapping_add(seg_offset).wrapping_sub(line.file_offset).wrapping_sub(seg.address());
    let range = |name: &str| obj.section_by_name(name).map(|s| s.address()..s.address() + s.size());
    let eh_frame = obj.section_by_name(".eh_frame")?;
    let eh_frame_hdr = obj.section_by_name(".eh_frame_hdr");
    let size = eh_frame.size() + eh_frame_hdr.as_ref().map_or(0, |s| s.size());
    if size > budget as u64 {
        return None;
    }
    let eh_frame_data = eh_frame.data().ok()?.to_vec();
    let eh_frame_hdr_data = eh_frame_hdr.as_ref().and_then(|s| s.data().ok()).map(<[u8]>::to_vec);
    let info = ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: range(".text"),
        got_svma: range(".got"),
        eh_frame_svma: range(".eh_frame"),
        eh_frame: Some(eh_frame_data),
        eh_frame_hdr_svma: range(".eh_frame_hdr"),
        eh_frame_hdr: eh_frame_hdr_data,
        ..Default::default()
    };
    Some((Module::new(line.path.clone(), line.start..line.end, bias, info), size as usize))
}

#[cfg(target_arch = "x86_64")]
mod arch {
    use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
    use framehop::{Module, Unwinder};
    use perf_event_open_sys::bindings as sys;

    /// `bp`, `sp`, `ip`: the kernel writes them in this order (by register number).
    pub(super) const REGS_MASK: u64 =
        1 << sys::PERF_REG_X86_BP | 1 << sys::PERF_REG_X86_SP | 1 << sys::PERF_REG_X86_IP;

    pub(super) fn pc(regs: &[u64]) -> Option<u64> {
        regs.get(2).copied()
    }

    pub(super) fn sp(regs: &[u64]) -> Option<u64> {
        regs.get(1).copied()
    }

    pub(super) struct Arch {
        unwinder: UnwinderX86_64<Vec<u8>>,
        cache: CacheX86_64,
    }

    impl Arch {
        pub(super) fn new() -> Arch {
            Arch { unwinder: UnwinderX86_64::new(), cache: CacheX86_64::new() }
        }

        pub(super) fn add_module(&mut self, m: Module<Vec<u8>>) {
            self.unwinder.add_module(m);
        }

        pub(super) fn remove_module(&mut self, start: u64) {
            self.unwinder.remove_module(start);
        }

        pub(super) fn walk(
            &mut self,
            regs: &[u64],
            read: &mut impl FnMut(u64) -> Result<u64, ()>,
            out: &mut Vec<u64>,
            max: usize,
        ) {
            let &[bp, sp, ip] = regs else { return };
            let mut frames =
                self.unwinder.iter_frames(ip, UnwindRegsX86_64::new(ip, sp, bp), &mut self.cache, read);
            while out.len() < max {
                match frames.next() {
                    Ok(Some(f)) => out.push(f.address()),
                    Ok(None) | Err(_) => break,
                }
            }
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod arch {
    use framehop::aarch64::{CacheAarch64, PtrAuthMask, UnwindRegsAarch64, UnwinderAarch64};
    use framehop::{Module, Unwinder};
    use perf_event_open_sys::bindings as sys;

    /// `x29` (the frame pointer), `lr`, `sp`, `pc`, in this order (by register number).
    pub(super) const REGS_MASK: u64 = 1 << sys::PERF_REG_ARM64_X29
        | 1 << sys::PERF_REG_ARM64_LR
        | 1 << sys::PERF_REG_ARM64_SP
        | 1 << sys::PERF_REG_ARM64_PC;

    pub(super) fn pc(regs: &[u64]) -> Option<u64> {
        regs.get(3).copied()
    }

    pub(super) fn sp(regs: &[u64]) -> Option<u64> {
        regs.get(2).copied()
    }

    pub(super) struct Arch {
        unwinder: UnwinderAarch64<Vec<u8>>,
        cache: CacheAarch64,
    }

    impl Arch {
        pub(super) fn new() -> Arch {
            Arch { unwinder: UnwinderAarch64::new(), cache: CacheAarch64::new() }
        }

        pub(super) fn add_module(&mut self, m: Module<Vec<u8>>) {
            self.unwinder.add_module(m);
        }

        pub(super) fn remove_module(&mut self, start: u64) {
            self.unwinder.remove_module(start);
        }

        pub(super) fn walk(
            &mut self,
            regs: &[u64],
            read: &mut impl FnMut(u64) -> Result<u64, ()>,
            out: &mut Vec<u64>,
            max: usize,
        ) {
            let &[fp, lr, sp, pc] = regs else { return };
            // Return addresses signed by pointer authentication lose their signature bits.
            let mask = PtrAuthMask::from_max_known_address(self.unwinder.max_known_code_address());
            let start = UnwindRegsAarch64::new_with_ptr_auth_mask(mask, lr, sp, fp);
            let mut frames = self.unwinder.iter_frames(pc, start, &mut self.cache, read);
            while out.len() < max {
                match frames.next() {
                    Ok(Some(f)) => out.push(f.address()),
                    Ok(None) | Err(_) => break,
                }
            }
        }
    }
}

/// Elsewhere the kernel's frame-pointer chain is all there is: no registers are asked for.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod arch {
    use framehop::Module;

    pub(super) const REGS_MASK: u64 = 0;

    pub(super) fn pc(_: &[u64]) -> Option<u64> {
        None
    }

    pub(super) fn sp(_: &[u64]) -> Option<u64> {
        None
    }

    pub(super) struct Arch;

    impl Arch {
        pub(super) fn new() -> Arch {
            Arch
        }

        pub(super) fn add_module(&mut self, _: Module<Vec<u8>>) {}

        pub(super) fn remove_module(&mut self, _: u64) {}

        pub(super) fn walk(
            &mut self,
            _: &[u64],
            _: &mut impl FnMut(u64) -> Result<u64, ()>,
            _: &mut Vec<u64>,
            _: usize,
        ) {
        }
    }
}

#[cfg(test)]
#[path = "unwind_tests.rs"]
mod tests;

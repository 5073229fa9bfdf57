//! The probe semaphore: a `u16` that tools increment while they are attached to a probe.
//!
//! SystemTap's convention: a probe's note records the address of its semaphore; gdb, SystemTap,
//! and the kernel's uprobes (for perf, bpftrace and BCC, through `ref_ctr_offset`) add one to it
//! when they attach and take one away when they detach. The program reads it to skip the work of
//! computing arguments that nobody would see. It lives in the section `.probes`, as `sys/sdt.h`
//! puts it, in initialised (file-backed) data: the kernel finds it by its file offset.

use core::sync::atomic::{AtomicU16, Ordering};

/// A probe's semaphore: how many tools are attached to it right now.
///
/// Define one with [`sdt_define_semaphore!`](crate::sdt_define_semaphore), read it with
/// [`sdt_enabled!`](crate::sdt_enabled). A tool writes it from outside the process (ptrace, or the
/// kernel), so a program never writes it; it is an atomic only so that reading it is not a data
/// race in Rust's memory model. Its layout is exactly a `u16`, which the tools expect.
#[repr(transparent)]
#[derive(Debug)]
pub struct Semaphore(AtomicU16);

impl Semaphore {
    /// A semaphore no tool is attached to.
    #[allow(clippy::new_without_default)] // Only a `static` ever holds one.
    pub const fn new() -> Semaphore {
        Semaphore(AtomicU16::new(0))
    }

    /// Whether any tool is attached to the probe.
    #[inline(always)]
    pub fn is_enabled(&self) -> bool {
        self.attached() != 0
    }

    /// How many tools are attached (as far as they keep count).
    #[inline(always)]
    pub fn attached(&self) -> u16 {
        // Relaxed: the count is a hint that publishes no data; a tool that attaches is seen at
        // this load or a later one, and a probe fired a moment early or late is harmless.
        self.0.load(Ordering::Relaxed)
    }
}

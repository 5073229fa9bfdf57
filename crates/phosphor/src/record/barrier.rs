//! Asymmetric memory barriers: a free one for the recording thread, a dear one for the stopper.
//!
//! The `ChunkLock` protocol between a thread-local tenant's owner and `evict_threads` is Dekker's:
//! each side stores its own flag and then loads the other's. That needs a store-load barrier on both
//! sides, and a `fence(SeqCst)` (an `mfence`, or a locked instruction) on every event would cost as
//! much as the clock read. So the barrier is made asymmetric, as in liburcu's `urcu-memb` flavour and
//! folly's `asymmetricHeavyBarrier`: the owner issues only a compiler barrier ([`light`]), and the
//! stopper issues `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` ([`heavy`]), which makes the kernel
//! run a full memory barrier on every CPU currently running a thread of this process. Any owner is
//! then either before its light barrier (and will see the stopper's flag) or past it (and its flag
//! is visible to the stopper).
//!
//! On Windows the heavy half is `FlushProcessWriteBuffers`, the same guarantee under another name
//! (the .NET runtime uses it as its heavy barrier too): before it returns, every processor running
//! a thread of the process has flushed its write queue and run a full barrier (the kernel sends
//! them an inter-processor interrupt). It exists on every Windows since Vista and reports no
//! failure, so there [`asymmetric_available`] is always true. macOS documents no such call, so it
//! takes the symmetric path below.
//!
//! Where the kernel refuses membarrier, and on systems with neither call, [`asymmetric_available`]
//! is false and `TraceLog` gives every thread a tenant whose slave side takes the lock with a
//! `SeqCst` compare-and-swap instead, which needs no help from [`heavy`]. Under loom both barriers
//! are `fence(SeqCst)`, which is what the membarrier pair guarantees and what loom can model.
//!
//! Miri cannot run the membarrier system call (it emulates only a handful of syscalls), and it
//! could not model what membarrier does to other threads' barriers anyway. Under Miri, therefore,
//! [`asymmetric_available`] is false, exactly as on a kernel without membarrier: every tenant takes
//! its slave lock with the `SeqCst` compare-and-swap, and [`heavy`] is only its `SeqCst` fence,
//! which that protocol does not need. Miri thus checks the symmetric protocol, the one it can model.

#[cfg(not(loom))]
use std::sync::OnceLock;

#[cfg(all(target_os = "linux", not(loom), not(miri)))]
mod sys {
    // From linux/membarrier.h; the libc crate does not export these.
    pub const CMD_QUERY: libc::c_int = 0;
    pub const CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    pub const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    pub fn membarrier(cmd: libc::c_int) -> libc::c_long {
        // SAFETY: membarrier takes (cmd, flags, cpu_id) integers and touches no user memory; an
        // unsupported command returns -1 with errno set, which callers check.
        unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0 as libc::c_uint, 0 as libc::c_int) }
    }
}

/// Whether [`heavy`] can make [`light`] sufficient. Registers this process for expedited
/// membarrier on first call (once per process).
#[cfg(not(loom))]
pub(crate) fn asymmetric_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        #[cfg(all(target_os = "linux", not(miri)))]
        {
            let mask = sys::membarrier(sys::CMD_QUERY);
            mask >= 0
                && mask & libc::c_long::from(sys::CMD_PRIVATE_EXPEDITED) != 0
                && sys::membarrier(sys::CMD_REGISTER_PRIVATE_EXPEDITED) == 0
        }
        // FlushProcessWriteBuffers has no failure to report (see the module comment).
        #[cfg(all(windows, not(miri)))]
        {
            true
        }
        // Neither call elsewhere, nor under Miri (see the module comment).
        #[cfg(any(not(any(target_os = "linux", windows)), miri))]
        {
            false
        }
    })
}

/// Under loom the light barrier is a real fence, so the asymmetric path is always modelled.
#[cfg(loom)]
pub(crate) fn asymmetric_available() -> bool {
    true
}

/// The recording thread's half: orders its flag store before its flag load, given [`heavy`].
#[inline(always)]
pub(crate) fn light() {
    #[cfg(loom)]
    crate::sync::fence(crate::sync::Ordering::SeqCst);
    // We don't need a fence here: `heavy` runs one on this CPU on our behalf whenever it matters.
    // The compiler barrier keeps the compiler from reordering the store and the load.
    #[cfg(not(loom))]
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
}

/// The stopper's half: a full barrier on every CPU running this process.
pub(crate) fn heavy() {
    #[cfg(loom)]
    crate::sync::fence(crate::sync::Ordering::SeqCst);
    #[cfg(not(loom))]
    {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        #[cfg(all(target_os = "linux", not(miri)))]
        if asymmetric_available() {
            let r = sys::membarrier(sys::CMD_PRIVATE_EXPEDITED);
            // Registration succeeded, so the command cannot fail short of a kernel bug; a
            // failure would void the protocol, so it must not pass silently.
            assert_eq!(r, 0, "membarrier(PRIVATE_EXPEDITED) failed after registration");
        }
        #[cfg(all(windows, not(miri)))]
        // SAFETY: FlushProcessWriteBuffers takes no arguments, touches no memory of ours and
        // cannot fail; it returns once every processor running a thread of this process has run a
        // barrier, which is the guarantee `light`'s callers rely on.
        unsafe {
            windows_sys::Win32::System::Threading::FlushProcessWriteBuffers()
        };
    }
}

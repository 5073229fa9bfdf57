//! The limit loop: the floor every timestamped event is measured against (see `PEERS.md`). One
//! raw `rdtsc` and one 32-byte store into a thread-local ring of 4,096 records. Every benchmark of
//! the workspace (`crates/phosphor/benches/hot_path.rs`, `examples/callgrind_instant.rs`,
//! `crates/phosphor-usdt/benches/probe_site.rs`, the `phosphor-bench` crate) calls this one copy,
//! so they all measure the same loop; `limit_step` is `#[inline(always)]`, so it compiles into each
//! caller's loop as if written there.

use std::cell::UnsafeCell;

/// The ring: 4096 records of 32 bytes and a cursor, in one thread local.
struct LimitRing {
    pos: UnsafeCell<usize>,
    recs: UnsafeCell<[[u64; 4]; 4096]>,
}

thread_local! {
    static LIMIT: LimitRing =
        const { LimitRing { pos: UnsafeCell::new(0), recs: UnsafeCell::new([[0; 4]; 4096]) } };
}

/// One raw clock read and one 32-byte store into this thread's ring.
#[inline(always)]
pub fn limit_step(a: u64, b: u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtsc has no memory effects and exists on every x86-64 CPU.
    let ts = unsafe { core::arch::x86_64::_rdtsc() };
    #[cfg(not(target_arch = "x86_64"))]
    let ts = std::time::Instant::now().elapsed().as_nanos() as u64;
    LIMIT.with(|r| {
        // SAFETY: [1] the ring is this thread's own, and no reference to it escapes this closure,
        // so nothing else aliases `pos` or `recs` here. [2] The index is masked into bounds.
        unsafe {
            let pos = *r.pos.get();
            (*r.recs.get())[pos & 4095] = [ts, 0x0001_0000_0000_0101, a, b];
            *r.pos.get() = pos.wrapping_add(1);
        }
    });
}

/// Records the limit loop has stored on this thread: its recorded count.
pub fn limit_stored() -> u64 {
    LIMIT.with(|r| {
        // SAFETY: a plain read of this thread's own cursor; no reference into the ring is live.
        unsafe { *r.pos.get() }
    }) as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_step_stores_one_record() {
        let before = super::limit_stored();
        for i in 0..5000 {
            super::limit_step(i, 7);
        }
        assert_eq!(super::limit_stored() - before, 5000);
    }
}

//! Clocks: one per `TraceLog`, chosen once (DSUI's clock selection).
//!
//! * [`ClockKind::Tsc`] reads the time-stamp counter with `rdtsc`: about 20 cycles and no system
//!   call. It is used only where the CPU reports an invariant TSC (CPUID leaf 0x8000_0007, EDX bit
//!   8), and is calibrated against `CLOCK_MONOTONIC`.
//! * [`ClockKind::Monotonic`] and [`ClockKind::Realtime`] read `clock_gettime`, served by the vDSO
//!   without a system call on Linux; their ticks are nanoseconds.
//!
//! A trace stores a [`ClockInfo`]: the kind, how raw ticks convert to nanoseconds, and the
//! wall-clock time of a known tick, so tools can place events on the calendar.

use std::time::Duration;

pub use phosphor_format::clock::{ClockInfo, ClockKind};

/// Decodes a clock kind stored in an atomic (see `TraceLog::now`); unknown codes read the
/// monotonic clock.
pub(crate) const fn kind_from_u8(v: u8) -> ClockKind {
    match ClockKind::from_code(v) {
        Some(k) => k,
        None => ClockKind::Monotonic,
    }
}

/// Reads clock `kind`. The TSC read is inline; the `clock_gettime` clocks, which cost a vDSO call
/// anyway, are out of line so they don't lengthen the TSC path.
#[inline(always)]
pub(crate) fn now(kind: ClockKind) -> u64 {
    if matches!(kind, ClockKind::Tsc) {
        rdtsc()
    } else {
        now_gettime(kind)
    }
}

#[cold]
#[inline(never)]
fn now_gettime(kind: ClockKind) -> u64 {
    match kind {
        ClockKind::Tsc => rdtsc(),
        ClockKind::Monotonic => clock_gettime_ns(libc::CLOCK_MONOTONIC),
        ClockKind::Realtime => clock_gettime_ns(libc::CLOCK_REALTIME),
    }
}

/// Reads the time-stamp counter, or the monotonic clock off x86-64.
#[inline(always)]
pub fn rdtsc() -> u64 {
    // Miri cannot run rdtsc or cpuid; under it the "TSC" is the monotonic clock.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        // SAFETY: rdtsc has no memory effects and is available on every x86-64 CPU.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(any(not(target_arch = "x86_64"), miri))]
    {
        clock_gettime_ns(libc::CLOCK_MONOTONIC)
    }
}

#[inline(always)]
fn clock_gettime_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the clock ids used here always exist on Linux
    // and the BSDs, so the call cannot fail.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

/// Chooses and calibrates a clock. Asking for the TSC where it is not invariant logs the reason
/// to stderr once and falls back to the monotonic clock.
pub(crate) fn calibrate(kind: ClockKind) -> ClockInfo {
    match kind {
        ClockKind::Tsc => match tsc_unusable_reason() {
            None => calibrate_tsc(Duration::from_millis(20)),
            Some(reason) => {
                eprintln!("phosphor: not using the TSC ({reason}); falling back to CLOCK_MONOTONIC");
                ClockInfo { fallback_reason: Some(reason), ..calibrate(ClockKind::Monotonic) }
            }
        },
        ClockKind::Monotonic | ClockKind::Realtime => {
            let (mono, wall) =
                (clock_gettime_ns(libc::CLOCK_MONOTONIC), clock_gettime_ns(libc::CLOCK_REALTIME));
            let origin_ticks = if kind == ClockKind::Monotonic { mono } else { wall };
            ClockInfo {
                kind,
                ns_per_tick: 1.0,
                origin_ticks,
                origin_monotonic_ns: mono,
                origin_wall_ns: wall,
                fallback_reason: None,
            }
        }
    }
}

/// Measures TSC ticks against `CLOCK_MONOTONIC` over `span`. Each endpoint brackets one TSC read
/// between two monotonic reads and keeps the tightest of several tries.
fn calibrate_tsc(span: Duration) -> ClockInfo {
    fn sample() -> (u64, u64) {
        let mut best = (u64::MAX, 0, 0);
        for _ in 0..16 {
            let m0 = clock_gettime_ns(libc::CLOCK_MONOTONIC);
            let t = rdtsc();
            let m1 = clock_gettime_ns(libc::CLOCK_MONOTONIC);
            if m1 - m0 < best.0 {
                best = (m1 - m0, t, m0 + (m1 - m0) / 2);
            }
        }
        (best.1, best.2)
    }
    let (t0, m0) = sample();
    let wall = clock_gettime_ns(libc::CLOCK_REALTIME);
    let mono_at_wall = clock_gettime_ns(libc::CLOCK_MONOTONIC);
    std::thread::sleep(span);
    let (t1, m1) = sample();
    let ns_per_tick = (m1 - m0) as f64 / (t1.wrapping_sub(t0)).max(1) as f64;
    ClockInfo {
        kind: ClockKind::Tsc,
        ns_per_tick,
        origin_ticks: t0,
        origin_monotonic_ns: m0,
        origin_wall_ns: wall.saturating_sub(mono_at_wall.saturating_sub(m0)),
        fallback_reason: None,
    }
}

/// `None` when the TSC is invariant, else why it can't be used.
fn tsc_unusable_reason() -> Option<String> {
    #[cfg(miri)]
    {
        Some("Miri cannot run cpuid or rdtsc".into())
    }
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        use core::arch::x86_64::__cpuid;
        // Leaf 0x8000_0000 returns the highest extended leaf, checked before 0x8000_0007 is read.
        let max_ext = __cpuid(0x8000_0000).eax;
        if max_ext < 0x8000_0007 {
            return Some("CPUID leaf 0x80000007 is not available".into());
        }
        let edx = __cpuid(0x8000_0007).edx;
        if edx & (1 << 8) == 0 {
            return Some("the CPU does not report an invariant TSC".into());
        }
        None
    }
    #[cfg(all(not(target_arch = "x86_64"), not(miri)))]
    {
        Some("rdtsc is x86-64 only".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_clock_converts_ticks_to_monotonic_nanoseconds() {
        for kind in [ClockKind::Tsc, ClockKind::Monotonic] {
            let info = calibrate(kind);
            let before = clock_gettime_ns(libc::CLOCK_MONOTONIC);
            let t = now(info.kind);
            let after = clock_gettime_ns(libc::CLOCK_MONOTONIC);
            let ns = info.to_ns(t);
            // The TSC conversion is a fit over 20 ms; allow 1 ms of slack on each side.
            assert!(
                ns + 1_000_000 >= before && ns <= after + 1_000_000,
                "{kind:?}: {before} <= {ns} <= {after}"
            );
        }
    }

    #[test]
    fn wall_clock_origin_matches_realtime() {
        let info = calibrate(ClockKind::Tsc);
        let wall = clock_gettime_ns(libc::CLOCK_REALTIME);
        let got = info.to_wall_ns(now(info.kind));
        assert!(got.abs_diff(wall) < 5_000_000, "{got} vs {wall}");
    }
}

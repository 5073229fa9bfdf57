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

/// Which clock a `TraceLog` reads.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ClockKind {
    /// The invariant time-stamp counter, falling back to [`ClockKind::Monotonic`] where there is
    /// none.
    #[default]
    Tsc = 0,
    /// `CLOCK_MONOTONIC`, in nanoseconds.
    Monotonic = 1,
    /// `CLOCK_REALTIME`, in nanoseconds since the Unix epoch.
    Realtime = 2,
}

impl ClockKind {
    pub(crate) const fn from_u8(v: u8) -> ClockKind {
        match v {
            0 => ClockKind::Tsc,
            2 => ClockKind::Realtime,
            _ => ClockKind::Monotonic,
        }
    }

    /// A short lowercase name: `tsc`, `monotonic` or `realtime`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ClockKind::Tsc => "tsc",
            ClockKind::Monotonic => "monotonic",
            ClockKind::Realtime => "realtime",
        }
    }

    /// Reads this clock. The TSC read is inline; the `clock_gettime` clocks, which cost a vDSO
    /// call anyway, are out of line so they don't lengthen the TSC path.
    #[inline(always)]
    pub fn now(self) -> u64 {
        if matches!(self, ClockKind::Tsc) {
            rdtsc()
        } else {
            self.now_gettime()
        }
    }

    #[cold]
    #[inline(never)]
    fn now_gettime(self) -> u64 {
        match self {
            ClockKind::Tsc => rdtsc(),
            ClockKind::Monotonic => clock_gettime_ns(libc::CLOCK_MONOTONIC),
            ClockKind::Realtime => clock_gettime_ns(libc::CLOCK_REALTIME),
        }
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

/// How a trace's raw clock values map to time.
#[derive(Clone, Debug, PartialEq)]
pub struct ClockInfo {
    /// The clock read.
    pub kind: ClockKind,
    /// Nanoseconds per tick (1.0 for the clock_gettime clocks).
    pub ns_per_tick: f64,
    /// A tick value read at calibration.
    pub origin_ticks: u64,
    /// `CLOCK_MONOTONIC` at `origin_ticks`, in nanoseconds.
    pub origin_monotonic_ns: u64,
    /// `CLOCK_REALTIME` at `origin_ticks`, in nanoseconds since the Unix epoch.
    pub origin_wall_ns: u64,
    /// Why the TSC was not used, when it was asked for and refused.
    pub fallback_reason: Option<String>,
}

impl ClockInfo {
    /// Chooses and calibrates a clock. Asking for the TSC where it is not invariant logs the reason
    /// to stderr once and falls back to the monotonic clock.
    pub fn calibrate(kind: ClockKind) -> ClockInfo {
        match kind {
            ClockKind::Tsc => match tsc_unusable_reason() {
                None => Self::calibrate_tsc(Duration::from_millis(20)),
                Some(reason) => {
                    eprintln!("phosphor: not using the TSC ({reason}); falling back to CLOCK_MONOTONIC");
                    ClockInfo { fallback_reason: Some(reason), ..Self::calibrate(ClockKind::Monotonic) }
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

    /// Converts a raw clock value to `CLOCK_MONOTONIC` nanoseconds (wall nanoseconds for
    /// [`ClockKind::Realtime`]).
    pub fn to_ns(&self, ticks: u64) -> u64 {
        match self.kind {
            ClockKind::Tsc => {
                let delta = ticks.wrapping_sub(self.origin_ticks) as i64 as f64 * self.ns_per_tick;
                (self.origin_monotonic_ns as i64).saturating_add(delta as i64).max(0) as u64
            }
            ClockKind::Monotonic | ClockKind::Realtime => ticks,
        }
    }

    /// Converts a tick count (a duration) to nanoseconds.
    pub fn ticks_to_ns(&self, ticks: u64) -> u64 {
        (ticks as f64 * self.ns_per_tick) as u64
    }

    /// Converts nanoseconds to a tick count, for durations given by the user.
    pub fn ns_to_ticks(&self, ns: u64) -> u64 {
        (ns as f64 / self.ns_per_tick) as u64
    }

    /// Wall-clock nanoseconds since the Unix epoch of a raw clock value.
    pub fn to_wall_ns(&self, ticks: u64) -> u64 {
        match self.kind {
            ClockKind::Realtime => ticks,
            _ => {
                let since = self.to_ns(ticks) as i64 - self.origin_monotonic_ns as i64;
                (self.origin_wall_ns as i64).saturating_add(since).max(0) as u64
            }
        }
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
            let info = ClockInfo::calibrate(kind);
            let before = clock_gettime_ns(libc::CLOCK_MONOTONIC);
            let t = info.kind.now();
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
        let info = ClockInfo::calibrate(ClockKind::Tsc);
        let wall = clock_gettime_ns(libc::CLOCK_REALTIME);
        let got = info.to_wall_ns(info.kind.now());
        assert!(got.abs_diff(wall) < 5_000_000, "{got} vs {wall}");
    }
}

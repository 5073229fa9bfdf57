//! Clocks: one per `TraceLog`, chosen once (DSUI's clock selection).
//!
//! * [`ClockKind::Tsc`] reads the CPU's own counter, without a system call, and is calibrated
//!   against `CLOCK_MONOTONIC` over 20 ms:
//!   - on x86-64 the time-stamp counter (`rdtsc`, about 20 cycles), used only where the CPU
//!     reports an invariant TSC (CPUID leaf 0x8000_0007, EDX bit 8);
//!   - on aarch64 the generic timer's virtual count (`cntvct_el0`, after an `isb`), whose nominal
//!     rate is `cntfrq_el0`: 1 GHz from Armv8.6 on, but 24 or 25 MHz on Apple's chips and some
//!     servers (a tick every ~42 ns). The low-frequency guard ([`counter_guard`]) refuses a
//!     counter slower than [`MIN_COUNTER_HZ`]; a slower but usable one is kept, and its period,
//!     the trace's resolution, is the header's `ns_per_tick` ([`ClockInfo::resolution_ns`]).
//! * [`ClockKind::Monotonic`] and [`ClockKind::Realtime`] read `clock_gettime`, served by the vDSO
//!   without a system call on Linux; their ticks are nanoseconds. On Windows they are
//!   `QueryPerformanceCounter` (the time since boot) and `GetSystemTimePreciseAsFileTime`, in
//!   nanoseconds too; the counter (the TSC, where invariant) is calibrated against the former.
//!
//! A trace stores a [`ClockInfo`]: the kind, how raw ticks convert to nanoseconds, and the
//! wall-clock time of a known tick, so tools can place events on the calendar.

use std::time::Duration;

pub use phosphor_format::clock::{ClockInfo, ClockKind};

/// The slowest CPU counter [`ClockKind::Tsc`] accepts: 1 MHz, a tick per microsecond.
///
/// Real counters run at 1 GHz (x86-64's TSC, Armv8.6's `cntvct_el0`) down to 19.2–25 MHz (older
/// Arm cores, Apple's chips: a tick every 40–52 ns). Those slow ones are still taken: on aarch64
/// Linux `CLOCK_MONOTONIC` is computed from this very counter, so falling back to it would cost
/// 2–3× per event and gain no resolution. Below 1 MHz, most events of a busy thread would share a
/// stamp, and such a rate (or `cntfrq_el0` = 0, which firmware leaves when it does not set the
/// timer up) says the counter is not one to trust: the clock falls back to `CLOCK_MONOTONIC` with
/// the reason in the header.
pub(crate) const MIN_COUNTER_HZ: f64 = 1e6;

/// Decodes a clock kind stored in an atomic (see `TraceLog::now`); unknown codes read the
/// monotonic clock.
pub(crate) const fn kind_from_u8(v: u8) -> ClockKind {
    match ClockKind::from_code(v) {
        Some(k) => k,
        None => ClockKind::Monotonic,
    }
}

/// Reads clock `kind`. The counter read is inline; the OS clocks, which cost a vDSO call
/// anyway, are out of line so they don't lengthen the counter path.
#[inline(always)]
pub(crate) fn now(kind: ClockKind) -> u64 {
    if matches!(kind, ClockKind::Tsc) {
        counter()
    } else {
        now_os(kind)
    }
}

#[cold]
#[inline(never)]
fn now_os(kind: ClockKind) -> u64 {
    match kind {
        ClockKind::Tsc => counter(),
        ClockKind::Monotonic => monotonic_ns(),
        ClockKind::Realtime => realtime_ns(),
    }
}

/// Reads the CPU's counter: the TSC on x86-64, `cntvct_el0` on aarch64, and the monotonic clock
/// elsewhere (where [`counter_unusable_reason`] refuses the counter, so no trace stamps with it).
#[inline(always)]
pub(crate) fn counter() -> u64 {
    // Miri cannot run rdtsc, cpuid or inline assembly; under it the counter is the monotonic clock.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        // SAFETY: rdtsc has no memory effects and is available on every x86-64 CPU.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    {
        cntvct()
    }
    #[cfg(any(not(any(target_arch = "x86_64", target_arch = "aarch64")), miri))]
    {
        monotonic_ns()
    }
}

/// Reads aarch64's virtual counter, `cntvct_el0`.
///
/// The `isb` first: the architecture lets a counter read execute early, out of order with the
/// instructions before it, so without it the stamp of an event could be taken before the code it
/// follows has finished, and a thread that acquired a flag, lock or message from another could
/// stamp a time earlier than the sender's stamp of it (the Arm ARM's own example of when an ISB is
/// needed; Linux's `CLOCK_MONOTONIC` read, which this replaces, has the same `isb`). Nothing is
/// needed after the read: the stamp is then stored into the event record, which depends on its
/// value, and stores are not made speculatively. The `asm!` is not `nomem`, so it is also a
/// compiler barrier: the compiler cannot move memory accesses across it either. Armv8.6's
/// self-synchronising `cntvctss_el0` would make the `isb` unneeded; it is not used yet.
#[cfg(all(target_arch = "aarch64", not(miri)))]
#[inline(always)]
fn cntvct() -> u64 {
    let ticks: u64;
    // SAFETY: `isb` and `mrs` of `cntvct_el0` touch no memory and no stack. EL0 may read the
    // virtual counter on every aarch64 OS (Linux sets CNTKCTL_EL1.EL0VCTEN, and emulates the read
    // by trapping it on the cores whose erratum workarounds forbid direct reads).
    unsafe {
        core::arch::asm!("isb", "mrs {t}, cntvct_el0", t = out(reg) ticks, options(nostack, preserves_flags));
    }
    ticks
}

/// aarch64's `cntfrq_el0`: the counter's nominal frequency in Hz, as firmware set it (0 when it
/// did not). Bits 63:32 are reserved.
#[cfg(all(target_arch = "aarch64", not(miri)))]
fn cntfrq() -> u64 {
    let hz: u64;
    // SAFETY: reads a system register readable at EL0 wherever `cntvct_el0` is (see `cntvct`);
    // no memory, stack or flags are touched.
    unsafe {
        core::arch::asm!("mrs {f}, cntfrq_el0", f = out(reg) hz, options(nomem, nostack, preserves_flags));
    }
    hz & 0xffff_ffff
}

/// `CLOCK_MONOTONIC` in nanoseconds: on Windows, `QueryPerformanceCounter` in nanoseconds (the
/// clock Windows' own timing, `Instant` included, uses; its epoch is the boot).
#[inline(always)]
pub(crate) fn monotonic_ns() -> u64 {
    #[cfg(unix)]
    {
        clock_gettime_ns(libc::CLOCK_MONOTONIC)
    }
    #[cfg(windows)]
    {
        windows::monotonic_ns()
    }
}

/// `CLOCK_REALTIME` in nanoseconds since the Unix epoch.
fn realtime_ns() -> u64 {
    #[cfg(unix)]
    {
        clock_gettime_ns(libc::CLOCK_REALTIME)
    }
    #[cfg(windows)]
    {
        windows::realtime_ns()
    }
}

#[cfg(windows)]
mod windows {
    use std::sync::atomic::{AtomicU64, Ordering};

    use windows_sys::Win32::Foundation::FILETIME;
    use windows_sys::Win32::System::Performance::{QueryPerformanceCounter, QueryPerformanceFrequency};
    use windows_sys::Win32::System::SystemInformation::GetSystemTimePreciseAsFileTime;

    /// `QueryPerformanceCounter`'s ticks per second, read once (it is fixed at boot).
    fn frequency() -> u64 {
        static HZ: AtomicU64 = AtomicU64::new(0);
        // Relaxed: every thread computes the same value; the store only saves the next call.
        let hz = HZ.load(Ordering::Relaxed);
        if hz != 0 {
            return hz;
        }
        let mut f = 0i64;
        // SAFETY: `f` is a valid, writable i64; the call cannot fail on Windows XP and later.
        unsafe { QueryPerformanceFrequency(&mut f) };
        let hz = (f as u64).max(1);
        HZ.store(hz, Ordering::Relaxed);
        hz
    }

    pub(super) fn monotonic_ns() -> u64 {
        let mut t = 0i64;
        // SAFETY: `t` is a valid, writable i64; the call cannot fail on Windows XP and later.
        unsafe { QueryPerformanceCounter(&mut t) };
        let (t, hz) = (t as u64, frequency());
        // Whole seconds and the rest apart, so that nothing overflows u64 (t * 10^9 would after
        // 58 years at 10 MHz, but its remainder part never does).
        (t / hz) * 1_000_000_000 + (t % hz) * 1_000_000_000 / hz
    }

    pub(super) fn realtime_ns() -> u64 {
        let mut ft = FILETIME { dwLowDateTime: 0, dwHighDateTime: 0 };
        // SAFETY: `ft` is a valid, writable FILETIME; the call cannot fail (Windows 8 and later).
        unsafe { GetSystemTimePreciseAsFileTime(&mut ft) };
        // 100 ns units since 1601-01-01; the Unix epoch is 11,644,473,600 s later.
        let ticks = (u64::from(ft.dwHighDateTime) << 32) | u64::from(ft.dwLowDateTime);
        ticks.saturating_sub(116_444_736_000_000_000).saturating_mul(100)
    }
}

#[cfg(unix)]
#[inline(always)]
fn clock_gettime_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the clock ids used here always exist on Linux
    // and the BSDs, so the call cannot fail.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

/// Chooses and calibrates a clock. Asking for the CPU counter where it is unusable logs the
/// reason to stderr once and falls back to the monotonic clock.
pub(crate) fn calibrate(kind: ClockKind) -> ClockInfo {
    match kind {
        ClockKind::Tsc => {
            let calibrated = match counter_unusable_reason() {
                None => calibrate_counter(Duration::from_millis(20)),
                Some(reason) => Err(reason),
            };
            match calibrated {
                Ok(info) => info,
                Err(reason) => {
                    eprintln!(
                        "phosphor: not using the CPU counter ({reason}); falling back to CLOCK_MONOTONIC"
                    );
                    ClockInfo { fallback_reason: Some(reason), ..calibrate(ClockKind::Monotonic) }
                }
            }
        }
        ClockKind::Monotonic | ClockKind::Realtime => {
            let (mono, wall) = (monotonic_ns(), realtime_ns());
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

/// Measures the counter's ticks against `CLOCK_MONOTONIC` over `span`. Each endpoint brackets one
/// counter read between two monotonic reads and keeps the tightest of several tries. Refused by
/// [`counter_guard`] when the measured rate is too low.
fn calibrate_counter(span: Duration) -> Result<ClockInfo, String> {
    fn sample() -> (u64, u64) {
        let mut best = (u64::MAX, 0, 0);
        for _ in 0..16 {
            let m0 = monotonic_ns();
            let t = counter();
            let m1 = monotonic_ns();
            if m1 - m0 < best.0 {
                best = (m1 - m0, t, m0 + (m1 - m0) / 2);
            }
        }
        (best.1, best.2)
    }
    let (t0, m0) = sample();
    let wall = realtime_ns();
    let mono_at_wall = monotonic_ns();
    std::thread::sleep(span);
    let (t1, m1) = sample();
    let ns_per_tick = (m1 - m0) as f64 / (t1.wrapping_sub(t0)).max(1) as f64;
    counter_guard(nominal_counter_hz(), 1e9 / ns_per_tick)?;
    Ok(ClockInfo {
        kind: ClockKind::Tsc,
        ns_per_tick,
        origin_ticks: t0,
        origin_monotonic_ns: m0,
        origin_wall_ns: wall.saturating_sub(mono_at_wall.saturating_sub(m0)),
        fallback_reason: None,
    })
}

/// The low-frequency guard: whether a counter of nominal rate `nominal_hz` (aarch64's
/// `cntfrq_el0`; `None` where the CPU does not say) that ran at `measured_hz` against
/// `CLOCK_MONOTONIC` may stamp events, else why not. Both must reach [`MIN_COUNTER_HZ`]; the
/// measured rate is the one the trace uses (the kernel may correct a wrong `cntfrq_el0` from the
/// device tree, and calibration also folds in NTP's slewing of `CLOCK_MONOTONIC`).
pub(crate) fn counter_guard(nominal_hz: Option<u64>, measured_hz: f64) -> Result<(), String> {
    if let Some(hz) = nominal_hz {
        if (hz as f64) < MIN_COUNTER_HZ {
            return Err(format!(
                "cntfrq_el0 says the counter runs at {hz} Hz, below the {} MHz needed",
                MIN_COUNTER_HZ / 1e6
            ));
        }
    }
    if measured_hz.is_nan() || measured_hz < MIN_COUNTER_HZ {
        return Err(format!(
            "the counter ran at {measured_hz:.0} Hz during calibration, below the {} MHz needed",
            MIN_COUNTER_HZ / 1e6
        ));
    }
    Ok(())
}

/// The counter's nominal frequency, where the CPU states one (aarch64's `cntfrq_el0`).
fn nominal_counter_hz() -> Option<u64> {
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    {
        Some(cntfrq())
    }
    #[cfg(not(all(target_arch = "aarch64", not(miri))))]
    {
        None
    }
}

/// `None` when the CPU counter may be used (then calibrated and checked by [`counter_guard`]),
/// else why it can't.
fn counter_unusable_reason() -> Option<String> {
    #[cfg(miri)]
    {
        Some("Miri cannot run cpuid, rdtsc or inline assembly".into())
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
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    {
        // The frequency is checked with the measured one, by `counter_guard`, after calibration.
        None
    }
    #[cfg(all(not(any(target_arch = "x86_64", target_arch = "aarch64")), not(miri)))]
    {
        Some(
            "no CPU counter is read on this architecture (only x86-64's TSC and aarch64's cntvct_el0)".into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_clock_converts_ticks_to_monotonic_nanoseconds() {
        for kind in [ClockKind::Tsc, ClockKind::Monotonic] {
            let info = calibrate(kind);
            let before = monotonic_ns();
            let t = now(info.kind);
            let after = monotonic_ns();
            let ns = info.to_ns(t);
            // The TSC conversion is a fit over 20 ms; allow 1 ms of slack on each side.
            assert!(
                ns + 1_000_000 >= before && ns <= after + 1_000_000,
                "{kind:?}: {before} <= {ns} <= {after}"
            );
        }
    }

    #[test]
    fn the_low_frequency_guard_takes_slow_counters_and_refuses_unusable_ones() {
        // A 1 GHz TSC or Armv8.6 counter, and Apple's 24 MHz one (a tick every ~42 ns).
        assert_eq!(counter_guard(None, 2.9e9), Ok(()));
        assert_eq!(counter_guard(Some(1_000_000_000), 0.99e9), Ok(()));
        assert_eq!(counter_guard(Some(24_000_000), 24.001e6), Ok(()));
        // Firmware that never set cntfrq_el0, a counter slower than a tick per microsecond, and a
        // counter that hardly moved during calibration (or a NaN rate) are refused, with why.
        let unset = counter_guard(Some(0), 24e6).unwrap_err();
        assert!(unset.contains("cntfrq_el0") && unset.contains(" 0 Hz"), "{unset}");
        assert!(counter_guard(Some(32_768), 32_768.0).is_err());
        let still = counter_guard(Some(24_000_000), 10.0).unwrap_err();
        assert!(still.contains("during calibration"), "{still}");
        assert!(counter_guard(None, f64::NAN).is_err());
    }

    #[test]
    fn the_counter_never_goes_back_on_a_thread() {
        let mut last = counter();
        for _ in 0..100_000 {
            let t = counter();
            assert!(t >= last, "{t} after {last}");
            last = t;
        }
    }

    /// aarch64 stamps with `cntvct_el0`, not the `CLOCK_MONOTONIC` fallback, at `cntfrq_el0`'s
    /// rate (within 1%: the calibration also sees NTP's slewing and the reads' jitter).
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    #[test]
    fn aarch64_stamps_with_its_counter_at_cntfrq() {
        let hz = cntfrq();
        let info = calibrate(ClockKind::Tsc);
        assert_eq!((info.kind, &info.fallback_reason), (ClockKind::Tsc, &None), "cntfrq_el0 = {hz}");
        let measured = 1e9 / info.ns_per_tick;
        assert!((measured / hz as f64 - 1.0).abs() < 0.01, "measured {measured} Hz, cntfrq_el0 {hz} Hz");
        assert_eq!(info.resolution_ns(), info.ns_per_tick);
    }

    #[test]
    fn wall_clock_origin_matches_realtime() {
        let info = calibrate(ClockKind::Tsc);
        let wall = realtime_ns();
        let got = info.to_wall_ns(now(info.kind));
        assert!(got.abs_diff(wall) < 5_000_000, "{got} vs {wall}");
    }
}

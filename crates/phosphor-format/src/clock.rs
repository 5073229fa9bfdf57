//! Clock kinds and the conversion of raw clock values to time: what the runtime stamps events with
//! and what every reader needs to turn the stamps back into nanoseconds. Reading a clock is the
//! runtime's business (`phosphor`'s `clock` module); this is data and arithmetic only.
//!
//! Every conversion saturates and never panics: a corrupt header (a NaN or negative
//! `ns_per_tick`, an origin far from the events) gives wrong times, not a crash.

/// Which clock the raw timestamps come from. The discriminant is the code stored in trace files.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ClockKind {
    /// The CPU's counter: the invariant time-stamp counter on x86-64, `cntvct_el0` on aarch64;
    /// ticks convert with [`ClockInfo::ns_per_tick`], which is also the resolution. The runtime
    /// falls back to [`ClockKind::Monotonic`] where the counter is unusable (a TSC that is not
    /// invariant, an aarch64 counter below 1 MHz).
    #[default]
    Tsc = 0,
    /// `CLOCK_MONOTONIC`, in nanoseconds.
    Monotonic = 1,
    /// `CLOCK_REALTIME`, in nanoseconds since the Unix epoch.
    Realtime = 2,
}

impl ClockKind {
    /// Decodes a clock code.
    pub const fn from_code(code: u8) -> Option<ClockKind> {
        Some(match code {
            0 => ClockKind::Tsc,
            1 => ClockKind::Monotonic,
            2 => ClockKind::Realtime,
            _ => return None,
        })
    }

    /// A short lowercase name: `tsc`, `monotonic` or `realtime`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ClockKind::Tsc => "tsc",
            ClockKind::Monotonic => "monotonic",
            ClockKind::Realtime => "realtime",
        }
    }
}

/// How a trace's raw clock values map to time.
#[derive(Clone, Debug, PartialEq)]
pub struct ClockInfo {
    /// The clock read.
    pub kind: ClockKind,
    /// Nanoseconds per tick (1.0 for the `clock_gettime` clocks).
    pub ns_per_tick: f64,
    /// A tick value read at calibration: the origin.
    pub origin_ticks: u64,
    /// `CLOCK_MONOTONIC` at `origin_ticks`, in nanoseconds.
    pub origin_monotonic_ns: u64,
    /// `CLOCK_REALTIME` at `origin_ticks`, in nanoseconds since the Unix epoch.
    pub origin_wall_ns: u64,
    /// Why the CPU counter was not used, when it was asked for and refused.
    pub fallback_reason: Option<String>,
}

/// `x` rounded to the nearest integer, halves away from zero, as [`f64::round`] rounds it, but
/// without its library call (x86-64 has no rounding instruction before SSE4.1): this runs once
/// or twice per event read on a TSC clock. `as` saturates, and maps a NaN from a corrupt header
/// to 0.
#[inline]
fn round(x: f64) -> i64 {
    let whole = x as i64;
    if x.abs() >= (1u64 << 52) as f64 {
        // No fraction (or past i64, saturated).
        return whole;
    }
    // Exact: both are within 2^52 of each other's magnitude.
    let fraction = x - whole as f64;
    if fraction >= 0.5 {
        whole + 1
    } else if fraction <= -0.5 {
        whole - 1
    } else {
        whole
    }
}

impl ClockInfo {
    /// `CLOCK_MONOTONIC` read directly, a nanosecond a tick: the raw values are monotonic
    /// nanoseconds, and the origin `origin_monotonic_ns` was `origin_wall_ns` on the wall clock.
    pub const fn monotonic(origin_monotonic_ns: u64, origin_wall_ns: u64) -> ClockInfo {
        ClockInfo {
            kind: ClockKind::Monotonic,
            ns_per_tick: 1.0,
            origin_ticks: origin_monotonic_ns,
            origin_monotonic_ns,
            origin_wall_ns,
            fallback_reason: None,
        }
    }

    /// Signed nanoseconds from the origin to raw clock value `ticks`. Exact for the nanosecond
    /// clocks (no float on the way); rounded to the nearest nanosecond for the TSC.
    pub fn since_origin_ns(&self, ticks: u64) -> i64 {
        if self.ns_per_tick == 1.0 {
            let d = i128::from(ticks) - i128::from(self.origin_ticks);
            return i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX });
        }
        // The distance as a float from its u64 magnitude: converting an i128 instead is a slow
        // library call, and this runs once or twice per exported event.
        let d = if ticks >= self.origin_ticks {
            (ticks - self.origin_ticks) as f64
        } else {
            -((self.origin_ticks - ticks) as f64)
        };
        round(d * self.ns_per_tick)
    }

    /// Converts a raw clock value to `CLOCK_MONOTONIC` nanoseconds (wall nanoseconds for
    /// [`ClockKind::Realtime`]: its ticks are already those).
    pub fn to_ns(&self, ticks: u64) -> u64 {
        match self.kind {
            ClockKind::Tsc => offset(self.origin_monotonic_ns, self.since_origin_ns(ticks)),
            ClockKind::Monotonic | ClockKind::Realtime => ticks,
        }
    }

    /// Wall-clock nanoseconds since the Unix epoch of a raw clock value.
    pub fn to_wall_ns(&self, ticks: u64) -> u64 {
        match self.kind {
            ClockKind::Realtime => ticks,
            ClockKind::Tsc | ClockKind::Monotonic => offset(self.origin_wall_ns, self.since_origin_ns(ticks)),
        }
    }

    /// The clock's resolution in nanoseconds, the least difference two stamps can show: one tick
    /// of the CPU counter (0.3 ns for a 3 GHz TSC, 41.7 ns for aarch64's counter at 24 MHz), 1 for
    /// the nanosecond clocks (whose real resolution the OS does not state).
    pub fn resolution_ns(&self) -> f64 {
        match self.kind {
            ClockKind::Tsc => self.ns_per_tick,
            ClockKind::Monotonic | ClockKind::Realtime => 1.0,
        }
    }

    /// Converts a tick count (a duration) to nanoseconds.
    pub fn ticks_to_ns(&self, ticks: u64) -> u64 {
        if self.ns_per_tick == 1.0 {
            ticks
        } else {
            (ticks as f64 * self.ns_per_tick) as u64
        }
    }

    /// Converts nanoseconds (a duration) to a tick count.
    pub fn ns_to_ticks(&self, ns: u64) -> u64 {
        if self.ns_per_tick == 1.0 {
            ns
        } else {
            (ns as f64 / self.ns_per_tick) as u64
        }
    }
}

/// `base + delta`, clamped to `0..=u64::MAX`.
fn offset(base: u64, delta: i64) -> u64 {
    if delta >= 0 {
        base.saturating_add(delta as u64)
    } else {
        base.saturating_sub(delta.unsigned_abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(kind: ClockKind, ns_per_tick: f64) -> ClockInfo {
        ClockInfo {
            kind,
            ns_per_tick,
            origin_ticks: 1_000,
            origin_monotonic_ns: 50_000,
            origin_wall_ns: 1_700_000_000_000_000_000,
            fallback_reason: None,
        }
    }

    #[test]
    fn tsc_ticks_convert_through_the_origin() {
        let c = clock(ClockKind::Tsc, 0.5);
        assert_eq!(c.since_origin_ns(3_000), 1_000);
        assert_eq!(c.since_origin_ns(0), -500);
        assert_eq!(c.to_ns(3_000), 51_000);
        assert_eq!(c.to_ns(0), 49_500);
        assert_eq!(c.to_wall_ns(3_000), 1_700_000_000_000_001_000);
        assert_eq!(c.ticks_to_ns(10), 5);
        assert_eq!(c.ns_to_ticks(5), 10);
        assert_eq!(c.resolution_ns(), 0.5);
    }

    #[test]
    fn nanosecond_clocks_are_exact() {
        let c = clock(ClockKind::Monotonic, 1.0);
        let far = u64::MAX - 3;
        assert_eq!(c.to_ns(far), far);
        assert_eq!(c.ticks_to_ns(far), far, "no float rounding");
        assert_eq!(c.since_origin_ns(far), i64::MAX, "saturates");
        assert_eq!(c.to_wall_ns(1_001), 1_700_000_000_000_000_001);
        assert_eq!(c.resolution_ns(), 1.0);
        let r = clock(ClockKind::Realtime, 1.0);
        assert_eq!(r.to_wall_ns(42), 42);
        assert_eq!(r.to_ns(42), 42);
    }

    #[test]
    fn corrupt_rates_saturate_instead_of_panicking() {
        for rate in [f64::NAN, f64::INFINITY, -1.0, 1e300] {
            let c = clock(ClockKind::Tsc, rate);
            for t in [0, 1_000, u64::MAX] {
                let _ =
                    (c.to_ns(t), c.to_wall_ns(t), c.ticks_to_ns(t), c.ns_to_ticks(t), c.since_origin_ns(t));
            }
        }
        let c = clock(ClockKind::Tsc, f64::NAN);
        assert_eq!(c.since_origin_ns(5_000), 0, "a NaN rate maps to the origin");
    }

    #[test]
    fn rounding_is_f64_rounds() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut cases =
            vec![0.5, -0.5, 1.5, -1.5, 2.5, 0.49999999999999994, -0.49999999999999994, 4503599627370495.5];
        cases.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300, -1e300, 9.3e18, -9.3e18]);
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = f64::from_bits(x);
            cases.push(v);
            cases.push((x % 10_000_000) as f64 * 0.385187 - 1e6);
            cases.push((x % 16) as f64 / 2.0 - 4.0);
        }
        for v in cases {
            assert_eq!(round(v), v.round() as i64, "{v:e}");
        }
    }

    #[test]
    fn codes_round_trip() {
        for k in [ClockKind::Tsc, ClockKind::Monotonic, ClockKind::Realtime] {
            assert_eq!(ClockKind::from_code(k as u8), Some(k));
        }
        assert_eq!(ClockKind::from_code(3), None);
    }
}

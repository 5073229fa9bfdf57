//! The time slices are nested and measured on: nanoseconds, as the outputs write them.
//!
//! A file's timestamps are raw clock ticks. The outputs write nanoseconds: Perfetto the
//! origin's `CLOCK_MONOTONIC` plus [`ClockInfo::since_origin_ns`] of each timestamp, rounded once
//! per timestamp; Chrome JSON the same in microseconds with three decimals; OTLP Unix
//! nanoseconds. On a clock finer than a nanosecond (the TSC at 0.38 ns a tick), two distinct
//! ticks can be one nanosecond there: a tie that the client breaks by stream order, where the
//! ticks said which came first. And a slice's duration there is its rounded end less its rounded
//! start, not its ticks times the rate. So every tool nests and measures on [`Timeline`]
//! times: nanoseconds since the clock's origin, rounded per timestamp as the outputs round them,
//! offset so that times before the origin stay ordered. With [`Timeline::clock`] (a 1 ns clock
//! with the same origins) the tools' conversions to nanoseconds work on them unchanged.
//!
//! On the nanosecond clocks (`CLOCK_MONOTONIC`, `CLOCK_REALTIME`) times are the ticks, exactly.

use phosphor_format::ClockInfo;

/// Where the origin sits on the timeline of a clock finer or coarser than a nanosecond: far
/// enough from 0 that any time before the origin a real trace holds stays positive, far enough
/// from `u64::MAX` for any after it.
const ORIGIN: u64 = 1 << 62;

/// A file's clock, mapped onto nanoseconds (see the [module docs](self)).
#[derive(Clone, Debug)]
pub struct Timeline {
    file: ClockInfo,
    clock: ClockInfo,
    /// Whether times are the ticks (a nanosecond clock).
    exact: bool,
}

impl Timeline {
    /// The timeline of a file recorded on `clock`.
    pub fn new(clock: &ClockInfo) -> Timeline {
        let exact = clock.ns_per_tick == 1.0;
        let mut ns = clock.clone();
        if !exact {
            ns.ns_per_tick = 1.0;
            ns.origin_ticks = ORIGIN;
        }
        Timeline { file: clock.clone(), clock: ns, exact }
    }

    /// The time of raw clock value `ticks`: never decreasing as `ticks` grows, equal for two
    /// ticks the outputs write as one nanosecond.
    #[inline]
    pub fn time(&self, ticks: u64) -> u64 {
        if self.exact {
            return ticks;
        }
        let ns = self.file.since_origin_ns(ticks);
        // Saturating: a corrupt header's rate can put a time anywhere.
        ORIGIN.saturating_add_signed(ns)
    }

    /// The end of a slice from `ticks` lasting `dur` ticks, on the timeline: never before its
    /// start.
    #[inline]
    pub fn end(&self, ticks: u64, dur: u64) -> u64 {
        self.time(ticks.saturating_add(dur)).max(self.time(ticks))
    }

    /// The clock whose ticks are these times: 1 ns a tick, the file clock's origins (its kind
    /// too, so that conversions to `CLOCK_MONOTONIC` and wall time give what they gave).
    pub fn clock(&self) -> &ClockInfo {
        &self.clock
    }

    /// The file's own clock.
    pub fn file_clock(&self) -> &ClockInfo {
        &self.file
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use phosphor_format::ClockKind;

    fn tsc(ns_per_tick: f64) -> ClockInfo {
        ClockInfo {
            kind: ClockKind::Tsc,
            ns_per_tick,
            origin_ticks: 1000,
            origin_monotonic_ns: 5_000_000,
            origin_wall_ns: 1_700_000_000_000_000_000,
            fallback_reason: None,
        }
    }

    #[test]
    fn ticks_in_one_nanosecond_are_one_time_and_a_duration_is_its_rounded_ends() {
        let t = Timeline::new(&tsc(0.385187));
        // Ticks 1010 and 1011 are 3.85 and 4.24 ns after the origin: both 4 ns.
        assert_eq!(t.time(1010), t.time(1011));
        assert!(t.time(1012) > t.time(1011));
        // 20 ticks from tick 1010: 7.7 ns as ticks times the rate, but written 12 - 4 = 8 ns.
        assert_eq!(t.end(1010, 20) - t.time(1010), 8);
        // Before the origin, still in order.
        assert!(t.time(0) < t.time(990) && t.time(990) < t.time(1000));
        // The clock of the times converts them as the file's clock converts the ticks.
        let file = t.file_clock();
        for ticks in [0, 999, 1000, 1011, 123_456_789] {
            assert_eq!(t.clock().to_ns(t.time(ticks)), file.to_ns(ticks), "{ticks}");
            assert_eq!(t.clock().since_origin_ns(t.time(ticks)), file.since_origin_ns(ticks), "{ticks}");
        }
        assert_eq!(t.clock().ticks_to_ns(8), 8);
    }

    #[test]
    fn on_a_nanosecond_clock_times_are_the_ticks() {
        let mut c = tsc(1.0);
        c.kind = ClockKind::Monotonic;
        let t = Timeline::new(&c);
        for ticks in [0, 1, 999, 1000, u64::MAX] {
            assert_eq!(t.time(ticks), ticks);
        }
        assert_eq!(t.clock().ns_per_tick, 1.0);
        assert_eq!(t.clock().origin_ticks, 1000);
    }

    #[test]
    fn a_corrupt_rate_saturates_instead_of_wrapping() {
        for rate in [f64::NAN, f64::INFINITY, -1e30, 1e30] {
            let t = Timeline::new(&tsc(rate));
            let (a, b) = (t.time(0), t.time(u64::MAX));
            assert!(a <= b || rate < 0.0, "{rate}: {a} {b}");
            assert!(t.end(0, u64::MAX) >= t.time(0));
        }
    }
}

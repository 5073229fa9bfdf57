//! Where each thread slice of Chrome JSON is written on the time axis, so that a viewer that
//! sorts by time in floating point rebuilds the walk [`phosphor_model::ordered::Ordered`] hands
//! the writer (the tree `phosphor stats` counts).
//!
//! The walk is a sequence of *points*, a slice's begin and its end, in time order. Each point is
//! written at its nanosecond plus `k` steps, `k` counting the points of its thread already at
//! that nanosecond: the `k`-th point of a nanosecond comes after the `k - 1`-th, and every point
//! of a nanosecond before those of the next. So every point of a thread has a time of its own,
//! and sorted by time they are the walk, whatever the depth and however many slices start and
//! end in one nanosecond: a viewer that sorts by time (speedscope, whose tie rules then never
//! apply; Chrome's viewer) nests each slice as the walk does.
//!
//! A step is 0.1 ps ([`UNITS_PER_NS`] per nanosecond), or a power of ten times it: at least 8
//! units in the last place of the time as a double, in microseconds, since speedscope adds
//! `ts + dur` after subtracting the thread's first `ts`, and the sum must stay between the
//! neighbouring points. So 0.1 ps up to 2^26 µs (67 s from the trace's origin), 1 ps up to 2^30
//! µs (18 minutes), 10 ps up to 2^33 µs (2.4 hours). Every point is less than half a nanosecond
//! past its nanosecond: rounded to the nanosecond (as Perfetto reads `ts` and `dur`:
//! `llround(x * 1000)`), times and durations are exact. That leaves room for 5,000 points per
//! nanosecond and thread at 0.1 ps (500 at 1 ps, 50 at 10 ps); past it, further points of that
//! nanosecond share the last step: ties, which viewers order by their own rules.

use rustc_hash::FxHashMap as HashMap;
use std::io::{self, Write};

/// Units of the written times: 0.1 ps, so 10,000 per nanosecond and 10^7 per microsecond.
pub(crate) const UNITS_PER_NS: i128 = 10_000;
const UNITS_PER_US: i128 = 10_000_000;

/// The step (in units) at `ns` from the origin: the least power of ten that is at least 8 units
/// in the last place of `ns / 1000` as an `f64` (see the [module docs](self)).
fn step(ns: i64) -> i128 {
    // floor(log2) of the time in microseconds: an ulp there is 2^(e - 52) µs, and 8 of them are
    // 2^(e - 49) µs, or 2^(e - 49) * 10^7 units.
    let e = 63 - ((ns.unsigned_abs() / 1000) | 1).leading_zeros() as i32;
    let need = 2f64.powi(e - 49) * 1e7;
    let mut unit = 1;
    while (unit as f64) < need && unit < UNITS_PER_NS {
        unit *= 10;
    }
    unit
}

/// A thread's last point: its nanosecond, how many points before it that nanosecond has, and
/// the step there (0 until a second point needs it: most nanoseconds hold one point, and the
/// step takes a power of two in floating point).
#[derive(Clone, Copy, Debug)]
struct Last {
    ns: i64,
    // At most `UNITS_PER_NS` each (10^4): 16 bytes a thread, for a file of a million threads.
    count: u32,
    step: u32,
}

/// Every thread's points on the time axis (see the [module docs](self)).
#[derive(Debug, Default)]
pub(crate) struct Points {
    threads: HashMap<u32, Last>,
    /// The thread of the last point and its state, out of the map: the walk hands over a
    /// thread's points in runs (a subtree at a time).
    current: Option<(u32, Last)>,
}

impl Points {
    /// The time, in units, of the walk's next point of thread `tid`, at `ns`.
    #[inline]
    pub(crate) fn at(&mut self, tid: u32, ns: i64) -> i128 {
        let last = match &mut self.current {
            Some((t, last)) if *t == tid => last,
            _ => self.switch(tid, ns),
        };
        if last.ns == ns {
            if last.step == 0 {
                // A step is at most `UNITS_PER_NS`.
                last.step = step(ns) as u32;
            }
            // At most half a nanosecond less a unit past the nanosecond.
            if i128::from(last.count + 1) * i128::from(last.step) < UNITS_PER_NS / 2 {
                last.count += 1;
            }
        } else {
            *last = Last { ns, count: 0, step: 0 };
        }
        i128::from(ns) * UNITS_PER_NS + i128::from(last.count) * i128::from(last.step)
    }

    /// Makes `tid` the current thread (its first point is at `ns`, if it has none yet), putting
    /// the one before back into the map.
    #[cold]
    #[inline(never)]
    fn switch(&mut self, tid: u32, ns: i64) -> &mut Last {
        if let Some((t, last)) = self.current.take() {
            self.threads.insert(t, last);
        }
        let last = self.threads.remove(&tid).unwrap_or(Last { ns: ns.wrapping_add(1), count: 0, step: 0 });
        &mut self.current.insert((tid, last)).1
    }
}

/// Writes `units` (0.1 ps) as microseconds: at least three decimals (whole nanoseconds), up to
/// seven, no trailing zeros past the third.
pub(crate) fn write_units_as_us(out: &mut impl Write, units: i128) -> io::Result<()> {
    if units < 0 {
        out.write_all(b"-")?;
    }
    let abs = units.unsigned_abs();
    let whole = abs / UNITS_PER_US as u128;
    let mut frac = abs % UNITS_PER_US as u128;
    // Not `write!`: the formatting machinery was a tenth of the export's time (one `X` per event).
    // The whole microseconds of an `i64` of nanoseconds fit a `u64`.
    crate::chrome::write_u64(out, u64::try_from(whole).unwrap_or(u64::MAX))?;
    out.write_all(b".")?;
    let mut digits = [b'0'; 7];
    for d in digits.iter_mut().rev() {
        *d = b'0' + (frac % 10) as u8;
        frac /= 10;
    }
    let mut len = 7;
    while len > 3 && digits[len - 1] == b'0' {
        len -= 1;
    }
    out.write_all(&digits[..len])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(units: i128) -> String {
        let mut v = Vec::new();
        write_units_as_us(&mut v, units).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn units_print_as_microseconds_with_three_to_seven_decimals() {
        assert_eq!(text(12_345 * UNITS_PER_NS), "12.345");
        assert_eq!(text(12_345 * UNITS_PER_NS - 4_096), "12.3445904");
        assert_eq!(text(500), "0.00005");
        assert_eq!(text(-UNITS_PER_US), "-1.000");
    }

    /// Perfetto's reading of a time in units: `llround(us * 1000)`.
    fn ns(units: i128) -> i128 {
        ((units as f64 / UNITS_PER_US as f64) * 1000.0).round() as i128
    }

    #[test]
    fn steps_grow_with_the_time_so_sums_in_floating_point_keep_the_order() {
        assert_eq!(step(0), 1);
        assert_eq!(step(60_000_000_000), 1);
        assert_eq!(step(-60_000_000_000), 1);
        assert_eq!(step(600_000_000_000), 10);
        assert_eq!(step(3_600_000_000_000), 100);
        assert_eq!(step(i64::MAX), UNITS_PER_NS);
        // At each step's upper limit, the end of a slice from a point to one k steps on, as
        // speedscope sums it (relative to a first `ts` of 0.5 µs), stays between its neighbours.
        for e in [25, 29, 32, 35] {
            let ns = ((1i64 << (e + 1)) - 1) * 1000;
            let s = step(ns);
            let at = |k: i128| (i128::from(ns) * UNITS_PER_NS + k * s) as f64 / UNITS_PER_US as f64;
            let first = 0.5;
            for b in 0..3 {
                for k in b + 1..b + 4 {
                    let end = (at(b) - first) + (at(k) - at(b));
                    assert!(at(k - 1) - first < end && end < at(k + 1) - first, "{ns} {b} {k}");
                }
            }
        }
    }

    #[test]
    fn the_points_of_a_nanosecond_come_in_walk_order_and_round_back_to_it() {
        let mut p = Points::default();
        let first: Vec<i128> = (0..6_000).map(|_| p.at(1, 100)).collect();
        assert!(first.windows(2).take(4_999).all(|w| w[0] < w[1]), "distinct while there is room");
        assert_eq!(first[5_999], first[4_999], "past the room, the last step");
        assert!(first.iter().all(|&u| ns(u) == 100));
        assert_eq!(p.at(1, 101), 101 * UNITS_PER_NS, "a new nanosecond starts at its own time");
        assert_eq!(p.at(2, 100), 100 * UNITS_PER_NS, "each thread counts its own points");
        assert_eq!(p.at(1, 101), 101 * UNITS_PER_NS + 1, "and keeps its count while another's are written");
        // A step of 100 units an hour in.
        let hour = 3_600_000_000_000;
        assert_eq!(p.at(3, hour) + 100, p.at(3, hour));
    }
}

//! Where each thread slice of Chrome JSON is written on the time axis, so that a viewer that
//! sorts by time in floating point rebuilds the walk [`phosphor_model::ordered::Ordered`] hands
//! the writer (the tree `phosphor stats` counts).
//!
//! Every slice with a duration is an `X` event written at its begin, when its end is known.
//! Speedscope sorts `X` events by `ts`, then longer first, then in file order, and adds `ts + dur`
//! in floating-point microseconds (after subtracting the thread's first `ts`); Chrome's viewer
//! nests by the same sums. So at one nanosecond, where the walk has several begins and ends, each
//! is moved by a fraction of a nanosecond, in 0.1 ps units, to the place the walk gives it:
//!
//! * A begin is at its nanosecond, or just after the last begin or end written on its thread if
//!   that is later (a child that starts with its parent, a slice after a zero-length sibling),
//!   at most [`MAX_PUSH`] past it.
//! * An end is before its nanosecond by a *shave* that grows with the depth of the slice: of the
//!   slices that end at one nanosecond, the innermost ends first, and each ends before a slice
//!   that begins then.
//! * A zero-length slice lasts [`ZERO_LENGTH`]; one that starts where its parent ends (a scope
//!   opened and closed as its parent closes) is placed after the last thing written and before
//!   its parent's end, in half the room left.
//!
//! Every move is under half a nanosecond, start and end together: rounded to the nanosecond (as
//! Perfetto reads `ts` and `dur`: `llround(x * 1000)`), times and durations are exact. The moves
//! need one entry per open slice of each thread. They hold while a step of 0.1 ps is above the
//! rounding of the viewer's sums: for threads whose events span less than about ten minutes.

use rustc_hash::FxHashMap as HashMap;
use std::io::{self, Write};

/// Units of the written times: 0.1 ps, so 10,000 per nanosecond and 10^7 per microsecond.
pub(crate) const UNITS_PER_NS: i128 = 10_000;
const UNITS_PER_US: i128 = 10_000_000;
/// The shave of a top-level slice's end, and how much more each level down gets, down to
/// `SHAVE_DEPTHS` levels (past it, equal ends tie, and viewers match them by name).
const SHAVE_BASE: i128 = 64;
const SHAVE_STEP: i128 = 32;
const SHAVE_DEPTHS: usize = 60;
/// How far past its nanosecond a begin may be moved (0.25 ns).
const MAX_PUSH: i128 = 2_500;
/// What a zero-length slice lasts instead (0.05 ns).
const ZERO_LENGTH: i128 = 500;

/// One thread's open slices (their end as written, their end in ns, and the slice's start and
/// duration as the walk gives them, to match its end) and the latest time written.
#[derive(Debug)]
struct Thread {
    last: i128,
    open: Vec<Open>,
}

#[derive(Clone, Copy, Debug)]
struct Open {
    end: i128,
    end_ns: i64,
    key: (u64, u64),
}

/// Every thread's place on the time axis (see the [module docs](self)).
#[derive(Debug, Default)]
pub(crate) struct Times {
    threads: HashMap<u32, Thread>,
}

fn shave(depth: usize) -> i128 {
    SHAVE_BASE + SHAVE_STEP * depth.min(SHAVE_DEPTHS) as i128
}

impl Times {
    fn thread(&mut self, tid: u32) -> &mut Thread {
        self.threads.entry(tid).or_insert_with(|| Thread { last: i128::MIN, open: Vec::new() })
    }

    /// Where to write a slice of thread `tid` from `start` to `end` (ns), which starts the walk's
    /// next slice: its start and end in units. `key` (start and duration as the walk gives them)
    /// names it for
    /// [`Times::end`].
    pub(crate) fn begin(&mut self, tid: u32, start: i64, end: i64, key: (u64, u64)) -> (i128, i128) {
        let t = self.thread(tid);
        let exact = i128::from(start) * UNITS_PER_NS;
        let (b, e) = match t.open.last() {
            Some(p) if end == start && start == p.end_ns => {
                let low = t.last.max(p.end - SHAVE_STEP);
                let b = (low + 1).min(p.end - 2);
                (b, b + ((p.end - b) / 2).max(1))
            }
            _ => {
                let b = t.last.saturating_add(1).clamp(exact, exact + MAX_PUSH);
                let e = if end > start {
                    i128::from(end) * UNITS_PER_NS - shave(t.open.len())
                } else {
                    b + ZERO_LENGTH
                };
                (b, e)
            }
        };
        t.open.push(Open { end: e, end_ns: end, key });
        t.last = t.last.max(b);
        (b, e)
    }

    /// Where to write a begin never ended, of thread `tid` at `start` (ns).
    pub(crate) fn unclosed(&mut self, tid: u32, start: i64) -> i128 {
        let t = self.thread(tid);
        let exact = i128::from(start) * UNITS_PER_NS;
        let b = t.last.saturating_add(1).clamp(exact, exact + MAX_PUSH);
        t.last = t.last.max(b);
        b
    }

    /// The walk leaves the slice named `key` of thread `tid`.
    pub(crate) fn end(&mut self, tid: u32, key: (u64, u64)) {
        let t = self.thread(tid);
        if t.open.last().is_some_and(|o| o.key == key) {
            let o = t.open.pop().map_or(i128::MIN, |o| o.end);
            t.last = t.last.max(o);
        }
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
        assert_eq!(text(ZERO_LENGTH), "0.00005");
        assert_eq!(text(-UNITS_PER_US), "-1.000");
    }

    /// Perfetto's reading of a time in units: `llround(us * 1000)`.
    fn ns(units: i128) -> i128 {
        ((units as f64 / UNITS_PER_US as f64) * 1000.0).round() as i128
    }

    #[test]
    fn a_walk_at_one_nanosecond_is_written_in_order_and_rounds_back_to_exact_times() {
        let mut t = Times::default();
        // parent [100, 200] { child [100, 200] { zero [200, 200] } }, then next [200, 300].
        let parent = t.begin(1, 100, 200, (1, 0));
        let child = t.begin(1, 100, 200, (2, 0));
        let zero = t.begin(1, 200, 200, (3, 0));
        t.end(1, (3, 0));
        t.end(1, (2, 0));
        t.end(1, (1, 0));
        let next = t.begin(1, 200, 300, (4, 0));
        assert!(parent.0 < child.0, "the child begins after its parent");
        assert!(child.0 < zero.0 && zero.0 < zero.1 && zero.1 < child.1, "{child:?} {zero:?}");
        assert!(child.1 < parent.1 && parent.1 < next.0, "{parent:?} {next:?}");
        for ((b, e), (b_ns, e_ns)) in [(parent, (100, 200)), (child, (100, 200)), (zero, (200, 200))] {
            assert_eq!((ns(b), ns(e), ns(e - b)), (b_ns, e_ns, e_ns - b_ns));
        }
        // A zero-length slice at its parent's start ends before the next begin at that nanosecond.
        let p = t.begin(2, 0, 50, (5, 0));
        let z = t.begin(2, 0, 0, (6, 0));
        t.end(2, (6, 0));
        let c = t.begin(2, 0, 10, (7, 0));
        assert!(p.0 < z.0 && z.1 < c.0 && c.1 < p.1, "{p:?} {z:?} {c:?}");
        // A begin never ended is placed like any other.
        assert!(t.unclosed(2, 0) > c.0);
    }
}

//! The durations of Chrome JSON's `X` events, written so that every importer rebuilds the nesting
//! the trace recorded.
//!
//! Importers that add `ts + dur` in floating-point microseconds (speedscope does, after subtracting
//! the thread's first timestamp) see two slices that end at the same nanosecond, or one that ends
//! where the next begins, in an order that depends on rounding: a child ends a hair after its
//! parent, or a lock's wait after its hold begins, and the importer reports mis-nested frames. So a
//! slice's `dur` is its exact duration less a *shave* far below a nanosecond (at most 0.41 ns) and
//! far above the rounding of any sum (6.4 ps steps):
//!
//! * A slice that ends where the next slice begins ends, as read, just before it.
//! * Of the slices of one thread that end at the same nanosecond (they arrive innermost first,
//!   as their scopes close), each gets a smaller shave than the one before: the child ends before
//!   its parent, and of two slices with the same start, the parent is the longer (importers open
//!   the longer first).
//! * A zero-duration slice lasts 0.1 ns instead, so that it opens before it closes.
//!
//! Rounded to the nanosecond (as Perfetto reads `dur`: `llround(dur * 1000)`), every duration is
//! exact. The shave needs the thread's last end and a count: constant memory per thread.
//!
//! Importers also match an end (`E`) to its begin by name *and arguments*, and a `trace_end!`
//! carries none: so a begin's arguments are kept while it is open and written again on its end.
//! What is kept is bounded (`MAX_OPEN_PER_THREAD` begins per thread, `MAX_KEPT_BYTES` in all);
//! past that an end is written with its own arguments, as before.

use rustc_hash::FxHashMap as HashMap;
use std::io::{self, Write};

/// Units of the written duration: 0.1 ps, so 10,000 per nanosecond and 10^7 per microsecond.
const UNITS_PER_NS: i128 = 10_000;
const UNITS_PER_US: i128 = 10_000_000;
/// The shave of the first slice to end at a nanosecond (409.6 ps), and how much less each
/// following one gets (6.4 ps), down to one step.
const FIRST_SHAVE: i128 = 4_096;
const SHAVE_STEP: i128 = 64;
/// What a zero-duration slice lasts instead (0.1 ns).
const ZERO_LENGTH: i128 = 1_000;

/// Open begins kept per thread, and bytes of their arguments kept in all.
const MAX_OPEN_PER_THREAD: usize = 1024;
const MAX_KEPT_BYTES: usize = 16 << 20;

/// The begins open on one thread: name hash and written arguments (`None`: not kept, past the
/// byte bound), and how many more are open past `MAX_OPEN_PER_THREAD`.
#[derive(Debug, Default)]
struct Open {
    stack: Vec<(u64, Option<Vec<u8>>)>,
    beyond: u64,
}

/// Per thread: the end (ns) of the last slice and how many slices ended then, and the open begins.
#[derive(Debug, Default)]
pub(crate) struct Ties {
    last: HashMap<u32, (i64, u32)>,
    open: HashMap<u32, Open>,
    kept_bytes: usize,
}

fn name_hash(name: &str) -> u64 {
    phosphor_format::fnv1a64(name.as_bytes())
}

impl Ties {
    /// A begin named `name` opened on `tid` with these written arguments.
    pub(crate) fn push_begin(&mut self, tid: u32, name: &str, args: Vec<u8>) {
        let open = self.open.entry(tid).or_default();
        if open.stack.len() >= MAX_OPEN_PER_THREAD {
            open.beyond += 1;
            return;
        }
        let kept = (self.kept_bytes + args.len() <= MAX_KEPT_BYTES).then(|| {
            self.kept_bytes += args.len();
            args
        });
        open.stack.push((name_hash(name), kept));
    }

    /// The arguments to write on an end named `name` on `tid`: its begin's, if that begin is the
    /// innermost open one and they were kept.
    pub(crate) fn pop_end(&mut self, tid: u32, name: &str) -> Option<Vec<u8>> {
        let open = self.open.get_mut(&tid)?;
        if open.beyond > 0 {
            open.beyond -= 1;
            return None;
        }
        if open.stack.last().map(|(h, _)| *h) != Some(name_hash(name)) {
            return None;
        }
        let (_, args) = open.stack.pop()?;
        let args = args?;
        self.kept_bytes -= args.len();
        Some(args)
    }

    /// The duration to write, in 0.1 ps units, for a slice of thread `tid` from `start` to `end`
    /// (ns since the origin).
    pub(crate) fn duration_units(&mut self, tid: u32, start: i64, end: i64) -> i128 {
        let exact = (i128::from(end) - i128::from(start)) * UNITS_PER_NS;
        let slot = self.last.entry(tid).or_insert((i64::MIN, 0));
        let rank = if slot.0 == end { slot.1 + 1 } else { 0 };
        *slot = (end, rank);
        if exact <= 0 {
            return ZERO_LENGTH;
        }
        let shave = (FIRST_SHAVE - SHAVE_STEP * i128::from(rank)).max(SHAVE_STEP);
        exact - shave
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
    fn an_end_gets_its_begins_arguments_while_it_is_the_innermost_open_one() {
        let mut t = Ties::default();
        t.push_begin(1, "outer", b",\"args\":{\"a\":1}".to_vec());
        t.push_begin(1, "inner", b",\"args\":{\"b\":2}".to_vec());
        assert_eq!(t.pop_end(1, "outer"), None, "not the innermost: its own arguments");
        assert_eq!(t.pop_end(1, "inner").as_deref(), Some(&b",\"args\":{\"b\":2}"[..]));
        assert_eq!(t.pop_end(2, "outer"), None, "another thread's");
        assert_eq!(t.pop_end(1, "outer").as_deref(), Some(&b",\"args\":{\"a\":1}"[..]));
        assert_eq!(t.kept_bytes, 0);
        // Past the bound per thread, begins are counted, not kept, and ends pair with them first.
        for i in 0..MAX_OPEN_PER_THREAD + 2 {
            t.push_begin(3, "deep", format!("{i}").into_bytes());
        }
        assert_eq!((t.pop_end(3, "deep"), t.pop_end(3, "deep")), (None, None));
        assert_eq!(t.pop_end(3, "deep").as_deref(), Some(format!("{}", MAX_OPEN_PER_THREAD - 1).as_bytes()));
        // Past the byte bound, a begin's arguments are not kept.
        let mut t = Ties::default();
        t.push_begin(4, "big", vec![b' '; MAX_KEPT_BYTES]);
        t.push_begin(4, "more", vec![b' '; 1]);
        assert_eq!(t.pop_end(4, "more"), None);
        assert_eq!(t.pop_end(4, "big").map(|a| a.len()), Some(MAX_KEPT_BYTES));
    }

    #[test]
    fn units_print_as_microseconds_with_three_to_seven_decimals() {
        assert_eq!(text(12_345 * UNITS_PER_NS), "12.345");
        assert_eq!(text(12_345 * UNITS_PER_NS - FIRST_SHAVE), "12.3445904");
        assert_eq!(text(ZERO_LENGTH), "0.0001");
        assert_eq!(text(-UNITS_PER_US), "-1.000");
    }

    #[test]
    fn equal_ends_get_decreasing_shaves_and_every_duration_rounds_back_to_its_nanoseconds() {
        let mut t = Ties::default();
        // A child, its parent and grandparent end at 100 ns; a sibling then ends at 150.
        let child = t.duration_units(1, 60, 100);
        let parent = t.duration_units(1, 60, 100);
        let grandparent = t.duration_units(1, 0, 100);
        let next = t.duration_units(1, 100, 150);
        assert!(child < parent, "the child ends first");
        assert!(60 * UNITS_PER_NS + parent < 100 * UNITS_PER_NS, "and before the end");
        assert!(parent - child >= SHAVE_STEP);
        assert_eq!(next, 50 * UNITS_PER_NS - FIRST_SHAVE, "a new end starts over");
        for (d, ns) in [(child, 40), (parent, 40), (grandparent, 100), (next, 50)] {
            // Perfetto: llround(dur_us * 1000).
            let us = d as f64 / UNITS_PER_US as f64;
            assert_eq!((us * 1000.0).round() as i128, ns);
        }
        // Another thread keeps its own count; a zero-length slice opens before it closes.
        assert_eq!(t.duration_units(2, 60, 100), 40 * UNITS_PER_NS - FIRST_SHAVE);
        assert_eq!(t.duration_units(2, 100, 100), ZERO_LENGTH);
        // Past 63 equal ends, the shave stays one step.
        let mut t = Ties::default();
        let shaves: Vec<i128> = (0..70).map(|_| 10 * UNITS_PER_NS - t.duration_units(3, 0, 10)).collect();
        assert!(shaves.windows(2).take(62).all(|w| w[0] > w[1]));
        assert!(shaves[63..].iter().all(|&s| s == SHAVE_STEP));
    }
}

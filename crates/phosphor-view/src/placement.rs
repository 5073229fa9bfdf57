//! Where several traces fall in one view: together on a shared clock when they were recorded at
//! the same time, side by side from their own starts when they were not.
//!
//! [`phosphor_export::timeline::align`] places files as the exporters do: by `CLOCK_MONOTONIC`
//! within a boot, else through the wall clock. That is right for a client and a server recorded
//! together, and useless for four runs of a benchmark recorded minutes apart: one view of many
//! minutes in which each run is a line a pixel wide. So the viewer ([`Align::Auto`]) keeps
//! `align`'s placement only among traces whose spans overlap on it (the traces of one moment);
//! every group of such traces, and every trace alone, starts at the view's zero, so traces of
//! different times lie one above another on one axis of time since their start.
//!
//! Before a trace is scanned its span is unknown: traces of one boot are then kept together,
//! and the placement is made again once every span is known (`Traces::index_all`), before any
//! trace is served from its index.

use std::fmt;
use std::str::FromStr;

use phosphor_export::timeline::align;
use phosphor_format::file::Header;

/// How the view places several traces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Align {
    /// Traces of one moment (their spans overlap) on their shared clock; the others each from
    /// their own start.
    #[default]
    Auto,
    /// All on one clock, as `phosphor convert` places them (`CLOCK_MONOTONIC` within a boot,
    /// else the wall clock), however far apart.
    Clock,
    /// Each from its own start.
    Start,
}

impl FromStr for Align {
    type Err = String;

    fn from_str(s: &str) -> Result<Align, String> {
        match s {
            "auto" => Ok(Align::Auto),
            "clock" => Ok(Align::Clock),
            "start" => Ok(Align::Start),
            _ => Err(format!("`{s}`: expected auto, clock or start")),
        }
    }
}

/// How one trace was placed: [`arrange`]'s answer, which `/api/traces` states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlacedBy {
    /// The only trace, or the first of its group: its clock's origin at the group's zero.
    First,
    /// From its own start: no other trace shares its time.
    OwnStart,
    /// With trace `with` (the first of its group), on their shared `CLOCK_MONOTONIC`: exact.
    Monotonic { with: usize },
    /// With trace `with`, through the wall clock: as exact as the machines' wall clocks agree.
    WallClock { with: usize },
}

impl fmt::Display for PlacedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlacedBy::First => f.write_str("first of its group"),
            PlacedBy::OwnStart => f.write_str("from its own start (recorded at another time)"),
            PlacedBy::Monotonic { with } => write!(f, "with trace {with} (same boot: exact)"),
            PlacedBy::WallClock { with } => {
                write!(f, "with trace {with} (through the wall clock: within the machines' skew)")
            }
        }
    }
}

/// Where one trace falls: add `offset_ns` to its nanoseconds since its clock's origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    /// Added to the trace's times (ns since its clock's origin); never negative.
    pub offset_ns: i64,
    /// How.
    pub by: PlacedBy,
}

/// Places the traces whose `headers` are given; `spans[i]` is trace `i`'s first and last time
/// in ns since its clock's origin, if known yet (see the module docs).
pub fn arrange(headers: &[&Header], spans: &[Option<(i64, i64)>], how: Align) -> Vec<Placed> {
    let n = headers.len();
    let timeline = align(headers.iter().copied());
    let origin = |i: usize| timeline.files[i].origin_ns;
    if how == Align::Start || n < 2 {
        let by = |i: usize| if n < 2 || i == 0 { PlacedBy::First } else { PlacedBy::OwnStart };
        return (0..n).map(|i| Placed { offset_ns: 0, by: by(i) }).collect();
    }
    // Each trace's group, as the index of its first member (union by the smaller index).
    let mut group: Vec<usize> = (0..n).collect();
    fn root(group: &mut [usize], mut i: usize) -> usize {
        while group[i] != i {
            group[i] = group[group[i]];
            i = group[i];
        }
        i
    }
    let on_timeline =
        |i: usize| spans[i].map(|(s, e)| (origin(i).saturating_add(s), origin(i).saturating_add(e)));
    for i in 0..n {
        for j in 0..i {
            let together = match how {
                Align::Clock => true,
                Align::Start => false,
                Align::Auto => match (on_timeline(i), on_timeline(j)) {
                    (Some((a0, a1)), Some((b0, b1))) => a0 <= b1 && b0 <= a1,
                    // Not scanned yet: together if the clock is shared exactly.
                    _ => headers[i].boot_id.is_some() && headers[i].boot_id == headers[j].boot_id,
                },
            };
            if together {
                let (a, b) = (root(&mut group, i), root(&mut group, j));
                group[a.max(b)] = a.min(b);
            }
        }
    }
    let roots: Vec<usize> = (0..n).map(|i| root(&mut group, i)).collect();
    (0..n)
        .map(|i| {
            let first = roots[i];
            // The group's zero: its earliest clock origin.
            let zero = (0..n).filter(|&k| roots[k] == first).map(origin).min().unwrap_or(0);
            let alone = roots.iter().filter(|&&r| r == first).count() == 1;
            let by = if i == first {
                if alone && i > 0 {
                    PlacedBy::OwnStart
                } else {
                    PlacedBy::First
                }
            } else if headers[i].boot_id.is_some() && headers[i].boot_id == headers[first].boot_id {
                PlacedBy::Monotonic { with: first }
            } else {
                PlacedBy::WallClock { with: first }
            };
            Placed { offset_ns: origin(i) - zero, by }
        })
        .collect()
}

#[cfg(test)]
#[path = "placement_tests.rs"]
mod tests;

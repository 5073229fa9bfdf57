//! One timeline from several trace files: [`align`] decides where each file's times fall, from
//! the files' headers alone, so the exporters, the statistics and the viewer all place them alike.
//!
//! Files recorded in the same boot (the same boot id, format 1.5) share `CLOCK_MONOTONIC`, so
//! their times compare exactly: they are placed on it as they are. A file of another boot or
//! machine, or without a boot id (written before 1.5), shares no clock with the first file but
//! the wall clock: it is placed through the offset it recorded at its start between the wall
//! clock and its `CLOCK_MONOTONIC` (`origin_wall_ns - origin_monotonic_ns`), and so within the
//! skew between the two machines' wall clocks (NTP keeps it to milliseconds at best), which the
//! [`SkewWarning`] says. Files of one boot other than the first file's are moved by one offset
//! (that of the first of them), so they stay exact with respect to each other.
//!
//! The shared timeline is the first file's `CLOCK_MONOTONIC`, moved later only if another file's
//! origin would fall before its zero (timestamps of the formats written are unsigned).

use std::fmt;

use phosphor_format::file::{format_boot_id, Header};

/// How a file was placed on the shared timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlignedBy {
    /// The first file: the timeline is its `CLOCK_MONOTONIC`.
    Reference,
    /// The same boot as the first file: `CLOCK_MONOTONIC`, exactly.
    Monotonic,
    /// Another boot or machine, or no boot id: through the wall clock.
    Realtime(Reason),
}

/// Why a file was aligned through the wall clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// It or the first file has no boot id (a file written before format 1.5).
    NoBootId,
    /// Another boot of the first file's machine (same host name), or a machine of unknown name.
    OtherBoot,
    /// Another machine (another host name).
    OtherHost,
}

impl Reason {
    fn as_str(self) -> &'static str {
        match self {
            Reason::NoBootId => "it or the first file has no boot id (written before format 1.5)",
            Reason::OtherBoot => "another boot",
            Reason::OtherHost => "another machine",
        }
    }
}

/// Where one file's times fall on the shared timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// How it was placed.
    pub by: AlignedBy,
    /// Added to the file's absolute `CLOCK_MONOTONIC` nanoseconds (its header's
    /// `origin_monotonic_ns` plus the time since its origin) to give the shared timeline's.
    pub shift_ns: i64,
    /// The file's clock origin on the shared timeline, in nanoseconds after the earliest origin
    /// of all the files (so never negative): add it to the nanoseconds since the file's origin.
    pub origin_ns: i64,
}

/// The files that could be placed only through the wall clock, and why: their times are right
/// within the skew between the machines' wall clocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkewWarning {
    /// `(file index, reason)`, in file order.
    pub files: Vec<(usize, Reason)>,
}

impl SkewWarning {
    /// The warning, naming each file with `name(index)`.
    pub fn describe(&self, name: impl Fn(usize) -> String) -> String {
        let mut s = String::from(
            "aligned through the wall clock (CLOCK_REALTIME), so only as well as the machines' wall \
             clocks agree:",
        );
        for &(i, reason) in &self.files {
            s.push_str(&format!("\n  {}: {}", name(i), reason.as_str()));
        }
        s
    }
}

impl fmt::Display for SkewWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe(|i| format!("file {i}")))
    }
}

/// The files' places on one timeline: [`align`]'s answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeline {
    /// One per file, in the order given.
    pub files: Vec<Placement>,
    /// Set if any file was placed through the wall clock.
    pub warning: Option<SkewWarning>,
}

/// Places the files whose `headers` are given on one timeline (see the [module docs](self)).
/// No file: an empty timeline.
///
/// ```
/// use phosphor_export::timeline::{align, AlignedBy};
/// # let bytes = include_bytes!("../../phosphor-format/tests/data/golden-v1.5.phtrace");
/// # let header = phosphor_format::file::Reader::new(&bytes[..])?.header().clone();
/// // Two files of one boot: one clock, no warning.
/// let t = align([&header, &header]);
/// assert_eq!(t.files[1].by, AlignedBy::Monotonic);
/// assert_eq!(t.files[1].shift_ns, 0);
/// assert!(t.warning.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn align<'a>(headers: impl IntoIterator<Item = &'a Header>) -> Timeline {
    let headers: Vec<&Header> = headers.into_iter().collect();
    let Some(first) = headers.first() else {
        return Timeline { files: Vec::new(), warning: None };
    };
    // The wall clock minus CLOCK_MONOTONIC, as each file recorded it at its start.
    let wall_offset =
        |h: &Header| i128::from(h.clock.origin_wall_ns) - i128::from(h.clock.origin_monotonic_ns);
    let reference = wall_offset(first);
    let mut shifts = Vec::with_capacity(headers.len());
    let mut warned = Vec::new();
    for (i, h) in headers.iter().enumerate() {
        let (by, shift) = if i == 0 {
            (AlignedBy::Reference, 0)
        } else if h.boot_id.is_some() && h.boot_id == first.boot_id {
            (AlignedBy::Monotonic, 0)
        } else {
            let reason = match (&h.boot_id, &first.boot_id) {
                (None, _) | (_, None) => Reason::NoBootId,
                _ if h.host_name.is_some() && first.host_name.is_some() && h.host_name != first.host_name => {
                    Reason::OtherHost
                }
                _ => Reason::OtherBoot,
            };
            warned.push((i, reason));
            // The first file of this boot sets the offset of all of them (exact among themselves).
            let same_boot = h.boot_id.and_then(|id| headers[..i].iter().find(|o| o.boot_id == Some(id)));
            (AlignedBy::Realtime(reason), wall_offset(same_boot.unwrap_or(h)) - reference)
        };
        shifts.push((by, shift));
    }
    let origins: Vec<i128> = headers
        .iter()
        .zip(&shifts)
        .map(|(h, (_, shift))| i128::from(h.clock.origin_monotonic_ns) + shift)
        .collect();
    let earliest = origins.iter().copied().min().unwrap_or(0);
    // Times before the reference's zero cannot be written: move the timeline later by as much.
    let lift = (-earliest).max(0);
    let clamp = |v: i128| v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    let files = shifts
        .iter()
        .zip(&origins)
        .map(|(&(by, shift), &origin)| Placement {
            by,
            shift_ns: clamp(shift + lift),
            origin_ns: clamp(origin - earliest),
        })
        .collect();
    Timeline { files, warning: (!warned.is_empty()).then_some(SkewWarning { files: warned }) }
}

/// A header's machine in words, for messages: `host (boot 0f1e2d3c-…)`, or what is unknown.
pub fn machine_of(h: &Header) -> String {
    let host = h.host_name.as_deref().unwrap_or("unknown host");
    match &h.boot_id {
        Some(id) => format!("{host} (boot {})", format_boot_id(id)),
        None => format!("{host} (no boot id)"),
    }
}

#[cfg(test)]
#[path = "timeline_tests.rs"]
mod tests;

//! Deterministic span and trace ids: the same file converted twice gives the same ids.
//!
//! A file's seed mixes what tells its recording apart from others (pid, boot id, the wall-clock
//! origin, the process name); a span's id mixes the seed with the span's number in the file (spans
//! are numbered as they are made, in file order), and a trace's id mixes the seed with its root's
//! number. The mixer is splitmix64's finaliser, a bijection on `u64`: distinct numbers under one
//! seed give distinct span ids.

use phosphor_format::file::Header;

/// Which roots share a trace. A thread's top-level scope is a root, and by default the root of a
/// trace of its own (a 90 ms run of the demo makes 55,382); grouping puts many roots in one trace
/// (each still a root: no span is made up to hold them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GroupRoots {
    /// A trace per root (the default: each unit of work is what a backend lists and samples; a
    /// trace per process would be one trace of millions of spans that no backend shows).
    #[default]
    None,
    /// One trace per recording (per file, per connection live).
    Process,
    /// One trace per window of this many nanoseconds of the roots' start times (wall clock, from
    /// the Unix epoch, so live forwarding and a conversion of the same file agree).
    Window(u64),
}

impl std::str::FromStr for GroupRoots {
    type Err = String;

    /// `none`, `process` or `window:DURATION` (`window:1s`; units ns, us, ms, s).
    fn from_str(text: &str) -> Result<GroupRoots, String> {
        match text.trim() {
            "none" => Ok(GroupRoots::None),
            "process" => Ok(GroupRoots::Process),
            t => {
                let Some(d) = t.strip_prefix("window:") else {
                    return Err(format!("{text:?}: use none, process or window:DURATION (window:1s)"));
                };
                let split = d.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(d.len());
                let (number, unit) = d.split_at(split);
                let scale = match unit {
                    "" | "ns" => 1.0,
                    "us" => 1e3,
                    "ms" => 1e6,
                    "s" => 1e9,
                    u => return Err(format!("{text:?}: unknown unit {u:?} (use ns, us, ms or s)")),
                };
                let ns = number.parse::<f64>().map_err(|_| format!("{text:?}: not a duration"))? * scale;
                if !(ns >= 1.0 && ns < u64::MAX as f64) {
                    return Err(format!("{text:?}: the window must be at least 1 ns"));
                }
                Ok(GroupRoots::Window(ns.round() as u64))
            }
        }
    }
}

/// The splitmix64 finaliser: a bijection of `u64` that spreads every input bit.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The id source of one file.
#[derive(Clone, Copy, Debug)]
pub struct Ids {
    seed: u64,
}

impl Ids {
    /// The ids of the file whose header is `header`.
    pub fn new(header: &Header) -> Ids {
        let mut seed = mix(u64::from(header.pid) ^ 0x5048_4f53_5048_4f52);
        for b in header.boot_id.iter().flatten() {
            seed = mix(seed ^ u64::from(*b));
        }
        seed = mix(seed ^ header.clock.origin_wall_ns);
        for b in header.process_name.bytes() {
            seed = mix(seed ^ u64::from(b));
        }
        Ids { seed }
    }

    /// The id of span number `n`: never zero (OTLP's "no span").
    pub fn span(&self, n: u64) -> [u8; 8] {
        let id = mix(n ^ self.seed);
        let id = if id == 0 { 1 } else { id };
        id.to_be_bytes()
    }

    /// The trace id of a root, span number `n` starting at `start` (Unix ns), grouped as `group`
    /// says.
    pub fn root_trace(&self, group: GroupRoots, n: u64, start: u64) -> [u8; 16] {
        match group {
            GroupRoots::None => self.trace(n),
            GroupRoots::Process => self.group(0),
            GroupRoots::Window(w) => self.group(1 + start / w.max(1)),
        }
    }

    /// The id of a group of roots (numbered `g`): apart from every root's own trace id.
    fn group(&self, g: u64) -> [u8; 16] {
        self.mixed(g, 0x6772_6f75_7000_0000)
    }

    /// The id of the trace whose root is span number `n`: never zero.
    pub fn trace(&self, n: u64) -> [u8; 16] {
        self.mixed(n, 0x7472_6163_6500_0000)
    }

    fn mixed(&self, n: u64, tag: u64) -> [u8; 16] {
        let hi = mix(n ^ self.seed ^ tag);
        let lo = mix(hi ^ n);
        let mut id = [0; 16];
        id[..8].copy_from_slice(&hi.to_be_bytes());
        id[8..].copy_from_slice(&lo.to_be_bytes());
        if id == [0; 16] {
            id[15] = 1;
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_roots_parses_its_three_forms() {
        assert_eq!("none".parse(), Ok(GroupRoots::None));
        assert_eq!("process".parse(), Ok(GroupRoots::Process));
        assert_eq!("window:1s".parse(), Ok(GroupRoots::Window(1_000_000_000)));
        assert_eq!("window:250ms".parse(), Ok(GroupRoots::Window(250_000_000)));
        assert!("window:0s".parse::<GroupRoots>().is_err());
        assert!("window:1h".parse::<GroupRoots>().is_err());
        assert!("thread".parse::<GroupRoots>().is_err());
    }
}

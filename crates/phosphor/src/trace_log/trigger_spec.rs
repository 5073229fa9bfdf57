//! What a trigger watches and when it fires: [`Trigger`], its string form, and the
//! [`PostWindow`] a dump waits for. The machinery that checks and dumps is `trigger.rs`.
//!
//! # The string form
//!
//! ```text
//! spec      := target ">" threshold  |  target ">=" level
//! target    := [category "/"] name          globs with * and ?; no category: any ("*")
//! threshold := number unit                  a scope slower than this (ns, us, µs, ms, s)
//!            | number                       a counter or data value above this
//! level     := error | warn | info | debug | trace
//! ```
//!
//! A level threshold makes a log trigger, whose target's name must be `log` (`log>=warn`, or
//! `net/log>=error` for the logs of category `net`). Spaces around the parts are allowed.
//! Examples: `db/query>2ms`, `*/flush>500us`, `net/queue_depth>100`, `mem/ratio>0.9`,
//! `log>=warn`.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use phosphor_format::Level;

use crate::error::{Error, ErrorKind};
use crate::registry::callsite::{TriggerSelector, Watch};

/// When a trigger fires.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Condition {
    /// A scope (`trace_scope!`, `trace_complete!`, a lock guard's held slice) lasted longer.
    SlowerThan(Duration),
    /// A `trace_counter!` or `trace_data!` value was greater.
    Above(f64),
    /// A `trace_log!` of this level or a more severe one.
    LogAtLeast(Level),
}

/// A condition on the callsites of a category and name (globs): when an event of one meets it, the
/// flight recorder dumps the events around it (see [`TraceConfig::trigger`](crate::TraceConfig::trigger)).
#[derive(Clone, Debug, PartialEq)]
pub struct Trigger {
    category: String,
    name: String,
    condition: Condition,
}

impl Trigger {
    /// Fires when a scope of `category`/`name` (globs) lasts longer than `limit`.
    pub fn slower_than(category: &str, name: &str, limit: Duration) -> Trigger {
        Trigger { category: category.into(), name: name.into(), condition: Condition::SlowerThan(limit) }
    }

    /// Fires when a counter or data value of `category`/`name` (globs) is greater than
    /// `threshold`.
    pub fn above(category: &str, name: &str, threshold: f64) -> Trigger {
        Trigger { category: category.into(), name: name.into(), condition: Condition::Above(threshold) }
    }

    /// Fires on a log of `category` (a glob) at `level` or more severe.
    pub fn log_at_least(category: &str, level: Level) -> Trigger {
        Trigger { category: category.into(), name: "log".into(), condition: Condition::LogAtLeast(level) }
    }

    /// The category glob.
    pub fn category(&self) -> &str {
        &self.category
    }

    /// The name glob (`log` for a log trigger).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// When it fires.
    pub fn condition(&self) -> Condition {
        self.condition
    }

    /// Which callsites it watches, for the registry.
    pub(crate) fn selector(&self) -> TriggerSelector {
        let watch = match self.condition {
            Condition::SlowerThan(_) => Watch::Scopes,
            Condition::Above(_) => Watch::Values,
            Condition::LogAtLeast(l) => Watch::Logs(l),
        };
        TriggerSelector { category: self.category.clone(), name: self.name.clone(), watch }
    }
}

fn bad(spec: &str, reason: impl Into<String>) -> Error {
    Error::new(ErrorKind::TriggerSpec { spec: spec.into(), reason: reason.into() })
}

/// A duration with its unit, e.g. `2ms`, `1.5s`, `500us`.
fn parse_duration(spec: &str, text: &str) -> Result<Duration, Error> {
    let split = text.find(|c: char| c.is_alphabetic() || c == 'µ').unwrap_or(text.len());
    let (number, unit) = (text[..split].trim(), text[split..].trim());
    let ns_per_unit = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(bad(spec, format!("unknown unit {unit:?} (ns, us, ms or s)"))),
    };
    let n: f64 = number.parse().map_err(|_| bad(spec, format!("{number:?} is not a number")))?;
    let ns = n * ns_per_unit;
    if !(0.0..=1e18).contains(&ns) {
        return Err(bad(spec, format!("{text} is not a duration between 0 and 31 years")));
    }
    Ok(Duration::from_nanos(ns as u64))
}

impl FromStr for Trigger {
    type Err = Error;

    /// Parses the string form (see the module docs).
    fn from_str(spec: &str) -> Result<Trigger, Error> {
        let (target, op, rhs) = match spec.find('>') {
            Some(i) if spec[i + 1..].starts_with('=') => (&spec[..i], ">=", &spec[i + 2..]),
            Some(i) => (&spec[..i], ">", &spec[i + 1..]),
            None => return Err(bad(spec, "no `>` or `>=` (e.g. db/query>2ms, net/depth>100, log>=warn)")),
        };
        let (target, rhs) = (target.trim(), rhs.trim());
        let (category, name) = match target.split_once('/') {
            Some((c, n)) => (c.trim(), n.trim()),
            None => ("*", target),
        };
        if category.is_empty() || name.is_empty() {
            return Err(bad(spec, "the target needs a name, and a category if it has a `/`"));
        }
        if rhs.is_empty() {
            return Err(bad(spec, format!("nothing after `{op}`")));
        }
        if op == ">=" {
            let level =
                Level::ALL.into_iter().find(|l| l.as_str() == rhs.to_ascii_lowercase()).ok_or_else(|| {
                    bad(spec, format!("{rhs:?} is not a level (error, warn, info, debug, trace)"))
                })?;
            if name != "log" {
                return Err(bad(
                    spec,
                    "`>=` takes a log level, and the target is then `log` or `CATEGORY/log`",
                ));
            }
            return Ok(Trigger::log_at_least(category, level));
        }
        if let Ok(v) = rhs.parse::<f64>() {
            if !v.is_finite() {
                return Err(bad(spec, "the threshold is not a finite number"));
            }
            return Ok(Trigger::above(category, name, v));
        }
        Ok(Trigger::slower_than(category, name, parse_duration(spec, rhs)?))
    }
}

impl fmt::Display for Trigger {
    /// The string form, which [`FromStr`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.condition {
            Condition::SlowerThan(d) => {
                let ns = d.as_nanos();
                let (n, unit) = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
                    .into_iter()
                    .find(|(k, _)| ns % k == 0 && ns > 0)
                    .map_or((ns, "ns"), |(k, u)| (ns / k, u));
                write!(f, "{}/{}>{n}{unit}", self.category, self.name)
            }
            Condition::Above(v) => write!(f, "{}/{}>{v}", self.category, self.name),
            Condition::LogAtLeast(l) => write!(f, "{}/log>={}", self.category, l.as_str()),
        }
    }
}

/// How long the flight recorder keeps recording after a trigger fires, before it dumps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostWindow {
    /// Until the log has recorded this many more events (or [`PostWindow::MAX_WAIT`] passed).
    Events(u64),
    /// This long.
    Time(Duration),
}

impl PostWindow {
    /// The longest an [`Events`](PostWindow::Events) window waits for its events: a quiet
    /// program still gets its dump.
    pub const MAX_WAIT: Duration = Duration::from_secs(1);
}

impl Default for PostWindow {
    /// 1,024 events.
    fn default() -> PostWindow {
        PostWindow::Events(1024)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_string_form_reads_each_kind_of_trigger() {
        let t: Trigger = "db/query>2ms".parse().unwrap();
        assert_eq!(t, Trigger::slower_than("db", "query", Duration::from_millis(2)));
        let t: Trigger = " flush > 1.5 us ".parse().unwrap();
        assert_eq!(t, Trigger::slower_than("*", "flush", Duration::from_nanos(1500)));
        assert_eq!(
            "net/queue_depth>100".parse::<Trigger>().unwrap(),
            Trigger::above("net", "queue_depth", 100.0)
        );
        assert_eq!("m/x>-0.5".parse::<Trigger>().unwrap(), Trigger::above("m", "x", -0.5));
        assert_eq!("log>=warn".parse::<Trigger>().unwrap(), Trigger::log_at_least("*", Level::Warn));
        assert_eq!("net/log>=ERROR".parse::<Trigger>().unwrap(), Trigger::log_at_least("net", Level::Error));
    }

    #[test]
    fn a_trigger_reads_back_from_its_display() {
        for spec in ["db/query>2ms", "q*/n?>3", "*/log>=info", "a/b>1.25", "a/b>1500ns", "a/b>0ns", "a/b>3s"]
        {
            let t: Trigger = spec.parse().unwrap();
            assert_eq!(t.to_string(), spec);
            assert_eq!(t.to_string().parse::<Trigger>().unwrap(), t, "{spec}");
        }
    }

    #[test]
    fn bad_specs_are_refused_with_the_reason() {
        for (spec, reason) in [
            ("db/query", "no `>`"),
            ("db/query>", "nothing after"),
            (">2ms", "needs a name"),
            ("/q>2ms", "needs a name"),
            ("db/query>2 weeks", "unknown unit"),
            ("db/query>-2ms", "not a duration"),
            ("db/query>=warn", "target is then `log`"),
            ("log>=loud", "not a level"),
            ("x>NaN", "finite"),
            ("x>1.2.3ms", "not a number"),
        ] {
            let e = spec.parse::<Trigger>().unwrap_err();
            assert!(e.to_string().contains(reason), "{spec}: {e}");
            assert!(e.to_string().contains(spec), "{spec}: {e}");
        }
    }
}

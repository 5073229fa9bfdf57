//! `EnvFilter`-style static directives (`RUST_LOG`'s syntax without span and field filters):
//! `warn,my_crate=debug,my_crate::db=trace,noisy=off`. A callsite is enabled when its level is at
//! or below the level of the most specific directive whose target is its target or a `::` prefix
//! of it; a bare level is the directive for every target. With no directive that matches, a
//! callsite is off (as with `EnvFilter`), except for an empty spec, which enables everything.

use tracing_core::{Level, LevelFilter, Metadata};

/// A parsed set of directives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directives {
    /// `(target, level)`, the longest target first (the most specific wins); `""` is every target.
    list: Vec<(String, LevelFilter)>,
}

/// A directive that could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad tracing directive {directive:?} in {spec:?}: {reason}")]
pub struct DirectivesError {
    /// The whole text given.
    pub spec: String,
    /// The directive at fault.
    pub directive: String,
    /// What is wrong with it.
    pub reason: String,
}

impl Default for Directives {
    /// Everything enabled.
    fn default() -> Directives {
        Directives { list: vec![(String::new(), LevelFilter::TRACE)] }
    }
}

fn level(s: &str) -> Option<LevelFilter> {
    Some(match s.to_ascii_lowercase().as_str() {
        "off" => LevelFilter::OFF,
        "error" | "1" => LevelFilter::ERROR,
        "warn" | "2" => LevelFilter::WARN,
        "info" | "3" => LevelFilter::INFO,
        "debug" | "4" => LevelFilter::DEBUG,
        "trace" | "5" => LevelFilter::TRACE,
        _ => return None,
    })
}

impl Directives {
    /// Parses `spec` (see the module docs). Span and field filters (`[span{field}]`) are refused
    /// with an error saying so, rather than silently ignored.
    pub fn parse(spec: &str) -> Result<Directives, DirectivesError> {
        let fail = |d: &str, reason: &str| DirectivesError {
            spec: spec.to_string(),
            directive: d.to_string(),
            reason: reason.to_string(),
        };
        let mut list: Vec<(String, LevelFilter)> = Vec::new();
        for d in spec.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            if d.contains(['[', ']', '{', '}']) {
                return Err(fail(d, "span and field filters are not supported (only target=level)"));
            }
            let (target, lvl) = match d.split_once('=') {
                Some((t, l)) => (
                    t.trim(),
                    level(l.trim())
                        .ok_or_else(|| fail(d, "unknown level (off, error, warn, info, debug, trace)"))?,
                ),
                // A bare word is a level if it reads as one, else a target at every level.
                None => match level(d) {
                    Some(l) => ("", l),
                    None => (d, LevelFilter::TRACE),
                },
            };
            if target.contains(char::is_whitespace) {
                return Err(fail(d, "a target has no spaces"));
            }
            // A later directive for the same target replaces an earlier one.
            list.retain(|(t, _)| t != target);
            list.push((target.to_string(), lvl));
        }
        if list.is_empty() {
            return Ok(Directives::default());
        }
        list.sort_by_key(|(t, _)| std::cmp::Reverse(t.len()));
        Ok(Directives { list })
    }

    /// The level `target` is recorded at, or below.
    fn level_of(&self, target: &str) -> LevelFilter {
        for (t, l) in &self.list {
            let matches = t.is_empty()
                || target == t
                || (target.len() > t.len()
                    && target.starts_with(t.as_str())
                    && target[t.len()..].starts_with("::"));
            if matches {
                return *l;
            }
        }
        LevelFilter::OFF
    }

    /// Whether a callsite is enabled.
    pub fn enabled(&self, meta: &Metadata<'_>) -> bool {
        let level: &Level = meta.level();
        self.level_of(meta.target()) >= *level
    }

    /// The most verbose level any directive enables.
    pub fn max_level(&self) -> LevelFilter {
        self.list.iter().map(|(_, l)| *l).max().unwrap_or(LevelFilter::OFF)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(d: &Directives, target: &str, level: Level) -> bool {
        d.level_of(target) >= level
    }

    #[test]
    fn the_most_specific_target_wins() {
        let d = Directives::parse("warn, app=debug, app::db=trace, app::noisy=off").unwrap();
        assert!(on(&d, "other", Level::WARN) && !on(&d, "other", Level::INFO));
        assert!(on(&d, "app", Level::DEBUG) && !on(&d, "app", Level::TRACE));
        assert!(on(&d, "app::net", Level::DEBUG));
        assert!(on(&d, "app::db", Level::TRACE) && on(&d, "app::db::pool", Level::TRACE));
        assert!(!on(&d, "app::noisy", Level::ERROR));
        // A prefix is a prefix of path segments, not of text.
        assert!(!on(&d, "apple", Level::DEBUG) && on(&d, "apple", Level::WARN));
        assert_eq!(d.max_level(), LevelFilter::TRACE);
    }

    #[test]
    fn without_a_bare_level_other_targets_are_off_and_an_empty_spec_is_everything() {
        let d = Directives::parse("app=info").unwrap();
        assert!(on(&d, "app", Level::INFO) && !on(&d, "lib", Level::ERROR));
        let all = Directives::parse(" , ").unwrap();
        assert!(on(&all, "anything", Level::TRACE));
        // A bare target is every level of it; a later directive for a target replaces one before.
        let d = Directives::parse("app,app=warn").unwrap();
        assert!(on(&d, "app", Level::WARN) && !on(&d, "app", Level::INFO));
        assert!(on(&Directives::parse("app").unwrap(), "app::x", Level::TRACE));
    }

    #[test]
    fn bad_directives_are_named() {
        for (spec, bad) in
            [("app=loud", "app=loud"), ("info,app[req]=debug", "app[req]=debug"), ("a b=info", "a b=info")]
        {
            let e = Directives::parse(spec).unwrap_err();
            assert_eq!((e.spec.as_str(), e.directive.as_str()), (spec, bad));
            assert!(e.to_string().contains(bad), "{e}");
        }
    }
}

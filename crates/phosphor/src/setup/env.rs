//! Reading a [`Setup`] from the environment: `PHOSPHOR` and `PHOSPHOR_*` (see the module docs of
//! `setup` for the table). Every parser names the variable and the value it could not read.

use std::path::PathBuf;

use super::{Output, Setup};
use crate::error::{Error, ErrorKind};

/// Where the trace goes.
pub const OUTPUT: &str = "PHOSPHOR";
/// The buffer's size.
pub const SIZE: &str = "PHOSPHOR_SIZE";
/// The category filter (also read by `TraceConfig::categories_from_env`).
pub const CATEGORIES: &str = "PHOSPHOR_CATEGORIES";
/// The system context to record.
pub const SYSTEM: &str = "PHOSPHOR_SYSTEM";
/// The least severe log level recorded.
pub const LOG_LEVEL: &str = "PHOSPHOR_LOG_LEVEL";
/// Triggers of a flight recorder, separated by `;`.
pub const TRIGGERS: &str = "PHOSPHOR_TRIGGERS";
/// Set to `1` to print nothing on standard error at the end.
pub const QUIET: &str = "PHOSPHOR_QUIET";

/// The file a bare `PHOSPHOR=1` writes.
pub const DEFAULT_FILE: &str = "phosphor-{pid}.phos";
/// CPU samples per second of `PHOSPHOR_SYSTEM=samples` (and `all`).
pub const DEFAULT_SAMPLE_HZ: u32 = 999;

fn bad(var: &str, value: &str, reason: impl Into<String>) -> Error {
    Error::new(ErrorKind::Env { var: var.to_string(), value: value.to_string(), reason: reason.into() })
}

/// A variable's value: `None` when unset or empty.
fn var(lookup: &dyn Fn(&str) -> Option<std::ffi::OsString>, name: &str) -> Result<Option<String>, Error> {
    match lookup(name) {
        None => Ok(None),
        Some(v) => match v.into_string() {
            Ok(s) if s.trim().is_empty() => Ok(None),
            Ok(s) => Ok(Some(s.trim().to_string())),
            Err(v) => Err(bad(name, &v.to_string_lossy(), "not valid UTF-8")),
        },
    }
}

/// The setup the variables `lookup` gives describe; `None` when `PHOSPHOR` is unset, empty or
/// says off (`0`, `off`, `false`, `no`).
pub(super) fn read(lookup: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Result<Option<Setup>, Error> {
    let Some(output) = var(lookup, OUTPUT)? else { return Ok(None) };
    let Some(output) = parse_output(&output)? else { return Ok(None) };
    let mut setup = Setup::new(output);
    if let Some(size) = var(lookup, SIZE)? {
        setup = setup.size(parse_size(&size).map_err(|r| bad(SIZE, &size, r))?);
    }
    if let Some(spec) = var(lookup, CATEGORIES)? {
        setup = setup.categories(&spec).map_err(|e| bad(CATEGORIES, &spec, e.to_string()))?;
    }
    if let Some(spec) = var(lookup, SYSTEM)? {
        setup = parse_system(setup, &spec).map_err(|r| bad(SYSTEM, &spec, r))?;
    }
    if let Some(level) = var(lookup, LOG_LEVEL)? {
        let parsed = level
            .parse()
            .map_err(|e: phosphor_format::ParseLevelError| bad(LOG_LEVEL, &level, e.to_string()))?;
        setup = setup.log_level(parsed);
    }
    if let Some(specs) = var(lookup, TRIGGERS)? {
        for spec in specs.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let trigger = spec.parse().map_err(|e: Error| bad(TRIGGERS, spec, e.to_string()))?;
            setup = setup.trigger(trigger);
        }
    }
    if let Some(q) = var(lookup, QUIET)? {
        setup = setup.quiet(parse_flag(&q).map_err(|r| bad(QUIET, &q, r))?);
    }
    Ok(Some(setup))
}

fn parse_flag(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "on" | "true" | "yes" => Ok(true),
        "0" | "off" | "false" | "no" => Ok(false),
        _ => Err("expected 1 or 0 (on/off, true/false, yes/no)".into()),
    }
}

/// `PHOSPHOR`'s value: `ring:PATH`, `tcp:HOST:PORT`, `file:PATH` or a bare path; `1` (or `on`)
/// for [`DEFAULT_FILE`]; `0` (or `off`) for nothing.
pub(super) fn parse_output(s: &str) -> Result<Option<Output>, Error> {
    let lower = s.to_ascii_lowercase();
    if let Ok(on) = parse_flag(&lower) {
        return Ok(on.then(|| Output::File(PathBuf::from(DEFAULT_FILE))));
    }
    let path = |rest: &str| -> Result<PathBuf, Error> {
        if rest.is_empty() {
            return Err(bad(OUTPUT, s, "no path after the colon"));
        }
        Ok(PathBuf::from(rest))
    };
    if let Some(rest) = s.strip_prefix("ring:") {
        return Ok(Some(Output::Ring(path(rest)?)));
    }
    if let Some(rest) = s.strip_prefix("file:") {
        return Ok(Some(Output::File(path(rest)?)));
    }
    if let Some(rest) = s.strip_prefix("tcp:") {
        let rest = rest.trim_start_matches("//");
        match rest.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                return Ok(Some(Output::Tcp(rest.to_string())))
            }
            _ => {
                return Err(bad(
                    OUTPUT,
                    s,
                    "expected tcp:HOST:PORT (the address of `phosphor record --listen`)",
                ))
            }
        }
    }
    Ok(Some(Output::File(PathBuf::from(s))))
}

/// A size in bytes: a number with an optional unit `k`, `m`, `g` (powers of 1024; `KiB`, `MB`
/// and the like are read alike).
pub(super) fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let number: u64 =
        number.parse().map_err(|_| "expected a number of bytes, e.g. 64M, 512k, 1G".to_string())?;
    let shift = match unit.trim().to_ascii_lowercase().trim_end_matches("ib").trim_end_matches('b') {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        other => return Err(format!("unknown unit {other:?} (use k, M or G)")),
    };
    number
        .checked_mul(1 << shift)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| "too large".to_string())
}

/// `PHOSPHOR_SYSTEM`: a comma-separated list of `switches`, `samples` (or `samples=HZ`),
/// `allocations`, or `all` for the three.
fn parse_system(mut setup: Setup, spec: &str) -> Result<Setup, String> {
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = match part.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (part, None),
        };
        match (name, value) {
            ("switches", None) => setup = setup.context_switches(true),
            ("samples", None) => setup = setup.cpu_samples(DEFAULT_SAMPLE_HZ),
            ("samples", Some(hz)) => {
                let hz: u32 = hz.parse().map_err(|_| format!("samples={hz}: expected samples per second"))?;
                setup = setup.cpu_samples(hz);
            }
            ("allocations", None) => setup = setup.allocations(true),
            ("all", None) => {
                setup = setup.context_switches(true).cpu_samples(DEFAULT_SAMPLE_HZ).allocations(true)
            }
            _ => return Err(format!("unknown part {part:?} (switches, samples[=HZ], allocations, all)")),
        }
    }
    Ok(setup)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::ffi::OsString;

    fn from(vars: &[(&str, &str)]) -> Result<Option<Setup>, Error> {
        let map: HashMap<String, OsString> =
            vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        read(&|name| map.get(name).cloned())
    }

    #[test]
    fn unset_empty_or_off_is_nothing() {
        assert!(from(&[]).unwrap().is_none());
        for off in ["", "  ", "0", "off", "OFF", "false", "no"] {
            assert!(from(&[(OUTPUT, off)]).unwrap().is_none(), "{off:?}");
        }
        // The other variables alone turn nothing on.
        assert!(from(&[(SIZE, "1G"), (SYSTEM, "all")]).unwrap().is_none());
    }

    #[test]
    fn outputs() {
        let out = |v: &str| from(&[(OUTPUT, v)]).unwrap().unwrap().output;
        assert_eq!(out("1"), Output::File(DEFAULT_FILE.into()));
        assert_eq!(out("on"), Output::File(DEFAULT_FILE.into()));
        assert_eq!(out("trace.phos"), Output::File("trace.phos".into()));
        assert_eq!(out("file:/tmp/a b.phos"), Output::File("/tmp/a b.phos".into()));
        assert_eq!(out("ring:/tmp/crash-{pid}.phos"), Output::Ring("/tmp/crash-{pid}.phos".into()));
        assert_eq!(out("tcp:127.0.0.1:7878"), Output::Tcp("127.0.0.1:7878".into()));
        assert_eq!(out("tcp://collector.local:7878"), Output::Tcp("collector.local:7878".into()));
        assert_eq!(out("tcp:[::1]:7878"), Output::Tcp("[::1]:7878".into()));
    }

    #[test]
    fn bad_values_name_the_variable_and_the_value() {
        for (vars, var_named, value) in [
            (vec![(OUTPUT, "tcp:nohost")], OUTPUT, "tcp:nohost"),
            (vec![(OUTPUT, "tcp:host:99999")], OUTPUT, "tcp:host:99999"),
            (vec![(OUTPUT, "ring:")], OUTPUT, "ring:"),
            (vec![(OUTPUT, "t.phos"), (SIZE, "lots")], SIZE, "lots"),
            (vec![(OUTPUT, "t.phos"), (SIZE, "64T")], SIZE, "64T"),
            (vec![(OUTPUT, "t.phos"), (SYSTEM, "switches,gpu")], SYSTEM, "switches,gpu"),
            (vec![(OUTPUT, "t.phos"), (SYSTEM, "samples=fast")], SYSTEM, "samples=fast"),
            (vec![(OUTPUT, "t.phos"), (LOG_LEVEL, "loud")], LOG_LEVEL, "loud"),
            (vec![(OUTPUT, "t.phos"), (CATEGORIES, "a,,-")], CATEGORIES, "a,,-"),
            (vec![(OUTPUT, "t.phos"), (TRIGGERS, "db/query>")], TRIGGERS, "db/query>"),
            (vec![(OUTPUT, "t.phos"), (QUIET, "maybe")], QUIET, "maybe"),
        ] {
            let err = match from(&vars) {
                Err(e) => e,
                Ok(s) => panic!("{vars:?} was accepted: {s:?}"),
            };
            match err.kind() {
                ErrorKind::Env { var, value: v, .. } => {
                    assert_eq!(var, var_named, "{vars:?}");
                    assert_eq!(v, value, "{vars:?}");
                }
                other => panic!("{vars:?}: {other:?}"),
            }
            let text = err.to_string();
            assert!(text.contains(var_named) && text.contains(value), "{text}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("64 MB"), Ok(64 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert!(parse_size("M").is_err());
        assert!(parse_size("-1M").is_err());
        assert!(parse_size("99999999999999999999G").is_err());
    }

    #[test]
    fn the_other_settings() {
        let s = from(&[
            (OUTPUT, "ring:/tmp/r.phos"),
            (SIZE, "8M"),
            (SYSTEM, "switches, samples=250"),
            (LOG_LEVEL, "warn"),
            (TRIGGERS, "db/query>2ms; net/*>10ms"),
            (QUIET, "1"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.size, 8 << 20);
        assert!(s.switches);
        assert_eq!(s.sample_hz, 250);
        assert!(!s.allocations);
        assert_eq!(s.log_level, Some(phosphor_format::Level::Warn));
        assert_eq!(s.triggers.len(), 2);
        assert!(s.quiet);
        let all = from(&[(OUTPUT, "x.phos"), (SYSTEM, "all")]).unwrap().unwrap();
        assert!(all.switches && all.allocations);
        assert_eq!(all.sample_hz, DEFAULT_SAMPLE_HZ);
    }
}

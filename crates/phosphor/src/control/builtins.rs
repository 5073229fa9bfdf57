//! The built-in commands: `help`, `trace.start`, `trace.stop`, `trace.status`, `trace.dump`,
//! `trace.trigger` (`action=arm what=SPEC`, `action=disarm what=N|all`, `action=list`),
//! `points.list`, `points.enable`, `points.disable`.

use std::fmt::Write;

use super::{register, Args, Reply};
use crate::points::{self, PointSelector};
use crate::{BufferMode, TraceConfig, TraceLog};

fn text(args: &Args, i: usize) -> &str {
    args.string(i).unwrap_or("")
}

/// Registers the built-in commands for `log` (usually `TraceLog::global()`). Fails if one of
/// their names is taken.
pub fn register_builtins(log: &'static TraceLog) -> Result<(), String> {
    register("help", "", "lists every command with its parameters and description", |_, r: &mut Reply| {
        for (name, spec, description) in super::list() {
            let _ = writeln!(r.text, "{name} {spec}\n    {description}");
        }
    })?;
    register(
        "trace.start",
        "categories=string[[*]] mode=string[[ring]] size=int[[67108864]]",
        "starts a trace: category globs, mode ring or fixed, buffer size in bytes",
        move |a, r| {
            let mode = match text(a, 1) {
                "ring" => BufferMode::Ring,
                "fixed" => BufferMode::Fixed,
                other => return r.set_error(format!("mode {other:?} is neither ring nor fixed")),
            };
            // A negative size is refused here (it is no number of bytes); a size past the limit
            // is refused by `start`, whose error names the limit.
            let size = match a.int(2) {
                Some(n) if n < 0 => {
                    return r.set_error(format!("size {n} is negative: it is a number of bytes"))
                }
                Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
                None => return r.set_error("size is not an integer"),
            };
            let started = TraceConfig::new(mode, size).categories(text(a, 0)).and_then(|c| log.start(c));
            match started {
                Ok(()) => r.push("started"),
                Err(e) => r.set_error(e.to_string()),
            }
        },
    )?;
    register(
        "trace.stop",
        "",
        "stops the running trace (its figures stay for trace.status)",
        move |_, r| {
            log.stop();
            let _ = write!(r.text, "stopped: {}", log.stats());
        },
    )?;
    register("trace.status", "", "whether a trace runs, and its figures", move |_, r| {
        let _ = write!(r.text, "running: {}\n{}", log.is_enabled(), log.stats());
    })?;
    register(
        "trace.dump",
        "path=string",
        "writes what the running trace holds (or, stopped, the last trace) to a trace file \
         (inside the server's dump directory, if it has one)",
        move |a, r| {
            let path = text(a, 0);
            let target = match super::writable_path(path) {
                Ok(p) => p,
                Err(e) => return r.set_error(e),
            };
            let save = |t: &crate::Trace| t.save(&target).map(|()| t.stats().recorded);
            let saved = match log.snapshot() {
                Ok(t) => Some(save(&t)),
                // Stopped: the trace it finished, unless it was taken.
                Err(e) if *e.kind() == crate::ErrorKind::NotRunning => log.with_last_trace(save),
                Err(e) => return r.set_error(e.to_string()),
            };
            match saved {
                Some(Ok(n)) => {
                    let _ = write!(r.text, "{n} events written to {path}");
                }
                Some(Err(e)) => r.set_error(e.to_string()),
                None => r.set_error("no trace is running, and none has stopped"),
            }
        },
    )?;
    register(
        "trace.trigger",
        "action=string what=string[[]] dir=string[[]]",
        "triggered dumps of the running Ring trace: action=arm what=SPEC (e.g. [[db/query>2ms]], \
         dir=DIR if the trace has no dump directory), action=disarm what=N|all, action=list",
        move |a, r| trigger_command(log, text(a, 0), text(a, 1), text(a, 2), r),
    )?;
    register(
        "points.list",
        "",
        "lists every instrumentation point: id, kind, enabled, category/name, file:line",
        |_, r| {
            for p in points::list() {
                let _ = writeln!(
                    r.text,
                    "{:>6} {:<9} {:<3} {}/{} {}:{}",
                    p.id,
                    p.kind.as_str(),
                    if p.enabled { "on" } else { "off" },
                    p.category,
                    p.name,
                    p.file,
                    p.line
                );
            }
        },
    )?;
    for (name, enable) in [("points.enable", true), ("points.disable", false)] {
        let what = if enable { "lets the matching points record again" } else { "stops the matching points" };
        register(name, "pattern=string", what, move |a, r| match text(a, 0).parse::<PointSelector>() {
            Ok(sel) => {
                let n = if enable { points::enable(sel) } else { points::disable(sel) };
                let _ = write!(r.text, "{n} points match");
            }
            Err(e) => r.set_error(e.to_string()),
        })?;
    }
    Ok(())
}

fn trigger_command(log: &TraceLog, action: &str, what: &str, dir: &str, r: &mut Reply) {
    match action {
        "arm" => {
            let trigger = match what.parse::<crate::trigger::Trigger>() {
                Ok(t) => t,
                Err(e) => return r.set_error(e.to_string()),
            };
            // A directory named here is confined like `trace.dump`'s path; one the program
            // configured is its own.
            let dir = match dir {
                "" => None,
                d => match super::writable_path(d) {
                    Ok(p) => Some(p),
                    Err(e) => return r.set_error(e),
                },
            };
            match log.arm_trigger_into(trigger.clone(), dir.as_deref()) {
                Ok(n) => {
                    let _ = write!(r.text, "armed trigger {n}: {trigger}");
                }
                Err(e) => r.set_error(e.to_string()),
            }
        }
        "disarm" if what == "all" => {
            let _ = write!(r.text, "disarmed {} triggers", log.disarm_all_triggers());
        }
        "disarm" => match what.parse::<u32>() {
            Ok(n) if log.disarm_trigger(n) => {
                let _ = write!(r.text, "disarmed trigger {n}");
            }
            Ok(n) => r.set_error(format!("no trigger {n} is armed")),
            Err(_) => r.set_error(format!("disarm takes a trigger's number or all, not {what:?}")),
        },
        "list" => {
            let s = log.triggers();
            for (n, t) in &s.armed {
                let _ = writeln!(r.text, "{n} {t}");
            }
            let _ = write!(
                r.text,
                "fired {}, merged {}, rate-limited {}, failed {}, dumps {}",
                s.fired,
                s.merged,
                s.rate_limited,
                s.failed,
                s.dumps.len()
            );
            for d in &s.dumps {
                let _ = write!(r.text, "\n{} (trigger {}, {} events)", d.path.display(), d.trigger, d.events);
            }
        }
        other => r.set_error(format!("action {other:?} is none of arm, disarm, list")),
    }
}

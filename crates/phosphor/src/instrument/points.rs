//! Instrumentation points (DSUI): listing every callsite, switching points on and off at run time,
//! and points created at run time from strings.
//!
//! # What is a point?
//!
//! Every macro invocation is a point: a `static` [`Callsite`] that the linker also gathers into one
//! section (`linkme`), so [`list`] knows every point of the program before any has run. A point is
//! recorded when a running trace's category filter takes its category *and* no rule here disables
//! it. Rules ([`enable`], [`disable`]) select points by category glob, name glob or id; the last
//! matching rule wins. A change rewrites the cached enabled bits of every callsite under the
//! registry lock, so it takes effect at each point's next event, also on a running trace; the
//! recording path itself is unchanged (one relaxed load and a bit test), however many points exist.
//!
//! Points created at run time ([`Point::new`], DSUI's `dsui_create_ip`) are registered at once;
//! creating the same (category, name, kind) again returns the first.
//!
//! # Fallback
//!
//! The section is on the platforms whose linkers gather `linkme` sections: the one list of them is
//! `build.rs`'s (`cfg(linker_sections)`). On other targets there is no section: a callsite is
//! registered when it first runs, and [`list`] shows only those.

use phosphor_format::Phase;

use crate::bridge::{MaybeValue, PointSpec, Value};
use crate::error::{Error, ErrorKind};
use crate::instrument::emit::{check, check_scope, emit, NoArg, Now, ScopeGuard, Since};
// Every call that takes the registry's lock marks the thread busy meanwhile (`thread::busy`): an
// event recorded then on this thread (an instrumented allocator, a signal handler) must not
// register a callsite, which takes that lock again.
use crate::record::thread::busy;
use crate::registry::callsite::{self, Callsite, CallsiteMeta, Rule};
pub use crate::registry::point::{PointKind, PointSelector};
use crate::TraceLog;

mod checked;
pub use checked::{CheckedLog, LogPoint};

/// One point, as [`list`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointInfo {
    /// The callsite id that records carry.
    pub id: u32,
    /// Category (the group, in DSUI's terms).
    pub category: &'static str,
    /// Name (for logs, the format string).
    pub name: &'static str,
    /// What it measures.
    pub kind: PointKind,
    /// The phase of the events it records.
    pub phase: Phase,
    /// Source file (`"<dynamic>"` for points created at run time).
    pub file: &'static str,
    /// Source line (0 for points created at run time).
    pub line: u32,
    /// Whether the rules let it record (a trace's category filter may still leave it out).
    pub enabled: bool,
    /// Whether a running trace records it now.
    pub recording: bool,
}

/// Every point of the program: every static callsite (registered by this call if it had not run
/// yet) and every point created at run time, by id.
pub fn list() -> Vec<PointInfo> {
    busy(callsite::list_all)
        .into_iter()
        .map(|(id, cs, enabled)| {
            let m = cs.meta();
            PointInfo {
                id,
                category: m.category,
                name: m.name,
                kind: m.kind,
                phase: m.phase,
                file: m.file,
                line: m.line,
                enabled,
                recording: cs.state() as u32 != 0,
            }
        })
        .collect()
}

/// Lets the selected points record again (undoing an earlier [`disable`]); returns how many points
/// the selector matches now.
pub fn enable(selector: PointSelector) -> usize {
    busy(|| callsite::add_rule(Rule { selector, enable: true }))
}

/// Stops the selected points from recording, in running traces from their next event on; returns
/// how many points the selector matches now (points created later are matched too).
pub fn disable(selector: PointSelector) -> usize {
    busy(|| callsite::add_rule(Rule { selector, enable: false }))
}

/// Removes every rule: each point is again recorded whenever a trace's categories take it.
pub fn reset() {
    busy(callsite::clear_rules);
}

/// A point created at run time from strings (DSUI's `dsui_create_ip`): the same as a macro's
/// callsite, for names known only when the program runs. Recording through it costs what a macro
/// costs.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    cs: &'static Callsite,
}

impl Point {
    /// The point (`category`, `name`) of `kind`: created and registered, or the existing one if it
    /// was created before. Its strings are copied once and kept for the life of the process.
    ///
    /// Fails when [`MAX_DYNAMIC_POINTS`](crate::registry::callsite::MAX_DYNAMIC_POINTS) distinct points exist,
    /// which bounds what they can leak, or for kinds that aggregate in process (sums and
    /// histograms, which are `static`s declared with their macros).
    pub fn new(category: &str, name: &str, kind: PointKind) -> Result<Point, Error> {
        let phase = match kind {
            PointKind::Event => Phase::Instant,
            PointKind::Interval => Phase::Complete,
            PointKind::Counter => Phase::Counter,
            PointKind::Log => Phase::Log,
            _ => return Err(Error::new(ErrorKind::UnsupportedDynamicPoint { kind: kind.as_str() })),
        };
        let arg0 = if kind == PointKind::Counter { "value" } else { "" };
        let make = || -> &'static Callsite {
            let category: &'static str = Box::leak(category.to_owned().into_boxed_str());
            let name: &'static str = Box::leak(name.to_owned().into_boxed_str());
            let meta = CallsiteMeta::new(category, name, phase, [arg0, ""], "<dynamic>", 0);
            Box::leak(Box::new(Callsite::new(meta)))
        };
        busy(|| callsite::dynamic(category, name, phase, "", make))
            .map(|cs| Point { cs })
            .ok_or_else(|| Error::new(ErrorKind::TooManyDynamicPoints { max: callsite::MAX_DYNAMIC_POINTS }))
    }

    /// A point with every piece of metadata given at run time, for bridges from other
    /// instrumentation (see [`bridge`](crate::bridge)): its strings are copied once and kept for
    /// the life of the process. The same spec returns the same point.
    ///
    /// Fails for the lock phases (recorded in pairs by `trace_lock!`), when a `Log` spec has no level, and when [`MAX_DYNAMIC_POINTS`](crate::registry::callsite::MAX_DYNAMIC_POINTS) exist.
    pub fn custom(spec: &PointSpec<'_>) -> Result<Point, Error> {
        let unsupported = |kind| Err(Error::new(ErrorKind::UnsupportedDynamicPoint { kind }));
        match spec.phase {
            Phase::LockWait | Phase::LockHeld => return unsupported("lock"),
            Phase::Log if spec.level.is_none() => return unsupported("log without a level"),
            _ => {}
        }
        let level = if spec.phase == Phase::Log { spec.level } else { None };
        let detail = format!(
            "{}\0{}\0{}\0{}\0{}",
            level.map_or("", |l| l.as_str()),
            spec.arg_names[0],
            spec.arg_names[1],
            spec.file,
            spec.line
        );
        let make = || -> &'static Callsite {
            let leak = |s: &str| -> &'static str { Box::leak(s.to_owned().into_boxed_str()) };
            let mut meta = CallsiteMeta::new(
                leak(spec.category),
                leak(spec.name),
                spec.phase,
                spec.arg_names.map(leak),
                leak(spec.file),
                spec.line,
            );
            if let Some(level) = level {
                meta = meta.with_level(level);
            }
            Box::leak(Box::new(Callsite::new(meta)))
        };
        busy(|| callsite::dynamic(spec.category, spec.name, spec.phase, &detail, make))
            .map(|cs| Point { cs })
            .ok_or_else(|| Error::new(ErrorKind::TooManyDynamicPoints { max: callsite::MAX_DYNAMIC_POINTS }))
    }

    /// Whether an event of this point would be recorded in `log` now: a bridge asks before it
    /// collects values.
    #[inline]
    pub fn enabled_in(&self, log: &TraceLog) -> bool {
        check(log, self.cs).is_some()
    }

    /// Records an event of this point's phase in `log`, now, with up to two arguments (named by
    /// the point's argument names). `id` is an async slice's id (`AsyncBegin`, `AsyncEnd`); a
    /// `Complete` point records a slice that started at `start` (a [`TraceLog::now`] reading).
    /// `cut` sets the event's truncated flag: the caller had more values than fit. Does nothing
    /// for a `Log` point (see [`log_in`](Self::log_in)).
    #[inline]
    pub fn record_in(&self, log: &TraceLog, id: u64, start: u64, args: [Option<Value<'_>>; 2], cut: bool) {
        let Some(state) = check(log, self.cs) else { return };
        let a = MaybeValue { value: args[0], cut };
        let b = MaybeValue { value: args[1], cut: false };
        match self.cs.meta().phase {
            Phase::AsyncBegin | Phase::AsyncEnd => emit(log, self.cs, state, Now, [id], a, b),
            Phase::Complete => emit(log, self.cs, state, Since(start), [0], a, b),
            Phase::Log => {}
            _ => emit(log, self.cs, state, Now, [], a, b),
        }
    }

    /// Records a log event of this `Log` point in `log`: its parameters in the order of the
    /// format string's placeholders. At most `MAX_PARAMS` (16) are kept; with more, or with `cut`,
    /// the event is flagged truncated. Does nothing for other points.
    #[inline]
    pub fn log_in(&self, log: &TraceLog, params: &[Value<'_>], cut: bool) {
        if self.cs.meta().phase != Phase::Log {
            return;
        }
        if let Some(state) = check(log, self.cs) {
            crate::instrument::logs::emit_values(log, crate::registry::callsite::id_of(state), params, cut);
        }
    }

    /// Records a log event of this `Log` point in `log` whose parameters are all scalars, set
    /// in place ([`ScalarParams`](crate::bridge::ScalarParams)): what [`log_in`](Self::log_in)
    /// records for the same values, without building [`Value`]s. `cut` sets the event's truncated
    /// flag. Does nothing for other points.
    #[inline]
    pub fn log_scalars_in(&self, log: &TraceLog, params: &crate::bridge::ScalarParams, cut: bool) {
        if self.cs.meta().phase != Phase::Log {
            return;
        }
        if let Some(state) = check(log, self.cs) {
            let (desc, words, len) = params.parts();
            let id = crate::registry::callsite::id_of(state);
            crate::instrument::logs::emit_scalars(log, id, desc, words, len, cut);
        }
    }

    /// The callsite id its events carry.
    pub fn id(&self) -> u32 {
        self.cs.id()
    }

    /// The point's category.
    pub fn category(&self) -> &'static str {
        self.cs.meta().category
    }

    /// The point's name.
    pub fn name(&self) -> &'static str {
        self.cs.meta().name
    }

    /// The point's kind.
    pub fn kind(&self) -> PointKind {
        self.cs.meta().kind
    }

    /// Records an instant event in the global log. Does nothing unless this is an `Event` point.
    #[inline]
    pub fn instant(&self) {
        self.instant_in(TraceLog::global());
    }

    /// Records an instant event in `log`. Does nothing unless this is an `Event` point.
    #[inline]
    pub fn instant_in(&self, log: &TraceLog) {
        if self.kind() != PointKind::Event {
            return;
        }
        if let Some(state) = check(log, self.cs) {
            emit(log, self.cs, state, Now, [], NoArg, NoArg);
        }
    }

    /// Records a counter sample in the global log. Does nothing unless this is a `Counter` point.
    #[inline]
    pub fn counter<V: crate::Arg>(&self, value: V) {
        self.counter_in(TraceLog::global(), value);
    }

    /// Records a counter sample in `log`. Does nothing unless this is a `Counter` point.
    #[inline]
    pub fn counter_in<V: crate::Arg>(&self, log: &TraceLog, value: V) {
        if self.kind() != PointKind::Counter {
            return;
        }
        if let Some(state) = check(log, self.cs) {
            emit(log, self.cs, state, Now, [], value, NoArg);
        }
    }

    /// Opens a span that records a complete event in the global log when the guard drops. Records
    /// nothing unless this is an `Interval` point.
    #[inline]
    pub fn scope(&self) -> ScopeGuard<'static, NoArg, NoArg> {
        self.scope_in(TraceLog::global())
    }

    /// Opens a span recorded in `log` when the guard drops. Records nothing unless this is an
    /// `Interval` point.
    #[inline]
    pub fn scope_in<'l>(&self, log: &'l TraceLog) -> ScopeGuard<'l, NoArg, NoArg> {
        let on = self.kind() == PointKind::Interval && check_scope(log, self.cs).is_some();
        ScopeGuard::new(log, self.cs, on.then_some((NoArg, NoArg)))
    }
}

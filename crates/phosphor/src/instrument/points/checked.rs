//! One check per event, for bridges whose events are decided before their values are collected
//! (a `tracing` event's fields are visited only when it is recorded): [`LogPoint::check_in`]
//! makes the check a macro makes before evaluating its arguments and hands back a [`CheckedLog`]
//! that records without checking again; [`Point::mark_in`] records a slice's begin or end (or an
//! instant) with no argument at a macro's cost.

use std::mem::MaybeUninit;

use phosphor_format::{ArgType, Meta, Phase, Record};

use super::Point;
use crate::bridge::{ScalarParams, Value};
use crate::instrument::emit::{check, emit, At, NoArg, Now, OneRecord};
use crate::record::clock::ClockKind;
use crate::record::tenant::Fill;
use crate::registry::callsite::id_of;
use crate::TraceLog;

/// A point of phase `Log` ([`Point::as_log`]), whose events are checked once
/// ([`check_in`](LogPoint::check_in)) and then recorded.
#[derive(Clone, Copy, Debug)]
pub struct LogPoint {
    point: Point,
}

/// A log event that its [`TraceLog`] records now: the outcome of [`LogPoint::check_in`], to be
/// recorded with its parameters ([`scalars`](CheckedLog::scalars), [`values`](CheckedLog::values))
/// without a second check. A trace that stops in between drops the event, as it would a macro's.
#[derive(Clone, Copy, Debug)]
#[must_use = "a checked log records nothing until its parameters are given"]
pub struct CheckedLog<'l> {
    log: &'l TraceLog,
    id: u32,
}

impl Point {
    /// This point as a [`LogPoint`], if its phase is `Log`.
    pub fn as_log(self) -> Option<LogPoint> {
        (self.cs.meta().phase == Phase::Log).then_some(LogPoint { point: self })
    }

    /// Records an event with no argument of this `Begin`, `End` or `Instant` point in `log`, now:
    /// what [`record_in`](Point::record_in) records with no argument, through the macros' path
    /// (one check, the record's layout a constant). Does nothing for other phases.
    #[inline]
    pub fn mark_in(&self, log: &TraceLog) {
        let Some(state) = check(log, self.cs) else { return };
        if matches!(self.cs.meta().phase, Phase::Begin | Phase::End | Phase::Instant) {
            emit(log, self.cs, state, Now, [], NoArg, NoArg);
        }
    }
}

impl LogPoint {
    /// The point.
    pub fn point(&self) -> Point {
        self.point
    }

    /// The event to record, if `log` records this point now (the check a macro makes before it
    /// evaluates its arguments).
    #[inline]
    pub fn check_in<'l>(&self, log: &'l TraceLog) -> Option<CheckedLog<'l>> {
        check(log, self.point.cs).map(|state| CheckedLog { log, id: id_of(state) })
    }
}

impl CheckedLog<'_> {
    /// Records the event with scalar parameters set in place: what
    /// [`Point::log_scalars_in`] records. `cut` sets its truncated flag.
    #[inline]
    pub fn scalars(self, params: &ScalarParams, cut: bool) {
        let (desc, words, len) = params.parts();
        crate::instrument::logs::emit_scalars(self.log, self.id, desc, words, len, cut);
    }

    /// Records the event as [`scalars`](Self::scalars) does, stamped `ts` (a [`TraceLog::now`]
    /// reading of the same log, taken when the event was checked): a bridge reads the clock
    /// before it collects the values, so the clock's latency overlaps the collection.
    #[inline]
    pub fn scalars_at(self, ts: u64, params: &ScalarParams, cut: bool) {
        let (desc, words, len) = params.parts();
        let meta = Meta::new(0, ArgType::Params, ArgType::None).with_truncated(cut);
        let id = self.id;
        match len {
            0 => {
                let meta = Meta::new(0, ArgType::None, ArgType::None);
                self.log.write_event(1, OneRecord { stamp: At(ts), id, meta, words: [0, 0] });
            }
            1 => self.log.write_event(1, OneRecord { stamp: At(ts), id, meta, words: [desc, words[0]] }),
            _ => {
                let meta = meta.with_continuation(1);
                self.log.write_event(2, StampedScalars { ts, id, meta, desc, words });
            }
        }
    }

    /// Records the event with `params`: what [`Point::log_in`] records (at most `MAX_PARAMS`
    /// kept; more, or `cut`, set its truncated flag).
    #[inline]
    pub fn values(self, params: &[Value<'_>], cut: bool) {
        crate::instrument::logs::emit_values(self.log, self.id, params, cut);
    }
}

/// The fill of a log of two to five scalar parameters stamped `ts`: a main record and one
/// continuation record. Its words are read one by one, as `logs::ScalarRecords` reads them (they
/// were stored one by one, by a visitor's calls).
#[derive(Clone, Copy)]
struct StampedScalars<'a> {
    ts: u64,
    id: u32,
    meta: Meta,
    desc: u64,
    words: &'a [u64; 5],
}

impl Fill for StampedScalars<'_> {
    #[inline(always)]
    fn fill(self, dst: *mut MaybeUninit<Record>, _clock: ClockKind) {
        // SAFETY: a pointer made from a reference to an element: valid, aligned and initialised.
        let word = |i: usize| unsafe { std::ptr::read_volatile(&self.words[i]) };
        let head = [self.desc, word(0)];
        let rest = [word(1), word(2), word(3), word(4)];
        // SAFETY: `write_event(2, ..)` hands us two contiguous writable, unpublished record slots.
        unsafe {
            (*dst).write(Record::new(self.ts, self.id, self.meta, head));
            (*dst.add(1)).write(Record::continuation_of_words(rest));
        }
    }

    #[inline(always)]
    fn callsite(&self) -> u32 {
        self.id
    }
}

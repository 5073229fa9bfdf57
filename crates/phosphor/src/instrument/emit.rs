//! What the macros expand to: building records from arguments, and the scope and lock guards.
//!
//! Everything here is `#[inline(always)]` and generic over the argument types, so each callsite
//! compiles to straight-line code: its meta word, record count and word layout are constants. An
//! event of at most two words and no dynamic string (the common case) writes one record; of three
//! or four words (a complete slice with two arguments, such as a tokio poll with its task and
//! wait), its record and one continuation record, also in line; an event with a dynamic string
//! goes through [`emit_multi`], which is out of line.
//!
//! A scope whose trace counts allocations has its callsite armed (`callsite.rs`), so it opens and
//! closes out of line: [`check_scope`] pushes its thread's allocation counts onto the thread's mark
//! stack (`alloc/marks.rs`, through the allocation counter's hooks, `trace_log/attach.rs`'s
//! `SCOPES`), and its close pops them and writes, right after its complete event,
//! the instant `phosphor/scope_alloc` with the allocations and bytes since. Two events, each
//! recorded or counted as dropped on its own; the instant's time is the slice's end to the tick
//! (`ts + duration`), so a reader can tell the slice it belongs to. The guard carries nothing for
//! it, and a scope that no counting trace takes pays nothing for it.

use std::mem::{ManuallyDrop, MaybeUninit};
use std::ops::{Deref, DerefMut};

use phosphor_format::{continuation_records, encode_continuation, ArgType, Meta, Record};

use crate::instrument::arg::Arg;
use crate::record::clock::ClockKind;
use crate::record::tenant::Fill;
use crate::registry::callsite::{self, registered_id, Callsite};
use crate::trace_log::attach::{check_armed, check_slice, Seen, SCOPES};
use crate::TraceLog;

/// The absent argument.
#[derive(Clone, Copy, Debug)]
pub struct NoArg;

impl crate::instrument::arg::private::Sealed for NoArg {}

impl Arg for NoArg {
    const TYPE: ArgType = ArgType::None;
    #[inline(always)]
    fn word(&self) -> u64 {
        0
    }
    crate::instrument::arg::usdt!(u64, |_s| 0);
}

/// Where an event's timestamp comes from. A type rather than an enum, so each callsite's choice is
/// resolved at compile time.
pub trait Stamp: Copy {
    /// The record's `ts` and its first word, given the first word the event carries.
    fn resolve(self, clock: ClockKind, w0: u64) -> (u64, u64);
}

/// Read the clock now.
#[derive(Clone, Copy, Debug)]
pub struct Now;

impl Stamp for Now {
    #[inline(always)]
    fn resolve(self, clock: ClockKind, w0: u64) -> (u64, u64) {
        (crate::record::clock::now(clock), w0)
    }
}

/// `ts` is this start, and lead word 0 becomes the ticks from it to now (a complete event).
#[derive(Clone, Copy, Debug)]
pub struct Since(pub u64);

impl Stamp for Since {
    #[inline(always)]
    fn resolve(self, clock: ClockKind, _w0: u64) -> (u64, u64) {
        (self.0, crate::record::clock::now(clock).wrapping_sub(self.0))
    }
}

/// `ts` is this value; no clock read.
#[derive(Clone, Copy, Debug)]
pub struct At(pub u64);

impl Stamp for At {
    #[inline(always)]
    fn resolve(self, _clock: ClockKind, w0: u64) -> (u64, u64) {
        (self.0, w0)
    }
}

/// Whether `log` traces the callsite whose state word is `state`.
#[inline(always)]
pub fn enabled_in(state: u64, log: &TraceLog) -> bool {
    callsite::enabled_in(state, log.slot())
}

/// The callsite's state if `log` traces it, registering the callsite on its first use. The macros
/// call this before evaluating any argument.
#[inline(always)]
pub fn check(log: &TraceLog, cs: &'static Callsite) -> Option<u64> {
    let state = cs.state();
    if !callsite::enabled_in(state, log.slot()) {
        return None;
    }
    match registered_id(state) {
        Some(_) => Some(state),
        None => register_slow(log, cs),
    }
}

#[cold]
#[inline(never)]
fn register_slow(log: &TraceLog, cs: &'static Callsite) -> Option<u64> {
    // Registering takes the registry lock and allocates; an event from inside the recorder's own
    // slow path (an instrumented allocator) would deadlock on it, so such a first call counts as
    // disabled.
    let thread = crate::record::thread::THREAD.with(|t| t as *const crate::record::thread::ThreadState);
    // SAFETY: the thread state has no destructor and lives as long as this thread, which is
    // running this function.
    let t = unsafe { &*thread };
    if !t.enter_busy() {
        callsite::count_refused();
        return None;
    }
    let state = callsite::register(cs);
    t.leave_busy();
    callsite::enabled_in(state, log.slot()).then_some(state)
}

/// [`check`] for a scope's open (`trace_scope!`, an interval point): as cheap when the callsite is
/// registered and unarmed (one compare covers both), and out of line otherwise, where a scope that
/// its log's trace counts allocations for pushes its mark.
#[inline(always)]
pub fn check_scope(log: &TraceLog, cs: &'static Callsite) -> Option<u64> {
    let state = cs.state();
    if !callsite::enabled_in(state, log.slot()) {
        return None;
    }
    // Registered and unarmed in one compare, where `check` tests the id alone.
    if callsite::registered_unarmed(state) {
        Some(state)
    } else {
        open_slow(log, cs, state)
    }
}

/// [`check_scope`] of a callsite that is not registered yet, or armed.
#[cold]
#[inline(never)]
fn open_slow(log: &TraceLog, cs: &'static Callsite, state: u64) -> Option<u64> {
    let state = match registered_id(state) {
        Some(_) => state,
        None => register_slow(log, cs)?,
    };
    if callsite::armed(state) && callsite::counts_allocations(log.slot()) {
        if let Some(scopes) = SCOPES.get() {
            (scopes.open)(log.slot(), callsite::id_of(state));
        }
    }
    Some(state)
}

/// Records one event. `state` is what [`check`] returned for the callsite.
#[inline(always)]
pub fn emit<const L: usize, S: Stamp, A: Arg, B: Arg>(
    log: &TraceLog,
    _cs: &'static Callsite,
    state: u64,
    stamp: S,
    lead: [u64; L],
    a: A,
    b: B,
) {
    let id = callsite::id_of(state);
    // Constants, unless an argument's type is decided at run time (an interned string).
    let ta = if A::VARIES { a.runtime_type() } else { A::TYPE };
    let tb = if B::VARIES { b.runtime_type() } else { B::TYPE };
    let has_a = ta as u8 != 0;
    let has_b = tb as u8 != 0;
    let mut words = [0u64; 4];
    let mut k = 0;
    for w in lead {
        words[k] = w;
        k += 1;
    }
    if has_a {
        words[k] = a.word();
        k += 1;
    }
    if has_b {
        words[k] = b.word();
        k += 1;
    }
    let dynamic = matches!(ta, ArgType::DynStr) || matches!(tb, ArgType::DynStr);
    let meta = Meta::new(L, ta, tb).with_truncated(a.word_truncated() || b.word_truncated());
    if k <= 2 && !dynamic {
        log.write_event(1, OneRecord { stamp, id, meta, words: [words[0], words[1]] });
    } else if !dynamic {
        // Three or four words: the event's record and one continuation record, in line (`k` is a
        // constant unless an argument's type varies, so a two-word callsite never sees this).
        let meta = meta.with_continuation(1);
        let head = [words[0], words[1]];
        let rest = [words[2], words[3]];
        log.write_event(2, TwoRecords { stamp, id, meta, head, rest });
    } else {
        let (sa, ta) = a.bytes();
        let (sb, tb) = b.bytes();
        emit_multi(log, id, meta.with_truncated(meta.truncated() || ta || tb), stamp, &words[..k], &[sa, sb]);
    }
}

/// [`emit`] for the callsites a trigger can watch (complete slices, counters, data points; the
/// macros choose by phase): a bit test on the state word already loaded, and an armed callsite's
/// event goes out of line, where it is recorded and then checked against its triggers. A slice's
/// duration is its lead word when the stamp is explicit (`trace_complete!`; scopes close through
/// `close_slice` instead).
#[inline(always)]
pub fn emit_watched<const L: usize, S: Stamp, A: Arg, B: Arg>(
    log: &TraceLog,
    cs: &'static Callsite,
    state: u64,
    stamp: S,
    lead: [u64; L],
    a: A,
    b: B,
) {
    if callsite::armed(state) {
        emit_armed(log, cs, state, stamp, lead, a, b);
    } else {
        emit(log, cs, state, stamp, lead, a, b);
    }
}

#[cold]
#[inline(never)]
fn emit_armed<const L: usize, S: Stamp, A: Arg, B: Arg>(
    log: &TraceLog,
    cs: &'static Callsite,
    state: u64,
    stamp: S,
    lead: [u64; L],
    a: A,
    b: B,
) {
    let seen = match (L, cs.meta().phase) {
        (1, phosphor_format::Phase::Complete) => Seen::Ticks(lead[0]),
        _ => {
            let ty = if A::VARIES { a.runtime_type() } else { A::TYPE };
            Seen::Value(ty, a.word())
        }
    };
    emit(log, cs, state & !callsite::ARMED, stamp, lead, a, b);
    check_armed(log, cs, seen);
}

/// Records the complete slice of `cs` that began at `start` and ends now. Unarmed, the end time
/// is read in the fill (`Since`): one bit test, as before triggers and allocations existed. An
/// armed callsite's duration is needed outside the fill, so the clock is read here instead (still
/// once), the slice recorded with that explicit end, and the duration checked against the
/// callsite's triggers out of line. `SCOPE` is true for a scope's guard, whose open pushed a mark
/// if its log's trace counts allocations (then it closes in [`close_counting`]), and false for a
/// lock guard's held slice.
#[inline(always)]
pub(crate) fn close_slice<const SCOPE: bool, A: Arg, B: Arg>(
    log: &TraceLog,
    cs: &'static Callsite,
    state: u64,
    start: u64,
    a: A,
    b: B,
) {
    if callsite::armed(state) {
        if SCOPE && callsite::counts_allocations(log.slot()) {
            close_counting(log, cs, state, start, a, b);
        } else {
            let ticks = log.now().wrapping_sub(start);
            emit(log, cs, state & !callsite::ARMED, At(start), [ticks], a, b);
            check_slice(log, cs, ticks);
        }
    } else {
        emit(log, cs, state, Since(start), [0], a, b);
    }
}

/// [`close_slice`] of a scope whose log's trace counts allocations: its mark is popped, the slice
/// written, then `phosphor/scope_alloc`, then the duration checked against the callsite's
/// triggers (none, if it is armed only for counting: an empty mask).
#[cold]
#[inline(never)]
fn close_counting<A: Arg, B: Arg>(log: &TraceLog, cs: &'static Callsite, state: u64, start: u64, a: A, b: B) {
    // Read before the slice is written, so nothing of the recorder's can be in them (it keeps its
    // own allocations out of them anyway).
    let scopes = SCOPES.get();
    let counted = scopes.and_then(|h| (h.close)(log.slot(), callsite::id_of(state)));
    let end = log.now();
    let ticks = end.wrapping_sub(start);
    emit(log, cs, state & !callsite::ARMED, At(start), [ticks], a, b);
    if let (Some((allocs, bytes)), Some(id), Some(h)) =
        (counted, registered_id(callsite::SCOPE_ALLOC.state()), scopes)
    {
        (h.counted)();
        log.write_event(1, ScopeAlloc { ts: end, id, scope: callsite::id_of(state), allocs, bytes });
    }
    check_slice(log, cs, ticks);
}

/// The `phosphor/scope_alloc` instant of the scope of callsite `scope`, which ended at `ts`.
#[derive(Clone, Copy)]
struct ScopeAlloc {
    ts: u64,
    id: u32,
    scope: u32,
    allocs: u64,
    bytes: u64,
}

impl Fill for ScopeAlloc {
    #[inline(always)]
    fn fill(self, dst: *mut MaybeUninit<Record>, _clock: ClockKind) {
        let meta = Meta::new(0, ArgType::U64, ArgType::U64);
        // SAFETY: `Tenant::write` hands us one writable, unpublished record slot.
        unsafe { (*dst).write(Record::new(self.ts, self.id, meta, [self.allocs, self.bytes])) };
    }

    /// The scope's callsite, not `phosphor/scope_alloc`'s: the instant is recorded where its
    /// scope is (a pool tenant's re-check, or the first chunk of a new trace), whatever the
    /// trace's categories say of `phosphor`.
    #[inline(always)]
    fn callsite(&self) -> u32 {
        self.scope
    }
}

/// The fill of a one-record event.
#[derive(Clone, Copy)]
pub(crate) struct OneRecord<S> {
    pub(crate) stamp: S,
    pub(crate) id: u32,
    pub(crate) meta: Meta,
    pub(crate) words: [u64; 2],
}

impl<S: Stamp> Fill for OneRecord<S> {
    #[inline(always)]
    fn fill(self, dst: *mut MaybeUninit<Record>, clock: ClockKind) {
        let (ts, w0) = self.stamp.resolve(clock, self.words[0]);
        // SAFETY: `Tenant::write` hands us one writable, unpublished record slot.
        unsafe { (*dst).write(Record::new(ts, self.id, self.meta, [w0, self.words[1]])) };
    }

    #[inline(always)]
    fn callsite(&self) -> u32 {
        self.id
    }
}

/// The fill of an event of three or four words and no dynamic string: its record, then one
/// continuation record holding words 2 and 3 (zero when absent), as [`encode_continuation`] lays
/// out extra words (`Record::continuation_of_words`). A tokio poll slice with its wait
/// (duration, task, `wait_ns`) is one.
#[derive(Clone, Copy)]
struct TwoRecords<S> {
    stamp: S,
    id: u32,
    /// Already counts the continuation record.
    meta: Meta,
    head: [u64; 2],
    rest: [u64; 2],
}

impl<S: Stamp> Fill for TwoRecords<S> {
    #[inline(always)]
    fn fill(self, dst: *mut MaybeUninit<Record>, clock: ClockKind) {
        let (ts, w0) = self.stamp.resolve(clock, self.head[0]);
        let rest = Record::continuation_of_words([self.rest[0], self.rest[1], 0, 0]);
        // SAFETY: `write_event(2, ..)` hands us two contiguous writable, unpublished record slots.
        unsafe {
            (*dst).write(Record::new(ts, self.id, self.meta, [w0, self.head[1]]));
            (*dst.add(1)).write(rest);
        }
    }

    #[inline(always)]
    fn callsite(&self) -> u32 {
        self.id
    }
}

// The largest event (a lead word, two arguments, two dynamic strings at their bound) must fit in
// one chunk, or `Tenant::write` could never make room for it. `Arg` is sealed, so no other type can
// exceed these bounds.
const _: () = assert!(
    continuation_records(2, 2 * phosphor_format::MAX_DYN_STR_BYTES) < phosphor_format::chunk::CHUNK_RECORDS
);

/// Records an event with dynamic strings (or, from `logs.rs`, more than four words), which needs
/// continuation records of a length known only at run time.
#[inline(never)]
pub(crate) fn emit_multi<S: Stamp>(
    log: &TraceLog,
    id: u32,
    meta: Meta,
    stamp: S,
    words: &[u64],
    strs: &[&[u8]],
) {
    let extra = words.get(2..).unwrap_or(&[]);
    let cont = continuation_records(extra.len(), strs.iter().map(|s| s.len()).sum());
    let meta = meta.with_continuation(cont as u32);
    let mut slots = [0u64; 2];
    for (s, w) in slots.iter_mut().zip(words) {
        *s = *w;
    }
    let fill = move |dst: *mut MaybeUninit<Record>, clock: ClockKind| {
        let (ts, w0) = stamp.resolve(clock, slots[0]);
        let slots = [w0, slots[1]];
        // SAFETY: `write_event` hands us `1 + cont` contiguous writable, unpublished record slots.
        unsafe { (*dst).write(Record::new(ts, id, meta, slots)) };
        // SAFETY: as above; the slots after the first are `cont` long and not aliased.
        let rest: &mut [MaybeUninit<Record>] = unsafe { std::slice::from_raw_parts_mut(dst.add(1), cont) };
        encode_continuation(extra, strs, rest);
    };
    log.write_event(1 + cont as u32, crate::record::tenant::Identified(id, fill));
}

/// A scope between its check and its guard, while its macro evaluates its arguments. If one of
/// them panics there is no guard to pop the mark that the check pushed (when its trace counts
/// allocations), so this takes it back as the panic unwinds. Its normal path is
/// [`guard`](Opening::guard), which forgets it: it costs nothing unless an argument unwinds.
#[derive(Debug)]
pub struct Opening<'a> {
    log: &'a TraceLog,
    cs: &'static Callsite,
    on: bool,
}

impl<'a> Opening<'a> {
    /// After [`check_scope`] of `cs` in `log` said `on`.
    #[inline(always)]
    pub fn new(log: &'a TraceLog, cs: &'static Callsite, on: bool) -> Self {
        Opening { log, cs, on }
    }

    /// The scope's guard, with its arguments evaluated (`None` when it is off).
    #[inline(always)]
    pub fn guard<A: Arg, B: Arg>(self, args: Option<(A, B)>) -> ScopeGuard<'a, A, B> {
        let (log, cs) = (self.log, self.cs);
        std::mem::forget(self);
        ScopeGuard::new(log, cs, args)
    }
}

impl Drop for Opening<'_> {
    #[cold]
    #[inline(never)]
    fn drop(&mut self) {
        let state = self.cs.state();
        if self.on && callsite::armed(state) && callsite::counts_allocations(self.log.slot()) {
            if let Some(scopes) = SCOPES.get() {
                (scopes.discard)(self.log.slot(), callsite::id_of(state));
            }
        }
    }
}

/// The guard of `trace_scope!`: records a complete event when dropped (and, when its trace counts
/// allocations, the scope's `phosphor/scope_alloc` instant after it).
#[must_use = "a scope guard records its event when dropped; bind it to a variable"]
#[derive(Debug)]
pub struct ScopeGuard<'a, A: Arg, B: Arg> {
    inner: Option<(&'a TraceLog, &'static Callsite, u64, A, B)>,
}

impl<'a, A: Arg, B: Arg> ScopeGuard<'a, A, B> {
    /// Starts a scope; `args` is `None` when the callsite is disabled ([`check_scope`] said so).
    #[inline(always)]
    pub fn new(log: &'a TraceLog, cs: &'static Callsite, args: Option<(A, B)>) -> Self {
        ScopeGuard { inner: args.map(|(a, b)| (log, cs, log.now(), a, b)) }
    }
}

impl<A: Arg, B: Arg> Drop for ScopeGuard<'_, A, B> {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some((log, cs, start, a, b)) = self.inner.take() {
            // Checked again: the trace may have been restarted with other categories meanwhile.
            if let Some(state) = check(log, cs) {
                close_slice::<true, A, B>(log, cs, state, start, a, b);
            }
        }
    }
}

/// The guard of `trace_lock_guard!`: derefs to the lock's guard, and records how long the lock
/// was waited for (at acquisition) and held (at release).
///
/// `A` and `B` are the macro's arguments (its `dyn` name first, if it has one), recorded on both
/// events; without arguments they are [`NoArg`], which takes no room.
#[must_use = "dropping the guard releases the lock at once"]
#[derive(Debug)]
pub struct LockGuard<'a, G, A: Arg = NoArg, B: Arg = NoArg> {
    guard: ManuallyDrop<G>,
    log: &'a TraceLog,
    held: Option<&'static Callsite>,
    /// When the lock was acquired, and the arguments; `None` when not traced or once recorded.
    acquired: Option<(u64, A, B)>,
}

impl<'a, G, A: Arg, B: Arg> LockGuard<'a, G, A, B> {
    /// Wraps `guard`, acquired after waiting since `start`'s time, with `start`'s arguments
    /// (`None` when tracing is off).
    #[inline(always)]
    pub fn new(
        log: &'a TraceLog,
        wait: &'static Callsite,
        held: &'static Callsite,
        start: Option<(u64, A, B)>,
        guard: G,
    ) -> Self {
        let acquired = start.map(|(start, a, b)| {
            let now = log.now();
            if let Some(state) = check(log, wait) {
                // By reference: the same values go on the held event when the guard drops.
                emit(log, wait, state, At(start), [now.wrapping_sub(start)], &a, &b);
            }
            (now, a, b)
        });
        LockGuard { guard: ManuallyDrop::new(guard), log, held: Some(held), acquired }
    }
}

impl<G> LockGuard<'static, G> {
    /// Wraps `guard` without recording anything: what `trace_lock_guard!` becomes when its group
    /// or all of Phosphor is compiled out, so the caller's code has the same types either way.
    #[inline(always)]
    pub fn untraced(guard: G) -> Self {
        LockGuard { guard: ManuallyDrop::new(guard), log: TraceLog::global(), held: None, acquired: None }
    }
}

impl<G, A: Arg, B: Arg> LockGuard<'static, G, A, B> {
    /// [`untraced`](LockGuard::untraced) for a guard with arguments: `args` is never called, it
    /// only gives the guard the type it has when traced.
    #[inline(always)]
    pub fn untraced_as(guard: G, _args: impl FnOnce() -> (A, B)) -> Self {
        LockGuard { guard: ManuallyDrop::new(guard), log: TraceLog::global(), held: None, acquired: None }
    }
}

impl<G, A: Arg, B: Arg> LockGuard<'_, G, A, B> {
    /// Ends the `.held` slice now and returns the lock's own guard, e.g. to hand it to
    /// `Condvar::wait`. Time held after this call is not recorded.
    pub fn into_inner(mut self) -> G {
        self.record_held();
        // SAFETY: the guard is taken out exactly once; `self` is then forgotten, so its Drop
        // (which would drop the guard again) never runs.
        let guard = unsafe { ManuallyDrop::take(&mut self.guard) };
        std::mem::forget(self);
        guard
    }

    /// The lock's own guard (for a guard type that does not deref, or its own methods).
    pub fn inner(&self) -> &G {
        &self.guard
    }

    /// The lock's own guard, mutably.
    pub fn inner_mut(&mut self) -> &mut G {
        &mut self.guard
    }

    fn record_held(&mut self) {
        if let (Some((acquired, a, b)), Some(held)) = (self.acquired.take(), self.held) {
            if let Some(state) = check(self.log, held) {
                close_slice::<false, A, B>(self.log, held, state, acquired, a, b);
            }
        }
    }
}

/// Derefs to what the lock's guard derefs to (`*g += 1` on a traced `MutexGuard<u64>`), as the
/// guard itself would.
impl<G: Deref, A: Arg, B: Arg> Deref for LockGuard<'_, G, A, B> {
    type Target = G::Target;
    fn deref(&self) -> &G::Target {
        &self.guard
    }
}

impl<G: DerefMut, A: Arg, B: Arg> DerefMut for LockGuard<'_, G, A, B> {
    fn deref_mut(&mut self) -> &mut G::Target {
        &mut self.guard
    }
}

impl<G, A: Arg, B: Arg> Drop for LockGuard<'_, G, A, B> {
    fn drop(&mut self) {
        // SAFETY: the guard is dropped exactly once, here (`into_inner` forgets `self` instead),
        // and never used afterwards.
        unsafe { ManuallyDrop::drop(&mut self.guard) };
        self.record_held();
    }
}

#[cfg(test)]
mod tests {
    use std::mem::MaybeUninit;
    use std::time::Duration;

    use phosphor_format::{encode_continuation, Record};

    use crate::instrument::arg::Interned;
    use crate::{
        trace_async_begin, trace_complete, trace_instant, ArgValue, BufferMode, Phase, Static, TraceConfig,
        TraceLog, TraceLogConfig,
    };

    /// A log of its own, waiting while other tests hold every log slot.
    fn new_log() -> std::sync::Arc<TraceLog> {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            match TraceLog::new(TraceLogConfig::default()) {
                Ok(log) => return log,
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2))
                }
                Err(e) => panic!("TraceLog::new failed: {e}"),
            }
        }
    }

    #[test]
    fn three_word_events_write_a_record_and_the_continuation_encode_continuation_would() {
        let log = new_log();
        log.start(TraceConfig::new(BufferMode::Fixed, 1 << 16)).unwrap();
        let start = log.now();
        let (d500, d9) = (Duration::from_nanos(500), Duration::from_nanos(9));
        // Three words each: a duration and two arguments (a tokio poll's shape); an async id and
        // two arguments; a duration and an interned string that is static, whose type (so the
        // word count) is decided at run time.
        trace_complete!(log: &log, "emit", "complete", start, d500, "task" => 7u64, "wait_ns" => u64::MAX - 3);
        trace_async_begin!(log: &log, "emit", "async", 42u64, "a" => -5i64, "b" => 2.5f64);
        trace_complete!(log: &log, "emit", "interned", start, d9, "s" => Interned::Static("a static"), "k" => 11u32);
        // Two words: one record.
        trace_instant!(log: &log, "emit", "instant", "a" => 1u64, "b" => Static("b"));
        log.stop();
        let trace = log.take_trace().unwrap();

        let ev: Vec<_> = trace.events().map(|e| e.unwrap()).collect();
        let names: Vec<&str> = ev.iter().map(|e| e.callsite.name).collect();
        assert_eq!(names, ["complete", "async", "interned", "instant"]);
        assert_eq!(ev[0].phase(), Phase::Complete);
        assert_eq!((ev[0].ts, ev[0].duration), (start, Some(log.duration_to_ticks(d500))));
        assert_eq!(ev[0].arg("task"), Some(ArgValue::U64(7)));
        assert_eq!(ev[0].arg("wait_ns"), Some(ArgValue::U64(u64::MAX - 3)));
        assert_eq!(ev[1].async_id, Some(42));
        assert_eq!(ev[1].arg("a"), Some(ArgValue::I64(-5)));
        assert_eq!(ev[1].arg("b"), Some(ArgValue::F64(2.5)));
        assert_eq!(ev[2].duration, Some(log.duration_to_ticks(d9)));
        assert_eq!(ev[2].arg("s"), Some(ArgValue::Str("a static")));
        assert_eq!(ev[2].arg("k"), Some(ArgValue::U64(11)));
        assert!(ev.iter().all(|e| !e.truncated));
        assert_eq!(trace.stats().recorded, 4);

        // The records from the first event's on (any marker record comes before it): each
        // three-word event is its record and one continuation record, laid out as the general
        // path lays out extra words.
        let records: Vec<Record> = trace.chunks().flat_map(|c| c.records.iter().copied()).collect();
        let first = records.iter().position(|r| r.id == ev[0].id).expect("the first event's record");
        let ours = &records[first..];
        assert_eq!(ours.len(), 7, "{ours:?}");
        for (k, extra) in [[u64::MAX - 3], [2.5f64.to_bits()], [11]].iter().enumerate() {
            let (head, cont) = (ours[2 * k], ours[2 * k + 1]);
            assert_eq!((head.id, head.meta.continuation()), (ev[k].id, 1), "event {k}");
            let mut want = [MaybeUninit::<Record>::uninit()];
            assert_eq!(encode_continuation(extra, &[], &mut want), 1);
            // SAFETY: `encode_continuation` returned 1: it initialised the one slot.
            assert_eq!(cont, unsafe { want[0].assume_init() }, "event {k}'s continuation");
        }
        assert_eq!((ours[6].id, ours[6].meta.continuation()), (ev[3].id, 0));
    }
}

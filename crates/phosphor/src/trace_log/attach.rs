//! The one interface through which what runs with a trace attaches to the recording core: the
//! streaming collector, the triggers' dump thread, the system context (issue 43).
//!
//! The core (`lifecycle.rs`, `figures.rs`, `write.rs`, `after_fork.rs`) names none of them. `start`
//! is given a list of [`Attacher`]s (`subsystems.rs` holds the list, and the public
//! `TraceLog::start` that passes it); each may check the configuration before anything starts,
//! then start an [`Attachment`] that the running trace holds until `stop`, which calls its hooks at
//! each of its steps. A subsystem reaches its own attachment (its public API: `open_stream`,
//! `arm_trigger`, `system_status`) with [`Attachments::find`], and what it keeps after the trace
//! (a stream's figures, the system's status) with [`Kept::find`].
//!
//! What must reach a subsystem from the recording path, or from a process-wide handler, goes
//! through a `static` [`HookSlot`] of the core that the subsystem fills with its hooks: the
//! out-of-line branch of an armed callsite ([`ARMED`]: the triggers' checks, [`SCOPES`]: the
//! allocation marks of a counting scope), the busy marker (`record::thread::BUSY`: the
//! allocation counter), a Stream-mode writer's settings (`record::log_core::STREAM`: the
//! streaming collector's), the crash dump's half of `stop`'s handshake ([`CRASH`]) and the fork
//! handlers (`fork::participate`). An empty slot means the subsystem never started, and the core
//! then does what it would do without it.

use std::any::Any;

use super::config::TraceConfig;
use super::TraceLog;
use crate::error::Error;
use crate::output::trace::Trace;
use crate::record::buffer::TraceBuffer;
use crate::record::clock::ClockInfo;
use crate::registry::callsite::Callsite;
use crate::stats::Stats;
pub(crate) use crate::sync::HookSlot;

/// What a starting trace shows its attachers.
pub(crate) struct Starting<'a> {
    pub(crate) config: &'a TraceConfig,
    /// The trace's buffer: not yet published for [`When::BeforePublish`] attachers (no event can
    /// be written into it yet), published for the others. `stop` frees it only after every
    /// attachment's `stopping` threads are joined and `stopped` ran.
    pub(crate) buffer: *mut TraceBuffer,
    pub(crate) clock: &'a ClockInfo,
    /// The attachments started so far, in the list's order.
    pub(crate) attached: &'a Attachments,
}

/// When an attacher starts its attachment.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum When {
    /// Before the buffer is published and the log's slot enabled: it may fail the start, which
    /// then aborts the attachments started before it and frees the buffer.
    BeforePublish,
    /// Once the buffer is published, before the slot is enabled: it never fails the start (what
    /// is unavailable says why in its status).
    AfterPublish,
}

/// A subsystem's entry in the list `start` is given.
pub(crate) struct Attacher {
    pub(crate) when: When,
    /// Checks the configuration before `start` takes the control lock.
    pub(crate) check: fn(&TraceConfig) -> Result<(), Error>,
    /// Starts the subsystem for the starting trace, under the control lock; `None` when the
    /// trace does not use it.
    pub(crate) start: StartFn,
}

/// An attacher's start: the attachment, `None` when the trace does not use the subsystem.
pub(crate) type StartFn = fn(&TraceLog, &Starting<'_>) -> Result<Option<Box<dyn Attachment>>, Error>;

/// A subsystem attached to one running trace, held by it. Every hook is called under the log's
/// control lock unless it says otherwise; none is on the recording path.
pub(crate) trait Attachment: Send {
    /// Itself, for its own subsystem's API ([`Attachments::find`]).
    fn as_any(&self) -> &dyn Any;
    /// Itself, for its own subsystem's API ([`Attachments::find_mut`]).
    fn as_any_mut(&mut self) -> &mut dyn Any;

    /// The start failed after this attachment started: undo it, before the buffer is freed.
    fn abort(self: Box<Self>, _log: &TraceLog) {}
    /// A thread attached a tenant to the running trace (the cold attach path).
    fn thread_attached(&self) {}
    /// Whether a snapshot of the running trace may be taken (checked before the buffer is copied).
    fn check_snapshot(&self) -> Result<(), Error> {
        Ok(())
    }
    /// Whether the trace's scopes open and close out of line to this attachment ([`SCOPES`]: the
    /// allocation counter's marks). Asked once, when the trace's slot is enabled.
    fn takes_scopes(&self) -> bool {
        false
    }
    /// What the attachment adds to a snapshot of the running trace.
    fn add_to_snapshot(&self, trace: Trace) -> Trace {
        trace
    }

    /// `stop`'s first step: what must be joined without the control lock (a thread whose work
    /// takes that lock). The stopping trace still holds the attachment meanwhile.
    fn stopping(&mut self) -> Option<Box<dyn Joining>> {
        None
    }
    /// `stop`, the lock taken again, before the log's slot is disabled and the buffer unpublished.
    fn unpublishing(&mut self) {}
    /// `stop`, once every tenant gave its chunk back, with the trace's final figures, before the
    /// buffer is freed; what the subsystem keeps after the trace ([`Kept::find`]).
    fn stopped(self: Box<Self>, _stats: &Stats) -> Option<Box<dyn Any + Send>> {
        None
    }
    /// In a forked child, alone there: the attachment's threads are the parent's, so they are
    /// forgotten, never joined.
    #[cfg(unix)]
    fn forget_in_child(self: Box<Self>) {}
}

/// What an attachment's `stopping` hands `stop` to run without the control lock.
pub(crate) trait Joining: Send {
    /// Joins (without the control lock); what the stopped trace gains from it.
    fn join(self: Box<Self>, log: &TraceLog) -> Joined;
}

/// What a [`Joining`] gives the stopped trace.
#[derive(Default)]
pub(crate) struct Joined {
    /// Added to the finished trace (the system context's batch).
    pub(crate) add: Option<Box<dyn FnOnce(Trace) -> Trace + Send>>,
    /// Kept after the trace ([`Kept::find`]).
    pub(crate) keep: Option<Box<dyn Any + Send>>,
}

/// The running trace's attachments, in their attachers' order.
#[derive(Default)]
pub(crate) struct Attachments(pub(crate) Vec<Box<dyn Attachment>>);

impl Attachments {
    /// The attachment of type `T`, if the trace has one.
    pub(crate) fn find<T: Any>(&self) -> Option<&T> {
        self.0.iter().find_map(|a| a.as_any().downcast_ref::<T>())
    }

    /// The attachment of type `T`, if the trace has one, to change.
    pub(crate) fn find_mut<T: Any>(&mut self) -> Option<&mut T> {
        self.0.iter_mut().find_map(|a| a.as_any_mut().downcast_mut::<T>())
    }
}

/// What the attachments of the last stopped trace kept.
#[derive(Default)]
pub(crate) struct Kept(pub(crate) Vec<Box<dyn Any + Send>>);

impl Kept {
    /// What was kept of type `T`.
    pub(crate) fn find<T: Any>(&self) -> Option<&T> {
        self.0.iter().find_map(|k| k.downcast_ref::<T>())
    }
}

/// What an armed event saw, for the triggers' check ([`ArmedHooks`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Seen {
    /// A slice's duration, in the log's clock ticks.
    Ticks(u64),
    /// An argument's type and word.
    Value(phosphor_format::ArgType, u64),
    /// A log (its level is the callsite's).
    Log,
}

/// What the out-of-line path of an armed callsite calls after writing its event
/// (`instrument/emit.rs`, `instrument/logs.rs`): the triggers' checks (`trigger.rs`), filled by
/// their attacher before any trigger can be armed.
pub(crate) struct ArmedHooks {
    /// An armed callsite's event other than a scope's slice.
    pub(crate) on_armed: fn(&TraceLog, &'static Callsite, Seen),
    /// An armed scope's slice, `ticks` long.
    pub(crate) on_slice: fn(&TraceLog, &'static Callsite, u64),
}

/// The triggers' checks.
pub(crate) static ARMED: HookSlot<ArmedHooks> = HookSlot::empty();

/// The triggers' check of an armed callsite's event (already written), if the triggers' hooks
/// are plugged in (an armed callsite's triggers were armed by a trace that plugged them). Out of
/// line, so that the unarmed path stays one bit test.
#[cold]
#[inline(never)]
pub(crate) fn check_armed(log: &TraceLog, cs: &'static Callsite, seen: Seen) {
    if let Some(hooks) = ARMED.get() {
        (hooks.on_armed)(log, cs, seen);
    }
}

/// The triggers' check of an armed scope's slice (already written), `ticks` long, as
/// [`check_armed`]. Out of line, and small, so that its call costs little.
#[inline(never)]
pub(crate) fn check_slice(log: &TraceLog, cs: &'static Callsite, ticks: u64) {
    if let Some(hooks) = ARMED.get() {
        (hooks.on_slice)(log, cs, ticks);
    }
}

/// What a scope's out-of-line open and close call when its log's trace counts allocations
/// (`instrument/emit.rs`; the allocation counter's mark stack, `alloc/marks.rs`), filled by the
/// allocation counter's attacher before a trace that counts starts.
pub(crate) struct ScopeHooks {
    /// A counting scope of callsite `id` (second) in slot `slot` (first) opens on this thread.
    pub(crate) open: fn(u32, u32),
    /// It closes: its allocations and bytes since it opened, if its mark is found.
    pub(crate) close: fn(u32, u32) -> Option<(u64, u64)>,
    /// Its open will never close (an argument of its macro panicked).
    pub(crate) discard: fn(u32, u32),
    /// Its `phosphor/scope_alloc` event is about to be written on this thread.
    pub(crate) counted: fn(),
}

/// The allocation counter's scope marks.
pub(crate) static SCOPES: HookSlot<ScopeHooks> = HookSlot::empty();

/// What `stop` asks of the crash recorder (`recorder/crash.rs`), which fills [`CRASH`] before it
/// installs its signal handlers.
pub(crate) struct CrashHooks {
    /// Whether a crash dump of this process started, which may be reading the buffer whose
    /// pointer it loaded (`stop` then leaves that buffer unfreed: the process is dying).
    pub(crate) dump_started: fn() -> bool,
}

/// The crash recorder's half of `stop`'s handshake.
pub(crate) static CRASH: HookSlot<CrashHooks> = HookSlot::empty();

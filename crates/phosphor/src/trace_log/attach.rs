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

use std::any::Any;

use super::config::TraceConfig;
use super::TraceLog;
use crate::error::Error;
use crate::output::trace::Trace;
use crate::record::buffer::TraceBuffer;
use crate::record::clock::ClockInfo;
use crate::stats::Stats;

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

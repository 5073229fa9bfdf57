//! Allocation counting's attachment (issue 23; the counter itself is `alloc/`, the process's
//! global allocator): it plugs the counter into the recording core's hooks (`attach.rs`), and
//! takes the scopes of a trace that counts allocations.
//!
//! * The busy marker's hooks (`record::thread::BUSY`): what the recorder allocates while busy
//!   stays out of the thread's scope counts. Plugged in when any trace first starts, so the
//!   recorder's allocations before that (a `TraceLog::new`) count for the thread; no scope is
//!   counted before then.
//! * The scopes' hooks (`attach::SCOPES`): a counting scope's out-of-line open pushes its mark,
//!   its close pops it (`alloc/marks.rs`).
//! * A trace with [`TraceConfig::allocations`](crate::TraceConfig::allocations), while
//!   `phosphor::alloc::Traced` is the global allocator (without it every count would be 0),
//!   begins a new counting period of its log's slot (the marks of scopes opened before it are
//!   not its to close) and holds an attachment that takes its scopes: the core then arms every
//!   scope the trace takes.

use std::any::Any;

use super::attach::{Attacher, Attachment, ScopeHooks, Starting, When, SCOPES};
use super::config::TraceConfig;
use super::TraceLog;
use crate::error::Error;
use crate::record::thread::{BusyHooks, BUSY};

/// Starts counting after the buffer is published, before the slot is enabled; never fails.
pub(super) const ATTACHER: Attacher = Attacher { when: When::AfterPublish, check, start };

fn check(_config: &TraceConfig) -> Result<(), Error> {
    Ok(())
}

static BUSY_HOOKS: BusyHooks =
    BusyHooks { entered: crate::alloc::recorder_enter, left: crate::alloc::recorder_leave };

static SCOPE_HOOKS: ScopeHooks = ScopeHooks {
    open: crate::alloc::push_mark,
    close: crate::alloc::pop_mark,
    discard: crate::alloc::discard_mark,
    counted: crate::alloc::count_scope_alloc_event,
};

fn start(log: &TraceLog, s: &Starting<'_>) -> Result<Option<Box<dyn Attachment>>, Error> {
    BUSY.fill(&BUSY_HOOKS);
    SCOPES.fill(&SCOPE_HOOKS);
    if !(s.config.system.allocations && crate::alloc::installed()) {
        return Ok(None);
    }
    crate::alloc::new_counting_period(log.slot());
    Ok(Some(Box::new(Counting)))
}

/// A trace that counts its scopes' allocations.
struct Counting;

impl Attachment for Counting {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn takes_scopes(&self) -> bool {
        true
    }
}

//! The system context's attachment to a running trace (`attach.rs`): started once the buffer is
//! published (never failing the start: what is unavailable says why in its status), told of each
//! thread that attaches, joined without the control lock at `stop` (its thread only tries that
//! lock, but is joined without it), its batch added to the finished trace and its status kept.

use std::any::Any;

use phosphor_format::system::SystemStatus;

use super::SystemCollector;
use crate::error::Error;
use crate::output::trace::Trace;
use crate::trace_log::attach::{Attacher, Attachment, Joined, Joining, Starting, When};
use crate::trace_log::config::TraceConfig;
use crate::trace_log::TraceLog;

/// Starts the system context after the buffer is published.
pub(crate) const ATTACHER: Attacher = Attacher { when: When::AfterPublish, check, start };

/// Context switches and CPU samples are perf events: Linux's. Elsewhere asking for them is an
/// error here, not a trace that silently lacks them (heap totals are everyone's).
fn check(config: &TraceConfig) -> Result<(), Error> {
    #[cfg(not(target_os = "linux"))]
    if config.system.switches || config.system.sample_hz > 0 {
        return Err(crate::recorder::unsupported(if config.system.switches {
            "recording context switches (TraceConfig::context_switches)"
        } else {
            "sampling CPU stacks (TraceConfig::cpu_samples)"
        }));
    }
    let _ = config;
    Ok(())
}

fn start(log: &TraceLog, s: &Starting<'_>) -> Result<Option<Box<dyn Attachment>>, Error> {
    let forward =
        s.attached.find::<crate::stream::Collector>().map(crate::stream::Collector::system_forwarder);
    let keep_newest = s.config.mode == crate::BufferMode::Ring;
    Ok(SystemCollector::start(log, s.config.system, keep_newest, forward)
        .map(|c| Box::new(Attached(Some(c))) as Box<dyn Attachment>))
}

/// A running trace's system collector; `None` once `stop` has taken it to join.
pub(crate) struct Attached(pub(crate) Option<SystemCollector>);

impl Attachment for Attached {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn thread_attached(&self) {
        if let Some(c) = &self.0 {
            c.thread_attached();
        }
    }

    fn add_to_snapshot(&self, trace: Trace) -> Trace {
        trace.with_system(self.0.as_ref().map(SystemCollector::snapshot))
    }

    fn stopping(&mut self) -> Option<Box<dyn Joining>> {
        self.0.take().map(|c| Box::new(c) as Box<dyn Joining>)
    }

    /// Its thread is the parent's; its perf descriptors close when the child execs or exits.
    #[cfg(unix)]
    fn forget_in_child(self: Box<Self>) {
        if let Some(c) = self.0 {
            c.forget();
        }
    }
}

impl Joining for SystemCollector {
    fn join(self: Box<Self>, _log: &TraceLog) -> Joined {
        let batch = self.finish();
        Joined {
            keep: batch.status.clone().map(|s| Box::new(s) as Box<dyn Any + Send>),
            add: Some(Box::new(move |t: Trace| t.with_system(Some(batch)))),
        }
    }
}

/// The status of the last stopped trace's system context, if it collected any.
pub(crate) fn last_status(kept: &crate::trace_log::attach::Kept) -> Option<SystemStatus> {
    kept.find::<SystemStatus>().cloned()
}

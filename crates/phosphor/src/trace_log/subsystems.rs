//! The plug board: the subsystems every trace may attach (`attach.rs`'s interface), in their
//! order, and the public [`TraceLog::start`], which starts a trace with them. This is the one
//! module of `trace_log` that names both the core and the subsystems; adding a subsystem adds a
//! line here and touches no file of the core.

use super::attach::Attacher;
use super::config::TraceConfig;
use super::TraceLog;
use crate::error::Error;

/// What attaches to a starting trace, in order: the streaming collector and the triggers (both
/// before the buffer is published: they may fail the start), then the system context (after: it
/// is given the collector's forwarder, and never fails the start) and allocation counting (after:
/// never fails; before the slot is enabled, which arms the scopes it takes).
const ATTACHERS: &[Attacher] = &[
    super::streams::ATTACHER,
    super::triggers::ATTACHER,
    super::system::ATTACHER,
    super::alloc_count::ATTACHER,
];

impl TraceLog {
    /// Starts a trace. Events from before this call are not recorded. If another thread is
    /// stopping the log's trace, waits until that stop has ended.
    pub fn start(&self, config: TraceConfig) -> Result<(), Error> {
        self.start_with(config, ATTACHERS)
    }
}

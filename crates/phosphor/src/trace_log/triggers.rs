//! The triggers' side of a `TraceLog` (issue 22; the triggers themselves are `trigger.rs`): their
//! attachment to a running Ring trace (`attach.rs`: armed before the buffer is published, their
//! dump thread joined without the control lock at `stop`, disarmed before the slot is disabled)
//! and the public calls that arm, disarm and list them.

use std::any::Any;

use super::attach::{Attacher, Attachment, Joined, Joining, Starting, When};
use super::config::TraceConfig;
use super::trigger::{self, Armed, DumpThread};
use super::TraceLog;
use crate::error::{Error, ErrorKind};

/// Arms a Ring trace's triggers before its buffer is published.
pub(super) const ATTACHER: Attacher = Attacher { when: When::BeforePublish, check, start };

fn check(config: &TraceConfig) -> Result<(), Error> {
    if !config.triggers.is_empty() && config.mode != crate::BufferMode::Ring {
        return Err(Error::new(ErrorKind::Trigger(format!(
            "triggers need a Ring buffer (the flight recorder), not {:?}",
            config.mode
        ))));
    }
    if config.dumps_per_minute == 0 {
        return Err(Error::new(ErrorKind::Trigger("dumps_per_minute must be at least 1".into())));
    }
    Ok(())
}

/// The trace's triggers, armed before the buffer is published and the slot enabled, so a failure
/// leaves nothing to undo but the buffer and the dump thread (idle: no event can fire yet), which
/// this undoes. Every trace has its `Armed` (the public calls arm triggers on a running trace).
fn start(log: &TraceLog, s: &Starting<'_>) -> Result<Option<Box<dyn Attachment>>, Error> {
    let settings = trigger::DumpSettings {
        dir: s.config.trigger_dir.clone(),
        window: s.config.post_window,
        per_minute: s.config.dumps_per_minute,
    };
    let mut triggers = Armed::new(log, settings, s.buffer);
    for t in &s.config.triggers {
        if let Err(e) = triggers.arm(log, t.clone(), None) {
            Box::new(triggers).abort(log);
            return Err(e);
        }
    }
    Ok(Some(Box::new(triggers)))
}

impl Attachment for Armed {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn abort(mut self: Box<Self>, log: &TraceLog) {
        self.disarm(None);
        if let Some(thread) = self.take_thread() {
            trigger::finish_thread(log, thread);
        }
    }

    /// The dump thread, joined first: its last dump takes the control lock.
    fn stopping(&mut self) -> Option<Box<dyn Joining>> {
        self.close().map(|t| Box::new(t) as Box<dyn Joining>)
    }

    fn unpublishing(&mut self) {
        self.disarm(None);
    }

    /// The parent's triggers are not the child's: their slots are freed (their callsites' armed
    /// bits cleared, under the registry lock the fork handlers released), and the handle of the
    /// dump thread, which the child does not have, is forgotten rather than joined.
    #[cfg(unix)]
    fn forget_in_child(mut self: Box<Self>) {
        self.disarm(None);
        if let Some(thread) = self.close() {
            std::mem::forget(thread);
        }
    }
}

impl Joining for DumpThread {
    fn join(self: Box<Self>, log: &TraceLog) -> Joined {
        trigger::finish_thread(log, *self);
        Joined::default()
    }
}

impl TraceLog {
    /// Arms `trigger` on the running trace (a Ring trace with a dump directory, see
    /// [`TraceConfig::trigger`]); returns its number, for [`disarm_trigger`](Self::disarm_trigger).
    pub fn arm_trigger(&self, trigger: trigger::Trigger) -> Result<u32, Error> {
        self.arm_trigger_into(trigger, None)
    }

    /// [`arm_trigger`](Self::arm_trigger), with `dir` as the dump directory if the trace has none.
    pub fn arm_trigger_into(
        &self,
        trigger: trigger::Trigger,
        dir: Option<&std::path::Path>,
    ) -> Result<u32, Error> {
        let mut c = self.control();
        let Some(r) = c.running.as_mut() else {
            return Err(Error::new(ErrorKind::NotRunning));
        };
        if r.config.mode != crate::BufferMode::Ring {
            return Err(Error::new(ErrorKind::Trigger(format!(
                "triggers need a Ring buffer (the flight recorder), not {:?}",
                r.config.mode
            ))));
        }
        match r.attached.find_mut::<Armed>() {
            Some(armed) => armed.arm(self, trigger, dir),
            None => Err(Error::new(ErrorKind::NotRunning)),
        }
    }

    /// Disarms trigger `number` of the running trace; whether it was armed.
    pub fn disarm_trigger(&self, number: u32) -> bool {
        self.control()
            .running
            .as_mut()
            .and_then(|r| r.attached.find_mut::<Armed>())
            .is_some_and(|a| a.disarm(Some(number)) == 1)
    }

    /// Disarms every trigger of the running trace; how many were armed.
    pub fn disarm_all_triggers(&self) -> usize {
        self.control()
            .running
            .as_mut()
            .and_then(|r| r.attached.find_mut::<Armed>())
            .map_or(0, |a| a.disarm(None))
    }

    /// The armed triggers and what they did in the running trace (or, stopped, in the last one).
    pub fn triggers(&self) -> trigger::TriggerStatus {
        match self.control().running.as_ref().and_then(|r| r.attached.find::<Armed>()) {
            Some(a) => a.status(self),
            None => trigger::status_of(self),
        }
    }
}

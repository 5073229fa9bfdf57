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

/// The triggers' part of a [`TraceConfig`] (`config::Parts`), set by its builder methods below.
#[derive(Clone, Debug)]
pub(super) struct TriggerConfig {
    triggers: Vec<trigger::Trigger>,
    dir: Option<std::path::PathBuf>,
    window: trigger::PostWindow,
    per_minute: u32,
}

impl Default for TriggerConfig {
    fn default() -> TriggerConfig {
        TriggerConfig {
            triggers: Vec::new(),
            dir: None,
            window: trigger::PostWindow::default(),
            per_minute: 6,
        }
    }
}

impl TriggerConfig {
    /// `config`'s (the defaults if it sets none).
    fn of(config: &TraceConfig) -> std::borrow::Cow<'_, TriggerConfig> {
        match config.parts.get::<TriggerConfig>() {
            Some(t) => std::borrow::Cow::Borrowed(t),
            None => std::borrow::Cow::Owned(TriggerConfig::default()),
        }
    }
}

/// The triggers' settings of a trace.
impl TraceConfig {
    /// Arms `trigger` when the trace starts: when an event meets its condition (a scope slower
    /// than a duration, a value above a threshold, a log at a level), the trace keeps recording
    /// for the [`post_window`](Self::post_window), then the events before and after are dumped to
    /// `DIR/trigger-{n}.phos` ([`trigger_dir`](Self::trigger_dir)), the firing marked by an
    /// instant `phosphor/trigger`. Repeatable. Needs [`BufferMode::Ring`](crate::BufferMode::Ring) (the flight recorder)
    /// and a dump directory: `start` says so otherwise. Parse the string form with
    /// `"db/query>2ms".parse()` (see [`Trigger`](crate::trigger::Trigger) and
    /// docs/FLIGHT_RECORDER.md).
    pub fn trigger(mut self, trigger: trigger::Trigger) -> Self {
        self.parts.get_mut::<TriggerConfig>().triggers.push(trigger);
        self
    }

    /// The directory triggered dumps go to (created at `start` if missing).
    pub fn trigger_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.parts.get_mut::<TriggerConfig>().dir = Some(dir.into());
        self
    }

    /// How long a trace keeps recording after a trigger fires before it dumps (default: 1,024
    /// events). Firings meanwhile join that dump.
    pub fn post_window(mut self, window: trigger::PostWindow) -> Self {
        self.parts.get_mut::<TriggerConfig>().window = window;
        self
    }

    /// At most `n` triggered dumps in any minute (default 6, at least 1); firings past it are
    /// counted as rate-limited ([`TraceLog::triggers`]).
    pub fn dumps_per_minute(mut self, n: u32) -> Self {
        self.parts.get_mut::<TriggerConfig>().per_minute = n;
        self
    }
}

/// Arms a Ring trace's triggers before its buffer is published.
pub(super) const ATTACHER: Attacher = Attacher { when: When::BeforePublish, check, start };

fn check(config: &TraceConfig) -> Result<(), Error> {
    let t = TriggerConfig::of(config);
    if !t.triggers.is_empty() && config.mode != crate::BufferMode::Ring {
        return Err(Error::new(ErrorKind::Trigger(format!(
            "triggers need a Ring buffer (the flight recorder), not {:?}",
            config.mode
        ))));
    }
    if t.per_minute == 0 {
        return Err(Error::new(ErrorKind::Trigger("dumps_per_minute must be at least 1".into())));
    }
    Ok(())
}

/// The trace's triggers, armed before the buffer is published and the slot enabled, so a failure
/// leaves nothing to undo but the buffer and the dump thread (idle: no event can fire yet), which
/// this undoes. Every trace has its `Armed` (the public calls arm triggers on a running trace).
fn start(log: &TraceLog, s: &Starting<'_>) -> Result<Option<Box<dyn Attachment>>, Error> {
    trigger::plug_hooks();
    let config = TriggerConfig::of(s.config);
    let settings = trigger::DumpSettings {
        dir: config.dir.clone(),
        window: config.window,
        per_minute: config.per_minute,
    };
    let mut triggers = Armed::new(log, settings, s.buffer);
    for t in &config.triggers {
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

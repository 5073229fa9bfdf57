//! `tracing` with no subscriber: the disabled reference.
//!
//! It must run in a process where no subscriber was ever installed, because installing one changes
//! the path every later span and event takes. The harness installs tracing-chrome's, so it runs
//! this scenario in a child process of its own binary (`--scenario tracing-off-span`, see
//! `child::Spawned`); the child checks that no subscriber is set.

use super::chrome::{event_batch, span_batch};
use crate::scenario::{timed, Check, Group, Info, Sample, Scenario};

/// A no-subscriber scenario, run in this process.
#[derive(Debug)]
pub struct TracingOff {
    info: Info,
    span: bool,
    emitted: u64,
    problem: Option<String>,
}

impl TracingOff {
    /// The table entry of spans or events.
    pub fn info(span: bool) -> Info {
        if span {
            Info {
                id: "tracing-off-span",
                label: "tracing, no subscriber: span enter/exit",
                group: Group::Peer,
                vs: Some("phos-disabled"),
                note: "",
            }
        } else {
            Info {
                id: "tracing-off-event",
                label: "tracing, no subscriber: event, 2 fields",
                group: Group::Peer,
                vs: Some("phos-disabled"),
                note: "",
            }
        }
    }

    /// Spans or events, in this process (which must never have installed a subscriber).
    pub fn new(span: bool) -> TracingOff {
        TracingOff { info: TracingOff::info(span), span, emitted: 0, problem: None }
    }
}

impl Scenario for TracingOff {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&mut self, n: u64) -> Sample {
        if tracing::dispatcher::has_been_set() {
            self.problem = Some("a tracing subscriber was installed in this process".into());
        }
        self.emitted += n;
        let batch = if self.span { span_batch } else { event_batch };
        timed(n, || batch(n))
    }

    fn check(&mut self) -> Check {
        let check = Check::new(self.emitted, 0, 0, "no subscriber was ever installed: nothing to record");
        match &self.problem {
            Some(p) => check.with_problem(p.clone()),
            None => check,
        }
    }
}

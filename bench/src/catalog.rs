//! Every scenario, by id, in table order.

use std::path::PathBuf;

use crate::child::Spawned;
use crate::limit::{self, Reference};
use crate::peers::{chrome::Chrome, fastrace::LocalSpans, puffin::Scopes, tracing_off::TracingOff};
use crate::phos::{self, Phos};
use crate::scenario::Scenario;

/// Every scenario id, in table order.
pub const IDS: [&str; 20] = [
    "limit",
    "instant-now",
    "minstant",
    "empty",
    "phos-instant",
    "phos-scope",
    "phos-counter",
    "phos-dynstr",
    "phos-disabled",
    "phos-10-sites",
    "phos-10k-sites",
    "fastrace",
    "fastrace-burst",
    "puffin-top",
    "puffin-nested",
    "chrome-span",
    "chrome-event",
    "chrome-event-noargs",
    "tracing-off-span",
    "tracing-off-event",
];

/// How scenarios are built.
#[derive(Clone, Debug)]
pub struct Options {
    /// Events in each Phosphor scenario's verification run.
    pub verify_events: u64,
    /// Where the scenarios that need a process of their own run (`tracing` with no subscriber,
    /// tracing-chrome with its defaults): `None` in this process (we are the child), `Some(exe)`
    /// in child processes of `exe`.
    pub children_of: Option<PathBuf>,
}

/// The scenario called `id`.
pub fn make(id: &str, opts: &Options) -> Option<Box<dyn Scenario>> {
    let v = opts.verify_events;
    let s: Box<dyn Scenario> = match id {
        "limit" => Box::new(Reference::new(limit::Kind::Limit)),
        "instant-now" => Box::new(Reference::new(limit::Kind::InstantNow)),
        "minstant" => Box::new(Reference::new(limit::Kind::Minstant)),
        "empty" => Box::new(Reference::new(limit::Kind::Empty)),
        "phos-instant" => Box::new(Phos::new(phos::Kind::Instant, v)),
        "phos-scope" => Box::new(Phos::new(phos::Kind::Scope, v)),
        "phos-counter" => Box::new(Phos::new(phos::Kind::Counter, v)),
        "phos-dynstr" => Box::new(Phos::new(phos::Kind::DynStr, v)),
        "phos-disabled" => Box::new(Phos::new(phos::Kind::Disabled, v)),
        "phos-10-sites" => Box::new(Phos::new(phos::Kind::FewSites, v)),
        "phos-10k-sites" => Box::new(Phos::new(phos::Kind::ManySites, v)),
        "fastrace" => Box::new(LocalSpans::steady()),
        "fastrace-burst" => Box::new(LocalSpans::burst()),
        "puffin-top" => Box::new(Scopes::new(false)),
        "puffin-nested" => Box::new(Scopes::new(true)),
        "chrome-span" => Box::new(Chrome::new(true, true)),
        "chrome-event" => Box::new(Chrome::new(false, true)),
        "chrome-event-noargs" => match &opts.children_of {
            Some(exe) => Box::new(Spawned::new(Chrome::info(false, false), exe.clone(), 1)),
            None => Box::new(Chrome::new(false, false)),
        },
        "tracing-off-span" | "tracing-off-event" => {
            let span = id == "tracing-off-span";
            match &opts.children_of {
                Some(exe) => Box::new(Spawned::new(TracingOff::info(span), exe.clone(), 1)),
                None => Box::new(TracingOff::new(span)),
            }
        }
        _ => return None,
    };
    Some(s)
}

/// Whether scenario `id` records into the timed Phosphor trace.
pub fn needs_session(id: &str) -> bool {
    id.starts_with("phos-")
}

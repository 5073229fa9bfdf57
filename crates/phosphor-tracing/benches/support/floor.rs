//! The floor of a `tracing` subscriber: what `tracing` costs before a subscriber records anything,
//! measured the same way as `PhosphorSubscriber` (shared by the `layers` bench and the
//! `callgrind_tracing` example, each of which includes this file as a module).
//!
//! [`Empty`] is a subscriber that enables every callsite once (`Interest::always`) and does nothing
//! with an event: the macro, the callsite's interest, the dispatcher lookup and the two dynamic
//! calls (`event_enabled`, `event`). [`Visiting`] also visits the event's fields with a visitor
//! that keeps each integer in a word by field index (the least a subscriber that records the
//! fields can do): `tracing-core`'s `ValueSet` walk and the dynamic `Value::record` and `Visit`
//! calls. [`Recording`] then records the first two words with Phosphor's `trace_log!` (into the
//! global log, at one fixed callsite whose parameter types are known when compiled): the least a
//! subscriber recording into Phosphor can cost, with no per-callsite lookup, no check of the
//! callsite's own state and no run-time types. Anything a recording subscriber does beyond
//! [`Visiting`] is its own; beyond [`Recording`], the price of serving any callsite.

use std::fmt::Debug;
use std::hint::black_box;

use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::subscriber::Interest;
use tracing_core::{Event, Metadata, Subscriber};

/// Enables everything, does nothing.
pub struct Empty;

/// Enables everything, visits each event's fields into [`Words`].
pub struct Visiting;

/// Visits each event's fields into [`Words`] and records two of them with `trace_log!`.
pub struct Recording;

/// Each integer field's value in the word of its index; nothing else kept.
#[derive(Default)]
pub struct Words([u64; 4]);

impl Visit for Words {
    fn record_i64(&mut self, field: &Field, v: i64) {
        self.0[field.index() & 3] = v as u64;
    }
    fn record_u64(&mut self, field: &Field, v: u64) {
        self.0[field.index() & 3] = v;
    }
    fn record_debug(&mut self, _field: &Field, _v: &dyn Debug) {}
}

/// The methods every subscriber of the floor shares; `$event` is its `event`.
macro_rules! floor_subscriber {
    ($ty:ty, |$e:ident| $event:expr) => {
        impl Subscriber for $ty {
            fn register_callsite(&self, _meta: &'static Metadata<'static>) -> Interest {
                Interest::always()
            }
            fn enabled(&self, _meta: &Metadata<'_>) -> bool {
                true
            }
            fn new_span(&self, _attrs: &Attributes<'_>) -> Id {
                Id::from_u64(1)
            }
            fn record(&self, _span: &Id, _values: &Record<'_>) {}
            fn record_follows_from(&self, _span: &Id, _follows: &Id) {}
            fn event(&self, $e: &Event<'_>) {
                $event
            }
            fn enter(&self, _span: &Id) {}
            fn exit(&self, _span: &Id) {}
        }
    };
}

floor_subscriber!(Empty, |event| {
    black_box(event);
});

floor_subscriber!(Visiting, |event| {
    let mut words = Words::default();
    event.record(&mut words);
    black_box(&words.0);
});

floor_subscriber!(Recording, |event| {
    let mut words = Words::default();
    event.record(&mut words);
    phosphor::trace_log!(info, "floor", "a={} b={}", words.0[0] as i64, words.0[1]);
});

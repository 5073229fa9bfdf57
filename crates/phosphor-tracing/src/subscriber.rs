//! [`PhosphorSubscriber`]: a `tracing` `Subscriber` of Phosphor's own, for programs that record
//! `tracing` into Phosphor and nothing else. No `Registry`: a span's id is the address of its
//! callsite's points, found once in the lock-free callsite cache when the span is made, so
//! entering and exiting a span is a recorded event each, with no lookup, no allocation and no
//! table of live spans. Spans'
//! lifetimes (an async slice from creation to close) are recorded only when asked
//! ([`PhosphorSubscriber::with_span_lifetimes`]): each span then gets an id of its own, a small
//! allocation that its last handle's close frees.
//!
//! Filters: [`Directives`] (`EnvFilter`'s static syntax) decide once per callsite, so a callsite
//! they turn off costs what `tracing` costs with no subscriber; Phosphor's category filter and log
//! level apply as with the layer.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

use phosphor::TraceLog;
use tracing_core::span::{Attributes, Current, Id, Record};
use tracing_core::subscriber::Interest;
use tracing_core::{Event, LevelFilter, Metadata, Subscriber};

use crate::directives::Directives;
use crate::{PhosphorLayer, Site};

/// Records `tracing` into a Phosphor [`TraceLog`] without a `Registry`; see the module docs.
#[derive(Debug)]
pub struct PhosphorSubscriber {
    layer: PhosphorLayer,
    directives: Directives,
}

/// A span of its own when lifetimes are recorded: its callsite's points and its handles.
#[derive(Debug)]
struct Owned {
    site: &'static Site,
    handles: AtomicUsize,
}

/// The points of a callsite that got none: a span id must still be a non-zero address.
static NO_SITE: Site = Site::None;

thread_local! {
    /// The spans this thread is in, innermost last, with their metadata.
    static STACK: RefCell<Vec<(u64, &'static Metadata<'static>)>> = const { RefCell::new(Vec::new()) };
}

impl PhosphorSubscriber {
    /// A subscriber recording into `log` (usually [`TraceLog::global`]): every callsite, spans
    /// as their enter/exit slices only.
    pub fn new(log: &'static TraceLog) -> PhosphorSubscriber {
        PhosphorSubscriber {
            layer: PhosphorLayer::new(log).with_span_lifetimes(false),
            directives: Directives::default(),
        }
    }

    /// Also records each span's whole life as an async slice (its first two fields as
    /// arguments), at the cost of an allocation per span.
    pub fn with_span_lifetimes(mut self, lifetimes: bool) -> PhosphorSubscriber {
        self.layer = self.layer.with_span_lifetimes(lifetimes);
        self
    }

    /// Records only what `directives` enable.
    pub fn with_directives(mut self, directives: Directives) -> PhosphorSubscriber {
        self.directives = directives;
        self
    }

    /// Events and spans not recorded because their callsite got no points (see
    /// [`PhosphorLayer::lost`]).
    pub fn lost(&self) -> u64 {
        self.layer.lost()
    }

    /// The callsite points of a span id.
    fn site_of(&self, id: &Id) -> &'static Site {
        let raw = id.into_u64() as usize;
        if self.layer.lifetimes {
            // SAFETY: with lifetimes, every id this subscriber hands out is the address of a
            // leaked `Box<Owned>` (`new_span`, `clone_span` returns the same id), freed only by the
            // `try_close` that drops its last handle; `tracing` passes only ids this subscriber
            // made and never uses an id after its last close returned true.
            unsafe { (*(raw as *const Owned)).site }
        } else {
            // SAFETY: without lifetimes, every id this subscriber hands out is the address of a
            // `Site` that lives for 'static (leaked by the cache, or `NO_SITE`), and `tracing`
            // passes only ids this subscriber made.
            unsafe { &*(raw as *const Site) }
        }
    }
}

impl Subscriber for PhosphorSubscriber {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if !self.directives.enabled(meta) {
            return Interest::never();
        }
        self.layer.register(meta);
        Interest::always()
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        self.directives.enabled(meta)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(self.directives.max_level())
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let site = self.layer.site(attrs.metadata());
        let site = if matches!(site, Site::Span { .. }) {
            site
        } else {
            self.layer.count_lost();
            &NO_SITE
        };
        if !self.layer.lifetimes {
            // A span is its callsite's points: their address, never 0.
            return Id::from_u64(site as *const Site as u64);
        }
        let owned = Box::into_raw(Box::new(Owned { site, handles: AtomicUsize::new(1) }));
        let id = owned as u64;
        self.layer.record_new_span(site, attrs, id);
        Id::from_u64(id)
    }

    fn record(&self, _span: &Id, _values: &Record<'_>) {
        // Values recorded after a span's creation are not kept (as with the layer).
    }

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        self.layer.record_event(event);
    }

    fn enter(&self, span: &Id) {
        let site = self.site_of(span);
        self.layer.record_enter(site, true);
        if let Site::Span { meta, .. } = site {
            // `try_with`: a span entered while this thread's locals are torn down is still
            // recorded, only not tracked as current.
            let _ = STACK.try_with(|s| s.borrow_mut().push((span.into_u64(), *meta)));
        }
    }

    fn exit(&self, span: &Id) {
        let site = self.site_of(span);
        self.layer.record_enter(site, false);
        let raw = span.into_u64();
        let _ = STACK.try_with(|s| {
            let mut s = s.borrow_mut();
            // Spans may be exited out of order: the innermost entry of this one goes (most often
            // the last).
            if s.last().is_some_and(|(id, _)| *id == raw) {
                s.pop();
            } else if let Some(at) = s.iter().rposition(|(id, _)| *id == raw) {
                s.remove(at);
            }
        });
    }

    fn clone_span(&self, id: &Id) -> Id {
        if self.layer.lifetimes {
            // SAFETY: as in `key_of`: a live span's `Owned`, the caller holding a handle to it.
            let owned = unsafe { &*(id.into_u64() as *const Owned) };
            // Relaxed: a handle count, as `Arc`'s increment; the close that frees synchronizes.
            owned.handles.fetch_add(1, Ordering::Relaxed);
        }
        id.clone()
    }

    fn try_close(&self, id: Id) -> bool {
        if !self.layer.lifetimes {
            return false;
        }
        let raw = id.into_u64() as *mut Owned;
        // SAFETY: as in `key_of`; the caller gives up one handle here.
        let owned = unsafe { &*raw };
        // AcqRel: the last handle's close must see every other handle's use before it frees
        // (`Arc`'s drop).
        if owned.handles.fetch_sub(1, Ordering::AcqRel) != 1 {
            return false;
        }
        self.layer.record_close(owned.site, raw as u64);
        // SAFETY: this was the last handle: nothing else refers to the box made in `new_span`.
        drop(unsafe { Box::from_raw(raw) });
        true
    }

    fn current_span(&self) -> Current {
        STACK
            .try_with(|s| match s.borrow().last() {
                Some((id, meta)) => Current::new(Id::from_u64(*id), meta),
                None => Current::none(),
            })
            .unwrap_or_else(|_| Current::none())
    }
}

//! Instrumented futures: a task's whole life as one async slice, and each poll as a slice on the
//! thread that ran it, linked to the async slice by a flow.
//!
//! [`trace_future!`](crate::trace_future!) wraps a future in a [`Traced`]. Its three callsites,
//! all named like the future:
//!
//! * an async begin, recorded when the wrapper is created (so the slice shows the time a task
//!   waited for its first poll), with the task's id;
//! * an async end, recorded when the future completes, or when it is dropped unfinished, with
//!   `cancelled` set;
//! * a complete slice per poll, flagged as a *flow* (format 1.3), whose argument 0 (`task`) is the
//!   task's id: tools link each poll to the async slice (Perfetto draws the arrows).
//!
//! A task is traced from its creation to its end, or not at all: when its category is disabled at
//! creation, its polls record nothing either (one branch each). Ids come from one process-wide
//! counter, so they are unique among tasks and never 0.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use crate::instrument::arg::Arg;
use crate::instrument::emit::{check, emit, NoArg, Now, Since};
use crate::registry::callsite::Callsite;
use crate::TraceLog;

/// Task ids; 0 means "not traced".
static NEXT_TASK: AtomicU64 = AtomicU64::new(1);

/// The callsites of an instrumented future: async begin, async end (argument `cancelled`), and the
/// poll slice (flagged as a flow, argument `task`). `trace_future!` declares them.
#[derive(Debug)]
pub struct FutureSites {
    /// The async slice's begin.
    pub begin: &'static Callsite,
    /// The async slice's end.
    pub end: &'static Callsite,
    /// One poll.
    pub poll: &'static Callsite,
}

/// A future whose life and polls are recorded; made by [`trace_future!`](crate::trace_future!).
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
pub struct Traced<'l, F> {
    future: F,
    log: &'l TraceLog,
    sites: &'static FutureSites,
    /// The task's id while its async slice is open; 0 when it is not traced or has ended.
    id: u64,
}

impl<'l, F: Future> Traced<'l, F> {
    /// Wraps `future`, opening its async slice now if its category is traced.
    #[inline]
    pub fn new(log: &'l TraceLog, sites: &'static FutureSites, future: F) -> Self {
        Self::with_args(log, sites, future, NoArg, NoArg)
    }

    /// Wraps `future`, opening its async slice now, with two arguments (named by the begin
    /// callsite; `NoArg` for none), if its category is traced.
    #[inline]
    pub fn with_args<A: Arg, B: Arg>(
        log: &'l TraceLog,
        sites: &'static FutureSites,
        future: F,
        a: A,
        b: B,
    ) -> Self {
        Begun::new(log, sites, a, b).wrap(future)
    }
}

/// An async slice opened before its future exists: `trace_future!` opens it first, so that its
/// arguments are evaluated (and may borrow what the future expression then moves) before the
/// future is made. [`Begun::wrap`] gives the [`Traced`] future that ends it.
#[derive(Debug)]
#[must_use = "the async slice ends when the future it wraps does"]
pub struct Begun<'l> {
    log: &'l TraceLog,
    sites: &'static FutureSites,
    id: u64,
}

impl<'l> Begun<'l> {
    /// Opens the async slice now with two arguments, if its category is traced.
    #[inline]
    pub fn new<A: Arg, B: Arg>(log: &'l TraceLog, sites: &'static FutureSites, a: A, b: B) -> Self {
        let mut id = 0;
        if let Some(state) = check(log, sites.begin) {
            // Relaxed: the counter only has to hand out distinct values.
            id = NEXT_TASK.fetch_add(1, Ordering::Relaxed);
            emit(log, sites.begin, state, Now, [id], a, b);
        }
        Begun { log, sites, id }
    }

    /// The future whose life the slice is.
    #[inline]
    pub fn wrap<F: Future>(self, future: F) -> Traced<'l, F> {
        Traced { future, log: self.log, sites: self.sites, id: self.id }
    }
}

impl<F> Traced<'_, F> {
    /// The task's id (0 if it is not traced, or has ended).
    pub fn task_id(&self) -> u64 {
        self.id
    }

    /// Closes the async slice, once.
    fn end(&mut self, cancelled: bool) {
        let id = std::mem::replace(&mut self.id, 0);
        if id != 0 {
            if let Some(state) = check(self.log, self.sites.end) {
                emit(self.log, self.sites.end, state, Now, [id], cancelled, NoArg);
            }
        }
    }
}

impl<F: Future> Future for Traced<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `future` is structurally pinned: it is never moved out of `self` (not here, not
        // in `Drop`, which only reads `id`), and `Traced` is not `Unpin` unless `F` is. The other
        // fields are plain data that we may mutate in place.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: see above; `this.future` stays where it is for as long as `this` is pinned.
        let future = unsafe { Pin::new_unchecked(&mut this.future) };
        if this.id == 0 {
            return future.poll(cx);
        }
        let start = this.log.now();
        let out = future.poll(cx);
        if let Some(state) = check(this.log, this.sites.poll) {
            emit(this.log, this.sites.poll, state, Since(start), [0], this.id, NoArg);
        }
        if out.is_ready() {
            this.end(false);
        }
        out
    }
}

impl<F> Drop for Traced<'_, F> {
    fn drop(&mut self) {
        // A future dropped before it completed: its slice ends here, marked cancelled.
        self.end(true);
    }
}

//! What a kind's scopes saw of the system: on- and off-CPU time and switches (from the trace's
//! [`SystemContext`]), the CPU samples that fell in them and their leaf functions, and their
//! allocations (from the `phosphor/scope_alloc` event that follows each scope on its thread).
//!
//! The statistics' [`Collector`](crate::kinds) adds each resolved scope's share to its kind's
//! [`SystemAcc`]; the tables turn it into a [`ScopeSystem`]. A scope's allocation counts arrive
//! after it, keyed by its thread and start; they wait in [`AllocWaits`] until the nesting
//! resolves the scope (it usually still waits for a parent then), or go straight to the kind of
//! the thread's last resolved scope if that is the one.

use std::sync::Arc;

use phosphor_format::file::ClockInfo;
use rustc_hash::FxHashMap as HashMap;

use crate::system::SystemContext;

/// The leaf functions a [`ScopeSystem`] lists, most samples first.
pub const TOP_FUNCTIONS: usize = 5;

/// What the scopes of one kind saw of the system, added up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScopeSystem {
    /// On a CPU, in nanoseconds (the scopes' durations less their off-CPU time); 0 when the
    /// trace has no context switches ([`TraceStats::system`](crate::TraceStats::system) says).
    pub on_cpu_ns: u64,
    /// Off the CPU (blocked or preempted), in nanoseconds.
    pub off_cpu_ns: u64,
    /// Of which preempted: runnable, waiting for a CPU.
    pub preempted_ns: u64,
    /// Switches out and preemptions inside the scopes.
    pub switches: u64,
    /// CPU samples inside the scopes (nested scopes count them again).
    pub samples: u64,
    /// The samples' leaf functions (symbolized, or the innermost address), at most
    /// [`TOP_FUNCTIONS`], most samples first: `(function, samples)`.
    pub functions: Vec<(String, u64)>,
    /// Allocations made inside the scopes (inclusive of nested scopes).
    pub allocs: u64,
    /// Their bytes.
    pub alloc_bytes: u64,
    /// Scopes that carried allocation counts.
    pub alloc_scopes: u64,
}

/// [`ScopeSystem`] while it is gathered.
#[derive(Debug, Default)]
pub(crate) struct SystemAcc {
    on_cpu_ns: u64,
    off_cpu_ns: u64,
    preempted_ns: u64,
    switches: u64,
    samples: u64,
    /// Samples by leaf function number.
    functions: HashMap<u32, u64>,
    pub(crate) allocs: u64,
    pub(crate) alloc_bytes: u64,
    pub(crate) alloc_scopes: u64,
}

impl SystemAcc {
    pub(crate) fn merge(&mut self, o: &SystemAcc) {
        self.on_cpu_ns += o.on_cpu_ns;
        self.off_cpu_ns += o.off_cpu_ns;
        self.preempted_ns += o.preempted_ns;
        self.switches += o.switches;
        self.samples += o.samples;
        for (&f, &n) in &o.functions {
            *self.functions.entry(f).or_default() += n;
        }
        self.allocs += o.allocs;
        self.alloc_bytes += o.alloc_bytes;
        self.alloc_scopes += o.alloc_scopes;
    }

    /// Adds one allocation count.
    pub(crate) fn alloc(&mut self, allocs: u64, bytes: u64) {
        self.allocs += allocs;
        self.alloc_bytes += bytes;
        self.alloc_scopes += 1;
    }

    pub(crate) fn stats(&self, ctx: Option<&SystemContext>) -> ScopeSystem {
        let mut functions: Vec<(String, u64)> = match ctx {
            Some(ctx) => {
                self.functions.iter().map(|(&f, &n)| (ctx.function_name(f).to_string(), n)).collect()
            }
            None => Vec::new(),
        };
        functions.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        functions.truncate(TOP_FUNCTIONS);
        ScopeSystem {
            on_cpu_ns: self.on_cpu_ns,
            off_cpu_ns: self.off_cpu_ns,
            preempted_ns: self.preempted_ns,
            switches: self.switches,
            samples: self.samples,
            functions,
            allocs: self.allocs,
            alloc_bytes: self.alloc_bytes,
            alloc_scopes: self.alloc_scopes,
        }
    }
}

/// The system context the statistics ask about each scope, and the clock that maps the scopes'
/// ticks to its `CLOCK_MONOTONIC` nanoseconds.
#[derive(Debug)]
pub(crate) struct ScopeHook {
    pub(crate) context: Arc<SystemContext>,
    pub(crate) clock: ClockInfo,
}

impl ScopeHook {
    /// Adds what the context saw of a scope of thread `tid` from `start` for `dur` ticks.
    pub(crate) fn add(&self, acc: &mut SystemAcc, tid: u32, start: u64, dur: u64) {
        let s = self.clock.to_ns(start);
        let e = self.clock.to_ns(start.saturating_add(dur)).max(s);
        let ctx = &self.context;
        if ctx.has_switches() {
            let i = ctx.interval(tid, s, e);
            let off = i.off_cpu_ns.min(e - s);
            acc.on_cpu_ns += e - s - off;
            acc.off_cpu_ns += off;
            acc.preempted_ns += i.preempted_ns.min(off);
            acc.switches += i.switches;
        }
        for stack in ctx.samples(tid, s, e) {
            acc.samples += 1;
            if let Some(f) = ctx.leaf(stack) {
                *acc.functions.entry(f).or_default() += 1;
            }
        }
    }
}

/// Allocation counts waiting for their scope, by thread and the scope's start; and, per thread,
/// its last resolved scope's start and kind, for counts that arrive after it was resolved.
#[derive(Debug, Default)]
pub(crate) struct AllocWaits {
    pub(crate) waiting: HashMap<(u32, u64), (u64, u64)>,
    pub(crate) last: HashMap<u32, (u64, u32)>,
    /// Whether any count was seen: until then, resolved scopes are not remembered.
    pub(crate) seen: bool,
}

#[cfg(test)]
#[path = "scope_system_tests.rs"]
mod tests;
